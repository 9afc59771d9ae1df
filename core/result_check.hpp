// Result check: whether a Measurement could be a real run's result. Everything that takes
// a result from outside this process (imports, the farm's answers) goes through
// Measurement::from_json, which applies it; records built elsewhere in memory (a Kernel
// Tuner cache) are checked by the import itself.
#pragma once

#include "core/measurement.hpp"

namespace atvoss {

// bad_input naming the field unless every repeat is finite and > 0, and an ok time is
// finite, > 0 and lies between the smallest and the largest repeat (it is their median
// here, their mean in Kernel Tuner caches). A result without repeats passes on its time.
void check_result(const Measurement& m);

}  // namespace atvoss

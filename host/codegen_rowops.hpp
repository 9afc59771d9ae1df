// Row-ops codegen: the C++ source of one host row-op kernel (elementwise, map, softmax,
// layernorm; rowops_space.hpp says what each knob changes). Each kernel shares its M rows out
// in blocks of tile_m (over `threads` OpenMP threads) and makes the op's passes over a block
// one after another; a pass walks each row in chunks of tile_n columns held in GCC vector
// extension registers of the machine's SIMD width, with a masked tail. Deterministic: the
// same inputs give the same text, so the compile cache can key on it.
#pragma once

#include <string>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// REQUIRES: is_row_op(w) and rowops_space_for(w, m).check(s).ok.
std::string generate_rowops_source(const Workload& w, const Schedule& s, const MachineInfo& m);

}  // namespace atvoss::host

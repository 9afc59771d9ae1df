// Launch mode: who issues a model's kernels, and so what each one costs beside its work.
//   host  the host launches each kernel in turn (frameworks run op by op: the Target's
//         launch_us per kernel, paid by the host's one launching thread);
//   sunk  the whole graph is loaded onto the device once and the device issues each kernel
//         itself (an offline model of static shapes, a framework's graph-sink mode: the
//         Target's sunk_launch_us per kernel).
// A job runs in one mode (docs/job-spec.md "launch"), and every figure of it (measurements,
// serial sums, the graph run, the plan) counts that mode's cost: launched() gives the target
// that does. Sources and the default: docs/decisions/launch-mode.md.
// Pure functions: thread-safe.
#pragma once

#include <string>

#include "core/target.hpp"

namespace atvoss {

enum class LaunchMode { host, sunk };

// bad_input "<field> must be \"host\" or \"sunk\", got ..." for any other name.
LaunchMode launch_mode_named(const std::string& name, const std::string& field);
const char* to_string(LaunchMode m);

// The mode t's description gives (Target::launch).
LaunchMode launch_mode_of(const Target& t);
// t as a job in mode m runs it: unchanged in its own mode; for sunk, named "<name>-sunk",
// launch "sunk" and launch_us the device's sunk_launch_us (so its key differs: the records of the two modes never
// mix). bad_input naming `field` when t gives no sunk_launch_us, or for host when t is
// described sunk (its host cost is not known).
Target launched(const Target& t, LaunchMode m, const std::string& field);

}  // namespace atvoss

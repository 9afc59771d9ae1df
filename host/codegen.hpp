// Codegen: the C++ source of one host kernel, generated from a workload and a schedule the
// host space accepted (host_space.hpp). The kernel is a BLIS-style sgemm: B packed into
// kc x micro_n panels, A into micro_m x kc panels, a register block of micro_m x micro_n
// FMA accumulators held in GCC vector-extension registers of the machine's SIMD width, the
// fused epilogue applied in the write-back and the unfused ops as one pass each over C.
// Every knob is a constant of the generated code (host_space.hpp lists what each changes).
// Deterministic: the same inputs give the same text, so the compile cache can key on it.
#pragma once

#include <string>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// REQUIRES: space_for(w, m).check(s).ok.
std::string generate_source(const Workload& w, const Schedule& s, const MachineInfo& m);

}  // namespace atvoss::host

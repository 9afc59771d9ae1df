// Codegen: the C++ source of one host kernel, generated from a workload and a schedule the
// host space accepted (host_space.hpp). The kernel is a BLIS-style sgemm: B packed into
// kc x micro_n panels, A into micro_m x kc panels, a register block of micro_m x micro_n
// FMA accumulators held in GCC vector-extension registers of the machine's SIMD width, the
// fused epilogue applied in the write-back and the unfused ops as one pass each over C.
// Every knob is a constant of the generated code (host_space.hpp lists what each changes).
// Deterministic: the same inputs give the same text, so the compile cache can key on it.
#pragma once

#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// REQUIRES: space_for(w, m).check(s).ok.
std::string generate_source(const Workload& w, const Schedule& s, const MachineInfo& m);

// Shared by the per-op generators (codegen_conv.hpp). The helpers text needs VL defined and
// <cstring>: the vector type vf of VL floats, loadu/storeu/load_n/store_n, vexp and gelu.
// An epilogue function is `template <bool FULL> vf name(vf v, const AtvossArgs& g,
// const float* res_row, long col, long n)` applying ops in order to the n lanes at column col.
std::string vector_helpers_source();
std::string epilogue_source(const std::string& name, const std::vector<std::string>& ops);

}  // namespace atvoss::host

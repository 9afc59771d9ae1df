// Host space: the schedule knobs of matmul and batch_matmul on the host CPU, their values and
// the one validity check, plus the default schedule (docs/host-backend.md). A schedule is
// data: code generation (codegen.hpp) reads only schedules this check accepted.
//   micro_m x micro_n  the register block of FMA accumulators (micro_n a multiple of the
//                      SIMD lanes); valid when accumulators + one row of B vectors + one
//                      broadcast fit the vector registers (6x16 on AVX2, as BLIS uses)
//   tile_m/n/k         cache blocking mc/nc/kc (BLIS); the kc x micro_n panel of B must
//                      fit L1d (in place: it and micro_m rows of A fit L2), the mc x kc
//                      block of A L2 (packed only), the kc x nc block of B the L3; kc
//                      counts at most K
//   k_steps            unroll of the micro-kernel's k loop
//   async_copy_depth   0 (fp32 only) A and B read in place, no packing; 1 packed, no
//                      prefetch; d > 1 packed and the packed panels prefetched 8(d-1)
//                      k-steps ahead, the C tile before its write-back
//   tile_order         0 nc outer, mc inner (B block reused); 1 mc outer (A block reused);
//                      2 like 0 with the micro-tiles walked column-wise
//   fusion_level       epilogue ops fused in the write-back (lowering/epilogue.hpp); the
//                      rest run as separate passes over C
//   threads            cores the kernel runs on (OpenMP inside the kernel; default 1)
//   amx_tiles          int8 and bf16 on a CPU with AMX only: 1 runs the micro-tile on AMX
//                      tiles (micro_m and micro_n 16 or 32: 1 or 2 tiles each way; A packed
//                      in whole rows, k padded to a tile row; async_copy_depth 1), 0 on the
//                      AVX-512 dot products (micro_m up to 8); default 0
// The row ops (elementwise, map, softmax, layernorm) have their own space: rowops_space.hpp.
// Pure functions: thread-safe.
#pragma once

#include "core/schedule_space.hpp"
#include "core/workload.hpp"
#include "host/machine.hpp"

namespace atvoss::host {

// Whether the host backend generates code for w as a matmul, batch_matmul or row op (fp32,
// or int8 and bfloat16 matmuls; an epilogue of ops it has a vector form of); conv ops go to
// conv_space.hpp. why (if given) says what is missing. int8 and bfloat16 also need the CPU's
// instructions, which space_for checks (bad_input naming the missing flag).
bool supports(const Workload& w, std::string* why = nullptr);

// REQUIRES: supports(w). bad_input naming the field otherwise.
ScheduleSpace space_for(const Workload& w, const MachineInfo& m);

// bad_input naming the flag unless this CPU runs w's int8 (AVX-512 VNNI) or bfloat16
// (AVX-512 BF16) kernels, or naming the dims when an int8 reduction could overflow s32.
void require_low_precision_instructions(const Workload& w, const MachineInfo& m);
// The same check as a question: whether require_low_precision_instructions(w, m) passes.
bool runs_low_precision(const Workload& w, const MachineInfo& m);
// Whether w's int8 or bfloat16 matmul can run on this CPU's AMX tiles (amx_tile with amx_int8
// or amx_bf16): then its space has the amx_tiles knob (codegen_lowp.hpp).
bool has_amx(const Workload& w, const MachineInfo& m);
// The bytes of one element of A and B as a kernel of dtype d reads them (float32: 4).
std::int64_t kernel_element_bytes(DType d);
Schedule default_schedule(const Workload& w, const MachineInfo& m);
// s (a point of w's space) on `threads` threads: the threads knob set, a conv re-blocked as
// conv_on_threads does (conv_space.hpp). What the runtime runs a default on and the plan times.
Schedule on_threads(const Workload& w, Schedule s, const MachineInfo& m, int threads);

}  // namespace atvoss::host

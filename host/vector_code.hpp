// Vector code: the pieces of generated C++ that every host kernel shares, spelled once —
// the GCC vector-extension types at the machine's SIMD width with their load/store, mask and
// horizontal helpers, a vector exp and gelu, the epilogue functions, and the `threads`
// scaffolding (an OpenMP parallel-for and the symbol that tells the runner how many cores
// the kernel uses, kernel_abi.hpp), the per-thread scratch buffer and the separate epilogue
// pass. codegen.cpp (matmul), codegen_conv.cpp, codegen_depthwise.cpp and codegen_rowops.cpp use them.
// Pure functions of their arguments: the same inputs give the same text.
#pragma once

#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/workload.hpp"
#include "lowering/epilogue.hpp"

namespace atvoss::host {

// Whether the code generator has a vector form of the epilogue op (bias, batchnorm, relu,
// gelu, sigmoid, silu, add, and quantize / requantize / dequantize as kernel_abi.hpp says).
bool generates_epilogue_op(const std::string& op);
// The first epilogue op of ops it cannot generate, empty if none.
std::string first_unsupported_epilogue(const std::vector<std::string>& ops);

// The vector types and helpers; expects `constexpr long VL` (lanes) declared before it.
std::string vector_helpers();

// template <bool FULL> vf name(vf v, const AtvossArgs& g, const float* res_row, long col, long n):
// the ops in order on one vector at column col (n valid lanes when !FULL); its first quantize op
// rounds onto qout's grid first_grid (kernel_abi.hpp), the next onto the one after.
std::string epilogue_function(const std::string& name, const std::vector<std::string>& ops, int first_grid = 0);

// The top of every kernel source: a comment naming the workload and schedule, the includes,
// PARALLEL_FOR (an OpenMP parallel for over `threads` threads; nothing for 1) and THREADS,
// the ABI struct, CODES (whether the write-back may write u8 codes: writes_codes(w) with the
// quantize fused), the opening of the anonymous namespace and `Scratch`, a per-calling-thread
// buffer (`static thread_local Scratch buf(floats);`, zeroed once).
std::string kernel_preamble(const Workload& w, const Schedule& s, int threads);

// Whether w's kernel can write its output as u8 codes (kernel_abi.hpp's qc): a matmul,
// batch_matmul, conv2d or depthwise_conv2d whose epilogue ends in quantize or requantize.
bool writes_codes(const Workload& w);

// separate_pass<WRITE_CODES>(out, g, res, full, part): one epilogue op over the ROWS x COLS output, rows
// split among the threads; expects ROWS, COLS and the vector helpers declared before it.
std::string separate_pass_function();

// `fused` with the fused ops and `unfused<i>` with the i-th unfused op each, and
// write_out<FULL>(g, p, x, last, res_row, col, n): a k block's output write (the last through
// `fused` to store_out).
std::string epilogue_functions(const lowering::FusionSplit& split);

// One call per unfused op, `separate_pass<C>(<out>, <ld>, *g, res, unfused<i><true>, unfused<i><false>);`,
// each on its own line at the indent of a kernel's batch loop; C true for the last op of a
// kernel that writes_codes(w); ld the floats from one output row to the next.
std::string separate_pass_calls(const Workload& w, const lowering::FusionSplit& split, const std::string& out,
                                const std::string& ld = "COLS");

// text with its one "UNROLL" replaced by the number.
std::string with_unroll(std::string text, long unroll);
// The exported thread count the runner pins for (kThreadsSymbol).
std::string threads_symbol_text(int threads);

}  // namespace atvoss::host

// Operands: the fp32 tensors of one host workload, filled from a seed, and the reference that
// checks a kernel's output (double accumulation, the epilogue in chain order). The row ops'
// sizes and reference live in reference_rowops.hpp; the functions here dispatch to them.
// Used by the kernel runner, the benchmark and the tests, so all three check the same way.
// make_operands and max_relative_error hand conv workloads to reference_conv.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/workload.hpp"
#include "host/kernel_abi.hpp"

namespace atvoss::host {

struct MatmulShape {
  std::int64_t batch = 1, m = 1, n = 1, k = 1;
  double flops() const { return 2.0 * double(batch) * double(m) * double(n) * double(k); }
};

// bad_input naming the dim if w is not matmul-like.
MatmulShape matmul_shape(const Workload& w);

// Elements of each operand: A (uniform in [a_lo, a_hi]), B, C, the per-column epilogue
// vectors, and whether scale/shift are the op's own (layernorm's gamma and beta).
struct OperandSizes {
  std::size_t a = 0, b = 0, c = 0, per_column = 0;
  float a_lo = -1, a_hi = 1;
  bool affine = false;
};

struct Operands {
  std::vector<float> a, b, c, bias, scale, shift, residual;
  std::vector<float> slope;  // "leaky_relu": each column's negative slope
  // int8 and bf16 matmuls (low_precision.hpp): the kernel's inputs, as bytes; a and b then
  // hold the values these represent, so that one fp32 reference checks every dtype.
  std::vector<std::uint8_t> qa, qb;
  std::vector<float> qscale;
  std::vector<std::int32_t> qcomp;
  std::int32_t qzero = 0;   // int8: A's zero point, with which qcomp was built
  std::vector<float> qout;  // {scale, zero point} of a quantize / requantize epilogue
  // The ABI view; epilogue pointers are null where the workload has no such op.
  AtvossArgs args();
};

// a as OperandSizes says, b, residual, bias, shift and slope uniform in [-1, 1], scale in
// [0.5, 1.5]; c zeroed; an int8 or bf16 matmul's a and b quantised (low_precision.hpp).
// Same seed, same data.
Operands make_operands(const Workload& w, std::uint64_t seed);

// Max over checked elements of |c - ref| / max(|ref|, 1); with quantize / requantize ops in the
// epilogue, one step of each grid of |c - ref| is forgiven (a value within rounding of a level's
// edge may land on either side, since the kernel accumulates in fp32 and the reference in double). Every row is checked
// for small problems (and row ops); above 2^26 MACs, 48 rows (the first and last 8 and 32 drawn from seed).
double max_relative_error(const Workload& w, const Operands& o, std::uint64_t seed);

// The qout of w's test operands: {1/16, 128} for its first quantize or requantize (so outputs in
// [-8, 8] span the u8 range), {2/16, 120} for a second, and so on; empty where it has none.
std::vector<float> output_grid(const Workload& w);
// The last grid of qout (the one a kernel's u8 codes are on), and the sum of its grids' steps.
std::vector<float> last_grid(const std::vector<float>& qout);
double grid_steps(const std::vector<float>& qout);

// The u8 code of a value on the grid qout = {scale, zero point} (kernel_abi.hpp's u8 output),
// and how many of `codes` differ from the codes of `values`, element for element.
std::uint8_t u8_code(double value, std::span<const float> qout);
std::size_t wrong_codes(const std::vector<float>& values, const std::uint8_t* codes, const std::vector<float>& qout);

// The scalar epilogue (the definition the generated vector code must match).
double gelu_reference(double x);
// w's epilogue on v at column col of element `at` of the output.
double apply_epilogue(const Workload& w, const Operands& o, double v, std::size_t col, std::size_t at);

}  // namespace atvoss::host

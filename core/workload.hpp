// Workload: one operator instance to tune — op, named integer dims, dtype and the
// ordered epilogue that fusion may pull into it. Its key() identifies it in the
// database and the exported table, identically on every machine (see json.hpp).
//
// Ops and their dims (all > 0; stride >= 1, pad >= 0):
//   matmul            M N K                     C[M,N] = A[M,K] * B[K,N]
//   batch_matmul      B M N K
//   conv2d            N C H W K R S stride pad  NCHW input, K filters of C x R x S
//   group_conv2d      N C H W K R S stride pad groups   C and K split into groups
//   depthwise_conv2d  N C H W R S stride pad    one R x S filter per channel
//   max_pool2d        N C H W R S stride pad    R x S window per channel, no weights
//   avg_pool2d        N C H W R S stride pad
//   elementwise       M N                       binary op (two inputs, one output)
//   map               M N                       unary: a copy whose epilogue is the work
//   layernorm         M N                       normalises each of M rows of N
//   softmax           M N                       along N
//   lrn               M N                       across rows: M = batch x channels, N = H x W
//   reduce            M N                       each row of N to one value (sum, max, mean)
//   global_avg_pool   M N                       M = batch x channels, N = H x W
//   transpose         M N inner                 [M, N/inner, inner] -> [N/inner, M, inner]:
//                                               inner 1 is a plain transpose (NCHW <-> NHWC),
//                                               inner 64 splits BERT's heads
//   concat            M N                       copies inputs into an M x N output
//   gather            M N                       M rows of N picked from a table (embeddings)
//   upsample          M N scale                 nearest: M x N -> (M*scale) x (N*scale)
//   attention         B S L D                   softmax(Q K^T / sqrt(D)) V fused: B heads,
//                                               S queries, L keys, head dim D
//   recorded          (none)                    measured table; "table": path (see recorded_space.hpp)
//   objective         (none)                    a user's own objective (Python atvoss.Optimizer);
//                                               "name" names it; its space is the user's
// The list itself lives in core/op_registry.hpp; more ops can be registered there.
// conv2d/depthwise accept stride and pad as optional (defaults 1 and 0); the
// canonical JSON always carries them, so {"stride":1} and no stride share a key.
// Epilogue ops (bias, batchnorm, relu, relu6, leaky_relu, gelu (tanh form), gelu_erf, sigmoid, silu, tanh,
// hardswish, hardsigmoid, mish, add, layernorm, requantize, quantize, dequantize) apply, in the given order, to ops
// that take one: matmul, batch_matmul, conv2d, depthwise_conv2d, elementwise and map.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/op_registry.hpp"

namespace atvoss {

enum class DType { float16, bfloat16, float32, int8 };

std::string_view to_string(DType d) noexcept;
DType parse_dtype(std::string_view s);  // bad_input naming 'dtype' on unknown
int dtype_bytes(DType d) noexcept;

// The u8 grids an epilogue rounds onto: one per quantize or requantize op (host/kernel_abi.hpp's
// qout holds a {scale, zero point} for each, in order).
int quantize_grids(const std::vector<std::string>& epilogue);

class Workload {
 public:
  // Validates every field; throws bad_input naming the field and what was expected.
  static Workload from_json(const Json& j);
  Json to_json() const;  // canonical: defaults filled in
  std::string key() const { return key_; }

  const std::string& op() const { return op_; }
  DType dtype() const { return dtype_; }
  const std::vector<std::string>& epilogue() const { return epilogue_; }
  const std::map<std::string, std::int64_t>& dims() const { return dims_; }
  std::int64_t dim(const std::string& name) const;  // internal error if absent
  // An optional dim (OpInfo::optional_dims), or fallback when the workload leaves it out.
  std::int64_t dim_or(const std::string& name, std::int64_t fallback) const;
  const std::string& table() const { return table_; }  // recorded spaces only

  // The op's registry entry (core/op_registry.hpp) and its family.
  const OpInfo& info() const;
  OpFamily family() const { return family_; }
  bool is_conv() const { return family_ == OpFamily::conv || family_ == OpFamily::depthwise; }
  bool is_matmul_like() const { return family_ == OpFamily::matmul; }
  // A measured table (recorded space): no dims, no lowering, exact lookups only.
  bool is_table() const { return family_ == OpFamily::table; }
  // A user's objective: a table family op whose space no backend knows.
  bool is_objective() const { return op_ == "objective"; }
  // A recorded table file (the recorded backend's): table() is its path.
  bool is_recorded() const { return is_table() && !is_objective(); }
  // Independent instances of the main op: B of batch_matmul, N of a conv, else 1.
  double batch() const;
  bool has_epilogue(std::string_view op) const;
  int quantize_grids() const { return atvoss::quantize_grids(epilogue_); }

  // Window ops (conv, depthwise, pools): the padded input, the window's extent with its
  // dilation, and the strides. Without the optional pool dims: H + 2 pad, R, stride.
  std::int64_t padded_h() const;
  std::int64_t padded_w() const;
  std::int64_t window_h() const;
  std::int64_t window_w() const;
  std::int64_t stride_h() const { return dim("stride"); }
  std::int64_t stride_w() const;
  // Output spatial size: (padded - window) / stride + 1, e.g. (H + 2 pad - R) / stride + 1.
  std::int64_t out_h() const;
  std::int64_t out_w() const;
  // Arithmetic of the main op (2 per MAC), without epilogue. 0 for recorded.
  double flops() const;
  // Elements of the main op's output (before any epilogue). 0 for recorded.
  double out_elements() const;
  // Bytes of inputs and output read/written once each (the compulsory GM traffic of the main op).
  double compulsory_bytes() const;
  // Short human label, e.g. "conv2d 1x64x56x56 k64 3x3 s1 +bias+relu".
  std::string label() const;

  friend bool operator==(const Workload& a, const Workload& b) { return a.key_ == b.key_; }

 private:
  std::string op_;
  OpFamily family_ = OpFamily::rows;
  const OpInfo* info_ = nullptr;  // registry entries never move
  DType dtype_ = DType::float16;
  std::map<std::string, std::int64_t> dims_;
  std::vector<std::string> epilogue_;
  std::string table_;
  std::string key_;
};

}  // namespace atvoss

// OpRegistry: the one list of operators atvoss understands — each op's name, its
// family (which lowering template serves it), its dims and whether it takes an
// epilogue. Every module asks the registry instead of comparing op names, so a new
// op is added by registering it (register_op), not by editing switches.
// Thread-safety: lookups are safe from many threads; register_op takes a lock and
// must not race with lookups of the op it adds (register at start-up).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace atvoss {

// Which kernel template an op lowers to (lowering/lowering.hpp).
enum class OpFamily {
  matmul,     // C = A x B (with an optional batch dim)
  conv,       // implicit-GEMM convolution
  depthwise,  // sliding window per channel, on the vector unit (depthwise conv, pooling)
  rows,       // row-wise vector ops over M x N (elementwise, layernorm, softmax, reduce,
              // transpose, concat, upsample)
  attention,  // softmax(Q K^T) V fused, tiled over the key sequence with an online softmax
  table,      // a measured table (recorded spaces): no dims, no lowering
  custom,     // registered from outside: lowered by its own lowering::OpLowering
};

// Rows family: the shape of the output of an M x N input.
enum class RowOutput {
  same,         // M x N, stored row by row
  one_per_row,  // M values (a reduction along N)
  transposed,   // N x M: each tile is stored as tile_n rows of tile_m elements
  scaled,       // nearest upsampling: (M * scale) x (N * scale), dim "scale" required
};

struct OpInfo {
  std::string name;
  OpFamily family = OpFamily::rows;
  std::vector<std::string> dims;  // required dims, in canonical order
  // Dims a workload may leave out; each one's default is stated where the op is
  // registered (core/op_registry.cpp). A dim left out is not in the key, so adding one
  // to an op keeps every stored key.
  std::vector<std::string> optional_dims;
  bool takes_epilogue = false;
  std::string batch_dim;       // matmul family: the batch dim ("B"), empty if none
  int row_inputs = 1;          // rows family: tensors read per output element
  double row_ops = 1;          // rows family: vector ops per element
  bool row_reduction = false;  // rows family: needs a whole row (statistics first)
  RowOutput row_output = RowOutput::same;
  bool window_weights = true;  // depthwise family: reads one R x S filter per channel
  double window_ops = 2;       // depthwise family: ops per window element (MAC 2, max/add 1)
};

// The op's entry; bad_input naming the op and listing the known ones if absent.
const OpInfo& op_info(std::string_view name);
// nullptr if the op is unknown.
const OpInfo* find_op(std::string_view name);
// Adds an op; bad_input if the name is taken or the entry is malformed.
void register_op(OpInfo info);
// Every registered op's name, built-ins first, for messages and CLI help.
std::vector<std::string> known_ops();

}  // namespace atvoss

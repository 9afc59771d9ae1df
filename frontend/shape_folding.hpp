// Shape computations folded at a bound batch. Exporters write a dynamic batch's flatten or
// view as integer arithmetic on shapes (Shape -> Gather -> Unsqueeze -> Concat -> Reshape);
// once the batch is bound every such value is known, and ONNX shape inference's data
// propagation computes it. Folding makes each one an int64 initializer, so that its consumer
// (a Reshape's shape, an Expand's, a Tile's repeats) reads a constant and gets an inferred
// output shape, and the nodes that computed it, now unused, leave the graph (as ONNX Runtime's
// constant folding drops them).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <vector>

namespace atvoss::frontend {

// Infers shapes with data propagation and folds, until nothing more folds. Throws what
// libonnx's shape inference throws.
void infer_shapes_folding_shape_computations(onnx::ModelProto& model);

// An integer initializer of rank 0 or 1 (int64 or int32 values, or int64 raw data) as its
// values; false, out untouched, for any other.
bool integer_initializer_values(const onnx::TensorProto& t, std::vector<std::int64_t>& out);
// A float tensor's values (raw or listed); false, out untouched, for another type.
bool float_values(const onnx::TensorProto& t, std::vector<float>& out);

}  // namespace atvoss::frontend

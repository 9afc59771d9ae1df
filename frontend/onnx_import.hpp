// ONNX import: turns an .onnx model file into the TaskSet to tune. The model is
// read with Debian's libonnx (protobuf), symbolic dims are bound (batch), and
// ONNX shape inference gives every tensor its shape. Tasks come from Conv,
// MatMul and Gemm (plus standalone Softmax and LayerNormalization), each with
// the epilogue chain that fusion may pull in: BatchNormalization, Relu, Gelu,
// bias and residual Add, LayerNormalization. A chain only grows through tensors
// with a single consumer, as a fused kernel would need. Every node is accounted for
// by name: a task, folded into one (an epilogue op, or a view that moves no data), or
// a fallback node with its reason and bytes (frontend/fallback.hpp). No node fails the
// import.
// Pure function of the file: thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "core/workload.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::frontend {

// Values for the graph inputs' symbolic dims (dim_param): a dim named in `dims` takes its
// value there (a transformer's "sequence_length"); one of an input in `input_shapes` (the
// shape it will be fed at) takes the size given there; every other one the batch.
struct BoundDims {
  int batch = 1;
  std::map<std::string, std::int64_t> dims;
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
};

struct OnnxImportOptions {
  // Value bound to every symbolic dim (dim_param) of the graph inputs not named in dims. Default 1.
  int batch = 1;
  // Named symbolic dims and their values (BoundDims).
  std::map<std::string, std::int64_t> dims;
  // dtype tuned for float32/float64 tensors: NPUs run them in float16 by default
  // (ATC's default precision mode). Narrow types keep their own dtype.
  DType float_dtype = DType::float16;
  // Run the fusion pass (graph_fusion.hpp). Off: each node keeps its own kernel, as a caller
  // that fuses with rules of its own wants the graph (the Python package's FusionScheduler).
  bool fuse = true;
};

// The model at path as import_onnx reads it: window attributes checked, symbolic dims bound
// (BoundDims), shape computations folded (shape_folding.hpp) and every tensor's shape inferred.
// The engine reads the same ModelProto, so that names, constants and shapes agree with the
// import. bad_input as import_onnx, and naming a dim of `dims` that no input has, or a value
// below 1.
onnx::ModelProto read_bound_onnx_model(const std::string& path, const BoundDims& bound);

// bad_input naming the file when it is unreadable, not an ONNX model, or fails
// shape inference.
TaskSet import_onnx(const std::string& path, const OnnxImportOptions& options = {});
// The import of a model read_bound_onnx_model already read at options' dims (the engine keeps
// that ModelProto for the weights: one read, one folding). name: the model's, where its graph
// has none.
TaskSet import_bound_onnx(const onnx::ModelProto& bound, const std::string& name, const OnnxImportOptions& options);

}  // namespace atvoss::frontend

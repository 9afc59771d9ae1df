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

#include <string>

#include "core/workload.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::frontend {

struct OnnxImportOptions {
  // Value bound to every symbolic dim (dim_param) of the graph inputs. Default 1.
  int batch = 1;
  // dtype tuned for float32/float64 tensors: NPUs run them in float16 by default
  // (ATC's default precision mode). Narrow types keep their own dtype.
  DType float_dtype = DType::float16;
  // Run the fusion pass (graph_fusion.hpp). Off: each node keeps its own kernel, as a caller
  // that fuses with rules of its own wants the graph (the Python package's FusionScheduler).
  bool fuse = true;
};

// bad_input naming the file when it is unreadable, not an ONNX model, or fails
// shape inference.
TaskSet import_onnx(const std::string& path, const OnnxImportOptions& options = {});

}  // namespace atvoss::frontend

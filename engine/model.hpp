// Model: a whole ONNX model run on this CPU, end to end, as atvoss planned it (docs/engine.md).
// Load reads the ONNX file (weights, attributes) and the graph atvoss imports from it (the
// model plan's, when one is given: its tasks' schedules then run), and builds a list of steps:
//   - a kernel step for each node with a tunable kernel the host generates (conv2d, depthwise,
//     matmul, batch_matmul) with the epilogue fused into it, BatchNormalization and constant
//     scales folded into its weights, weights prepared once (packed where the schedule packs);
//     kernels are compiled (or taken from the compile cache) at load, not on the first run;
//   - a plain step for every other node (engine/plain_ops.hpp, conv_ops.hpp), and for a fused
//     op the host kernel does not compute exactly (e.g. an erf Gelu, a Clip that is not a ReLU);
//   - a layout step where a tensor crosses between the convs' NHWC and ONNX's NCHW;
//   - nothing for a view (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout): its output
//     shares its input's bytes.
// Every activation lives in one arena, laid out once by the memory planner over the steps'
// order (execution/memory_plan.hpp): a run allocates nothing. Inputs and outputs are fp32 in
// ONNX's layout; integer and bool tensors are held as floats (exact below 2^24), so every
// step reads and writes one type. Not thread-safe: one run at a time per Model (the arena is the Model's).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "engine/plain_ops.hpp"
#include "host/builder.hpp"

namespace atvoss::engine {

struct ModelOptions {
  int batch = 1;                             // bound to every symbolic dim of the inputs not named in dims
  std::map<std::string, std::int64_t> dims;  // named symbolic dims ("sequence_length") and their values
  // The shapes inputs will be fed at, by name: their symbolic dims take these sizes (as ONNX
  // Runtime binds them from the arrays it is given); a dim in dims must agree.
  std::map<std::string, Shape> input_shapes;
  int threads = 0;           // cores the kernels run on; 0: this machine's physical cores
  std::string plan;          // a model plan file (docs/model-plan.md) of this model on this CPU; empty: defaults
  host::BuildOptions build;  // the compile cache the kernels come from
};

// An input or output. dtype is its ONNX element type ("float", "int64", "int32", "bool", ...): an
// integer or bool input (token ids, masks) is passed as floats holding its values, exact as
// long as they are integers below 2^24 in magnitude, which run checks; an integer or bool
// output comes back as floats holding its values.
struct TensorInfo {
  std::string name;
  Shape shape;
  std::string dtype = "float";
};

class Model {
 public:
  // bad_input naming the file, the node or the field: an unreadable or malformed model, an input
  // that is not fp32, an op the engine has no step for, a plan of another CPU (by fingerprint),
  // or of another model (other nodes or shapes).
  explicit Model(const std::string& onnx_path, const ModelOptions& options = {});
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;

  // inputs: one pointer per inputs() entry, elements(shape) floats each (an integer input's
  // values as floats: bad_input naming it for a value that is no integer or is 2^24 or more in
  // magnitude); outputs: one per outputs() entry, written whole.
  void run(const std::vector<const float*>& inputs, const std::vector<float*>& outputs);
  // The same, allocating the outputs.
  std::vector<std::vector<float>> run(const std::vector<const float*>& inputs);

  // How each step runs: {"steps": [{"node", "kind": "kernel"|"plain"|"layout", "workload",
  // "schedule", "choice"}], "arena_bytes", "kernels", "kernels_from_plan"}.
  Json describe() const;
  // Each step's time: runs of the model with every step timed, the median per step in
  // microseconds: {"steps": [{"node", "kind", "op" or "workload", "us"}], "total_us"}.
  Json profile(const std::vector<const float*>& inputs, int runs);
  std::int64_t arena_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace atvoss::engine

// Precision: how a job quantises its model. A job's "precision" field is a dtype for
// the whole model ("float16", "bfloat16", "float32", "int8") or an object of layers,
// {"conv1": {"weight": 8, "act": 8}, "*": {"weight": 16, "act": 16}}, where "*" sets
// every layer not named (default: the model's own dtype). Bits map to dtypes: 8 int8,
// 16 float16 (or {"type": "bfloat16"}), 32 float32; weight and act must agree, since
// a kernel here runs one dtype. An int8 layer's output leaves the int32 accumulator
// through a "requantize" epilogue (scale, round, saturate), which fusion folds in
// like any elementwise epilogue. Where the precision changes along the layer chain
// (TaskSet::layer_order), the layer before an int8 one quantises its output
// ("quantize": scale, round, saturate) and an int8 layer before a float one
// dequantises instead of requantising ("dequantize"); the plan still counts the
// stored elements at the layer's own width.
// What quantisation toolkits do for a whole-model int8: softmax, layernorm, LRN and
// the pools stay in the model's float dtype unless the spec names the layer. Where the
// producer of a precision change cannot take the conversion as an epilogue (a pool, a
// softmax), a conversion kernel of its own is paid: a `map` named "<layer>.quantize" or
// "<layer>.dequantize" over its output.
// A dtype the target's matrix unit does not run (Target::matrix_dtypes) falls back by
// name, with a warning (fit_precision).
// Accuracy is not measured: it cannot be without the model's weights and data. The
// quantisation error per layer is an estimate from int8's range and the fan-in.
// Pure functions: thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "frontend/task_set.hpp"

namespace atvoss::frontend {

struct PrecisionSpec {
  std::map<std::string, DType> layers;  // by layer name
  std::optional<DType> rest;            // "*" or the whole-model dtype; nullopt: the model's own
  bool empty() const { return layers.empty() && !rest; }
  static PrecisionSpec whole(DType d) { return PrecisionSpec{{}, d}; }
};

// bad_input naming "precision" and the layer on any problem.
PrecisionSpec parse_precision(const Json& j);

// spec with every dtype the target's matrix unit lacks replaced by float16 (float32 where
// float16 is lacking too); a warning naming each replaced dtype, the target and what it
// runs instead is appended to warnings. A spec that leaves the model in its own dtype
// (model_dtype) where the target cannot run it gets that dtype fitted too: a float16 zoo
// model on the host runs float32 rather than every layer falling back untuned.
PrecisionSpec fit_precision(const PrecisionSpec& spec, const Target& target, std::vector<std::string>& warnings,
                            std::optional<DType> model_dtype = std::nullopt);

// The model's own dtype: its first matmul-like or conv task's (else its first task's);
// nullopt for an empty model.
std::optional<DType> model_dtype(const TaskSet& tasks);

// w in dtype d: int8 ops that take an epilogue end in "requantize" (and lose a
// "quantize" / "dequantize" of another precision).
Workload with_dtype(const Workload& w, DType d);

// The tasks with each layer's precision applied: layers of one task that get
// different dtypes become different tasks. bad_input if a named layer is not in the model.
TaskSet apply_precision(const TaskSet& tasks, const PrecisionSpec& spec);

// Estimated relative error of an int8 layer's output: sqrt(fan-in) roundings of half
// an int8 step (1/254 of the range) against one full-range term. 0 for other dtypes.
double int8_error_estimate(const Workload& w);

}  // namespace atvoss::frontend

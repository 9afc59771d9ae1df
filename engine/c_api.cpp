// The C API of the model engine (atvoss_engine.h), under the C APIs' one error convention
// (db/table/c_boundary.hpp): a status and a message, nothing unwinding into a C caller.
#include "engine/atvoss_engine.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include "core/error.hpp"
#include "db/table/c_boundary.hpp"
#include "engine/model.hpp"

struct atvoss_model {
  std::unique_ptr<atvoss::engine::Model> model;
};

namespace {

static_assert(ATVOSS_MODEL_OK == int(atvoss::table::CStatus::ok) &&
              ATVOSS_MODEL_BAD_INPUT == int(atvoss::table::CStatus::bad_input) &&
              ATVOSS_MODEL_NOT_FOUND == int(atvoss::table::CStatus::not_found) &&
              ATVOSS_MODEL_IO == int(atvoss::table::CStatus::io) &&
              ATVOSS_MODEL_CORRUPT == int(atvoss::table::CStatus::corrupt) &&
              ATVOSS_MODEL_INTERNAL == int(atvoss::table::CStatus::internal));

template <typename Body>
atvoss_model_status guarded(char** error, Body&& body) noexcept {
  return static_cast<atvoss_model_status>(atvoss::table::c_guarded(error, "engine", std::forward<Body>(body)));
}

const atvoss::engine::Model& model_of(const atvoss_model* m) {
  if (m == nullptr || !m->model) atvoss::throw_bad_input("engine: model handle is NULL");
  return *m->model;
}

}  // namespace

extern "C" atvoss_model_status atvoss_model_open(const char* onnx_path, const char* plan_path, int batch, int threads,
                                                 const char* cache_dir, atvoss_model** out, char** error) {
  return atvoss_model_open_dims(onnx_path, plan_path, batch, 0, nullptr, nullptr, threads, cache_dir, out, error);
}

extern "C" atvoss_model_status atvoss_model_open_dims(const char* onnx_path, const char* plan_path, int batch,
                                                      size_t n_dims, const char* const* dim_names,
                                                      const int64_t* dim_values, int threads, const char* cache_dir,
                                                      atvoss_model** out, char** error) {
  if (out != nullptr) *out = nullptr;
  return guarded(error, [&] {
    atvoss::table::c_need(out, "engine", "out");
    atvoss::table::c_need(onnx_path, "engine", "onnx_path");
    if (batch < 1) atvoss::throw_bad_input("engine: 'batch' must be >= 1, got " + std::to_string(batch));
    if (threads < 0) atvoss::throw_bad_input("engine: 'threads' must be >= 0, got " + std::to_string(threads));
    atvoss::engine::ModelOptions o;
    if (n_dims > 0) {
      atvoss::table::c_need(dim_names, "engine", "dim_names");
      atvoss::table::c_need(dim_values, "engine", "dim_values");
    }
    for (size_t i = 0; i < n_dims; ++i) {
      if (dim_names[i] == nullptr) atvoss::throw_bad_input("engine: 'dim_names[" + std::to_string(i) + "]' is NULL");
      o.dims[dim_names[i]] = dim_values[i];
    }
    o.plan = plan_path != nullptr ? plan_path : "";
    o.batch = batch;
    o.threads = threads;
    if (cache_dir != nullptr) o.build.cache_dir = cache_dir;
    auto handle = std::make_unique<atvoss_model>();
    handle->model = std::make_unique<atvoss::engine::Model>(onnx_path, o);
    *out = handle.release();
  });
}

extern "C" const char* atvoss_model_input_type(const atvoss_model* m, size_t index) {
  if (m == nullptr || !m->model || index >= m->model->inputs().size()) return nullptr;
  return m->model->inputs()[index].dtype.c_str();
}

extern "C" size_t atvoss_model_count(const atvoss_model* m, int is_output) {
  if (m == nullptr || !m->model) return 0;
  return is_output ? m->model->outputs().size() : m->model->inputs().size();
}

extern "C" atvoss_model_status atvoss_model_tensor(const atvoss_model* m, int is_output, size_t index,
                                                   const char** name, size_t* rank, const int64_t** dims,
                                                   char** error) {
  return guarded(error, [&] {
    const auto& list = is_output ? model_of(m).outputs() : model_of(m).inputs();
    if (index >= list.size()) {
      atvoss::throw_bad_input("engine: 'index' " + std::to_string(index) + " of " + std::to_string(list.size()) +
                              (is_output ? " outputs" : " inputs"));
    }
    if (name != nullptr) *name = list[index].name.c_str();
    if (rank != nullptr) *rank = list[index].shape.size();
    if (dims != nullptr) *dims = list[index].shape.data();
  });
}

extern "C" atvoss_model_status atvoss_model_run(atvoss_model* m, const float* const* inputs, float* const* outputs,
                                                char** error) {
  return guarded(error, [&] {
    const atvoss::engine::Model& model = model_of(m);
    atvoss::table::c_need(inputs, "engine", "inputs");
    atvoss::table::c_need(outputs, "engine", "outputs");
    const std::vector<const float*> in(inputs, inputs + model.inputs().size());
    const std::vector<float*> out(outputs, outputs + model.outputs().size());
    m->model->run(in, out);
  });
}

extern "C" void atvoss_model_close(atvoss_model* m) { delete m; }

extern "C" void atvoss_model_free_string(char* text) { std::free(text); }

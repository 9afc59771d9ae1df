// The C API of the runtime (atvoss_runtime.h), under the C APIs' one error convention
// (db/table/c_boundary.hpp): a status and a message, nothing unwinding into a C caller.
#include "runtime/atvoss_runtime.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "db/table/c_boundary.hpp"
#include "runtime/runtime.hpp"

struct atvoss_runtime {
  std::unique_ptr<atvoss::runtime::Runtime> rt;
};

struct atvoss_conv2d_weights {
  atvoss::runtime::PreparedWeights prepared;
};

namespace {

using atvoss::runtime::Choice;
using atvoss::runtime::ChoiceKind;

using atvoss::table::c_string;

static_assert(ATVOSS_RUNTIME_OK == int(atvoss::table::CStatus::ok) &&
              ATVOSS_RUNTIME_BAD_INPUT == int(atvoss::table::CStatus::bad_input) &&
              ATVOSS_RUNTIME_NOT_FOUND == int(atvoss::table::CStatus::not_found) &&
              ATVOSS_RUNTIME_IO == int(atvoss::table::CStatus::io) &&
              ATVOSS_RUNTIME_CORRUPT == int(atvoss::table::CStatus::corrupt) &&
              ATVOSS_RUNTIME_INTERNAL == int(atvoss::table::CStatus::internal));

// Runs body under the C APIs' one convention (db/table/c_boundary.hpp).
template <typename Body>
atvoss_runtime_status guarded(char** error, Body&& body) noexcept {
  return static_cast<atvoss_runtime_status>(atvoss::table::c_guarded(error, "runtime", std::forward<Body>(body)));
}

atvoss::runtime::Runtime& runtime_of(atvoss_runtime* rt) {
  if (rt == nullptr || !rt->rt) atvoss::throw_bad_input("runtime: handle is NULL");
  return *rt->rt;
}

void need(const void* p, const char* name) { atvoss::table::c_need(p, "runtime", name); }

atvoss::runtime::EpilogueArgs epilogue_of(const atvoss_epilogue* e) {
  atvoss::runtime::EpilogueArgs out;
  if (e == nullptr) return out;
  std::istringstream ops(e->ops != nullptr ? e->ops : "");
  for (std::string op; std::getline(ops, op, ',');) {
    if (!op.empty()) out.ops.push_back(op);
  }
  out.bias = e->bias;
  out.scale = e->scale;
  out.shift = e->shift;
  out.residual = e->residual;
  out.qout = e->qout;
  out.codes = e->codes;
  out.slope = e->slope;
  return out;
}

atvoss::runtime::Conv2dShape shape_of(const atvoss_conv2d_shape* shape) {
  need(shape, "shape");
  return {shape->n, shape->c, shape->h, shape->w, shape->k, shape->r, shape->s, shape->stride, shape->pad};
}

// Prepares the filter with `prepare` into *out (set to NULL first, so a failure leaves no handle).
template <typename Prepare>
atvoss_runtime_status prepared_weights(atvoss_conv2d_weights** out, char** error, Prepare&& prepare) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(error, [&] {
    need(out, "out");
    *out = new atvoss_conv2d_weights{prepare()};
  });
}

const atvoss::runtime::PreparedWeights& weights_of(const atvoss_conv2d_weights* w) {
  need(w, "filter");
  return w->prepared;
}

void report(const Choice& choice, atvoss_choice_kind* kind) {
  if (kind == nullptr) return;
  *kind = choice.kind == ChoiceKind::exact     ? ATVOSS_CHOICE_EXACT
          : choice.kind == ChoiceKind::nearest ? ATVOSS_CHOICE_NEAREST
                                               : ATVOSS_CHOICE_DEFAULT;
}

}  // namespace

extern "C" atvoss_runtime_status atvoss_runtime_open(const char* table_path, const char* cache_dir, unsigned flags,
                                                     atvoss_runtime** out, char** error) {
  return guarded(error, [&] {
    need(out, "out");
    *out = nullptr;
    atvoss::runtime::RuntimeOptions options;
    options.table = table_path != nullptr ? table_path : "";
    if (cache_dir != nullptr) options.build.cache_dir = cache_dir;
    if (flags & ATVOSS_RUNTIME_FOREIGN_TABLE_DEFAULTS)
      options.foreign_table = atvoss::runtime::ForeignTable::use_defaults;
    auto handle = std::make_unique<atvoss_runtime>();
    handle->rt = std::make_unique<atvoss::runtime::Runtime>(std::move(options));
    *out = handle.release();  // owned by the caller until atvoss_runtime_close
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_matmul(atvoss_runtime* rt, const float* a, const float* b, float* c,
                                                       int64_t m, int64_t n, int64_t k, const atvoss_epilogue* epilogue,
                                                       atvoss_choice_kind* kind, char** error) {
  return guarded(error, [&] { report(runtime_of(rt).matmul(a, b, c, m, n, k, epilogue_of(epilogue)), kind); });
}

extern "C" atvoss_runtime_status atvoss_runtime_matmul_int8(atvoss_runtime* rt, const uint8_t* a, const int8_t* b,
                                                            float* c, const float* scale, const int32_t* comp,
                                                            int64_t m, int64_t n, int64_t k,
                                                            const atvoss_epilogue* epilogue, atvoss_choice_kind* kind,
                                                            char** error) {
  return guarded(
      error, [&] { report(runtime_of(rt).matmul_int8(a, b, c, scale, comp, m, n, k, epilogue_of(epilogue)), kind); });
}

extern "C" atvoss_runtime_status atvoss_runtime_matmul_bf16(atvoss_runtime* rt, const uint16_t* a, const uint16_t* b,
                                                            float* c, int64_t m, int64_t n, int64_t k,
                                                            const atvoss_epilogue* epilogue, atvoss_choice_kind* kind,
                                                            char** error) {
  return guarded(error, [&] { report(runtime_of(rt).matmul_bf16(a, b, c, m, n, k, epilogue_of(epilogue)), kind); });
}

extern "C" atvoss_runtime_status atvoss_runtime_batch_matmul(atvoss_runtime* rt, const float* a, const float* b,
                                                             float* c, int64_t batch, int64_t m, int64_t n, int64_t k,
                                                             const atvoss_epilogue* epilogue, atvoss_choice_kind* kind,
                                                             char** error) {
  return guarded(error,
                 [&] { report(runtime_of(rt).batch_matmul(a, b, c, batch, m, n, k, epilogue_of(epilogue)), kind); });
}

extern "C" atvoss_runtime_status atvoss_runtime_conv2d(atvoss_runtime* rt, const float* input, const float* filter,
                                                       float* output, const atvoss_conv2d_shape* shape,
                                                       const atvoss_epilogue* epilogue, atvoss_choice_kind* kind,
                                                       char** error) {
  return guarded(error, [&] {
    report(runtime_of(rt).conv2d(input, filter, output, shape_of(shape), epilogue_of(epilogue)), kind);
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_conv2d_int8(atvoss_runtime* rt, const uint8_t* input,
                                                            int32_t zero_point, const int8_t* filter, float* output,
                                                            const float* scale, const int32_t* comp,
                                                            const atvoss_conv2d_shape* shape,
                                                            const atvoss_epilogue* epilogue, atvoss_choice_kind* kind,
                                                            char** error) {
  return guarded(error, [&] {
    report(runtime_of(rt).conv2d_int8(input, zero_point, filter, output, scale, comp, shape_of(shape),
                                      epilogue_of(epilogue)),
           kind);
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_conv2d_bf16(atvoss_runtime* rt, const uint16_t* input,
                                                            const uint16_t* filter, float* output,
                                                            const atvoss_conv2d_shape* shape,
                                                            const atvoss_epilogue* epilogue, atvoss_choice_kind* kind,
                                                            char** error) {
  return guarded(error, [&] {
    report(runtime_of(rt).conv2d_bf16(input, filter, output, shape_of(shape), epilogue_of(epilogue)), kind);
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_prepare_conv2d_weights(atvoss_runtime* rt, const float* filter,
                                                                       const atvoss_conv2d_shape* shape,
                                                                       const atvoss_epilogue* epilogue,
                                                                       atvoss_conv2d_weights** out, char** error) {
  return prepared_weights(
      out, error, [&] { return runtime_of(rt).pack_conv2d_weights(filter, shape_of(shape), epilogue_of(epilogue)); });
}

extern "C" atvoss_runtime_status atvoss_runtime_prepare_conv2d_int8_weights(atvoss_runtime* rt, const int8_t* filter,
                                                                            const atvoss_conv2d_shape* shape,
                                                                            const atvoss_epilogue* epilogue,
                                                                            atvoss_conv2d_weights** out, char** error) {
  return prepared_weights(out, error, [&] {
    return runtime_of(rt).pack_conv2d_int8_weights(filter, shape_of(shape), epilogue_of(epilogue));
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_prepare_conv2d_bf16_weights(atvoss_runtime* rt, const uint16_t* filter,
                                                                            const atvoss_conv2d_shape* shape,
                                                                            const atvoss_epilogue* epilogue,
                                                                            atvoss_conv2d_weights** out, char** error) {
  return prepared_weights(out, error, [&] {
    return runtime_of(rt).pack_conv2d_bf16_weights(filter, shape_of(shape), epilogue_of(epilogue));
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_conv2d_prepared(atvoss_runtime* rt, const float* input,
                                                                const atvoss_conv2d_weights* filter, float* output,
                                                                const atvoss_conv2d_shape* shape,
                                                                const atvoss_epilogue* epilogue,
                                                                atvoss_choice_kind* kind, char** error) {
  return guarded(error, [&] {
    report(runtime_of(rt).conv2d(input, weights_of(filter), output, shape_of(shape), epilogue_of(epilogue)), kind);
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_conv2d_int8_prepared(
    atvoss_runtime* rt, const uint8_t* input, int32_t zero_point, const atvoss_conv2d_weights* filter, float* output,
    const float* scale, const int32_t* comp, const atvoss_conv2d_shape* shape, const atvoss_epilogue* epilogue,
    atvoss_choice_kind* kind, char** error) {
  return guarded(error, [&] {
    report(runtime_of(rt).conv2d_int8(input, zero_point, weights_of(filter), output, scale, comp, shape_of(shape),
                                      epilogue_of(epilogue)),
           kind);
  });
}

extern "C" atvoss_runtime_status atvoss_runtime_conv2d_bf16_prepared(atvoss_runtime* rt, const uint16_t* input,
                                                                     const atvoss_conv2d_weights* filter, float* output,
                                                                     const atvoss_conv2d_shape* shape,
                                                                     const atvoss_epilogue* epilogue,
                                                                     atvoss_choice_kind* kind, char** error) {
  return guarded(error, [&] {
    report(runtime_of(rt).conv2d_bf16(input, weights_of(filter), output, shape_of(shape), epilogue_of(epilogue)), kind);
  });
}

extern "C" void atvoss_runtime_free_conv2d_weights(atvoss_conv2d_weights* weights) { delete weights; }

extern "C" atvoss_runtime_status atvoss_runtime_choice(atvoss_runtime* rt, const char* workload_json,
                                                       char** choice_json, char** error) {
  return guarded(error, [&] {
    need(choice_json, "choice_json");
    *choice_json = nullptr;
    need(workload_json, "workload_json");
    const auto w = atvoss::Workload::from_json(atvoss::parse_json(workload_json, "workload"));
    *choice_json = c_string(runtime_of(rt).choose(w).to_json().dump());
    if (*choice_json == nullptr) throw std::bad_alloc();
  });
}

extern "C" void atvoss_runtime_free_string(char* text) { std::free(text); }

extern "C" void atvoss_runtime_close(atvoss_runtime* rt) { delete rt; }

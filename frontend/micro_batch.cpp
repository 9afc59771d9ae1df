#include "frontend/micro_batch.hpp"

#include <string>

namespace atvoss::frontend {
namespace {

std::string batch_dim(const Workload& w) {
  switch (w.family()) {
    case OpFamily::conv:
    case OpFamily::depthwise:
      return "N";
    case OpFamily::matmul:
      return w.info().batch_dim.empty() ? "M" : w.info().batch_dim;
    case OpFamily::rows:
      return "M";
    case OpFamily::attention:
      return "B";
    default:
      return "";
  }
}

}  // namespace

std::optional<Workload> micro_batch_workload(const Workload& w, int micro_batches) {
  const std::string d = batch_dim(w);
  if (micro_batches < 1 || d.empty() || !w.dims().count(d) || w.dim(d) % micro_batches != 0) return std::nullopt;
  if (micro_batches == 1) return w;
  Json j = w.to_json();
  j["dims"][d] = w.dim(d) / micro_batches;
  return Workload::from_json(j);
}

}  // namespace atvoss::frontend

#include "backend/backend.hpp"

#include <algorithm>

#include <mutex>

#include "backend/internal/builtin_backends.hpp"
#include "core/error.hpp"
#include "lowering/knob_names.hpp"

namespace atvoss::backend {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<const Backend>> backends;  // asked in order
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: lookups may run during static destruction
    reg->backends = {make_recorded_backend(), make_host_backend(), make_npu_sim_backend()};
    return reg;
  }();
  return *r;
}

std::vector<std::shared_ptr<const Backend>> snapshot() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.backends;
}

}  // namespace

const Backend& backend_for(const Workload& w, const Target& t) {
  for (const auto& b : snapshot()) {
    if (b->serves(w, t)) return *b;
  }
  throw_bad_input("no backend serves op '" + w.op() + "' on target '" + t.name + "'");
}

const Backend& backend_named(std::string_view name) {
  for (const auto& b : snapshot()) {
    if (b->name() == name) return *b;
  }
  std::string names;
  for (const auto& n : backend_names()) names += (names.empty() ? "" : ", ") + n;
  throw_bad_input("unknown backend '" + std::string(name) + "'; expected one of: " + names);
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& b : snapshot()) names.push_back(b->name());
  return names;
}

void register_backend(std::shared_ptr<const Backend> backend) {
  if (!backend) throw_bad_input("register_backend: null backend");
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& b : r.backends) {
    if (b->name() == backend->name()) {
      throw_bad_input("register_backend: backend '" + backend->name() + "' already exists");
    }
  }
  r.backends.insert(r.backends.begin(), std::move(backend));
}

BackendTraits traits_for(const Workload& w, const Target& t) { return backend_for(w, t).traits(t); }

BackendTraits target_traits(const Target& t) {
  BackendTraits out;
  for (const auto& b : snapshot()) {
    if (!b->serves_target(t)) continue;
    const BackendTraits tr = b->traits(t);
    out.machine_bound = out.machine_bound || tr.machine_bound;
    out.runs_models_serially = out.runs_models_serially || tr.runs_models_serially;
    if (tr.max_concurrent > 0) {
      out.max_concurrent = out.max_concurrent > 0 ? std::min(out.max_concurrent, tr.max_concurrent) : tr.max_concurrent;
    }
  }
  return out;
}

void check_target(const Target& t) {
  for (const auto& b : snapshot()) {
    if (b->serves_target(t)) b->check_target(t);
  }
}

std::vector<Target> former_targets(const Target& t) {
  std::vector<Target> out;
  for (const auto& b : snapshot()) {
    if (!b->serves_target(t)) continue;
    for (Target& f : b->former_targets(t)) out.push_back(std::move(f));
  }
  return out;
}

ScheduleSpace space_for(const Workload& w, const Target& t) { return backend_for(w, t).space(w, t); }

std::optional<Schedule> default_schedule(const Workload& w, const Target& t) {
  return backend_for(w, t).default_schedule(w, t);
}

Schedule Backend::default_on_threads(const Workload&, const Target&, const Schedule& def, std::int64_t threads) const {
  Schedule s = def;
  s.set(std::string(knobs::threads), threads);
  return s;
}

Schedule default_on_threads(const Workload& w, const Target& t, const Schedule& def, std::int64_t threads) {
  return backend_for(w, t).default_on_threads(w, t, def, threads);
}

Schedule required_default(const Workload& w, const Target& t) {
  const Backend& b = backend_for(w, t);
  if (auto s = b.default_schedule(w, t)) return *s;
  throw_bad_input("backend '" + b.name() + "' has no default schedule for " + w.label() +
                  " (measured tables are tuned one at a time, not in batch jobs)");
}

Analysis Backend::analyze(const Measurement&, const Schedule&) const {
  return {.bottleneck = "unknown", .hint = "the " + name() + " backend reads no profile"};
}

Analysis analyze(const Workload& w, const Target& t, const Measurement& m, const Schedule& s) {
  if (!m.ok()) throw_bad_input("analyze: field 'status' must be ok, got " + std::string(to_string(m.status)));
  return backend_for(w, t).analyze(m, s);
}

Measurement measure_one(const MeasureRequest& request, const MeasureOptions& options) {
  return backend_for(request.workload, request.target)
      .measure(std::span<const MeasureRequest>(&request, 1), options)
      .front();
}

Measurement measure_noise_free(const Target& target, const Workload& w, const Schedule& s) {
  return measure_one(MeasureRequest{w, target, s, 1, 0}, MeasureOptions{0});
}

}  // namespace atvoss::backend

#include "core/measurement.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "core/error.hpp"
#include "core/result_check.hpp"

namespace atvoss {
namespace {
constexpr std::array<std::pair<Status, std::string_view>, 9> kStatusNames = {{
    {Status::ok, "ok"},
    {Status::invalid, "invalid"},
    {Status::compile_error, "compile_error"},
    {Status::runtime_error, "runtime_error"},
    {Status::wrong_answer, "wrong_answer"},
    {Status::timeout, "timeout"},
    {Status::worker_lost, "worker_lost"},
    {Status::session_timeout, "session_timeout"},
    {Status::error, "error"},
}};
}  // namespace

std::string_view to_string(Status s) noexcept {
  for (const auto& [st, name] : kStatusNames) {
    if (st == s) return name;
  }
  return "error";
}

Status parse_status(std::string_view s) {
  for (const auto& [st, name] : kStatusNames) {
    if (name == s) return st;
  }
  throw_bad_input(
      "measurement: field 'status' must be one of ok, invalid, compile_error, "
      "runtime_error, wrong_answer, timeout, worker_lost, session_timeout, error; got '" +
      std::string(s) + "'");
}

bool is_candidate_error(Status s) noexcept {
  return s == Status::invalid || s == Status::compile_error || s == Status::runtime_error ||
         s == Status::wrong_answer || s == Status::timeout;
}

bool is_infrastructure_error(Status s) noexcept {
  return s == Status::worker_lost || s == Status::session_timeout || s == Status::error;
}

Json Profile::to_json() const {
  return {{"compute_us", compute_us},
          {"dma_us", dma_us},
          {"sync_wait_us", sync_wait_us},
          {"launch_us", launch_us},
          {"l1_hit_rate", l1_hit_rate},
          {"dma_utilisation", dma_utilisation},
          {"cube_utilisation", cube_utilisation},
          {"gm_bytes", gm_bytes},
          {"peak_workspace_bytes", peak_workspace_bytes},
          {"kernels", kernels},
          {"compile_us", compile_us},
          {"time_cv", time_cv}};
}

Profile Profile::from_json(const Json& j) {
  Profile p;
  if (!j.is_object()) return p;
  auto num = [&](const char* n, double& out) {
    if (j.contains(n) && j[n].is_number()) out = j[n].get<double>();
  };
  num("compute_us", p.compute_us);
  num("dma_us", p.dma_us);
  num("sync_wait_us", p.sync_wait_us);
  num("launch_us", p.launch_us);
  num("l1_hit_rate", p.l1_hit_rate);
  num("dma_utilisation", p.dma_utilisation);
  num("cube_utilisation", p.cube_utilisation);
  num("gm_bytes", p.gm_bytes);
  num("peak_workspace_bytes", p.peak_workspace_bytes);
  num("compile_us", p.compile_us);
  num("time_cv", p.time_cv);
  if (j.contains("kernels") && j["kernels"].is_number_integer()) p.kernels = j["kernels"].get<int>();
  return p;
}

Json Measurement::to_json() const {
  Json j{{"status", std::string(to_string(status))}, {"time_us", time_us}, {"repeats", repeats}};
  if (!message.empty()) j["message"] = message;
  if (status == Status::ok) j["profile"] = profile.to_json();
  return j;
}

Measurement Measurement::from_json(const Json& j) {
  Measurement m;
  m.status = parse_status(require_string(j, "status", "measurement"));
  if (j.contains("message")) {
    if (!j["message"].is_string()) throw_bad_input("measurement: field 'message' must be a string");
    m.message = j["message"].get<std::string>();
  }
  m.time_us = m.status == Status::ok ? require_number(j, "time_us", "measurement") : 0.0;
  if (j.contains("repeats")) {
    if (!j["repeats"].is_array()) throw_bad_input("measurement: field 'repeats' must be an array");
    for (const auto& r : j["repeats"]) {
      if (!r.is_number()) throw_bad_input("measurement: 'repeats' entries must be numbers");
      m.repeats.push_back(r.get<double>());
    }
  }
  if (j.contains("profile")) m.profile = Profile::from_json(j["profile"]);
  check_result(m);
  return m;
}

Measurement Measurement::failed(Status s, std::string why) {
  Measurement m;
  m.status = s;
  m.message = std::move(why);
  return m;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double hi = values[mid];
  const double lo = *std::max_element(values.begin(), values.begin() + mid);
  return (lo + hi) / 2;
}

}  // namespace atvoss

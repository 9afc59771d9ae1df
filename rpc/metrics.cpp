#include "rpc/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace atvoss::rpc {

void FarmMetrics::count_submitted() {
  const std::lock_guard lock(mu_);
  ++submitted_;
}
void FarmMetrics::count_deduplicated() {
  const std::lock_guard lock(mu_);
  ++deduplicated_;
}
void FarmMetrics::count_retry() {
  const std::lock_guard lock(mu_);
  ++retries_;
}
void FarmMetrics::count_worker_lost() {
  const std::lock_guard lock(mu_);
  ++workers_lost_;
}
void FarmMetrics::count_late_result() {
  const std::lock_guard lock(mu_);
  ++late_;
}

void FarmMetrics::count_rejection(std::string_view reason) {
  const std::lock_guard lock(mu_);
  auto it = rejections_.find(reason);
  if (it == rejections_.end()) it = rejections_.emplace(std::string(reason), 0).first;
  ++it->second;
}

void FarmMetrics::count_measured(std::string_view raw_status) {
  // Statuses come from workers as bytes: anything but printable ASCII (and a newline, which
  // label_value escapes) becomes '?', so that /metrics stays valid UTF-8 (a scraper refuses
  // the page otherwise) and the stats stay JSON.
  std::string printable(raw_status);
  for (char& c : printable) {
    const auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && c != '\n') || b > 0x7e) c = '?';
  }
  std::string_view status = printable;
  const std::lock_guard lock(mu_);
  auto it = by_status_.find(status);
  // Statuses come from workers: a bounded label set keeps /metrics and memory bounded.
  if (it == by_status_.end() && by_status_.size() >= kMaxStatuses) status = "other";
  it = by_status_.find(status);
  if (it == by_status_.end()) it = by_status_.emplace(std::string(status), 0).first;
  ++it->second;
  bump_rate();
}

void FarmMetrics::bump_rate() {
  const auto second = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - origin_).count();
  const std::size_t slot = static_cast<std::size_t>(second) % kWindow;
  if (second_of_[slot] != second) {
    second_of_[slot] = second;
    per_second_[slot] = 0;
  }
  ++per_second_[slot];
}

void FarmMetrics::add_latency(double microseconds) {
  const std::lock_guard lock(mu_);
  latency_sum_us_ += microseconds;
  ++latency_count_;
  if (latencies_.size() < kSamples) {
    latencies_.push_back(microseconds);
  } else {
    latencies_[next_latency_] = microseconds;
  }
  next_latency_ = (next_latency_ + 1) % kSamples;
}

double FarmMetrics::rate_locked(std::int64_t now_second) const {
  // Whole seconds before the current one, so a partly elapsed second does not dilute it.
  std::uint64_t total = 0;
  std::int64_t seconds = 0;
  for (std::int64_t s = now_second - 1; s >= 0 && s >= now_second - static_cast<std::int64_t>(kWindow) + 1; --s) {
    const std::size_t slot = static_cast<std::size_t>(s) % kWindow;
    if (second_of_[slot] == s) total += per_second_[slot];
    ++seconds;
  }
  return seconds == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(seconds);
}

double FarmMetrics::rate_per_second() const {
  const std::lock_guard lock(mu_);
  return rate_locked(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - origin_).count());
}

double FarmMetrics::percentile_locked(double q) const {
  if (latencies_.empty()) return 0.0;
  std::vector<double> sorted = latencies_;
  const std::size_t k = std::min(
      sorted.size() - 1, static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - (q > 0 ? 1 : 0));
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  return sorted[k];
}

double FarmMetrics::latency_percentile(double q) const {
  const std::lock_guard lock(mu_);
  return percentile_locked(q);
}

Json FarmMetrics::to_json() const {
  const std::lock_guard lock(mu_);
  Json by_status = Json::object();
  std::uint64_t answered = 0;
  for (const auto& [k, v] : by_status_) {
    by_status[k] = v;
    answered += v;
  }
  Json rejections = Json::object();
  for (const auto& [k, v] : rejections_) rejections[k] = v;
  const auto now_second = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - origin_).count();
  return Json{{"submitted", submitted_},
              {"answered", answered},
              {"by_status", std::move(by_status)},
              {"deduplicated", deduplicated_},
              {"retries", retries_},
              {"workers_lost", workers_lost_},
              {"late_results_ignored", late_},
              {"rejected_connections", std::move(rejections)},
              {"measurements_per_second", rate_locked(now_second)},
              {"latency_p50_us", percentile_locked(0.5)},
              {"latency_p99_us", percentile_locked(0.99)}};
}

namespace {

// A label value in the text format: backslash, double quote and newline escaped.
std::string label_value(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void family(std::ostringstream& out, std::string_view name, std::string_view type, std::string_view help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

}  // namespace

bool FarmMetrics::is_success(std::string_view status) noexcept {
  // ok: a measurement; exact/nearest: a lookup of the query server that found an answer.
  return status == "ok" || status == "exact" || status == "nearest";
}

std::string FarmMetrics::prometheus_answers(std::string_view prefix_view, const AnswerHelp& help) const {
  const std::string prefix(prefix_view);
  const Json j = to_json();
  double sum_us = 0;
  std::uint64_t count = 0;
  {
    const std::lock_guard lock(mu_);
    sum_us = latency_sum_us_;
    count = latency_count_;
  }
  std::ostringstream out;
  out.precision(17);  // exact doubles: a scraper must read back what we hold
  const std::string measured = prefix + "_measurements_total", errors = prefix + "_errors_total";
  family(out, measured, "counter", help.by_status);
  for (const auto& [status, n] : j["by_status"].items()) {
    out << measured << "{status=\"" << label_value(status) << "\"} " << n.get<std::uint64_t>() << "\n";
  }
  family(out, errors, "counter", help.errors);
  for (const auto& [status, n] : j["by_status"].items()) {
    if (!is_success(status)) {
      out << errors << "{kind=\"" << label_value(status) << "\"} " << n.get<std::uint64_t>() << "\n";
    }
  }
  for (const auto& [reason, n] : j["rejected_connections"].items()) {
    out << errors << "{kind=\"rejected_" << label_value(reason) << "\"} " << n.get<std::uint64_t>() << "\n";
  }
  family(out, prefix + "_measurements_per_second", "gauge", help.rate);
  out << prefix << "_measurements_per_second " << j["measurements_per_second"].get<double>() << "\n";
  const std::string latency = prefix + "_latency_seconds";
  family(out, latency, "summary", help.latency);
  out << latency << "{quantile=\"0.5\"} " << j["latency_p50_us"].get<double>() / 1e6 << "\n"
      << latency << "{quantile=\"0.99\"} " << j["latency_p99_us"].get<double>() / 1e6 << "\n"
      << latency << "_sum " << sum_us / 1e6 << "\n"
      << latency << "_count " << count << "\n";
  return out.str();
}

std::string FarmMetrics::prometheus() const {
  const Json j = to_json();
  std::ostringstream out;
  out << prometheus_answers("atvoss_farm", kFarmHelp);
  const struct {
    const char* name;
    const char* key;
    const char* help;
  } kCounters[] = {
      {"atvoss_farm_submitted_total", "submitted", "Items submitted by clients."},
      {"atvoss_farm_deduplicated_total", "deduplicated", "Items answered by a measurement already in flight."},
      {"atvoss_farm_retries_total", "retries", "Tasks requeued after their worker was lost."},
      {"atvoss_farm_workers_lost_total", "workers_lost", "Workers removed (disconnected or silent)."},
      {"atvoss_farm_late_results_total", "late_results_ignored", "Results ignored because the lease had moved on."},
  };
  for (const auto& c : kCounters) {
    family(out, c.name, "counter", c.help);
    out << c.name << " " << j[c.key].get<std::uint64_t>() << "\n";
  }
  return out.str();
}

std::string prometheus_gauges(const std::vector<Gauge>& gauges) {
  std::ostringstream out;
  out.precision(17);
  for (const Gauge& g : gauges) {
    family(out, g.name, "gauge", g.help);
    out << g.name << " " << g.value << "\n";
  }
  return out.str();
}

}  // namespace atvoss::rpc

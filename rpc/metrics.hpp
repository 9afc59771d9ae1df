// FarmMetrics: the counters and latency samples behind /v1/stats and /metrics —
// measurements by status, submissions, dedup hits, retries, lost workers, late
// results, rejected connections by reason, a per-second rate over the last 10 s,
// and p50/p99 of submit-to-answer latency over the last 4096 answers.
// Threading: every method is thread-safe (one internal mutex; calls are short).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace atvoss::rpc {

class FarmMetrics {
 public:
  void count_submitted();
  void count_deduplicated();
  void count_measured(std::string_view status);
  void count_retry();
  void count_worker_lost();
  void count_late_result();
  void count_rejection(std::string_view reason);
  void add_latency(double microseconds);

  // Answers per second over the last full seconds (up to 10).
  double rate_per_second() const;
  // Percentile q in [0,1] of recent latencies in microseconds; 0 with no samples.
  double latency_percentile(double q) const;

  Json to_json() const;
  // Text exposition: HELP and TYPE on every family, latency in seconds as a summary with
  // _sum and _count, errors_total counting only statuses that are not a success.
  std::string prometheus() const;
  // The HELP texts of the answer families: a farm relays measurements, a query server
  // answers lookups, and a scrape shows which.
  struct AnswerHelp {
    std::string_view by_status, errors, rate, latency;
  };
  static constexpr AnswerHelp kFarmHelp{
      "Answers relayed to clients, by status.", "Answers that are not a success, and rejected connections, by kind.",
      "Answers per second over the last 10 s.",
      "Submit-to-answer latency; quantiles over the last 4096 answers, sum and count over all."};
  static constexpr AnswerHelp kQueryHelp{
      "Lookups answered, by status (exact, nearest, not_found, ...).",
      "Lookups that found nothing or failed, and rejected connections, by kind.",
      "Lookups per second over the last 10 s.",
      "Request-to-answer latency of a lookup; quantiles over the last 4096, sum and count over all."};
  // Only the answer families (by status, errors, rate, latency) named <prefix>_...: what a
  // query server, which has no queue, workers or retries, has to say.
  std::string prometheus_answers(std::string_view prefix, const AnswerHelp& help) const;
  // ok, and the query server's exact/nearest: answers that are not errors.
  static bool is_success(std::string_view status) noexcept;

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kWindow = 10;
  static constexpr std::size_t kSamples = 4096;
  static constexpr std::size_t kMaxStatuses = 32;  // distinct status labels; more count as "other"
  void bump_rate();                                // REQUIRES: mu_
  double rate_locked(std::int64_t now_second) const;
  double percentile_locked(double q) const;

  mutable std::mutex mu_;
  std::uint64_t submitted_ = 0, deduplicated_ = 0, retries_ = 0, workers_lost_ = 0, late_ = 0;
  std::map<std::string, std::uint64_t, std::less<>> by_status_;
  std::map<std::string, std::uint64_t, std::less<>> rejections_;
  std::array<std::uint64_t, kWindow> per_second_{};
  std::array<std::int64_t, kWindow> second_of_{};
  std::vector<double> latencies_;
  std::size_t next_latency_ = 0;
  double latency_sum_us_ = 0;        // over all answers, for the summary's _sum
  std::uint64_t latency_count_ = 0;  // and _count
  Clock::time_point origin_ = Clock::now();
};

// One unlabelled gauge of the text exposition, e.g. the records in a database.
struct Gauge {
  std::string name, help;
  double value = 0;
};
// HELP, TYPE and the value of each gauge.
std::string prometheus_gauges(const std::vector<Gauge>& gauges);

}  // namespace atvoss::rpc

// Cost-model quality benchmark: leave-one-workload-out over the tuning-quality suite
// (bench/quality_suite.hpp). For each workload of the suite, XGBoost and the linear
// baseline are trained on every OTHER workload (both targets), then rank the held-out
// workload's space on both targets; reported per case: pairwise accuracy, peak@1 and
// peak@5, then the means. Targets: XGBoost pairwise >= 0.85, peak@5 >= 0.95
// (TenSet's XGBoost: 0.846 pairwise, 0.905 peak@5 on real CPUs).
//
// Training data: --train-points random valid points per training case (default 2000),
// labelled with the noise-free ground-truth time times a seeded ~2% jitter (--noise), as
// measurements would be. Evaluation: every valid point of the held-out space, or a
// seeded random --eval-points of them where the space is larger. Ground truth comes from
// the suite's cache (<build>/bench-cache), so reruns skip the enumeration.
//
// Usage: bench_costmodel_quality [--train-points N] [--eval-points N] [--noise X]
//                                [--seed N] [--csv FILE] [--only NAME] [--kinds xgboost,linear]
//                                [--rounds N] [--depth N] [--eta X] [--objective O]
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/quality_suite.hpp"
#include "core/error.hpp"
#include "costmodel/cost_model.hpp"
#include "costmodel/metrics.hpp"

namespace atvoss::bench {
namespace {

struct Args {
  std::size_t train_points = 2000;
  std::size_t eval_points = 50000;
  double noise = 0.02;
  std::uint64_t seed = 1;
  std::string csv;
  std::string only;
  std::vector<std::string> kinds = {"xgboost", "linear"};
  costmodel::ModelOptions model;  // rounds, depth, eta: the tuner's defaults unless overridden
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw_bad_input("flag " + flag + " needs a value");
    const std::string v = argv[++i];
    if (flag == "--train-points")
      a.train_points = std::stoul(v);
    else if (flag == "--eval-points")
      a.eval_points = std::stoul(v);
    else if (flag == "--noise")
      a.noise = std::stod(v);
    else if (flag == "--seed")
      a.seed = std::stoull(v);
    else if (flag == "--csv")
      a.csv = v;
    else if (flag == "--only")
      a.only = v;
    else if (flag == "--kinds")
      a.kinds = split(v);
    else if (flag == "--rounds")
      a.model.rounds = std::stoi(v);
    else if (flag == "--depth")
      a.model.max_depth = std::stoi(v);
    else if (flag == "--eta")
      a.model.eta = std::stod(v);
    else if (flag == "--objective")
      a.model.objective = v;
    else
      throw_bad_input("unknown flag " + flag);
  }
  return a;
}

struct LoadedCase {
  SuiteCase c;
  std::string workload_name;
  GroundTruth truth;
  std::vector<std::uint64_t> valid;  // flat indices of valid points
};

// Seeded multiplicative jitter, mean 1, sd ~noise (sum of uniforms; platform independent).
double jitter(std::mt19937_64& rng, double noise) {
  double u = 0;
  for (int i = 0; i < 3; ++i) u += double(rng() >> 11) * 0x1.0p-53;
  return 1.0 + noise * (u - 1.5) * 2.0;
}

// Seeded sample of k distinct elements (partial Fisher-Yates with rng() % n).
std::vector<std::uint64_t> sample(std::vector<std::uint64_t> v, std::size_t k, std::mt19937_64& rng) {
  k = std::min(k, v.size());
  for (std::size_t i = 0; i < k; ++i) std::swap(v[i], v[i + rng() % (v.size() - i)]);
  v.resize(k);
  return v;
}

costmodel::WorkloadGroup training_group(const LoadedCase& lc, const Args& a, std::mt19937_64& rng) {
  costmodel::WorkloadGroup g{lc.c.workload, lc.c.target, {}};
  for (std::uint64_t i : sample(lc.valid, a.train_points, rng)) {
    const double t = lc.truth.time_us[i] * jitter(rng, a.noise);
    g.samples.push_back({lc.truth.space.schedule_at(lc.truth.space.point_at(i)), Status::ok, t});
  }
  return g;
}

costmodel::WorkloadGroup eval_group(const LoadedCase& lc, const Args& a, std::mt19937_64& rng) {
  costmodel::WorkloadGroup g{lc.c.workload, lc.c.target, {}};
  for (std::uint64_t i : sample(lc.valid, a.eval_points, rng)) {
    g.samples.push_back({lc.truth.space.schedule_at(lc.truth.space.point_at(i)), Status::ok, lc.truth.time_us[i]});
  }
  return g;
}

std::vector<LoadedCase> load_suite(const Args& a) {
  std::vector<LoadedCase> out;
  for (const SuiteCase& c : quality_suite()) {
    LoadedCase lc{c, c.name.substr(0, c.name.find('@')), ground_truth(c), {}};
    for (std::uint64_t i = 0; i < lc.truth.time_us.size(); ++i) {
      if (!std::isnan(lc.truth.time_us[i])) lc.valid.push_back(i);
    }
    std::fprintf(stderr, "loaded %-32s %8zu valid of %8llu points\n", c.name.c_str(), lc.valid.size(),
                 static_cast<unsigned long long>(lc.truth.space.size()));
    out.push_back(std::move(lc));
  }
  (void)a;
  return out;
}

struct Row {
  std::string kase, kind;
  costmodel::ModelMetrics m;
};

std::vector<Row> run_fold(const std::vector<LoadedCase>& suite, const std::string& held_out, const Args& a) {
  // fnv1a64, not std::hash: the same fold must draw the same points on every platform.
  std::mt19937_64 rng(a.seed ^ std::uint64_t(costmodel::feature_version()) ^ fnv1a64(held_out));
  std::vector<costmodel::WorkloadGroup> train;
  for (const auto& lc : suite) {
    if (lc.workload_name != held_out) train.push_back(training_group(lc, a, rng));
  }
  std::vector<Row> rows;
  for (const std::string& kind : a.kinds) {
    costmodel::ModelOptions o = a.model;
    o.kind = kind;
    o.seed = a.seed;
    auto model = costmodel::make_cost_model(o);
    model->train(train);
    std::mt19937_64 eval_rng(a.seed);
    for (const auto& lc : suite) {
      if (lc.workload_name != held_out) continue;
      const costmodel::WorkloadGroup g = eval_group(lc, a, eval_rng);
      rows.push_back({lc.c.name, kind, costmodel::evaluate(*model, std::span(&g, 1))});
    }
  }
  return rows;
}

void print_table(const std::vector<Row>& rows, const Args& a) {
  std::map<std::string, std::map<std::string, costmodel::ModelMetrics>> by_case;
  std::vector<std::string> order;
  for (const Row& r : rows) {
    if (!by_case.count(r.kase)) order.push_back(r.kase);
    by_case[r.kase][r.kind] = r.m;
  }
  std::printf("%-32s %7s", "held-out case", "points");
  for (const auto& k : a.kinds) std::printf(" | %-8s pair   p@1    p@5 ", k.c_str());
  std::printf("\n");
  std::map<std::string, costmodel::ModelMetrics> mean;
  for (const auto& name : order) {
    std::printf("%-32s %7zu", name.c_str(), by_case[name].begin()->second.samples);
    for (const auto& k : a.kinds) {
      const auto& m = by_case[name][k];
      std::printf(" | %-8s %.3f  %.3f  %.3f", "", m.pairwise, m.peak_at_1, m.peak_at_5);
      mean[k].pairwise += m.pairwise / double(order.size());
      mean[k].peak_at_1 += m.peak_at_1 / double(order.size());
      mean[k].peak_at_5 += m.peak_at_5 / double(order.size());
      mean[k].spearman += m.spearman / double(order.size());
    }
    std::printf("\n");
  }
  std::printf("%-32s %7s", "MEAN", "");
  for (const auto& k : a.kinds) {
    std::printf(" | %-8s %.3f  %.3f  %.3f", "", mean[k].pairwise, mean[k].peak_at_1, mean[k].peak_at_5);
  }
  std::printf("\n");
  for (const auto& k : a.kinds) {
    std::printf("%s: mean pairwise %.3f, spearman %.3f, peak@1 %.3f, peak@5 %.3f\n", k.c_str(), mean[k].pairwise,
                mean[k].spearman, mean[k].peak_at_1, mean[k].peak_at_5);
  }
}

void write_csv(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw Error(ErrorKind::io, "cannot write " + path);
  out << "case,kind,points,pairwise,spearman,recall_at_5,peak_at_1,peak_at_5\n";
  for (const Row& r : rows) {
    out << r.kase << ',' << r.kind << ',' << r.m.samples << ',' << r.m.pairwise << ',' << r.m.spearman << ','
        << r.m.recall_at_5 << ',' << r.m.peak_at_1 << ',' << r.m.peak_at_5 << '\n';
  }
}

int run(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  const std::vector<LoadedCase> suite = load_suite(a);
  std::vector<Row> rows;
  for (const auto& [name, json] : quality_workloads()) {
    if (!a.only.empty() && name != a.only) continue;
    std::fprintf(stderr, "fold: hold out %s\n", name.c_str());
    const auto fold = run_fold(suite, name, a);
    rows.insert(rows.end(), fold.begin(), fold.end());
  }
  print_table(rows, a);
  if (!a.csv.empty()) write_csv(rows, a.csv);
  return 0;
}

}  // namespace
}  // namespace atvoss::bench

int main(int argc, char** argv) {
  try {
    return atvoss::bench::run(argc, argv);
  } catch (const atvoss::Error& e) {
    std::cerr << "error: " << e.what() << '\n';
    return atvoss::exit_code_for(e);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;  // std::stoul & co: a malformed flag value
  }
}

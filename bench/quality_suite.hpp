// Quality suite: the fixed set of (workload, target) cases on which search strategies and
// cost models are judged, and their ground truth — every point of each space simulated
// once without noise, cached on disk so reruns start at once.
//
// Cases: matmul, batch_matmul, conv2d (ResNet-50 layers), BERT-base layers (matmuls and
// attention batch_matmuls), depthwise conv (MobileNet-V2) and fused chains (conv + batchnorm
// + relu, matmul + bias + gelu, matmul + bias + add + layernorm), each on ascend910 and
// ascend910b. quality_suite() returns them in a fixed order; names are stable identifiers.
//
// Ground-truth cache: <cache_dir>/<workload key>-<target key>.truth, text: a header line
// "atvoss-truth 1 <points>", a fingerprint line, then one line per flat index of the space
// (time in us, or "x" for an invalid point). The fingerprint is the noise-free time of a
// few fixed points; if the simulator changed since the file was written, it no longer
// matches and the space is enumerated again.
// Header-only so that each bench program (tuning quality, cost-model quality) links just
// what it uses. Thread-safety: ground_truth() uses `threads` worker threads internally;
// the returned object is immutable.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/schedule_space.hpp"
#include "core/target.hpp"
#include "core/workload.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"

namespace atvoss::bench {

struct SuiteCase {
  std::string name;  // "<workload>@<target>", stable
  Workload workload;
  Target target;
};

// The workloads, by name; each runs on both targets.
inline const std::vector<std::pair<std::string, std::string>>& quality_workloads() {
  static const std::vector<std::pair<std::string, std::string>> w = {
      {"matmul_1024", R"({"op":"matmul","dims":{"M":1024,"N":1024,"K":1024}})"},
      {"bert_qkv", R"({"op":"matmul","dims":{"M":4096,"N":2304,"K":768},"epilogue":["bias"]})"},
      {"bert_ffn1_gelu", R"({"op":"matmul","dims":{"M":4096,"N":3072,"K":768},"epilogue":["bias","gelu"]})"},
      {"bert_ffn2_ln", R"({"op":"matmul","dims":{"M":4096,"N":768,"K":3072},"epilogue":["bias","add","layernorm"]})"},
      {"bert_attn_scores", R"({"op":"batch_matmul","dims":{"B":384,"M":128,"N":128,"K":64}})"},
      {"bert_attn_context", R"({"op":"batch_matmul","dims":{"B":384,"M":128,"N":64,"K":128}})"},
      {"resnet_conv1",
       R"({"op":"conv2d","dims":{"N":8,"C":3,"H":224,"W":224,"K":64,"R":7,"S":7,"stride":2,"pad":3},"epilogue":["batchnorm","relu"]})"},
      {"resnet_res2_3x3",
       R"({"op":"conv2d","dims":{"N":8,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["batchnorm","relu"]})"},
      {"resnet_res3_1x1", R"({"op":"conv2d","dims":{"N":8,"C":256,"H":28,"W":28,"K":512,"R":1,"S":1}})"},
      {"resnet_res4_3x3",
       R"({"op":"conv2d","dims":{"N":8,"C":256,"H":14,"W":14,"K":256,"R":3,"S":3,"stride":1,"pad":1}})"},
      {"resnet_res5_1x1_add",
       R"({"op":"conv2d","dims":{"N":8,"C":512,"H":7,"W":7,"K":2048,"R":1,"S":1},"epilogue":["batchnorm","add","relu"]})"},
      {"mobilenet_dw_112",
       R"({"op":"depthwise_conv2d","dims":{"N":8,"C":32,"H":112,"W":112,"R":3,"S":3,"stride":1,"pad":1},"epilogue":["batchnorm","relu"]})"},
      {"mobilenet_dw_14",
       R"({"op":"depthwise_conv2d","dims":{"N":8,"C":576,"H":14,"W":14,"R":3,"S":3,"stride":1,"pad":1}})"},
  };
  return w;
}

// Shapes in no zoo model and in neither the suite above: the check that a default chosen
// on the suite carries over ("--suite heldout"). Odd sizes, other kernels and strides.
inline const std::vector<std::pair<std::string, std::string>>& heldout_workloads() {
  static const std::vector<std::pair<std::string, std::string>> w = {
      {"ho_matmul_1536x640x2560", R"({"op":"matmul","dims":{"M":1536,"N":640,"K":2560}})"},
      {"ho_matmul_odd_relu", R"({"op":"matmul","dims":{"M":2000,"N":1000,"K":500},"epilogue":["bias","relu"]})"},
      {"ho_bmm_48x256x96", R"({"op":"batch_matmul","dims":{"B":48,"M":256,"N":256,"K":96}})"},
      {"ho_conv_5x5",
       R"({"op":"conv2d","dims":{"N":4,"C":96,"H":40,"W":40,"K":160,"R":5,"S":5,"stride":1,"pad":2},"epilogue":["bias","relu"]})"},
      {"ho_conv_1x1_s2", R"({"op":"conv2d","dims":{"N":16,"C":384,"H":20,"W":20,"K":192,"R":1,"S":1,"stride":2}})"},
      {"ho_dw_5x5",
       R"({"op":"depthwise_conv2d","dims":{"N":4,"C":144,"H":28,"W":28,"R":5,"S":5,"stride":2,"pad":2},"epilogue":["batchnorm"]})"},
  };
  return w;
}

inline const std::vector<std::string>& quality_targets() {
  static const std::vector<std::string> t = {"ascend910", "ascend910b"};
  return t;
}

// suite: "suite" (the cases defaults are chosen on) or "heldout" (shapes no one tuned on).
inline std::vector<SuiteCase> quality_suite(const std::string& suite = "suite") {
  if (suite != "suite" && suite != "heldout") throw_bad_input("--suite must be suite or heldout");
  const auto& workloads = suite == "heldout" ? heldout_workloads() : quality_workloads();
  std::vector<SuiteCase> cases;
  for (const auto& target : quality_targets()) {
    const Target t = simulator::preset(target);
    for (const auto& [name, json] : workloads) {
      cases.push_back({name + "@" + target, Workload::from_json(parse_json(json, name)), t});
    }
  }
  return cases;
}

// Every point of one case's space with its noise-free time.
struct GroundTruth {
  ScheduleSpace space;
  std::vector<double> time_us;  // by flat index; NaN where the point is invalid
  double optimum_us = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t optimum_index = 0;
  std::size_t valid_points = 0;

  // Noise-free time of s; NaN if s is invalid or not in the space.
  double true_time(const Schedule& s) const {
    const auto p = space.point_of(s);
    return p ? time_us[space.flat_index(*p)] : std::numeric_limits<double>::quiet_NaN();
  }
};

// Where the benches keep their caches: <build dir>/bench-cache (the bench binaries live in
// <build dir>/bin).
inline std::string default_cache_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "bench-cache";
  return (exe.parent_path().parent_path() / "bench-cache").string();
}

namespace detail {

inline double noise_free_time(const SuiteCase& c, const Schedule& s) {
  simulator::SimOptions o;
  o.noise = 0;
  const auto m = simulator::simulate(c.target, c.workload, s, o);
  return m.ok() ? m.time_us : std::numeric_limits<double>::quiet_NaN();
}

// Noise-free times of a few fixed points, as text: changes whenever the simulator does.
inline std::string fingerprint(const SuiteCase& c, const ScheduleSpace& space) {
  std::ostringstream out;
  out.precision(17);
  const std::uint64_t n = space.size();
  for (std::uint64_t i : {std::uint64_t{0}, n / 7, n / 3, n / 2, (2 * n) / 3, n - 1}) {
    out << noise_free_time(c, space.schedule_at(space.point_at(i))) << ' ';
  }
  out << noise_free_time(c, simulator::default_schedule(c.workload, c.target));
  return out.str();
}

inline void finish(GroundTruth& g) {
  g.valid_points = 0;
  for (std::uint64_t i = 0; i < g.time_us.size(); ++i) {
    if (std::isnan(g.time_us[i])) continue;
    ++g.valid_points;
    if (std::isnan(g.optimum_us) || g.time_us[i] < g.optimum_us) {
      g.optimum_us = g.time_us[i];
      g.optimum_index = i;
    }
  }
}

inline bool read_cache(const std::string& path, const std::string& print, GroundTruth& g) {
  std::ifstream in(path);
  std::string magic, line;
  int version = 0;
  std::uint64_t points = 0;
  if (!(in >> magic >> version >> points) || magic != "atvoss-truth" || version != 1 || points != g.space.size()) {
    return false;
  }
  std::getline(in, line);
  if (!std::getline(in, line) || line != print) return false;
  g.time_us.assign(points, std::numeric_limits<double>::quiet_NaN());
  for (std::uint64_t i = 0; i < points; ++i) {
    if (!std::getline(in, line)) return false;
    if (line != "x") g.time_us[i] = std::stod(line);
  }
  return true;
}

inline void write_cache(const std::string& path, const std::string& print, const GroundTruth& g) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  // Two benches filling the same cache never share a temporary; readers never see half.
  write_file_atomically(path, "ground-truth cache", [&](std::ostream& out) {
    out.precision(17);
    out << "atvoss-truth 1 " << g.time_us.size() << '\n' << print << '\n';
    for (double t : g.time_us) {
      if (std::isnan(t))
        out << "x\n";
      else
        out << t << '\n';
    }
  });
}

}  // namespace detail

// Enumerates (or loads from cache_dir) the whole space of c. Throws internal if the space
// is too large to enumerate (over 4M points) or has no valid point.
inline GroundTruth ground_truth(const SuiteCase& c, const std::string& cache_dir = default_cache_dir(),
                                int threads = 2) {
  GroundTruth g;
  g.space = simulator::space_for(c.workload, c.target);
  if (g.space.size() > (1u << 22)) {
    throw Error(ErrorKind::internal,
                c.name + ": space of " + std::to_string(g.space.size()) + " points is too large to enumerate");
  }
  const std::string path = cache_dir + "/" + c.workload.key() + "-" + c.target.key() + ".truth";
  const std::string print = detail::fingerprint(c, g.space);
  if (!detail::read_cache(path, print, g)) {
    g.time_us.assign(g.space.size(), std::numeric_limits<double>::quiet_NaN());
    std::atomic<std::uint64_t> next{0};
    auto work = [&] {
      for (std::uint64_t i; (i = next.fetch_add(1)) < g.time_us.size();) {
        g.time_us[i] = detail::noise_free_time(c, g.space.schedule_at(g.space.point_at(i)));
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < std::max(threads, 1); ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    detail::write_cache(path, print, g);
  }
  detail::finish(g);
  if (g.valid_points == 0) throw Error(ErrorKind::internal, c.name + ": no valid schedule in the space");
  return g;
}

}  // namespace atvoss::bench

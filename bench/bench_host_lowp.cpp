// bench_host_lowp: the host backend's int8 and bf16 matmuls against its own fp32 and against
// oneDNN's f32, u8 x s8 -> f32 and bf16 x bf16 -> f32 matmuls, side by side on one thread.
// For each shape (1024^3 and the BERT-base GEMMs at M = 128) and each dtype: atvoss tuned
// (--trials, default 200, the tuner's default search on the real runner), the top stored
// schedules and the default re-measured (the fastest by CPU time is reported), and oneDNN on
// the same operands (oneDNN: per-column output scales and the u8 zero point as attributes,
// which is the same arithmetic as atvoss's compensation, kernel_abi.hpp). Figures are
// GOP/s (2 MNK / time), as a fraction of the fp32 single-core peak, and as a ratio to oneDNN
// of the same dtype; then the int8 and bf16 speed-ups over atvoss's own fp32. Timing as
// bench/host_side_by_side.hpp says. A CPU without AVX-512 VNNI or BF16 gets a line saying so
// and no figures for that dtype.
// Usage: bench_host_lowp [--trials N] [--rounds N] [--quick] [--db FILE]
#include <omp.h>

#include <dnnl.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/host_side_by_side.hpp"
#include "host/operands.hpp"

namespace {

using namespace atvoss;
using namespace atvoss::bench;

using Shape = MatmulShape;

const char* missing_flag(const std::string& dtype) {
  const char* flag = dtype == "int8" ? "avx512_vnni" : dtype == "bfloat16" ? "avx512_bf16" : nullptr;
  return flag && !host::this_machine().has_flag(flag) ? flag : nullptr;
}

struct OneDnn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};

  // The matmul of one dtype on the operands of `o` (the same data atvoss's kernel reads).
  std::function<void()> matmul(const Shape& s, const std::string& dtype, host::Operands& o) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dt src = dtype == "int8" ? dt::u8 : dtype == "bfloat16" ? dt::bf16 : dt::f32;
    const dt wei = dtype == "int8" ? dt::s8 : src;
    dnnl::memory::desc ad({s.m, s.k}, src, tag::ab), bd({s.k, s.n}, wei, tag::ab), cd({s.m, s.n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    if (dtype == "int8") {
      attr.set_output_scales(1 << 1, o.qscale);
      attr.set_zero_points(DNNL_ARG_SRC, 0, {o.qzero});
    }
    auto prim =
        std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), attr, engine));
    void* a = dtype == "float32" ? static_cast<void*>(o.a.data()) : o.qa.data();
    void* b = dtype == "float32" ? static_cast<void*>(o.b.data()) : o.qb.data();
    auto am = std::make_shared<dnnl::memory>(ad, engine, a);
    auto bm = std::make_shared<dnnl::memory>(bd, engine, b);
    auto cm = std::make_shared<dnnl::memory>(cd, engine, o.c.data());
    return [this, prim, am, bm, cm] {
      prim->execute(stream, {{DNNL_ARG_SRC, *am}, {DNNL_ARG_WEIGHTS, *bm}, {DNNL_ARG_DST, *cm}});
      stream.wait();
    };
  }
};

// Relative difference of two fp32 outputs, max over elements (normalised by max(|ref|, 1)).
double max_difference(const std::vector<float>& got, const std::vector<float>& ref) {
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - ref[i]) / std::max(1.0, std::abs(double(ref[i]))));
  return worst;
}

struct DtypeRun {
  std::string dtype;
  Timed atvoss, onednn;
};

// atvoss (the re-measured pick of the tuned top) and oneDNN for one dtype, timed side by side.
DtypeRun compare(const Shape& s, const std::string& dtype, OneDnn& dnn, int trials, int rounds, double peak,
                 const std::string& db) {
  const Workload w = matmul_workload(s, dtype);
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  const auto at = atvoss_times(w, trials, db);
  pin_to_last_core();
  Finalist picked = remeasure_top(w, at);
  host::Operands o = host::make_operands(w, 1);
  auto lib = dnn.matmul(s, dtype, o);
  lib();
  const double agree = max_difference(picked.kernel.ops->c, o.c);
  std::vector<Timed> impls = {{"atvoss " + dtype, [&] { picked.kernel(); }}, {"oneDNN " + dtype, lib}};
  interleave(impls, rounds);
  const std::string label = s.name;
  side_by_side_row(label, impls[0].name + " (" + std::to_string(at.trials) + " trials)", flops, at.tuned_us, impls[0],
                   peak, impls[1]);
  side_by_side_row(label, impls[1].name, flops, NAN, impls[1], peak, impls[1]);
  std::printf("%-22s %s pick %s; max |atvoss - oneDNN| %.2g, atvoss vs reference %.2g\n", label.c_str(), dtype.c_str(),
              picked.schedule.to_json().dump().c_str(), agree, picked.kernel.max_rel_error);
  return {dtype, impls[0], impls[1]};
}

}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);
  ::setenv("ATVOSS_HOST_MAX_THREADS", "1", 1);
  const auto args = host_bench_args(argc, argv, "bench_host_lowp");
  if (!args) return 2;
  const int trials = args->trials, rounds = args->rounds;
  const bool quick = args->quick;
  const std::string& db = args->db;
  OneDnn dnn;
  const Target& target = host::describe_machine();
  const double peak = target.peak_flops(DType::float32) / target.ai_cores * 1e-9;
  std::string flags;
  for (const auto& f : host::this_machine().simd_flags) flags += f + " ";
  std::printf(
      "machine %s (%s), flags %s\nmeasured single-core fp32 peak %.1f GFLOP/s; tuning trials %d (db %s), %d rounds\n",
      target.name.c_str(), host::this_machine().model.c_str(), flags.c_str(), peak, trials, db.c_str(), rounds);
  for (const std::string dtype : {"int8", "bfloat16"}) {
    if (const char* flag = missing_flag(dtype))
      std::printf("%s: this CPU has no %s: not measured\n", dtype.c_str(), flag);
  }
  side_by_side_header("shape (MxNxK)", "/oneDNN");
  std::vector<Shape> shapes = {{"1024^3", 1024, 1024, 1024},
                               {"bert 128x768x768", 128, 768, 768},
                               {"bert 128x3072x768", 128, 3072, 768},
                               {"bert 128x768x3072", 128, 768, 3072}};
  if (quick) shapes = {shapes[1]};
  std::vector<std::string> summary;
  for (const Shape& s : shapes) {
    std::vector<DtypeRun> runs;
    for (const std::string dtype : {"float32", "int8", "bfloat16"}) {
      if (!missing_flag(dtype)) runs.push_back(compare(s, dtype, dnn, trials, rounds, peak, db));
    }
    char line[256];
    for (std::size_t i = 1; i < runs.size(); ++i) {
      std::snprintf(line, sizeof line, "%-18s %-8s x atvoss fp32 %.2f (cpu %.2f); x oneDNN %s %.2f (cpu %.2f)",
                    s.name.c_str(), runs[i].dtype.c_str(),
                    median_of(runs[0].atvoss.wall_us) / median_of(runs[i].atvoss.wall_us),
                    median_of(runs[0].atvoss.cpu_us) / median_of(runs[i].atvoss.cpu_us), runs[i].dtype.c_str(),
                    median_of(runs[i].onednn.wall_us) / median_of(runs[i].atvoss.wall_us),
                    median_of(runs[i].onednn.cpu_us) / median_of(runs[i].atvoss.cpu_us));
      summary.push_back(line);
    }
  }
  std::printf("speed-ups (goals: int8 >= 2.5x atvoss fp32 and >= 0.9x oneDNN int8; bf16 >= 1.5x atvoss fp32):\n");
  for (const auto& line : summary) std::printf("  %s\n", line.c_str());
  return 0;
}

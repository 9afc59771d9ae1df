// bench_host_lowp: the host backend's int8 and bf16 matmuls and conv2d against its own fp32 and
// against oneDNN's f32, u8 x s8 -> f32 and bf16 x bf16 -> f32 matmuls and convolutions, side
// by side on one thread. For each shape (1024^3 and the BERT-base GEMMs at M = 128; the
// ResNet-50 3x3 convs at batch 1, NHWC, oneDNN's weights in its own blocked format, reordered
// once outside the timed loop, atvoss's int8 and bf16 conv weights packed once outside it too,
// host/packed_weights.hpp; its matmuls and fp32 convs pack inside every call) and each dtype: atvoss tuned
// (--trials, default 200, the tuner's default search on the real runner), the top stored
// schedules and the default re-measured (the fastest by CPU time is reported), and oneDNN on
// the same operands (oneDNN: per-column output scales and the u8 zero point as attributes,
// which is the same arithmetic as atvoss's compensation, kernel_abi.hpp). Figures are
// GOP/s (2 MNK / time), as a fraction of the fp32 single-core peak, and as a ratio to oneDNN
// of the same dtype; then the int8 and bf16 speed-ups over atvoss's own fp32. Timing as
// bench/host_side_by_side.hpp says. A CPU without AVX-512 VNNI or BF16 gets a line saying so
// and no figures for that dtype.
// Usage: bench_host_lowp [--trials N] [--rounds N] [--quick] [--db FILE] [--only NAME]
// (--quick: one matmul and one conv; --only: the shapes whose name contains NAME. Where atvoss's
// weights are packed once, a third row times the same kernel packing them in every call.)
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

// A ResNet-50 3x3 conv layer: hw x hw x c -> k, stride 1, pad 1, batch 1.
struct Layer {
  std::string name;
  std::int64_t hw, c, k;
};

Workload conv_workload(const Layer& l, const std::string& dtype) {
  return Workload::from_json(Json{
      {"op", "conv2d"},
      {"dtype", dtype},
      {"dims",
       {{"N", 1}, {"C", l.c}, {"H", l.hw}, {"W", l.hw}, {"K", l.k}, {"R", 3}, {"S", 3}, {"stride", 1}, {"pad", 1}}}});
}

using dnnl_dt = dnnl::memory::data_type;
dnnl_dt src_type(const std::string& dtype) {
  return dtype == "int8" ? dnnl_dt::u8 : dtype == "bfloat16" ? dnnl_dt::bf16 : dnnl_dt::f32;
}
dnnl_dt weight_type(const std::string& dtype) { return dtype == "int8" ? dnnl_dt::s8 : src_type(dtype); }

// int8: per-output-channel scales and the u8 zero point (atvoss's compensation, kernel_abi.hpp).
dnnl::primitive_attr attributes(const std::string& dtype, const host::Operands& o) {
  dnnl::primitive_attr attr;
  if (dtype == "int8") {
    attr.set_output_scales(1 << 1, o.qscale);
    attr.set_zero_points(DNNL_ARG_SRC, 0, {o.qzero});
  }
  return attr;
}

void* src_data(const std::string& dtype, host::Operands& o) {
  return dtype == "float32" ? static_cast<void*>(o.a.data()) : o.qa.data();
}
void* weight_data(const std::string& dtype, host::Operands& o) {
  return dtype == "float32" ? static_cast<void*>(o.b.data()) : o.qb.data();
}

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
    dnnl::memory::desc ad({s.m, s.k}, src_type(dtype), tag::ab), bd({s.k, s.n}, weight_type(dtype), tag::ab),
        cd({s.m, s.n}, dnnl_dt::f32, tag::ab);
    auto prim = std::make_shared<dnnl::matmul>(
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), attributes(dtype, o), engine));
    return run(prim, std::make_shared<dnnl::memory>(ad, engine, src_data(dtype, o)),
               std::make_shared<dnnl::memory>(bd, engine, weight_data(dtype, o)),
               std::make_shared<dnnl::memory>(cd, engine, o.c.data()));
  }

  // Forward-inference convolution, NHWC activations, the weights (HWIO in o) reordered once
  // into the format the primitive prefers.
  std::function<void()> conv(const Layer& l, const std::string& dtype, host::Operands& o) {
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::dims src{1, l.c, l.hw, l.hw}, wei{l.k, l.c, 3, 3}, dst{1, l.k, l.hw, l.hw};
    const dnnl::memory::desc src_md(src, src_type(dtype), tag::nhwc), dst_md(dst, dnnl_dt::f32, tag::nhwc);
    const dnnl::memory::desc user_wei(wei, weight_type(dtype), tag::hwio), any_wei(wei, weight_type(dtype), tag::any);
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                               src_md, any_wei, dst_md, {1, 1}, {1, 1}, {1, 1});
    const dnnl::convolution_forward::primitive_desc pd(desc, attributes(dtype, o), engine);
    dnnl::memory user(user_wei, engine, weight_data(dtype, o));
    auto wm = std::make_shared<dnnl::memory>(pd.weights_desc(), engine);
    dnnl::reorder(user, *wm).execute(stream, user, *wm);
    stream.wait();
    return run(std::make_shared<dnnl::convolution_forward>(pd),
               std::make_shared<dnnl::memory>(src_md, engine, src_data(dtype, o)), wm,
               std::make_shared<dnnl::memory>(dst_md, engine, o.c.data()));
  }

 private:
  std::function<void()> run(std::shared_ptr<dnnl::primitive> prim, std::shared_ptr<dnnl::memory> src,
                            std::shared_ptr<dnnl::memory> wei, std::shared_ptr<dnnl::memory> dst) {
    return [this, prim, src, wei, dst] {
      prim->execute(stream, {{DNNL_ARG_SRC, *src}, {DNNL_ARG_WEIGHTS, *wei}, {DNNL_ARG_DST, *dst}});
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
// oneDNN's primitive of the same problem on the operands given.
using Library = std::function<std::function<void()>(host::Operands&)>;

DtypeRun compare(const std::string& label, const Workload& w, const Library& library, int trials, int rounds,
                 double peak, const std::string& db) {
  const std::string dtype(to_string(w.dtype()));
  const double flops = w.flops();
  const auto at = atvoss_times(w, trials, db);
  pin_to_last_core();
  Finalist picked = remeasure_top(w, at);
  host::Operands o = host::make_operands(w, 1);
  auto lib = library(o);
  lib();
  const double agree = max_difference(picked.kernel.ops->c, o.c);
  std::vector<Timed> impls = {{"atvoss " + dtype, [&] { picked.kernel(); }}, {"oneDNN " + dtype, lib}};
  // A kernel whose weights were packed once also runs packing them in every call, for the A/B.
  std::optional<Loaded> per_call = packing_per_call(picked.kernel);
  if (per_call) impls.push_back({"atvoss " + dtype + ", packed per call", [&] { (*per_call)(); }});
  interleave(impls, rounds);
  side_by_side_row(label, impls[0].name + " (" + std::to_string(at.trials) + " trials)", flops, at.tuned_us, impls[0],
                   peak, impls[1]);
  side_by_side_row(label, impls[1].name, flops, NAN, impls[1], peak, impls[1]);
  if (impls.size() > 2) side_by_side_row(label, impls[2].name, flops, NAN, impls[2], peak, impls[1]);
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
  side_by_side_header("shape (MxNxK / layer)", "/oneDNN");
  std::vector<Shape> shapes = {{"1024^3", 1024, 1024, 1024},
                               {"bert 128x768x768", 128, 768, 768},
                               {"bert 128x3072x768", 128, 3072, 768},
                               {"bert 128x768x3072", 128, 768, 3072}};
  std::vector<Layer> layers = {{"conv 56x56 64->64", 56, 64, 64},
                               {"conv 28x28 128->128", 28, 128, 128},
                               {"conv 14x14 256->256", 14, 256, 256},
                               {"conv 7x7 512->512", 7, 512, 512}};
  if (quick) {
    shapes = {shapes[1]};
    layers = {layers[3]};
  }
  std::erase_if(shapes, [&](const Shape& s) { return s.name.find(args->only) == std::string::npos; });
  std::erase_if(layers, [&](const Layer& l) { return l.name.find(args->only) == std::string::npos; });
  // Each problem: its name, its workload of a dtype, and oneDNN's primitive for it.
  struct Problem {
    std::string name;
    std::function<Workload(const std::string&)> workload;
    std::function<Library(const std::string&)> library;
  };
  std::vector<Problem> problems;
  for (const Shape& s : shapes) {
    problems.push_back({s.name, [s](const std::string& d) { return matmul_workload(s, d); },
                        [s, &dnn](const std::string& d) -> Library {
                          return [s, d, &dnn](host::Operands& o) { return dnn.matmul(s, d, o); };
                        }});
  }
  for (const Layer& l : layers) {
    problems.push_back({l.name, [l](const std::string& d) { return conv_workload(l, d); },
                        [l, &dnn](const std::string& d) -> Library {
                          return [l, d, &dnn](host::Operands& o) { return dnn.conv(l, d, o); };
                        }});
  }
  std::vector<std::string> summary;
  for (const Problem& p : problems) {
    std::vector<DtypeRun> runs;
    for (const std::string dtype : {"float32", "int8", "bfloat16"}) {
      if (!missing_flag(dtype))
        runs.push_back(compare(p.name, p.workload(dtype), p.library(dtype), trials, rounds, peak, db));
    }
    char line[256];
    for (std::size_t i = 1; i < runs.size(); ++i) {
      std::snprintf(line, sizeof line, "%-20s %-8s x atvoss fp32 %.2f (cpu %.2f); x oneDNN %s %.2f (cpu %.2f)",
                    p.name.c_str(), runs[i].dtype.c_str(),
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

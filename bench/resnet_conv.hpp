// ResNet-50's 3x3 conv layers at batch 1 (stride 1, pad 1, NHWC) as host workloads, and
// oneDNN's forward-inference convolution on the same operands: the conv peer of the host
// benches (bench_host_conv, bench_host_threads).
#pragma once

#include <dnnl.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/workload.hpp"
#include "host/operands.hpp"

namespace atvoss::bench {

struct ConvLayer {
  std::string name;
  std::int64_t hw, c, k;
};

inline std::vector<ConvLayer> resnet50_3x3_layers() {
  return {{"56x56 64->64", 56, 64, 64},
          {"28x28 128->128", 28, 128, 128},
          {"14x14 256->256", 14, 256, 256},
          {"7x7 512->512", 7, 512, 512}};
}

inline Workload conv_workload(const ConvLayer& l) {
  return Workload::from_json(Json{
      {"op", "conv2d"},
      {"dtype", "float32"},
      {"dims",
       {{"N", 1}, {"C", l.c}, {"H", l.hw}, {"W", l.hw}, {"K", l.k}, {"R", 3}, {"S", 3}, {"stride", 1}, {"pad", 1}}}});
}

struct OneDnnConv {
  std::function<void()> run;
  std::string impl;
};

// oneDNN's convolution of l on o's operands (NHWC src/dst). blocked: weights in the format the
// primitive prefers (reordered once here, outside the timed call: its best case); else HWIO
// as given. The primitive runs on as many OpenMP threads as are set when it is made.
inline OneDnnConv onednn_conv(const ConvLayer& l, host::Operands& o, bool blocked, dnnl::engine& engine,
                              dnnl::stream& stream) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const dnnl::memory::dims src{1, l.c, l.hw, l.hw}, wei{l.k, l.c, 3, 3}, dst{1, l.k, l.hw, l.hw};
  const dnnl::memory::desc src_md(src, dt::f32, tag::nhwc), dst_md(dst, dt::f32, tag::nhwc);
  const dnnl::memory::desc user_wei(wei, dt::f32, tag::hwio);
  const dnnl::memory::desc wei_md = blocked ? dnnl::memory::desc(wei, dt::f32, tag::any) : user_wei;
  // oneDNN 2.x (Debian 12): an op descriptor, then the primitive descriptor.
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                             src_md, wei_md, dst_md, {1, 1}, {1, 1}, {1, 1});
  const dnnl::convolution_forward::primitive_desc pd(desc, engine);
  auto prim = std::make_shared<dnnl::convolution_forward>(pd);
  auto sm = std::make_shared<dnnl::memory>(src_md, engine, o.a.data());
  auto dm = std::make_shared<dnnl::memory>(dst_md, engine, o.c.data());
  dnnl::memory user(user_wei, engine, o.b.data());
  auto wm = std::make_shared<dnnl::memory>(user);
  if (pd.weights_desc() != user_wei) {
    wm = std::make_shared<dnnl::memory>(pd.weights_desc(), engine);
    dnnl::reorder(user, *wm).execute(stream, user, *wm);
    stream.wait();
  }
  return {[prim, sm, wm, dm, &stream] {
            prim->execute(stream, {{DNNL_ARG_SRC, *sm}, {DNNL_ARG_WEIGHTS, *wm}, {DNNL_ARG_DST, *dm}});
            stream.wait();
          },
          pd.impl_info_str()};
}

}  // namespace atvoss::bench

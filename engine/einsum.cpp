#include "engine/einsum.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "frontend/einsum_equation.hpp"

namespace atvoss::engine {
namespace {

using Labels = std::string;  // one label per dim (frontend/einsum_equation.hpp)

bool has_label(const Labels& l, char c) { return l.find(c) != std::string::npos; }

// Where each label of order sits in from.
std::vector<std::int64_t> label_positions(const Labels& from, const Labels& order) {
  std::vector<std::int64_t> out;
  for (char c : order) out.push_back(std::int64_t(from.find(c)));
  return out;
}

}  // namespace

EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  if (shapes.empty() || shapes.size() > 2) {
    throw_bad_input("Einsum: field 'equation' ('" + equation + "'): one or two operands are taken");
  }
  const frontend::EinsumLabels l = frontend::einsum_labels(equation, shapes);
  const std::vector<Labels>& in = l.inputs;
  const Labels& out = l.output;
  const auto size = [&](char c) { return l.sizes.at(c); };
  EinsumPlan p;
  p.shapes = shapes;
  p.output = frontend::einsum_output_shape(l);
  std::vector<Labels> kept;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Labels& other = in.size() > 1 ? in[1 - i] : Labels();
    std::vector<bool> summed;
    Labels left;
    Shape left_shape;
    for (char c : in[i]) {
      summed.push_back(!has_label(out, c) && !has_label(other, c));
      if (!summed.back()) left += c, left_shape.push_back(size(c));
    }
    p.summed.push_back(summed);
    p.kept.push_back(left_shape);
    kept.push_back(left);
  }
  if (in.size() == 1) {
    p.product = p.kept[0];
    p.to_output = label_positions(kept[0], out);
    return p;
  }
  Labels batch, m, n, k;
  for (char c : out) {
    if (has_label(kept[0], c) && has_label(kept[1], c)) batch += c;
  }
  for (char c : kept[0]) {
    if (has_label(out, c) && !has_label(kept[1], c)) m += c;
    if (!has_label(out, c) && has_label(kept[1], c)) k += c;
  }
  for (char c : kept[1]) {
    if (has_label(out, c) && !has_label(kept[0], c)) n += c;
  }
  const auto volume = [&](const Labels& labels) {
    std::int64_t v = 1;
    for (char c : labels) v *= size(c);
    return v;
  };
  p.batch = volume(batch), p.m = volume(m), p.n = volume(n), p.k = volume(k);
  p.perm = {label_positions(kept[0], batch + m + k), label_positions(kept[1], batch + k + n)};
  for (char c : batch + m + n) p.product.push_back(size(c));
  p.to_output = label_positions(batch + m + n, out);
  return p;
}

void einsum(const EinsumPlan& p, const std::vector<const float*>& in, float* out, int threads) {
  thread_local std::vector<float> summed[2], moved[2], product;
  std::vector<const float*> operand(in.begin(), in.end());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (std::none_of(p.summed[i].begin(), p.summed[i].end(), [](bool s) { return s; })) continue;
    summed[i].resize(std::size_t(elements(p.kept[i])));
    reduce("ReduceSum", in[i], p.shapes[i], p.summed[i], summed[i].data());
    operand[i] = summed[i].data();
  }
  if (in.size() == 1) {
    transpose(operand[0], p.kept[0], p.to_output, out);
    return;
  }
  for (std::size_t i = 0; i < 2; ++i) {
    moved[i].resize(std::size_t(elements(p.kept[i])));
    transpose(operand[i], p.kept[i], p.perm[i], moved[i].data());
  }
  product.resize(std::size_t(p.batch * p.m * p.n));
  // Pointers taken here: the products may run on other threads, which have their own buffers.
  const float *x = moved[0].data(), *w = moved[1].data();
  float* y = product.data();
  batched_gemm(p.batch, p.m, p.n, p.k, threads, [=, &p](std::int64_t b) {
    return std::tuple<const float*, const float*, float*>(x + b * p.m * p.k, w + b * p.k * p.n, y + b * p.m * p.n);
  });
  transpose(product.data(), p.product, p.to_output, out);
}

}  // namespace atvoss::engine

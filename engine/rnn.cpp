#include "engine/rnn.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "engine/packed_product.hpp"
#include "engine/plain_ops.hpp"
#include "engine/vector_build.hpp"

namespace atvoss::engine {
namespace {

using namespace loops;

struct Activation {
  const char* name;  // as unary() names it
  int alphas, betas;
  float alpha, beta;  // ONNX's defaults
};

// ONNX's activations of the recurrent ops that unary() computes, by lower-case name.
const std::map<std::string, Activation>& activations() {
  static const std::map<std::string, Activation> a = {
      {"relu", {"Relu", 0, 0, 0, 0}},
      {"tanh", {"Tanh", 0, 0, 0, 0}},
      {"sigmoid", {"Sigmoid", 0, 0, 0, 0}},
      {"leakyrelu", {"LeakyRelu", 1, 0, 0.01f, 0}},
      {"thresholdedrelu", {"ThresholdedRelu", 1, 0, 1.0f, 0}},
      {"hardsigmoid", {"HardSigmoid", 1, 1, 0.2f, 0.5f}},
      {"elu", {"Elu", 1, 0, 1.0f, 0}},
      {"softsign", {"Softsign", 0, 0, 0, 0}},
      {"softplus", {"Softplus", 0, 0, 0, 0}},
  };
  return a;
}

// One direction's run over one sequence: its weights, activations and state.
class Cell {
 public:
  Cell(const RnnSpec& s, const RnnWeights& w, int d)
      : s_(s),
        h_(s.hidden),
        gh_(s.gates() * s.hidden),
        act_(std::size_t(s.per_direction() * d)),
        wt_(w.wt.data() + d * s.input * gh_),
        rt_(w.rt.data() + d * h_ * gh_),
        rh_(w.rh.empty() ? nullptr : w.rh.data() + d * h_ * h_),
        wb_(w.bias.data() + 2 * d * gh_),
        rb_(wb_ + gh_),
        peep_(w.peep.data() + 3 * d * h_),
        hr_(std::size_t(gh_)),
        tmp_(std::size_t(h_)),
        tmp2_(std::size_t(h_)),
        a_(std::size_t(h_)),
        b_(std::size_t(h_)),
        c_(std::size_t(h_)) {}

  // Every step's input product at once, W's bias added: out [rows][gates * hidden] from x
  // [rows][input], the rows shared among the threads.
  void project(const float* x, std::int64_t rows, float* out, int threads) const {
    split(rows, std::max<std::int64_t>(4, kGrain / std::max<std::int64_t>(gh_, 1)), threads,
          [&](std::int64_t r0, std::int64_t r1) {
            packed_product(x + r0 * s_.input, r1 - r0, s_.input, s_.input, wt_, gh_, wb_, out + r0 * gh_, gh_);
          });
  }

  // One step: xw its input's product (project); h (and c, LSTM) the state, updated.
  void step(const float* xw, float* h, float* c) {
    xw_ = xw;
    packed_product(h, 1, h_, h_, rt_, gh_, rb_, hr_.data(), gh_);
    if (s_.op == "LSTM") return lstm(h, c);
    if (s_.op == "GRU") return gru(h);
    gate_sum(0, tmp_.data());
    apply(0, tmp_.data(), h);
  }

 private:
  // The input of gate g: x's and h's products (with both biases), clipped.
  void gate_sum(int g, float* out) const {
    for (std::int64_t j = 0; j < h_; ++j) out[j] = xw_[g * h_ + j] + hr_[g * h_ + j];
  }
  void clip(float* v) const {
    if (s_.clip <= 0) return;
    for (std::int64_t j = 0; j < h_; ++j) v[j] = std::clamp(v[j], -s_.clip, s_.clip);
  }
  // Activation k (f, g, h) of this direction on v into out; a gate's input (not LSTM's cell
  // state before h) clipped first where the node clips.
  void apply(int k, float* v, float* out, bool gate = true) const {
    if (gate) clip(v);
    const std::size_t a = act_ + std::size_t(k);
    unary(s_.activations[a], v, out, h_, s_.alpha[a], s_.beta[a]);
  }

  // ONNX's gate order i, o, f, c; peepholes i, o, f.
  void lstm(float* h, float* c) {
    float *i = a_.data(), *o = b_.data(), *f = c_.data();
    gate_sum(0, tmp_.data());
    for (std::int64_t j = 0; j < h_; ++j) tmp_[j] += peep_[j] * c[j];
    apply(0, tmp_.data(), i);
    if (s_.input_forget) {
      for (std::int64_t j = 0; j < h_; ++j) f[j] = 1.0f - i[j];
    } else {
      gate_sum(2, tmp_.data());
      for (std::int64_t j = 0; j < h_; ++j) tmp_[j] += peep_[2 * h_ + j] * c[j];
      apply(0, tmp_.data(), f);
    }
    gate_sum(3, tmp_.data());
    apply(1, tmp_.data(), tmp2_.data());  // the candidate
    for (std::int64_t j = 0; j < h_; ++j) c[j] = f[j] * c[j] + i[j] * tmp2_[j];
    gate_sum(1, tmp_.data());
    for (std::int64_t j = 0; j < h_; ++j) tmp_[j] += peep_[h_ + j] * c[j];
    apply(0, tmp_.data(), o);
    std::copy(c, c + h_, tmp_.begin());
    apply(2, tmp_.data(), tmp2_.data(), false);
    for (std::int64_t j = 0; j < h_; ++j) h[j] = o[j] * tmp2_[j];
  }

  // ONNX's gate order z, r, h.
  void gru(float* h) {
    float *z = a_.data(), *r = b_.data();
    gate_sum(0, tmp_.data());
    apply(0, tmp_.data(), z);
    gate_sum(1, tmp_.data());
    apply(0, tmp_.data(), r);
    if (s_.linear_before_reset) {  // r (h R_h + Rb_h)
      for (std::int64_t j = 0; j < h_; ++j) tmp_[j] = xw_[2 * h_ + j] + r[j] * hr_[2 * h_ + j];
    } else {  // (r h) R_h + Rb_h
      for (std::int64_t j = 0; j < h_; ++j) tmp2_[j] = r[j] * h[j];
      packed_product(tmp2_.data(), 1, h_, h_, rh_, h_, rb_ + 2 * h_, tmp_.data(), h_);
      for (std::int64_t j = 0; j < h_; ++j) tmp_[j] += xw_[2 * h_ + j];
    }
    apply(1, tmp_.data(), tmp2_.data());
    for (std::int64_t j = 0; j < h_; ++j) h[j] = (1.0f - z[j]) * tmp2_[j] + z[j] * h[j];
  }

  const RnnSpec& s_;
  const std::int64_t h_, gh_;
  const std::size_t act_;
  const float *wt_, *rt_, *rh_, *wb_, *rb_, *peep_;
  const float* xw_ = nullptr;                       // this step's input product
  std::vector<float> hr_, tmp_, tmp2_, a_, b_, c_;  // a_, b_, c_: LSTM's i, o, f; GRU's z, r
};

}  // namespace

void complete_activations(RnnSpec& s) {
  const std::size_t per = std::size_t(s.per_direction()), dirs = std::size_t(s.directions);
  if (s.activations.empty()) {
    static const char* lstm[] = {"Sigmoid", "Tanh", "Tanh"};
    for (std::size_t d = 0; d < dirs; ++d) {
      for (std::size_t k = 0; k < per; ++k) s.activations.push_back(s.op == "RNN" ? "Tanh" : lstm[k]);
    }
  }
  if (s.activations.size() == per && dirs == 2)
    s.activations.insert(s.activations.end(), s.activations.begin(), s.activations.end());
  if (s.activations.size() != per * dirs) {
    throw_bad_input(s.op + ": field 'activations': expected " + std::to_string(per * dirs) + " names (" +
                    std::to_string(per) + " a direction), got " + std::to_string(s.activations.size()));
  }
  // activation_alpha and activation_beta as ONNX Runtime reads them: for GRU and LSTM, to the
  // activations that take one, in order; for RNN, by position (the i-th value to the i-th
  // activation). An activation left without one takes ONNX's default.
  std::vector<float> alpha, beta;
  auto next_alpha = s.alpha.begin(), next_beta = s.beta.begin();
  for (std::string& name : s.activations) {
    if (s.op == "RNN") {
      const std::size_t at = std::size_t(&name - s.activations.data());
      next_alpha = s.alpha.begin() + std::ptrdiff_t(std::min(at, s.alpha.size()));
      next_beta = s.beta.begin() + std::ptrdiff_t(std::min(at, s.beta.size()));
    }
    std::string lower = name;
    for (auto& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    const auto it = activations().find(lower);
    if (it == activations().end()) {
      throw_bad_input(s.op + ": field 'activations': '" + name +
                      "' is not one the engine computes (Relu, Tanh, Sigmoid, LeakyRelu, ThresholdedRelu, "
                      "HardSigmoid, Elu, Softsign, Softplus)");
    }
    const Activation& a = it->second;
    name = a.name;
    alpha.push_back(a.alphas && next_alpha != s.alpha.end() ? *next_alpha++ : a.alpha);
    beta.push_back(a.betas && next_beta != s.beta.end() ? *next_beta++ : a.beta);
  }
  s.alpha = std::move(alpha);
  s.beta = std::move(beta);
}

RnnWeights rnn_weights(const RnnSpec& s, const float* w, const float* r, const float* b, const float* p) {
  const std::int64_t gh = s.gates() * s.hidden, in = s.input, h = s.hidden, dirs = s.directions;
  RnnWeights out;
  out.wt.resize(std::size_t(dirs * in * gh));
  out.rt.resize(std::size_t(dirs * h * gh));
  if (s.op == "GRU" && !s.linear_before_reset) out.rh.resize(std::size_t(dirs * h * h));
  for (std::int64_t d = 0; d < dirs; ++d) {  // W and R are [dirs][gates * hidden][input or hidden]
    const float* wd = w + d * gh * in;
    const float* rd = r + d * gh * h;
    pack_panels(
        in, gh, [&](std::int64_t k, std::int64_t j) { return wd[j * in + k]; }, out.wt.data() + d * in * gh);
    pack_panels(
        h, gh, [&](std::int64_t k, std::int64_t j) { return rd[j * h + k]; }, out.rt.data() + d * h * gh);
    if (!out.rh.empty()) {
      pack_panels(
          h, h, [&](std::int64_t k, std::int64_t j) { return rd[(2 * h + j) * h + k]; }, out.rh.data() + d * h * h);
    }
  }
  out.bias.assign(std::size_t(dirs * 2 * gh), 0.0f);
  if (b) std::copy(b, b + dirs * 2 * gh, out.bias.begin());
  out.peep.assign(std::size_t(dirs * 3 * h), 0.0f);
  if (p) std::copy(p, p + dirs * 3 * h, out.peep.begin());
  return out;
}

void rnn(const RnnSpec& s, const RnnWeights& w, const float* x, const float* lens, const float* h0, const float* c0,
         float* y, float* yh, float* yc, const std::string& node, int threads) {
  const std::int64_t H = s.hidden, dirs = s.directions, seq = s.seq, batch = s.batch, gh = s.gates() * H;
  for (std::int64_t b = 0; lens && b < batch; ++b) {
    if (!(lens[b] >= 0 && lens[b] <= float(seq))) {
      throw_bad_input("engine: node '" + node + "' (" + s.op + "): sequence_lens[" + std::to_string(b) +
                      "] is outside [0, " + std::to_string(seq) + "]");
    }
  }
  // x's rows (and the input products') in its layout's order; y's and the last states' likewise.
  const auto row = [&](std::int64_t t, std::int64_t b) { return s.layout ? b * seq + t : t * batch + b; };
  const auto run_direction = [&](std::int64_t d, int project_threads) {
    Cell cell(s, w, int(d));
    std::vector<float> xw(static_cast<std::size_t>(seq * batch * gh)), h(static_cast<std::size_t>(H)),
        c(static_cast<std::size_t>(H));
    cell.project(x, seq * batch, xw.data(), project_threads);
    const bool back = s.reverse || d == 1;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t len = lens ? std::int64_t(lens[b]) : seq, state = (d * batch + b) * H;
      if (h0)
        std::copy(h0 + state, h0 + state + H, h.begin());
      else
        std::fill(h.begin(), h.end(), 0.0f);
      if (c0)
        std::copy(c0 + state, c0 + state + H, c.begin());
      else
        std::fill(c.begin(), c.end(), 0.0f);
      const auto at = [&](std::int64_t t) {
        return (s.layout ? row(t, b) * dirs + d : (t * dirs + d) * batch + b) * H;
      };
      for (std::int64_t k = 0; k < len; ++k) {
        const std::int64_t t = back ? len - 1 - k : k;
        cell.step(xw.data() + row(t, b) * gh, h.data(), c.data());
        if (y) std::copy(h.begin(), h.end(), y + at(t));
      }
      for (std::int64_t t = len; y && t < seq; ++t) std::fill(y + at(t), y + at(t) + H, 0.0f);
      const std::int64_t last = (s.layout ? b * dirs + d : d * batch + b) * H;
      if (yh) std::copy(h.begin(), h.end(), yh + last);
      if (yc) std::copy(c.begin(), c.end(), yc + last);
    }
  };
  if (dirs == 2 && threads > 1) {  // the directions side by side, each on a thread of its own
#pragma omp parallel for num_threads(2) schedule(static)
    for (std::int64_t d = 0; d < 2; ++d) run_direction(d, 1);
    return;
  }
  for (std::int64_t d = 0; d < dirs; ++d) run_direction(d, threads);
}

}  // namespace atvoss::engine

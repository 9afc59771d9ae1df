// Model::Impl's recurrent steps (internal/model_impl.hpp): ONNX's RNN, GRU and LSTM nodes over
// engine/rnn.hpp, their weights transposed once at load.
#include <algorithm>
#include <array>
#include <memory>

#include "engine/internal/model_impl.hpp"
#include "engine/rnn.hpp"

namespace atvoss::engine {

void Model::Impl::add_rnn(const frontend::GraphNode& n, const onnx::NodeProto& p) {
  RnnSpec s;
  s.op = n.op;
  const std::string direction = string_attr(p, "direction", "forward");
  if (direction == "bidirectional") {
    s.directions = 2;
  } else if (direction == "reverse") {
    s.reverse = true;
  } else if (direction != "forward") {
    unsupported(n, "direction '" + direction + "': expected forward, reverse or bidirectional");
  }
  s.hidden = int_attr(p, "hidden_size", 0);
  s.layout = int(int_attr(p, "layout", 0));
  s.clip = float_attr(p, "clip", 0.0f);
  s.input_forget = int_attr(p, "input_forget", 0) != 0;
  s.linear_before_reset = int_attr(p, "linear_before_reset", 0) != 0;
  s.activations = strings_attr(p, "activations");
  s.alpha = floats_attr(p, "activation_alpha");
  s.beta = floats_attr(p, "activation_beta");
  const auto name_at = [&](int k) { return p.input_size() > k ? p.input(k) : std::string(); };
  const Shape xs = values[tensor(name_at(0))].shape;
  if (xs.size() != 3 || (s.layout != 0 && s.layout != 1)) unsupported(n, "X of rank 3 and layout 0 or 1 expected");
  s.seq = xs[s.layout ? 1 : 0];
  s.batch = xs[s.layout ? 0 : 1];
  s.input = xs[2];
  try {
    complete_activations(s);
  } catch (const Error& e) {
    unsupported(n, e.what());
  }
  const std::int64_t gh = s.gates() * s.hidden, dirs = s.directions;
  // A constant input of exactly `count` floats, or null where the node leaves it out.
  const auto weights = [&](int k, const char* what, std::int64_t count, bool required) -> const float* {
    if (name_at(k).empty() && !required) return nullptr;
    const auto* c = file->floats(name_at(k));
    if (!c || std::int64_t(c->size()) != count) {
      unsupported(n, std::string("input '") + what + "' must be a constant of " + std::to_string(count) + " floats");
    }
    return c->data();
  };
  if (s.hidden < 1) unsupported(n, "attribute 'hidden_size' must be >= 1");
  const float* w = weights(1, "W", dirs * gh * s.input, true);
  const float* r = weights(2, "R", dirs * gh * s.hidden, true);
  const float* b = weights(3, "B", dirs * 2 * gh, false);
  const float* peep = s.op == "LSTM" ? weights(7, "P", dirs * 3 * s.hidden, false) : nullptr;
  auto prepared = std::make_shared<const RnnWeights>(rnn_weights(s, w, r, b, peep));
  // sequence_lens, initial_h and initial_c: constants or tensors of the graph, when given.
  const Shape state = {dirs, s.batch, s.hidden};
  const auto optional_input = [&](int k, const Shape& shape) -> Ref {
    if (name_at(k).empty()) return Ref{};
    const int t = tensor(name_at(k));
    if (elements(values[t].shape) != elements(shape)) {
      unsupported(n, "input '" + name_at(k) + "' of " + std::to_string(elements(shape)) + " values expected");
    }
    return plain(t, n.name);
  };
  const Ref x = plain(tensor(name_at(0)), n.name);
  const Ref lens = optional_input(4, {s.batch}), h0 = optional_input(5, state);
  const Ref c0 = s.op == "LSTM" ? optional_input(6, state) : Ref{};
  std::array<int, 3> out = {-1, -1, -1};
  for (int k = 0; k < std::min(p.output_size(), s.op == "LSTM" ? 3 : 2); ++k) {
    if (!p.output(k).empty()) out[std::size_t(k)] = output(tensor(p.output(k)), false);
  }
  const auto maybe = [this](const Ref& r) { return r.slot >= 0 || r.constant ? at(r) : nullptr; };
  push(n, [=, this, name = n.name] {
    const auto slot = [this](int o) { return o >= 0 ? ptr[o] : nullptr; };
    rnn(s, *prepared, at(x), maybe(lens), maybe(h0), maybe(c0), slot(out[0]), slot(out[1]), slot(out[2]), name,
        threads);
  });
}

}  // namespace atvoss::engine

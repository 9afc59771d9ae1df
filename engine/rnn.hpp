// ONNX's recurrent layers, RNN, GRU and LSTM, as torch.onnx exports nn.RNN, nn.GRU and nn.LSTM
// (docs/engine.md): one direction (forward or reverse) or both, every activation ONNX names but
// Affine and ScaledTanh, clip, LSTM's input_forget and peepholes, GRU's linear_before_reset,
// per-sequence lengths, initial states, and both layouts. The weights are transposed once, at
// load, so that each step's products run along contiguous rows of all the gates (a loop the
// compiler vectorizes).
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atvoss::engine {

struct RnnSpec {
  std::string op;  // "RNN", "GRU" or "LSTM"
  int directions = 1;
  bool reverse = false;  // one direction, run from each sequence's end
  std::int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int layout = 0;  // 0: X [seq, batch, input], Y [seq, dirs, batch, hidden]; 1: [batch, seq, ...]
  // Per direction, ONNX's f, g (GRU, LSTM) and h (LSTM), with each one's alpha and beta.
  std::vector<std::string> activations;
  std::vector<float> alpha, beta;
  float clip = 0;  // gate inputs clamped to [-clip, clip]; 0: none
  bool input_forget = false, linear_before_reset = false;

  int gates() const { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
  int per_direction() const { return op == "LSTM" ? 3 : op == "GRU" ? 2 : 1; }
};

// ONNX's activations for s.op, each direction's, when the node names none; and alpha and beta
// for each named one where the node gives none (HardSigmoid 0.2 and 0.5, LeakyRelu 0.01,
// ThresholdedRelu and Elu 1). bad_input naming 'activations' for a name the engine does not
// compute or a count that is not per_direction() (repeated for each direction) or that times
// the directions.
void complete_activations(RnnSpec& s);

// The weights in the steps' order: per direction, W and R transposed ([input or hidden] x [gates
// * hidden]) and packed in panels of 64 gate columns, each panel's rows contiguous (wt, rt); GRU
// without linear_before_reset, its R_h alone so (rh: r * h's product); bias [dirs][2 * gates *
// hidden] (W's, then R's; zeros where the node has none); peep [dirs][3 * hidden] (LSTM's input,
// output and forget peepholes; zeros).
struct RnnWeights {
  std::vector<float> wt, rt, rh, bias, peep;
};

// From ONNX's W [dirs, gates * hidden, input], R [dirs, gates * hidden, hidden], B [dirs, 2 *
// gates * hidden] (null: none) and P [dirs, 3 * hidden] (null: none).
RnnWeights rnn_weights(const RnnSpec& s, const float* w, const float* r, const float* b, const float* p);

// Runs the layer over x. lens [batch] (null: every sequence seq steps; each within [0, seq],
// else bad_input naming node); h0, c0 [dirs, batch, hidden] (null: zeros). y, yh and yc may be
// null; yh and yc are [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]) and hold each
// sequence's last state. Steps past a sequence's length write zeros to y. On threads > 1, two
// directions run side by side, and one direction shares its input products among the threads.
void rnn(const RnnSpec& s, const RnnWeights& w, const float* x, const float* lens, const float* h0, const float* c0,
         float* y, float* yh, float* yc, const std::string& node, int threads = 1);

}  // namespace atvoss::engine

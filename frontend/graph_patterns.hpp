// Graph patterns: ops exporters write out as primitives, found on a Graph where each inner tensor
// has its one reader, so that one kernel or step may run the whole of one. The fusion pass
// (graph_fusion.hpp) puts a GELU after a conv or matmul into its epilogue; the model engine
// (engine/) runs the others as one step each. Constant values come from the caller (ScalarOf:
// the importer's from the ONNX file, the engine's from its weights), since a Graph holds none.
// Read-only on the graph; thread-safe as the graph and ScalarOf are.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frontend/graph.hpp"

namespace atvoss::frontend {

// The value of tensor t when it is a constant of one float element, else nullopt.
using ScalarOf = std::function<std::optional<double>(int t)>;

// A GELU as exporters write it below opset 20: x * 0.5 * (1 + erf(x / sqrt 2)) (torch's
// nn.GELU, Hugging Face's gelu), or with tanh(sqrt(2 / pi) (x + 0.044715 x^3)) for the erf
// (GPT-2's gelu_new with Pow, torch's approximate="tanh" with x * x * x), in the orders
// exporters write them: the tensor x, the GELU's output, its nodes, and which of the two.
struct Gelu {
  int x = -1, out = -1;
  std::vector<int> nodes;
  bool tanh = false;
};

class PatternView {
 public:
  PatternView(const Graph& g, ScalarOf scalar) : g_(g), scalar_(std::move(scalar)) {}

  // The node computing tensor t, and the node reading it when it is an op node, when t has that
  // one reader and is no graph output; else -1.
  int inner_producer(int t) const;
  int inner_reader(int t, const std::string& op) const;
  // Whether tensor t is a constant scalar within 1e-6 of v.
  bool scalar_is(int t, double v) const;
  // Whether node i is op(t, v) or op(v, t) (op commutative), v a constant scalar within 1e-6.
  bool takes_scalar(int i, const std::string& op, int t, double v) const;
  // The tensor node i multiplies by the constant scalar v (Mul either way round), else -1.
  int times_scalar(int i, double v) const;
  // The x node q squares (Pow(x, 2) or Mul(x, x)), else -1.
  int squared(int q) const;

  // The GELU whose Erf or Tanh node is n, else nullopt.
  std::optional<Gelu> gelu_at(int n) const;
  // Every GELU of the graph by its x: those whose x no node outside them reads (and is no graph
  // output), so that a kernel writing x may compute the GELU in its place.
  std::vector<Gelu> gelus_owning_their_input() const;

 private:
  // x where node d computes x / sqrt 2 (Div by sqrt 2, or Mul by 1 / sqrt 2 either way round), else -1.
  int over_root_two(int d) const;
  // x where tensor t is x^3 (Pow(x, 3), or x * x * x in either grouping), its nodes added to
  // nodes; else -1.
  int cube_of(int t, std::vector<int>& nodes) const;
  // A GELU's common end from f, its erf or tanh: plus 1, then times x and times 0.5 in either
  // order; nodes (those before, f's included) completed, or nullopt.
  std::optional<Gelu> gelu_end(int xt, int f, std::vector<int> nodes) const;
  std::optional<Gelu> erf_gelu_at(int e) const;
  std::optional<Gelu> tanh_gelu_at(int t) const;

  const Graph& g_;
  ScalarOf scalar_;
};

}  // namespace atvoss::frontend

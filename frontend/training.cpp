#include "frontend/training.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "frontend/device_memory.hpp"

namespace atvoss::frontend {
namespace {

Workload make(const std::string& op, DType dtype, const Json& dims) {
  return Workload::from_json({{"op", op}, {"dtype", std::string(to_string(dtype))}, {"dims", dims}});
}

// A row op over `elements` values: rows of up to 1024 (a power of two dividing them).
std::optional<Workload> rows_over(const std::string& op, double elements, DType dtype) {
  if (elements < 1) return std::nullopt;
  std::int64_t n = 1;
  while (n < 1024 && std::fmod(elements, double(n * 2)) == 0) n *= 2;
  return make(op, dtype, {{"M", std::int64_t(elements / double(n))}, {"N", n}});
}

// The forward workload without its epilogue: what a pass over its gradient costs.
Workload plain(const Workload& w) {
  Json j = w.to_json();
  j["epilogue"] = Json::array();
  return Workload::from_json(j);
}

// An elementwise kernel that moves `bytes` in all: each of its elements moves three values (two
// read, one written). Rounded up to whole rows of 1024: a count with few factors of two would
// make rows of one or two values.
std::optional<Workload> elementwise_moving(double bytes, DType dtype) {
  const double elements = bytes / (3.0 * dtype_bytes(dtype));
  return rows_over("elementwise", elements > 1024 ? std::ceil(elements / 1024) * 1024 : std::ceil(elements), dtype);
}

BackwardKernels conv_backward(const Workload& w) {
  auto d = [&](const char* n) { return w.dim(n); };
  const std::int64_t oh = w.out_h(), ow = w.out_w(), stride = d("stride");
  const std::int64_t pad = std::max<std::int64_t>(0, d("R") - 1 - d("pad"));
  Json dims{{"N", d("N")},
            {"H", (oh - 1) * stride + 1},
            {"W", (ow - 1) * stride + 1},
            {"R", d("R")},
            {"S", d("S")},
            {"stride", 1},
            {"pad", pad}};
  BackwardKernels b;
  if (w.op() == "depthwise_conv2d") {
    dims["C"] = d("C");
    b.data_grad = make(w.op(), w.dtype(), dims);
    b.weight_grad = make("reduce", w.dtype(), {{"M", d("C") * d("R") * d("S")}, {"N", d("N") * oh * ow}});
  } else {
    const std::int64_t groups = w.dims().count("groups") ? d("groups") : 1;
    dims["C"] = d("K");
    dims["K"] = d("C");
    if (groups > 1) dims["groups"] = groups;
    b.data_grad = make(w.op(), w.dtype(), dims);
    b.weight_grad =
        make("matmul", w.dtype(), {{"M", d("K")}, {"N", d("C") / groups * d("R") * d("S")}, {"K", d("N") * oh * ow}});
  }
  if (w.has_epilogue("bias")) b.bias_grad = make("reduce", w.dtype(), {{"M", d("K")}, {"N", d("N") * oh * ow}});
  return b;
}

// Passes over a kernel's output that the backward of its fused epilogue makes: the output
// gradient read and the input gradient written, each op's saved input read, and a
// normalisation's reductions (its scale and shift gradients, the mean terms) read twice more.
// bias has its own reduce (bgrad), add passes the gradient on as it is, and the quantize ops
// are inference only. 0: nothing to do.
double epilogue_backward_passes(const Workload& w) {
  double passes = 0;
  for (const auto& op : w.epilogue()) {
    if (op == "bias" || op == "add" || op.find("quantize") != std::string::npos) continue;
    passes += (op == "batchnorm" || op == "layernorm") ? 3 : 1;
  }
  return passes > 0 ? passes + 2 : 0;
}

BackwardKernels matmul_backward(const Workload& w) {
  const std::int64_t m = w.dim("M"), n = w.dim("N"), k = w.dim("K");
  BackwardKernels b;
  if (w.info().batch_dim.empty()) {
    b.data_grad = make(w.op(), w.dtype(), {{"M", m}, {"N", k}, {"K", n}});
    b.weight_grad = make(w.op(), w.dtype(), {{"M", k}, {"N", n}, {"K", m}});
    if (w.has_epilogue("bias")) b.bias_grad = make("reduce", w.dtype(), {{"M", n}, {"N", m}});
  } else {
    const std::int64_t batch = w.dim(w.info().batch_dim);
    b.data_grad = make(w.op(), w.dtype(), {{"B", batch}, {"M", m}, {"N", k}, {"K", n}});
    b.weight_grad = make(w.op(), w.dtype(), {{"B", batch}, {"M", k}, {"N", n}, {"K", m}});
  }
  return b;
}

// Builds the backward pass into a copy of the forward graph.
class Builder {
 public:
  Builder(const Graph& g, const TrainingSetup& setup) : g_(g), t_(g), setup_(setup) {}

  Graph build() {
    for (int i = int(g_.nodes().size()) - 1; i >= 0; --i) {
      const GraphNode& n = g_.nodes()[i];
      if (n.view) {
        view_backward(n);
      } else if (n.fused_into < 0) {
        kernel_backward(i);
      }
    }
    return std::move(t_);
  }

 private:
  const GraphTensor& tensor(int t) const { return g_.tensors()[t]; }
  bool needs_grad(int t) const { return !tensor(t).constant && tensor(t).producer >= 0; }

  // The chain of kernel k: k and the nodes fused into it.
  bool in_chain(int node, int k) const { return node == k || g_.nodes()[node].fused_into == k; }

  // Tensors the chain of k writes that something outside it reads (or the model's outputs).
  std::vector<int> chain_outputs(int k) const {
    std::vector<int> outs;
    for (int i = k; i < int(g_.nodes().size()); ++i) {
      if (!in_chain(i, k)) continue;
      for (int o : g_.nodes()[i].outputs) {
        bool outside = tensor(o).output;
        for (int c : tensor(o).consumers) outside = outside || !in_chain(c, k);
        if (outside) outs.push_back(o);
      }
    }
    if (outs.empty()) outs = g_.nodes()[k].outputs;  // read by nothing: the loss is taken on it
    return outs;
  }

  // Tensors the chain of k reads from outside it (activations only).
  std::vector<int> chain_inputs(int k) const {
    std::vector<int> ins;
    for (int i = k; i < int(g_.nodes().size()); ++i) {
      if (!in_chain(i, k)) continue;
      for (int in : g_.nodes()[i].inputs) {
        if (tensor(in).constant || (tensor(in).producer >= 0 && in_chain(tensor(in).producer, k))) continue;
        if (std::find(ins.begin(), ins.end(), in) == ins.end()) ins.push_back(in);
      }
    }
    return ins;
  }

  // The gradient of forward tensor f: its one contribution, the sum of several, or (nothing
  // reads it: a model output) the loss gradient, an input of the step.
  std::string grad_of(int f, DType dtype) {
    const GraphTensor& ft = tensor(f);
    std::vector<std::string>& parts = contrib_[f];
    if (parts.size() == 1) return parts.front();
    const std::string name = "grad:" + ft.name;
    if (t_.tensor_index(name) >= 0) return name;
    t_.add_tensor(name, ft.shape, ft.bytes, false, ft.dtype);
    if (parts.empty()) return name;
    GraphNode& sum = t_.node(t_.add_node("grad_sum:" + ft.name, "Sum", parts, {name}));
    sum.role = TrainingRole::backward;
    sum.forward_node = ft.producer;
    sum.kernel = rows_over("elementwise", ft.bytes / dtype_bytes(dtype), dtype);
    sum.bytes = ft.bytes * double(parts.size() + 1);
    return name;
  }

  // A node of forward node `layer`'s backward pass, in `role`, writing a new tensor of `bytes`;
  // returns the tensor's name.
  std::string add(int layer, TrainingRole role, const std::string& name, const std::string& op,
                  std::optional<Workload> kernel, const std::vector<std::string>& reads, double bytes, int count,
                  const std::string& dtype) {
    const std::string out = name + ":out";
    t_.add_tensor(out, {}, bytes, false, dtype);
    GraphNode& n = t_.node(t_.add_node(name, op, reads, {out}));
    n.kernel = std::move(kernel);
    n.count = count;
    n.role = role;
    n.forward_node = layer;
    n.bytes = bytes;
    for (const auto& r : reads) n.bytes += t_.tensors()[t_.tensor_index(r)].bytes;
    if (!n.kernel) n.reason = "the backward of a node not tuned";
    return out;
  }

  void view_backward(const GraphNode& n) {
    if (n.outputs.empty()) return;
    const DType dtype = DType::float16;
    for (int in : n.inputs) {
      if (needs_grad(in)) contrib_[in].push_back(grad_of(n.outputs.front(), dtype));
    }
  }

  void kernel_backward(int k) {
    const GraphNode& n = g_.nodes()[k];
    const DType dtype = n.kernel ? n.kernel->dtype() : DType::float16;
    std::vector<std::string> grads;
    for (int o : chain_outputs(k)) grads.push_back(grad_of(o, dtype));
    if (grads.empty()) return;
    const std::vector<int> ins = chain_inputs(k);
    int main = -1, second = -1;  // the kernel's own first and second activation inputs
    for (int in : n.inputs) {
      if (tensor(in).constant) continue;
      if (main < 0)
        main = in;
      else if (second < 0)
        second = in;
    }
    const std::string dname = main >= 0 ? tensor(main).dtype : "";
    if (!n.kernel) {  // not tuned: its backward moves as many bytes, by the same rule
      for (int in : ins) {
        if (!needs_grad(in)) continue;
        contrib_[in].push_back(add(k, TrainingRole::backward, n.name + ".backward@" + tensor(in).name, n.op,
                                   std::nullopt, grads, tensor(in).bytes, n.count, tensor(in).dtype));
      }
      return;
    }
    if (const double passes = epilogue_backward_passes(*n.kernel); passes > 0) {
      // The epilogue's gradient first: the kernel's own backward and its residual inputs read it.
      double out_bytes = 0;
      for (int o : chain_outputs(k)) out_bytes += tensor(o).bytes;
      grads = {add(k, TrainingRole::backward, n.name + ".epilogue_grad", "EpilogueGrad",
                   elementwise_moving(out_bytes * passes, dtype), grads, out_bytes, n.count, dname)};
    }
    const BackwardKernels b = backward_of(*n.kernel);
    const bool batched = n.kernel->is_matmul_like() && !n.kernel->info().batch_dim.empty();
    if (b.data_grad && main >= 0 && needs_grad(main)) {
      contrib_[main].push_back(add(k, TrainingRole::data_grad, n.name + ".dgrad", n.op + "Grad", b.data_grad, grads,
                                   tensor(main).bytes, n.count, dname));
    }
    if (b.weight_grad) {
      std::vector<std::string> reads = grads;
      if (main >= 0) reads.push_back(tensor(main).name);  // the activation the backward keeps alive
      if (batched) {
        if (second >= 0 && needs_grad(second)) {
          contrib_[second].push_back(add(k, TrainingRole::data_grad, n.name + ".dgrad2", n.op + "Grad", b.weight_grad,
                                         reads, tensor(second).bytes, n.count, dname));
        }
      } else {
        const std::string wgrad = add(k, TrainingRole::weight_grad, n.name + ".wgrad", n.op + "WeightGrad",
                                      b.weight_grad, reads, weight_bytes(*n.kernel), n.count, dname);
        add(k, TrainingRole::update, n.name + ".update", "OptimizerUpdate", optimizer_update(*n.kernel, setup_),
            {wgrad}, weight_bytes(*n.kernel), n.count, dname);
      }
    }
    if (b.bias_grad)
      add(k, TrainingRole::bias_grad, n.name + ".bgrad", "BiasGrad", b.bias_grad, grads, 0, n.count, dname);
    for (int in : ins) {  // residual inputs: the output gradient flows to them as it is
      if (in != main && in != second && needs_grad(in)) contrib_[in].push_back(grads.front());
    }
  }

  const Graph& g_;
  Graph t_;
  TrainingSetup setup_;
  std::map<int, std::vector<std::string>> contrib_;  // forward tensor -> its gradient's parts
};

}  // namespace

BackwardKernels backward_of(const Workload& forward) {
  if (forward.family() == OpFamily::conv ||
      (forward.family() == OpFamily::depthwise && forward.info().window_weights)) {
    return conv_backward(forward);
  }
  if (forward.family() == OpFamily::matmul) return matmul_backward(forward);
  if (forward.is_table()) return {};
  BackwardKernels b;
  b.data_grad = plain(forward);
  return b;
}

TrainingSetup::Optimizer TrainingSetup::optimizer_named(const std::string& name, const std::string& field) {
  if (name == "sgd") return Optimizer::sgd;
  if (name == "momentum") return Optimizer::momentum;
  if (name == "adam") return Optimizer::adam;
  throw_bad_input(field + " must be sgd, momentum or adam, got '" + name + "'");
}

std::string to_string(TrainingSetup::Optimizer optimizer) {
  switch (optimizer) {
    case TrainingSetup::Optimizer::momentum:
      return "momentum";
    case TrainingSetup::Optimizer::adam:
      return "adam";
    case TrainingSetup::Optimizer::sgd:
      break;
  }
  return "sgd";
}

int state_tensors(TrainingSetup::Optimizer optimizer) {
  return optimizer == TrainingSetup::Optimizer::adam ? 2 : optimizer == TrainingSetup::Optimizer::momentum ? 1 : 0;
}

double update_bytes_per_weight(const TrainingSetup& setup, int dtype_bytes) {
  const int state = state_tensors(setup.optimizer);
  if (!setup.mixed_precision) return double(3 + 2 * state) * dtype_bytes;
  // fp32 master read and written, the gradient read, the compute copy written; each fp32 state
  // tensor read and written; loss scaling's overflow check reads the gradient once more.
  return 8.0 + 2.0 * dtype_bytes + 8.0 * state + dtype_bytes;
}

std::optional<Workload> optimizer_update(const Workload& forward, const TrainingSetup& setup) {
  const double weights = weight_bytes(forward) / dtype_bytes(forward.dtype());
  return elementwise_moving(weights * update_bytes_per_weight(setup, dtype_bytes(forward.dtype())), DType::float32);
}

Graph training_graph(const Graph& g, const TrainingSetup& setup) { return Builder(g, setup).build(); }

bool is_training_step(const TaskSet& tasks) {
  const auto& nodes = tasks.graph().nodes();
  return std::any_of(nodes.begin(), nodes.end(), [](const GraphNode& n) { return n.backward(); });
}

TaskSet training_tasks(const TaskSet& model, const TrainingSetup& setup) {
  if (is_training_step(model)) return model;
  return tasks_from_graph(training_graph(model.graph(), setup), model.model() + "-train", model.batch());
}

}  // namespace atvoss::frontend

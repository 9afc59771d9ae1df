// Graph bindings: a model's dataflow graph (frontend/graph.hpp) as JSON for atvoss.Graph:
// read from an ONNX file with or without the fusion pass, the built-in fusion pass run
// on a graph built in Python (frontend/graph_fusion.hpp), and the fusion rules' pattern
// grammar (lowering/fusion_rules.hpp) that FusionScheduler matches chains with.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "core/error.hpp"
#include "frontend/graph_fusion.hpp"
#include "frontend/graph_json.hpp"
#include "frontend/onnx_import.hpp"
#include "lowering/fusion_rules.hpp"

namespace atvoss::python {
namespace {

std::string onnx_graph(const std::string& path, int batch, bool fuse) {
  if (batch < 1) throw_bad_input("Graph.from_onnx: field 'batch' must be >= 1");
  frontend::OnnxImportOptions options;
  options.batch = batch;
  options.fuse = fuse;
  frontend::TaskSet tasks;
  {
    py::gil_scoped_release release;
    tasks = frontend::import_onnx(path, options);
  }
  return dump(frontend::graph_to_json(tasks.graph()));
}

std::string fuse_graph(const std::string& graph) {
  frontend::Graph g = frontend::graph_from_json(parse(graph, "graph"));
  frontend::fuse_graph(g);
  return dump(frontend::graph_to_json(g));
}

}  // namespace

void bind_graph(py::module_& m) {
  m.def("onnx_graph", &onnx_graph, py::arg("path"), py::arg("batch"), py::arg("fuse"),
        "The graph of an ONNX model as JSON");
  m.def("fuse_graph", &fuse_graph, py::arg("graph"), "The built-in fusion pass over a graph's JSON");
  m.def("check_fusion_pattern", &lowering::check_fusion_pattern, py::arg("pattern"), py::arg("where"),
        "ValueError naming where and the field unless the pattern is well formed");
  m.def("fusion_pattern_prefix", &lowering::pattern_prefix, py::arg("pattern"), py::arg("chain"),
        "How many leading ops of a chain (each a list of its names) the pattern matches");
}

}  // namespace atvoss::python

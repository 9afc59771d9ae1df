#include "frontend/graph_json.hpp"

#include <set>

#include "core/error.hpp"

namespace atvoss::frontend {
namespace {

constexpr const char* kWhat = "graph";

Json tensor_json(const GraphTensor& t) {
  return {{"name", t.name},   {"shape", t.shape},       {"dtype", t.dtype},
          {"bytes", t.bytes}, {"constant", t.constant}, {"output", t.output}};
}

Json node_json(const Graph& g, const GraphNode& n) {
  auto names = [&](const std::vector<int>& tensors) {
    Json out = Json::array();
    for (int t : tensors) out.push_back(g.tensors()[t].name);
    return out;
  };
  Json j{{"name", n.name},   {"op", n.op},         {"inputs", names(n.inputs)},  {"outputs", names(n.outputs)},
         {"view", n.view},   {"reason", n.reason}, {"attributes", n.attributes}, {"bytes", n.bytes},
         {"count", n.count}, {"step", n.step},     {"fused_by", n.fused_by}};
  j["kernel"] = n.kernel ? n.kernel->to_json() : Json();
  j["fused_into"] = n.fused_into >= 0 ? Json(g.nodes()[n.fused_into].name) : Json();
  return j;
}

// field of obj as a T, or fallback when absent or null; bad_input naming it otherwise.
template <typename T>
T field(const Json& obj, const char* name, const std::string& where, T fallback) {
  const auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    throw_bad_input(std::string(kWhat) + ": " + where + ": field '" + name + "' has the wrong type (" + it->dump() +
                    ")");
  }
}

const Json& list_field(const Json& j, const char* name) {
  static const Json empty = Json::array();
  const auto it = j.find(name);
  if (it == j.end()) return empty;
  if (!it->is_array()) throw_bad_input(std::string(kWhat) + ": field '" + name + "' must be a list");
  return *it;
}

void add_tensors(Graph& g, const Json& tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Json& t = tensors[i];
    const std::string where = "tensors[" + std::to_string(i) + "]";
    if (!t.is_object()) throw_bad_input(std::string(kWhat) + ": " + where + " must be an object");
    const std::string name = require_string(t, "name", std::string(kWhat) + ": " + where);
    if (g.tensor_index(name) >= 0)
      throw_bad_input(std::string(kWhat) + ": " + where + ": duplicate tensor '" + name + "'");
    g.add_tensor(name, field(t, "shape", where, std::vector<std::int64_t>{}), field(t, "bytes", where, 0.0),
                 field(t, "constant", where, false), field(t, "dtype", where, std::string()));
    if (field(t, "output", where, false)) g.mark_output(name);
  }
}

void fill_node(GraphNode& n, const Json& j, const std::string& where) {
  if (const auto k = j.find("kernel"); k != j.end() && !k->is_null()) n.kernel = Workload::from_json(*k);
  n.view = field(j, "view", where, false);
  n.reason = field(j, "reason", where, std::string());
  n.attributes = field(j, "attributes", where, Json::object());
  n.bytes = field(j, "bytes", where, 0.0);
  n.count = field(j, "count", where, 1);
  n.step = field(j, "step", where, std::string());
  n.fused_by = field(j, "fused_by", where, std::string());
}

}  // namespace

Json graph_to_json(const Graph& g) {
  Json tensors = Json::array(), nodes = Json::array();
  for (const auto& t : g.tensors()) tensors.push_back(tensor_json(t));
  for (const auto& n : g.nodes()) nodes.push_back(node_json(g, n));
  return {{"tensors", tensors}, {"nodes", nodes}};
}

Graph graph_from_json(const Json& j) {
  if (!j.is_object()) throw_bad_input(std::string(kWhat) + ": must be an object with 'tensors' and 'nodes'");
  Graph g;
  add_tensors(g, list_field(j, "tensors"));
  const Json& nodes = list_field(j, "nodes");
  std::set<std::string> names;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Json& n = nodes[i];
    const std::string where = "nodes[" + std::to_string(i) + "]";
    if (!n.is_object()) throw_bad_input(std::string(kWhat) + ": " + where + " must be an object");
    const std::string context = std::string(kWhat) + ": " + where;
    const std::string name = require_string(n, "name", context);
    if (!names.insert(name).second) throw_bad_input(context + ": duplicate node '" + name + "'");
    const int id =
        g.add_node(name, require_string(n, "op", context), field(n, "inputs", where, std::vector<std::string>{}),
                   field(n, "outputs", where, std::vector<std::string>{}));
    fill_node(g.node(id), n, where + " ('" + name + "')");
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string into = field(nodes[i], "fused_into", "nodes[" + std::to_string(i) + "]", std::string());
    if (into.empty()) continue;
    const int target = g.node_index(into);
    if (target < 0) {
      throw_bad_input(std::string(kWhat) + ": nodes[" + std::to_string(i) + "]: field 'fused_into' names no node ('" +
                      into + "')");
    }
    g.node(int(i)).fused_into = target;
  }
  return g;
}

}  // namespace atvoss::frontend

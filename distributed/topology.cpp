#include "distributed/topology.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace atvoss::distributed {
namespace {

constexpr const char* kWhere = "topology";

// docs/hardware-facts.md section 6 gives each figure's source.
Topology server_910b() {
  Topology t;
  t.name = "ascend910b-server8";
  t.shape = ServerShape::full_mesh;
  t.link = {56, 2};
  t.nic = {25, 5};
  t.source = {{"link.gb_per_s", "HCCS: 392 GB/s per card over 7 links (Atlas 800T A2), per link 56"},
              {"nic.gb_per_s", "one 200GE RoCE port per card"},
              {"link.latency_us", "est."},
              {"nic.latency_us", "est."}};
  return t;
}

Topology server_910() {
  Topology t;
  t.name = "ascend910-server8";
  t.shape = ServerShape::mesh_groups;
  t.group_size = 4;
  t.link = {30, 2};
  t.group_port = {24, 3};
  t.nic = {12.5, 5};
  t.source = {{"link.gb_per_s", "HCCS 30 GB/s per link; two meshes of 4 cards (Atlas 800 model 9000)"},
              {"group_port.gb_per_s", "est.: PCIe 4.0 x16 between the meshes, 75 % of 32 GB/s"},
              {"nic.gb_per_s", "one 100GE RoCE port per card"},
              {"link.latency_us", "est."},
              {"group_port.latency_us", "est."},
              {"nic.latency_us", "est."}};
  return t;
}

Topology ring8() {
  Topology t = server_910b();
  t.name = "ring8";
  t.shape = ServerShape::ring;
  t.source["shape"] = "illustrative: 8 cards in a ring, with the 910B server's link figures";
  return t;
}

Topology server_preset(const std::string& name) {
  if (name == "ascend910b-server8") return server_910b();
  if (name == "ascend910-server8") return server_910();
  if (name == "ring8") return ring8();
  std::string list;
  for (const auto& n : topology_preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw_bad_input("topology: unknown preset '" + name + "'; expected one of: " + list +
                  " (a server preset may end in -x<servers>)");
}

LinkSpec link_from_json(const Json& j, const std::string& where) {
  require_object(j, where);
  for (const auto& [key, v] : j.items()) {
    if (key != "gb_per_s" && key != "latency_us") {
      throw_bad_input(where + ": unknown field '" + key + "'; expected 'gb_per_s' and 'latency_us'");
    }
  }
  LinkSpec l{require_number(j, "gb_per_s", where),
             j.contains("latency_us") ? require_number(j, "latency_us", where) : 0};
  if (!(l.gb_per_s > 0 && l.gb_per_s <= 1e6)) {
    throw_bad_input(where + ": field 'gb_per_s' must be in (0, 1e6] GB/s, got " + j["gb_per_s"].dump());
  }
  if (!(l.latency_us >= 0 && l.latency_us <= 1e6)) {
    throw_bad_input(where + ": field 'latency_us' must be in [0, 1e6] us, got " + j["latency_us"].dump());
  }
  return l;
}

Json link_to_json(const LinkSpec& l) { return {{"gb_per_s", l.gb_per_s}, {"latency_us", l.latency_us}}; }

ServerShape parse_shape(const std::string& s) {
  if (s == "full_mesh") return ServerShape::full_mesh;
  if (s == "ring") return ServerShape::ring;
  if (s == "mesh_groups") return ServerShape::mesh_groups;
  throw_bad_input("topology: field 'shape' must be 'full_mesh', 'ring' or 'mesh_groups', got '" + s + "'");
}

void check_keys(const Json& j) {
  static const std::set<std::string> known = {
      "name", "servers", "devices_per_server", "shape", "group_size", "link", "group_port", "nic", "source"};
  for (const auto& [key, v] : j.items()) {
    if (!known.count(key)) throw_bad_input(std::string(kWhere) + ": unknown field '" + key + "'");
  }
}

void check_counts(const Topology& t) {
  if (t.servers < 1 || t.servers > 65536) throw_bad_input("topology: field 'servers' must be in 1..65536");
  if (t.devices_per_server < 1 || t.devices_per_server > 1024) {
    throw_bad_input("topology: field 'devices_per_server' must be in 1..1024");
  }
  if (t.shape == ServerShape::mesh_groups &&
      (t.group_size < 1 || t.group_size > t.devices_per_server || t.devices_per_server % t.group_size != 0)) {
    throw_bad_input("topology: field 'group_size' must divide devices_per_server (" +
                    std::to_string(t.devices_per_server) + ")");
  }
}

}  // namespace

std::int64_t Topology::resources() const {
  return std::int64_t(servers) * devices_per_server * devices_per_server + 4LL * devices();
}

std::vector<Hop> Topology::route(int a, int b) const {
  const std::int64_t p = devices_per_server, base = servers * p * p, n = devices();
  auto link_hop = [&](int from, int to) {
    return Hop{server_of(from) * p * p + card_of(from) * p + card_of(to), link.bytes_per_us(), link.latency_us};
  };
  if (server_of(a) != server_of(b)) {
    return {{base + 2 * n + a, nic.bytes_per_us(), nic.latency_us}, {base + 3 * n + b, nic.bytes_per_us(), 0}};
  }
  if (shape == ServerShape::full_mesh) return {link_hop(a, b)};
  if (shape == ServerShape::mesh_groups) {
    if (card_of(a) / group_size == card_of(b) / group_size) return {link_hop(a, b)};
    return {{base + a, group_port.bytes_per_us(), group_port.latency_us}, {base + n + b, group_port.bytes_per_us(), 0}};
  }
  // A ring: the shorter way round (forward on a tie).
  const int cards = devices_per_server, first = server_of(a) * cards;
  const int forward = (card_of(b) - card_of(a) + cards) % cards;
  const int step = forward <= cards - forward ? 1 : cards - 1;
  std::vector<Hop> hops;
  for (int c = a; c != b;) {
    const int next = first + (card_of(c) + step) % cards;
    hops.push_back(link_hop(c, next));
    c = next;
  }
  return hops;
}

double Topology::injection_bytes_per_us(int /*d*/) const {
  const int p = devices_per_server;
  double links = 0;
  if (shape == ServerShape::full_mesh) links = p - 1;
  if (shape == ServerShape::ring) links = std::min(p - 1, 2);
  if (shape == ServerShape::mesh_groups) links = group_size - 1;
  double out = links * link.bytes_per_us();
  if (shape == ServerShape::mesh_groups && p > group_size) out += group_port.bytes_per_us();
  if (servers > 1) out += nic.bytes_per_us();
  return out;
}

Json Topology::to_json() const {
  Json j = {{"name", name},
            {"servers", servers},
            {"devices_per_server", devices_per_server},
            {"shape", to_string(shape)},
            {"link", link_to_json(link)},
            {"nic", link_to_json(nic)},
            {"source", source}};
  if (shape == ServerShape::mesh_groups) {
    j["group_size"] = group_size;
    j["group_port"] = link_to_json(group_port);
  }
  return j;
}

Topology Topology::from_json(const Json& j) {
  require_object(j, kWhere);
  check_keys(j);
  Topology t;
  t.name = j.contains("name") ? require_string(j, "name", kWhere) : "custom";
  t.servers = j.contains("servers") ? integer_as<int>(j["servers"], "servers", kWhere) : 1;
  t.devices_per_server = integer_as<int>(require_field(j, "devices_per_server", kWhere), "devices_per_server", kWhere);
  t.shape = parse_shape(require_string(j, "shape", kWhere));
  if (t.shape == ServerShape::mesh_groups) {
    t.group_size = integer_as<int>(require_field(j, "group_size", kWhere), "group_size", kWhere);
  }
  check_counts(t);
  t.link = link_from_json(require_field(j, "link", kWhere), "topology.link");
  if (t.shape == ServerShape::mesh_groups) {
    t.group_port = link_from_json(require_field(j, "group_port", kWhere), "topology.group_port");
  }
  if (t.servers > 1 || j.contains("nic")) t.nic = link_from_json(require_field(j, "nic", kWhere), "topology.nic");
  if (j.contains("source")) {
    require_object(j["source"], "topology.source");
    t.source = j["source"];
  }
  return t;
}

std::vector<std::string> topology_preset_names() { return {"ascend910b-server8", "ascend910-server8", "ring8"}; }

bool is_topology_preset(const std::string& name) {
  const std::string server = name.substr(0, name.rfind("-x"));
  for (const auto& n : topology_preset_names()) {
    if (n == server) return true;
  }
  return false;
}

Topology topology_preset(const std::string& name) {
  const auto x = name.rfind("-x");
  if (x == std::string::npos || !is_topology_preset(name)) return server_preset(name);
  Topology t = server_preset(name.substr(0, x));
  const std::string count = name.substr(x + 2);
  if (count.empty() || count.size() > 5 || !std::all_of(count.begin(), count.end(), ::isdigit)) {
    throw_bad_input("topology: '" + name + "' must end in -x<servers>, a number of servers in 1..65536");
  }
  t.servers = std::stoi(count);
  check_counts(t);
  t.name = name;
  return t;
}

Topology load_topology(const std::string& arg) {
  if (is_topology_preset(arg) || arg.find_first_of("/.{") == std::string::npos) return topology_preset(arg);
  const Json j = json_from_arg(arg, "topology");
  return Topology::from_json(j.is_object() && j.contains("topology") ? j["topology"] : j);
}

std::string to_string(ServerShape s) {
  switch (s) {
    case ServerShape::full_mesh:
      return "full_mesh";
    case ServerShape::ring:
      return "ring";
    case ServerShape::mesh_groups:
      return "mesh_groups";
  }
  return "full_mesh";
}

}  // namespace atvoss::distributed

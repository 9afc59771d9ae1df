// Topology: a machine of many devices, as the collectives (collectives.hpp) see it — servers
// of devices_per_server cards, the cards of a server joined by point-to-point links, and the
// servers joined by a network through one NIC per card into a non-blocking switch fabric
// (rail-optimised, the way Ascend training clusters are cabled: docs/hardware-facts.md
// section 6). Inside a server the links form
//   full_mesh    a link between every two cards (Atlas 800T A2: HCCS, 910B);
//   ring         a link between neighbours only; farther cards route around the ring;
//   mesh_groups  full meshes of group_size cards, the groups joined through each card's
//                PCIe port (Atlas 800 model 9000: two HCCS meshes of 4, 910).
// Every link is full duplex: each direction is a resource of its own. A transfer between
// servers leaves through the sender's NIC and arrives through the receiver's.
// Devices are numbered server by server: device d is card d % devices_per_server of server
// d / devices_per_server.
// Plain value type; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace atvoss::distributed {

struct LinkSpec {
  double gb_per_s = 0;    // per direction, 1e9 bytes per second
  double latency_us = 0;  // per hop, start to first byte
  double bytes_per_us() const { return gb_per_s * 1e3; }
};

enum class ServerShape { full_mesh, ring, mesh_groups };

// One resource a transfer occupies (a link direction or a port), and the latency it adds.
struct Hop {
  std::int64_t resource = 0;
  double bytes_per_us = 0;
  double latency_us = 0;
};

struct Topology {
  std::string name;
  int servers = 1;
  int devices_per_server = 8;
  ServerShape shape = ServerShape::full_mesh;
  int group_size = 4;            // mesh_groups: cards per full mesh
  LinkSpec link;                 // between two cards of a server (of a group, for mesh_groups)
  LinkSpec group_port;           // mesh_groups: each card's port to the bus between groups
  LinkSpec nic;                  // each card's port to the network between servers
  Json source = Json::object();  // field -> where the figure comes from (or "est.")

  int devices() const { return servers * devices_per_server; }
  int server_of(int d) const { return d / devices_per_server; }
  int card_of(int d) const { return d % devices_per_server; }
  std::int64_t resources() const;  // the resource ids hops use: [0, resources())
  // The resources a transfer from a to b crosses, in order (a != b; both < devices()).
  std::vector<Hop> route(int a, int b) const;
  // The most device d can send at once, over all its ports (bytes per microsecond): no
  // collective moves data out of d faster.
  double injection_bytes_per_us(int d) const;

  Json to_json() const;
  // bad_input naming the field ('topology.link.gb_per_s') and what was expected.
  static Topology from_json(const Json& j);
};

// Presets (docs/hardware-facts.md section 6): "ascend910b-server8" (8 cards, HCCS full mesh),
// "ascend910-server8" (two HCCS meshes of 4 joined by PCIe), "ring8" (8 cards in a ring of
// 910B links), and "<server preset>-x<S>" for S such servers joined by RoCE.
std::vector<std::string> topology_preset_names();
bool is_topology_preset(const std::string& name);
Topology topology_preset(const std::string& name);  // bad_input listing the presets

// A topology named by preset, file or inline JSON (a target file may carry it under
// "topology"); bad_input naming the problem otherwise.
Topology load_topology(const std::string& arg);

std::string to_string(ServerShape s);

}  // namespace atvoss::distributed

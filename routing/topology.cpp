#include "routing/topology.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "routing/text.hpp"

namespace subnetd::routing {

const char* node_type_name(NodeType t) {
  switch (t) {
    case NodeType::kCa:
      return "CA";
    case NodeType::kSwitch:
      return "Switch";
    case NodeType::kRouter:
      return "Router";
  }
  return "?";
}

const char* port_state_name(PortState s) {
  switch (s) {
    case PortState::kNoChange:
      return "NOP";
    case PortState::kDown:
      return "DOWN";
    case PortState::kInit:
      return "INIT";
    case PortState::kArmed:
      return "ARMED";
    case PortState::kActive:
      return "ACTIVE";
  }
  return "?";
}

void Topology::reserve(std::size_t nodes, std::size_t ports) {
  nodes_.reserve(nodes);
  ports_.reserve(ports);
  by_guid_.reserve(nodes);
}

NodeId Topology::add_node(NodeType type, Guid node_guid, std::uint8_t num_ports,
                          std::string description) {
  NodeId id{static_cast<std::uint32_t>(nodes_.size())};
  Node n;
  n.type = type;
  n.guid = node_guid;
  n.system_guid = node_guid;
  n.num_ports = num_ports;
  n.first_port = static_cast<std::uint32_t>(ports_.size());
  n.description = std::move(description);
  if (type == NodeType::kSwitch) {
    n.switch_index = SwitchIndex{static_cast<std::uint32_t>(switches_.size())};
    switches_.push_back(id);
  }
  nodes_.push_back(std::move(n));
  for (unsigned p = 0; p <= num_ports; ++p) {
    Port port;
    port.guid = (type == NodeType::kSwitch || p == 0) ? node_guid : Guid{node_guid.value + p};
    ports_.push_back(port);
  }
  by_guid_.emplace(node_guid, id);  // first node with a GUID wins; validate() reports duplicates
  port_guids_valid_ = false;
  names_valid_ = false;
  return id;
}

Result<void> Topology::connect(PortRef a, PortRef b) {
  for (const PortRef& r : {a, b}) {
    if (r.node.value >= nodes_.size()) {
      return Error{Errc::kNotFound, fmt::format("node index {} does not exist", r.node.value)};
    }
    const Node& n = nodes_[r.node.value];
    if (r.port == 0 || r.port > n.num_ports) {
      return Error{Errc::kOutOfRange, fmt::format("\"{}\" has ports 1..{}, not port {}",
                                                  printable(n.description), n.num_ports, r.port)};
    }
    const Port& p = port(r);
    if (p.connected()) {
      return Error{
          Errc::kConflict,
          fmt::format("\"{}\"[{}] is already linked to \"{}\"[{}]", printable(n.description),
                      r.port, printable(nodes_[p.remote_node.value].description), p.remote_port)};
    }
  }
  if (a == b) {
    return Error{Errc::kConflict,
                 fmt::format("{} port {} linked to itself", label(a.node), a.port)};
  }
  Port& pa = mutable_port(a.node, a.port);
  Port& pb = mutable_port(b.node, b.port);
  pa.remote_node = b.node;
  pa.remote_port = b.port;
  pb.remote_node = a.node;
  pb.remote_port = a.port;
  return {};
}

void Topology::disconnect(PortRef a) {
  Port& pa = mutable_port(a.node, a.port);
  if (!pa.connected()) return;
  Port& pb = mutable_port(pa.remote_node, pa.remote_port);
  pb.remote_node = kNoNode;
  pb.remote_port = 0;
  pa.remote_node = kNoNode;
  pa.remote_port = 0;
}

std::vector<std::string> Topology::loopback_cables() const {
  std::vector<std::string> out;
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      const Port& port = ports_[n.first_port + p];
      if (port.remote_node.value != i || port.remote_port < p) continue;  // once, from the lower
      out.push_back(
          fmt::format("{} ports {} and {} are cabled to each other (a loopback cable); "
                      "not a link between two nodes, so no route uses it",
                      label(NodeId{i}), p, port.remote_port));
    }
  }
  return out;
}

std::size_t Topology::num_links() const {
  std::size_t ends = 0;
  for (const Port& p : ports_) ends += p.connected() ? 1 : 0;
  return ends / 2;
}

void Topology::build_port_guid_index() const {
  if (port_guids_valid_) return;
  by_port_guid_.clear();
  by_port_guid_.reserve(nodes_.size() * 2);
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.type == NodeType::kSwitch) {
      by_port_guid_.emplace(ports_[n.first_port].guid, PortRef{NodeId{i}, 0});
      continue;
    }
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      by_port_guid_.emplace(ports_[n.first_port + p].guid,
                            PortRef{NodeId{i}, static_cast<PortNum>(p)});
    }
  }
  port_guids_valid_ = true;
}

void Topology::build_name_index() const {
  if (names_valid_) return;
  by_name_.clear();
  by_name_.reserve(nodes_.size());
  for (std::uint32_t i = 0; i < nodes_.size(); ++i)
    by_name_.emplace(nodes_[i].description, NodeId{i});
  names_valid_ = true;
}

std::optional<NodeId> Topology::find_by_guid(Guid node_guid) const {
  auto it = by_guid_.find(node_guid);
  if (it == by_guid_.end()) return std::nullopt;
  return it->second;
}

std::optional<PortRef> Topology::find_by_port_guid(Guid port_guid) const {
  build_port_guid_index();
  auto it = by_port_guid_.find(port_guid);
  if (it == by_port_guid_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeId> Topology::find_by_name(std::string_view description) const {
  build_name_index();
  auto it = by_name_.find(std::string(description));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

Result<void> Topology::validate() const {
  std::unordered_map<Guid, NodeId> seen;
  seen.reserve(nodes_.size());
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    auto [it, inserted] = seen.emplace(n.guid, NodeId{i});
    if (!inserted) {
      return Error{
          Errc::kConflict,
          fmt::format("node GUID {:#018x} used by both \"{}\" and \"{}\"", n.guid.value,
                      printable(nodes_[it->second.value].description), printable(n.description))};
    }
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      const Port& pt = ports_[n.first_port + p];
      if (!pt.connected()) continue;
      if (pt.remote_node.value >= nodes_.size()) {
        return Error{Errc::kInternal, fmt::format("\"{}\"[{}] links to a missing node",
                                                  printable(n.description), p)};
      }
      const Node& r = nodes_[pt.remote_node.value];
      if (pt.remote_port == 0 || pt.remote_port > r.num_ports) {
        return Error{Errc::kOutOfRange,
                     fmt::format("\"{}\"[{}] links to \"{}\"[{}] which has {} ports",
                                 printable(n.description), p, printable(r.description),
                                 pt.remote_port, r.num_ports)};
      }
      const Port& back = ports_[r.first_port + pt.remote_port];
      if (back.remote_node.value != i || back.remote_port != p) {
        return Error{
            Errc::kConflict,
            fmt::format("\"{}\"[{}] says \"{}\"[{}] but that port does not link back",
                        printable(n.description), p, printable(r.description), pt.remote_port)};
      }
    }
  }
  return {};
}

std::string Topology::label(NodeId id) const {
  const Node& n = node(id);
  // Descriptions come from the wire (NodeDescription) and from files.
  return fmt::format("\"{}\" ({:#018x})", printable(n.description), n.guid.value);
}

}  // namespace subnetd::routing

#include "routing/switch_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "routing/text.hpp"

namespace subnetd::routing {

Result<SwitchGraph> SwitchGraph::build(const Topology& topo, const LidMap& lids) {
  SwitchGraph g;
  const auto num_sw = static_cast<std::uint32_t>(topo.num_switches());
  const auto num_nodes = static_cast<std::uint32_t>(topo.num_nodes());

  g.first_arc_.assign(num_sw + 1, 0);
  g.port_base_.resize(num_sw);
  g.num_ports_.resize(num_sw);
  std::uint32_t port_slots = 0;
  for (std::uint32_t s = 0; s < num_sw; ++s) {
    g.port_base_[s] = port_slots;
    g.num_ports_[s] = topo.node(topo.switch_node(SwitchIndex{s})).num_ports;
    port_slots += g.num_ports_[s] + 1U;
  }
  g.port_arc_.assign(port_slots, kNoArc);
  g.port_peer_.assign(port_slots, kNoSwitch);

  // Checks a cable end before we trust it; a Topology from the wire or a net
  // file may be broken, and a broken one must not crash routing.
  auto peer_ok = [&](const Port& p) {
    return p.remote_node.value < num_nodes && p.remote_port >= 1 &&
           p.remote_port <= topo.node(p.remote_node).num_ports;
  };

  for (std::uint32_t s = 0; s < num_sw; ++s) {
    const NodeId sn = topo.switch_node(SwitchIndex{s});
    const Node& node = topo.node(sn);
    for (unsigned p = 1; p <= node.num_ports; ++p) {
      const Port& port = topo.port(sn, static_cast<PortNum>(p));
      if (!port.connected()) continue;
      if (!peer_ok(port)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("switch \"{}\" ({:#018x}) port {} links to a port that does not "
                                 "exist",
                                 printable(node.description), node.guid.value, p)};
      }
      const Node& peer = topo.node(port.remote_node);
      if (peer.type != NodeType::kSwitch) continue;
      if (port.remote_node == sn) {
        if (p > port.remote_port) continue;  // noted from the lower port
        g.notes_.push_back(fmt::format(
            "switch \"{}\" ({:#018x}) ports {} and {} are cabled to each other; link not used",
            printable(node.description), node.guid.value, p, port.remote_port));
        continue;
      }
      if (p == kDropPort || port.remote_port == kDropPort) {
        g.notes_.push_back(fmt::format(
            "link \"{}\"[{}] - \"{}\"[{}] uses port 255, which an LFT cannot name; link not used",
            printable(node.description), p, printable(peer.description), port.remote_port));
        continue;
      }
      SwitchArc arc;
      arc.to = peer.switch_index;
      arc.local_port = static_cast<PortNum>(p);
      arc.remote_port = port.remote_port;
      g.port_arc_[g.port_base_[s] + p] = static_cast<std::uint32_t>(g.arcs_.size());
      g.port_peer_[g.port_base_[s] + p] = arc.to;
      g.arcs_.push_back(arc);
      g.arc_from_.push_back(SwitchIndex{s});
    }
    g.first_arc_[s + 1] = static_cast<std::uint32_t>(g.arcs_.size());
    g.max_degree_ = std::max(g.max_degree_, g.first_arc_[s + 1] - g.first_arc_[s]);
  }

  // Components by BFS over the arcs.
  constexpr std::uint32_t kNoComponent = UINT32_MAX;
  g.component_.assign(num_sw, kNoComponent);
  std::vector<SwitchIndex> queue;
  queue.reserve(num_sw);
  for (std::uint32_t s = 0; s < num_sw; ++s) {
    if (g.component_[s] != kNoComponent) continue;
    const std::uint32_t c = g.num_components_++;
    queue.clear();
    queue.push_back(SwitchIndex{s});
    g.component_[s] = c;
    for (std::size_t i = 0; i < queue.size(); ++i) {
      for (const SwitchArc& a : g.arcs(queue[i])) {
        if (g.component_[a.to.value] == kNoComponent) {
          g.component_[a.to.value] = c;
          queue.push_back(a.to);
        }
      }
    }
  }

  // Attachments, one per LID value.
  g.attach_.assign(std::size_t{lids.max_lid.value} + 1, LidAttachment{});
  g.has_endpoints_.assign(num_sw, 0);
  const std::size_t owners = std::min(lids.owner.size(), g.attach_.size());
  NodeId last_unroutable = kNoNode;
  for (std::size_t l = 1; l < owners; ++l) {
    const PortRef o = lids.owner[l];
    if (!o.node.valid()) continue;
    if (o.node.value >= num_nodes || o.port > topo.node(o.node).num_ports) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("LID {:#x} is owned by node {} port {}, which is not in the fabric",
                               l, o.node.value, o.port)};
    }
    const Node& owner = topo.node(o.node);
    if (owner.type == NodeType::kSwitch) {
      g.attach_[l] = LidAttachment{owner.switch_index, 0};
      continue;
    }
    const Port& port = topo.port(o);
    if (!port.connected()) continue;  // a LID on a dark port: nothing to route to
    if (!peer_ok(port)) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("\"{}\" port {} links to a port that does not exist",
                               printable(owner.description), o.port)};
    }
    const Node& peer = topo.node(port.remote_node);
    if (peer.type != NodeType::kSwitch) {
      // One note per port, not one per LID of its LMC range.
      if (last_unroutable != o.node || lids.owner[l - 1] != o) {
        g.notes_.push_back(fmt::format(
            "{} \"{}\" port {} is cabled to {} \"{}\" port {} with no switch between them; its "
            "LIDs are not routable",
            node_type_name(owner.type), printable(owner.description), o.port,
            node_type_name(peer.type), printable(peer.description), port.remote_port));
      }
      last_unroutable = o.node;
      continue;
    }
    g.attach_[l] = LidAttachment{peer.switch_index, port.remote_port};
    g.has_endpoints_[peer.switch_index.value] = 1;
  }
  return g;
}

void bfs_hops(const SwitchGraph& g, std::vector<SwitchIndex>& queue,
              std::vector<std::uint32_t>& dist) {
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const SwitchIndex v = queue[i];
    for (const SwitchArc& a : g.arcs(v)) {
      if (dist[a.to.value] == kUnreached) {
        dist[a.to.value] = dist[v.value] + 1;
        queue.push_back(a.to);
      }
    }
  }
}

std::vector<std::uint32_t> hops_to_nearest(const SwitchGraph& g,
                                           std::span<const SwitchIndex> sources) {
  std::vector<std::uint32_t> dist(g.num_switches(), kUnreached);
  std::vector<SwitchIndex> queue;
  queue.reserve(g.num_switches());
  for (const SwitchIndex s : sources) {
    if (dist[s.value] == kUnreached) {
      dist[s.value] = 0;
      queue.push_back(s);
    }
  }
  bfs_hops(g, queue, dist);
  return dist;
}

}  // namespace subnetd::routing

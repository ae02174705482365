#include "routing/path_trace.hpp"

#include <fmt/format.h>

#include <string>

#include "routing/text.hpp"

namespace subnetd::routing {
namespace {

// The packet entered `node` by `in_port`: does this port own the DLID?
bool owns(const LidMap& lids, NodeId node, PortNum port, Lid dlid) {
  return lids.owner_of(dlid) == PortRef{node, port};
}

Error lost(Errc code, std::string message) {
  return Error{code, std::move(message)};
}

}  // namespace

std::string describe_node(const Topology& topo, NodeId node) {
  const Node& n = topo.node(node);
  return fmt::format("{} ({:#018x})", printable(n.description), n.guid.value);
}

Result<PathTrace> trace_path(const Topology& topo, const LidMap& lids, const Routes& routes,
                             PortRef source, Lid dlid, const TraceOptions& opts) {
  if (!source.node.valid() || source.node.value >= topo.num_nodes()) {
    return Error{Errc::kInvalidArgument, "trace: source node is not in the topology"};
  }
  if (routes.lfts.size() != topo.num_switches()) {
    return Error{Errc::kInvalidArgument, fmt::format("trace: routes hold {} tables for {} switches",
                                                     routes.lfts.size(), topo.num_switches())};
  }
  const PortRef dest_owner = lids.owner_of(dlid);
  if (!dlid.valid() || !dest_owner.node.valid()) {
    return Error{Errc::kNotFound, fmt::format("trace: LID {} is not assigned", dlid.value)};
  }

  const Node& src = topo.node(source.node);
  PathTrace trace;
  trace.source = source;
  trace.dlid = dlid;

  NodeId at = source.node;
  PortNum in_port = 0;
  if (src.type == NodeType::kSwitch) {
    if (source.port != 0) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("trace: source {} is a switch; a trace starts at its port 0, not "
                               "port {}",
                               describe_node(topo, at), source.port)};
    }
  } else {
    if (source.port == 0 || source.port > src.num_ports) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("trace: source {} has ports 1..{}, not port {}",
                               describe_node(topo, at), src.num_ports, source.port)};
    }
    if (owns(lids, at, source.port, dlid)) {
      trace.hops.push_back({at, 0, 0});  // a trace to oneself
      return trace;
    }
    const Port& p = topo.port(at, source.port);
    trace.hops.push_back({at, 0, source.port});
    if (!p.connected()) {
      trace.status = lost(Errc::kUnreachable, fmt::format("source {} port {} is not cabled",
                                                          describe_node(topo, at), source.port));
      return trace;
    }
    if (p.state == PortState::kDown) {
      trace.status = lost(Errc::kUnreachable, fmt::format("source {} port {} is DOWN",
                                                          describe_node(topo, at), source.port));
      return trace;
    }
    in_port = p.remote_port;
    at = p.remote_node;
  }

  std::vector<bool> visited(topo.num_switches(), false);
  std::uint32_t switch_hops = 0;
  for (;;) {
    const Node& n = topo.node(at);
    if (n.type != NodeType::kSwitch) {
      // Only switches forward: the packet ends here, delivered or not.
      trace.hops.push_back({at, in_port, 0});
      if (!owns(lids, at, in_port, dlid)) {
        trace.status = lost(Errc::kUnreachable,
                            fmt::format("LID {} delivered to {} port {}, which does not own it",
                                        dlid.value, describe_node(topo, at), in_port));
      }
      return trace;
    }
    if (visited[n.switch_index.value]) {
      trace.hops.push_back({at, in_port, 0});
      trace.status = lost(Errc::kForwardingLoop,
                          fmt::format("forwarding loop for LID {}: {} reached a second time",
                                      dlid.value, describe_node(topo, at)));
      return trace;
    }
    if (switch_hops == opts.max_switch_hops) {
      trace.hops.push_back({at, in_port, 0});
      trace.status = lost(Errc::kOutOfRange,
                          fmt::format("hop limit of {} switches reached at {} for LID {}",
                                      opts.max_switch_hops, describe_node(topo, at), dlid.value));
      return trace;
    }
    visited[n.switch_index.value] = true;
    ++switch_hops;

    const std::uint8_t out = routes.lfts[n.switch_index.value].get(dlid);
    if (out == 0) {
      trace.hops.push_back({at, in_port, 0});
      if (!owns(lids, at, 0, dlid)) {
        trace.status = lost(Errc::kUnreachable,
                            fmt::format("{} forwards LID {} to its own port 0 but does not own it",
                                        describe_node(topo, at), dlid.value));
      }
      return trace;
    }
    trace.hops.push_back({at, in_port, out});
    if (out == kDropPort) {
      trace.hops.back().out_port = 0;
      trace.status =
          lost(Errc::kUnreachable, fmt::format("no route: {} has a drop entry for LID {}",
                                               describe_node(topo, at), dlid.value));
      return trace;
    }
    if (out > n.num_ports) {
      trace.status = lost(Errc::kUnreachable,
                          fmt::format("{} forwards LID {} to port {}, but has ports 1..{}",
                                      describe_node(topo, at), dlid.value, out, n.num_ports));
      return trace;
    }
    const Port& p = topo.port(at, out);
    if (!p.connected()) {
      trace.status =
          lost(Errc::kUnreachable, fmt::format("{} forwards LID {} to port {}, which is not cabled",
                                               describe_node(topo, at), dlid.value, out));
      return trace;
    }
    if (p.state == PortState::kDown) {
      trace.status =
          lost(Errc::kUnreachable, fmt::format("{} forwards LID {} to port {}, whose link is DOWN",
                                               describe_node(topo, at), dlid.value, out));
      return trace;
    }
    in_port = p.remote_port;
    at = p.remote_node;
  }
}

}  // namespace subnetd::routing

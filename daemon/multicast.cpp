#include "daemon/multicast.hpp"

#include <fmt/format.h>

#include <unordered_map>

namespace subnetd::daemon {

std::vector<routing::McastGroupIn> mcast_inputs(const routing::Topology& topo,
                                                std::span<const state::McastGroup> groups,
                                                std::size_t* absent) {
  // Our own index: the topology may be shared with readers, and its lazy
  // port-GUID index is built unlocked.
  std::unordered_map<Guid, PortRef> by_guid;
  bool any = false;
  for (const state::McastGroup& g : groups) any |= !g.members.empty();
  if (any) {
    by_guid.reserve(topo.num_ports_total());
    for (std::uint32_t i = 0; i < topo.num_nodes(); ++i) {
      const NodeId n{i};
      if (topo.node(n).type == routing::NodeType::kSwitch) {
        by_guid.emplace(topo.port(n, 0).guid, PortRef{n, 0});
        continue;
      }
      for (unsigned p = 1; p <= topo.node(n).num_ports; ++p) {
        by_guid.emplace(topo.port(n, static_cast<PortNum>(p)).guid,
                        PortRef{n, static_cast<PortNum>(p)});
      }
    }
  }
  std::vector<routing::McastGroupIn> out;
  out.reserve(groups.size());
  for (const state::McastGroup& g : groups) {
    routing::McastGroupIn in{g.mlid, {}};
    for (const auto& [guid, join] : g.members) {
      const auto it = by_guid.find(guid);
      if (it == by_guid.end()) {
        if (absent != nullptr) ++*absent;
        continue;
      }
      in.members.push_back(it->second);
    }
    out.push_back(std::move(in));
  }
  return out;
}

Result<MulticastResult> multicast_step(const routing::Topology& topo, const routing::Routes& routes,
                                       std::span<const state::McastGroup> groups,
                                       routing::WorkerPool& pool, std::stop_token stop) {
  MulticastResult out;
  const std::vector<routing::McastGroupIn> in = mcast_inputs(topo, groups, &out.members_absent);
  auto tables = routing::compute_multicast(topo, routes, in, pool, stop);
  if (!tables.ok()) return tables.error();
  auto checked = routing::verify_multicast(topo, *tables, in, routes.multicast_rank());
  if (!checked.ok()) {
    return Error{checked.error().code, fmt::format("multicast trees: {}; nothing was programmed",
                                                   checked.error().message)};
  }
  out.tables = std::make_shared<const routing::McastTables>(std::move(tables).value());
  return out;
}

}  // namespace subnetd::daemon

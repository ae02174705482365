#include "routing/engines/updn.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <queue>
#include <tuple>

#include "routing/hop_table.hpp"
#include "routing/lft_fill.hpp"

namespace subnetd::routing {
namespace {

constexpr std::uint32_t kUnset = UINT32_MAX;

}  // namespace

Result<UpDownOrder> updn_order(const Topology& topo, const SwitchGraph& g,
                               std::span<const Guid> root_guids, WorkerPool& pool,
                               std::stop_token stop) {
  const std::uint32_t n = g.num_switches();
  const std::uint32_t parts = g.num_components();
  auto guid_of = [&](std::uint32_t s) {
    return topo.node(topo.switch_node(SwitchIndex{s})).guid.value;
  };

  UpDownOrder order;
  std::vector<std::uint8_t> is_root(n, 0);
  std::vector<std::uint8_t> part_has_root(parts, 0);
  for (const Guid& guid : root_guids) {
    const auto node = topo.find_by_guid(guid);
    if (!node) {
      return Error{Errc::kNotFound,
                   fmt::format("updn root GUID {:#018x} is not in the fabric", guid.value)};
    }
    const Node& nd = topo.node(*node);
    if (nd.type != NodeType::kSwitch) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("updn root GUID {:#018x} is {} \"{}\", not a switch", guid.value,
                               node_type_name(nd.type), nd.description)};
    }
    is_root[nd.switch_index.value] = 1;
    part_has_root[g.component(nd.switch_index)] = 1;
  }
  if (!root_guids.empty()) {
    for (std::uint32_t c = 0; c < parts; ++c) {
      if (part_has_root[c] != 0) order.notes.push_back(fmt::format("part {}: configured roots", c));
    }
  }

  // Parts without configured roots. Tiered parts — some switch carries no CA
  // and is at least a hop from every CA switch, as in fat trees and PGFTs,
  // degraded or not — rank by height (hops to the nearest CA switch): rank =
  // max height - height, so the tier farthest from the CAs is on top and is
  // the root set. Heights barely move when links fail (a core keeps height 2
  // while any of its aggregation switches keeps an edge link), so neither
  // does the order. Other parts (CAs on every switch, or none) get one root
  // at their centre (least eccentricity, lowest GUID) and BFS ranks from it.
  std::vector<SwitchIndex> leaves;
  std::vector<std::uint8_t> has_leaf(parts, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    const SwitchIndex sw{s};
    if (g.has_endpoints(sw) && part_has_root[g.component(sw)] == 0) {
      leaves.push_back(sw);
      has_leaf[g.component(sw)] = 1;
    }
  }
  const std::vector<std::uint32_t> height = hops_to_nearest(g, leaves);
  std::vector<std::uint32_t> max_height(parts, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    const std::uint32_t c = g.component(SwitchIndex{s});
    if (height[s] != kUnset) max_height[c] = std::max(max_height[c], height[s]);
  }
  auto tiered = [&](std::uint32_t c) {
    return part_has_root[c] == 0 && has_leaf[c] != 0 && max_height[c] > 0;
  };
  std::vector<std::uint32_t> centre(parts, kUnset);
  for (std::uint32_t c = 0; c < parts; ++c) {
    if (part_has_root[c] != 0 || tiered(c)) continue;
    auto ecc = eccentricities(g, pool, stop);  // once: the loop ends below
    if (!ecc.ok()) return ecc.error();
    for (std::uint32_t s = 0; s < n; ++s) {
      const std::uint32_t cs = g.component(SwitchIndex{s});
      if (part_has_root[cs] != 0 || tiered(cs)) continue;
      std::uint32_t& best = centre[cs];
      if (best == kUnset ||
          std::make_pair((*ecc)[s], guid_of(s)) < std::make_pair((*ecc)[best], guid_of(best))) {
        best = s;
      }
    }
    for (std::uint32_t cc = 0; cc < parts; ++cc) {
      if (centre[cc] != kUnset) {
        order.notes.push_back(
            fmt::format("part {}: root {} at the centre ({} hops to the farthest switch)", cc,
                        topo.switch_label(SwitchIndex{centre[cc]}), (*ecc)[centre[cc]]));
      }
    }
    break;
  }
  std::vector<SwitchIndex> bfs_roots;
  for (std::uint32_t s = 0; s < n; ++s) {
    const std::uint32_t c = g.component(SwitchIndex{s});
    if (is_root[s] != 0 || centre[c] == s) bfs_roots.push_back(SwitchIndex{s});
  }
  order.rank = hops_to_nearest(g, bfs_roots);
  std::vector<std::uint32_t> top_tier(parts, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    const std::uint32_t c = g.component(SwitchIndex{s});
    if (!tiered(c)) continue;
    order.rank[s] = max_height[c] - height[s];
    if (order.rank[s] == 0) ++top_tier[c];
  }
  for (std::uint32_t c = 0; c < parts; ++c) {
    if (tiered(c)) {
      order.notes.push_back(fmt::format(
          "part {}: tiers by distance from the CAs; {} root(s) in the top tier, {} hops from the "
          "nearest CA switch",
          c, top_tier[c], max_height[c]));
    }
  }
  for (std::uint32_t s = 0; s < n; ++s) {
    if (order.rank[s] == 0) order.roots.push_back(SwitchIndex{s});
  }

  // Placement: per part, grow from its lowest-GUID root, always taking the
  // smallest (rank, GUID) switch adjacent to those already placed.
  std::vector<std::uint32_t> master(parts, kUnset);
  for (const SwitchIndex s : order.roots) {
    std::uint32_t& m = master[g.component(s)];
    if (m == kUnset || guid_of(s.value) < guid_of(m)) m = s.value;
  }
  order.pos.assign(n, kUnset);
  std::vector<std::uint8_t> queued(n, 0);
  using Key = std::tuple<std::uint32_t, std::uint64_t, std::uint32_t>;  // rank, GUID, switch
  std::priority_queue<Key, std::vector<Key>, std::greater<>> frontier;
  std::uint32_t next_pos = 0;
  for (std::uint32_t c = 0; c < parts; ++c) {
    if (master[c] == kUnset) {
      return Error{Errc::kInternal, fmt::format("updn: no root in fabric part {}", c)};
    }
    frontier.emplace(order.rank[master[c]], guid_of(master[c]), master[c]);
    queued[master[c]] = 1;
    while (!frontier.empty()) {
      const std::uint32_t s = std::get<2>(frontier.top());
      frontier.pop();
      order.pos[s] = next_pos++;
      for (const SwitchArc& a : g.arcs(SwitchIndex{s})) {
        const std::uint32_t nb = a.to.value;
        if (queued[nb] == 0) {
          queued[nb] = 1;
          frontier.emplace(order.rank[nb], guid_of(nb), nb);
        }
      }
    }
  }
  return order;
}

Result<Routes> UpdnEngine::compute(const Topology& topo, const LidMap& lids,
                                   const EngineOptions& opts, WorkerPool& pool,
                                   std::stop_token stop) const {
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  UpDownOrder order;
  SUBNETD_TRY_ASSIGN(order, updn_order(topo, g, opts.root_guids, pool, stop));
  HopTable hops;
  SUBNETD_TRY_ASSIGN(hops, updown_hops(g, order.pos, pool, stop));
  Routes routes;
  SUBNETD_TRY_ASSIGN(
      routes, fill_balanced_lfts(topo, g, hops, CandidateRule::kUpDown, order.pos, pool, stop));
  routes.engine = std::string(name());
  routes.updown_rank = std::move(order.pos);  // up iff earlier: exactly the rule above
  return routes;
}

}  // namespace subnetd::routing

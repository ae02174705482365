// ftree's first half (routing/engines/ftree.hpp): whether the switches form
// a fat tree (fat_tree_shape), the switches in ftree's rank order
// (ftree_order), and the layout the fill works from (ftree_layout), with the
// up/down hop table and the pairs it strands. The fill, the routes and the
// engine: ftree.cpp.

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <vector>

#include "routing/engines/ftree.hpp"
#include "routing/hop_table.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

constexpr std::uint32_t kNoRank = UINT32_MAX;  // also "no position"

}  // namespace

// ---------------------------------------------------------------------------
// Shape

FatTreeShape fat_tree_shape(const Topology& topo, const SwitchGraph& g) {
  const std::uint32_t n = g.num_switches();
  FatTreeShape shape;
  shape.level.assign(n, kNoLevel);
  auto guid_of = [&](SwitchIndex s) { return topo.node(topo.switch_node(s)).guid.value; };

  // Leaves upward.
  std::vector<SwitchIndex> queue;
  queue.reserve(n);
  std::vector<std::uint8_t> part_has_leaf(g.num_components(), 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    const SwitchIndex sw{s};
    if (g.has_endpoints(sw)) {
      shape.level[s] = 0;
      queue.push_back(sw);
      part_has_leaf[g.component(sw)] = 1;
    }
  }
  bfs_hops(g, queue, shape.level);

  // Parts without a CA: downward from their lowest-GUID switch, so that it is
  // the one top and every switch of the part has an up/down path to the rest.
  std::vector<SwitchIndex> part_root(g.num_components(), kNoSwitch);
  for (std::uint32_t s = 0; s < n; ++s) {
    const SwitchIndex sw{s};
    SwitchIndex& r = part_root[g.component(sw)];
    if (part_has_leaf[g.component(sw)] == 0 && (r == kNoSwitch || guid_of(sw) < guid_of(r))) {
      r = sw;
    }
  }
  std::vector<std::uint32_t> dist(n, kNoLevel);
  for (std::uint32_t c = 0; c < g.num_components(); ++c) {
    if (part_has_leaf[c] != 0) continue;
    queue.assign(1, part_root[c]);
    dist[part_root[c].value] = 0;
    bfs_hops(g, queue, dist);
    std::uint32_t depth = 0;
    for (const SwitchIndex v : queue) depth = std::max(depth, dist[v.value]);
    for (const SwitchIndex v : queue) shape.level[v.value] = depth - dist[v.value];
  }

  for (std::uint32_t s = 0; s < n; ++s)
    shape.num_levels = std::max(shape.num_levels, shape.level[s] + 1);

  // The verdict. A fabric without switch-to-switch links is a set of
  // one-level trees (or nothing at all) and trivially one.
  const bool any_leaf =
      std::find(part_has_leaf.begin(), part_has_leaf.end(), 1) != part_has_leaf.end();
  if (!any_leaf && g.num_arcs() > 0) {
    shape.reason = "no CA or router is attached to any switch";
  } else {
    for (std::uint32_t s = 0; s < n && shape.reason.empty(); ++s) {
      const SwitchIndex sw{s};
      if (part_has_leaf[g.component(sw)] == 0) continue;
      for (const SwitchArc& a : g.arcs(sw)) {
        if (shape.level[a.to.value] == shape.level[s]) {
          shape.reason = fmt::format(
              "switches {} and {} are linked but both sit {} hops above the nearest "
              "CA-attached switch (a fat tree links only adjacent levels)",
              topo.switch_label(sw), topo.switch_label(a.to), shape.level[s]);
          break;
        }
      }
    }
  }
  shape.fat_tree = shape.reason.empty();

  // Up-widths.
  shape.up_width.assign(shape.num_levels, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    std::uint32_t up = 0;
    for (const SwitchArc& a : g.arcs(SwitchIndex{s})) {
      up += shape.level[a.to.value] == shape.level[s] + 1 ? 1 : 0;
    }
    shape.up_width[shape.level[s]] = std::max(shape.up_width[shape.level[s]], up);
  }

  // Rank: top level first, then by the lowest parent rank, then GUID.
  std::vector<std::vector<std::uint32_t>> by_level(shape.num_levels);
  for (std::uint32_t s = 0; s < n; ++s) by_level[shape.level[s]].push_back(s);
  shape.rank.assign(n, kNoRank);
  std::uint32_t next = 0;
  std::vector<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t>> keyed;
  for (std::uint32_t l = shape.num_levels; l-- > 0;) {
    keyed.clear();
    for (std::uint32_t s : by_level[l]) {
      std::uint32_t parent = kNoRank;
      for (const SwitchArc& a : g.arcs(SwitchIndex{s})) {
        if (shape.level[a.to.value] == l + 1) parent = std::min(parent, shape.rank[a.to.value]);
      }
      keyed.emplace_back(parent, guid_of(SwitchIndex{s}), s);
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& k : keyed) shape.rank[std::get<2>(k)] = next++;
  }
  return shape;
}

std::vector<std::uint32_t> ftree_order(const SwitchGraph& g, const FatTreeShape& shape) {
  const std::uint32_t n = g.num_switches();
  std::vector<std::uint32_t> by_rank(n);
  for (std::uint32_t s = 0; s < n; ++s) by_rank[shape.rank[s]] = s;
  std::vector<std::uint32_t> pos(n, kNoRank);
  std::vector<std::uint8_t> queued(n, 0);
  // Frontier key: higher level first, then rank.
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // -level, rank, switch
  std::priority_queue<Key, std::vector<Key>, std::greater<>> frontier;
  auto push = [&](std::uint32_t s) {
    queued[s] = 1;
    frontier.emplace(kNoLevel - shape.level[s], shape.rank[s], s);
  };
  std::uint32_t next = 0;
  for (std::uint32_t start : by_rank) {  // the first of a part is its top
    if (queued[start] != 0) continue;
    push(start);
    while (!frontier.empty()) {
      const std::uint32_t s = std::get<2>(frontier.top());
      frontier.pop();
      pos[s] = next++;
      for (const SwitchArc& a : g.arcs(SwitchIndex{s})) {
        if (queued[a.to.value] == 0) push(a.to.value);
      }
    }
  }
  return pos;
}

namespace {

// Connected switch pairs (s, t) without an up/down path in a hop table.
struct Stranded {
  std::uint64_t data = 0;  // s and t both have CAs: data would be stranded
  std::uint64_t any = 0;
  SwitchIndex example_s, example_t;  // a data pair
};

Stranded count_stranded(const SwitchGraph& g, const HopTable& hops) {
  Stranded out;
  const std::uint32_t n = g.num_switches();
  for (std::uint32_t s = 0; s < n; ++s) {
    const SwitchIndex from{s};
    const std::uint8_t* row = hops.row(from);
    for (std::uint32_t t = 0; t < n; ++t) {
      const SwitchIndex to{t};
      if (row[t] != HopTable::kUnreachable || g.component(from) != g.component(to)) continue;
      ++out.any;
      if (g.has_endpoints(from) && g.has_endpoints(to) && out.data++ == 0) {
        out.example_s = from;
        out.example_t = to;
      }
    }
  }
  return out;
}

}  // namespace

Result<FtreeLayout> ftree_layout(const Topology& topo, const SwitchGraph& g, FatTreeShape shape,
                                 WorkerPool& pool, std::stop_token stop, FtreeTables& tables) {
  if (!shape.fat_tree) {
    return Error{Errc::kUnsupported, fmt::format("ftree: not a fat tree: {}", shape.reason)};
  }
  const std::uint32_t n = g.num_switches();
  FtreeLayout layout;
  layout.shape = std::move(shape);
  layout.pos = layout.shape.rank;  // higher level first: up = toward the higher level
  {
    auto table = updown_hops(g, layout.pos, pool, stop);
    if (!table.ok()) return table.error();
    tables.updown = std::move(table).value();
  }
  Stranded stranded = count_stranded(g, tables.updown);
  if (stranded.data != 0) {
    layout.notes.push_back(fmt::format(
        "ftree: {} pairs of CA-attached switches (e.g. {} to {}) have no up/down path under the "
        "fat-tree levels; routing over the connected order instead",
        stranded.data, topo.switch_label(stranded.example_s),
        topo.switch_label(stranded.example_t)));
    layout.pos = ftree_order(g, layout.shape);
    layout.level_order = false;
    auto table = updown_hops(g, layout.pos, pool, stop);
    if (!table.ok()) return table.error();
    tables.updown = std::move(table).value();
    stranded = count_stranded(g, tables.updown);
    if (stranded.any != 0) {
      return Error{Errc::kInternal,
                   fmt::format("ftree: the connected order leaves {} connected switch pairs "
                               "without an up/down path",
                               stranded.any)};
    }
  }
  tables.shortest = HopTable{};
  if (stranded.any != 0) {
    auto table = shortest_hops(g, pool, stop);
    if (!table.ok()) return table.error();
    tables.shortest = std::move(table).value();
    layout.switch_pairs_off_updown = stranded.any;
  }

  // Destination index j: CA/router LIDs in leaf rank order, ascending LID
  // within a switch; switch LIDs after them in rank order.
  const auto att = g.attachments();
  std::vector<std::uint32_t> by_rank(n);
  for (std::uint32_t s = 0; s < n; ++s) by_rank[layout.shape.rank[s]] = s;
  std::vector<std::uint32_t> first(n + 1, 0);
  for (std::size_t d = 1; d < att.size(); ++d) {
    if (att[d].routable() && att[d].port != 0) ++first[layout.shape.rank[att[d].sw.value] + 1];
  }
  for (std::uint32_t r = 0; r < n; ++r) first[r + 1] += first[r];
  const std::uint32_t data_lids = first[n];
  layout.dest_index.assign(att.size(), FtreeLayout::kNoIndex);
  std::uint32_t next_switch = data_lids;
  for (std::size_t d = 1; d < att.size(); ++d) {
    if (!att[d].routable()) continue;
    if (att[d].port != 0) layout.dest_index[d] = first[layout.shape.rank[att[d].sw.value]]++;
  }
  std::vector<std::uint32_t> switch_lid(n, 0);
  for (std::size_t d = 1; d < att.size(); ++d) {
    if (att[d].routable() && att[d].port == 0)
      switch_lid[att[d].sw.value] = static_cast<std::uint32_t>(d);
  }
  for (std::uint32_t r = 0; r < n; ++r) {
    if (switch_lid[by_rank[r]] != 0) layout.dest_index[switch_lid[by_rank[r]]] = next_switch++;
  }

  // D-mod-K divisors, capped so that floor(j / P_l) still takes W_l values.
  const std::uint32_t levels = layout.shape.num_levels;
  layout.divisor.assign(levels, 1);
  std::uint64_t p = 1;
  for (std::uint32_t l = 0; l < levels; ++l) {
    const std::uint64_t w = std::max<std::uint32_t>(1, layout.shape.up_width[l]);
    const std::uint64_t cap = std::max<std::uint64_t>(1, data_lids / w);
    layout.divisor[l] = static_cast<std::uint32_t>(std::min(p, cap));
    p = std::min<std::uint64_t>(p * w, std::uint64_t{1} << 32);
  }
  return layout;
}
}  // namespace subnetd::routing

#pragma once
// The layered engine's graph walks and the CDGs its layers start from
// (engines/layered.hpp): reverse arcs, breadth-first ranks, a CDG as an
// OrderedDag in a topological order, up*/down* orders and their
// dependencies (the escape layer's CDG), and a spanning tree's escape
// paths (seeded layers). Internal to routing/engines.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "routing/ordered_dag.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

// By arc: the arc the other way over the same link (kNoArc: none).
inline std::vector<std::uint32_t> reverse_arcs(const SwitchGraph& g) {
  std::vector<std::uint32_t> rev(g.num_arcs(), kNoArc);
  for (std::uint32_t a = 0; a < g.num_arcs(); ++a) {
    rev[a] = g.arc_at_port(g.arc(a).to, g.arc(a).remote_port);
  }
  return rev;
}

// Switches in breadth-first order from `root` (root first) into `order`,
// and their hops from it in `dist` (kNoArc: not reached).
inline void bfs_hops(const SwitchGraph& g, std::uint32_t root, std::vector<std::uint32_t>& dist,
                     std::vector<std::uint32_t>& order) {
  dist.assign(g.num_switches(), kNoArc);
  order.assign(1, root);
  dist[root] = 0;
  for (std::size_t head = 0; head < order.size(); ++head) {
    const std::uint32_t v = order[head];
    for (const SwitchArc& a : g.arcs(SwitchIndex{v})) {
      if (dist[a.to.value] == kNoArc) {
        dist[a.to.value] = dist[v] + 1;
        order.push_back(a.to.value);
      }
    }
  }
}

// Switches ranked in breadth-first order from `root` (bfs_hops': a
// switch's neighbours in the order of its arcs), then those `root` does
// not reach, by index. `dist` gives the distances
// (kNoArc when not reached).
inline std::vector<std::uint32_t> bfs_rank(const SwitchGraph& g, std::uint32_t root,
                                           std::vector<std::uint32_t>& dist) {
  const std::uint32_t n = g.num_switches();
  std::vector<std::uint32_t> queue;
  bfs_hops(g, root, dist, queue);
  for (std::uint32_t v = 0; v < n; ++v) {
    if (dist[v] == kNoArc) queue.push_back(v);
  }
  std::vector<std::uint32_t> pos(n);
  for (std::uint32_t i = 0; i < n; ++i) pos[queue[i]] = i;
  return pos;
}

// A CDG over the channels of `frame` (cdg_frame), given by outs(a, fn)
// calling fn(b) for every dependency a->b, as an OrderedDag: a
// topological order of the channels, then every dependency, which agrees
// with it. Empty when the dependencies close a cycle. Kahn's with a stack,
// so a chain of dependencies stays together in the order: where a failover
// plan may add only dependencies that agree with the order (no search),
// a torus on dateline VLs got 4.5x the alternatives of Kahn's with a
// queue (12x12x12: 1,518,891 (switch, destination) pairs against 338,966;
// 2,713 pairs left to the SM a failure against 4,273), random 1,000
// switches the same (254,415 against 253,381). With searches the order
// decides only their cost.
template <class Outs>
std::optional<OrderedDag> ordered_cdg(std::shared_ptr<const DagFrame> frame, Outs&& outs) {
  const std::uint32_t nodes = frame->nodes();
  std::vector<std::uint32_t> indeg(nodes, 0);
  for (std::uint32_t a = 0; a < nodes; ++a) outs(a, [&](std::uint32_t b) { ++indeg[b]; });
  std::vector<std::uint32_t> ready;  // a stack
  ready.reserve(nodes);
  for (std::uint32_t a = 0; a < nodes; ++a) {
    if (indeg[a] == 0) ready.push_back(a);
  }
  std::vector<std::uint32_t> pos(nodes);
  std::uint32_t placed = 0;
  while (!ready.empty()) {
    const std::uint32_t x = ready.back();
    ready.pop_back();
    pos[x] = placed++;
    outs(x, [&](std::uint32_t b) {
      if (--indeg[b] == 0) ready.push_back(b);
    });
  }
  if (placed != nodes) return std::nullopt;
  OrderedDag dag(std::move(frame), std::move(pos));
  for (std::uint32_t a = 0; a < nodes; ++a) outs(a, [&](std::uint32_t b) { dag.add(a, b); });
  return dag;
}

// Channels in an up*/down* order for the switch ranking `pos` (lower is
// nearer the root): up-channels by their head's position, last first, then
// down-channels by their head's position. Dependencies of up*/down* routes
// agree with it.
inline std::vector<std::uint32_t> updown_order(const SwitchGraph& g,
                                               std::span<const std::uint32_t> pos) {
  const std::uint32_t arcs = g.num_arcs();
  auto up = [&](std::uint32_t a) { return pos[g.arc(a).to.value] < pos[g.arc_source(a).value]; };
  std::vector<std::uint32_t> by(arcs);
  for (std::uint32_t a = 0; a < arcs; ++a) by[a] = a;
  std::sort(by.begin(), by.end(), [&](std::uint32_t a, std::uint32_t b) {
    const bool ua = up(a), ub = up(b);
    if (ua != ub) return ua;
    const std::uint32_t ha = pos[g.arc(a).to.value], hb = pos[g.arc(b).to.value];
    if (ha != hb) return ua ? ha > hb : ha < hb;
    return a < b;
  });
  std::vector<std::uint32_t> order_pos(arcs);
  for (std::uint32_t i = 0; i < arcs; ++i) order_pos[by[i]] = i;
  return order_pos;
}

// Calls fn(in, out) for every dependency an up*/down* route in the
// ranking `pos` (lower is nearer the root) may create: into a switch and
// on, never down then up.
template <class Fn>
void for_each_updown_dep(const SwitchGraph& g, std::span<const std::uint32_t> pos,
                         std::span<const std::uint32_t> rev, Fn&& fn) {
  auto up = [&](std::uint32_t a) { return pos[g.arc(a).to.value] < pos[g.arc_source(a).value]; };
  for (std::uint32_t v = 0; v < g.num_switches(); ++v) {
    const std::uint32_t first = g.first_arc(SwitchIndex{v});
    const std::uint32_t end = g.first_arc(SwitchIndex{v + 1});
    for (std::uint32_t out = first; out < end; ++out) {
      for (std::uint32_t o = first; o < end; ++o) {
        const std::uint32_t in = rev[o];  // into v from o's neighbour
        if (in == kNoArc || o == out) continue;
        if (!up(in) && up(out)) continue;  // down, then up
        fn(in, out);
      }
    }
  }
}

// The escape layer's CDG before any tree: every dependency of an up*/down*
// route, in updown_order (`frame`: g's cdg_frame).
inline OrderedDag updown_cdg(const SwitchGraph& g, std::span<const std::uint32_t> pos,
                             std::span<const std::uint32_t> rev,
                             std::shared_ptr<const DagFrame> frame) {
  OrderedDag dag(std::move(frame), updown_order(g, pos));
  for_each_updown_dep(g, pos, rev, [&](std::uint32_t in, std::uint32_t out) { dag.add(in, out); });
  return dag;
}

// The escape paths of a layer, as Nue's: every dependency of routes
// along a spanning tree of shortest paths from the root of the ranking
// `pos` (bfs_rank's; each switch's parent is its neighbour ranked first),
// the turns at each switch between two of its tree links (not back over
// the same one), in updown_order (`frame`: g's cdg_frame). A tree route
// climbs to where its ends' branches meet and descends: up*/down*, so
// these are a few of updown_cdg's. Of parallel cables, one (the first
// arc) is in the tree.
inline OrderedDag spanning_tree_cdg(const SwitchGraph& g, std::span<const std::uint32_t> pos,
                                    std::span<const std::uint32_t> rev,
                                    std::shared_ptr<const DagFrame> frame) {
  const std::uint32_t n = g.num_switches();
  std::vector<std::uint32_t> parent(n, kNoArc);  // by switch: its channel up
  for (std::uint32_t v = 0; v < n; ++v) {
    for (std::uint32_t a = g.first_arc(SwitchIndex{v}); a < g.first_arc(SwitchIndex{v + 1}); ++a) {
      const std::uint32_t to = g.arc(a).to.value;
      if (pos[to] < pos[v] && (parent[v] == kNoArc || pos[to] < pos[g.arc(parent[v]).to.value])) {
        parent[v] = a;
      }
    }
  }
  auto in_tree = [&](std::uint32_t a) {
    const std::uint32_t from = g.arc_source(a).value, to = g.arc(a).to.value;
    return parent[from] == a || (parent[to] != kNoArc && rev[parent[to]] == a);
  };
  // Down a tree link then up one is back over the same link: every tree
  // turn is an up*/down* one.
  OrderedDag dag(std::move(frame), updown_order(g, pos));
  for_each_updown_dep(g, pos, rev, [&](std::uint32_t in, std::uint32_t out) {
    if (in_tree(in) && in_tree(out)) dag.add(in, out);
  });
  return dag;
}

}  // namespace subnetd::routing

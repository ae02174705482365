// The layered engine for any topology (engines/layered.hpp): trees grown
// in the layers' CDGs, a rip-up pass and hot-spot steps; where the free
// layers refuse trees, routed with seeded layers too, the better kept.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "routing/engines/layered.hpp"
#include "routing/engines/tree_grower.hpp"
#include "routing/engines/updn.hpp"
#include "routing/ordered_dag.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

// Passes of rip-up-and-reroute after every tree is placed.
constexpr std::uint32_t kRefinePasses = 1;
// A tree is funnelled when one channel carries more than this many times
// the share of its sources that t's links would each carry if they took
// even parts. Such trees try the other layers in the rip-up pass: on random
// graphs their busiest links were most of the engine's excess (2,000
// switches: 3.41x the bound without, 2.38x with; 1,000: 1.28x, 1.14x;
// degraded fat tree k=16: 1.56x, 1.48x). Down to 2 moved more trees and
// balanced some fabrics better and others worse.
constexpr std::uint64_t kFunnelled = 3;
// Tries of a hot-spot tree with branch layers (EngineOptions::
// branch_layers), each avoiding the channels the tries before it found
// as busy as the busiest. Random 2,000 switches, one CA each: 1 try
// 1.53 the bound, 4 tries 1.50, 8 the same as 4.
constexpr std::uint32_t kBranchTries = 4;
// Hot-spot steps per tree at most (HotSpotPace). One per tree stopped
// tori that lost links while their busiest channel was still dropping:
// hot-spot trees split in halves, so a tree's LIDs may need a step per
// half. The busiest link over the bound (layers_bench, 8 VLs, 2 CAs a
// switch; seeded layers then held every up*/down* turn, not a spanning
// tree's), one step per tree -> two: torus 8x8x8 minus 6% (seeds 2 and
// 4) 1.57 -> 1.34 and 1.33, minus 8% 1.87 -> 1.73, minus 10% 1.97 ->
// 1.78, its general engine minus 2% 1.39 -> 1.27; torus 10x10x10 minus
// 10% 2.53 -> 2.39, minus 7% with one CA 2.26 -> 1.85; 12x12x12 minus
// 1% 3.31 -> 2.29; no slower beyond the noise. Random graphs, the
// dragonfly, the fat tree k=16 minus 5%, the mesh and the hypercube
// stop on the stall before either (unchanged). Four per tree with twice
// the stall: 1.69 and 1.74 at 8% and 10%, 0.4 s more.
constexpr std::uint64_t kHotSpotStepsPerTree = 2;
// Branch layers only while the busiest channel carries more than this
// many percent over the mean channel load. A split LID costs fast
// failover: where its branches meet (the neighbours of its switch) its
// group is its entry alone (routing/failover_plan.cpp), so a failure there
// strands the switch for every LID of that switch. Near even, splits
// gained little and cost much (layers_bench and failover_bench, 1,000
// single link failures, pairs left to the SM): random 200 of degree 8, 8
// CAs a switch, 1.06 the bound and 19,527 pairs with every split, 1.08 and
// 13,127 without (5%: 1.08, 13,332); random 1,000 of degree 16, 8 CAs,
// 12,200 paths on the busiest link and 275,580 pairs (300 failures),
// 12,216 and 265,152. Fabrics far from even keep theirs: random 1,000 and
// 2,000 with one CA a switch, the general engine's torus, dragonfly and
// degraded fat tree route as before.
constexpr std::uint64_t kBranchExcess = 10;
// Trees x switches the engine allows itself before it gives more LIDs of
// a switch one tree (random graphs with 8 CAs per switch: 200, 600 and
// 1,000 switches, trees of two LIDs, 0.2, 6 and 25 s on the 2-core bench
// VM — at 2^21, 1,000 switches got trees of four: 1.60x the lower bound in
// 18 s against 1.28 with trees of two (measured before funnelled trees
// moved layers; 1.14 since, in 12-14 s); 2,000, one tree per switch, 92 s,
// 47-51 s since).
constexpr std::uint64_t kTreeWork = std::uint64_t{1} << 22;

// Calls a() and b() at once on two of the pool's threads (one after the
// other on a pool of one). The callers give them disjoint state (a grower
// each, trees on different layers, loads only read), so what they do
// does not depend on the threads.
template <class A, class B>
void both(WorkerPool& pool, A&& a, B&& b) {
  pool.parallel_for(2, 1, [&](std::size_t begin, std::size_t end, unsigned) {
    for (std::size_t i = begin; i < end; ++i) {
      if (i == 0) {
        a();
      } else {
        b();
      }
    }
  });
}

// A grower and its scratch: the engine grows two trees at once where they
// are on different layers.
struct Grow {
  Grow(const SwitchGraph& g, std::span<const std::uint32_t> rev) : grower(g, rev) {}
  TreeGrower grower;
  std::vector<Dep> added;               // the dependencies its last tree added
  std::span<const std::uint32_t> tree;  // its last tree (grower.grow's)
  ArcLoads old_loads, new_loads;
  std::vector<std::uint64_t> load;  // loads of its own, where the other grows on the engine's
};

}  // namespace

std::uint64_t layered_lids_per_tree(std::uint32_t switches, std::uint64_t lids,
                                    std::uint32_t ca_switches, std::uint8_t vls) {
  const std::uint64_t target_trees = std::max<std::uint64_t>(
      {1, switches, std::min<std::uint64_t>(lids, kTreeWork / std::max(switches, 1U))});
  // On several VLs, where the switches with CAs have four LIDs or more
  // (on average), a tree serves two at least: every tree adds its
  // dependencies to a layer, and half as many trees leave the layers
  // sparser, which balanced as well or better in half the time (busiest link over layers_bench's
  // lower bound: dragonfly g=16, 4 CAs per switch: 1.47 in 0.058 s against 1.44 in 0.088 s; random
  // 200, 8 CAs: 1.16 against 1.22; degraded fat tree k=16: 1.56 against 1.67). With two CAs per
  // switch that is a tree per switch, which balanced worse (torus 8x8x8 minus 2%: 6.61 against
  // 6.15). On one VL (no CDG) spreading each LID is what balances: 1.37 against 1.55 on the fat
  // tree.
  const std::uint64_t least = vls > 1 && lids >= 4 * std::uint64_t{ca_switches} ? 2 : 1;
  return std::max<std::uint64_t>(least, (lids + target_trees - 1) / target_trees);
}

std::uint64_t layered_lids_per_tree(const SwitchGraph& g, std::uint8_t vls) {
  std::uint64_t lids = 0;
  for (std::uint32_t l = 1; l <= g.max_lid().value; ++l) {
    const LidAttachment a = g.attachment(Lid{l});
    if (a.routable() && a.port != 0) ++lids;
  }
  std::uint32_t ca_switches = 0;
  for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
    if (g.has_endpoints(SwitchIndex{s})) ++ca_switches;
  }
  return layered_lids_per_tree(g.num_switches(), lids, ca_switches, vls);
}
namespace {

// One routing of g by the general engine, and what decides between two.
struct GeneralPass {
  Routes routes;
  // Trees of the first pass that no free layer took (on the escape
  // layer's CDG, or its routes).
  std::uint64_t on_escape_layer = 0;
  // The CA-to-CA paths the busiest channel carries.
  std::uint64_t busiest = 0;
  // A probe given up at its first tree no free layer took (no routes).
  bool given_up = false;
};

// Routes g over the escape routes `escape` (updn's, with their order);
// with `seeded`, each free layer starts with the escape paths of a
// spanning tree from its root (spanning_tree_cdg).
// A `probe` is given up at the first tree no free layer takes.
Result<GeneralPass> route_general(const SwitchGraph& g, const Routes& escape,
                                  std::span<const std::uint32_t> rev, const EngineOptions& opts,
                                  WorkerPool& pool, std::stop_token stop, bool seeded,
                                  bool probe = false) {
  const std::uint32_t n = g.num_switches();
  const std::uint32_t arcs = g.num_arcs();

  // Sources: CA/router LIDs per switch; switches per part.
  const std::uint32_t max_lid = g.max_lid().value;
  std::vector<std::uint64_t> sources(n, 0);
  std::vector<std::uint32_t> part_size(g.num_components(), 0);
  for (std::uint32_t s = 0; s < n; ++s) ++part_size[g.component(SwitchIndex{s})];
  for (std::uint32_t l = 1; l <= max_lid; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (att.routable() && att.port != 0) ++sources[att.sw.value];
  }
  std::uint64_t total_sources = 0;
  for (const std::uint64_t c : sources) total_sources += c;
  // A hop weighs as much as a few destinations' worth of traffic through
  // one channel: paths stay short while loads are even, and detour by a
  // hop once a channel carries that much more than its alternative.
  const std::uint64_t hop = std::max<std::uint64_t>(1, total_sources);
  // A last-hop alternative may cost up to half a hop more than the tree's.
  const std::uint64_t slack = hop / 2;

  std::vector<OrderedDag> layers;
  // One VL: layer 0 alone, its trees kept to up*/down* turns (checked per
  // turn, no CDG needed): balanced up*/down* routes, with updn's order
  // exported for the rerouter and fast failover.
  const bool updown_only = opts.max_vls == 1;
  const std::span<const std::uint32_t> static_order =
      updown_only ? std::span<const std::uint32_t>(escape.updown_rank)
                  : std::span<const std::uint32_t>();
  const std::shared_ptr<const DagFrame> frame = cdg_frame(g);
  layers.push_back(updown_only ? OrderedDag(frame) : updown_cdg(g, escape.updown_rank, rev, frame));
  const std::size_t escape_deps = layers[0].edges();
  std::vector<std::vector<std::uint32_t>> root_dist;  // per free layer
  // Each free layer has a root, spread over the fabric (each the switch
  // farthest from the roots before it), and a tree tries the layers
  // nearest root first (free_layers_for). A layer starts in its root's
  // up*/down* order; what it accepts depends only on the dependencies it
  // holds, never on its order, so the start decides only how much its
  // searches reorder (index order instead: the same routes in the same
  // time at 1,000 switches, measured 2026-12-05).
  {
    std::uint32_t root = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (escape.updown_rank[s] == 0) root = s;
    }
    std::vector<std::uint32_t> dist, nearest(n, kNoArc);
    while (n != 0 && layers.size() < opts.max_vls) {
      const std::vector<std::uint32_t> pos = bfs_rank(g, root, dist);
      for (std::uint32_t s = 0; s < n; ++s) nearest[s] = std::min(nearest[s], dist[s]);
      root_dist.push_back(dist);
      if (seeded) {
        layers.push_back(spanning_tree_cdg(g, pos, rev, frame));
      } else {
        layers.emplace_back(frame, updown_order(g, pos));
      }
      // The next root: the switch farthest from every root so far (one no
      // root reaches, in another part, first: kNoArc is the largest).
      std::uint32_t far = root;
      for (std::uint32_t s = 0; s < n; ++s) {
        if (nearest[s] > nearest[far]) far = s;
      }
      root = far;
    }
  }
  std::vector<std::uint32_t> try_order;
  std::vector<RefusedDeps> refused(layers.size(), RefusedDeps(frame));

  Routes routes;
  routes.engine = "layered";
  routes.max_lid = g.max_lid();
  // The entries LID by LID while the trees are grown (tree_grower.hpp),
  // the per-switch tables once they are done.
  LidColumns cols(n, routes.max_lid);
  std::vector<std::uint8_t> lid_layer(std::size_t{max_lid} + 1, 0);
  std::vector<std::uint64_t> load(arcs, 0);
  std::vector<std::uint64_t> subtree(n, 0);
  // Trees two at a time (`both`), each on its own grower; grows[0]'s
  // alone where they cannot be.
  std::array<Grow, 2> grows{Grow(g, rev), Grow(g, rev)};
  TreeGrower& grower = grows[0].grower;
  std::vector<std::uint32_t> pick(n, kNoArc);  // one LID's channel per switch
  std::vector<Dep> added;
  std::uint64_t escaped = 0, data_lids = 0, on_escape_layer = 0;

  auto write = [&](std::uint32_t lid, std::uint32_t s, std::uint8_t port) {
    cols.set(s, lid, port);
  };

  // Destinations by switch: its own LID, and its CA/router LIDs, which
  // share one tree (and layer) and weigh on it together.
  std::vector<std::uint32_t> own_lid(n, 0);
  std::vector<std::vector<std::uint32_t>> data_at(n);
  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable()) continue;
    if (att.port == 0) {
      own_lid[att.sw.value] = lid;
    } else {
      data_at[att.sw.value].push_back(lid);
    }
  }
  // Trees ("units"): a switch's CA/router LIDs, up to lids_per_tree per
  // tree. Small trees spread a switch's LIDs far from it (a fat tree's
  // leaf over every uplink of every other leaf), but a tree costs about as
  // much as the switches times their CDGs' density: trees x switches is
  // held to kTreeWork (layered_lids_per_tree).
  const auto ca_switches =
      static_cast<std::uint32_t>(n - std::count(sources.begin(), sources.end(), 0U));
  const std::uint64_t lids_per_tree =
      layered_lids_per_tree(n, total_sources, ca_switches, opts.max_vls);
  std::vector<std::uint32_t> unit_sw;
  std::vector<std::vector<std::uint32_t>> unit_lids;
  for (std::uint32_t t = 0; t < n; ++t) {
    const std::vector<std::uint32_t>& d = data_at[t];
    for (std::size_t i = 0; i < d.size(); i += lids_per_tree) {
      unit_sw.push_back(t);
      unit_lids.emplace_back(d.begin() + static_cast<std::ptrdiff_t>(i),
                             d.begin() + static_cast<std::ptrdiff_t>(
                                             std::min<std::size_t>(i + lids_per_tree, d.size())));
    }
  }
  auto units = static_cast<std::uint32_t>(unit_sw.size());

  // Routes unit u's LIDs along `tree` (their loads appended to `placed`).
  auto place = [&](const TreeGrower& by, std::uint32_t u, std::span<const std::uint32_t> tree,
                   ArcLoads* placed = nullptr) {
    for (const std::uint32_t lid : unit_lids[u]) {
      place_lid(g, by, tree, lid, sources, load, pick, subtree, cols, placed);
    }
  };
  LidLoads lid_loads(g, sources, rev);
  auto for_each_load = [&](std::uint32_t t, std::uint32_t lid, auto&& fn) {
    lid_loads.for_each(cols, t, lid, fn);
  };
  auto load_on = [&](std::uint32_t a, std::uint32_t lid) { return lid_loads.on(cols, a, lid); };
  // The loads the routes to unit u's LIDs put on channels, as the LFTs
  // hold them, into `into`; a list's loads added to the channels' or taken
  // off; and the busiest channel of a list.
  auto loads_of = [&](std::uint32_t u, ArcLoads& into) {
    into.clear();
    for (const std::uint32_t lid : unit_lids[u]) {
      for_each_load(unit_sw[u], lid,
                    [&](std::uint32_t a, std::uint64_t from) { into.emplace_back(a, from); });
    }
  };

  // A switch's own LID: shortest paths, no load, layer 0 (on one VL,
  // updn's own routes: the rerouter keeps switch LIDs up*/down* too).
  // Each grown on its own (no load, no CDG), on every thread of the pool:
  // a LID's entries are its own column.
  std::vector<std::unique_ptr<ShortestTrees>> by_slot(pool.size());
  pool.parallel_for(n, 64, [&](std::size_t begin, std::size_t end, unsigned slot) {
    for (auto t = static_cast<std::uint32_t>(begin); t < end; ++t) {
      if (own_lid[t] == 0) continue;
      if (updown_only) {
        for (std::uint32_t s = 0; s < n; ++s) {
          write(own_lid[t], s, escape.lfts[s].get(Lid{own_lid[t]}));
        }
        continue;
      }
      if (!by_slot[slot]) by_slot[slot] = std::make_unique<ShortestTrees>(g, rev);
      ShortestTrees& own = *by_slot[slot];
      for (const std::uint32_t s : own.grow(t)) {
        write(own_lid[t], s, s == t ? 0 : g.arc(own.out(s)).local_port);
      }
    }
  });
  by_slot.clear();

  // The free layers for a tree towards t, nearest root first: near a
  // layer's root, most of its neighbours reach it going up.
  auto free_layers_for = [&](std::uint32_t t) -> const std::vector<std::uint32_t>& {
    try_order.clear();
    for (std::uint32_t k = 1; k < layers.size(); ++k) try_order.push_back(k);
    std::stable_sort(try_order.begin(), try_order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return root_dist[a - 1][t] < root_dist[b - 1][t];
    });
    return try_order;
  };

  // The layer each tree is on (kNoLayer: on the escape routes).
  constexpr std::uint32_t kNoLayer = ~0U;
  std::vector<std::uint32_t> tree_layer(units, kNoLayer);
  auto want = [&](std::uint32_t u) { return part_size[g.component(SwitchIndex{unit_sw[u]})]; };
  // Grows unit u's tree on layer k over `on` with w's grower (w.tree;
  // its dependencies in w.added and in the layer).
  auto grow_on = [&](Grow& w, std::uint32_t u, std::uint32_t k, std::span<const std::uint64_t> on) {
    w.added.clear();
    w.tree =
        w.grower.grow(unit_sw[u], on, hop, slack, &layers[k], &refused[k], w.added, static_order);
  };
  // Whether unit u's tree fits layer k (w.tree; else the layer is as it
  // was).
  auto fits = [&](Grow& w, std::uint32_t u, std::uint32_t k) {
    grow_on(w, u, k, load);
    if (w.tree.size() == want(u)) return true;
    layers[k].undo(w.added);
    return false;
  };
  // Trees one at a time, each knowing the loads of those before it. Grown
  // two at a time (the second without the first's loads) where their first
  // layers differed, the general engine's routes on an 8x8x8 torus went
  // from 1.28 to 3.14 times the lower bound, for about 1 s of 15 at 2,000
  // switches (random, 1.49 -> 1.46).
  for (std::uint32_t u = 0; u < units; ++u) {
    if (stop.stop_requested()) {  // a tree takes up to ~50 ms at 2,000 switches
      return Error{Errc::kCancelled, "layered: cancelled"};
    }
    const std::uint32_t t = unit_sw[u];
    const std::vector<std::uint32_t>& dlids = unit_lids[u];
    data_lids += dlids.size();
    // The free layers, nearest root first, then the escape layer, then
    // up*/down*.
    Grow& w = grows[0];
    std::uint32_t layer = static_cast<std::uint32_t>(layers.size());
    for (const std::uint32_t k : free_layers_for(t)) {
      if (fits(w, u, k)) {
        layer = k;
        break;
      }
    }
    bool placed = layer < layers.size();
    if (!placed) {
      if (probe) return GeneralPass{{}, 0, 0, true};
      ++on_escape_layer;
      layer = 0;
      placed = fits(w, u, 0);
    }
    if (placed) {
      place(w.grower, u, w.tree);
      tree_layer[u] = layer;
    } else {
      // The escape routes: their dependencies are all in layer 0's CDG.
      escaped += dlids.size();
      layer = 0;
      for (const std::uint32_t lid : dlids) {
        for (std::uint32_t s = 0; s < n; ++s) {
          if (g.component(SwitchIndex{s}) != g.component(SwitchIndex{t})) continue;
          write(lid, s, escape.lfts[s].get(Lid{lid}));
        }
      }
    }
    for (const std::uint32_t lid : dlids) lid_layer[lid] = static_cast<std::uint8_t>(layer);
  }

  // Rip up and reroute: each tree was grown knowing only the trees before
  // it. Grown again on its layer, with every other tree's load known, it
  // may move off the channels that became the busiest; it is kept if the
  // busiest channel it crosses carries no more than before (so no channel
  // ends up busier than the busiest was). Its old dependencies stay in the
  // layer's CDG (a superset of the routes' is still acyclic), so the old
  // tree still fits; a new one that does not is taken back.
  std::uint64_t regrown = 0, moved = 0;
  std::vector<std::uint8_t> old_ports;
  // Unit u's entries kept before it is grown again, and put back.
  auto save_ports = [&](std::uint32_t u) {
    old_ports.clear();
    for (const std::uint32_t lid : unit_lids[u]) {
      for (std::uint32_t s = 0; s < n; ++s) old_ports.push_back(cols.get(s, lid));
    }
  };
  auto put_back_ports = [&](std::uint32_t u) {
    std::size_t i = 0;
    for (const std::uint32_t lid : unit_lids[u]) {
      for (std::uint32_t s = 0; s < n; ++s) write(lid, s, old_ports[i++]);
    }
  };
  ArcLoads old_loads, new_loads;  // the branch tries' (below)
  // Places unit u along w.tree, grown on layer k with u's old loads off
  // the channels (the busiest channel they crossed carried `before`);
  // keeps it if the busiest channel it crosses carries no more than that
  // (`strict`: less), else takes it back, dependencies and all (the old
  // loads stay off).
  auto keep_if_better = [&](Grow& w, std::uint32_t u, std::uint32_t k, std::uint64_t before,
                            bool strict) {
    if (w.tree.size() != want(u)) {
      layers[k].undo(w.added);
      return false;
    }
    save_ports(u);
    w.new_loads.clear();
    place(w.grower, u, w.tree, &w.new_loads);
    const std::uint64_t after = busiest_of(load, w.new_loads);
    if (after < before || (!strict && after == before)) return true;
    take_loads(load, w.new_loads);
    put_back_ports(u);
    layers[k].undo(w.added);
    return false;
  };
  // A try of a tree grown again: its layer, and a channel to avoid
  // (kNoArc: none), which weighs as much as a detour through every switch.
  struct Try {
    std::uint32_t layer, avoid;
  };
  // The loads w grows a try over: the engine's, or a copy of them with
  // the channel to avoid weighed.
  auto loads_for = [&](Grow& w, const Try& tr) -> std::span<const std::uint64_t> {
    if (tr.avoid == kNoArc) return load;
    w.load = load;
    w.load[tr.avoid] += hop * n;
    return w.load;
  };
  // Grows unit u again, knowing every other tree's load, on each try in
  // turn (on distinct layers) until one is kept (keep_if_better): its
  // index, or tries.size() with the old routes put back. Two tries at
  // once, the second's dependencies taken back if the first is kept (what
  // its layer refused stays refused, as any refusal).
  auto regrow_tries = [&](std::uint32_t u, std::span<const Try> tries, bool strict) {
    ArcLoads& old = grows[0].old_loads;
    loads_of(u, old);
    const std::uint64_t before = busiest_of(load, old);
    take_loads(load, old);
    for (std::size_t i = 0; i < tries.size(); i += 2) {
      if (i + 1 == tries.size()) {
        grow_on(grows[0], u, tries[i].layer, loads_for(grows[0], tries[i]));
        if (keep_if_better(grows[0], u, tries[i].layer, before, strict)) return i;
        break;
      }
      const std::span<const std::uint64_t> on_a = loads_for(grows[0], tries[i]);
      const std::span<const std::uint64_t> on_b = loads_for(grows[1], tries[i + 1]);
      both(
          pool, [&] { grow_on(grows[0], u, tries[i].layer, on_a); },
          [&] { grow_on(grows[1], u, tries[i + 1].layer, on_b); });
      if (keep_if_better(grows[0], u, tries[i].layer, before, strict)) {
        layers[tries[i + 1].layer].undo(grows[1].added);
        return i;
      }
      if (keep_if_better(grows[1], u, tries[i + 1].layer, before, strict)) return i + 1;
    }
    add_loads(load, old);
    return tries.size();
  };
  // Grows units u and v again at once, each on its own layer (distinct; on
  // one VL both on layer 0, whose trees keep to up*/down* turns and add no
  // dependencies): v over the loads with u's old routes still on, not its
  // new ones. Returns how many were kept.
  auto regrow_two = [&](std::uint32_t u, std::uint32_t v) {
    Grow& a = grows[0];
    Grow& b = grows[1];
    loads_of(u, a.old_loads);
    loads_of(v, b.old_loads);
    const std::uint64_t before_u = busiest_of(load, a.old_loads);
    const std::uint64_t before_v = busiest_of(load, b.old_loads);
    b.load = load;
    take_loads(b.load, b.old_loads);
    take_loads(load, a.old_loads);
    both(
        pool, [&] { grow_on(a, u, tree_layer[u], load); },
        [&] { grow_on(b, v, tree_layer[v], b.load); });
    std::uint64_t kept = 0;
    if (keep_if_better(a, u, tree_layer[u], before_u, false)) {
      ++kept;
    } else {
      add_loads(load, a.old_loads);
    }
    take_loads(load, b.old_loads);
    if (keep_if_better(b, v, tree_layer[v], before_v, false)) {
      ++kept;
    } else {
      add_loads(load, b.old_loads);
    }
    return kept;
  };
  std::vector<Try> tries;
  // Whether the routes to unit u's first LID pour more than
  // kFunnelled times their even share over t's links through one channel:
  // a tree that its layer's CDG left few ways into part of the fabric.
  auto funnelled = [&](std::uint32_t u) {
    const std::uint32_t t = unit_sw[u];
    std::uint64_t busiest = 0;
    for_each_load(t, unit_lids[u].front(),
                  [&](std::uint32_t, std::uint64_t from) { busiest = std::max(busiest, from); });
    // The sources the routes serve: every switch with CAs in t's part
    // but t.
    const std::uint32_t part = g.component(SwitchIndex{t});
    std::uint64_t from = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (s != t && g.component(SwitchIndex{s}) == part) from += sources[s];
    }
    const std::uint64_t links = g.first_arc(SwitchIndex{t + 1}) - g.first_arc(SwitchIndex{t});
    return busiest * links > kFunnelled * from;
  };
  for (std::uint32_t pass = 0; pass < kRefinePasses; ++pass) {
    for (std::uint32_t u = 0; u < units; ++u) {
      if (tree_layer[u] == kNoLayer) continue;
      if (stop.stop_requested()) return Error{Errc::kCancelled, "layered: cancelled"};
      // A funnelled tree tries the other free layers first, nearest root
      // first: its own layer's CDG is what funnels it. Its dependencies
      // stay in the layer it leaves (a superset stays acyclic).
      if (!updown_only && funnelled(u)) {
        tries.clear();
        for (const std::uint32_t k : free_layers_for(unit_sw[u])) {
          if (k != tree_layer[u]) tries.push_back(Try{k, kNoArc});
        }
        tries.push_back(Try{tree_layer[u], kNoArc});
        const std::size_t kept = regrow_tries(u, tries, false);
        if (kept + 1 < tries.size()) {
          tree_layer[u] = tries[kept].layer;
          for (const std::uint32_t lid : unit_lids[u]) {
            lid_layer[lid] = static_cast<std::uint8_t>(tries[kept].layer);
          }
          ++moved;
        }
        if (kept < tries.size()) ++regrown;
        continue;
      }
      // With the next tree at once, where it is on another layer (on one
      // VL, always) and not funnelled.
      const std::uint32_t v = u + 1;
      if (v < units && tree_layer[v] != kNoLayer &&
          (updown_only || (tree_layer[v] != tree_layer[u] && !funnelled(v)))) {
        regrown += regrow_two(u, v);
        ++u;
        continue;
      }
      tries.assign(1, Try{tree_layer[u], kNoArc});
      if (regrow_tries(u, tries, false) == 0) ++regrown;
    }
  }

  // Hot spots: after the rip-up pass one tree may still pour a large share
  // of the fabric's sources over one channel (random 2,000 switches: one
  // tree of eight LIDs made 52,544 of the busiest channel's 57,408 paths,
  // its layer's CDG leaving it one way in). The tree that pours the most
  // over the busiest channel gives the half of its LIDs that load it most
  // (all of a one-LID tree's) a tree of their own: on its layer, grown with
  // the busiest channel weighing as a detour through every switch, else on
  // another free layer or the escape layer; kept only if the busiest
  // channel it crosses carries less than the busiest did. A half no layer
  // takes so rejoins its tree, and the tree is settled. Again, while the
  // busiest channel keeps dropping.
  std::uint64_t hot_moves = 0, branch_moves = 0, split_lids = 0;
  // Branch layers (EngineOptions::branch_layers): a hot-spot tree no
  // single layer takes off the busiest channel is grown again with a
  // layer per branch (TreeGrower::grow_split), its layer first, then the
  // free layers nearest root first, then the escape layer; kept if the
  // busiest channel it crosses carries less than the busiest did. A try
  // that crosses channels as busy avoids them on the next, up to
  // kBranchTries. By LID: the layer of each switch's path to it (empty:
  // the LID's layer).
  std::vector<std::vector<std::uint8_t>> path_layers(std::size_t{max_lid} + 1);
  std::vector<std::uint8_t> added_layer;
  std::vector<std::uint32_t> pref, avoided;
  auto regrow_branches = [&](std::uint32_t u, std::uint32_t avoid) {
    const std::uint32_t t = unit_sw[u];
    loads_of(u, old_loads);
    const std::uint64_t before = busiest_of(load, old_loads);
    take_loads(load, old_loads);
    // The tree's own layer first, the one its LIDs stay labelled with
    // (tree_layer[u]): grow_split gives pref's first to t and the switches
    // next to it. Tried with the free layers first for trees on layer 0,
    // the verifier found a credit loop on the 8x8x8 torus minus 2%
    // (general engine, 2026-12-07; not traced further).
    pref.assign(1, tree_layer[u]);
    for (const std::uint32_t k : free_layers_for(t)) {
      if (k != tree_layer[u]) pref.push_back(k);
    }
    if (tree_layer[u] != 0) pref.push_back(0);
    save_ports(u);
    // A channel to avoid weighs as much as a detour through every switch.
    const std::uint64_t penalty = hop * n;
    avoided.assign(1, avoid);
    for (std::uint32_t attempt = 0; attempt < kBranchTries; ++attempt) {
      added.clear();
      added_layer.clear();
      for (const std::uint32_t a : avoided) load[a] += penalty;
      const std::span<const std::uint32_t> tree =
          grower.grow_split(t, load, hop, slack, layers, refused, pref, added, added_layer);
      for (const std::uint32_t a : avoided) load[a] -= penalty;
      if (tree.size() != part_size[g.component(SwitchIndex{t})]) {
        take_back_split(layers, added, added_layer);
        break;
      }
      new_loads.clear();
      place(grower, u, tree, &new_loads);
      if (busiest_of(load, new_loads) < before) {
        // Every branch on the tree's layer: one layer after all, its LIDs
        // take no layers per source (fast failover and the SA treat them
        // as any other). layers_bench, one CA a switch: random 100 of
        // degree 8, 6 of 20 such trees are on several layers; random
        // 2,000 of degree 16, all 67.
        if (std::any_of(tree.begin(), tree.end(),
                        [&](std::uint32_t s) { return grower.path_layer(s) != tree_layer[u]; })) {
          for (const std::uint32_t lid : unit_lids[u]) {
            path_layers[lid].assign(n, static_cast<std::uint8_t>(tree_layer[u]));
            for (const std::uint32_t s : tree) path_layers[lid][s] = grower.path_layer(s);
            ++split_lids;
          }
        }
        return true;
      }
      for (const auto& [a, from] : new_loads) {
        if (load[a] >= before && std::find(avoided.begin(), avoided.end(), a) == avoided.end()) {
          avoided.push_back(a);
        }
      }
      take_loads(load, new_loads);
      put_back_ports(u);
      take_back_split(layers, added, added_layer);
    }
    add_loads(load, old_loads);
    return false;
  };
  // Whether a channel carrying `busiest` is more than kBranchExcess
  // percent over the mean channel load (branch layers only then).
  auto far_from_even = [&](std::uint64_t busiest) {
    const std::uint64_t total = std::accumulate(load.begin(), load.end(), std::uint64_t{0});
    return busiest * arcs * 100 > total * (100 + kBranchExcess);
  };
  if (!updown_only && !load.empty()) {            // no channel: nothing to spread
    std::vector<std::uint8_t> settled(units, 0);  // by unit: no layer took it
    // (load on hot, LID) of the worst tree's LIDs, and of the tree weighed.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> by_hot, candidate;
    HotSpotPace pace(load, std::uint64_t{units} * kHotSpotStepsPerTree);
    for (std::uint32_t hot = pace.next(); hot != kNoArc; hot = pace.next()) {
      if (stop.stop_requested()) return Error{Errc::kCancelled, "layered: cancelled"};
      // The tree pouring the most over `hot` (cheap test first: does one
      // of its LIDs leave hot's switch through it at all).
      const std::uint32_t x = g.arc_source(hot).value;
      const std::uint8_t port = g.arc(hot).local_port;
      std::uint32_t worst = units;  // none
      std::uint64_t worst_from = 0;
      for (std::uint32_t u = 0; u < units; ++u) {
        if (tree_layer[u] == kNoLayer || settled[u] != 0) continue;
        const std::vector<std::uint32_t>& ul = unit_lids[u];
        if (std::none_of(ul.begin(), ul.end(),
                         [&](std::uint32_t lid) { return cols.get(x, lid) == port; })) {
          continue;
        }
        // Its LIDs' loads on hot, kept (in by_hot) for the worst tree.
        std::uint64_t from = 0;
        candidate.clear();
        for (const std::uint32_t lid : ul) {
          const std::uint64_t lid_from = load_on(hot, lid);
          candidate.emplace_back(lid_from, lid);
          from += lid_from;
        }
        if (from > worst_from) {
          worst = u;
          worst_from = from;
          by_hot.swap(candidate);
        }
      }
      if (worst == units) break;
      // Split off the half of its LIDs that load `hot` most, as a unit of
      // its own (or move the whole of a one-LID tree).
      std::uint32_t v = worst;
      const std::size_t keep = unit_lids[worst].size() / 2;
      if (keep > 0) {
        std::stable_sort(by_hot.begin(), by_hot.end());
        for (std::size_t i = 0; i < by_hot.size(); ++i) unit_lids[worst][i] = by_hot[i].second;
        v = units++;
        unit_sw.push_back(unit_sw[worst]);
        unit_lids.emplace_back(unit_lids[worst].begin() + static_cast<std::ptrdiff_t>(keep),
                               unit_lids[worst].end());
        unit_lids[worst].resize(keep);
        tree_layer.push_back(tree_layer[worst]);
        settled.push_back(0);
      }
      // Its own layer, around the busiest channel; then the free layers
      // and the escape layer.
      tries.assign(1, Try{tree_layer[v], hot});
      for (const std::uint32_t k : free_layers_for(unit_sw[v])) {
        if (k != tree_layer[v]) tries.push_back(Try{k, kNoArc});
      }
      if (tree_layer[v] != 0) tries.push_back(Try{0, kNoArc});
      const std::size_t kept = regrow_tries(v, tries, /*strict=*/true);
      if (kept < tries.size()) {
        tree_layer[v] = tries[kept].layer;
        for (const std::uint32_t lid : unit_lids[v]) {
          lid_layer[lid] = static_cast<std::uint8_t>(tries[kept].layer);
        }
        ++hot_moves;
        continue;
      }
      if (opts.branch_layers && far_from_even(load[hot]) && regrow_branches(v, hot)) {
        ++branch_moves;
        settled[v] = 1;  // its routes are kept as they are
        continue;
      }
      settled[worst] = 1;
      if (v != worst) {  // the half rejoins its tree, whose routes it kept
        unit_lids[worst].insert(unit_lids[worst].end(), unit_lids[v].begin(), unit_lids[v].end());
        --units;
        unit_sw.pop_back();
        unit_lids.pop_back();
        tree_layer.pop_back();
        settled.pop_back();
      }
    }
  }
  // Layers in use, numbered from 0 without gaps. The escape layer stays
  // VL 0 even when no tree uses it: multicast rides VL 0, its trees
  // climbing and descending in the escape order, and layer 0's CDG holds
  // every dependency of such paths (mcast.hpp, Routes::vl0_rank).
  std::vector<std::uint8_t> used(layers.size(), 0);
  used[0] = 1;
  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    if (att.routable() && att.port != 0) used[lid_layer[lid]] = 1;
    for (const std::uint8_t k : path_layers[lid]) used[k] = 1;
  }
  std::vector<std::uint8_t> renum(layers.size(), 0);
  std::uint8_t num = 0;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    if (used[k] != 0) renum[k] = num++;
  }
  for (std::uint8_t& l : lid_layer) l = renum[l];
  for (std::vector<std::uint8_t>& by_switch : path_layers) {
    for (std::uint8_t& l : by_switch) l = renum[l];
  }
  routes.num_vls = std::max<std::uint8_t>(1, num);
  if (routes.num_vls > 1) {
    routes.lid_layer = std::move(lid_layer);
    if (split_lids != 0) routes.path_layers = std::move(path_layers);
  }

  routes.load = entry_load(g, cols);
  routes.lfts = cols.lfts(routes.max_lid);
  std::uint64_t deps = 0;
  for (const OrderedDag& d : layers) deps += d.edges();
  const auto trees = static_cast<std::uint32_t>(
      units - std::count(tree_layer.begin(), tree_layer.end(), kNoLayer));
  if (updown_only) {
    // Every CA/router route is up*/down* in updn's order and switch LIDs
    // take updn's own routes: the promise of Routes::updown_rank, so the
    // rerouter and fast failover repair these tables in place.
    routes.updown_rank = escape.updown_rank;
    routes.notes.push_back(fmt::format(
        "layered: one data VL: balanced up*/down* routes in updn's order ({} of {} destination "
        "LIDs on updn's own routes; {} of {} trees regrown off the busiest channels)",
        escaped, data_lids, regrown, trees));
  } else {
    routes.vl0_rank = escape.updown_rank;
    routes.notes.push_back(fmt::format(
        "layered: {} of {} data VL(s) used (VL 0: the up*/down* escape layer, with multicast); {} "
        "of {} destination LIDs on up*/down* escape routes; "
        "{} channel dependencies ({} of them up*/down*); {} of {} trees regrown off the busiest "
        "channels ({} of them funnelled trees moved to another layer); {} hot-spot moves (LIDs "
        "of the tree loading the busiest channel most given a tree of their own); {} hot-spot "
        "trees with a layer per branch ({} destination LIDs on several layers); {} searches for "
        "a cycle given up at {} nodes, where the longer ones had almost all found one",
        routes.num_vls, opts.max_vls, escaped, data_lids, deps, escape_deps, regrown, trees, moved,
        hot_moves, branch_moves, split_lids,
        grows[0].grower.searches_given_up() + grows[1].grower.searches_given_up(),
        grower.search_bet().scan));
  }
  const std::uint64_t busiest = load.empty() ? 0 : *std::max_element(load.begin(), load.end());
  return GeneralPass{std::move(routes), on_escape_layer, busiest, false};
}

}  // namespace

Result<Routes> layered_general_routes(const Topology& topo, const LidMap& lids,
                                      const EngineOptions& opts, WorkerPool& pool,
                                      std::stop_token stop, GeneralLayers layers) {
  SUBNETD_TRY(layered_check_budget(opts));
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  // The escape routes, and the order that defines them.
  Routes escape;
  SUBNETD_TRY_ASSIGN(escape, UpdnEngine{}.compute(topo, lids, opts, pool, stop));
  if (escape.updown_rank.size() != g.num_switches()) {
    return Error{Errc::kInternal, "layered: updn gave no up/down order"};
  }
  const std::vector<std::uint32_t> rev = reverse_arcs(g);
  // Free layers that refuse trees whole: their CDGs closed around the
  // fabric's rings before those trees came. Routed again with every free
  // layer holding the escape paths of a spanning tree from its root from
  // the start (spanning_tree_cdg), as Nue's layers do, a tree has a way
  // in, and the better balanced routes are kept. layers_bench, general
  // engine, 2 CAs a switch, 8 VLs, the busiest link over the bound, free
  // against seeded: torus 8x8x8 1.28 / 1.08, minus 2% 3.92 / 1.06, minus
  // 10% 12.53 / 1.13; mesh 8x8x8 1.27 / 1.03; hypercube 8 1.11 / 1.09.
  // Seeded with every up*/down* dependency of the root's order instead,
  // the turns off the tree's links closed the layers as early: 1.35, 1.39,
  // 1.97, 1.03, 1.22. Random graphs, the dragonfly and degraded fat trees
  // put no tree on the escape layer on 8 VLs, and route once; seeded
  // they balance worse (random 200 with 8 CAs 1.08 -> 1.13, random 1,000
  // with one CA 1.30 -> 1.62, the fat tree k=16 minus 5% 1.19 -> 1.25).
  // First the free routing as a probe, given up at the first tree no free
  // layer takes (on one VL there is none: routed once); then, if it was,
  // both at once, each on one of the pool's threads (a pool of one
  // within: the routes do not depend on the threads), where one after
  // the other, each on two, took 1.3-1.4x as long.
  const bool two_ways = opts.max_vls > 1;
  GeneralPass free, seeded;
  GeneralPass* kept = &free;
  if (layers == GeneralLayers::kSeeded && two_ways) {
    // Seeded alone (layered_grid_layers), on every thread of the pool.
    SUBNETD_TRY_ASSIGN(seeded, route_general(g, escape, rev, opts, pool, stop, true));
    kept = &seeded;
    kept->routes.notes.push_back(fmt::format(
        "layered: routed on seeded layers alone, each holding the escape paths of a spanning tree "
        "from its root (free layers not tried: on grids of more than {} switches they lose by "
        "far)",
        kLayeredGridCompareMaxSwitches));
  } else {
    SUBNETD_TRY_ASSIGN(free, route_general(g, escape, rev, opts, pool, stop, false, two_ways));
  }
  if (free.given_up) {
    std::array<Result<GeneralPass>, 2> runs{
        Result<GeneralPass>(Error{Errc::kInternal, "layered: free layers not routed"}),
        Result<GeneralPass>(Error{Errc::kInternal, "layered: seeded layers not routed"})};
    pool.parallel_for(2, 1, [&](std::size_t begin, std::size_t end, unsigned) {
      for (std::size_t i = begin; i < end; ++i) {
        WorkerPool alone(1);
        runs[i] = route_general(g, escape, rev, opts, alone, stop, i == 1);
      }
    });
    SUBNETD_TRY_ASSIGN(free, std::move(runs[0]));
    SUBNETD_TRY_ASSIGN(seeded, std::move(runs[1]));
    if (seeded.busiest < free.busiest) kept = &seeded;
    kept->routes.notes.push_back(fmt::format(
        "layered: {} of the first pass's trees found no free layer: routed again with each free "
        "layer seeded with the escape paths of a spanning tree from its root; kept {}, whose "
        "busiest channel carries {} CA-to-CA paths against {}",
        free.on_escape_layer, kept == &seeded ? "the seeded layers" : "the free layers",
        kept->busiest, kept == &seeded ? free.busiest : seeded.busiest));
  }
  for (const std::string& note : escape.notes) kept->routes.notes.push_back(note);
  return std::move(kept->routes);
}

}  // namespace subnetd::routing

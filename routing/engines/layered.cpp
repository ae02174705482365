#include "routing/engines/layered.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_set>
#include <utility>
#include <vector>

#include "routing/engines/dor.hpp"
#include "routing/engines/updn.hpp"
#include "routing/grid_shape.hpp"
#include "routing/ordered_dag.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

using Dep = std::pair<std::uint32_t, std::uint32_t>;

// Passes of rip-up-and-reroute after every tree is placed.
constexpr std::uint32_t kRefinePasses = 1;
// Trees x switches the engine allows itself before it gives more LIDs of
// a switch one tree (random graphs with 8 CAs per switch: 200, 600 and
// 1,000 switches, trees of two LIDs, 0.2, 6 and 25 s on the 2-core bench
// VM — at 2^21, 1,000 switches got trees of four: 1.60x the lower bound in
// 18 s against 1.28 now; 2,000, one tree per switch, 92 s).
constexpr std::uint64_t kTreeWork = std::uint64_t{1} << 22;

// Switches ranked by breadth-first distance from `root` (ties by index),
// then those `root` does not reach, by index. `dist` gives the distances
// (kNoArc when not reached).
std::vector<std::uint32_t> bfs_rank(const SwitchGraph& g, std::uint32_t root,
                                    std::vector<std::uint32_t>& dist) {
  const std::uint32_t n = g.num_switches();
  dist.assign(n, kNoArc);
  std::vector<std::uint32_t> queue{root};
  dist[root] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::uint32_t v = queue[head];
    for (const SwitchArc& a : g.arcs(SwitchIndex{v})) {
      if (dist[a.to.value] == kNoArc) {
        dist[a.to.value] = dist[v] + 1;
        queue.push_back(a.to.value);
      }
    }
  }
  for (std::uint32_t v = 0; v < n; ++v) {
    if (dist[v] == kNoArc) queue.push_back(v);
  }
  std::vector<std::uint32_t> pos(n);
  for (std::uint32_t i = 0; i < n; ++i) pos[queue[i]] = i;
  return pos;
}

// Channels in an up*/down* order for the switch ranking `pos` (lower is
// nearer the root): up-channels by their head's position, last first, then
// down-channels by their head's position. Dependencies of up*/down* routes
// agree with it.
std::vector<std::uint32_t> updown_order(const SwitchGraph& g, std::span<const std::uint32_t> pos) {
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

// The escape layer's CDG before any tree: every dependency of an up*/down*
// route (into a switch and on, never down then up), in updown_order.
OrderedDag updown_cdg(const SwitchGraph& g, std::span<const std::uint32_t> pos,
                      std::span<const std::uint32_t> rev) {
  auto up = [&](std::uint32_t a) { return pos[g.arc(a).to.value] < pos[g.arc_source(a).value]; };
  OrderedDag dag(updown_order(g, pos));
  for (std::uint32_t v = 0; v < g.num_switches(); ++v) {
    const std::uint32_t first = g.first_arc(SwitchIndex{v});
    const std::uint32_t end = g.first_arc(SwitchIndex{v + 1});
    for (std::uint32_t out = first; out < end; ++out) {
      for (std::uint32_t o = first; o < end; ++o) {
        const std::uint32_t in = rev[o];  // into v from o's neighbour
        if (in == kNoArc || o == out) continue;
        if (!up(in) && up(out)) continue;  // down, then up
        dag.add(in, out);
      }
    }
  }
  return dag;
}

// Grows in-trees towards one switch. A switch two hops from the
// destination may also keep other channels into the destination's
// neighbours (kMaxOut in all): the destination's LIDs spread over them, as
// the last hops are where one tree's traffic converges.
class TreeGrower {
 public:
  static constexpr std::uint32_t kMaxOut = 4;

  TreeGrower(const SwitchGraph& g, std::span<const std::uint32_t> rev)
      : g_(g),
        rev_(rev),
        outs_(std::size_t{g.num_switches()} * kMaxOut, kNoArc),
        num_outs_(g.num_switches(), 0),
        cost_(g.num_switches(), 0),
        done_(g.num_switches(), 0) {}

  // Grows the tree towards switch t over channels weighted by `load` plus
  // one `hop`. With a `dag`, a switch joins through a channel only if the
  // dependencies it adds (the channel, then each channel its head forwards
  // on) keep the dag acyclic (those it newly took are appended to `added`;
  // those it refused are remembered in `refused` and refused again without
  // a search). A switch two hops from t also keeps each other channel
  // into a neighbour of t whose cost is within `slack` of its own, on the
  // same condition. With an `updown` ranking instead (dag, refused and
  // added unused), the condition is up*/down*'s: no channel that goes down
  // (to a switch ranked after its source) is followed by one that goes up.
  // Returns the switches reached, t first, each after every switch it
  // forwards to; outs() gives their channels, the tree's first.
  std::span<const std::uint32_t> grow(std::uint32_t t, std::span<const std::uint64_t> load,
                                      std::uint64_t hop, std::uint64_t slack, OrderedDag* dag,
                                      std::unordered_set<std::uint64_t>* refused,
                                      std::vector<Dep>& added,
                                      std::span<const std::uint32_t> updown = {}) {
    ++epoch_;
    reached_.clear();
    heap_ = {};
    auto up = [&](std::uint32_t a) {
      return updown[g_.arc(a).to.value] < updown[g_.arc_source(a).value];
    };
    // Adds every dependency of channel `in` onto its head's channels; on a
    // refusal takes back what it added and returns false.
    auto take = [&](std::uint32_t in) {
      if (!updown.empty()) {
        if (up(in)) return true;
        const auto outs_in = outs(g_.arc(in).to.value);
        return std::none_of(outs_in.begin(), outs_in.end(), up);
      }
      if (dag == nullptr) return true;
      const std::uint32_t v = g_.arc(in).to.value;
      const std::size_t mark = added.size();
      for (const std::uint32_t out : outs(v)) {
        const std::uint64_t key = (std::uint64_t{in} << 32) | out;
        const OrderedDag::Add r =
            refused->contains(key) ? OrderedDag::Add::kCycle : dag->add(in, out);
        if (r == OrderedDag::Add::kNew) added.emplace_back(in, out);
        if (r == OrderedDag::Add::kCycle) {
          refused->insert(key);
          dag->undo(std::span<const Dep>(added).subspan(mark));
          added.resize(mark);
          return false;
        }
      }
      return true;
    };
    auto into_t = [&](std::uint32_t w) {
      return num_outs_[w] != 0 && g_.arc(outs_[std::size_t{w} * kMaxOut]).to.value == t;
    };
    auto join = [&](std::uint32_t s, std::uint32_t arc, std::uint64_t cost) {
      done_[s] = epoch_;
      cost_[s] = cost;
      num_outs_[s] = 0;
      if (arc != kNoArc) outs_[std::size_t{s} * kMaxOut + num_outs_[s]++] = arc;
      reached_.push_back(s);
      const std::uint32_t first = g_.first_arc(SwitchIndex{s});
      const std::uint32_t end = g_.first_arc(SwitchIndex{s + 1});
      const bool constrained = dag != nullptr || !updown.empty();
      if (constrained && arc != kNoArc && into_t(g_.arc(arc).to.value)) {
        for (std::uint32_t o = first; o < end && num_outs_[s] < kMaxOut; ++o) {
          const std::uint32_t w = g_.arc(o).to.value;
          if (o == arc || done_[w] != epoch_ || !into_t(w)) continue;
          if (cost_[w] + hop + load[o] > cost + slack) continue;
          if (take(o)) outs_[std::size_t{s} * kMaxOut + num_outs_[s]++] = o;
        }
      }
      for (std::uint32_t o = first; o < end; ++o) {
        const std::uint32_t in = rev_[o];
        if (in == kNoArc || done_[g_.arc(o).to.value] == epoch_) continue;
        heap_.emplace(cost + hop + load[in], in);
      }
    };
    join(t, kNoArc, 0);
    while (!heap_.empty()) {
      const auto [cost, in] = heap_.top();
      heap_.pop();
      const std::uint32_t u = g_.arc_source(in).value;
      if (done_[u] == epoch_ || !take(in)) continue;
      join(u, in, cost);
    }
    return reached_;
  }
  std::span<const std::uint32_t> outs(std::uint32_t s) const {
    return std::span<const std::uint32_t>(outs_).subspan(std::size_t{s} * kMaxOut, num_outs_[s]);
  }

 private:
  const SwitchGraph& g_;
  std::span<const std::uint32_t> rev_;
  std::vector<std::uint32_t> outs_;
  std::vector<std::uint8_t> num_outs_;
  std::vector<std::uint64_t> cost_;
  std::vector<std::uint32_t> done_;
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> reached_;
  using Item = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap_;
};

// The VL budget both the general engine and dimension order obey.
Result<void> check_budget(const EngineOptions& opts) {
  if (opts.max_vls < 1 || opts.max_vls > 15) {
    return Error{Errc::kOutOfRange,
                 fmt::format("layered: a budget of {} data VLs (1-15)", opts.max_vls)};
  }
  return {};
}

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

Result<Routes> layered_general_routes(const Topology& topo, const LidMap& lids,
                                      const EngineOptions& opts, WorkerPool& pool,
                                      std::stop_token stop) {
  SUBNETD_TRY(check_budget(opts));
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  // The escape routes, and the order that defines them.
  Routes escape;
  SUBNETD_TRY_ASSIGN(escape, UpdnEngine{}.compute(topo, lids, opts, pool, stop));
  const std::uint32_t n = g.num_switches();
  const std::uint32_t arcs = g.num_arcs();
  if (escape.updown_rank.size() != n) {
    return Error{Errc::kInternal, "layered: updn gave no up/down order"};
  }
  std::vector<std::uint32_t> rev(arcs, kNoArc);
  for (std::uint32_t a = 0; a < arcs; ++a) {
    rev[a] = g.arc_at_port(g.arc(a).to, g.arc(a).remote_port);
  }

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
  layers.push_back(updown_only ? OrderedDag(arcs) : updown_cdg(g, escape.updown_rank, rev));
  const std::size_t escape_deps = layers[0].edges();
  std::vector<std::vector<std::uint32_t>> root_dist;  // per free layer
  // Free layers start in the up*/down* orders of roots spread over the
  // fabric (each the switch farthest from the roots before it), so a dense
  // layer still lets routes go up, then down — towards a different root
  // in each layer — rather than along one arbitrary order.
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
      layers.emplace_back(updown_order(g, pos));
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
  // Dependencies a layer refused: refused again without a search (it may
  // have been refused for a tree taken back since; refusing stays safe).
  std::vector<std::unordered_set<std::uint64_t>> refused(layers.size());

  Routes routes;
  routes.engine = "layered";
  routes.max_lid = g.max_lid();
  routes.lfts.resize(n);
  for (Lft& lft : routes.lfts) lft.resize(routes.max_lid);
  std::vector<std::uint8_t> lid_layer(std::size_t{max_lid} + 1, 0);
  std::vector<std::uint64_t> load(arcs, 0);
  const std::vector<std::uint64_t> no_load(arcs, 0);
  std::vector<std::uint64_t> subtree(n, 0);
  std::vector<std::uint64_t> entries(arcs, 0);
  TreeGrower grower(g, rev);
  std::vector<std::uint32_t> pick(n, kNoArc);  // one LID's channel per switch
  std::vector<Dep> added;
  std::uint64_t escaped = 0, data_lids = 0;

  auto write = [&](std::uint32_t lid, std::uint32_t s, std::uint8_t port) {
    routes.lfts[s].data()[lid] = port;
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
  const auto units = static_cast<std::uint32_t>(unit_sw.size());

  // Each LID of t takes, at every switch of `tree`, the channel whose
  // load plus the load of the channel after it is least; every channel
  // gains the sources whose route to the LID crosses it.
  auto place = [&](std::uint32_t u, std::span<const std::uint32_t> tree) {
    const std::uint32_t t = unit_sw[u];
    for (const std::uint32_t lid : unit_lids[u]) {
      for (const std::uint32_t s : tree) {
        subtree[s] = sources[s];
        if (s == t) continue;
        std::uint32_t best = kNoArc;
        std::uint64_t best_load = 0;
        for (const std::uint32_t a : grower.outs(s)) {
          const std::uint32_t w = g.arc(a).to.value;
          const std::uint64_t l = load[a] + (w == t ? 0 : load[pick[w]]);
          if (best == kNoArc || l < best_load) {
            best = a;
            best_load = l;
          }
        }
        pick[s] = best;
      }
      for (auto it = tree.rbegin(); it != tree.rend(); ++it) {
        const std::uint32_t s = *it;
        if (s == t) {
          write(lid, s, g.attachment(Lid{lid}).port);
          continue;
        }
        const std::uint32_t a = pick[s];
        write(lid, s, g.arc(a).local_port);
        load[a] += subtree[s];
        subtree[g.arc(a).to.value] += subtree[s];
      }
    }
  };
  // Adds (sign +1) or takes off (-1) the load of the routes to t's LIDs as
  // the LFTs hold them (sign 0: neither); returns the largest load on a
  // channel they cross.
  auto weigh = [&](std::uint32_t u, int sign) {
    const std::uint32_t t = unit_sw[u];
    const std::uint32_t part = g.component(SwitchIndex{t});
    std::uint64_t busiest = 0;
    for (const std::uint32_t lid : unit_lids[u]) {
      for (std::uint32_t s = 0; s < n; ++s) {
        if (sources[s] == 0 || s == t || g.component(SwitchIndex{s}) != part) continue;
        for (std::uint32_t cur = s, hops = 0; cur != t && hops < n; ++hops) {
          const std::uint32_t a = g.arc_at_port(SwitchIndex{cur}, routes.lfts[cur].get(Lid{lid}));
          if (a == kNoArc) break;
          if (sign > 0) load[a] += sources[s];
          if (sign < 0) load[a] -= sources[s];
          busiest = std::max(busiest, load[a]);
          cur = g.arc(a).to.value;
        }
      }
    }
    return busiest;
  };

  // A switch's own LID: shortest paths, no load, layer 0 (on one VL,
  // updn's own routes: the rerouter keeps switch LIDs up*/down* too).
  for (std::uint32_t t = 0; t < n; ++t) {
    if (own_lid[t] == 0) continue;
    if (updown_only) {
      for (std::uint32_t s = 0; s < n; ++s) {
        write(own_lid[t], s, escape.lfts[s].get(Lid{own_lid[t]}));
      }
      continue;
    }
    added.clear();
    for (const std::uint32_t s : grower.grow(t, no_load, 1, 0, nullptr, nullptr, added)) {
      write(own_lid[t], s, s == t ? 0 : g.arc(grower.outs(s).front()).local_port);
    }
  }

  // The layer each tree is on (kNoLayer: on the escape routes).
  constexpr std::uint32_t kNoLayer = ~0U;
  std::vector<std::uint32_t> tree_layer(units, kNoLayer);
  for (std::uint32_t u = 0; u < units; ++u) {
    if (stop.stop_requested()) {  // a tree takes up to ~50 ms at 2,000 switches
      return Error{Errc::kCancelled, "layered: cancelled"};
    }
    const std::uint32_t t = unit_sw[u];
    const std::uint32_t want = part_size[g.component(SwitchIndex{t})];
    const std::vector<std::uint32_t>& dlids = unit_lids[u];
    data_lids += dlids.size();
    // The free layers, nearest root first, then the escape layer, then
    // up*/down*.
    std::span<const std::uint32_t> tree;
    auto fits = [&](std::uint32_t layer) {
      added.clear();
      tree = grower.grow(t, load, hop, slack, &layers[layer], &refused[layer], added, static_order);
      if (tree.size() == want) return true;
      layers[layer].undo(added);
      return false;
    };
    // A destination tries the free layers nearest to it first: near a
    // layer's root, most of its neighbours reach it going up.
    std::uint32_t layer = static_cast<std::uint32_t>(layers.size());
    try_order.clear();
    for (std::uint32_t k = 1; k < layers.size(); ++k) try_order.push_back(k);
    std::stable_sort(try_order.begin(), try_order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return root_dist[a - 1][t] < root_dist[b - 1][t];
    });
    for (const std::uint32_t k : try_order) {
      if (fits(k)) {
        layer = k;
        break;
      }
    }
    bool placed = layer < layers.size();
    if (!placed) {
      layer = 0;
      placed = fits(0);
    }
    if (placed) {
      place(u, tree);
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
  std::uint64_t regrown = 0;
  std::vector<std::uint8_t> old_ports;
  for (std::uint32_t pass = 0; pass < kRefinePasses; ++pass) {
    for (std::uint32_t u = 0; u < units; ++u) {
      if (tree_layer[u] == kNoLayer) continue;
      if (stop.stop_requested()) return Error{Errc::kCancelled, "layered: cancelled"};
      const std::uint32_t t = unit_sw[u];
      const std::uint64_t before = weigh(u, 0);
      weigh(u, -1);
      added.clear();
      const std::uint32_t k = tree_layer[u];
      const std::span<const std::uint32_t> tree =
          grower.grow(t, load, hop, slack, &layers[k], &refused[k], added, static_order);
      if (tree.size() != part_size[g.component(SwitchIndex{t})]) {
        layers[k].undo(added);
        weigh(u, +1);
        continue;
      }
      old_ports.clear();
      for (const std::uint32_t lid : unit_lids[u]) {
        for (std::uint32_t s = 0; s < n; ++s) old_ports.push_back(routes.lfts[s].get(Lid{lid}));
      }
      place(u, tree);
      if (weigh(u, 0) <= before) {
        ++regrown;
        continue;
      }
      weigh(u, -1);
      std::size_t i = 0;
      for (const std::uint32_t lid : unit_lids[u]) {
        for (std::uint32_t s = 0; s < n; ++s) write(lid, s, old_ports[i++]);
      }
      weigh(u, +1);
      layers[k].undo(added);
    }
  }

  // LFT entries of data LIDs per channel.
  for (std::uint32_t t = 0; t < n; ++t) {
    for (const std::uint32_t lid : data_at[t]) {
      for (std::uint32_t s = 0; s < n; ++s) {
        const std::uint8_t port = routes.lfts[s].get(Lid{lid});
        if (port == 0) continue;
        const std::uint32_t a = g.arc_at_port(SwitchIndex{s}, port);
        if (a != kNoArc) ++entries[a];
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
  }
  std::vector<std::uint8_t> renum(layers.size(), 0);
  std::uint8_t num = 0;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    if (used[k] != 0) renum[k] = num++;
  }
  for (std::uint8_t& l : lid_layer) l = renum[l];
  routes.num_vls = std::max<std::uint8_t>(1, num);
  if (routes.num_vls > 1) routes.lid_layer = std::move(lid_layer);

  std::uint64_t total = 0;
  for (const std::uint64_t e : entries) {
    total += e;
    routes.load.max_routes = std::max(routes.load.max_routes, e);
  }
  routes.load.links = arcs;
  routes.load.mean_routes =
      arcs == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(arcs);
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
        "channels",
        routes.num_vls, opts.max_vls, escaped, data_lids, deps, escape_deps, regrown, trees));
  }
  for (const std::string& note : escape.notes) routes.notes.push_back(note);
  return routes;
}

Result<Routes> LayeredEngine::compute(const Topology& topo, const LidMap& lids,
                                      const EngineOptions& opts, WorkerPool& pool,
                                      std::stop_token stop) const {
  SUBNETD_TRY(check_budget(opts));
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  // Tori, meshes and hypercubes: dimension-order routes, when their layers
  // fit the budget.
  std::string grid_note;
  if (const Result<GridShape> shape = grid_shape(topo, g); shape.ok()) {
    const std::uint32_t need = dor_layers(*shape);
    if (need <= opts.max_vls) {
      Routes routes;
      SUBNETD_TRY_ASSIGN(routes, dor_routes(g, *shape, stop));
      routes.engine = std::string(name());
      routes.notes.push_back(fmt::format(
          "layered: the switches form a {}: dimension-order routes on {} of {} data VL(s) (VL 0: "
          "multicast only)",
          shape->describe(), routes.num_vls, opts.max_vls));
      for (const std::string& note : g.notes()) routes.notes.push_back(note);
      return routes;
    }
    grid_note = fmt::format(
        "layered: the switches form a {}, whose dimension-order routes need {} data VLs (one for "
        "multicast), more "
        "than the {} given: routed as any other topology",
        shape->describe(), need, opts.max_vls);
  }
  Routes routes;
  SUBNETD_TRY_ASSIGN(routes, layered_general_routes(topo, lids, opts, pool, stop));
  if (!grid_note.empty()) routes.notes.push_back(grid_note);
  return routes;
}

}  // namespace subnetd::routing

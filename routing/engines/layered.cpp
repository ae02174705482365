#include "routing/engines/layered.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "routing/engines/updn.hpp"
#include "routing/ordered_dag.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

using Dep = std::pair<std::uint32_t, std::uint32_t>;

// Channels one dependency may reorder in a layer's CDG before it is
// refused (0 = no limit). A limit of 256 made a 200-switch random graph's
// busiest link 10% busier and did not bring a 2,000-switch one under
// 600 s (the cost there is the failed trees, see routing/README.md).
constexpr std::uint32_t kSearchLimit = 0;  // none yet: see routing/README.md

// The escape layer's CDG before any tree: every dependency of an up*/down*
// route (into a switch and on, never down then up), in an order they all
// agree with: up-channels by their head's position, last first, then
// down-channels by their head's position (routing/engines/updn.hpp).
OrderedDag updown_cdg(const SwitchGraph& g, std::span<const std::uint32_t> pos,
                      std::span<const std::uint32_t> rev) {
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
  OrderedDag dag(std::move(order_pos));
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

// Grows in-trees towards one switch, one destination LID at a time.
class TreeGrower {
 public:
  TreeGrower(const SwitchGraph& g, std::span<const std::uint32_t> rev)
      : g_(g), rev_(rev), nh_(g.num_switches(), kNoArc), done_(g.num_switches(), 0) {}

  // Grows the tree towards switch t over channels weighted by `load` (plus
  // one hop's weight). With a `dag`, a switch joins only through a
  // dependency the dag takes (those it newly took are appended to `added`).
  // Returns the switches reached, t first, each after the one it forwards
  // to; next_arc() gives their channel.
  std::span<const std::uint32_t> grow(std::uint32_t t, std::span<const std::uint64_t> load,
                                      std::uint64_t hop, OrderedDag* dag, std::vector<Dep>& added) {
    ++epoch_;
    reached_.clear();
    heap_ = {};
    auto join = [&](std::uint32_t s, std::uint32_t arc, std::uint64_t cost) {
      done_[s] = epoch_;
      nh_[s] = arc;
      reached_.push_back(s);
      for (std::uint32_t o = g_.first_arc(SwitchIndex{s}); o < g_.first_arc(SwitchIndex{s + 1});
           ++o) {
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
      if (done_[u] == epoch_) continue;
      const std::uint32_t v = g_.arc(in).to.value;
      if (dag != nullptr && nh_[v] != kNoArc) {
        const OrderedDag::Add r = dag->add(in, nh_[v]);
        if (r == OrderedDag::Add::kCycle) continue;
        if (r == OrderedDag::Add::kNew) added.emplace_back(in, nh_[v]);
      }
      join(u, in, cost);
    }
    return reached_;
  }
  std::uint32_t next_arc(std::uint32_t s) const { return nh_[s]; }

 private:
  const SwitchGraph& g_;
  std::span<const std::uint32_t> rev_;
  std::vector<std::uint32_t> nh_;
  std::vector<std::uint32_t> done_;
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> reached_;
  using Item = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap_;
};

}  // namespace

Result<Routes> LayeredEngine::compute(const Topology& topo, const LidMap& lids,
                                      const EngineOptions& opts, WorkerPool& pool,
                                      std::stop_token stop) const {
  if (opts.max_vls < 1 || opts.max_vls > 15) {
    return Error{Errc::kOutOfRange,
                 fmt::format("layered: a budget of {} data VLs (1-15)", opts.max_vls)};
  }
  // The escape routes, and the order that defines them.
  Routes escape;
  SUBNETD_TRY_ASSIGN(escape, UpdnEngine{}.compute(topo, lids, opts, pool, stop));
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
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

  std::vector<OrderedDag> layers;
  layers.push_back(updown_cdg(g, escape.updown_rank, rev));
  layers[0].set_search_limit(kSearchLimit);
  const std::size_t escape_deps = layers[0].edges();

  Routes routes;
  routes.engine = std::string(name());
  routes.max_lid = g.max_lid();
  routes.lfts.resize(n);
  for (Lft& lft : routes.lfts) lft.resize(routes.max_lid);
  std::vector<std::uint8_t> lid_layer(std::size_t{max_lid} + 1, 0);
  std::vector<std::uint64_t> load(arcs, 0);
  const std::vector<std::uint64_t> no_load(arcs, 0);
  std::vector<std::uint64_t> subtree(n, 0);
  std::vector<std::uint64_t> entries(arcs, 0);
  TreeGrower grower(g, rev);
  std::vector<Dep> added;
  std::uint64_t escaped = 0, data_lids = 0;

  auto write = [&](std::uint32_t lid, std::uint32_t s, std::uint8_t port, bool data) {
    routes.lfts[s].data()[lid] = port;
    if (data && port != 0) {
      const std::uint32_t a = g.arc_at_port(SwitchIndex{s}, port);
      if (a != kNoArc) ++entries[a];
    }
  };

  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    if ((lid & 0xFF) == 0 && stop.stop_requested()) {
      return Error{Errc::kCancelled, "layered: cancelled"};
    }
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable()) continue;
    const std::uint32_t t = att.sw.value;
    const std::uint32_t want = part_size[g.component(att.sw)];
    if (att.port == 0) {  // a switch's own LID: shortest paths, no load
      added.clear();
      for (const std::uint32_t s : grower.grow(t, no_load, 1, nullptr, added)) {
        write(lid, s, s == t ? 0 : g.arc(grower.next_arc(s)).local_port, false);
      }
      continue;
    }
    ++data_lids;
    // Free layers first (first fit), then the escape layer, then up*/down*.
    std::span<const std::uint32_t> tree;
    auto fits = [&](std::uint32_t layer) {
      added.clear();
      tree = grower.grow(t, load, hop, &layers[layer], added);
      if (tree.size() == want) return true;
      layers[layer].undo(added);
      return false;
    };
    std::uint32_t layer = 1;
    while (layer < layers.size() && !fits(layer)) ++layer;
    if (layer == layers.size() && layers.size() < opts.max_vls) {
      layers.emplace_back(arcs);  // one destination's tree alone is acyclic
      layers.back().set_search_limit(kSearchLimit);
      if (!fits(layer)) return Error{Errc::kInternal, "layered: a tree failed an empty layer"};
    }
    bool placed = layer < layers.size();
    if (!placed) {
      layer = 0;
      placed = fits(0);
    }
    if (placed) {
      for (const std::uint32_t s : tree) {
        write(lid, s, s == t ? att.port : g.arc(grower.next_arc(s)).local_port, true);
      }
      // Weights: every channel gains the sources whose route crosses it.
      for (auto it = tree.rbegin(); it != tree.rend(); ++it) subtree[*it] = sources[*it];
      for (auto it = tree.rbegin(); it != tree.rend(); ++it) {
        const std::uint32_t a = grower.next_arc(*it);
        if (a == kNoArc) continue;
        load[a] += subtree[*it];
        subtree[g.arc(a).to.value] += subtree[*it];
      }
    } else {
      // The escape routes: their dependencies are all in layer 0's CDG.
      ++escaped;
      layer = 0;
      for (std::uint32_t s = 0; s < n; ++s) {
        if (g.component(SwitchIndex{s}) != g.component(att.sw)) continue;
        write(lid, s, escape.lfts[s].get(Lid{lid}), true);
      }
    }
    lid_layer[lid] = static_cast<std::uint8_t>(layer);
  }

  // Layers in use, numbered from 0 without gaps (layer 0 may be unused).
  std::vector<std::uint8_t> used(layers.size(), 0);
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
  routes.notes.push_back(fmt::format(
      "layered: {} of {} data VL(s) used; {} of {} destination LIDs on up*/down* escape routes; "
      "{} channel dependencies ({} of them up*/down*)",
      routes.num_vls, opts.max_vls, escaped, data_lids, deps, escape_deps));
  for (const std::string& note : escape.notes) routes.notes.push_back(note);
  return routes;
}

}  // namespace subnetd::routing

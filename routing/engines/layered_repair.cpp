#include "routing/engines/layered_repair.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "routing/arrival_layers.hpp"
#include "routing/engines/tree_grower.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

constexpr std::uint8_t kNoLayer = 0xFF;

// The layer's CDG as an OrderedDag: a topological order of its channels
// (Kahn), then every dependency, which then agrees with it. kCdgCycle when
// the dependencies close a cycle.
// With `vls` > 1, of the channels of that many VLs (cdg_frame with VLs).
Result<OrderedDag> dag_of(const SwitchGraph& g, const std::shared_ptr<const DagFrame>& frame,
                          const DepSet& deps, unsigned layer, std::uint32_t vls = 1) {
  auto outs = [&](std::uint32_t x, auto&& fn) {
    const SwitchIndex h = g.arc(x / vls).to;
    const std::uint32_t end = g.first_arc(SwitchIndex{h.value + 1}) * vls;
    for (std::uint32_t y = g.first_arc(h) * vls; y < end; ++y) {
      if (deps.contains(x, y)) fn(y);
    }
  };
  std::optional<OrderedDag> dag = ordered_cdg(frame, outs);
  if (!dag) {
    return Error{Errc::kCdgCycle,
                 fmt::format("layer {}: the dependencies of the routes kept close a cycle on "
                             "the fabric as it is now",
                             layer)};
  }
  return std::move(*dag);
}

}  // namespace

Result<Routes> repair_layered(const Topology& topo, const LidMap& lids,
                              const Topology& previous_topo, const Routes& previous,
                              const EngineOptions& opts, std::stop_token stop,
                              LayeredRepairStats* stats, RepairBalance balance) {
  if (previous.num_vls < 2 || previous.lid_layer.empty()) {
    return Error{Errc::kUnsupported,
                 fmt::format("layered repair: the previous routes ({}) are not layered on "
                             "several VLs",
                             previous.engine)};
  }
  if (!previous.path_layers.empty() && previous.per_hop_vls()) {
    return Error{Errc::kUnsupported,
                 "layered repair: the previous routes give per-hop VLs and layers per source; "
                 "the repair takes one or the other"};
  }
  if (opts.max_vls < previous.num_vls) {
    return Error{Errc::kUnsupported,
                 fmt::format("layered repair: the ports offer {} data VL(s), the layers need {}",
                             opts.max_vls, previous.num_vls)};
  }
  if (previous.lfts.size() != previous_topo.num_switches()) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("layered repair: {} tables for {} switches", previous.lfts.size(),
                             previous_topo.num_switches())};
  }
  if (!previous.vl0_rank.empty() && previous.vl0_rank.size() != previous.lfts.size()) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("layered repair: a multicast order of {} switches for {} tables",
                             previous.vl0_rank.size(), previous.lfts.size())};
  }
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  const std::uint32_t n = g.num_switches();
  const std::uint32_t arcs = g.num_arcs();
  const std::uint32_t max_lid = g.max_lid().value;
  const std::uint8_t num_layers = previous.num_vls;
  // Per-hop VLs (dimension order with datelines, Routes::hop_vls): each
  // LID's SL (lid_layer) picks a VL per hop from the switches' SL2VL, so
  // the VLs' channels form one CDG, node a * num_layers + VL for channel
  // a, and a LID's routes are checked with its SL's channels. A "layer"
  // is then an SL, all of them on that one CDG; a LID fitting its own SL
  // no longer takes SL 0's (VL 0's) up*/down* escape.
  const bool per_hop = previous.per_hop_vls();
  const std::uint32_t sl_limit = per_hop ? kNumSls : num_layers;
  const std::vector<std::uint32_t> rev = reverse_arcs(g);
  LayeredRepairStats st;

  Routes routes;
  routes.engine = previous.engine;
  routes.grid = previous.grid;  // by GUID: a lost switch's entry is never read
  routes.max_lid = g.max_lid();
  routes.num_vls = num_layers;
  routes.lid_layer.assign(std::size_t{max_lid} + 1, kNoLayer);
  for (std::uint32_t l = 0; l <= max_lid && l < previous.lid_layer.size(); ++l) {
    routes.lid_layer[l] = previous.lid_layer[l] < sl_limit ? previous.lid_layer[l] : kNoLayer;
  }
  const std::vector<std::uint8_t> had_layer = routes.lid_layer;
  // Each switch's previous table (matched by GUID; none for a new switch),
  // and multicast's order carried over, new switches ranked after the rest.
  std::uint32_t next_rank = 0;
  for (const std::uint32_t r : previous.vl0_rank) next_rank = std::max(next_rank, r + 1);
  if (!previous.vl0_rank.empty()) routes.vl0_rank.assign(n, 0);
  std::vector<const Lft*> old_tables(n, nullptr);
  std::vector<std::uint32_t> old_index(n, kNoSwitch.value);  // by switch: previous switch_index
  if (per_hop) routes.hop_vls.resize(n);
  for (std::uint32_t s = 0; s < n; ++s) {
    const Guid guid = topo.node(topo.switch_node(SwitchIndex{s})).guid;
    const std::optional<NodeId> was = previous_topo.find_by_guid(guid);
    const SwitchIndex ps = was ? previous_topo.node(*was).switch_index : kNoSwitch;
    if (per_hop && (!ps.valid() || ps.value >= previous.hop_vls.size())) {
      return Error{Errc::kUnsupported,
                   fmt::format("layered repair: switch {} is new, and routes whose VL changes hop "
                               "by hop give it no SL2VL",
                               topo.switch_label(SwitchIndex{s}))};
    }
    if (per_hop) routes.hop_vls[s] = previous.hop_vls[ps.value];
    if (ps.valid()) old_index[s] = ps.value;
    if (ps.valid() && ps.value < previous.lfts.size()) {
      old_tables[s] = &previous.lfts[ps.value];
      if (!routes.vl0_rank.empty()) routes.vl0_rank[s] = previous.vl0_rank.at(ps.value);
    } else if (!routes.vl0_rank.empty()) {
      routes.vl0_rank[s] = next_rank++;
    }
  }

  std::vector<std::uint64_t> sources(n, 0);
  std::vector<std::uint32_t> part_size(g.num_components(), 0);
  for (std::uint32_t s = 0; s < n; ++s) ++part_size[g.component(SwitchIndex{s})];
  std::uint64_t total_sources = 0;
  for (std::uint32_t l = 1; l <= max_lid; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (att.routable() && att.port != 0) {
      ++sources[att.sw.value];
      ++total_sources;
    }
  }

  // Per LID, the switches of its part whose entries still lead to its
  // switch over live links (resolved == epoch; depth: hops), as the
  // classification of classify() left them.
  const std::shared_ptr<const DagFrame> frame = per_hop ? cdg_frame(g, num_layers) : cdg_frame(g);
  const std::uint32_t num_dags = per_hop ? 1 : num_layers;
  std::vector<DepSet> deps(num_dags, DepSet(frame));
  // Per-hop VLs: by SL, each channel's node (an SL no table uses: none).
  std::vector<std::vector<std::uint32_t>> sl_nodes(per_hop ? kNumSls : 0);
  for (std::uint32_t sl = 0; sl < sl_nodes.size(); ++sl) {
    std::vector<std::uint32_t> nodes(arcs);
    for (std::uint32_t a = 0; a < arcs; ++a) {
      const std::uint8_t vl =
          routes.hop_vl(g.arc_source(a).value, g.arc(a).local_port, static_cast<std::uint8_t>(sl));
      if (vl >= num_layers) {
        nodes.clear();  // dropped somewhere: no LID's SL
        break;
      }
      nodes[a] = a * num_layers + vl;
    }
    sl_nodes[sl] = std::move(nodes);
  }
  // Per-hop VLs: the SLs on one VL on every channel (dateline routes'
  // free SLs), layers of the general engine's kind.
  std::vector<std::uint8_t> free_sls;
  for (std::uint32_t sl = 1; sl < sl_nodes.size(); ++sl) {
    const std::vector<std::uint32_t>& nodes = sl_nodes[sl];
    if (!nodes.empty() && std::all_of(nodes.begin(), nodes.end(), [&](std::uint32_t x) {
          return x % num_layers == nodes.front() % num_layers;
        })) {
      free_sls.push_back(static_cast<std::uint8_t>(sl));
    }
  }
  // The CDG a layer's routes go in, and a channel's node there.
  auto dag_at = [&](std::uint8_t k) -> std::uint32_t { return per_hop ? 0U : k; };
  auto nodes_of = [&](std::uint8_t k) -> std::span<const std::uint32_t> {
    return per_hop ? std::span<const std::uint32_t>(sl_nodes[k]) : std::span<const std::uint32_t>();
  };
  auto node = [&](std::uint8_t k, std::uint32_t a) { return per_hop ? sl_nodes[k][a] : a; };
  std::vector<std::uint64_t> load(arcs, 0), subtree(n, 0);
  std::vector<std::uint32_t> depth(n, 0), resolved(n, 0), on_path(n, 0), path, order, count;
  std::uint32_t epoch = 0;
  // The entries LID by LID while they are repaired (tree_grower.hpp): a
  // LID's routes are read and written a whole column at a time. The
  // per-switch tables are built from them at the end.
  LidColumns cols(old_tables, routes.max_lid);
  auto next_arc = [&](std::uint32_t s, std::uint32_t lid) {
    return g.arc_at_port(SwitchIndex{s}, cols.get(s, lid));
  };
  // Returns how many switches of the part do not reach the LID (its own
  // switch's entry is set to its port first: a CA that moved ports).
  auto classify = [&](std::uint32_t lid, const LidAttachment& att) {
    ++epoch;
    const std::uint32_t t = att.sw.value;
    cols.set(t, lid, att.port);
    resolved[t] = epoch;
    depth[t] = 0;
    const std::uint32_t part = g.component(att.sw);
    std::uint32_t cut_off = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (g.component(SwitchIndex{s}) != part) {
        cols.set(s, lid, kDropPort);  // not reachable from there
        continue;
      }
      if (resolved[s] == epoch || on_path[s] == epoch) continue;
      path.clear();
      std::uint32_t cur = s;
      bool ok = false;
      // Until a switch known to reach t; one on this path or known not to
      // (on_path without resolved), or a dead entry, ends it.
      while (on_path[cur] != epoch) {
        if (resolved[cur] == epoch) {
          ok = true;
          break;
        }
        on_path[cur] = epoch;
        path.push_back(cur);
        const std::uint32_t a = next_arc(cur, lid);
        if (a == kNoArc) break;
        cur = g.arc(a).to.value;
      }
      if (resolved[cur] == epoch) ok = true;
      if (!ok) {
        cut_off += static_cast<std::uint32_t>(path.size());
        continue;
      }
      for (std::size_t i = path.size(); i-- > 0;) {
        depth[path[i]] = depth[cur] + static_cast<std::uint32_t>(path.size() - i);
        resolved[path[i]] = epoch;
      }
    }
    return cut_off;
  };
  // The dependencies of the LID's routes from the switches that reach it,
  // on layer (SL) k.
  auto add_deps = [&](std::uint32_t lid, std::uint32_t t, std::uint8_t k) {
    for (std::uint32_t s = 0; s < n; ++s) {
      if (resolved[s] != epoch || s == t) continue;
      const std::uint32_t a = next_arc(s, lid);
      const std::uint32_t w = g.arc(a).to.value;
      if (w != t) deps[dag_at(k)].insert(node(k, a), node(k, next_arc(w, lid)));
    }
  };
  // The LID's sources onto the load of the channels they cross (every
  // switch of the part reaches it).
  auto add_load = [&](std::uint32_t lid, std::uint32_t t) {
    std::uint32_t deepest = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (resolved[s] == epoch) deepest = std::max(deepest, depth[s]);
    }
    count.assign(std::size_t{deepest} + 1, 0);
    for (std::uint32_t s = 0; s < n; ++s) {
      if (resolved[s] == epoch && s != t) ++count[depth[s]];
    }
    // Deepest first (a counting sort): a switch's subtree is complete when
    // it is passed on.
    std::uint32_t at = 0;
    for (std::uint32_t d = deepest; d >= 1; --d) {
      const std::uint32_t c = count[d];
      count[d] = at;
      at += c;
    }
    order.resize(at);
    for (std::uint32_t s = 0; s < n; ++s) {
      subtree[s] = sources[s];
      if (resolved[s] == epoch && s != t) order[count[depth[s]]++] = s;
    }
    for (const std::uint32_t s : order) {
      const std::uint32_t a = next_arc(s, lid);
      load[a] += subtree[s];
      subtree[g.arc(a).to.value] += subtree[s];
    }
  };

  // Every route's dependencies from the switches that still reach its LID
  // (all of them for a kept LID), and the kept routes' load. The parts of
  // broken routes that stand are reserved so before any switch re-attaches:
  // taken one LID at a time instead, a re-attachment could close a cycle
  // with a later LID's standing part (random 200, three links cut: 347 of
  // 866 broken LIDs then needed a whole new tree, 37 moved layer; none
  // now).
  std::vector<std::uint32_t> broken, broken_switch_lids;
  // Layers per source: the layer switch s's sources sent on to `lid` on
  // the previous routes (matched by GUID; `fallback` for a new switch).
  auto old_path_layer = [&](std::uint32_t lid, std::uint32_t s, std::uint8_t fallback) {
    const std::vector<std::uint8_t>& was = previous.path_layers[lid];
    return old_index[s] < was.size() ? was[old_index[s]] : fallback;
  };
  routes.path_layers.resize(previous.path_layers.empty() ? 0 : std::size_t{max_lid} + 1);
  // By LID, layers per source and broken: 0 none, 1 some switch's layer
  // is not its tree's, 2 some source's (hosts' SLs): re-attached per
  // source first (then 0), else on one layer.
  std::vector<std::uint8_t> merged(previous.path_layers.empty() ? 0 : std::size_t{max_lid} + 1, 0);
  std::vector<LayerSet> carried;
  std::vector<std::uint32_t> scratch;
  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    if ((lid & 0xFFF) == 0 && stop.stop_requested()) {
      return Error{Errc::kCancelled, "layered repair: cancelled"};
    }
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable()) {  // its port is gone: dropped, as the engine leaves it
      for (std::uint32_t s = 0; s < n; ++s) cols.set(s, lid, kDropPort);
      continue;
    }
    const std::uint32_t cut_off = classify(lid, att);
    if (att.port == 0) {
      if (cut_off != 0) broken_switch_lids.push_back(lid);
      continue;
    }
    std::uint8_t layer = routes.lid_layer[lid];
    if (per_hop && layer != kNoLayer && sl_nodes[layer].empty()) {
      layer = routes.lid_layer[lid] = kNoLayer;  // an SL the tables drop: placed anew
    }
    // Layers per source (branch layers): an intact LID keeps each
    // source's layer, its dependencies on every layer a switch carries
    // (arrival_layers.hpp). A broken one re-attaches its switches cut off
    // on their sources' layers, or else takes one layer, its tree's if
    // that fits (below: a source on another layer is moved, its SL
    // changes).
    const bool was_split = lid < previous.path_layers.size() && !previous.path_layers[lid].empty();
    if (was_split && layer != kNoLayer) {
      auto old_layer = [&](std::uint32_t s) { return old_path_layer(lid, s, layer); };
      for (std::uint32_t s = 0; s < n; ++s) {
        if (old_layer(s) >= num_layers) {
          return Error{
              Errc::kInvalidArgument,
              fmt::format("layered repair: the routes to LID {:#x} come from {} on "
                          "layer {} of {}",
                          lid, topo.switch_label(SwitchIndex{s}), old_layer(s), num_layers)};
        }
      }
      if (!arrival_layers(
              g, att.sw.value, [&](std::uint32_t s) { return next_arc(s, lid); }, old_layer,
              carried, scratch)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("layered repair: the routes to LID {:#x} loop", lid)};
      }
      // The part that stands keeps its dependencies where they are (a
      // broken LID's too: until hosts resolve it again, they send on the
      // layers they hold).
      for (std::uint32_t s = 0; s < n; ++s) {
        if (resolved[s] != epoch || s == att.sw.value) continue;
        const std::uint32_t a = next_arc(s, lid);
        if (g.arc(a).to.value == att.sw.value) continue;
        for (std::uint32_t k = 0; k < num_layers; ++k) {
          if ((carried[s] & layer_bit(k)) != 0) {
            deps[k].insert(a, next_arc(g.arc(a).to.value, lid));
          }
        }
      }
      if (cut_off == 0) {
        std::vector<std::uint8_t>& keep = routes.path_layers[lid];
        keep.resize(n);
        for (std::uint32_t s = 0; s < n; ++s) keep[s] = old_layer(s);
        add_load(lid, att.sw.value);
        ++st.lids_kept;
        ++st.branch_lids_kept;
        continue;
      }
      // Some switch's layer is not the tree's (1); some source's (2: its
      // hosts' SL changes if the LID takes one layer).
      for (std::uint32_t s = 0; s < n; ++s) {
        if (g.component(SwitchIndex{s}) == g.component(att.sw) && old_layer(s) != layer) {
          merged[lid] =
              std::max<std::uint8_t>(merged[lid], g.has_endpoints(SwitchIndex{s}) ? 2 : 1);
        }
      }
      broken.push_back(lid);
      continue;
    }
    if (layer != kNoLayer) add_deps(lid, att.sw.value, layer);
    if (cut_off == 0 && layer != kNoLayer) {
      add_load(lid, att.sw.value);
      ++st.lids_kept;
    } else {
      broken.push_back(lid);
    }
  }

  // Layer 0 also holds every up*/down* dependency of multicast's order.
  if (!routes.vl0_rank.empty()) {
    for_each_updown_dep(g, routes.vl0_rank, rev, [&](std::uint32_t in, std::uint32_t out) {
      deps[0].insert(node(0, in), node(0, out));
    });
  }
  std::vector<OrderedDag> layers;
  for (unsigned k = 0; k < num_dags; ++k) {
    Result<OrderedDag> dag = dag_of(g, frame, deps[k], k, per_hop ? num_layers : 1);
    if (!dag.ok()) {
      return Error{dag.error().code, "layered repair: " + dag.error().message};
    }
    layers.push_back(std::move(dag).value());
  }

  // Each broken LID: the switches cut off from it join the switches that
  // reach it (the entries of those stay), one at a time, the cheapest
  // first: hops to the LID's switch (a hop weighs as in the engine:
  // engines/layered_general.cpp) plus the load of the channel taken; a
  // switch joins through a channel only if its dependency on the next
  // hop's channel keeps the layer's CDG acyclic.
  const std::uint64_t hop = std::max<std::uint64_t>(1, total_sources);
  std::vector<RefusedDeps> refused(num_dags, RefusedDeps(frame));
  std::vector<Dep> added;
  using Item = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
  std::vector<std::uint8_t> old_ports(n);
  std::vector<std::uint32_t> pick(n, kNoArc);
  TreeGrower grower(g, rev);
  // The dependencies of the routes from the switches that still reach the
  // LID, into another layer's CDG (false: they close a cycle; what was
  // added is in `added`).
  auto add_intact = [&](std::uint32_t lid, std::uint32_t t, std::uint8_t k) {
    OrderedDag& dag = layers[dag_at(k)];
    RefusedDeps& cache = refused[dag_at(k)];
    for (std::uint32_t s = 0; s < n; ++s) {
      if (resolved[s] != epoch || s == t) continue;
      const std::uint32_t a = node(k, next_arc(s, lid));
      const std::uint32_t w = g.arc(next_arc(s, lid)).to.value;
      if (w == t) continue;
      const std::uint32_t out = node(k, next_arc(w, lid));
      const OrderedDag::Add r = dag.add(a, out);
      if (r == OrderedDag::Add::kCycle) {
        cache.insert(a, out);
        return false;
      }
      if (r == OrderedDag::Add::kNew) added.emplace_back(a, out);
    }
    return true;
  };
  // Layers per source: a switch cut off joins through channel `in` on
  // layer k, its sources' own: the dependency into the next hop's channel
  // and, down the path, those of every hop that did not carry layer k yet
  // (carried), all or none; split_added (layer, dependency) keeps them.
  std::vector<std::pair<std::uint8_t, Dep>> split_added;
  auto undo_split = [&](std::size_t mark) {
    while (split_added.size() > mark) {
      const auto& [k, d] = split_added.back();
      layers[k].undo(std::span<const Dep>(&d, 1));
      split_added.pop_back();
    }
  };
  auto join_split = [&](std::uint32_t lid, std::uint32_t t, std::uint32_t in, std::uint8_t k) {
    const std::size_t mark = split_added.size();
    const LayerSet bit = layer_bit(k);
    std::uint32_t prev = in;
    for (std::uint32_t y = g.arc(in).to.value; y != t;) {
      const std::uint32_t out = next_arc(y, lid);
      const OrderedDag::Add r = layers[k].add(prev, out);
      if (r == OrderedDag::Add::kCycle) {
        undo_split(mark);
        return false;
      }
      if (r == OrderedDag::Add::kNew) split_added.emplace_back(k, Dep{prev, out});
      if ((carried[y] & bit) != 0) break;  // its route on k is there already
      prev = out;
      y = g.arc(out).to.value;
    }
    for (std::uint32_t y = g.arc(in).to.value; y != t && (carried[y] & bit) == 0;
         y = g.arc(next_arc(y, lid)).to.value) {
      carried[y] |= bit;
    }
    carried[g.arc_source(in).value] = bit;
    return true;
  };
  // With `own` (by switch, its sources' layer: layers per source), each
  // switch joins on its own layer (join_split); else on layer k.
  auto attach = [&](std::uint32_t lid, std::uint32_t t, std::uint8_t k,
                    const std::vector<std::uint8_t>* own = nullptr) {
    OrderedDag& dag = layers[dag_at(k)];
    RefusedDeps& cache = refused[dag_at(k)];
    heap = {};
    const std::uint32_t part = g.component(SwitchIndex{t});
    auto push_into = [&](std::uint32_t x, std::uint64_t cost) {
      for (std::uint32_t o = g.first_arc(SwitchIndex{x}); o < g.first_arc(SwitchIndex{x + 1});
           ++o) {
        const std::uint32_t in = rev[o];
        if (in != kNoArc && resolved[g.arc(o).to.value] != epoch) {
          heap.emplace(cost + hop + load[in], in);
        }
      }
    };
    std::uint32_t missing = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (g.component(SwitchIndex{s}) != part) continue;
      if (resolved[s] == epoch) {
        push_into(s, hop * depth[s]);
      } else {
        ++missing;
      }
    }
    while (missing != 0 && !heap.empty()) {
      const auto [cost, in] = heap.top();
      heap.pop();
      const std::uint32_t b = g.arc_source(in).value;
      const std::uint32_t x = g.arc(in).to.value;
      if (resolved[b] == epoch) continue;
      if (own != nullptr) {
        if (!join_split(lid, t, in, (*own)[b])) continue;
      } else if (x != t) {
        const std::uint32_t u = node(k, in), v = node(k, next_arc(x, lid));
        const OrderedDag::Add r = cache.contains(u, v) ? OrderedDag::Add::kCycle : dag.add(u, v);
        if (r == OrderedDag::Add::kCycle) {
          cache.insert(u, v);
          continue;
        }
        if (r == OrderedDag::Add::kNew) added.emplace_back(u, v);
      }
      cols.set(b, lid, g.arc(in).local_port);
      resolved[b] = epoch;
      depth[b] = depth[x] + 1;
      --missing;
      push_into(b, cost);
    }
    return missing == 0;
  };
  // Per-hop VLs: the SL of each switch's LIDs (one per switch: its
  // coordinates'), for a LID new on it.
  std::vector<std::uint8_t> switch_sl(per_hop ? n : 0, kNoLayer);
  for (std::uint32_t lid = 1; per_hop && lid <= max_lid; ++lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable() || routes.lid_layer[lid] == kNoLayer) continue;
    if (att.port == 0 || switch_sl[att.sw.value] == kNoLayer) {
      switch_sl[att.sw.value] = routes.lid_layer[lid];  // the switch's own LID first
    }
  }
  for (const std::uint32_t lid : broken) {
    if (stop.stop_requested()) return Error{Errc::kCancelled, "layered repair: cancelled"};
    const LidAttachment att = g.attachment(Lid{lid});
    const std::uint32_t t = att.sw.value;
    const std::uint8_t had = routes.lid_layer[lid];
    // Its own layer first; then (its SL changes) the free layers, then the
    // escape layer, where multicast's order rules VL 0. Per-hop VLs: its
    // own SL (a new LID: the SL of its switch's other LIDs), the free SLs,
    // then SL 0.
    std::vector<std::uint8_t> candidates;
    if (had != kNoLayer) {
      candidates.push_back(had);
    } else if (per_hop && switch_sl[t] != kNoLayer) {
      candidates.push_back(switch_sl[t]);
    }
    for (std::uint8_t k = 1; !per_hop && k < num_layers; ++k) {
      if (k != had) candidates.push_back(k);
    }
    for (const std::uint8_t k : free_sls) {
      if (candidates.empty() || k != candidates.front()) candidates.push_back(k);
    }
    if (had != 0 && !routes.vl0_rank.empty() && (candidates.empty() || candidates.back() != 0)) {
      candidates.push_back(0);
    }
    // In each: the switches cut off re-attached; failing that, a whole new
    // tree (as the engine grows one; the old tree's dependencies stay).
    std::uint8_t layer = kNoLayer;
    bool placed = false;
    // Layers per source: each switch cut off re-attaches on its sources'
    // layer, so no SL the hosts hold changes; failing that, the LID takes
    // one layer (below: its sources on other layers move).
    if (!merged.empty() && merged[lid] != 0) {
      std::vector<std::uint8_t> own(n);
      for (std::uint32_t s = 0; s < n; ++s) own[s] = old_path_layer(lid, s, had);
      const std::uint32_t cut_off = classify(lid, att);
      for (std::uint32_t s = 0; s < n; ++s) old_ports[s] = cols.get(s, lid);
      // The layers the standing part carries (the switches cut off none
      // yet).
      arrival_layers(
          g, t, [&](std::uint32_t s) { return resolved[s] == epoch ? next_arc(s, lid) : kNoArc; },
          [&](std::uint32_t s) { return own[s]; }, carried, scratch);
      for (std::uint32_t s = 0; s < n; ++s) {
        if (resolved[s] != epoch) carried[s] = 0;
      }
      split_added.clear();
      if (attach(lid, t, had, &own)) {
        st.entries_rewritten += cut_off;
        layer = had;
        merged[lid] = 0;
        routes.path_layers[lid] = std::move(own);
        ++st.branch_lids_reattached;
      } else {
        undo_split(0);
        for (std::uint32_t s = 0; s < n; ++s) cols.set(s, lid, old_ports[s]);
      }
    }
    auto place = [&](std::span<const std::uint32_t> tree, std::uint8_t k) {
      place_lid(g, grower, tree, lid, sources, load, pick, subtree, cols);
      st.entries_rewritten += tree.size();
      ++st.trees_regrown;
      layer = k;
      placed = true;
    };
    const std::uint32_t want = part_size[g.component(SwitchIndex{t})];
    for (const std::uint8_t k : candidates) {
      if (layer != kNoLayer) break;  // re-attached on its sources' layers
      const std::uint32_t cut_off = classify(lid, att);
      for (std::uint32_t s = 0; s < n; ++s) old_ports[s] = cols.get(s, lid);
      added.clear();
      // (In its own layer the standing part is reserved already, unless
      // its sources were on several.)
      const bool reserved = k == had && (merged.empty() || merged[lid] == 0);
      if ((reserved || add_intact(lid, t, k)) && attach(lid, t, k)) {
        st.entries_rewritten += cut_off;
        layer = k;
        break;
      }
      OrderedDag& dag = layers[dag_at(k)];
      dag.undo(added);
      for (std::uint32_t s = 0; s < n; ++s) cols.set(s, lid, old_ports[s]);
      added.clear();
      grower.map_channels(nodes_of(k));
      const std::span<const std::uint32_t> tree =
          grower.grow(t, load, hop, hop / 2, &dag, &refused[dag_at(k)], added);
      if (tree.size() == want) {
        place(tree, k);
        break;
      }
      dag.undo(added);
    }
    // Last, up*/down* routes in multicast's order: the escape layer holds
    // every dependency they can have.
    if (layer == kNoLayer && !routes.vl0_rank.empty()) {
      added.clear();
      grower.map_channels(nodes_of(0));
      const std::span<const std::uint32_t> tree =
          grower.grow(t, load, hop, hop / 2, &layers[0], &refused[0], added, routes.vl0_rank);
      if (tree.size() == want) place(tree, 0);
    }
    if (layer == kNoLayer) {
      return Error{Errc::kCdgCycle,
                   had != kNoLayer
                       ? fmt::format("layered repair: the routes to LID {:#x} (switch {}) fit "
                                     "their layer {} no longer, nor any other",
                                     lid, topo.switch_label(SwitchIndex{t}), had)
                       : fmt::format("layered repair: the new LID {:#x} (switch {}) fits no layer",
                                     lid, topo.switch_label(SwitchIndex{t}))};
    }
    if (!placed) {
      classify(lid, att);
      add_load(lid, t);
    }
    routes.lid_layer[lid] = layer;
    ++(had != kNoLayer ? st.lids_regrown : st.lids_placed);
  }
  // Switch LIDs: shortest paths (management traffic; no CDG).
  ShortestTrees shortest(g, rev);
  for (const std::uint32_t lid : broken_switch_lids) {
    const std::uint32_t t = g.attachment(Lid{lid}).sw.value;
    for (const std::uint32_t s : shortest.grow(t)) {
      cols.set(s, lid, s == t ? 0 : g.arc(shortest.out(s)).local_port);
    }
    ++st.switch_lids_rerouted;
  }
  for (std::uint8_t& l : routes.lid_layer) {
    if (l == kNoLayer) l = 0;
  }

  // Hot spots (RepairBalance), a LID at a time.
  const bool spread =
      balance == RepairBalance::kHotSpots ||
      (balance == RepairBalance::kHotSpotsInLayer && st.lids_regrown + st.lids_placed != 0);
  if (spread && arcs != 0) {
    LidLoads lid_loads(g, sources, rev);
    std::vector<std::uint8_t> settled(std::size_t{max_lid} + 1, 0);  // no new tree was better
    ArcLoads old_loads, new_loads;
    const std::uint64_t penalty = hop * n;
    HotSpotPace pace(load, st.lids_kept + st.lids_regrown + st.lids_placed);
    for (std::uint32_t hot = pace.next(); hot != kNoArc; hot = pace.next()) {
      if (stop.stop_requested()) return Error{Errc::kCancelled, "layered repair: cancelled"};
      // The LID pouring the most over `hot` (cheap test first: does it
      // leave hot's switch through it at all).
      const std::uint32_t x = g.arc_source(hot).value;
      const std::uint8_t port = g.arc(hot).local_port;
      std::uint32_t worst = 0;  // none
      std::uint64_t worst_from = 0;
      for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
        if (settled[lid] != 0 || cols.get(x, lid) != port) continue;
        // (A LID kept on layers per source keeps its tree: a new one would
        // be on one layer, moving some sources' SLs.)
        if (lid < routes.path_layers.size() && !routes.path_layers[lid].empty()) continue;
        const LidAttachment att = g.attachment(Lid{lid});
        if (!att.routable() || att.port == 0) continue;
        const std::uint64_t from = lid_loads.on(cols, hot, lid);
        if (from > worst_from) {
          worst = lid;
          worst_from = from;
        }
      }
      if (worst == 0) break;
      const std::uint32_t t = g.attachment(Lid{worst}).sw.value;
      const std::uint8_t k = routes.lid_layer[worst];
      old_loads.clear();
      lid_loads.for_each(cols, t, worst, [&](std::uint32_t a, std::uint64_t from) {
        old_loads.emplace_back(a, from);
      });
      const std::uint64_t before = busiest_of(load, old_loads);
      take_loads(load, old_loads);
      for (std::uint32_t s = 0; s < n; ++s) old_ports[s] = cols.get(s, worst);
      auto try_layer = [&](std::uint8_t layer) {
        added.clear();
        load[hot] += penalty;
        grower.map_channels(nodes_of(layer));
        const std::span<const std::uint32_t> tree = grower.grow(
            t, load, hop, hop / 2, &layers[dag_at(layer)], &refused[dag_at(layer)], added);
        load[hot] -= penalty;
        if (tree.size() == part_size[g.component(SwitchIndex{t})]) {
          new_loads.clear();
          place_lid(g, grower, tree, worst, sources, load, pick, subtree, cols, &new_loads);
          if (busiest_of(load, new_loads) < before) return true;
          take_loads(load, new_loads);
          for (std::uint32_t s = 0; s < n; ++s) cols.set(s, worst, old_ports[s]);
        }
        layers[dag_at(layer)].undo(added);
        return false;
      };
      // Its own layer first; then (its SL changes) the free layers and
      // the escape layer, in the order the repair tries them.
      bool moved = try_layer(k);
      // (Per-hop VLs: the free SLs, then SL 0.)
      std::vector<std::uint8_t> others;
      for (std::uint8_t i = 1; !per_hop && i <= num_layers; ++i) {
        others.push_back(static_cast<std::uint8_t>(i % num_layers));
      }
      if (per_hop) {
        others = free_sls;
        others.push_back(0);
      }
      for (const std::uint8_t o : others) {
        if (balance != RepairBalance::kHotSpots || moved) break;
        // (VL 0 only where its CDG holds multicast's order, as above.)
        if (o == k || (o == 0 && routes.vl0_rank.empty()) || !try_layer(o)) continue;
        moved = true;
        routes.lid_layer[worst] = o;
      }
      if (moved) {
        ++st.hot_spot_moves;
        continue;
      }
      add_loads(load, old_loads);
      settled[worst] = 1;
    }
  }

  // The LIDs whose layer (SL) is not the one they had, however often they
  // moved.
  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    if (att.routable() && att.port != 0 && had_layer[lid] != kNoLayer &&
        (routes.lid_layer[lid] != had_layer[lid] || (lid < merged.size() && merged[lid] == 2))) {
      ++st.lids_moved;
    }
    if (lid < merged.size() && merged[lid] != 0) ++st.branch_lids_merged;
  }
  if (std::all_of(routes.path_layers.begin(), routes.path_layers.end(),
                  [](const std::vector<std::uint8_t>& v) { return v.empty(); })) {
    routes.path_layers.clear();
  }
  routes.load = entry_load(g, cols);
  routes.lfts = cols.lfts(routes.max_lid);
  st.searches_given_up = grower.searches_given_up();
  routes.notes.push_back(fmt::format(
      "layered repair: {} destination LIDs kept as they were, {} re-attached ({} of them on a new "
      "tree; {} entries rewritten), {} new given a layer; {} moved to another layer (SL: hosts "
      "must resolve their PathRecords to them again), every other LID kept its layer; {} switch "
      "LID(s) re-routed{}{}{}",
      st.lids_kept, st.lids_regrown, st.trees_regrown, st.entries_rewritten, st.lids_placed,
      st.lids_moved, st.switch_lids_rerouted,
      st.branch_lids_kept + st.branch_lids_reattached + st.branch_lids_merged != 0
          ? fmt::format("; of the LIDs whose layer depended on the source, {} kept each source's "
                        "layer, {} broken ones re-attached on them, {} took their tree's "
                        "layer alone (counted as moved)",
                        st.branch_lids_kept, st.branch_lids_reattached, st.branch_lids_merged)
          : std::string(),
      balance != RepairBalance::kBrokenOnly
          ? fmt::format("; {} hot-spot moves (LIDs given a new tree off the busiest channel)",
                        st.hot_spot_moves)
          : std::string(),
      st.searches_given_up != 0
          ? fmt::format("; {} searches for a cycle given up at {} nodes (refused, as the engine's "
                        "are, where the longer ones had almost all found one)",
                        st.searches_given_up, grower.search_bet().scan)
          : std::string()));
  if (stats != nullptr) *stats = st;
  return routes;
}

}  // namespace subnetd::routing

#include "routing/engines/layered.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "routing/engines/dor.hpp"
#include "routing/engines/layered_repair.hpp"
#include "routing/engines/tree_grower.hpp"
#include "routing/engines/updn.hpp"
#include "routing/grid_placement.hpp"
#include "routing/grid_shape.hpp"
#include "routing/ordered_dag.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

// The CA/router LIDs behind each switch (the CA-to-CA paths' sources).
std::vector<std::uint64_t> ca_lids_by_switch(const SwitchGraph& g) {
  std::vector<std::uint64_t> sources(g.num_switches(), 0);
  for (std::uint32_t l = 1; l <= g.max_lid().value; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (att.routable() && att.port != 0) ++sources[att.sw.value];
  }
  return sources;
}

// The CA-to-CA paths the busiest link carries under `routes` (every
// CA/router LID a destination from every other): each LID's sources summed
// down its forwarding tree, a switch at a time once its feeders are done.
std::uint64_t busiest_paths(const SwitchGraph& g, const Routes& routes) {
  const std::uint32_t n = g.num_switches();
  const std::vector<std::uint64_t> sources = ca_lids_by_switch(g);
  std::vector<std::uint64_t> carried(n), load(g.num_arcs(), 0);
  std::vector<std::uint32_t> next(n), feeders(n), ready;
  for (std::uint32_t l = 1; l <= g.max_lid().value; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (!att.routable() || att.port == 0) continue;
    std::fill(feeders.begin(), feeders.end(), 0);
    for (std::uint32_t s = 0; s < n; ++s) {
      next[s] =
          s == att.sw.value ? kNoArc : g.arc_at_port(SwitchIndex{s}, routes.lfts[s].get(Lid{l}));
      if (next[s] != kNoArc) ++feeders[g.arc(next[s]).to.value];
    }
    ready.clear();
    for (std::uint32_t s = 0; s < n; ++s) {
      carried[s] = sources[s];
      if (feeders[s] == 0) ready.push_back(s);
    }
    while (!ready.empty()) {
      const std::uint32_t s = ready.back();
      ready.pop_back();
      if (next[s] == kNoArc) continue;
      load[next[s]] += carried[s];
      const std::uint32_t to = g.arc(next[s]).to.value;
      carried[to] += carried[s];
      if (--feeders[to] == 0) ready.push_back(to);
    }
  }
  return load.empty() ? 0 : *std::max_element(load.begin(), load.end());
}

// The CA-to-CA paths shortest routes put on a channel, on average over
// the channels: no routing's busiest channel carries fewer
// (layers_bench's lb.mean).
double mean_shortest_paths(const SwitchGraph& g) {
  const std::uint32_t n = g.num_switches();
  const std::vector<std::uint64_t> sources = ca_lids_by_switch(g);
  std::uint64_t total = 0;
  for (std::uint32_t t = 0; t < n; ++t) {
    if (sources[t] == 0) continue;
    const SwitchIndex to{t};
    const std::vector<std::uint32_t> dist =
        hops_to_nearest(g, std::span<const SwitchIndex>(&to, 1));
    for (std::uint32_t s = 0; s < n; ++s) {
      if (dist[s] != kUnreached) total += sources[t] * sources[s] * dist[s];
    }
  }
  return g.num_arcs() == 0 ? 0.0 : static_cast<double>(total) / g.num_arcs();
}

}  // namespace

// The VL budget both the general engine and dimension order obey.
Result<void> layered_check_budget(const EngineOptions& opts) {
  if (opts.max_vls < 1 || opts.max_vls > 15) {
    return Error{Errc::kOutOfRange,
                 fmt::format("layered: a budget of {} data VLs (1-15)", opts.max_vls)};
  }
  return {};
}

std::uint64_t layered_grid_max_missing(const SwitchGraph& g) {
  // Arcs are both directions of every link (parallel cables apart); the
  // share is of the grid's links, those cabled and those missing.
  const double cabled = static_cast<double>(g.num_arcs()) / 2;
  return static_cast<std::uint64_t>(cabled * kLayeredGridMaxMissingShare /
                                    (1 - kLayeredGridMaxMissingShare));
}

GeneralLayers layered_grid_layers(const SwitchGraph& g) {
  return g.num_switches() > kLayeredGridCompareMaxSwitches ? GeneralLayers::kSeeded
                                                           : GeneralLayers::kBest;
}

Result<Routes> gapped_grid_routes(const Topology& topo, const LidMap& lids, const SwitchGraph& g,
                                  const GridShape& shape, const DorCover& cover,
                                  const EngineOptions& opts, WorkerPool& pool, std::stop_token stop,
                                  bool* compared) {
  if (compared != nullptr) *compared = false;
  const std::uint64_t n = g.num_switches();
  if (shape.missing_links * n * n > kLayeredGridRepairWork) {
    return Error{Errc::kOutOfRange,
                 fmt::format("repairing {} broken links' routes over {} switches would take too "
                             "long (links x switches^2 above 2^{}, about 10 s)",
                             shape.missing_links, n, std::countr_zero(kLayeredGridRepairWork))};
  }
  // Boxes when they fit the VLs, else dateline VLs (3 whatever the size).
  const bool boxes = cover.vls() <= opts.max_vls;
  if (!boxes && !dor_dateline_fits(shape, opts.max_vls)) {
    return Error{Errc::kOutOfRange,
                 fmt::format("they need {} data VLs in layers (one for multicast), more than the "
                             "{} given, and {} SLs on datelines",
                             cover.vls(), opts.max_vls, dor_dateline_sls(shape))};
  }
  const std::string what =
      fmt::format("the switches form a {} with {} missing", shape.describe(), shape.gaps());
  auto repair_on = [&](bool dateline) -> Result<Routes> {
    Routes dor;
    SUBNETD_TRY_ASSIGN(dor, dateline ? dor_dateline_routes(g, shape, stop, opts.max_vls)
                                     : dor_routes(g, shape, cover, stop));
    dor.engine = "layered";
    // The VLs dimension order leaves free are room for the LIDs whose
    // detours fit their layer no longer (a mesh has one layer, whose turns
    // allow no detour). Dateline routes keep their VLs: each hop's is its
    // SL's.
    if (!dateline) dor.num_vls = opts.max_vls;
    // And VL 0, multicast's, takes up*/down* routes in multicast's order
    // when no other layer fits a LID (as the general engine's escape
    // layer).
    std::vector<std::uint32_t> dist;
    dor.vl0_rank = bfs_rank(g, 0, dist);
    LayeredRepairStats st;
    Routes routes;
    SUBNETD_TRY_ASSIGN(
        routes, repair_layered(topo, lids, topo, dor, opts, stop, &st, RepairBalance::kHotSpots));
    if (!dateline) {
      std::uint8_t top = 1;
      for (const std::uint8_t l : routes.lid_layer) top = std::max(top, l);
      routes.num_vls = static_cast<std::uint8_t>(top + 1);
    }
    std::uint64_t on_vl0 = 0;
    for (std::uint32_t lid = 1; lid < routes.lid_layer.size(); ++lid) {
      const LidAttachment att = g.attachment(Lid{lid});
      if (routes.lid_layer[lid] == 0 && att.routable() && att.port != 0) ++on_vl0;
    }
    routes.notes.clear();
    routes.notes.push_back(fmt::format(
        "layered: {}: dimension-order routes on {} of {} data VL(s){} (VL 0: multicast, and "
        "up*/down* routes to {} LID(s) no other layer fits), repaired around the gaps in their "
        "layers ({} of {} destination LIDs re-attached, {} of them on a new tree, {} moved to "
        "another layer; then {} hot-spot moves: the LID loading the busiest link most given a "
        "new tree off it)",
        what, routes.num_vls, opts.max_vls,
        dateline
            ? fmt::format(", each hop's VL set by its switch's SL2VL at each ring's "
                          "dateline ({} {})",
                          boxes ? "in boxes its layers take" : "its layers would need", cover.vls())
            : std::string(),
        on_vl0, st.lids_regrown, st.lids_kept + st.lids_regrown + st.lids_placed, st.trees_regrown,
        st.lids_moved, st.hot_spot_moves));
    return routes;
  };
  // A torus whose boxes fit is repaired on datelines too, and those are
  // kept where their busiest link carries kLayeredGridDatelineGain less.
  // (A grid with no ring of four or more, a mesh or a hypercube, has no
  // dateline: its SLs are multicast's and one.) The two repairs share
  // only what they read, so they run at once, each on one of the pool's
  // threads (one after the other on a pool of one). layers_bench, 2 CAs
  // a switch, the same routes: torus 8x8x8 minus 2% of its links 0.79 ->
  // 0.43 s, minus 6% 1.27 -> 0.74 s, minus 8% (routed in general too)
  // 4.1 -> 3.2 s; 10x10x10 minus 2% 2.7 -> 1.6 s.
  const bool lines_too =
      boxes && dor_dateline_sls(shape) > 2 && dor_dateline_fits(shape, opts.max_vls);
  std::array<Result<Routes>, 2> repaired_on{
      Result<Routes>(Error{Errc::kInternal, "layered: grid not repaired"}),
      Result<Routes>(Error{Errc::kInternal, "layered: grid not repaired on datelines"})};
  pool.parallel_for(lines_too ? 2 : 1, 1, [&](std::size_t begin, std::size_t end, unsigned) {
    for (std::size_t i = begin; i < end; ++i) repaired_on[i] = repair_on(i == 1 || !boxes);
  });
  Routes routes;
  SUBNETD_TRY_ASSIGN(routes, std::move(repaired_on[0]));
  std::optional<std::uint64_t> repaired;  // the kept repair's busiest link, once counted
  if (lines_too) {
    Result<Routes>& lined = repaired_on[1];
    if (!lined.ok() && lined.error().code == Errc::kCancelled) return lined.error();
    if (lined.ok()) {
      const std::uint64_t on_boxes = busiest_paths(g, routes), on_lines = busiest_paths(g, *lined);
      const bool better =
          on_lines * kLayeredGridDatelineGain < on_boxes * (kLayeredGridDatelineGain - 1);
      if (better) routes = std::move(*lined);
      repaired = better ? on_lines : on_boxes;
      routes.notes.insert(
          routes.notes.begin() + 1,
          fmt::format("layered: {}, whose busiest link carries {} CA-to-CA paths against {} on "
                      "{} (datelines are kept only where they carry 1/{} fewer: a LID's SL on "
                      "the boxes is the one it has when the gaps close)",
                      better ? "dimension order on dateline VLs" : "dimension order in boxes",
                      better ? on_lines : on_boxes, better ? on_boxes : on_lines,
                      better ? "the boxes' layers" : "dateline VLs", kLayeredGridDatelineGain));
    } else {
      routes.notes.push_back(
          fmt::format("layered: {}: dimension order in boxes (on dateline VLs: {})", what,
                      lined.error().message));
    }
  }
  for (const std::string& note : g.notes()) routes.notes.push_back(note);
  if (!repaired) repaired = busiest_paths(g, routes);
  if (g.num_switches() > kLayeredGridCompareMaxSwitches &&
      static_cast<double>(*repaired) <= kLayeredGridGoal * mean_shortest_paths(g)) {
    return routes;
  }

  // Small enough to route in general as well, or the repaired routes
  // miss the goal: the better balanced wins (repaired detours are kept to
  // their layers' turns; on small grids and hypercubes the general
  // engine's routes spread wider, and on grids with many gaps too).
  Routes general;
  SUBNETD_TRY_ASSIGN(general,
                     layered_general_routes(topo, lids, opts, pool, stop, layered_grid_layers(g)));
  if (compared != nullptr) *compared = true;
  const std::uint64_t free = busiest_paths(g, general);
  Routes& kept = free < *repaired ? general : routes;
  kept.notes.insert(kept.notes.begin(),
                    fmt::format("layered: {}: {}, whose busiest link carries {} CA-to-CA paths "
                                "against {} for {}",
                                what,
                                &kept == &general ? "routed as any other topology"
                                                  : "dimension order repaired around the gaps",
                                std::min(*repaired, free), std::max(*repaired, free),
                                &kept == &general ? "dimension order repaired around the gaps"
                                                  : "the general engine"));
  return std::move(kept);
}

Result<Routes> LayeredEngine::compute(const Topology& topo, const LidMap& lids,
                                      const EngineOptions& opts, WorkerPool& pool,
                                      std::stop_token stop) const {
  SUBNETD_TRY(layered_check_budget(opts));
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  // Tori, meshes and hypercubes: dimension-order routes, when their layers
  // fit the budget.
  std::string grid_note;
  const GridPlacement* previous = opts.previous_grid.get();
  auto placed = [&](const GridShape& shape) {
    return std::make_shared<const GridPlacement>(placement_of(topo, shape));
  };
  // What the seed did, after the note that says what the grid is.
  auto seed_note = [](Routes& routes, const GridShape& shape) {
    if (!shape.placement.empty()) routes.notes.push_back("layered: " + shape.placement);
  };
  if (const Result<GridShape> shape = grid_shape(topo, g, previous, opts.grid_seed); shape.ok()) {
    const DorCover cover = dor_cover(*shape);
    const std::uint32_t need = cover.vls();
    if (need <= opts.max_vls) {
      Routes routes;
      SUBNETD_TRY_ASSIGN(routes, dor_routes(g, *shape, cover, stop));
      routes.engine = std::string(name());
      routes.grid = placed(*shape);
      routes.notes.push_back(fmt::format(
          "layered: the switches form a {}: dimension-order routes on {} of {} data VL(s) (VL 0: "
          "multicast only)",
          shape->describe(), routes.num_vls, opts.max_vls));
      seed_note(routes, *shape);
      for (const std::string& note : g.notes()) routes.notes.push_back(note);
      return routes;
    }
    if (dor_dateline_fits(*shape, opts.max_vls)) {
      Routes routes;
      SUBNETD_TRY_ASSIGN(routes, dor_dateline_routes(g, *shape, stop));
      routes.engine = std::string(name());
      routes.grid = placed(*shape);
      routes.notes.push_back(fmt::format(
          "layered: the switches form a {}, whose dimension-order layers need {} data VLs (one "
          "for multicast), more than the {} given: dimension-order routes on {} data VL(s), "
          "each hop's VL set by its switch's SL2VL at each ring's dateline (VL 0: multicast "
          "only; SLs 1-{}: the destination's half of each ring)",
          shape->describe(), need, opts.max_vls, routes.num_vls, dor_dateline_sls(*shape) - 1));
      seed_note(routes, *shape);
      for (const std::string& note : g.notes()) routes.notes.push_back(note);
      return routes;
    }
    grid_note = fmt::format(
        "layered: the switches form a {}, whose dimension-order routes need {} data VLs (one for "
        "multicast), more "
        "than the {} given: routed as any other topology",
        shape->describe(), need, opts.max_vls);
  } else if (const Result<GridShape> gapped = grid_shape_with_gaps(
                 topo, g, layered_grid_max_missing(g), previous, opts.grid_seed);
             gapped.ok()) {
    const DorCover cover = dor_cover(*gapped);
    Result<Routes> routes = gapped_grid_routes(topo, lids, g, *gapped, cover, opts, pool, stop);
    if (routes.ok()) {
      routes->grid = placed(*gapped);
      seed_note(*routes, *gapped);
    }
    if (routes.ok() || routes.error().code == Errc::kCancelled) return routes;
    grid_note = fmt::format(
        "layered: the switches form a {} with {} missing, but its "
        "dimension-order routes do not fit ({}): routed as any other topology",
        gapped->describe(), gapped->gaps(), routes.error().message);
  } else if (gapped.error().code == Errc::kOutOfRange) {
    grid_note = fmt::format("layered: {}: routed as any other topology",
                            gapped.error().message.substr(gapped.error().message.find(": ") + 2));
  }
  // grid_note set: a grid, whole or with gaps, routed in general.
  Routes routes;
  SUBNETD_TRY_ASSIGN(routes, layered_general_routes(topo, lids, opts, pool, stop,
                                                    grid_note.empty() ? GeneralLayers::kBest
                                                                      : layered_grid_layers(g)));
  if (!grid_note.empty()) routes.notes.push_back(grid_note);
  return routes;
}

}  // namespace subnetd::routing

#include "routing/engines/auto_engine.hpp"

#include <fmt/format.h>

#include "routing/engines/dor.hpp"
#include "routing/engines/ftree.hpp"
#include "routing/engines/layered.hpp"
#include "routing/engines/updn.hpp"
#include "routing/grid_placement.hpp"
#include "routing/grid_shape.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

// "" for a complete fat tree, else what is missing: the switches below the
// top with fewer up-links than the most any switch of their level has.
std::string fat_tree_gaps(const Topology& topo, const SwitchGraph& g, const FatTreeShape& shape) {
  std::uint32_t short_switches = 0;
  std::string first;
  for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
    const std::uint32_t level = shape.level[s];
    if (level + 1 >= shape.num_levels) continue;
    std::uint32_t up = 0;
    for (const SwitchArc& a : g.arcs(SwitchIndex{s})) {
      if (shape.level[a.to.value] == level + 1) ++up;
    }
    if (up >= shape.up_width[level]) continue;
    if (short_switches++ == 0) {
      first = fmt::format("{} has {} of {} up-links", topo.switch_label(SwitchIndex{s}), up,
                          shape.up_width[level]);
    }
  }
  if (short_switches == 0) return {};
  return short_switches == 1 ? first
                             : fmt::format("{}, and {} more switches", first, short_switches - 1);
}

}  // namespace

Result<Routes> AutoEngine::compute(const Topology& topo, const LidMap& lids,
                                   const EngineOptions& opts, WorkerPool& pool,
                                   std::stop_token stop) const {
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  FatTreeShape shape = fat_tree_shape(topo, g);
  Result<Routes> routes = Error{Errc::kInternal, "auto: no engine ran"};
  std::string why;
  std::string gaps_note;  // a grid with links missing whose routes did not fit
  // A grid with links missing: dimension order repaired around the gaps
  // (engines/layered.hpp), at any size; false to go on down the list.
  auto gapped_grid = [&] {
    const Result<GridShape> gapped = grid_shape_with_gaps(topo, g, layered_grid_max_missing(g),
                                                          opts.previous_grid.get(), opts.grid_seed);
    if (!gapped.ok()) return false;
    const DorCover cover = dor_cover(*gapped);
    if (cover.vls() > opts.max_vls && !dor_dateline_fits(*gapped, opts.max_vls)) return false;
    bool compared = false;
    Result<Routes> r =
        gapped_grid_routes(topo, lids, g, *gapped, cover, opts, pool, stop, &compared);
    if (r.ok()) {
      r->grid = std::make_shared<const GridPlacement>(placement_of(topo, *gapped));
      if (!gapped->placement.empty()) r->notes.push_back("auto: " + gapped->placement);
    }
    if (!r.ok() && r.error().code != Errc::kCancelled) {
      gaps_note = fmt::format(
          "auto: the switches form a {} with {} missing, but its "
          "dimension-order routes could not be repaired around them ({})",
          gapped->describe(), gapped->gaps(), r.error().message);
      return false;
    }
    routes = std::move(r);
    // The routes kept may be the general engine's (`compared`: small
    // grids, and those whose repair misses kLayeredGridGoal; the first
    // note then compares the two): their VLs, not dimension order's.
    why = fmt::format(
        "auto: layered, the switches form a {} with {} missing: routed as a grid, repaired "
        "around the gaps{}, on {} of the {} data VL(s) the switch links offer (VL 0 for "
        "multicast{})",
        gapped->describe(), gapped->gaps(),
        compared ? ", or in general where that is better balanced (next note)" : "",
        routes.ok() ? routes->num_vls : 0, opts.max_vls,
        routes.ok() && routes->per_hop_vls()
            ? "; the VL changing hop by hop at each ring's dateline"
            : "");
    return true;
  };
  std::string missing;
  if (shape.fat_tree) missing = fat_tree_gaps(topo, g, shape);
  if (shape.fat_tree && !missing.empty() &&
      layered_lids_per_tree(g, 1) <= kAutoBalancedMaxLidsPerTree) {
    EngineOptions one = opts;
    one.max_vls = 1;
    routes = LayeredEngine{}.compute(topo, lids, one, pool, stop);
    why = fmt::format(
        "auto: layered on one VL (balanced up*/down*), the fabric is a fat tree with links "
        "missing ({}): ftree's D-mod-K funnels their traffic onto their neighbours",
        missing);
  } else if (shape.fat_tree) {
    routes = ftree_routes(topo, g, std::move(shape), pool, stop);
    why = missing.empty() ? "auto: ftree, the fabric is a fat tree"
                          : fmt::format(
                                "auto: ftree, the fabric is a fat tree with links missing "
                                "({}), too large for balanced trees per LID",
                                missing);
  } else if (const Result<GridShape> grid =
                 grid_shape(topo, g, opts.previous_grid.get(), opts.grid_seed);
             grid.ok() &&
             (dor_layers(*grid) <= opts.max_vls || dor_dateline_fits(*grid, opts.max_vls))) {
    routes = LayeredEngine{}.compute(topo, lids, opts, pool, stop);
    why = fmt::format(
        "auto: layered, the switches form a {}, whose dimension-order routes need {} of the {} "
        "data VL(s) the switch links offer (VL 0 for multicast){}",
        grid->describe(), routes.ok() ? routes->num_vls : 0, opts.max_vls,
        routes.ok() && routes->per_hop_vls() ? ", their VL changing hop by hop at each ring's "
                                               "dateline"
                                             : "");
  } else if (gapped_grid()) {
    // routes and why are set.
  } else if (opts.max_vls >= 2 && g.num_switches() <= kAutoLayeredMaxSwitches) {
    // A grid whose repair failed above is not searched and repaired again.
    routes = gaps_note.empty()
                 ? LayeredEngine{}.compute(topo, lids, opts, pool, stop)
                 : layered_general_routes(topo, lids, opts, pool, stop, layered_grid_layers(g));
    why = fmt::format(
        "auto: layered, the fabric is no fat tree and its switch links offer {} data VLs",
        opts.max_vls);
  } else if (opts.max_vls >= 2) {
    routes = UpdnEngine{}.compute(topo, lids, opts, pool, stop);
    why = fmt::format(
        "auto: updn, the fabric is no fat tree but has {} switches: layered routing takes "
        "minutes above {} (routing/README.md); set routing.engine: layered to use it anyway",
        g.num_switches(), kAutoLayeredMaxSwitches);
  } else {
    routes = UpdnEngine{}.compute(topo, lids, opts, pool, stop);
    why =
        "auto: updn, the fabric is no fat tree and some switch link offers a single data VL "
        "(layered routing needs two to balance)";
  }
  if (routes.ok()) {
    routes->notes.insert(routes->notes.begin(), why);
    if (!gaps_note.empty()) routes->notes.insert(routes->notes.begin() + 1, gaps_note);
  }
  return routes;
}

}  // namespace subnetd::routing

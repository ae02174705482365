#include "routing/engines/auto_engine.hpp"

#include <fmt/format.h>

#include "routing/engines/dor.hpp"
#include "routing/engines/ftree.hpp"
#include "routing/engines/layered.hpp"
#include "routing/engines/updn.hpp"
#include "routing/grid_shape.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

Result<Routes> AutoEngine::compute(const Topology& topo, const LidMap& lids,
                                   const EngineOptions& opts, WorkerPool& pool,
                                   std::stop_token stop) const {
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  FatTreeShape shape = fat_tree_shape(topo, g);
  Result<Routes> routes = Error{Errc::kInternal, "auto: no engine ran"};
  std::string why;
  if (shape.fat_tree) {
    routes = ftree_routes(topo, g, std::move(shape), pool, stop);
    why = "auto: ftree, the fabric is a fat tree";
  } else if (const Result<GridShape> grid = grid_shape(topo, g);
             grid.ok() && dor_layers(*grid) <= opts.max_vls) {
    routes = LayeredEngine{}.compute(topo, lids, opts, pool, stop);
    why = fmt::format(
        "auto: layered, the switches form a {}, whose dimension-order routes need {} of the {} "
        "data VL(s) the switch links offer",
        grid->describe(), dor_layers(*grid), opts.max_vls);
  } else if (opts.max_vls >= 2 && g.num_switches() <= kAutoLayeredMaxSwitches) {
    routes = LayeredEngine{}.compute(topo, lids, opts, pool, stop);
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
  if (routes.ok()) routes->notes.insert(routes->notes.begin(), why);
  return routes;
}

}  // namespace subnetd::routing

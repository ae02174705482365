#include "routing/engines/auto_engine.hpp"

#include "routing/engines/ftree.hpp"
#include "routing/engines/updn.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

Result<Routes> AutoEngine::compute(const Topology& topo, const LidMap& lids,
                                   const EngineOptions& opts, WorkerPool& pool,
                                   std::stop_token stop) const {
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  FatTreeShape shape = fat_tree_shape(topo, g);
  if (shape.fat_tree) return ftree_routes(topo, g, std::move(shape), pool, stop);
  return UpdnEngine{}.compute(topo, lids, opts, pool, stop);
}

}  // namespace subnetd::routing

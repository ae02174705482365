#include "routing/engines/auto_engine.hpp"

#include "routing/engines/updn.hpp"

namespace subnetd::routing {

Result<Routes> AutoEngine::compute(const Topology& topo, const LidMap& lids,
                                   const EngineOptions& opts, WorkerPool& pool,
                                   std::stop_token stop) const {
  // No fat-tree engine yet (issue 6), so updn is the choice for every topology.
  return UpdnEngine{}.compute(topo, lids, opts, pool, stop);
}

}  // namespace subnetd::routing

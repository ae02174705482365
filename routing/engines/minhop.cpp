#include "routing/engines/minhop.hpp"

#include "routing/hop_table.hpp"
#include "routing/lft_fill.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

Result<Routes> MinhopEngine::compute(const Topology& topo, const LidMap& lids,
                                     const EngineOptions& /*opts*/, WorkerPool& pool,
                                     std::stop_token stop) const {
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  HopTable hops;
  SUBNETD_TRY_ASSIGN(hops, shortest_hops(g, pool, stop));
  Routes routes;
  SUBNETD_TRY_ASSIGN(routes,
                     fill_balanced_lfts(topo, g, hops, CandidateRule::kShortest, {}, pool, stop));
  routes.engine = std::string(name());
  return routes;
}

}  // namespace subnetd::routing

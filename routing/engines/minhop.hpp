#pragma once
// minhop: shortest paths between switches, balanced per port.
//
// Every switch forwards each LID to a neighbour one hop closer to the LID's
// switch, choosing among such neighbours the port that has carried the fewest
// LIDs so far (routing/lft_fill.hpp). Shortest paths are not deadlock-free in
// general: on rings and tori the verifier finds credit loops.

#include "routing/engine.hpp"

namespace subnetd::routing {

class MinhopEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "minhop"; }
  Result<Routes> compute(const Topology& topo, const LidMap& lids, const EngineOptions& opts,
                         WorkerPool& pool, std::stop_token stop) const override;
};

}  // namespace subnetd::routing

#pragma once
// auto: the engine that suits the topology.
//
// ftree where the topology is a fat tree (fat_tree_shape in ftree.hpp: CA
// switches at level 0, every link between adjacent levels; degraded trees
// included), updn everywhere else (deadlock-free on any topology).
// Routes::engine names the engine that produced the tables, so a log shows
// which one auto chose.

#include "routing/engine.hpp"

namespace subnetd::routing {

class AutoEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "auto"; }
  Result<Routes> compute(const Topology& topo, const LidMap& lids, const EngineOptions& opts,
                         WorkerPool& pool, std::stop_token stop) const override;
};

}  // namespace subnetd::routing

#pragma once
// auto: the engine that suits the topology.
//
// The rule is "the fat-tree engine where the topology is a fat tree, up*/down*
// everywhere else". The fat-tree engine and its detector arrive with issue 6;
// until then every topology goes to updn, which is deadlock-free on all of
// them (and on a fat tree keeps every shortest path; see updn.hpp).
// Routes::engine names the engine that produced the tables.

#include "routing/engine.hpp"

namespace subnetd::routing {

class AutoEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "auto"; }
  Result<Routes> compute(const Topology& topo, const LidMap& lids, const EngineOptions& opts,
                         WorkerPool& pool, std::stop_token stop) const override;
};

}  // namespace subnetd::routing

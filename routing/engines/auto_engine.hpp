#pragma once
// auto: the engine that suits the topology.
//
// ftree where the topology is a fat tree (fat_tree_shape in ftree.hpp: CA
// switches at level 0, every link between adjacent levels); a fat tree
// with links missing gets layered on one VL instead — balanced up*/down*,
// which keeps fast failover (it exports updn's order) and spreads the
// traffic of the missing links where ftree's D-mod-K funnels it (k=16
// minus 5% of links: 1.37x the lower bound against ftree's 2.26) — while its
// trees serve at most kAutoBalancedMaxLidsPerTree LIDs each (up to ~1,000
// switches of 8 CAs: k=28 minus 5%, 1.56 against ftree's 2.13 in 5.3 s;
// beyond, k=32, ftree balances better); layered on a torus, mesh or hypercube whose dimension-order
// routes fit the data VLs (routing/engines/dor.hpp: any size, two VLs for
// meshes and hypercubes, one of them multicast's); elsewhere layered when the switch links offer
// two data VLs or more (EngineOptions::max_vls; balanced, deadlock-free on any topology) and the
// fabric has at most kAutoLayeredMaxSwitches switches (layered's time grows about as the cube of
// the switches: 8 s at 1,000, 20-26 s at 2,000 on a 2-core VM), else updn (deadlock-free with one
// VL, funnels traffic to its roots). Layered routes on several VLs carry no up/down order, so the
// fast path hands a failure to the heavy sweep, which repairs them in their layers (it says so);
// fast failover is armed per layer (routing/failover_plan.hpp). Routes::engine names the engine
// that produced the tables, and the first of Routes::notes says why auto chose it.

#include "routing/engine.hpp"

namespace subnetd::routing {

inline constexpr std::uint32_t kAutoLayeredMaxSwitches = 2048;
inline constexpr std::uint64_t kAutoBalancedMaxLidsPerTree = 2;

class AutoEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "auto"; }
  Result<Routes> compute(const Topology& topo, const LidMap& lids, const EngineOptions& opts,
                         WorkerPool& pool, std::stop_token stop) const override;
};

}  // namespace subnetd::routing

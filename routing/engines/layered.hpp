#pragma once
// layered: balanced, deadlock-free routing on any topology within the VLs
// the ports offer (issue 18).
//
// Each destination LID gets its own in-tree, grown from the LID's switch by
// a Dijkstra over the channels (SwitchGraph arcs) whose weights are the
// traffic already routed over them (DFSSSP's balancing: a channel's weight
// grows by the number of CA sources whose route to the LID crosses it), and
// the tree lives on one layer — an SL that SL2VL maps to one VL on every
// port. Each layer keeps its channel dependency graph (CDG) acyclic while
// the trees are grown, as Nue does: a switch joins the tree through a
// neighbour only if the dependency it adds (its channel into the
// neighbour, then the neighbour's channel onward) keeps the layer's CDG
// acyclic (routing/ordered_dag.hpp), else it waits for another neighbour.
// A tree that cannot reach every switch of its part is taken back and tried
// on the next layer.
//
// Layer 0 is the escape layer: its CDG starts out holding every
// dependency up*/down* routing may create (routing/engines/updn.hpp), so it
// can always take a destination — on its up*/down* routes when no balanced
// tree fits. The other layers start empty and are tried first, in order
// (first fit, so few VLs are used when few are needed); with a budget of
// one VL everything is on layer 0. Hence the engine never runs out of VLs:
// what a small budget costs is balance, and Routes::notes says how many
// destinations took the escape routes.
//
// Switch LIDs (management traffic on VL15, outside every CDG) get
// shortest-path trees on layer 0 and load nothing.
//
// Deterministic (no threads inside; the trees depend on each other through
// the weights and the CDGs, so they are grown one after another).

#include "routing/engine.hpp"

namespace subnetd::routing {

class LayeredEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "layered"; }
  Result<Routes> compute(const Topology& topo, const LidMap& lids, const EngineOptions& opts,
                         WorkerPool& pool, std::stop_token stop) const override;
};

}  // namespace subnetd::routing

#pragma once
// Layers: virtual lanes that break the credit loops of given routes (issue
// 18, the first step of the VL-layered engine).
//
// Routes that are not up*/down* (shortest paths on a ring, a torus, a
// random graph) close cycles in their channel dependency graph (CDG) on one
// VL. Put the traffic to each destination LID on one of several layers,
// each its own VL with its own channel buffers, so that every layer's CDG
// is acyclic, and the routes are deadlock-free as they stand: the SL of a
// packet names its layer (PathRecord SL), SL2VL maps SL i to VL i on every
// port, and a packet never changes layer on its way.
//
// assign_layers() takes the destinations in LID order and puts each on the
// first layer whose CDG stays acyclic with that destination's dependencies
// added (as LASH places paths; DFSSSP moves them between layers after the
// fact). One destination's routes form an in-tree, which alone is
// acyclic, so a layer always takes at least one. The test is an online
// topological order per layer (OrderedDag: a two-way ordered search): an
// added dependency that agrees with the order costs nothing; one that does
// not searches from its two channels towards each other in the order. When a
// destination fits no layer within the budget the answer is an error that
// says so (kCdgCycle): nothing falls back silently.
//
// Counted, as by the verifier (routing/verifier.hpp): the data traffic to
// every CA/router LID from every switch with CAs/routers. Switch LIDs
// (management traffic, VL15) stay on layer 0 and add nothing.
//
// Pure computation: const inputs, no I/O, no threads.

#include <cstdint>
#include <stop_token>
#include <vector>

#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

struct LayerOptions {
  // Layers (VLs) the ports offer for data; 1..15.
  std::uint8_t max_layers = 8;
};

struct LayerAssignment {
  std::vector<std::uint8_t> lid_layer;  // by LID 0..max_lid
  std::uint8_t layers = 1;              // layers used (1 + the highest in lid_layer)
  std::uint64_t dependencies = 0;       // distinct dependencies over all layers
};

Result<LayerAssignment> assign_layers(const Topology& topo, const LidMap& lids,
                                      const Routes& routes, const LayerOptions& opts,
                                      std::stop_token stop);

}  // namespace subnetd::routing

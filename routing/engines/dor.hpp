#pragma once
// Dimension-order routing on tori, meshes and hypercubes: the layered
// engine's specialisation for switches that form a grid
// (routing/grid_shape.hpp; issue 18, item 4).
//
// A packet corrects its coordinates one dimension after the other, in a
// fixed order, each the short way round (on a ring of even size, half the
// destinations at exactly half-way go either way, alternating by the
// destination's coordinates and its LID's rank on its switch). Every path
// is shortest, and on a torus every link carries the same traffic.
//
// Deadlock freedom: a packet in dimension d only ever waits for channels of
// dimension d or later, so a dependency cycle stays in one ring. Paths
// (mesh dimensions) have none. On a ring of k >= 5 switches, the routes to
// destinations whose coordinate lies in one half of the ring (ceil(k/2)
// consecutive values) depend on at most k - 2 consecutive channel pairs in
// each direction: never all k, so never a cycle. Each destination switch
// is therefore put on the layer named by its halves — one bit per ring of
// five or more — and SL2VL keeps each layer on its own VL (as for every
// layered route). Rings of three carry no dependency within the ring (one
// hop at most), and rings of four are found as two paths of two.
//
// VL 0 is left to multicast (SL 0): no spanning tree of a ring can share a
// VL with these routes — the routes of one half of a ring break their
// dependency chain at a different link in each direction, and a tree can
// leave out only one — so the layers are numbered from 1, and a grid needs
// one VL more than its layers (dor_layers counts it).
//
// Switch LIDs (VL15) take dimension-order routes too, on layer 0.

#include <cstdint>
#include <stop_token>

#include "routing/grid_shape.hpp"
#include "routing/lft.hpp"
#include "routing/result.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

// The data VLs dimension-order routes on `shape` need: VL 0 for multicast
// and 2^(rings of 5 or more) layers.
std::uint32_t dor_layers(const GridShape& shape);

// Dimension-order routes over g's switches, which form `shape`: one layer
// per combination of halves, the layers in use numbered from 1 (VL 0:
// multicast). Routes::engine is left empty for the caller.
Result<Routes> dor_routes(const SwitchGraph& g, const GridShape& shape, std::stop_token stop);

}  // namespace subnetd::routing

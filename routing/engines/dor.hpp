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
// (mesh dimensions) have none. On a ring of k >= 5 switches a route passes
// at most h = floor(k/2) - 1 switches of the ring, so the routes to
// destinations whose coordinate lies in a window of w = ceil(k/2) + 1
// consecutive values pass at most w + h - 1 = k - 1 switches in each
// direction: a chain of at most k - 1 of the ring's k channel pairs, never
// a cycle. A layer is therefore a box of grid points (such a window per
// ring, the whole of every other dimension), each destination switch goes
// to the first box that holds it (dor_cover), and SL2VL keeps each layer
// on its own VL (as for every layered route). A window from 0 and one from
// k/2 per ring make 2^rings boxes; a search finds fewer where it can (an
// 8x8x8 torus: 7, so 8 VLs with multicast's, not 9; 5x5x5: 4). Rings of
// three carry no dependency within the ring (one hop at most), and rings
// of four are found as two paths of two.
//
// VL 0 is left to multicast (SL 0): no spanning tree of a ring can share a
// VL with these routes — the routes of one box break their
// dependency chain at a different link in each direction, and a tree can
// leave out only one — so the layers are numbered from 1, and a grid needs
// one VL more than its layers (dor_layers counts it).
//
// Switch LIDs (VL15) take dimension-order routes too, on layer 0.

#include <cstdint>
#include <optional>
#include <stop_token>
#include <vector>

#include "routing/grid_shape.hpp"
#include "routing/lft.hpp"
#include "routing/result.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

// The layers of dimension-order routes: boxes of grid points, each a
// window of consecutive coordinates per dimension (cyclic on a ring), that
// together hold every point. A window is a whole dimension, or on a ring
// of k >= 5 at most ceil(k/2) + 1 coordinates.
struct DorCover {
  std::uint32_t dims = 0;
  std::uint32_t count = 0;           // boxes
  std::vector<std::uint32_t> width;  // by dimension: a window's length
  std::vector<std::uint32_t> start;  // box * dims + dimension: its first coordinate
  // The data VLs the routes need: a layer a box, and VL 0 for multicast.
  std::uint32_t vls() const { return 1 + count; }
  bool holds(const GridShape& shape, std::uint32_t box, SwitchIndex s) const;
  // The first box holding switch s (count when none does).
  std::uint32_t box_of(const GridShape& shape, SwitchIndex s) const;
};

// The fewest boxes found: 2^(rings of 5 or more) (a window from 0 and one
// from k/2 per ring), or fewer where a seeded search over up to four such
// rings finds a cover (8x8x8: 7 boxes). Deterministic; milliseconds.
DorCover dor_cover(const GridShape& shape);

// The data VLs dimension-order routes on `shape` need: VL 0 for multicast
// and a layer per box of dor_cover.
std::uint32_t dor_layers(const GridShape& shape);

// Dimension-order routes over g's switches, which form `shape`: one layer
// per box of `cover` (dor_cover of the shape), the layers in use numbered
// from 1 (VL 0: multicast). Routes::engine is left empty for the caller.
// On a grid with links missing (GridShape::missing_links) a switch whose
// next hop is not cabled gets no entry (kDropPort): the caller repairs
// those routes in their layers (repair_layered), as after a link failure.
Result<Routes> dor_routes(const SwitchGraph& g, const GridShape& shape, const DorCover& cover,
                          std::stop_token stop);

// Where the layers exceed the VLs (a 12x12x12 torus needs 8 boxes, 9 VLs
// with multicast's): dimension-order routes whose VL changes hop by hop,
// after torus-2QoS's datelines, with the SL the destination's alone. Its
// SL is 1 + a bit per ring of four or more: whether the destination lies
// in the ring's upper half (floor(k/2) or beyond). A shortest route going
// + from c to t wraps only when c - t >= ceil(k/2): t in the lower half
// and c in the upper, so the switch knows from its own coordinate and
// the SL whether a hop is before the wrap. Those hops take VL 2, all
// others VL 1 (going -, mirrored): each ring's VL 1 never crosses the
// wrap link and its VL 2 ends there, dimension order orders the
// dimensions, and any torus needs 3 data VLs with multicast's VL 0.
// Routes::hop_vls holds each switch's SL2VL per output port (the same
// from every input port; SLs no route uses dropped) and lid_layer the
// SLs. On a grid with links missing the hops over them are left unrouted,
// for the repair (repair_layered, on the one CDG of the VLs' channels);
// at most three such rings (1 + 2^rings of the 16 SLs).
// Up to `max_vls` data VLs (as the SLs allow), each VL past the
// datelines' gets a free SL mapped to it on every port, empty: room for
// the repair's detours that the datelines' CDG refuses (a layer of the
// general engine's kind). 0: the datelines' VLs alone.
Result<Routes> dor_dateline_routes(const SwitchGraph& g, const GridShape& shape,
                                   std::stop_token stop, std::uint32_t max_vls = 0);
// The SLs dateline routes on `shape` use, SL 0 (multicast) included.
std::uint32_t dor_dateline_sls(const GridShape& shape);
// Whether dateline routes on `shape` fit `max_vls` data VLs and the 16
// SLs.
bool dor_dateline_fits(const GridShape& shape, std::uint32_t max_vls);

// A link's step in the grid: its dimension, and whether it goes + (up a
// ring or path, over a ring's wrap from k-1 to 0). Nothing when the two
// switches are one grid point.
struct GridStep {
  std::uint32_t dim = 0;
  bool plus = false;
};
std::optional<GridStep> grid_step(const GridShape& shape, SwitchIndex s, SwitchIndex w);

}  // namespace subnetd::routing

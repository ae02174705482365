#pragma once
// GridShape: a torus, mesh or hypercube recognised in the switch graph — a
// Cartesian product of rings and paths — with every switch's coordinates,
// for dimension-order routing (routing/engines/dor.hpp).
//
// A fabric carries no coordinates (OpenSM's torus-2QoS is told them in a
// file); its graph carries enough. From a switch of least degree (a corner
// of every path dimension), two neighbours that share no other neighbour
// lie in one dimension (its two directions), two that close a square lie in
// two. Each dimension's line is walked straight on (the next switch shares
// no neighbour with the one before, but the current one) until it ends (a
// path) or comes back (a ring); every other switch is the corner that
// closes a square of switches already placed. Then every link must join
// coordinate neighbours and the links must be as many as the product has:
// anything else (a missing or extra link, a fat tree, a random graph) is
// no grid, and the error says why. Parallel links between two switches
// count as one link of the grid.
//
// The coordinates are canonical: they follow the switches' GUIDs (the least
// at 0 on every ring, in the lower half of every path, each dimension
// running towards its lower-GUID neighbour), not the search's origin nor
// the switches' index order. So a grid found whole or with gaps, sweep
// after sweep, keeps its coordinates, and its LIDs their layers (SLs).
// The least GUID's own death, or a neighbour's, would move them: given the
// last placement (grid_placement.hpp), the grid is placed as that was.
//
// A ring of four switches is found as two paths of two (the same graph), so
// a 4x4x4 torus is found as a 6-cube, which dimension-order routing routes
// on one VL.
//
// Pure computation on a SwitchGraph; O(switches x degree^2).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/result.hpp"
#include "routing/switch_graph.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

struct GridShape {
  std::vector<std::uint32_t> size;   // per dimension, >= 2
  std::vector<std::uint8_t> wrap;    // per dimension: 1 = a ring (size >= 3), 0 = a path
  std::vector<std::uint32_t> coord;  // by switch_index * dims() + dimension
  // Grid links no cable joins and grid points no switch holds
  // (grid_shape_with_gaps only: failed or unplugged cables, dead
  // switches, whose links count as missing too); 0 for a whole grid.
  std::uint64_t missing_links = 0;
  std::uint32_t missing_switches = 0;
  // With a seed given (grid_shape()'s `seed`): that the seed placed the
  // grid, or why it did not and how it was placed instead; for the
  // routes' notes. Empty without a seed.
  std::string placement;

  std::uint32_t dims() const { return static_cast<std::uint32_t>(size.size()); }
  std::uint32_t at(SwitchIndex s, std::uint32_t d) const {
    return coord[std::size_t{s.value} * dims() + d];
  }
  // "8x8x8 torus", "4x4 mesh", "2x2x2 mesh" (a cube), "8x3 grid (ring x
  // path)" when the dimensions differ in kind, "ring of 16", "line of 3".
  std::string describe() const;
  // The grid's points (the product of its sizes), and the links of the
  // whole grid (one per pair of grid neighbours).
  std::uint64_t points() const;
  std::uint64_t grid_links() const;
  // What is missing: "30 of its 1536 links", "1 of its 512 switches and
  // 36 of its 1536 links".
  std::string gaps() const;
};

struct GridPlacement;  // grid_placement.hpp

// The grid the switches of g form, or kNotFound saying why they form none
// (naming switches by their topo labels). With a `seed` (node GUIDs: the
// switch at the origin, then its neighbour one step up along each
// dimension), placed by it when it names such switches (place_by_seed);
// else, with `previous` (the placement of the last grid routed), placed
// as that one was wherever that keeps most switches where they were
// (place_as_before); else canonically.
Result<GridShape> grid_shape(const Topology& topo, const SwitchGraph& g,
                             const GridPlacement* previous = nullptr,
                             std::span<const Guid> seed = {});

// A grid with links missing: every switch a grid point and every link a
// grid link, but up to `max_missing` of the grid's links not cabled (dead
// cables, ports that bring-up screening disabled, and the links of grid
// points no switch holds: a dead switch). grid_shape() refuses
// such a fabric, which is what a torus turns into after a year of service;
// routed as a grid (dimension order, repaired around the gaps in its
// layers: engines/layered.hpp) it stays far better balanced than as any
// other topology.
//
// Gaps break the exact search's squares and lines, so here the origin may
// be any switch whose neighbours pair cleanly into dimensions, each
// dimension's line through it walked both ways. Every other switch is
// placed at a grid point next to placed ones: of the unplaced switches
// cabled to the point's placed neighbours, the one cabled to most of them,
// with no placed neighbour that is not a neighbour of the point; a tie
// waits for more of its neighbours. Origins are tried by degree (most
// first) until one places every switch and every link joins grid
// neighbours. O(origins tried x switches x degree^2). kNotFound for no
// grid; kOutOfRange, naming the grid, when more links are missing.
// `previous` and `seed` as grid_shape()'s.
Result<GridShape> grid_shape_with_gaps(const Topology& topo, const SwitchGraph& g,
                                       std::uint64_t max_missing,
                                       const GridPlacement* previous = nullptr,
                                       std::span<const Guid> seed = {});

}  // namespace subnetd::routing

#pragma once
// GridPlacement: where each switch of a grid sat (its coordinates, by
// GUID), as the routes computed on it were (Routes::grid). The next
// computation is given it (EngineOptions::previous_grid) and places the
// grid it finds the same way: same dimensions, same directions, same
// origin, wherever that agrees with most switches.
//
// Why: GridShape's canonical coordinates follow the least GUID (the least
// at the origin of every ring, each dimension towards its lower-GUID
// neighbour). When that switch dies, or a neighbour of it, the next
// canonical placement moves every coordinate, and with them the datelines
// and the SLs dimension order gives each LID: the hosts' PathRecords go
// stale although nothing near them changed. OpenSM's torus-2QoS avoids the
// same by being told its seed switches in a file; here the last placement
// is the seed.
//
// Pure computation; O(switches x dimensions) per reference switch tried.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "routing/grid_shape.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

struct GridPlacement {
  std::vector<std::uint32_t> size;   // as GridShape's
  std::vector<std::uint8_t> wrap;    // as GridShape's
  std::vector<std::uint64_t> guids;  // the switches' GUIDs, ascending
  std::vector<std::uint32_t> coord;  // by index in guids * dims() + dimension

  std::uint32_t dims() const { return static_cast<std::uint32_t>(size.size()); }
  // The coordinates of the switch with this GUID (dims() of them), or
  // nullptr when it was not in the grid.
  const std::uint32_t* find(std::uint64_t guid) const;
  bool operator==(const GridPlacement&) const = default;
};

// Whether a and b place the same switches the same way (both null: no
// grid either).
bool same_placement(const std::shared_ptr<const GridPlacement>& a,
                    const std::shared_ptr<const GridPlacement>& b);

// What makes `p` no placement of a grid, or "" when nothing does: a
// dimension of size < 2 or a ring of size < 3, a wrap or coordinate count
// that does not fit the dimensions and switches, GUIDs not strictly
// ascending, a coordinate past its dimension's size, two switches at one
// point. A placement read from the store is checked before use.
std::string placement_problem(const GridPlacement& p);

// The placement of `shape`'s switches (topo's switch indices).
GridPlacement placement_of(const Topology& topo, const GridShape& shape);

// Places `shape` as `previous` placed its switches: of the grid's
// symmetries (a dimension for each of previous's of the same size and
// kind, each run either way, each ring turned), the one that puts the most
// switches where previous had them, found from a switch both hold and its
// grid neighbours. Applied when that is more than half the switches both
// hold (switches that moved, or a grid found otherwise, keep shape's own
// coordinates): true then. A `previous` with a placement_problem() is
// not used (false).
bool place_as_before(const Topology& topo, GridShape& shape, const GridPlacement& previous);

// Places `shape` by a seed, as OpenSM's torus-2QoS takes its seed
// switches from its config: seed[0] the switch at the origin (0 on every
// dimension), seed[1 + j] its neighbour one step up along dimension j.
// Every SM given the same seed places a grid alike whatever it routed
// before, so a standby that takes over gives the LIDs the SLs the hosts
// hold. An error says why the seed does not apply (a switch not in the
// grid, not a grid neighbour of the origin, a count that does not match
// the dimensions, an origin inside a mesh's path); `shape` is unchanged
// then.
Result<void> place_by_seed(const Topology& topo, GridShape& shape, std::span<const Guid> seed);

}  // namespace subnetd::routing

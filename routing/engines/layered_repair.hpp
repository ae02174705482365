#pragma once
// Layer-stable repair of layered routes (issue 18, item 5): when the fabric
// changes under routes the layered engine put on several VLs, the
// destination LIDs keep their layers, and only the routes the change broke
// are mended, each in its own layer where it fits.
//
// Why not route again: a host keeps the SL of the PathRecord it resolved
// (RDMA CM, IPoIB's path cache, MPI's connection tables) for as long as its
// connections last, and the SL names the layer. A full recompute moves a
// destination to another layer as soon as the trees before it change, so
// old connections send on one VL along routes whose dependencies were
// checked on another: the credit-loop freedom the verifier proved no longer
// holds for them. Keeping each LID's layer keeps the SLs hosts hold right.
//
// The previous tables are matched by switch GUID. A destination LID is
// kept as it was when, from every switch of its part of the fabric, its
// entries still lead over live links to the switch and port that now
// deliver it; its routes' dependencies then make up its layer's channel
// dependency graph (CDG) again, with the dependencies of a broken LID's
// routes from the switches that still reach it, and layer 0 also holding
// every up*/down* dependency of Routes::vl0_rank (multicast's order: new
// switches rank after the old ones). Then each broken LID in turn: the
// switches cut off re-attach, the cheapest first (hops, then the
// load of the kept routes), each through a channel whose dependency on the
// next hop keeps the CDG acyclic; failing that, the LID gets a whole new
// tree in its layer (the engine's TreeGrower, engines/tree_grower.hpp).
// A LID that fits its layer no longer — a dense layer may have no room for
// the detour — moves: to the first free layer, then the escape layer (VL
// 0, which the general engine shares with multicast; up*/down* routes in
// multicast's order always fit it), where it fits; Routes::notes and
// LayeredRepairStats::lids_moved count those, whose hosts must resolve
// their PathRecords again (the SA answers the new SL at once). LIDs that
// had no layer (a port that was not there) are placed the same way.
// Switch LIDs (management traffic) whose routes broke take shortest paths.
// Layers per source (Routes::path_layers, the engine's branch layers): a
// LID keeps every source's layer, its routes' dependencies in every layer
// a switch carries (routing/arrival_layers.hpp; a broken one's standing
// part too), and no hot-spot step touches it. The switches cut off from a
// broken one re-attach each on its sources' layer, the dependencies down
// the path taken in every layer new to a hop; failing that, it is mended
// on its tree's layer (Routes::lid_layer) alone, like any LID, and counted
// in lids_moved (some sources' SL changes).
// Then, as asked (RepairBalance, below), the hot spots are spread.
//
// Per-hop VLs (Routes::hop_vls: dimension order on dateline VLs, whose
// LIDs' "layers" are SLs): the VLs' channels form one CDG (node a *
// num_vls + VL for channel a, cdg_frame with VLs), and each LID's routes
// are checked on the channels its SL takes (the switches' SL2VL, carried
// over by GUID; a new switch has none, and is refused). A LID that fits
// its own SL no longer tries the free SLs (one VL on every port), then
// SL 0's up*/down* escape; a new LID takes its switch's SL.
//
// Refused (an Error; the caller routes afresh and says why): previous
// routes that are not layered on several VLs, fewer VLs offered now than
// the layers need, a layer whose kept dependencies close a cycle on the
// new fabric (a link that came back can do that in layer 0), or a LID
// that fits no layer (kCdgCycle).
//
// Pure computation, single-threaded: const inputs, no I/O. Cost: the
// previous tables read once per LID (LIDs x switches), then per broken LID
// a search over its part of the fabric — the engine's cost for the routes
// the change broke, not for all of them.

#include <cstdint>
#include <stop_token>

#include "routing/engine.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

struct LayeredRepairStats {
  std::uint64_t lids_kept = 0;          // CA/router LIDs whose routes stand as they were
  std::uint64_t lids_regrown = 0;       // ... whose cut-off switches were re-attached
  std::uint64_t lids_placed = 0;        // ... that had no layer and were given one
  std::uint64_t entries_rewritten = 0;  // CA/router LID entries re-attached
  std::uint64_t trees_regrown = 0;      // LIDs given a whole new tree
  std::uint64_t lids_moved = 0;         // on another layer than before (their SL changes):
                                        // re-attached ones that fit theirs no longer, and
                                        // hot-spot moves; each LID once
  std::uint64_t switch_lids_rerouted = 0;
  // Layers per source (Routes::path_layers): intact, kept so (of lids_kept);
  // broken and re-attached, each source on its layer (of lids_regrown);
  // broken and on their tree's layer alone now (of lids_regrown and
  // lids_moved).
  std::uint64_t branch_lids_kept = 0;
  std::uint64_t branch_lids_reattached = 0;
  std::uint64_t branch_lids_merged = 0;
  std::uint64_t hot_spot_moves = 0;  // LIDs given a new tree off the busiest channel
  // Dependencies a new tree's search refused at the TreeGrower's cap
  // (TreeGrower::SearchBet) without knowing whether they close a cycle.
  std::uint64_t searches_given_up = 0;
};

// What the repair may change besides the routes the change broke: the hot
// spots too. A hot-spot step grows the LID that loads the busiest channel
// most a new tree, that channel weighing as a detour through every switch,
// kept if the busiest channel it crosses carries less than the busiest
// did; a LID no tree improves is left as it is, and the steps stop as the
// engine's do (kHotSpotStall, tree_grower.hpp).
//  - kBrokenOnly: no hot-spot step.
//  - kHotSpotsInLayer (the daemon's heavy sweeps): the steps keep each LID
//    in its layer, so no SL that hosts hold changes, and run only when the
//    repair re-attached or placed a LID: a sweep that found the fabric as
//    it was rewrites nothing. Detours crowd the links beside a gap; this
//    spreads them in the same heavy sweep, without the SL moves of routing
//    afresh, for more LFT blocks written (layered_repair_bench, 3 links
//    cut: random 200 switches, the busiest link 5,176 -> 4,840 paths,
//    routing afresh 4,832 but moving 194 LIDs' SLs; blocks written 727 ->
//    2,337; random 1,000: 13,256 -> 12,280, afresh 12,136 moving 1,079;
//    blocks 2,337 -> 9,737, 0.2 s more).
//  - kHotSpots (a grid with gaps routed afresh from dimension order:
//    engines/layered.cpp): its own layer first, then (its SL changes,
//    counted in lids_moved) the free layers and the escape layer. An 8x8x8
//    torus minus 2% of its links: the busiest link 1.53 -> 1.06 times the
//    lower bound (in its own layer only: 1.10), in 0.3 s more.
enum class RepairBalance : std::uint8_t { kBrokenOnly, kHotSpotsInLayer, kHotSpots };

// `previous` was computed for `previous_topo` (its lfts by that topology's
// switch_index); `topo` and `lids` are the fabric now.
Result<Routes> repair_layered(const Topology& topo, const LidMap& lids,
                              const Topology& previous_topo, const Routes& previous,
                              const EngineOptions& opts, std::stop_token stop,
                              LayeredRepairStats* stats = nullptr,
                              RepairBalance balance = RepairBalance::kBrokenOnly);

}  // namespace subnetd::routing

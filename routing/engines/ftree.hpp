#pragma once
// ftree: balanced fat-tree routing, deadlock-free with one VL, that keeps
// routing a degraded tree.
//
// Shape (fat_tree_shape). Leaves are the switches with CAs/routers attached;
// they are level 0, and every other switch sits at its hop distance from the
// nearest leaf. The fabric is a fat tree when every switch-to-switch link
// joins adjacent levels, and some switch has CAs if there are links at all (a
// lone switch is a one-level tree; an empty fabric is trivially routed). Failed
// links and switches do not change the verdict: a fat tree is layered, hence
// bipartite, and so is whatever remains of it, so hop distances from the
// leaves never put two linked switches on one level (a spine that lost all its
// down-links simply sits higher). Rings, tori, dragonflies and random graphs
// carry CAs on linked switches and fail; so does a tree with a CA cabled to a
// spine. Parts of the fabric with no CA at all (spines cut off from every
// leaf) are levelled downward from their lowest-GUID switch and not checked.
// A fabric whose only CAs hang off one corner of a mesh passes: it is routed
// as a tree over its BFS layers, which is legal and deadlock-free.
//
// Rank: a canonical order of the switches, top level first; within a level by
// the lowest rank among a switch's parents, then by GUID. Leaves in rank order
// are subtree-contiguous (a pod's edge switches are consecutive), and in a
// k-ary tree the i-th parent by rank of every edge switch is the i-th
// aggregation switch of its pod, whatever the port numbers of the cabling.
//
// Orientation. Up/down routing needs a total order of the switches: the
// link s->n is up when pos[n] < pos[s]; routes climb and then only descend
// (up*down*), so the channel dependency graph is acyclic and one VL suffices.
// ftree orders by rank, so "up" is "toward the higher level". Under the levels
// two top switches have no up/down path to each other, and neither may other
// switch pairs of a damaged tree; their switch LIDs (management traffic, see
// below) take shortest paths. If two CA-attached switches have no up/down
// path (a tree damaged into a "valley": leaf A keeps only spine 1, leaf B
// only spine 2, and only leaf C is cabled to both), data would be stranded:
// then the engine uses the connected order (ftree_order) instead and says so
// in Routes::notes. It is grown from the part's first top switch, placing
// next the highest-level, then lowest-rank switch beside those already
// placed, so every switch but the first has an earlier neighbour and every
// connected pair has an up/down path. (It is not the default because its few
// reversed links -- the first edge switch above the other aggregation
// switches of its pod, each of those above its core group -- funnel traffic
// through single links once a tree loses links.)
//
// Paths. For a destination switch t, each switch takes only neighbours one
// hop closer on a shortest legal path (updown_hops, routing/hop_table.hpp):
// one whose route to t starts upward goes up; one that can reach t going only
// down goes down (in the connected order also up where no switch above it may
// send t down into it: updn's rule, routing/lft_fill.hpp). On a degraded tree
// a switch thus climbs only toward ancestors that can still reach t.
// Routes::updown_rank = pos, and every entry toward a CA/router LID obeys it,
// as does every entry of a switch that has an up/down path to the LID.
//
// Balance (Zahavi's D-mod-K, as OpenSM's ftree spreads it). Destination LIDs
// get an index j: CA/router LIDs in leaf rank order, ascending LID within a
// leaf. A level-l switch sends LID j up over candidate floor(j / P_l) mod n of
// its n candidate up-links (in rank order of the parent, then port), with
// P_0 = 1 and P_{l+1} = P_l * W_l, W_l the most up-links any level-l switch
// has. So each up-link of a switch carries an equal share of the LIDs, and on
// an intact tree every switch of a level sends a given LID to the same parent
// index: all routes to one LID converge on one top switch, and the path down
// from there is unique (down-paths deterministic, no two LIDs of a leaf share
// a top switch while there are enough of them). Down-going LIDs with a choice
// (parallel links) take candidate j mod n. Where a degraded switch has only
// part of its up-links as candidates for some destinations, a LID keeps its
// D-mod-K up-link if that one is a candidate (its route still converges);
// the displaced LIDs, and those of partial down-going sets, go after all the
// indexed ones to the least-loaded candidate (rotating among equals, as updn
// does), which evens out what the failures took away.
// Candidates are numbered first link to each neighbour by rank, then second
// parallel link to each, so a leaf's consecutive LIDs reach different parents
// (and top switches) before they share one.
// Switch LIDs (management traffic) are routed the same way, indexed after
// the data LIDs, and do not count as load. A switch pair with no up/down path
// (two top switches) routes the switch LID on a shortest path instead: those
// are SMPs on VL15, which has no credits to deadlock on, and no data route
// ever enters such a path (a switch with an up/down path to t forwards only
// to switches that have one too; the verifier leaves switch traffic out of
// the dependency graph for this reason).
//
// Load: Routes::load counts, for every switch and CA/router LID, the
// switch-to-switch link its entry uses (as the other engines do), with
// ideal_max_routes the per-switch lower bound (lft.hpp). On an intact k-ary
// tree max_routes == ceil(ideal_max_routes).
//
// Work: one up/down hop table (S x S bytes) and, per source switch on the
// WorkerPool, 64 destination switches at a time: candidate sets by byte
// compares over hop rows, interned into classes, then every LID of a
// destination switch written with an O(1) pick. Tables do not depend on the
// number of threads.

#include <cstdint>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "routing/engine.hpp"
#include "routing/hop_table.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

inline constexpr std::uint32_t kNoLevel = UINT32_MAX;

// Levels and canonical rank of every switch; cheap (linear in the links).
struct FatTreeShape {
  bool fat_tree = false;
  std::string reason;                // why not a fat tree (empty when it is one)
  std::uint32_t num_levels = 0;      // highest level + 1
  std::vector<std::uint32_t> level;  // by switch_index; 0 = leaf
  std::vector<std::uint32_t> rank;   // by switch_index; a permutation of 0..S-1
  // By level: the most up-links (to level + 1) any switch of that level has.
  std::vector<std::uint32_t> up_width;
};

FatTreeShape fat_tree_shape(const Topology& topo, const SwitchGraph& g);

// The connected order described above, by switch_index.
std::vector<std::uint32_t> ftree_order(const SwitchGraph& g, const FatTreeShape& shape);

// What ftree routes by, for whoever wants to extend or repair its tables.
struct FtreeLayout {
  FatTreeShape shape;
  // Total order of the switches: s->n is up iff pos[n] < pos[s].
  std::vector<std::uint32_t> pos;
  bool level_order = true;  // pos = shape.rank; false: the connected order
  // Switch pairs whose switch LID takes a shortest path (no up/down path).
  std::uint64_t switch_pairs_off_updown = 0;
  // By level: the D-mod-K divisor P_l.
  std::vector<std::uint32_t> divisor;
  // By LID value: the destination index j (kNoIndex for unrouted LIDs).
  static constexpr std::uint32_t kNoIndex = UINT32_MAX;
  std::vector<std::uint32_t> dest_index;
  std::vector<std::string> notes;

  bool up(SwitchIndex s, SwitchIndex n) const { return pos[n.value] < pos[s.value]; }
};

// The hop tables ftree routes by.
struct FtreeTables {
  HopTable updown;    // under FtreeLayout::pos
  HopTable shortest;  // only when some switch pair has no up/down path (else empty)
};

// Fails with kUnsupported when `shape` is not a fat tree (the reason says
// which link breaks the levels).
Result<FtreeLayout> ftree_layout(const Topology& topo, const SwitchGraph& g, FatTreeShape shape,
                                 WorkerPool& pool, std::stop_token stop, FtreeTables& tables);

// The whole engine on an already built graph and shape (AutoEngine shares
// them with its detection).
Result<Routes> ftree_routes(const Topology& topo, const SwitchGraph& g, FatTreeShape shape,
                            WorkerPool& pool, std::stop_token stop);

class FtreeEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "ftree"; }
  Result<Routes> compute(const Topology& topo, const LidMap& lids, const EngineOptions& opts,
                         WorkerPool& pool, std::stop_token stop) const override;
};

}  // namespace subnetd::routing

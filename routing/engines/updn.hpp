#pragma once
// updn: up*/down* routing, deadlock-free on any topology with one VL.
//
// The switches get a total order; a link s->n is "up" when n comes before s.
// Routes climb first and then only descend (up*down*), so the channel
// dependency graph is acyclic: order up-channels by their head's position
// (descending) and put every down-channel after them, by its head's position
// (ascending); every dependency a route creates points forward.
//
// The order (updn_order):
//  1. Ranks. With configured root GUIDs: hops to the nearest root (OpenSM's
//     ranking). Without, per connected part of the fabric:
//     - tiered parts (some switches carry no CA and sit a hop or more from
//       every CA switch: fat trees, PGFTs): rank = max height - height,
//       height = hops to the nearest CA-carrying switch. The tier farthest
//       from the CAs (spines, cores) is on top with rank 0. Heights hardly
//       change when links fail, so a degraded fat tree keeps its tiers.
//     - other parts (CAs on every switch — rings, tori, meshes, random
//       graphs, dragonflies — or no CAs): one root at the centre (least
//       eccentricity, lowest GUID on ties), rank = hops from it.
//     The roots are the rank-0 switches.
//  2. Position: starting from the lowest-GUID root of each part, switches are
//     added one at a time, always the smallest (rank, GUID) among those next
//     to the switches already placed. With a single root and BFS ranks this
//     is exactly (rank, GUID) order. With several rank-0 switches it still
//     leaves one switch with no up-link per part (every other switch is next
//     to an earlier one), and that is what makes every pair routable:
//     ordering purely by (rank, GUID) makes every root a dead end upward, so
//     two roots that are not cabled to each other (fat-tree spines never are)
//     could not reach one another. In a fat tree this costs nothing: each
//     spine gets one earlier neighbour and every shortest CA-to-CA path
//     remains up*down*.
//
// Per destination switch the hop table is a reverse BFS in which each switch
// is either all-down (D) or starts upward (U) (routing/hop_table.hpp); LFT
// entries are then balanced among legal next hops (routing/lft_fill.hpp).

#include <span>
#include <string>
#include <vector>

#include "routing/engine.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

struct UpDownOrder {
  std::vector<std::uint32_t> pos;   // by switch_index: place in the order (0 = first)
  std::vector<std::uint32_t> rank;  // by switch_index: hops to the nearest root
  std::vector<SwitchIndex> roots;   // the switches of rank 0, ascending
  std::vector<std::string> notes;   // how the roots were chosen, per part
};

Result<UpDownOrder> updn_order(const Topology& topo, const SwitchGraph& g,
                               std::span<const Guid> root_guids, WorkerPool& pool,
                               std::stop_token stop);

class UpdnEngine final : public RoutingEngine {
 public:
  std::string_view name() const override { return "updn"; }
  Result<Routes> compute(const Topology& topo, const LidMap& lids, const EngineOptions& opts,
                         WorkerPool& pool, std::stop_token stop) const override;
};

}  // namespace subnetd::routing

#pragma once
// FailoverPlan: the port groups an SM arms on switches for switch-local fast
// failover (issue 14; discovery/README.md, "Fast failover"), computed from
// routes that obey an up/down order (Routes::updown_rank: ftree, updn), or
// from routes on several VLs (Routes::lid_layer: layered, dimension order;
// "Routes on several VLs" below).
//
// A switch forwards a LID by its LFT port while that port lives; when it
// dies, by a live port of the LID's group; with none left it notifies its
// neighbours, which stop sending it traffic for the LID's switch. The plan
// gives every (switch s, destination switch t) pair one group:
//   - s reaches t going only down (down_ok): the down-links to a neighbour n
//     that is t, or that reaches t going only down and whose every entry for
//     t's CA/router LIDs goes down ("descends"). A packet that came down into
//     n must keep going down there, so n may not be one that climbs.
//   - otherwise, if s has an up*/down* route to t (legal): the up-links to a
//     neighbour that has one. Those up-links also go to a down_ok switch
//     whose own entries already climb for t (updn allows that where no
//     switch above sends t down into it): it only carries t from below.
//   - otherwise (an orphan pair, lft.hpp: no CA traffic enters it): none.
//   - and, always, the ports of s's own LFT entries for t's CA/router LIDs,
//     so that the group is every port the switch may use for t.
// Along any mix of these choices a packet climbs while the order strictly
// falls and then only descends: no loop, and every route is up*down*. The
// channel dependency graph of every state the switches can reach (any ports
// dead, any notifications received) is therefore a subgraph of one acyclic
// graph. routing/failover_verify.hpp checks that without trusting it.
//
// Ids: a switch's distinct groups get ids 1..255 (0 = none) in the order of
// their first destination. A switch that needs more distinct sets gives the
// pairs that do not fit the largest group already numbered that lies within
// their set and has two ports or more (any subset of legal ports is legal),
// or none; stats().pairs_narrowed counts them. A LID's group on switch s is
// the group of (s, the switch that delivers the LID); s's own LIDs and the
// LIDs s delivers itself have none.
// Notifications go to every switch neighbour (a receiver that does not send
// the destination through the sender ignores it).
//
// Routes on several VLs: traffic to a LID stays on its layer's VL, so a
// group may only add dependencies to that layer's channel dependency graph.
// A destination is then a "class": one switch's CA/router LIDs on one layer
// (switch LIDs have none: management traffic is not under failover). Per
// layer the plan starts from the CDG of the routes as they are (every
// switch's entries, LID by LID, plus on layer 0 every up*/down* dependency
// of Routes::vl0_rank, which multicast may use), kept acyclic online
// (routing/ordered_dag.hpp). Class by class, each switch (nearest the
// class's switch first) tries each channel s->w, its own entries first,
// then the rest nearest first, until its group holds two ports (small
// groups leave the dense layers room for the next classes; see the .cpp):
// the channel joins s's group if the
// dependencies it adds keep the layer acyclic: from every channel the
// class may arrive at s by (neighbours' entries and groups), and into every
// channel w may send it on (w's entries and group; none when w is the
// class's switch). A LID whose entry died leaves by its group, never by
// another LID's entry outside it, so every state's dependencies are in the
// layer's graph: no credit loop on any VL and no forwarding loop. Classes
// planned first get the room a dense layer has left; stats() count the
// pairs with an alternative. Beyond classes x channels = 2^23 (random
// graphs of degree 16: 600 switches, 737 classes, search; 1,000, 1,150
// classes, do not) a channel joins only where its dependencies agree
// with the layer's order as it stands, without searching for a new one
// (random 1,000 switches of degree 16: 2 s, not 14). Switches keep their notification state
// per destination switch (discovery/sim/sim_failover.cpp): a switch stranded for one class of t
// tells its neighbours about t, and they drop the port for all of t's classes, a subset of each
// group, which stays safe.
//
// Routes with layers per source (Routes::path_layers: the engine's branch
// layers, whose SL depends on the source): such a LID's traffic is, at
// each switch, on the layers of the sources whose routes pass there
// (routing/arrival_layers.hpp; their dependencies are in those layers'
// graphs from the start). It belongs to class (t, k) at the switches that
// carry layer k, and takes that class's group where k is the only layer
// they carry: a channel s->w joins a class's group only where w carries
// the layer of every such LID that s sends by it. Where branches on
// several layers meet (the neighbours of t, in the engine's trees) its
// group is its entry alone: no detour mixes the layers, a dead entry
// strands the switch and its neighbours turn away. lid_group(s, l) reads
// the group switch by switch; lid_class(l) is kNoClass for them.
//
// Routes on per-hop VLs (Routes::hop_vls, dimension order with datelines):
// a class is one switch's CA/router LIDs on one SL (lid_layer holds SLs),
// and the layers' graphs are one over (channel, VL) nodes (cdg_frame with
// VLs), a channel's node for a class the VL its port's SL2VL gives the
// class's SL. The same groups, the same search; kInvalidArgument when an
// entry leaves by a port whose SL2VL drops the class's SL.
//
// Memory: S x S bytes of group ids (S x classes on several VLs) (64 MB at 8,000 switches), up to
// 255 x 32 bytes of masks per switch, 4 bytes per LID; 2 x S x S bits of closures and S x S bits of
// "descends" while it is built. Pure computation (no I/O); build() runs on the caller's thread and
// `pool`.

#include <cstdint>
#include <span>
#include <stop_token>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/port_mask.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

class SwitchGraph;

struct FailoverPlanStats {
  std::uint32_t switches = 0;
  std::uint32_t destinations = 0;            // switches that deliver some LID
  std::uint32_t classes = 0;                 // destination classes (several VLs)
  std::uint32_t lids_per_switch = 0;         // LIDs whose group depends on the switch
  std::uint8_t layers = 1;                   // VLs the classes are on
  std::uint64_t pairs_grouped = 0;           // (switch, class) pairs with a group
  std::uint64_t pairs_with_alternative = 0;  // ... whose group has two ports or more
  std::uint64_t pairs_narrowed = 0;          // group table full: a smaller group used
  std::uint32_t groups = 0;                  // group ids in use, all switches
  std::uint32_t max_groups = 0;              // most on one switch
  std::uint64_t memory_bytes = 0;
  double seconds = 0;
};

class FailoverPlan {
 public:
  static constexpr unsigned kMaxGroups = 255;

  // kUnsupported when the routes carry neither an up/down order nor
  // layers (minhop); kInvalidArgument when they do not fit the topology;
  // kCdgCycle when a layer of routes on several VLs is not acyclic.
  //
  // Routes on several VLs: up to `search_work` classes x channels, the
  // layer's order is searched for room for a group's dependencies; past
  // it they must agree with the order as it stands (per-hop VLs: searched
  // up to a few nodes). See failover_plan.cpp; tests lower it to take the
  // larger fabrics' way on small ones.
  static constexpr std::uint64_t kSearchWork = std::uint64_t{1} << 23;
  static Result<FailoverPlan> build(const Topology& topo, const LidMap& lids, const Routes& routes,
                                    WorkerPool& pool, std::stop_token stop = {},
                                    std::uint64_t search_work = kSearchWork);

  std::uint32_t num_switches() const { return n_; }
  // Destination classes. One VL: class t is switch t. Several: a switch's
  // CA/router LIDs on one layer.
  static constexpr std::uint32_t kNoClass = ~0U;
  std::uint32_t num_classes() const { return classes_; }
  std::uint8_t num_layers() const { return layers_; }
  // The class of a LID's traffic (kNoClass: not under failover, or
  // per_switch(l)).
  std::uint32_t lid_class(Lid l) const {
    const std::uint32_t c = l.value < lid_class_.size() ? lid_class_[l.value] : kNoClass;
    return (c & kPerSwitch) != 0 ? kNoClass : c;
  }
  // Whether the LID's traffic takes layers per source (Routes::path_layers),
  // its group then chosen switch by switch (lid_group).
  bool per_switch(Lid l) const {
    return l.value < lid_class_.size() && lid_class_[l.value] != kNoClass &&
           (lid_class_[l.value] & kPerSwitch) != 0;
  }
  SwitchIndex class_switch(std::uint32_t c) const { return SwitchIndex{class_switch_[c]}; }
  std::uint8_t class_layer(std::uint32_t c) const { return class_layer_[c]; }
  std::uint8_t class_group_id(SwitchIndex s, std::uint32_t c) const {
    return gid_[std::size_t{s.value} * classes_ + c];
  }
  const PortMask& class_group(SwitchIndex s, std::uint32_t c) const {
    return masks_[group_first_[s.value] + class_group_id(s, c)];
  }
  // Groups of switch s by id; [0] is the empty "none".
  std::span<const PortMask> groups(SwitchIndex s) const {
    return std::span<const PortMask>(masks_).subspan(
        group_first_[s.value], group_first_[s.value + 1] - group_first_[s.value]);
  }
  // One VL only (class t is switch t): the group of (s, destination t).
  std::uint8_t group_id(SwitchIndex s, SwitchIndex t) const { return class_group_id(s, t.value); }
  const PortMask& group(SwitchIndex s, SwitchIndex t) const { return class_group(s, t.value); }
  // Highest LID the plan covers (the LidMap's).
  Lid max_lid() const { return Lid{static_cast<std::uint32_t>(home_.size()) - 1}; }
  // The switch that delivers a LID (kNoSwitch: none).
  SwitchIndex home(Lid l) const {
    return l.value < home_.size() ? SwitchIndex{home_[l.value]} : kNoSwitch;
  }
  // The group switch s forwards a LID by when its entry dies (0: none).
  std::uint8_t lid_group(SwitchIndex s, Lid l) const {
    const SwitchIndex t = home(l);
    if (!t.valid() || t == s || l.value >= lid_class_.size()) return 0;
    const std::uint32_t c = lid_class_[l.value];
    if (c == kNoClass) return 0;
    if ((c & kPerSwitch) != 0) return split_gid_[std::size_t{c & ~kPerSwitch} * n_ + s.value];
    return class_group_id(s, c);
  }
  const PortMask& lid_group_ports(SwitchIndex s, Lid l) const {
    return masks_[group_first_[s.value] + lid_group(s, l)];
  }
  const PortMask& notify(SwitchIndex s) const { return notify_[s.value]; }
  const FailoverPlanStats& stats() const { return stats_; }

  // Tests that feed the verifier a plan it must refuse.
  PortMask& mutable_group_for_test(SwitchIndex s, std::uint8_t id) {
    return masks_[group_first_[s.value] + id];
  }
  std::uint32_t& mutable_lid_class_for_test(Lid l) { return lid_class_[l.value]; }

 private:
  static Result<FailoverPlan> build_layered(const Topology& topo, const LidMap& lids,
                                            const Routes& routes, WorkerPool& pool,
                                            std::stop_token stop, std::uint64_t search_work);
  // Lays out every switch's numbered groups (per_switch[s][id]), the
  // notify ports (every switch link) and the statistics they give.
  void finish(const SwitchGraph& g, std::vector<std::vector<PortMask>> per_switch);

  // lid_class_ of a LID whose group is per switch: this bit and its row
  // of split_gid_.
  static constexpr std::uint32_t kPerSwitch = 1U << 31;

  std::uint32_t n_ = 0;
  std::uint32_t classes_ = 0;
  std::uint8_t layers_ = 1;
  std::vector<std::uint32_t> lid_class_;     // by LID
  std::vector<std::uint32_t> class_switch_;  // by class
  std::vector<std::uint8_t> class_layer_;    // by class
  std::vector<std::uint8_t> gid_;            // S x classes
  std::vector<std::uint32_t> group_first_;   // S + 1 offsets into masks_
  std::vector<PortMask> masks_;
  std::vector<PortMask> notify_;
  std::vector<std::uint32_t> home_;      // by LID: delivering switch index
  std::vector<std::uint8_t> split_gid_;  // per-switch LIDs: row x S group ids
  FailoverPlanStats stats_;
};

}  // namespace subnetd::routing

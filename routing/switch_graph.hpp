#pragma once
// SwitchGraph: the switch-to-switch part of a Topology in CSR form, and where
// every LID attaches to it.
//
// Routing only ever forwards between switches; CAs and routers are leaves that
// hang off one switch port each. So engines and the verifier work on this
// graph: switches by Topology switch_index (dense 0..S-1), one arc per cabled
// switch port (parallel links stay separate arcs, each with its own pair of
// ports), arcs of a switch ordered by local port. A LID's attachment is the
// switch that delivers it and the port it delivers it on (the CA port, or 0
// for the switch's own LID).
//
// Owner: built by whoever routes or verifies (one per run, from const inputs);
// immutable afterwards and safe to read from any number of threads.
// Invariants: arcs come in pairs (s,p)->(n,q) and (n,q)->(s,p); no arc joins a
// switch to itself; attachment(l).port is a port of attachment(l).sw that is
// cabled to l's owner (or 0 for a switch LID).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

inline constexpr std::uint32_t kNoArc = UINT32_MAX;

struct SwitchArc {
  SwitchIndex to;           // neighbour
  PortNum local_port = 0;   // cable's port on this switch
  PortNum remote_port = 0;  // cable's port on the neighbour
};

// Where a LID leaves the switch fabric.
struct LidAttachment {
  SwitchIndex sw;    // delivering switch; kNoSwitch = not routable
  PortNum port = 0;  // its port toward the owner; 0 = the switch's own LID
  bool routable() const { return sw.valid(); }
};

class SwitchGraph {
 public:
  // Fails on a LidMap that does not fit the Topology (owner out of range).
  // Links the graph cannot use are skipped and described in notes(): CA or
  // router ports cabled to another CA/router (no switch delivers their LIDs),
  // a switch port cabled back to the same switch, links on port 255 (the LFT's
  // "drop" value).
  static Result<SwitchGraph> build(const Topology& topo, const LidMap& lids);

  std::uint32_t num_switches() const { return static_cast<std::uint32_t>(first_arc_.size() - 1); }
  std::uint32_t num_arcs() const { return static_cast<std::uint32_t>(arcs_.size()); }

  // Arcs of switch s; arc i of the span has global index first_arc(s) + i.
  std::span<const SwitchArc> arcs(SwitchIndex s) const {
    return std::span<const SwitchArc>(arcs_).subspan(first_arc_[s.value],
                                                     first_arc_[s.value + 1] - first_arc_[s.value]);
  }
  // Global index of s's first arc; first_arc(SwitchIndex{num_switches()}) is
  // num_arcs().
  std::uint32_t first_arc(SwitchIndex s) const { return first_arc_[s.value]; }
  const SwitchArc& arc(std::uint32_t a) const { return arcs_[a]; }
  SwitchIndex arc_source(std::uint32_t a) const { return arc_from_[a]; }
  // Global index of the arc leaving switch s on port p, kNoArc when port p is
  // not cabled to another switch (unconnected, a CA, out of range).
  std::uint32_t arc_at_port(SwitchIndex s, PortNum p) const {
    if (p > num_ports_[s.value]) return kNoArc;
    return port_arc_[port_base_[s.value] + p];
  }
  // The switch at the far end of port p of switch s, kNoSwitch when port p
  // is not cabled to another switch (one lookup, for per-LID hot loops).
  SwitchIndex peer_at_port(SwitchIndex s, PortNum p) const {
    if (p > num_ports_[s.value]) return kNoSwitch;
    return port_peer_[port_base_[s.value] + p];
  }
  std::uint8_t num_ports(SwitchIndex s) const { return num_ports_[s.value]; }
  std::uint32_t max_degree() const { return max_degree_; }

  // Switch-graph connected components: component(s) in [0, num_components()).
  std::uint32_t component(SwitchIndex s) const { return component_[s.value]; }
  std::uint32_t num_components() const { return num_components_; }

  // LIDs 0..max_lid of the LidMap.
  Lid max_lid() const { return Lid{static_cast<std::uint32_t>(attach_.size()) - 1}; }
  LidAttachment attachment(Lid l) const {
    return l.value < attach_.size() ? attach_[l.value] : LidAttachment{};
  }
  std::span<const LidAttachment> attachments() const { return attach_; }
  // True when at least one CA/router port hangs off switch s.
  bool has_endpoints(SwitchIndex s) const { return has_endpoints_[s.value] != 0; }

  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::vector<std::uint32_t> first_arc_;  // S+1 offsets into arcs_
  std::vector<SwitchArc> arcs_;
  std::vector<SwitchIndex> arc_from_;     // source switch of each arc
  std::vector<std::uint32_t> port_base_;  // per switch, offset of its port 0 in port_arc_
  std::vector<std::uint32_t> port_arc_;   // (switch, port) -> arc or kNoArc
  std::vector<SwitchIndex> port_peer_;    // (switch, port) -> neighbour switch or kNoSwitch
  std::vector<std::uint8_t> num_ports_;
  std::vector<std::uint32_t> component_;
  std::vector<std::uint8_t> has_endpoints_;
  std::uint32_t num_components_ = 0;
  std::uint32_t max_degree_ = 0;
  std::vector<LidAttachment> attach_;  // by LID value, 0..max_lid
  std::vector<std::string> notes_;
};

inline constexpr std::uint32_t kUnreached = UINT32_MAX;

// Breadth-first over switch-to-switch links from the switches already in
// `queue` (their `dist` set): appends every switch it reaches to `queue` and
// sets its `dist` (by switch index) to the hops from the nearest start.
// Switches whose `dist` is not kUnreached are left alone.
void bfs_hops(const SwitchGraph& g, std::vector<SwitchIndex>& queue,
              std::vector<std::uint32_t>& dist);

// Hops from every switch (by switch index) to the nearest of `sources`
// (kUnreached where no source is in its part).
std::vector<std::uint32_t> hops_to_nearest(const SwitchGraph& g,
                                           std::span<const SwitchIndex> sources);

}  // namespace subnetd::routing

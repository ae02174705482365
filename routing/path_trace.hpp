#pragma once
// Path trace: the hops a LID-routed packet takes from a source port to a
// destination LID through the computed forwarding tables, as ibtracert walks
// them on a live fabric.
//
// Pure function of const inputs (Topology, LidMap, Routes): no I/O, no
// clocks. Used by the gRPC TracePath call and by tests as an oracle of what
// the programmed tables do.
//
// The walk: a trace that starts at a CA/router port leaves by that port and
// enters the peer across its cable; a trace that starts at a switch (port 0)
// starts with that switch's own table. At every switch the LFT entry for the
// DLID gives the output port: 0 means the switch itself is the destination,
// 255 (drop) loses the packet, any other port must be cabled and not DOWN,
// and the packet enters the node across it. It is delivered when it reaches
// a CA/router port that owns the DLID (within its 2^LMC range) or a switch
// whose table sends the DLID to port 0 and that owns it.
//
// Two kinds of failure, kept apart:
//   * The question is malformed (source is not a port a trace can start
//     from, the DLID is not assigned, tables missing): trace_path returns an
//     Error (kInvalidArgument / kNotFound).
//   * The packet is lost on the way: trace_path returns a PathTrace whose
//     `status` holds the Error (kUnreachable: drop entry or dead end at
//     switch X; kForwardingLoop: a switch is visited twice; kOutOfRange: the
//     hop limit was reached) and whose `hops` end where the packet was lost.
// Messages name nodes by description and GUID, ports and the LID.

#include <cstdint>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

struct TraceHop {
  NodeId node;
  PortNum in_port = 0;   // port the packet enters by; 0 at the source
  PortNum out_port = 0;  // port it leaves by; 0 at the destination (or where it is lost)
  bool operator==(const TraceHop&) const = default;
};

struct PathTrace {
  PortRef source;
  Lid dlid;
  // Source first. When `status` is ok the last hop is the destination.
  std::vector<TraceHop> hops;
  // ok: delivered. Otherwise why and where the packet is lost.
  Result<void> status;
  bool complete() const { return status.ok(); }
};

struct TraceOptions {
  // Switches a packet may cross before the trace gives up (IBA bounds
  // directed routes at 64 hops; LID-routed packets have no hop count, a
  // real fabric drops them when their lifetime runs out).
  std::uint32_t max_switch_hops = 64;
};

// `source`: a CA/router port (1..num_ports, cabled) or a switch's port 0.
Result<PathTrace> trace_path(const Topology& topo, const LidMap& lids, const Routes& routes,
                             PortRef source, Lid dlid, const TraceOptions& opts = {});

// "leaf3 (0x0002c90000000003)": how trace errors name a node.
std::string describe_node(const Topology& topo, NodeId node);

}  // namespace subnetd::routing

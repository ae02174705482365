#pragma once
// The SLtoVLMappingTable and VLArbitrationTable subnetd programs on every
// port, from the port's OperationalVLs (IBA 7.6.6, 14.2.5.8-9).
//
// Policy: SL s travels on VL (s mod n), n the port's data VLs; the low-
// priority arbitration table gives each of the n VLs one entry of weight
// 64 (equal shares), the high-priority table is empty (VLHighLimit 0, as
// the Programmer writes it). Routing on one VL enables one
// (port_link_settings), so every SL lands on VL0 and VL0 gets the link: a
// packet with another SL is carried instead of dropped for a VL the port
// does not run.
//
// Why this stays deadlock-free for any n: a packet's VL is a function of
// its SL and the output port alone, so a cycle of (link, VL) channels
// projects onto a cycle of links in the single-VL channel dependency
// graph, which the verifier proves acyclic. Routes on layers (the layered
// engine) put layer i on SL i, which is VL i where the port runs the
// layers' VLs.
//
// Per-hop VLs (Routes::hop_vls: dimension order with datelines) are the
// exception: a switch's SL2VL for each output port is the routes' own
// (the same from every input port), sent per output port; CA ports keep
// the policy above (nothing waits on a channel out of a CA).
//
// HeldVls: what each port was last acknowledged to hold, as the number of
// data VLs its arbitration table was written for and its SL2VL table, so
// that a pass sends only ports whose tables changed or that were never
// written (a switch that reset is forgotten, as for the other held
// tables).

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery {

// PortInfo:CapabilityMask:IsSLMappingSupported.
inline constexpr std::uint32_t kCapIsSlMappingSupported = 1U << 6;
// SLtoVLMappingTable attribute modifier bits of switches that claim
// SwitchInfo:OptimizedSLtoVLMappingProgramming: the table applies to every
// input port (with the output port in bits 7:0) or, with both, to every
// input and output port.
inline constexpr std::uint32_t kSl2VlAllInputs = 1U << 17;
inline constexpr std::uint32_t kSl2VlAllOutputs = 1U << 16;
// Weight of each data VL's entry in the low-priority arbitration table.
inline constexpr std::uint8_t kVlArbWeight = 64;

// Data VLs of a PortInfo:OperationalVLs (VLCap) code: 1 -> 1, 2 -> 2,
// 3 -> 4, 4 -> 8, 5 -> 15; 0 (not read) -> 1.
unsigned data_vls(std::uint8_t operational_vls);

mad::SlToVlMappingTable sl2vl_table(unsigned data_vls);

// The SL2VL table output port `out` of `node` is to hold (a switch's from
// every input port) with `data_vls`: the policy above, or a switch's
// per-hop VLs from `routes` (Routes::hop_vls).
mad::SlToVlMappingTable port_sl2vl_table(const routing::Routes& routes, const routing::Node& node,
                                         PortNum out, unsigned data_vls);

// What a port's VL tables hold: the data VLs its arbitration table shares
// the link among (0: unknown), and its SL2VL table, SL 0 in the top
// nibble (sl2vl_bits).
struct PortVlTables {
  unsigned vls = 0;
  std::uint64_t sl2vl = 0;
  bool operator==(const PortVlTables&) const = default;
};
std::uint64_t sl2vl_bits(const mad::SlToVlMappingTable& t);

// Block `block` (1 low 0-31, 2 low 32-63, 3 high 0-31, 4 high 32-63) of
// the arbitration table for `data_vls`, or nullopt when the port's caps
// (PortInfo:VLArbitrationLowCap/HighCap, entries) have no such block.
std::optional<mad::VlArbitrationTable> vlarb_block(unsigned data_vls, unsigned block,
                                                   std::uint8_t low_cap, std::uint8_t high_cap);

class HeldVls {
 public:
  // What the port's tables hold (vls 0 when unknown).
  PortVlTables held(Guid node, PortNum port) const;
  void set(Guid node, PortNum port, PortVlTables tables);
  void forget(Guid node) { held_.erase(node); }
  void clear() { held_.clear(); }

 private:
  std::unordered_map<Guid, std::vector<PortVlTables>> held_;  // by node, then port
};

}  // namespace subnetd::discovery

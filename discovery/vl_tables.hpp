#pragma once
// The SLtoVLMappingTable and VLArbitrationTable subnetd programs on every
// port, from the port's OperationalVLs (IBA 7.6.6, 14.2.5.8-9).
//
// Policy: SL s travels on VL (s mod n), n the port's data VLs; the low-
// priority arbitration table gives each of the n VLs one entry of weight
// 64 (equal shares), the high-priority table is empty (VLHighLimit 0, as
// the Programmer writes it). subnetd routes every path on SL 0 today and
// enables one VL (port_link_settings), so every SL lands on VL0 and VL0
// gets the link: a packet with another SL is carried instead of dropped
// for a VL the port does not run.
//
// Why this stays deadlock-free for any n: a packet's VL is a function of
// its SL and the output port alone, so a cycle of (link, VL) channels
// projects onto a cycle of links in the single-VL channel dependency
// graph, which the verifier proves acyclic. (The VL-layered engine of
// issue 18 will map SLs to layers instead.)
//
// HeldVls: what each port was last acknowledged to hold, as the number of
// data VLs its tables were written for, so that a pass sends only ports
// whose VLs changed or that were never written (a switch that reset is
// forgotten, as for the other held tables).

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "routing/ids.hpp"

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

// Block `block` (1 low 0-31, 2 low 32-63, 3 high 0-31, 4 high 32-63) of
// the arbitration table for `data_vls`, or nullopt when the port's caps
// (PortInfo:VLArbitrationLowCap/HighCap, entries) have no such block.
std::optional<mad::VlArbitrationTable> vlarb_block(unsigned data_vls, unsigned block,
                                                   std::uint8_t low_cap, std::uint8_t high_cap);

class HeldVls {
 public:
  // Data VLs the port's tables hold, 0 when unknown.
  unsigned held(Guid node, PortNum port) const;
  void set(Guid node, PortNum port, unsigned data_vls);
  void forget(Guid node) { held_.erase(node); }
  void clear() { held_.clear(); }

 private:
  std::unordered_map<Guid, std::vector<std::uint8_t>> held_;  // by node, then port
};

}  // namespace subnetd::discovery

#pragma once
// Vendor-specific SMP attributes for switch-local fast failover (issue 14;
// layouts in discovery/README.md, "Fast failover attributes"). They are
// subnetd's own: an SM sends them only to a switch whose NodeInfo VendorID
// is kSubnetdVendorId (the simulator's switches); other vendors use the
// same attribute IDs for other things (NVIDIA's adaptive routing among
// them), and ibsim drops vendor SMPs unanswered.

#include <array>
#include <cstdint>

#include "discovery/mad/smp.hpp"

namespace subnetd::discovery::mad {

// NodeInfo:VendorID of a node that speaks subnetd's vendor attributes (the
// extended-LID ones of 0xFF10-0xFF12 and these). The local bit of the first
// octet is set, so it is in the IEEE CID space and no manufacturer's OUI.
inline constexpr std::uint32_t kSubnetdVendorId = 0xFA57F0;

// Attributes: AttrId::kFailoverInfo (0xFF30), kFailoverGroupTable (0xFF31),
// kFailoverLidGroupTable (0xFF32), kFailoverNotifyConfig (0xFF33).

// Groups per FailoverGroupTable block, LIDs per FailoverLidGroupTable block.
inline constexpr unsigned kFailoverGroupsPerBlock = 2;
inline constexpr unsigned kFailoverLidsPerBlock = 64;
// Group ids are one byte; 0 means "no group".
inline constexpr unsigned kFailoverMaxGroups = 255;

// A set of switch ports (0..255) as on the wire: bit (p % 8) of byte p / 8.
using WirePortMask = std::array<std::uint8_t, 32>;
inline bool mask_test(const WirePortMask& m, unsigned p) {
  return p < 256 && ((m[p / 8] >> (p % 8)) & 1) != 0;
}
inline void mask_set(WirePortMask& m, unsigned p) {
  if (p < 256) m[p / 8] = static_cast<std::uint8_t>(m[p / 8] | (1U << (p % 8)));
}

// attr_mod 0. Capabilities, limits and timings are read-only; a Set writes
// `enabled`, `group_top`, `lid_top`.
struct FailoverInfo {
  bool cap_local = false;           // can fail over to a group port by itself
  bool cap_notify = false;          // sends and applies fault notifications
  bool enabled = false;             // failover (and notification) armed
  std::uint16_t group_cap = 0;      // group ids 1..group_cap are supported
  std::uint16_t group_top = 0;      // highest group id in use
  std::uint32_t lid_top = 0;        // highest LID with an entry in the LID group table
  std::uint32_t detect_ns = 0;      // time to notice a dead port
  std::uint32_t notify_hop_ns = 0;  // time a notification takes per link
  static FailoverInfo decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const FailoverInfo&) const = default;
};

// attr_mod = block b: groups kFailoverGroupsPerBlock * b + i.
struct FailoverGroupBlock {
  std::array<WirePortMask, kFailoverGroupsPerBlock> groups{};
  static FailoverGroupBlock decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const FailoverGroupBlock&) const = default;
};

// attr_mod = block b: the group ids of LIDs kFailoverLidsPerBlock * b + i.
struct FailoverLidGroupBlock {
  std::array<std::uint8_t, kFailoverLidsPerBlock> groups{};
  static FailoverLidGroupBlock decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const FailoverLidGroupBlock&) const = default;
};

// attr_mod 0. The ports fault notifications go out of; `clear_state` in a
// Set makes the switch forget what notifications removed (reads 0).
struct FailoverNotifyConfig {
  WirePortMask notify{};
  bool clear_state = false;
  static FailoverNotifyConfig decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const FailoverNotifyConfig&) const = default;
};

}  // namespace subnetd::discovery::mad

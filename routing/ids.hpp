#pragma once
// Strong identifiers. A LID, a GUID, a node index and a switch index never
// mix silently.
// Port numbers are plain uint8_t (1..254 on the wire, 0 = switch management
// port, 255 = "drop" in an LFT) because they are also the LFT's payload.

#include <compare>
#include <cstdint>
#include <functional>

namespace subnetd {

// Dense index of a node in a routing::Topology.
struct NodeId {
  std::uint32_t value = UINT32_MAX;
  auto operator<=>(const NodeId&) const = default;
  bool valid() const { return value != UINT32_MAX; }
};
inline constexpr NodeId kNoNode{};

// Dense index of a switch among a Topology's switches (0..S-1, the order of
// Topology::switches()): what the routing tables, the SwitchGraph and the
// Rerouter number switches by. Not a NodeId: Topology::switch_node() maps it
// to one, Node::switch_index back. Per-switch dense vectors are indexed by
// its value.
struct SwitchIndex {
  std::uint32_t value = UINT32_MAX;
  auto operator<=>(const SwitchIndex&) const = default;
  bool valid() const { return value != UINT32_MAX; }
};
inline constexpr SwitchIndex kNoSwitch{};

using PortNum = std::uint8_t;

// Local identifier, host order. 16, 17 or 24 significant bits depending on the
// addressing mode (see routing/lid_space.hpp).
struct Lid {
  std::uint32_t value = 0;
  auto operator<=>(const Lid&) const = default;
  bool valid() const { return value != 0; }
};

// EUI-64 globally unique identifier, host order.
struct Guid {
  std::uint64_t value = 0;
  auto operator<=>(const Guid&) const = default;
};

struct PortRef {
  NodeId node;
  PortNum port = 0;
  auto operator<=>(const PortRef&) const = default;
};

}  // namespace subnetd

template <>
struct std::hash<subnetd::Guid> {
  std::size_t operator()(const subnetd::Guid& g) const noexcept {
    return std::hash<std::uint64_t>{}(g.value);
  }
};
template <>
struct std::hash<subnetd::Lid> {
  std::size_t operator()(const subnetd::Lid& l) const noexcept {
    return std::hash<std::uint32_t>{}(l.value);
  }
};
template <>
struct std::hash<subnetd::NodeId> {
  std::size_t operator()(const subnetd::NodeId& n) const noexcept {
    return std::hash<std::uint32_t>{}(n.value);
  }
};

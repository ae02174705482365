#pragma once
// Strong identifiers. A LID, a GUID and a node index never mix silently.
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

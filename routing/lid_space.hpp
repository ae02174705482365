#pragma once
// Addressing modes. `lid_bits` 16 is IBA (wire-compatible with real HCAs, ibsim
// and infiniband-diags); 17 is the extended space of the newer IB-compatible
// 400G fabrics; 24 is the room to grow. 17/24-bit LIDs travel in
// vendor-specific SMP attributes (discovery/README.md).

#include <cstdint>
#include <optional>

#include "routing/ids.hpp"

namespace subnetd::routing {

struct LidSpace {
  int bits = 16;

  static std::optional<LidSpace> from_bits(int bits) {
    if (bits == 16 || bits == 17 || bits == 24) return LidSpace{bits};
    return std::nullopt;
  }
  // Highest unicast LID: 0xBFFF (IBA), 0x1BFFF (17-bit), 0xEFFFFF (24-bit).
  Lid max_unicast() const {
    switch (bits) {
      case 16: return Lid{0xBFFF};
      case 17: return Lid{0x1BFFF};
      default: return Lid{0xEFFFFF};
    }
  }
  std::uint32_t unicast_count() const { return max_unicast().value; }
  bool extended() const { return bits != 16; }
  bool is_unicast(Lid l) const { return l.value >= 1 && l.value <= max_unicast().value; }
};

}  // namespace subnetd::routing

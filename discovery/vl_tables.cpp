// SL-to-VL and VL arbitration tables; see vl_tables.hpp.

#include "discovery/vl_tables.hpp"

#include <algorithm>

namespace subnetd::discovery {

unsigned data_vls(std::uint8_t operational_vls) {
  switch (operational_vls) {
    case 2:
      return 2;
    case 3:
      return 4;
    case 4:
      return 8;
    case 5:
      return 15;
    default:
      return 1;
  }
}

mad::SlToVlMappingTable sl2vl_table(unsigned n) {
  mad::SlToVlMappingTable t;
  n = std::max(1U, n);
  for (unsigned sl = 0; sl < t.vl.size(); ++sl) t.vl[sl] = static_cast<std::uint8_t>(sl % n);
  return t;
}

mad::SlToVlMappingTable port_sl2vl_table(const routing::Routes& routes, const routing::Node& node,
                                         PortNum out, unsigned n) {
  if (node.type != routing::NodeType::kSwitch || !routes.per_hop_vls()) return sl2vl_table(n);
  mad::SlToVlMappingTable t;
  for (std::uint32_t sl = 0; sl < t.vl.size(); ++sl) {
    t.vl[sl] = routes.hop_vl(node.switch_index.value, out, static_cast<std::uint8_t>(sl));
  }
  return t;
}

std::uint64_t sl2vl_bits(const mad::SlToVlMappingTable& t) {
  std::uint64_t bits = 0;
  for (const std::uint8_t vl : t.vl) bits = bits << 4 | (vl & 0xFU);
  return bits;
}

std::optional<mad::VlArbitrationTable> vlarb_block(unsigned n, unsigned block, std::uint8_t low_cap,
                                                   std::uint8_t high_cap) {
  if (block < 1 || block > 4) return std::nullopt;
  const bool low = block <= 2;
  const unsigned cap = low ? low_cap : high_cap;
  const unsigned first = (block - 1) % 2 == 0 ? 0 : 32;
  if (cap <= first) return std::nullopt;
  mad::VlArbitrationTable t;  // all weight 0: an empty (high) table
  if (!low) return t;
  for (unsigned e = 0; e < t.entries.size(); ++e) {
    const unsigned vl = first + e;
    if (vl >= std::min(n, cap)) break;
    t.entries[e] = {static_cast<std::uint8_t>(vl), kVlArbWeight};
  }
  return t;
}

PortVlTables HeldVls::held(Guid node, PortNum port) const {
  const auto it = held_.find(node);
  if (it == held_.end() || port >= it->second.size()) return {};
  return it->second[port];
}

void HeldVls::set(Guid node, PortNum port, PortVlTables tables) {
  std::vector<PortVlTables>& ports = held_[node];
  if (ports.size() <= port) ports.resize(std::size_t{port} + 1);
  ports[port] = tables;
}

}  // namespace subnetd::discovery

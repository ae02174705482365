// SimCore's subnet management agent: Get/Set of the SMP attributes a node
// supports (IBA vol. 1 14.2.5), and the vendor extended-LID attributes in
// 17/24-bit modes (discovery/README.md, "Extended LIDs").
//
// Every request gets a GetResp: unknown attribute or unsupported
// method/attribute combination -> status 0x000C, bad attribute modifier or
// field value -> 0x001C (nothing is applied then). A Set answers with the
// attribute as it stands afterwards.

#include <fmt/format.h>

#include <algorithm>

#include "discovery/mad/failover.hpp"
#include "discovery/sim/sim_core.hpp"
#include "routing/mcast.hpp"
#include "routing/partitions.hpp"

namespace subnetd::discovery::sim {

using routing::NodeType;
using routing::PortState;

namespace {

namespace st = mad::status;

constexpr std::uint8_t kVlCap = 4;      // VL0-VL7
constexpr std::uint8_t kMtuCap = 5;     // 4096 bytes
constexpr std::uint8_t kVlArbCap = 32;  // entries in each of the high and low tables
constexpr std::uint8_t kWidthSupported = 1 | 2 | 4 | 8;  // 1x, 4x, 8x, 12x
constexpr std::uint8_t kWidthDefault = 2;                // 4x
constexpr std::uint8_t kSpeedSupported = 1 | 2 | 4;      // SDR, DDR, QDR
constexpr std::uint8_t kSpeedDefault = 4;                // QDR
constexpr std::uint8_t kLinkDownDefaultPolling = 2;
constexpr std::uint8_t kRespTimeValue = 8;
// PortInfo:CapabilityMask bits besides IsSM/IsTrapSupported (mad/smp.hpp).
constexpr std::uint32_t kCapSlMapping = 1U << 6;
constexpr std::uint32_t kCapSystemImageGuid = 1U << 11;
constexpr std::uint32_t kCapClientReregistration = 1U << 25;
constexpr std::uint16_t kMaxLid16 = 0xBFFF;

constexpr std::size_t kSl2VlBytes = 8;        // 16 SLs x 4 bits, packed in our storage
constexpr std::size_t kVlArbBlockBytes = 64;  // 32 entries x (VL, weight)
constexpr std::size_t kVlArbBlocks = 4;
// Blocks kept a port: 1 (low) and 3 (high); 2 and 4 do not exist with
// kVlArbCap 32.
constexpr std::size_t kVlArbKept = 2;
static_assert(kVlArbCap <= 32, "more entries need blocks 2 and 4 kept too");

std::uint16_t saturate16(std::uint32_t v) {
  return static_cast<std::uint16_t>(std::min<std::uint32_t>(v, 0xFFFF));
}

}  // namespace

SimCore::SmaOutcome SimCore::sma_handle(Packet& p, NodeId node, PortNum in) {
  mad::Smp& s = p.smp;
  switch (s.method) {
    case mad::Method::kTrapRepress:
      ++stats_.smps_handled;
      if (s.attr_id == mad::AttrId::kNotice && is_switch(node)) {
        SwitchSim& w = sw(node);
        if (w.trap_pending && w.trap_tid == s.tid) {
          w.trap_pending = false;
          ++stats_.traps_repressed;
        }
      }
      return SmaOutcome::kConsumed;  // TrapRepress has no response
    case mad::Method::kGet:
    case mad::Method::kSet:
      break;
    case mad::Method::kTrap:
    case mad::Method::kGetResp:
      return SmaOutcome::kUnexpected;
  }
  // Another vendor's node: our vendor attributes mean something else to it,
  // or nothing; it does not answer them (as ibsim does not).
  if (static_cast<std::uint16_t>(s.attr_id) >= 0xFF00 && opts_.vendor_id != mad::kSubnetdVendorId) {
    return SmaOutcome::kForeignVendor;
  }
  ++stats_.smps_handled;
  const bool set = s.method == mad::Method::kSet;
  std::uint16_t status = st::kMethodAttrUnsupported;
  switch (s.attr_id) {
    case mad::AttrId::kNodeDescription:
      if (!set) {
        mad::NodeDescription{topo_.node(node).description}.encode(mad::data_of(s));
        status = st::kOk;
      }
      break;
    case mad::AttrId::kNodeInfo:
      if (!set) status = sma_node_info(s, node, in);
      break;
    case mad::AttrId::kSwitchInfo:
      status = sma_switch_info(s, node);
      break;
    case mad::AttrId::kPortInfo:
      status = sma_port_info(s, node, in);
      break;
    case mad::AttrId::kLinearForwardingTable:
      status = sma_lft(s, node);
      break;
    case mad::AttrId::kPKeyTable:
      status = sma_pkeys(s, node, in);
      break;
    case mad::AttrId::kMulticastForwardingTable:
      status = sma_mft(s, node);
      break;
    case mad::AttrId::kSlToVlMappingTable:
      status = sma_sl2vl(s, node, in);
      break;
    case mad::AttrId::kVlArbitrationTable:
      status = sma_vlarb(s, node, in);
      break;
    case mad::AttrId::kExtLinearForwardingTable:
      if (space_.extended()) status = sma_lft(s, node);
      break;
    case mad::AttrId::kExtPortInfo:
      if (space_.extended()) status = sma_ext_port_info(s, node, in);
      break;
    case mad::AttrId::kExtSwitchInfo:
      if (space_.extended()) status = sma_ext_switch_info(s, node);
      break;
    case mad::AttrId::kFailoverInfo:
    case mad::AttrId::kFailoverGroupTable:
    case mad::AttrId::kFailoverLidGroupTable:
    case mad::AttrId::kFailoverNotifyConfig:
      status = sma_failover(s, node);
      break;
    default:  // Notice (no notice queue), SMInfo (no SM here), unknown attributes
      break;
  }
  if (status != st::kOk) std::fill(s.data.begin(), s.data.end(), std::uint8_t{0});
  s.method = mad::Method::kGetResp;
  s.status = status;
  return SmaOutcome::kRespond;
}

std::uint16_t SimCore::sma_node_info(mad::Smp& s, NodeId node, PortNum in) {
  const routing::Node& nd = topo_.node(node);
  mad::NodeInfo ni;
  ni.node_type = static_cast<std::uint8_t>(nd.type);
  ni.num_ports = nd.num_ports;
  ni.system_image_guid = nd.system_guid.value;
  ni.node_guid = nd.guid.value;
  if (auto claimed = opts_.node_guid_answers.find(node.value);
      claimed != opts_.node_guid_answers.end()) {
    ni.node_guid = claimed->second.value;
  }
  ni.port_guid = topo_.port(node, is_switch(node) ? PortNum{0} : in).guid.value;
  ni.partition_cap = kPartitionCap;
  ni.device_id = static_cast<std::uint16_t>(nd.type);
  ni.revision = 1;
  ni.local_port_num = in;          // the port the SMP entered by
  ni.vendor_id = opts_.vendor_id;  // subnetd's: it speaks subnetd's vendor attributes
  ni.encode(mad::data_of(s));
  return st::kOk;
}

std::uint16_t SimCore::sma_switch_info(mad::Smp& s, NodeId node) {
  if (!is_switch(node)) return st::kMethodAttrUnsupported;
  SwitchSim& w = sw(node);
  if (s.method == mad::Method::kSet) {
    const mad::SwitchInfo req = mad::SwitchInfo::decode(mad::data_of(s));
    // In 17/24-bit modes LinearFDBTop belongs to ExtSwitchInfo (the SM does
    // not use the 16-bit field there); a Set of the 16-bit field is ignored.
    if (!space_.extended() && req.linear_fdb_top >= lft_cap_) return st::kInvalidField;
    if (!space_.extended()) w.linear_fdb_top = req.linear_fdb_top;
    w.life_time_value = req.life_time_value;
    w.multicast_fdb_top = req.multicast_fdb_top;
    if (req.port_state_change) w.port_state_change = false;  // write 1 to clear
  }
  mad::SwitchInfo si;
  si.linear_fdb_cap = saturate16(lft_cap_);
  si.linear_fdb_top = saturate16(w.linear_fdb_top);
  si.life_time_value = w.life_time_value;
  si.port_state_change = w.port_state_change;
  si.partition_enforcement_cap = kPartitionCap;
  si.multicast_fdb_cap = kMulticastFdbCap;
  si.multicast_fdb_top = w.multicast_fdb_top;
  si.optimized_sl2vl = 1;  // SLtoVLMappingTable Sets for all ports at once
  si.encode(mad::data_of(s));
  return st::kOk;
}

mad::PortInfo SimCore::build_port_info(NodeId node, PortNum port, PortNum in) const {
  const bool swn = is_switch(node);
  const bool end_port = !swn || port == 0;
  const PortSim& ps = ports_[index(node, port)];
  // A 16-bit field cannot show an extended LID: it reads 0xFFFF then.
  auto lid16 = [](std::uint32_t lid) {
    return static_cast<std::uint16_t>(lid > kMaxLid16 ? 0xFFFF : lid);
  };
  mad::PortInfo pi;
  if (end_port) {
    pi.m_key = ps.m_key;
    pi.gid_prefix = ps.gid_prefix;
    pi.lid = lid16(ps.lid);
    pi.master_sm_lid = lid16(ps.master_sm_lid);
    pi.lmc = ps.lmc;
    pi.m_key_lease_period = ps.m_key_lease_period;
    pi.m_key_protect_bits = ps.m_key_protect_bits;
    pi.subnet_timeout = ps.subnet_timeout;
    pi.master_sm_sl = ps.master_sm_sl;
    pi.capability_mask = mad::kCapIsTrapSupported | kCapSlMapping | kCapSystemImageGuid;
    if (!swn) pi.capability_mask |= kCapClientReregistration;
    if (holds_is_sm(node, port)) pi.capability_mask |= mad::kCapIsSm;
    pi.guid_cap = 1;
    pi.resp_time_value = kRespTimeValue;
  }
  pi.local_port_num = in;
  if (port != 0) {
    const routing::Port& tp = topo_.port(node, port);
    const std::uint8_t width = tp.width_active != 0 ? tp.width_active : kWidthDefault;
    const std::uint8_t speed = tp.speed_active != 0 ? tp.speed_active : kSpeedDefault;
    pi.link_width_supported = kWidthSupported | width;
    pi.link_width_enabled = pi.link_width_supported;
    pi.link_width_active = width;
    pi.link_speed_supported = kSpeedSupported | speed;
    pi.link_speed_enabled = pi.link_speed_supported;
    pi.link_speed_active = speed;
    pi.link_down_default_state = kLinkDownDefaultPolling;
  }
  pi.port_state = static_cast<std::uint8_t>(ps.state);
  pi.port_phys_state = phys_state(node, port);
  pi.mtu_cap = kMtuCap;
  pi.neighbor_mtu = ps.neighbor_mtu;
  pi.vl_cap = kVlCap;
  pi.operational_vls = ps.operational_vls;
  pi.vl_high_limit = ps.vl_high_limit;
  pi.vl_arbitration_high_cap = kVlArbCap;
  pi.vl_arbitration_low_cap = kVlArbCap;
  pi.hoq_life = ps.hoq_life;
  pi.vl_stall_count = ps.vl_stall_count;
  pi.partition_enforcement_inbound = ps.pkey_enforce_in;
  pi.partition_enforcement_outbound = ps.pkey_enforce_out;
  return pi;
}

// Validates (dry_run) or applies a PortState / PortPhysicalState request.
// IBA 14.2.5.6 and the link state machine of 7.2: an SM may ask for Down
// (the link retrains to INIT), Armed (from INIT) and Active (from ARMED,
// once the neighbour is at least ARMED); PortPhysicalState Disabled takes
// the link down until Polling re-enables it. Such SubnSet transitions do not
// set SwitchInfo:PortStateChange; the link events they cause do.
std::uint16_t SimCore::apply_port_state(NodeId node, PortNum port, std::uint8_t state,
                                        std::uint8_t phys, bool dry_run) {
  const auto want = static_cast<PortState>(state);
  if (state > static_cast<std::uint8_t>(PortState::kActive) || want == PortState::kInit) {
    return st::kInvalidField;
  }
  if (phys != 0 && phys != kPhysPolling && phys != kPhysDisabled) return st::kInvalidField;
  if (is_switch(node) && port == 0) {
    // Base switch port 0 has no link: it is ACTIVE for as long as the
    // switch is on and accepts no other state.
    if (phys != 0) return st::kInvalidField;
    return want == PortState::kNoChange || want == PortState::kActive ? st::kOk : st::kInvalidField;
  }
  PortSim& ps = ports_[index(node, port)];
  const PortState cur = ps.state;
  if (phys == kPhysDisabled && (want == PortState::kArmed || want == PortState::kActive)) {
    return st::kInvalidField;
  }
  switch (want) {
    case PortState::kArmed:
      if (cur != PortState::kInit && cur != PortState::kArmed) return st::kInvalidField;
      break;
    case PortState::kActive:
      if (cur == PortState::kActive) break;
      if (cur != PortState::kArmed) return st::kInvalidField;
      {
        const routing::Port& tp = topo_.port(node, port);
        const PortState peer = ports_[index(tp.remote_node, tp.remote_port)].state;
        if (peer != PortState::kArmed && peer != PortState::kActive) return st::kInvalidField;
      }
      break;
    default:
      break;
  }
  if (dry_run) return st::kOk;

  if (want == PortState::kArmed || want == PortState::kActive) ps.state = want;
  if (phys == kPhysDisabled && !ps.disabled) {
    ps.disabled = true;
    reevaluate_link(node, port);
  } else {
    if (want == PortState::kDown) bounce_link(node, port);
    if (phys == kPhysPolling && ps.disabled) {
      ps.disabled = false;
      reevaluate_link(node, port);
    }
  }
  return st::kOk;
}

std::uint16_t SimCore::sma_port_info(mad::Smp& s, NodeId node, PortNum in) {
  const routing::Node& nd = topo_.node(node);
  if (s.attr_mod > nd.num_ports) return st::kInvalidField;
  auto port = static_cast<PortNum>(s.attr_mod);
  const bool swn = is_switch(node);
  if (!swn && port == 0) port = in;  // IBA 14.2.5.6: a CA answers for the receiving port
  if (s.method == mad::Method::kSet) {
    const mad::PortInfo req = mad::PortInfo::decode(mad::data_of(s));
    const bool end_port = !swn || port == 0;
    if (auto r = apply_port_state(node, port, req.port_state, req.port_phys_state, true);
        r != st::kOk) {
      return r;
    }
    if (req.operational_vls > kVlCap || req.neighbor_mtu > kMtuCap) return st::kInvalidField;
    PortSim& ps = ports_[index(node, port)];
    // A port configured for extended LIDs ignores PortInfo's 16-bit LID and
    // MasterSMLID; LMC is the same value through either attribute.
    const bool lids_here = end_port && ps.lid_bits == 16;
    if (lids_here && (req.lid > kMaxLid16 || req.master_sm_lid > kMaxLid16)) {
      return st::kInvalidField;
    }
    if (end_port) {
      if (lids_here) {
        ps.lid = req.lid;
        ps.master_sm_lid = req.master_sm_lid;
      }
      ps.lmc = swn ? 0 : req.lmc;  // base switch port 0 has no LMC
      homes_dirty_ = true;
      ps.m_key = req.m_key;
      ps.gid_prefix = req.gid_prefix;
      ps.m_key_lease_period = req.m_key_lease_period;
      ps.m_key_protect_bits = req.m_key_protect_bits;
      ps.subnet_timeout = req.subnet_timeout;
      ps.master_sm_sl = req.master_sm_sl;
    }
    // Zero means "no change" for OperationalVLs (IBA) and NeighborMTU (0 is
    // not an MTU).
    if (req.operational_vls != 0) ps.operational_vls = req.operational_vls;
    if (req.neighbor_mtu != 0) ps.neighbor_mtu = req.neighbor_mtu;
    ps.vl_high_limit = req.vl_high_limit;
    ps.hoq_life = req.hoq_life;
    ps.vl_stall_count = req.vl_stall_count;
    // Enforcement is a switch external port's (IBA 14.2.5.6); elsewhere
    // the bits read 0.
    if (!swn && req.client_reregister) ++ps.client_reregisters;  // the clients would rejoin
    if (swn && port != 0) {
      ps.pkey_enforce_in = req.partition_enforcement_inbound;
      ps.pkey_enforce_out = req.partition_enforcement_outbound;
    }
    apply_port_state(node, port, req.port_state, req.port_phys_state, false);
  }
  build_port_info(node, port, in).encode(mad::data_of(s));
  return st::kOk;
}

std::uint16_t SimCore::sma_lft(mad::Smp& s, NodeId node) {
  if (!is_switch(node)) return st::kMethodAttrUnsupported;
  const std::uint64_t first = std::uint64_t{s.attr_mod} * routing::kLftBlockSize;
  if (first >= lft_cap_) return st::kInvalidField;
  const std::uint32_t si = topo_.node(node).switch_index.value;
  std::vector<std::uint8_t>& t = lfts_[si];
  const auto begin = static_cast<std::size_t>(first);
  if (s.method == mad::Method::kSet) {
    routes_out_[si].clear();  // the traffic model counts routes again
    const std::size_t need = begin + routing::kLftBlockSize;
    if (t.size() < need) {
      if (t.capacity() < need) {
        // Size the table once when LinearFDBTop says how far the SM will
        // write; otherwise grow by half (never past LinearFDBCap).
        const std::size_t top_end =
            (std::size_t{switches_[si].linear_fdb_top} / routing::kLftBlockSize + 1) *
            routing::kLftBlockSize;
        std::size_t want = need;
        if (top_end >= need) {
          want = top_end;
        } else {
          const std::size_t cap_end = (std::size_t{lft_cap_} + routing::kLftBlockSize - 1) /
                                      routing::kLftBlockSize * routing::kLftBlockSize;
          want = std::max(need, std::min(cap_end, t.capacity() + t.capacity() / 2));
        }
        t.reserve(want);
      }
      t.resize(need, routing::kDropPort);
    }
    const mad::LinearForwardingTable req = mad::LinearForwardingTable::decode(mad::data_of(s));
    std::copy(req.ports.begin(), req.ports.end(), t.begin() + static_cast<std::ptrdiff_t>(begin));
  }
  mad::LinearForwardingTable out;
  if (begin < t.size()) {
    std::copy_n(t.begin() + static_cast<std::ptrdiff_t>(begin), routing::kLftBlockSize,
                out.ports.begin());
  } else {
    out.ports.fill(routing::kDropPort);
  }
  out.encode(mad::data_of(s));
  return st::kOk;
}

std::uint16_t SimCore::sma_sl2vl(mad::Smp& s, NodeId node, PortNum in) {
  const unsigned n = topo_.node(node).num_ports;
  // A CA: the port (attr_mod, 0 = the one the SMP entered by). A switch:
  // input port (15:8), output port (7:0), and, as it claims
  // OptimizedSLtoVLMappingProgramming, bit 17 (every input port) and bit
  // 16 (every output port too). Kept as one table per output port plus
  // the (input, output) pairs set one by one, so that a switch programmed
  // the optimized way costs 8 bytes a port.
  const bool swn = is_switch(node);
  constexpr std::uint32_t kAllIn = 1U << 17, kAllOut = 1U << 16;
  unsigned in_port = 0, out_port = 0;
  if (swn) {
    if ((s.attr_mod & ~(kAllIn | kAllOut | 0xFFFFU)) != 0) return st::kInvalidField;
    in_port = (s.attr_mod >> 8) & 0xFF;
    out_port = s.attr_mod & 0xFF;
    if (in_port > n || out_port > n) return st::kInvalidField;
    if ((s.attr_mod & kAllOut) != 0 && (s.attr_mod & kAllIn) == 0) return st::kInvalidField;
    if (s.method != mad::Method::kSet && (s.attr_mod & (kAllIn | kAllOut)) != 0) {
      return st::kInvalidField;  // a Get names one table
    }
  } else {
    if (s.attr_mod > 0xFF) return st::kInvalidField;
    out_port = s.attr_mod == 0 ? in : s.attr_mod;
    if (out_port > n) return st::kInvalidField;
  }
  std::vector<std::uint8_t>& by_out = sl2vl_[node.value];
  const std::uint64_t pair_key = (std::uint64_t{node.value} << 16) | (in_port << 8) | out_port;
  if (s.method == mad::Method::kSet) {
    const mad::SlToVlMappingTable req = mad::SlToVlMappingTable::decode(mad::data_of(s));
    std::array<std::uint8_t, kSl2VlBytes> packed{};
    for (std::size_t k = 0; k < kSl2VlBytes; ++k) {
      packed[k] =
          static_cast<std::uint8_t>(((req.vl[2 * k] & 0xF) << 4) | (req.vl[2 * k + 1] & 0xF));
    }
    if (by_out.empty()) by_out.assign(std::size_t{n + 1} * kSl2VlBytes, 0);
    auto set_out = [&](unsigned out) {
      std::copy(packed.begin(), packed.end(), by_out.begin() + std::ptrdiff_t(out * kSl2VlBytes));
      for (unsigned i = 0; swn && i <= n; ++i) {
        sl2vl_pairs_.erase((std::uint64_t{node.value} << 16) | (i << 8) | out);
      }
    };
    if (!swn || (s.attr_mod & kAllIn) != 0) {
      if ((s.attr_mod & kAllOut) != 0) {
        for (unsigned out = 0; out <= n; ++out) set_out(out);
      } else {
        set_out(out_port);
      }
    } else {
      sl2vl_pairs_[pair_key] = packed;
    }
  }
  const std::uint8_t* entry = nullptr;
  if (auto it = sl2vl_pairs_.find(pair_key); swn && it != sl2vl_pairs_.end()) {
    entry = it->second.data();
  } else if (!by_out.empty()) {
    entry = by_out.data() + std::size_t{out_port} * kSl2VlBytes;
  }
  mad::SlToVlMappingTable out;  // never written: every SL on VL0
  if (entry != nullptr) {
    for (std::size_t k = 0; k < kSl2VlBytes; ++k) {
      out.vl[2 * k] = static_cast<std::uint8_t>(entry[k] >> 4);
      out.vl[2 * k + 1] = static_cast<std::uint8_t>(entry[k] & 0xF);
    }
  }
  out.encode(mad::data_of(s));
  return st::kOk;
}

std::uint16_t SimCore::sma_pkeys(mad::Smp& s, NodeId node, PortNum in) {
  const unsigned n = topo_.node(node).num_ports;
  // attr_mod: block (15:0) and, on a switch, port (23:16); a CA answers
  // for the port the SMP entered by. Every port holds kPartitionCap
  // entries (NodeInfo:PartitionCap, SwitchInfo:PartitionEnforcementCap).
  const unsigned block = s.attr_mod & 0xFFFF;
  unsigned port = is_switch(node) ? (s.attr_mod >> 16) & 0xFF : in;
  if ((s.attr_mod >> 24) != 0 || port > n) return st::kInvalidField;
  if ((block + 1) * routing::kPKeyBlockEntries > kPartitionCap) return st::kInvalidField;
  std::vector<std::uint16_t>& t = pkeys_[node.value];
  const std::size_t off = std::size_t{port} * kPartitionCap + block * routing::kPKeyBlockEntries;
  if (s.method == mad::Method::kSet) {
    if (t.empty()) {
      t.assign(std::size_t{n + 1} * kPartitionCap, 0);
      for (std::size_t p = 0; p <= n; ++p) t[p * kPartitionCap] = 0xFFFF;
    }
    const mad::PKeyTable req = mad::PKeyTable::decode(mad::data_of(s));
    std::copy(req.keys.begin(), req.keys.end(), t.begin() + static_cast<std::ptrdiff_t>(off));
  }
  mad::PKeyTable out;
  if (!t.empty()) {
    std::copy_n(t.begin() + static_cast<std::ptrdiff_t>(off), out.keys.size(), out.keys.begin());
  } else if (block == 0) {
    out.keys[0] = 0xFFFF;
  }
  out.encode(mad::data_of(s));
  return st::kOk;
}

std::uint16_t SimCore::sma_mft(mad::Smp& s, NodeId node) {
  if (!is_switch(node)) return st::kMethodAttrUnsupported;
  // attr_mod: position (31:28: ports 16 x position ..), block (8:0: MLIDs
  // 0xC000 + 32 x block ..); bits 27:9 reserved.
  const std::uint32_t position = s.attr_mod >> 28;
  const std::uint32_t block = s.attr_mod & 0x1FF;
  const std::uint32_t positions = (topo_.node(node).num_ports + 16U) / 16U;
  if ((s.attr_mod & 0x0FFFFE00U) != 0 || position >= positions ||
      (block + 1) * routing::kMftBlockEntries > kMulticastFdbCap) {
    return st::kInvalidField;
  }
  std::vector<std::uint16_t>& t = mfts_[topo_.node(node).switch_index.value];
  const std::size_t off =
      std::size_t{position} * kMulticastFdbCap + std::size_t{block} * routing::kMftBlockEntries;
  if (s.method == mad::Method::kSet) {
    if (t.empty()) t.assign(std::size_t{positions} * kMulticastFdbCap, 0);
    const auto req = mad::MulticastForwardingTable::decode(mad::data_of(s));
    std::copy(req.masks.begin(), req.masks.end(), t.begin() + static_cast<std::ptrdiff_t>(off));
  }
  mad::MulticastForwardingTable out;
  if (!t.empty()) {
    std::copy_n(t.begin() + static_cast<std::ptrdiff_t>(off), out.masks.size(), out.masks.begin());
  }
  out.encode(mad::data_of(s));
  return st::kOk;
}

namespace {
// What an SMA handler answers to a Get of `attr_mod`, decoded as `Table`.
template <class Table, class Handler>
Result<Table> get_table(Handler&& handle, std::uint32_t attr_mod, const char* what) {
  mad::Smp s;
  s.method = mad::Method::kGet;
  s.attr_mod = attr_mod;
  if (const auto status = handle(s); status != st::kOk) {
    return Error{Errc::kInvalidArgument, fmt::format("{}: status {:#x}", what, status)};
  }
  return Table::decode(mad::data_of(s));
}
}  // namespace

Result<mad::SlToVlMappingTable> SimCore::sl2vl(NodeId node, PortNum in, std::uint32_t attr_mod) {
  return get_table<mad::SlToVlMappingTable>([&](mad::Smp& s) { return sma_sl2vl(s, node, in); },
                                            attr_mod, "SLtoVLMappingTable");
}

Result<mad::VlArbitrationTable> SimCore::vlarb(NodeId node, PortNum in, std::uint32_t attr_mod) {
  return get_table<mad::VlArbitrationTable>([&](mad::Smp& s) { return sma_vlarb(s, node, in); },
                                            attr_mod, "VLArbitrationTable");
}

std::uint16_t SimCore::sma_vlarb(mad::Smp& s, NodeId node, PortNum in) {
  const unsigned n = topo_.node(node).num_ports;
  // attr_mod: block (31:16: 1 low 0-31, 2 low 32-63, 3 high 0-31, 4 high
  // 32-63) and port (15:0). Our tables hold kVlArbCap (32) entries each, so
  // blocks 2 and 4 do not exist.
  const unsigned block = s.attr_mod >> 16;
  unsigned port = s.attr_mod & 0xFFFF;
  if (block < 1 || block > kVlArbBlocks) return st::kInvalidField;
  if ((block - 1) % 2 == 1 && kVlArbCap <= 32) return st::kInvalidField;
  if (!is_switch(node) && port == 0) port = in;
  if (port > n) return st::kInvalidField;
  std::vector<std::uint8_t>& t = vlarb_[node.value];
  const std::size_t off = (std::size_t{port} * kVlArbKept + (block - 1) / 2) * kVlArbBlockBytes;
  if (s.method == mad::Method::kSet) {
    if (t.empty()) t.assign(std::size_t{n + 1} * kVlArbKept * kVlArbBlockBytes, 0);
    const mad::VlArbitrationTable req = mad::VlArbitrationTable::decode(mad::data_of(s));
    for (std::size_t e = 0; e < req.entries.size(); ++e) {
      t[off + 2 * e] = req.entries[e].vl & 0xF;
      t[off + 2 * e + 1] = req.entries[e].weight;
    }
  }
  mad::VlArbitrationTable out;
  if (!t.empty()) {
    for (std::size_t e = 0; e < out.entries.size(); ++e) {
      out.entries[e].vl = t[off + 2 * e];
      out.entries[e].weight = t[off + 2 * e + 1];
    }
  }
  out.encode(mad::data_of(s));
  return st::kOk;
}

std::uint16_t SimCore::sma_ext_port_info(mad::Smp& s, NodeId node, PortNum in) {
  const routing::Node& nd = topo_.node(node);
  if (s.attr_mod > nd.num_ports) return st::kInvalidField;
  auto port = static_cast<PortNum>(s.attr_mod);
  const bool swn = is_switch(node);
  if (!swn && port == 0) port = in;
  const bool end_port = !swn || port == 0;
  PortSim& ps = ports_[index(node, port)];
  if (s.method == mad::Method::kSet) {
    if (!end_port) return st::kInvalidField;  // switch external ports have no LID
    const mad::ExtPortInfo req = mad::ExtPortInfo::decode(mad::data_of(s));
    // The port may be put in any mode up to the fabric's width.
    const auto mode = routing::LidSpace::from_bits(req.lid_bits);
    if (!mode || mode->bits > space_.bits) return st::kInvalidField;
    const std::uint32_t top = mode->max_unicast().value;
    if (req.lid > top || req.master_sm_lid > top) return st::kInvalidField;
    ps.lid_bits = req.lid_bits;
    ps.lid = req.lid;
    ps.master_sm_lid = req.master_sm_lid;
    ps.lmc = swn ? 0 : req.lmc;
    homes_dirty_ = true;
  }
  mad::ExtPortInfo out;
  if (end_port) {
    out.lid = ps.lid;
    out.master_sm_lid = ps.master_sm_lid;
    out.lmc = ps.lmc;
  }
  out.lid_bits = ps.lid_bits;
  out.encode(mad::data_of(s));
  return st::kOk;
}

std::uint16_t SimCore::sma_ext_switch_info(mad::Smp& s, NodeId node) {
  if (!is_switch(node)) return st::kMethodAttrUnsupported;
  SwitchSim& w = sw(node);
  if (s.method == mad::Method::kSet) {
    const mad::ExtSwitchInfo req = mad::ExtSwitchInfo::decode(mad::data_of(s));
    if (req.linear_fdb_top >= lft_cap_) return st::kInvalidField;
    w.linear_fdb_top = req.linear_fdb_top;
  }
  mad::ExtSwitchInfo out;
  out.linear_fdb_cap = lft_cap_;
  out.linear_fdb_top = w.linear_fdb_top;
  out.encode(mad::data_of(s));
  return st::kOk;
}

}  // namespace subnetd::discovery::sim

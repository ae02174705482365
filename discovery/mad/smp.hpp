#pragma once
// SMP wire codec: the 256-byte subnet management packet, LID-routed (class
// 0x01) and directed-route (class 0x81), and the SMP attributes subnetd uses.
// Byte-exact per the InfiniBand Architecture Specification vol. 1, ch. 14.
// Byte order lives only here: every struct below is host order.
//
// Contract (used by the Sweeper, the Programmer, the simulator and the umad
// backend):
//  - decode_smp() never reads outside the given span and rejects malformed
//    bytes with Errc::kMalformedMad and a message naming the field.
//  - encode_smp(decode_smp(b)) == b for every valid b (reserved bytes aside).
//  - Attribute structs encode into / decode from the 64-byte SMP data field.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "routing/result.hpp"

namespace subnetd::discovery::mad {

inline constexpr std::size_t kSmpSize = 256;
inline constexpr std::size_t kSmpDataSize = 64;
inline constexpr std::size_t kSmpDataOffset = 64;
inline constexpr std::uint8_t kMaxHopCount = 63;  // paths hold hops 1..63
inline constexpr std::uint16_t kPermissiveLid = 0xFFFF;

enum class MgmtClass : std::uint8_t { kSubnLid = 0x01, kSubnDirected = 0x81 };

enum class Method : std::uint8_t {
  kGet = 0x01,
  kSet = 0x02,
  kTrap = 0x05,
  kTrapRepress = 0x07,
  kGetResp = 0x81,
};
const char* method_name(Method m);

enum class AttrId : std::uint16_t {
  kNotice = 0x0002,
  kNodeDescription = 0x0010,
  kNodeInfo = 0x0011,
  kSwitchInfo = 0x0012,
  kPortInfo = 0x0015,
  kPKeyTable = 0x0016,
  kSlToVlMappingTable = 0x0017,
  kVlArbitrationTable = 0x0018,
  kLinearForwardingTable = 0x0019,
  kMulticastForwardingTable = 0x001B,
  kSmInfo = 0x0020,
  // Vendor-specific (0xFF00-0xFFFF): extended 17/24-bit LIDs. See discovery/README.md.
  kExtPortInfo = 0xFF10,
  kExtLinearForwardingTable = 0xFF11,
  kExtSwitchInfo = 0xFF12,
  // Vendor-specific: switch-local fast failover (discovery/mad/failover.hpp).
  kFailoverInfo = 0xFF30,
  kFailoverGroupTable = 0xFF31,
  kFailoverLidGroupTable = 0xFF32,
  kFailoverNotifyConfig = 0xFF33,
};
const char* attr_name(AttrId a);
bool is_known_attr(std::uint16_t raw);

// MAD status field values (IBA 13.4.7). For DR SMPs the top bit of the 16-bit
// field is the D (direction) bit and is kept separately in Smp::direction.
namespace status {
inline constexpr std::uint16_t kOk = 0x0000;
inline constexpr std::uint16_t kBusy = 0x0001;
inline constexpr std::uint16_t kBadVersion = 0x0004;
inline constexpr std::uint16_t kMethodUnsupported = 0x0008;
inline constexpr std::uint16_t kMethodAttrUnsupported = 0x000C;
inline constexpr std::uint16_t kInvalidField = 0x001C;
}  // namespace status

struct Smp {
  std::uint8_t base_version = 1;
  MgmtClass mgmt_class = MgmtClass::kSubnDirected;
  std::uint8_t class_version = 1;
  Method method = Method::kGet;
  std::uint16_t status = 0;  // 15 bits for DR SMPs
  std::uint64_t tid = 0;
  AttrId attr_id = AttrId::kNodeInfo;
  std::uint32_t attr_mod = 0;
  std::uint64_t m_key = 0;

  // Directed-route fields (ignored for LID-routed SMPs).
  bool direction = false;  // D bit: false = outbound, true = returning
  std::uint8_t hop_pointer = 0;
  std::uint8_t hop_count = 0;
  std::uint16_t dr_slid = kPermissiveLid;
  std::uint16_t dr_dlid = kPermissiveLid;
  std::array<std::uint8_t, 64> initial_path{};  // [1..hop_count] are port numbers
  std::array<std::uint8_t, 64> return_path{};

  std::array<std::uint8_t, kSmpDataSize> data{};

  bool directed() const { return mgmt_class == MgmtClass::kSubnDirected; }
  bool is_response() const { return (static_cast<std::uint8_t>(method) & 0x80) != 0; }
  bool operator==(const Smp&) const = default;
};

struct DecodeOptions {
  // The simulator's SMA must answer unknown attributes with a status, so it
  // decodes them; everyone else rejects them.
  bool allow_unknown_attribute = false;
};

// Parses and validates: size >= 256, base version 1, class 0x01 or 0x81,
// class version 1, known method, known attribute (unless allowed), and for DR
// hop_count <= 63 and hop_pointer <= hop_count + 1.
Result<Smp> decode_smp(std::span<const std::uint8_t> bytes, DecodeOptions opts = {});
void encode_smp(const Smp& smp, std::span<std::uint8_t, kSmpSize> out);
std::array<std::uint8_t, kSmpSize> encode_smp(const Smp& smp);

// Over encoded SMPs, for the hot paths that send many SMPs alike and match
// many answers (the fast path's LFT push):
//  - patch_smp rewrites the TID, the attribute modifier and the data of an
//    SMP that encode_smp wrote (a template: one encode per switch, not per
//    block);
//  - peek_smp reads what matching an answer needs, after the header checks
//    decode_smp makes (size, base version, SMP class, class version, known
//    method); nullopt where decode_smp would fail on those. Attribute and
//    path checks are decode_smp's: decode what you keep.
void patch_smp(std::span<std::uint8_t, kSmpSize> bytes, std::uint64_t tid, std::uint32_t attr_mod,
               std::span<const std::uint8_t, kSmpDataSize> data);
// Rewrites only the TID of an encoded SMP (the MAD engine numbers requests).
void set_smp_tid(std::span<std::uint8_t, kSmpSize> bytes, std::uint64_t tid);
// "Get PortInfo (modifier 0x3)" of an encoded SMP, for error messages; the
// method and attribute names are those of method_name/attr_name.
std::string describe_smp(std::span<const std::uint8_t, kSmpSize> bytes);
struct SmpPeek {
  bool response = false;
  std::uint64_t tid = 0;
  std::uint16_t status = 0;  // without the D bit for directed-route SMPs
};
std::optional<SmpPeek> peek_smp(std::span<const std::uint8_t> bytes);

// Builders for requests the SM sends. `path` holds the ports of hops 1..n.
Smp make_dr_smp(Method m, AttrId attr, std::uint32_t attr_mod, std::span<const std::uint8_t> path,
                std::uint64_t tid);
Smp make_lr_smp(Method m, AttrId attr, std::uint32_t attr_mod, std::uint64_t tid);

// ---------------------------------------------------------------- attributes
// Each: `static T decode(std::span<const std::uint8_t, 64>)` and
// `void encode(std::span<std::uint8_t, 64>) const`. Fields narrower than their
// C++ type are masked on encode.

using SmpData = std::span<std::uint8_t, kSmpDataSize>;
using ConstSmpData = std::span<const std::uint8_t, kSmpDataSize>;

struct NodeDescription {
  std::string text;  // up to 64 bytes, NUL-padded on the wire
  static NodeDescription decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const NodeDescription&) const = default;
};

struct NodeInfo {
  std::uint8_t base_version = 1;
  std::uint8_t class_version = 1;
  std::uint8_t node_type = 1;  // 1 CA, 2 switch, 3 router
  std::uint8_t num_ports = 0;
  std::uint64_t system_image_guid = 0;
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint16_t partition_cap = 0;
  std::uint16_t device_id = 0;
  std::uint32_t revision = 0;
  std::uint8_t local_port_num = 0;
  std::uint32_t vendor_id = 0;  // 24 bits
  static NodeInfo decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const NodeInfo&) const = default;
};

struct SwitchInfo {
  std::uint16_t linear_fdb_cap = 0;
  std::uint16_t random_fdb_cap = 0;
  std::uint16_t multicast_fdb_cap = 0;
  std::uint16_t linear_fdb_top = 0;
  std::uint8_t default_port = 0;
  std::uint8_t default_mcast_primary_port = 0;
  std::uint8_t default_mcast_not_primary_port = 0;
  std::uint8_t life_time_value = 0;  // 5 bits
  bool port_state_change = false;    // write 1 to clear
  std::uint8_t optimized_sl2vl = 0;  // 2 bits
  std::uint16_t lids_per_port = 0;
  std::uint16_t partition_enforcement_cap = 0;
  bool inbound_enforcement_cap = false;
  bool outbound_enforcement_cap = false;
  bool filter_raw_inbound_cap = false;
  bool filter_raw_outbound_cap = false;
  bool enhanced_port0 = false;
  std::uint16_t multicast_fdb_top = 0;
  static SwitchInfo decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const SwitchInfo&) const = default;
};

struct PortInfo {
  std::uint64_t m_key = 0;
  std::uint64_t gid_prefix = 0;
  std::uint16_t lid = 0;
  std::uint16_t master_sm_lid = 0;
  std::uint32_t capability_mask = 0;
  std::uint16_t diag_code = 0;
  std::uint16_t m_key_lease_period = 0;
  std::uint8_t local_port_num = 0;
  std::uint8_t link_width_enabled = 0;
  std::uint8_t link_width_supported = 0;
  std::uint8_t link_width_active = 0;
  std::uint8_t link_speed_supported = 0;  // 4 bits
  std::uint8_t port_state = 0;            // 4 bits: 0 NOP, 1 Down, 2 Init, 3 Armed, 4 Active
  std::uint8_t port_phys_state = 0;       // 4 bits: 2 Polling, 3 Disabled, 5 LinkUp, ...
  std::uint8_t link_down_default_state = 0;
  std::uint8_t m_key_protect_bits = 0;  // 2 bits
  std::uint8_t lmc = 0;                 // 3 bits
  std::uint8_t link_speed_active = 0;   // 4 bits
  std::uint8_t link_speed_enabled = 0;  // 4 bits
  std::uint8_t neighbor_mtu = 0;        // 4 bits
  std::uint8_t master_sm_sl = 0;        // 4 bits
  std::uint8_t vl_cap = 0;              // 4 bits
  std::uint8_t init_type = 0;           // 4 bits
  std::uint8_t vl_high_limit = 0;
  std::uint8_t vl_arbitration_high_cap = 0;
  std::uint8_t vl_arbitration_low_cap = 0;
  std::uint8_t init_type_reply = 0;  // 4 bits
  std::uint8_t mtu_cap = 0;          // 4 bits
  std::uint8_t vl_stall_count = 0;   // 3 bits
  std::uint8_t hoq_life = 0;         // 5 bits
  std::uint8_t operational_vls = 0;  // 4 bits
  bool partition_enforcement_inbound = false;
  bool partition_enforcement_outbound = false;
  bool filter_raw_inbound = false;
  bool filter_raw_outbound = false;
  std::uint16_t m_key_violations = 0;
  std::uint16_t p_key_violations = 0;
  std::uint16_t q_key_violations = 0;
  std::uint8_t guid_cap = 0;
  bool client_reregister = false;
  std::uint8_t multicast_pkey_trap_suppression_enabled = 0;  // 2 bits
  std::uint8_t subnet_timeout = 0;                           // 5 bits
  std::uint8_t resp_time_value = 0;                          // 5 bits
  std::uint8_t local_phy_errors = 0;                         // 4 bits
  std::uint8_t overrun_errors = 0;                           // 4 bits
  std::uint16_t max_credit_hint = 0;
  std::uint32_t link_round_trip_latency = 0;  // 24 bits
  std::uint16_t capability_mask2 = 0;
  std::uint8_t link_speed_ext_active = 0;     // 4 bits
  std::uint8_t link_speed_ext_supported = 0;  // 4 bits
  std::uint8_t link_speed_ext_enabled = 0;    // 5 bits
  static PortInfo decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const PortInfo&) const = default;
};

// PortInfo:CapabilityMask bits subnetd uses.
inline constexpr std::uint32_t kCapIsSm = 1U << 1;
inline constexpr std::uint32_t kCapIsTrapSupported = 1U << 3;
inline constexpr std::uint32_t kCapIsClientReregistrationSupported = 1U << 25;

// 64 consecutive LFT entries; attr_mod = block number (LIDs 64*block ..).
struct LinearForwardingTable {
  std::array<std::uint8_t, 64> ports{};
  static LinearForwardingTable decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const LinearForwardingTable&) const = default;
};

struct SmInfo {
  std::uint64_t guid = 0;
  std::uint64_t sm_key = 0;
  std::uint32_t act_count = 0;
  std::uint8_t priority = 0;  // 4 bits
  std::uint8_t sm_state = 0;  // 4 bits: 0 not active, 1 discovering, 2 standby, 3 master
  static SmInfo decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const SmInfo&) const = default;
};

// Notice (the data of a Trap / TrapRepress SMP), generic form.
struct Notice {
  bool is_generic = true;
  std::uint8_t type = 0;            // 7 bits (1 = urgent, 2 = security, 3 = subnet mgmt, 4 = info)
  std::uint32_t producer_type = 0;  // 24 bits (2 = switch, 1 = CA); vendor id if !is_generic
  std::uint16_t trap_number = 0;    // device id if !is_generic
  std::uint16_t issuer_lid = 0;
  bool notice_toggle = false;
  std::uint16_t notice_count = 0;  // 15 bits
  std::array<std::uint8_t, 54> data_details{};
  static Notice decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const Notice&) const = default;

  // Trap 128 (link state change): data_details bytes 0-1 = LIDADDR of the switch.
  // In extended-LID modes bytes 2-5 carry the 32-bit LID (see discovery/README.md).
  static Notice trap128(std::uint32_t switch_lid, bool extended);
  std::uint32_t trap128_lid(bool extended) const;
  // Trap 144 (capability mask / local changes): LIDADDR and the new CapabilityMask.
  static Notice trap144(std::uint16_t lid, std::uint32_t capability_mask);
};

// One block of a switch's multicast forwarding table: 32 MLIDs (from
// 0xC000 + 32 x block) x 16 ports (from 16 x position), a port bit each.
// attr_mod = position (bits 31:28) | block (bits 8:0).
struct MulticastForwardingTable {
  std::array<std::uint16_t, 32> masks{};  // bit i: port 16 x position + i
  static MulticastForwardingTable decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const MulticastForwardingTable&) const = default;
  static std::uint32_t attr_mod(std::uint32_t block, std::uint32_t position) {
    return (position << 28) | (block & 0x1FF);
  }
};

// One 32-entry block of a port's P_Key table (entries with the membership
// bit 0x8000 = full; 0 = unused). attr_mod = block (bits 15:0), and on a
// switch the port (bits 23:16); a CA answers for the port the SMP entered.
struct PKeyTable {
  std::array<std::uint16_t, 32> keys{};
  static PKeyTable decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const PKeyTable&) const = default;
};

// SLtoVLMappingTable: 16 SLs x 4 bits. attr_mod for switches: input port
// (bits 15:8) and output port (bits 7:0).
struct SlToVlMappingTable {
  std::array<std::uint8_t, 16> vl{};
  static SlToVlMappingTable decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const SlToVlMappingTable&) const = default;
};

// One 32-entry block of a VL arbitration table; attr_mod = block (bits 31:16:
// 1 low 0-31, 2 low 32-63, 3 high 0-31, 4 high 32-63) | port (bits 7:0).
struct VlArbitrationTable {
  struct Entry {
    std::uint8_t vl = 0;  // 4 bits
    std::uint8_t weight = 0;
    bool operator==(const Entry&) const = default;
  };
  std::array<Entry, 32> entries{};
  static VlArbitrationTable decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const VlArbitrationTable&) const = default;
};

// ----- vendor-specific extended-LID attributes (17/24-bit modes) -----

// Per-port LID state in the extended space; attr_mod = port number.
struct ExtPortInfo {
  std::uint32_t lid = 0;            // 24 bits used
  std::uint32_t master_sm_lid = 0;  // 24 bits used
  std::uint8_t lmc = 0;             // 3 bits
  std::uint8_t lid_bits = 0;        // 16, 17 or 24: the mode the port is configured for
  static ExtPortInfo decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const ExtPortInfo&) const = default;
};

// Like LinearForwardingTable but attr_mod is a 32-bit block number (24-bit LIDs).
using ExtLinearForwardingTable = LinearForwardingTable;

struct ExtSwitchInfo {
  std::uint32_t linear_fdb_cap = 0;
  std::uint32_t linear_fdb_top = 0;
  static ExtSwitchInfo decode(ConstSmpData d);
  void encode(SmpData d) const;
  bool operator==(const ExtSwitchInfo&) const = default;
};

// Convenience: the data field of an Smp as a fixed-size span.
inline SmpData data_of(Smp& s) {
  return SmpData(s.data);
}
inline ConstSmpData data_of(const Smp& s) {
  return ConstSmpData(s.data);
}

}  // namespace subnetd::discovery::mad

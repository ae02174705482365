// SMP wire codec. Offsets are byte offsets into the 256-byte MAD (header
// fields) or into the 64-byte SMP data field (attributes), written next to the
// IBA section that defines them. Sub-byte fields give (byte, shift, width)
// with shift counted from the byte's least significant bit; libibmad's field
// table is the independent cross-check (tests/unit/mad_codec_test.cpp).

#include "discovery/mad/smp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "discovery/mad/bytes.hpp"

namespace subnetd::discovery::mad {
namespace {

// Common MAD header and SMP layout (IBA 13.4.3, 14.2.1.1, 14.2.1.2).
namespace hdr {
constexpr std::size_t kBaseVersion = 0;
constexpr std::size_t kMgmtClass = 1;
constexpr std::size_t kClassVersion = 2;
constexpr std::size_t kMethod = 3;      // R bit (7) + method (6:0); kept as one byte
constexpr std::size_t kStatus = 4;      // 16 bits; DR: D bit (15) + status (14:0)
constexpr std::size_t kHopPointer = 6;  // DR only; reserved in LID-routed SMPs
constexpr std::size_t kHopCount = 7;    // DR only
constexpr std::size_t kTid = 8;
constexpr std::size_t kAttrId = 16;
constexpr std::size_t kAttrMod = 20;  // 18-19 reserved
constexpr std::size_t kMKey = 24;
constexpr std::size_t kDrSlid = 32;        // DR only; 32-63 reserved in LID-routed SMPs
constexpr std::size_t kDrDlid = 34;        // DR only; 36-63 reserved
constexpr std::size_t kInitialPath = 128;  // DR only; 128-255 reserved in LID-routed SMPs
constexpr std::size_t kReturnPath = 192;
constexpr std::uint16_t kDirectionBit = 0x8000;
constexpr std::uint16_t kDrStatusMask = 0x7FFF;
}  // namespace hdr

constexpr std::uint8_t kBaseVersion1 = 1;
constexpr std::uint8_t kSmpClassVersion1 = 1;

bool is_known_method(std::uint8_t m) {
  switch (static_cast<Method>(m)) {
    case Method::kGet:
    case Method::kSet:
    case Method::kTrap:
    case Method::kTrapRepress:
    case Method::kGetResp:
      return true;
  }
  return false;
}

// Copies `n` bytes of a fixed-size span; the sizes are compile-time facts of
// the SMP layout, so no runtime check is needed here.
template <std::size_t N>
void copy_out(const std::array<std::uint8_t, N>& src, std::uint8_t* dst) {
  std::memcpy(dst, src.data(), N);
}
template <std::size_t N>
void copy_in(const std::uint8_t* src, std::array<std::uint8_t, N>& dst) {
  std::memcpy(dst.data(), src, N);
}

std::uint8_t bit(bool b, unsigned shift) {
  return static_cast<std::uint8_t>(b ? 1U << shift : 0U);
}
bool test_bit(std::uint8_t byte, unsigned shift) {
  return ((byte >> shift) & 1U) != 0;
}

}  // namespace

// ------------------------------------------------------------------ names

const char* method_name(Method m) {
  switch (m) {
    case Method::kGet:
      return "Get";
    case Method::kSet:
      return "Set";
    case Method::kTrap:
      return "Trap";
    case Method::kTrapRepress:
      return "TrapRepress";
    case Method::kGetResp:
      return "GetResp";
  }
  return "UnknownMethod";
}

const char* attr_name(AttrId a) {
  switch (a) {
    case AttrId::kNotice:
      return "Notice";
    case AttrId::kNodeDescription:
      return "NodeDescription";
    case AttrId::kNodeInfo:
      return "NodeInfo";
    case AttrId::kSwitchInfo:
      return "SwitchInfo";
    case AttrId::kPortInfo:
      return "PortInfo";
    case AttrId::kPKeyTable:
      return "P_KeyTable";
    case AttrId::kSlToVlMappingTable:
      return "SLtoVLMappingTable";
    case AttrId::kVlArbitrationTable:
      return "VLArbitrationTable";
    case AttrId::kLinearForwardingTable:
      return "LinearForwardingTable";
    case AttrId::kMulticastForwardingTable:
      return "MulticastForwardingTable";
    case AttrId::kSmInfo:
      return "SMInfo";
    case AttrId::kExtPortInfo:
      return "ExtPortInfo";
    case AttrId::kExtLinearForwardingTable:
      return "ExtLinearForwardingTable";
    case AttrId::kExtSwitchInfo:
      return "ExtSwitchInfo";
    case AttrId::kFailoverInfo:
      return "FailoverInfo";
    case AttrId::kFailoverGroupTable:
      return "FailoverGroupTable";
    case AttrId::kFailoverLidGroupTable:
      return "FailoverLidGroupTable";
    case AttrId::kFailoverNotifyConfig:
      return "FailoverNotifyConfig";
  }
  return "UnknownAttribute";
}

bool is_known_attr(std::uint16_t raw) {
  switch (static_cast<AttrId>(raw)) {
    case AttrId::kNotice:
    case AttrId::kNodeDescription:
    case AttrId::kNodeInfo:
    case AttrId::kSwitchInfo:
    case AttrId::kPortInfo:
    case AttrId::kPKeyTable:
    case AttrId::kSlToVlMappingTable:
    case AttrId::kVlArbitrationTable:
    case AttrId::kLinearForwardingTable:
    case AttrId::kMulticastForwardingTable:
    case AttrId::kSmInfo:
    case AttrId::kExtPortInfo:
    case AttrId::kExtLinearForwardingTable:
    case AttrId::kExtSwitchInfo:
    case AttrId::kFailoverInfo:
    case AttrId::kFailoverGroupTable:
    case AttrId::kFailoverLidGroupTable:
    case AttrId::kFailoverNotifyConfig:
      return true;
  }
  return false;
}

// ------------------------------------------------------------------ SMP

Result<Smp> decode_smp(std::span<const std::uint8_t> bytes, DecodeOptions opts) {
  if (bytes.size() < kSmpSize) {
    return Error{Errc::kMalformedMad,
                 fmt::format("SMP: buffer holds {} bytes, an SMP is {}", bytes.size(), kSmpSize)};
  }
  const std::uint8_t* b = bytes.data();

  Smp s;
  s.base_version = b[hdr::kBaseVersion];
  if (s.base_version != kBaseVersion1) {
    return Error{Errc::kMalformedMad,
                 fmt::format("SMP: base version {} (expected {})", s.base_version, kBaseVersion1)};
  }
  const std::uint8_t cls = b[hdr::kMgmtClass];
  if (cls != static_cast<std::uint8_t>(MgmtClass::kSubnLid) &&
      cls != static_cast<std::uint8_t>(MgmtClass::kSubnDirected)) {
    return Error{Errc::kMalformedMad,
                 fmt::format("SMP: management class 0x{:02x} is not an SMP class (0x01 "
                             "LID-routed, 0x81 directed-route)",
                             cls)};
  }
  s.mgmt_class = static_cast<MgmtClass>(cls);
  s.class_version = b[hdr::kClassVersion];
  if (s.class_version != kSmpClassVersion1) {
    return Error{Errc::kMalformedMad, fmt::format("SMP: class version {} (expected {})",
                                                  s.class_version, kSmpClassVersion1)};
  }
  const std::uint8_t method = b[hdr::kMethod];
  if (!is_known_method(method)) {
    return Error{Errc::kMalformedMad, fmt::format("SMP: unknown method 0x{:02x}", method)};
  }
  s.method = static_cast<Method>(method);
  const std::uint16_t attr = load_be16(b + hdr::kAttrId);
  if (!opts.allow_unknown_attribute && !is_known_attr(attr)) {
    return Error{Errc::kMalformedMad, fmt::format("SMP: unknown attribute 0x{:04x} (method {})",
                                                  attr, method_name(s.method))};
  }
  s.attr_id = static_cast<AttrId>(attr);
  s.tid = load_be64(b + hdr::kTid);
  s.attr_mod = load_be32(b + hdr::kAttrMod);
  s.m_key = load_be64(b + hdr::kMKey);
  copy_in(b + kSmpDataOffset, s.data);

  const std::uint16_t status = load_be16(b + hdr::kStatus);
  if (!s.directed()) {
    s.status = status;
    return s;
  }

  s.status = status & hdr::kDrStatusMask;
  s.direction = (status & hdr::kDirectionBit) != 0;
  s.hop_pointer = b[hdr::kHopPointer];
  s.hop_count = b[hdr::kHopCount];
  if (s.hop_count > kMaxHopCount) {
    return Error{Errc::kMalformedMad, fmt::format("directed-route SMP: hop count {} exceeds {}",
                                                  s.hop_count, kMaxHopCount)};
  }
  // IBA 14.2.2: the hop pointer runs 0..hop_count on the way out and reaches
  // hop_count + 1 when the SMP is delivered / turned around.
  if (s.hop_pointer > s.hop_count + 1) {
    return Error{Errc::kMalformedMad,
                 fmt::format("directed-route SMP: hop pointer {} exceeds hop count {} + 1",
                             s.hop_pointer, s.hop_count)};
  }
  s.dr_slid = load_be16(b + hdr::kDrSlid);
  s.dr_dlid = load_be16(b + hdr::kDrDlid);
  copy_in(b + hdr::kInitialPath, s.initial_path);
  copy_in(b + hdr::kReturnPath, s.return_path);
  return s;
}

void encode_smp(const Smp& smp, std::span<std::uint8_t, kSmpSize> out) {
  std::uint8_t* b = out.data();
  std::memset(b, 0, kSmpSize);
  b[hdr::kBaseVersion] = smp.base_version;
  b[hdr::kMgmtClass] = static_cast<std::uint8_t>(smp.mgmt_class);
  b[hdr::kClassVersion] = smp.class_version;
  b[hdr::kMethod] = static_cast<std::uint8_t>(smp.method);
  store_be64(b + hdr::kTid, smp.tid);
  store_be16(b + hdr::kAttrId, static_cast<std::uint16_t>(smp.attr_id));
  store_be32(b + hdr::kAttrMod, smp.attr_mod);
  store_be64(b + hdr::kMKey, smp.m_key);
  copy_out(smp.data, b + kSmpDataOffset);
  if (!smp.directed()) {
    store_be16(b + hdr::kStatus, smp.status);
    return;
  }
  store_be16(b + hdr::kStatus, static_cast<std::uint16_t>((smp.direction ? hdr::kDirectionBit : 0) |
                                                          (smp.status & hdr::kDrStatusMask)));
  b[hdr::kHopPointer] = smp.hop_pointer;
  b[hdr::kHopCount] = smp.hop_count;
  store_be16(b + hdr::kDrSlid, smp.dr_slid);
  store_be16(b + hdr::kDrDlid, smp.dr_dlid);
  copy_out(smp.initial_path, b + hdr::kInitialPath);
  copy_out(smp.return_path, b + hdr::kReturnPath);
}

void patch_smp(std::span<std::uint8_t, kSmpSize> bytes, std::uint64_t tid, std::uint32_t attr_mod,
               std::span<const std::uint8_t, kSmpDataSize> data) {
  std::uint8_t* b = bytes.data();
  store_be64(b + hdr::kTid, tid);
  store_be32(b + hdr::kAttrMod, attr_mod);
  std::memcpy(b + kSmpDataOffset, data.data(), kSmpDataSize);
}

void set_smp_tid(std::span<std::uint8_t, kSmpSize> bytes, std::uint64_t tid) {
  store_be64(bytes.data() + hdr::kTid, tid);
}

std::string describe_smp(std::span<const std::uint8_t, kSmpSize> bytes) {
  const std::uint8_t* b = bytes.data();
  return fmt::format("{} {} (modifier {:#x})", method_name(static_cast<Method>(b[hdr::kMethod])),
                     attr_name(static_cast<AttrId>(load_be16(b + hdr::kAttrId))),
                     load_be32(b + hdr::kAttrMod));
}

std::optional<SmpPeek> peek_smp(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kSmpSize) return std::nullopt;
  const std::uint8_t* b = bytes.data();
  const std::uint8_t cls = b[hdr::kMgmtClass];
  const bool directed = cls == static_cast<std::uint8_t>(MgmtClass::kSubnDirected);
  if (b[hdr::kBaseVersion] != kBaseVersion1 || b[hdr::kClassVersion] != kSmpClassVersion1 ||
      (!directed && cls != static_cast<std::uint8_t>(MgmtClass::kSubnLid)) ||
      !is_known_method(b[hdr::kMethod])) {
    return std::nullopt;
  }
  SmpPeek p;
  p.response = (b[hdr::kMethod] & 0x80) != 0;
  p.tid = load_be64(b + hdr::kTid);
  p.status = load_be16(b + hdr::kStatus);
  if (directed) p.status &= hdr::kDrStatusMask;
  return p;
}

std::array<std::uint8_t, kSmpSize> encode_smp(const Smp& smp) {
  std::array<std::uint8_t, kSmpSize> out{};
  encode_smp(smp, std::span<std::uint8_t, kSmpSize>(out));
  return out;
}

Smp make_dr_smp(Method m, AttrId attr, std::uint32_t attr_mod, std::span<const std::uint8_t> path,
                std::uint64_t tid) {
  // A path longer than 63 hops cannot be expressed on the wire; the Sweeper
  // never builds one (it stops at the IBA hop limit), so this is a caller bug.
  assert(path.size() <= kMaxHopCount);
  const std::size_t hops = std::min<std::size_t>(path.size(), kMaxHopCount);
  Smp s;
  s.mgmt_class = MgmtClass::kSubnDirected;
  s.method = m;
  s.attr_id = attr;
  s.attr_mod = attr_mod;
  s.tid = tid;
  s.hop_count = static_cast<std::uint8_t>(hops);
  s.hop_pointer = 0;
  s.dr_slid = kPermissiveLid;
  s.dr_dlid = kPermissiveLid;
  std::copy_n(path.begin(), hops, s.initial_path.begin() + 1);
  return s;
}

Smp make_lr_smp(Method m, AttrId attr, std::uint32_t attr_mod, std::uint64_t tid) {
  Smp s;
  s.mgmt_class = MgmtClass::kSubnLid;
  s.method = m;
  s.attr_id = attr;
  s.attr_mod = attr_mod;
  s.tid = tid;
  return s;
}

// ------------------------------------------------------------------ attributes

// NodeDescription (IBA 14.2.5.2): 64 bytes of UTF-8, NUL-padded.
NodeDescription NodeDescription::decode(ConstSmpData d) {
  const auto* p = reinterpret_cast<const char*>(d.data());
  const std::size_t len =
      static_cast<std::size_t>(std::find(d.begin(), d.end(), std::uint8_t{0}) - d.begin());
  return NodeDescription{std::string(p, len)};
}

void NodeDescription::encode(SmpData d) const {
  std::fill(d.begin(), d.end(), std::uint8_t{0});
  std::memcpy(d.data(), text.data(), std::min(text.size(), d.size()));
}

// NodeInfo (IBA 14.2.5.3).
namespace {
namespace ni {
constexpr std::size_t kBaseVersion = 0;
constexpr std::size_t kClassVersion = 1;
constexpr std::size_t kNodeType = 2;
constexpr std::size_t kNumPorts = 3;
constexpr std::size_t kSystemImageGuid = 4;
constexpr std::size_t kNodeGuid = 12;
constexpr std::size_t kPortGuid = 20;
constexpr std::size_t kPartitionCap = 28;
constexpr std::size_t kDeviceId = 30;
constexpr std::size_t kRevision = 32;
constexpr std::size_t kLocalPortNum = 36;
constexpr std::size_t kVendorId = 37;  // 24 bits
}  // namespace ni
}  // namespace

NodeInfo NodeInfo::decode(ConstSmpData d) {
  const std::uint8_t* p = d.data();
  NodeInfo n;
  n.base_version = p[ni::kBaseVersion];
  n.class_version = p[ni::kClassVersion];
  n.node_type = p[ni::kNodeType];
  n.num_ports = p[ni::kNumPorts];
  n.system_image_guid = load_be64(p + ni::kSystemImageGuid);
  n.node_guid = load_be64(p + ni::kNodeGuid);
  n.port_guid = load_be64(p + ni::kPortGuid);
  n.partition_cap = load_be16(p + ni::kPartitionCap);
  n.device_id = load_be16(p + ni::kDeviceId);
  n.revision = load_be32(p + ni::kRevision);
  n.local_port_num = p[ni::kLocalPortNum];
  n.vendor_id = load_be24(p + ni::kVendorId);
  return n;
}

void NodeInfo::encode(SmpData d) const {
  std::uint8_t* p = d.data();
  std::memset(p, 0, kSmpDataSize);
  p[ni::kBaseVersion] = base_version;
  p[ni::kClassVersion] = class_version;
  p[ni::kNodeType] = node_type;
  p[ni::kNumPorts] = num_ports;
  store_be64(p + ni::kSystemImageGuid, system_image_guid);
  store_be64(p + ni::kNodeGuid, node_guid);
  store_be64(p + ni::kPortGuid, port_guid);
  store_be16(p + ni::kPartitionCap, partition_cap);
  store_be16(p + ni::kDeviceId, device_id);
  store_be32(p + ni::kRevision, revision);
  p[ni::kLocalPortNum] = local_port_num;
  store_be24(p + ni::kVendorId, vendor_id);
}

// SwitchInfo (IBA 14.2.5.4).
namespace {
namespace si {
constexpr std::size_t kLinearFdbCap = 0;
constexpr std::size_t kRandomFdbCap = 2;
constexpr std::size_t kMulticastFdbCap = 4;
constexpr std::size_t kLinearFdbTop = 6;
constexpr std::size_t kDefaultPort = 8;
constexpr std::size_t kDefaultMcastPrimaryPort = 9;
constexpr std::size_t kDefaultMcastNotPrimaryPort = 10;
constexpr std::size_t kLifeTimeByte = 11;  // LifeTimeValue 7:3, PortStateChange 2, OptSL2VL 1:0
constexpr std::size_t kLidsPerPort = 12;
constexpr std::size_t kPartitionEnforcementCap = 14;
constexpr std::size_t kCapsByte = 16;  // Inbound 7, Outbound 6, RawIn 5, RawOut 4, EnhancedPort0 3
constexpr std::size_t kMulticastFdbTop = 18;  // byte 17 reserved
}  // namespace si
}  // namespace

SwitchInfo SwitchInfo::decode(ConstSmpData d) {
  const std::uint8_t* p = d.data();
  SwitchInfo s;
  s.linear_fdb_cap = load_be16(p + si::kLinearFdbCap);
  s.random_fdb_cap = load_be16(p + si::kRandomFdbCap);
  s.multicast_fdb_cap = load_be16(p + si::kMulticastFdbCap);
  s.linear_fdb_top = load_be16(p + si::kLinearFdbTop);
  s.default_port = p[si::kDefaultPort];
  s.default_mcast_primary_port = p[si::kDefaultMcastPrimaryPort];
  s.default_mcast_not_primary_port = p[si::kDefaultMcastNotPrimaryPort];
  const std::uint8_t lt = p[si::kLifeTimeByte];
  s.life_time_value = get_bits(lt, 3, 5);
  s.port_state_change = test_bit(lt, 2);
  s.optimized_sl2vl = get_bits(lt, 0, 2);
  s.lids_per_port = load_be16(p + si::kLidsPerPort);
  s.partition_enforcement_cap = load_be16(p + si::kPartitionEnforcementCap);
  const std::uint8_t caps = p[si::kCapsByte];
  s.inbound_enforcement_cap = test_bit(caps, 7);
  s.outbound_enforcement_cap = test_bit(caps, 6);
  s.filter_raw_inbound_cap = test_bit(caps, 5);
  s.filter_raw_outbound_cap = test_bit(caps, 4);
  s.enhanced_port0 = test_bit(caps, 3);
  s.multicast_fdb_top = load_be16(p + si::kMulticastFdbTop);
  return s;
}

void SwitchInfo::encode(SmpData d) const {
  std::uint8_t* p = d.data();
  std::memset(p, 0, kSmpDataSize);
  store_be16(p + si::kLinearFdbCap, linear_fdb_cap);
  store_be16(p + si::kRandomFdbCap, random_fdb_cap);
  store_be16(p + si::kMulticastFdbCap, multicast_fdb_cap);
  store_be16(p + si::kLinearFdbTop, linear_fdb_top);
  p[si::kDefaultPort] = default_port;
  p[si::kDefaultMcastPrimaryPort] = default_mcast_primary_port;
  p[si::kDefaultMcastNotPrimaryPort] = default_mcast_not_primary_port;
  std::uint8_t& lt = p[si::kLifeTimeByte];
  put_bits(lt, 3, 5, life_time_value);
  lt |= bit(port_state_change, 2);
  put_bits(lt, 0, 2, optimized_sl2vl);
  store_be16(p + si::kLidsPerPort, lids_per_port);
  store_be16(p + si::kPartitionEnforcementCap, partition_enforcement_cap);
  p[si::kCapsByte] = static_cast<std::uint8_t>(
      bit(inbound_enforcement_cap, 7) | bit(outbound_enforcement_cap, 6) |
      bit(filter_raw_inbound_cap, 5) | bit(filter_raw_outbound_cap, 4) | bit(enhanced_port0, 3));
  store_be16(p + si::kMulticastFdbTop, multicast_fdb_top);
}

// PortInfo (IBA 14.2.5.6).
namespace {
namespace pi {
constexpr std::size_t kMKey = 0;
constexpr std::size_t kGidPrefix = 8;
constexpr std::size_t kLid = 16;
constexpr std::size_t kMasterSmLid = 18;
constexpr std::size_t kCapabilityMask = 20;
constexpr std::size_t kDiagCode = 24;
constexpr std::size_t kMKeyLeasePeriod = 26;
constexpr std::size_t kLocalPortNum = 28;
constexpr std::size_t kLinkWidthEnabled = 29;
constexpr std::size_t kLinkWidthSupported = 30;
constexpr std::size_t kLinkWidthActive = 31;
constexpr std::size_t kSpeedSupportedState = 32;   // LinkSpeedSupported 7:4, PortState 3:0
constexpr std::size_t kPhysStateDownDefault = 33;  // PortPhysicalState 7:4, LinkDownDefault 3:0
constexpr std::size_t kMKeyProtectLmc = 34;        // M_KeyProtectBits 7:6, reserved 5:3, LMC 2:0
constexpr std::size_t kSpeedActiveEnabled = 35;    // LinkSpeedActive 7:4, LinkSpeedEnabled 3:0
constexpr std::size_t kNeighborMtuSmSl = 36;       // NeighborMTU 7:4, MasterSMSL 3:0
constexpr std::size_t kVlCapInitType = 37;         // VLCap 7:4, InitType 3:0
constexpr std::size_t kVlHighLimit = 38;
constexpr std::size_t kVlArbHighCap = 39;
constexpr std::size_t kVlArbLowCap = 40;
constexpr std::size_t kInitReplyMtuCap = 41;  // InitTypeReply 7:4, MTUCap 3:0
constexpr std::size_t kStallHoq = 42;         // VLStallCount 7:5, HOQLife 4:0
constexpr std::size_t kOperVlsFilters = 43;  // OperationalVLs 7:4, PEIn 3, PEOut 2, FRIn 1, FROut 0
constexpr std::size_t kMKeyViolations = 44;
constexpr std::size_t kPKeyViolations = 46;
constexpr std::size_t kQKeyViolations = 48;
constexpr std::size_t kGuidCap = 50;
constexpr std::size_t kReregTimeout =
    51;  // ClientReregister 7, McastPKeyTrapSuppr 6:5, SubnetTimeOut 4:0
constexpr std::size_t kRespTime = 52;    // reserved 7:5, RespTimeValue 4:0
constexpr std::size_t kPhyOverrun = 53;  // LocalPhyErrors 7:4, OverrunErrors 3:0
constexpr std::size_t kMaxCreditHint = 54;
constexpr std::size_t kLinkRoundTripLatency = 57;  // 24 bits; byte 56 reserved
constexpr std::size_t kCapabilityMask2 = 60;
constexpr std::size_t kSpeedExtActiveSupported = 62;  // Active 7:4, Supported 3:0
constexpr std::size_t kSpeedExtEnabled = 63;          // reserved 7:5, Enabled 4:0
}  // namespace pi
}  // namespace

PortInfo PortInfo::decode(ConstSmpData d) {
  const std::uint8_t* p = d.data();
  PortInfo r;
  r.m_key = load_be64(p + pi::kMKey);
  r.gid_prefix = load_be64(p + pi::kGidPrefix);
  r.lid = load_be16(p + pi::kLid);
  r.master_sm_lid = load_be16(p + pi::kMasterSmLid);
  r.capability_mask = load_be32(p + pi::kCapabilityMask);
  r.diag_code = load_be16(p + pi::kDiagCode);
  r.m_key_lease_period = load_be16(p + pi::kMKeyLeasePeriod);
  r.local_port_num = p[pi::kLocalPortNum];
  r.link_width_enabled = p[pi::kLinkWidthEnabled];
  r.link_width_supported = p[pi::kLinkWidthSupported];
  r.link_width_active = p[pi::kLinkWidthActive];
  r.link_speed_supported = get_bits(p[pi::kSpeedSupportedState], 4, 4);
  r.port_state = get_bits(p[pi::kSpeedSupportedState], 0, 4);
  r.port_phys_state = get_bits(p[pi::kPhysStateDownDefault], 4, 4);
  r.link_down_default_state = get_bits(p[pi::kPhysStateDownDefault], 0, 4);
  r.m_key_protect_bits = get_bits(p[pi::kMKeyProtectLmc], 6, 2);
  r.lmc = get_bits(p[pi::kMKeyProtectLmc], 0, 3);
  r.link_speed_active = get_bits(p[pi::kSpeedActiveEnabled], 4, 4);
  r.link_speed_enabled = get_bits(p[pi::kSpeedActiveEnabled], 0, 4);
  r.neighbor_mtu = get_bits(p[pi::kNeighborMtuSmSl], 4, 4);
  r.master_sm_sl = get_bits(p[pi::kNeighborMtuSmSl], 0, 4);
  r.vl_cap = get_bits(p[pi::kVlCapInitType], 4, 4);
  r.init_type = get_bits(p[pi::kVlCapInitType], 0, 4);
  r.vl_high_limit = p[pi::kVlHighLimit];
  r.vl_arbitration_high_cap = p[pi::kVlArbHighCap];
  r.vl_arbitration_low_cap = p[pi::kVlArbLowCap];
  r.init_type_reply = get_bits(p[pi::kInitReplyMtuCap], 4, 4);
  r.mtu_cap = get_bits(p[pi::kInitReplyMtuCap], 0, 4);
  r.vl_stall_count = get_bits(p[pi::kStallHoq], 5, 3);
  r.hoq_life = get_bits(p[pi::kStallHoq], 0, 5);
  const std::uint8_t ov = p[pi::kOperVlsFilters];
  r.operational_vls = get_bits(ov, 4, 4);
  r.partition_enforcement_inbound = test_bit(ov, 3);
  r.partition_enforcement_outbound = test_bit(ov, 2);
  r.filter_raw_inbound = test_bit(ov, 1);
  r.filter_raw_outbound = test_bit(ov, 0);
  r.m_key_violations = load_be16(p + pi::kMKeyViolations);
  r.p_key_violations = load_be16(p + pi::kPKeyViolations);
  r.q_key_violations = load_be16(p + pi::kQKeyViolations);
  r.guid_cap = p[pi::kGuidCap];
  const std::uint8_t rt = p[pi::kReregTimeout];
  r.client_reregister = test_bit(rt, 7);
  r.multicast_pkey_trap_suppression_enabled = get_bits(rt, 5, 2);
  r.subnet_timeout = get_bits(rt, 0, 5);
  r.resp_time_value = get_bits(p[pi::kRespTime], 0, 5);
  r.local_phy_errors = get_bits(p[pi::kPhyOverrun], 4, 4);
  r.overrun_errors = get_bits(p[pi::kPhyOverrun], 0, 4);
  r.max_credit_hint = load_be16(p + pi::kMaxCreditHint);
  r.link_round_trip_latency = load_be24(p + pi::kLinkRoundTripLatency);
  r.capability_mask2 = load_be16(p + pi::kCapabilityMask2);
  r.link_speed_ext_active = get_bits(p[pi::kSpeedExtActiveSupported], 4, 4);
  r.link_speed_ext_supported = get_bits(p[pi::kSpeedExtActiveSupported], 0, 4);
  r.link_speed_ext_enabled = get_bits(p[pi::kSpeedExtEnabled], 0, 5);
  return r;
}

void PortInfo::encode(SmpData d) const {
  std::uint8_t* p = d.data();
  std::memset(p, 0, kSmpDataSize);
  store_be64(p + pi::kMKey, m_key);
  store_be64(p + pi::kGidPrefix, gid_prefix);
  store_be16(p + pi::kLid, lid);
  store_be16(p + pi::kMasterSmLid, master_sm_lid);
  store_be32(p + pi::kCapabilityMask, capability_mask);
  store_be16(p + pi::kDiagCode, diag_code);
  store_be16(p + pi::kMKeyLeasePeriod, m_key_lease_period);
  p[pi::kLocalPortNum] = local_port_num;
  p[pi::kLinkWidthEnabled] = link_width_enabled;
  p[pi::kLinkWidthSupported] = link_width_supported;
  p[pi::kLinkWidthActive] = link_width_active;
  put_bits(p[pi::kSpeedSupportedState], 4, 4, link_speed_supported);
  put_bits(p[pi::kSpeedSupportedState], 0, 4, port_state);
  put_bits(p[pi::kPhysStateDownDefault], 4, 4, port_phys_state);
  put_bits(p[pi::kPhysStateDownDefault], 0, 4, link_down_default_state);
  put_bits(p[pi::kMKeyProtectLmc], 6, 2, m_key_protect_bits);
  put_bits(p[pi::kMKeyProtectLmc], 0, 3, lmc);
  put_bits(p[pi::kSpeedActiveEnabled], 4, 4, link_speed_active);
  put_bits(p[pi::kSpeedActiveEnabled], 0, 4, link_speed_enabled);
  put_bits(p[pi::kNeighborMtuSmSl], 4, 4, neighbor_mtu);
  put_bits(p[pi::kNeighborMtuSmSl], 0, 4, master_sm_sl);
  put_bits(p[pi::kVlCapInitType], 4, 4, vl_cap);
  put_bits(p[pi::kVlCapInitType], 0, 4, init_type);
  p[pi::kVlHighLimit] = vl_high_limit;
  p[pi::kVlArbHighCap] = vl_arbitration_high_cap;
  p[pi::kVlArbLowCap] = vl_arbitration_low_cap;
  put_bits(p[pi::kInitReplyMtuCap], 4, 4, init_type_reply);
  put_bits(p[pi::kInitReplyMtuCap], 0, 4, mtu_cap);
  put_bits(p[pi::kStallHoq], 5, 3, vl_stall_count);
  put_bits(p[pi::kStallHoq], 0, 5, hoq_life);
  std::uint8_t& ov = p[pi::kOperVlsFilters];
  put_bits(ov, 4, 4, operational_vls);
  ov |= static_cast<std::uint8_t>(bit(partition_enforcement_inbound, 3) |
                                  bit(partition_enforcement_outbound, 2) |
                                  bit(filter_raw_inbound, 1) | bit(filter_raw_outbound, 0));
  store_be16(p + pi::kMKeyViolations, m_key_violations);
  store_be16(p + pi::kPKeyViolations, p_key_violations);
  store_be16(p + pi::kQKeyViolations, q_key_violations);
  p[pi::kGuidCap] = guid_cap;
  std::uint8_t& rt = p[pi::kReregTimeout];
  rt |= bit(client_reregister, 7);
  put_bits(rt, 5, 2, multicast_pkey_trap_suppression_enabled);
  put_bits(rt, 0, 5, subnet_timeout);
  put_bits(p[pi::kRespTime], 0, 5, resp_time_value);
  put_bits(p[pi::kPhyOverrun], 4, 4, local_phy_errors);
  put_bits(p[pi::kPhyOverrun], 0, 4, overrun_errors);
  store_be16(p + pi::kMaxCreditHint, max_credit_hint);
  store_be24(p + pi::kLinkRoundTripLatency, link_round_trip_latency);
  store_be16(p + pi::kCapabilityMask2, capability_mask2);
  put_bits(p[pi::kSpeedExtActiveSupported], 4, 4, link_speed_ext_active);
  put_bits(p[pi::kSpeedExtActiveSupported], 0, 4, link_speed_ext_supported);
  put_bits(p[pi::kSpeedExtEnabled], 0, 5, link_speed_ext_enabled);
}

// LinearForwardingTable (IBA 14.2.5.10): 64 one-byte egress ports. The
// vendor ExtLinearForwardingTable has the same layout (only attr_mod differs).
LinearForwardingTable LinearForwardingTable::decode(ConstSmpData d) {
  LinearForwardingTable t;
  std::copy(d.begin(), d.end(), t.ports.begin());
  return t;
}

void LinearForwardingTable::encode(SmpData d) const {
  std::copy(ports.begin(), ports.end(), d.begin());
}

// SMInfo (IBA 14.2.5.13).
namespace {
namespace sm {
constexpr std::size_t kGuid = 0;
constexpr std::size_t kSmKey = 8;
constexpr std::size_t kActCount = 16;
constexpr std::size_t kPriorityState = 20;  // Priority 7:4, SMState 3:0
}  // namespace sm
}  // namespace

SmInfo SmInfo::decode(ConstSmpData d) {
  const std::uint8_t* p = d.data();
  SmInfo s;
  s.guid = load_be64(p + sm::kGuid);
  s.sm_key = load_be64(p + sm::kSmKey);
  s.act_count = load_be32(p + sm::kActCount);
  s.priority = get_bits(p[sm::kPriorityState], 4, 4);
  s.sm_state = get_bits(p[sm::kPriorityState], 0, 4);
  return s;
}

void SmInfo::encode(SmpData d) const {
  std::uint8_t* p = d.data();
  std::memset(p, 0, kSmpDataSize);
  store_be64(p + sm::kGuid, guid);
  store_be64(p + sm::kSmKey, sm_key);
  store_be32(p + sm::kActCount, act_count);
  put_bits(p[sm::kPriorityState], 4, 4, priority);
  put_bits(p[sm::kPriorityState], 0, 4, sm_state);
}

// Notice (IBA 13.4.8.2). Only the first 64 bytes fit an SMP; IssuerGID
// (bytes 64-79) is used by GS notices only.
namespace {
namespace nt {
constexpr std::size_t kGenericType = 0;   // IsGeneric 7, Type 6:0
constexpr std::size_t kProducerType = 1;  // 24 bits: ProducerType / VendorID
constexpr std::size_t kTrapNumber = 4;    // TrapNumber / DeviceID
constexpr std::size_t kIssuerLid = 6;
constexpr std::size_t kToggleCount = 8;  // NoticeToggle 15, NoticeCount 14:0
constexpr std::size_t kDataDetails = 10;
// Trap data (IBA 14.2.5.1, offsets into DataDetails).
constexpr std::size_t kTrap128Lid = 0;
constexpr std::size_t kTrap128ExtLid = 2;  // vendor convention, see discovery/README.md
constexpr std::size_t kTrap144Lid = 2;
constexpr std::size_t kTrap144CapMask = 6;
constexpr std::uint8_t kTypeUrgent = 1;
constexpr std::uint8_t kTypeInfo = 4;
constexpr std::uint32_t kProducerCa = 1;
constexpr std::uint32_t kProducerSwitch = 2;
constexpr std::uint16_t kMaxUnicastLid16 = 0xBFFF;
}  // namespace nt
}  // namespace

Notice Notice::decode(ConstSmpData d) {
  const std::uint8_t* p = d.data();
  Notice n;
  n.is_generic = test_bit(p[nt::kGenericType], 7);
  n.type = get_bits(p[nt::kGenericType], 0, 7);
  n.producer_type = load_be24(p + nt::kProducerType);
  n.trap_number = load_be16(p + nt::kTrapNumber);
  n.issuer_lid = load_be16(p + nt::kIssuerLid);
  const std::uint16_t tc = load_be16(p + nt::kToggleCount);
  n.notice_toggle = (tc & 0x8000) != 0;
  n.notice_count = tc & 0x7FFF;
  copy_in(p + nt::kDataDetails, n.data_details);
  return n;
}

void Notice::encode(SmpData d) const {
  std::uint8_t* p = d.data();
  std::memset(p, 0, kSmpDataSize);
  p[nt::kGenericType] = static_cast<std::uint8_t>(bit(is_generic, 7) | (type & 0x7F));
  store_be24(p + nt::kProducerType, producer_type);
  store_be16(p + nt::kTrapNumber, trap_number);
  store_be16(p + nt::kIssuerLid, issuer_lid);
  store_be16(p + nt::kToggleCount,
             static_cast<std::uint16_t>((notice_toggle ? 0x8000 : 0) | (notice_count & 0x7FFF)));
  copy_out(data_details, p + nt::kDataDetails);
}

Notice Notice::trap128(std::uint32_t switch_lid, bool extended) {
  Notice n;
  n.is_generic = true;
  n.type = nt::kTypeUrgent;
  n.producer_type = nt::kProducerSwitch;
  n.trap_number = 128;
  // A 16-bit LID field cannot hold an extended LID: it reads 0xFFFF then,
  // the same convention as PortInfo:LID (discovery/README.md).
  const auto lid16 = static_cast<std::uint16_t>(
      extended && switch_lid > nt::kMaxUnicastLid16 ? kPermissiveLid : switch_lid);
  n.issuer_lid = lid16;
  store_be16(n.data_details.data() + nt::kTrap128Lid, lid16);
  if (extended) store_be32(n.data_details.data() + nt::kTrap128ExtLid, switch_lid);
  return n;
}

std::uint32_t Notice::trap128_lid(bool extended) const {
  if (extended) return load_be32(data_details.data() + nt::kTrap128ExtLid);
  return load_be16(data_details.data() + nt::kTrap128Lid);
}

Notice Notice::trap144(std::uint16_t lid, std::uint32_t capability_mask) {
  Notice n;
  n.is_generic = true;
  n.type = nt::kTypeInfo;
  // The issuer is a port of an end node in the common case (an HCA whose SMA
  // changed its CapabilityMask); a switch's SMA overrides producer_type.
  n.producer_type = nt::kProducerCa;
  n.trap_number = 144;
  n.issuer_lid = lid;
  store_be16(n.data_details.data() + nt::kTrap144Lid, lid);
  store_be32(n.data_details.data() + nt::kTrap144CapMask, capability_mask);
  return n;
}

// SLtoVLMappingTable (IBA 14.2.5.8): SL n in the nibble at byte n/2, the
// high nibble for even n.
SlToVlMappingTable SlToVlMappingTable::decode(ConstSmpData d) {
  SlToVlMappingTable t;
  for (std::size_t sl = 0; sl < t.vl.size(); ++sl) {
    t.vl[sl] = get_bits(d[sl / 2], sl % 2 == 0 ? 4 : 0, 4);
  }
  return t;
}

void SlToVlMappingTable::encode(SmpData d) const {
  std::fill(d.begin(), d.end(), std::uint8_t{0});
  for (std::size_t sl = 0; sl < vl.size(); ++sl) {
    put_bits(d[sl / 2], sl % 2 == 0 ? 4 : 0, 4, vl[sl]);
  }
}

// MulticastForwardingTable (IBA 14.2.5.12): 32 big-endian port masks.
MulticastForwardingTable MulticastForwardingTable::decode(ConstSmpData d) {
  MulticastForwardingTable t;
  for (std::size_t i = 0; i < t.masks.size(); ++i) t.masks[i] = load_be16(d.data() + 2 * i);
  return t;
}

void MulticastForwardingTable::encode(SmpData d) const {
  for (std::size_t i = 0; i < masks.size(); ++i) store_be16(d.data() + 2 * i, masks[i]);
}

// P_KeyTable (IBA 14.2.5.7): 32 big-endian 16-bit entries.
PKeyTable PKeyTable::decode(ConstSmpData d) {
  PKeyTable t;
  for (std::size_t i = 0; i < t.keys.size(); ++i) t.keys[i] = load_be16(d.data() + 2 * i);
  return t;
}

void PKeyTable::encode(SmpData d) const {
  for (std::size_t i = 0; i < keys.size(); ++i) store_be16(d.data() + 2 * i, keys[i]);
}

// VLArbitrationTable (IBA 14.2.5.9): 32 two-byte entries; byte 0 is
// reserved 7:4 and VL 3:0, byte 1 the weight.
VlArbitrationTable VlArbitrationTable::decode(ConstSmpData d) {
  VlArbitrationTable t;
  for (std::size_t i = 0; i < t.entries.size(); ++i) {
    t.entries[i].vl = get_bits(d[2 * i], 0, 4);
    t.entries[i].weight = d[2 * i + 1];
  }
  return t;
}

void VlArbitrationTable::encode(SmpData d) const {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    d[2 * i] = static_cast<std::uint8_t>(entries[i].vl & 0x0F);
    d[2 * i + 1] = entries[i].weight;
  }
}

// ------------------------------------------------ vendor extended-LID attributes
// Layouts are ours (discovery/README.md, "Extended LIDs"); all reserved bytes
// are zero on encode and ignored on decode.
namespace {
namespace epi {
constexpr std::size_t kLid = 0;          // 32 bits, top 8 reserved
constexpr std::size_t kMasterSmLid = 4;  // 32 bits, top 8 reserved
constexpr std::size_t kLmc = 8;          // reserved 7:3, LMC 2:0
constexpr std::size_t kLidBits = 9;
constexpr std::uint32_t kLidMask = 0x00FFFFFF;
}  // namespace epi
namespace esi {
constexpr std::size_t kLinearFdbCap = 0;
constexpr std::size_t kLinearFdbTop = 4;
}  // namespace esi
}  // namespace

ExtPortInfo ExtPortInfo::decode(ConstSmpData d) {
  const std::uint8_t* p = d.data();
  ExtPortInfo e;
  e.lid = load_be32(p + epi::kLid) & epi::kLidMask;
  e.master_sm_lid = load_be32(p + epi::kMasterSmLid) & epi::kLidMask;
  e.lmc = get_bits(p[epi::kLmc], 0, 3);
  e.lid_bits = p[epi::kLidBits];
  return e;
}

void ExtPortInfo::encode(SmpData d) const {
  std::uint8_t* p = d.data();
  std::memset(p, 0, kSmpDataSize);
  store_be32(p + epi::kLid, lid & epi::kLidMask);
  store_be32(p + epi::kMasterSmLid, master_sm_lid & epi::kLidMask);
  put_bits(p[epi::kLmc], 0, 3, lmc);
  p[epi::kLidBits] = lid_bits;
}

ExtSwitchInfo ExtSwitchInfo::decode(ConstSmpData d) {
  ExtSwitchInfo e;
  e.linear_fdb_cap = load_be32(d.data() + esi::kLinearFdbCap);
  e.linear_fdb_top = load_be32(d.data() + esi::kLinearFdbTop);
  return e;
}

void ExtSwitchInfo::encode(SmpData d) const {
  std::uint8_t* p = d.data();
  std::memset(p, 0, kSmpDataSize);
  store_be32(p + esi::kLinearFdbCap, linear_fdb_cap);
  store_be32(p + esi::kLinearFdbTop, linear_fdb_top);
}

}  // namespace subnetd::discovery::mad

// SA wire codec. Header offsets are byte offsets into the 256-byte MAD;
// record components are bit offsets into the record, as IBA draws them
// (bit 0 = the most significant bit of byte 0).

#include "discovery/mad/sa.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "discovery/mad/bytes.hpp"

namespace subnetd::discovery::mad::sa {
namespace {

// Common MAD header (IBA 13.4.3), RMPP header (13.6.2.1), SA header
// (15.2.1.1).
namespace hdr {
constexpr std::size_t kBaseVersion = 0;
constexpr std::size_t kMgmtClass = 1;
constexpr std::size_t kClassVersion = 2;
constexpr std::size_t kMethod = 3;
constexpr std::size_t kStatus = 4;
constexpr std::size_t kClassSpecific = 6;
constexpr std::size_t kTid = 8;
constexpr std::size_t kAttrId = 16;
constexpr std::size_t kAttrMod = 20;
constexpr std::size_t kRmppVersion = 24;
constexpr std::size_t kRmppType = 25;
constexpr std::size_t kRmppTimeFlags = 26;  // RRespTime (7:3), RMPPFlags (2:0)
constexpr std::size_t kRmppStatus = 27;
constexpr std::size_t kRmppData1 = 28;
constexpr std::size_t kRmppData2 = 32;
constexpr std::size_t kSmKey = 36;
constexpr std::size_t kAttrOffset = 44;
constexpr std::size_t kCompMask = 48;
constexpr std::size_t kData = 56;
}  // namespace hdr

// The SA header travels in every segment; RMPP's payload length counts it.
constexpr std::uint32_t kSaHeaderBytes = 20;

constexpr Component kNodeRecord[] = {
    {"LID", 0, 16},
    {"Reserved", 16, 16},
    {"BaseVersion", 32, 8},
    {"ClassVersion", 40, 8},
    {"NodeType", 48, 8},
    {"NumPorts", 56, 8},
    {"SystemImageGUID", 64, 64},
    {"NodeGUID", 128, 64},
    {"PortGUID", 192, 64},
    {"PartitionCap", 256, 16},
    {"DeviceID", 272, 16},
    {"Revision", 288, 32},
    {"LocalPortNum", 320, 8},
    {"VendorID", 328, 24},
    {"NodeDescription", 352, 512},
};

// PortInfoRecord: EndportLID, PortNum, Options, then PortInfo (IBA
// 14.2.5.6) from bit 32, its reserved fields counted as components.
#define SUBNETD_PI(name, offset, bits) \
  { name, 32 + (offset), bits }
constexpr Component kPortInfoRecord[] = {
    {"EndportLID", 0, 16},
    {"PortNum", 16, 8},
    {"Options", 24, 8},
    SUBNETD_PI("M_Key", 0, 64),
    SUBNETD_PI("GidPrefix", 64, 64),
    SUBNETD_PI("LID", 128, 16),
    SUBNETD_PI("MasterSMLID", 144, 16),
    SUBNETD_PI("CapabilityMask", 160, 32),
    SUBNETD_PI("DiagCode", 192, 16),
    SUBNETD_PI("M_KeyLeasePeriod", 208, 16),
    SUBNETD_PI("LocalPortNum", 224, 8),
    SUBNETD_PI("LinkWidthEnabled", 232, 8),
    SUBNETD_PI("LinkWidthSupported", 240, 8),
    SUBNETD_PI("LinkWidthActive", 248, 8),
    SUBNETD_PI("LinkSpeedSupported", 256, 4),
    SUBNETD_PI("PortState", 260, 4),
    SUBNETD_PI("PortPhysicalState", 264, 4),
    SUBNETD_PI("LinkDownDefaultState", 268, 4),
    SUBNETD_PI("M_KeyProtectBits", 272, 2),
    SUBNETD_PI("Reserved", 274, 3),
    SUBNETD_PI("LMC", 277, 3),
    SUBNETD_PI("LinkSpeedActive", 280, 4),
    SUBNETD_PI("LinkSpeedEnabled", 284, 4),
    SUBNETD_PI("NeighborMTU", 288, 4),
    SUBNETD_PI("MasterSMSL", 292, 4),
    SUBNETD_PI("VLCap", 296, 4),
    SUBNETD_PI("InitType", 300, 4),
    SUBNETD_PI("VLHighLimit", 304, 8),
    SUBNETD_PI("VLArbitrationHighCap", 312, 8),
    SUBNETD_PI("VLArbitrationLowCap", 320, 8),
    SUBNETD_PI("InitTypeReply", 328, 4),
    SUBNETD_PI("MTUCap", 332, 4),
    SUBNETD_PI("VLStallCount", 336, 3),
    SUBNETD_PI("HOQLife", 339, 5),
    SUBNETD_PI("OperationalVLs", 344, 4),
    SUBNETD_PI("PartitionEnforcementInbound", 348, 1),
    SUBNETD_PI("PartitionEnforcementOutbound", 349, 1),
    SUBNETD_PI("FilterRawInbound", 350, 1),
    SUBNETD_PI("FilterRawOutbound", 351, 1),
    SUBNETD_PI("M_KeyViolations", 352, 16),
    SUBNETD_PI("P_KeyViolations", 368, 16),
    SUBNETD_PI("Q_KeyViolations", 384, 16),
    SUBNETD_PI("GUIDCap", 400, 8),
    SUBNETD_PI("ClientReregister", 408, 1),
    SUBNETD_PI("MulticastPKeyTrapSuppressionEnabled", 409, 2),
    SUBNETD_PI("SubnetTimeOut", 411, 5),
    SUBNETD_PI("Reserved2", 416, 3),
    SUBNETD_PI("RespTimeValue", 419, 5),
    SUBNETD_PI("LocalPhyErrors", 424, 4),
    SUBNETD_PI("OverrunErrors", 428, 4),
    SUBNETD_PI("MaxCreditHint", 432, 16),
    SUBNETD_PI("Reserved3", 448, 8),
    SUBNETD_PI("LinkRoundTripLatency", 456, 24),
    SUBNETD_PI("CapabilityMask2", 480, 16),
    SUBNETD_PI("LinkSpeedExtActive", 496, 4),
    SUBNETD_PI("LinkSpeedExtSupported", 500, 4),
    SUBNETD_PI("Reserved4", 504, 3),
    SUBNETD_PI("LinkSpeedExtEnabled", 507, 5),
};
#undef SUBNETD_PI

constexpr Component kLinkRecord[] = {
    {"FromLID", 0, 16}, {"FromPort", 16, 8},  {"ToPort", 24, 8},
    {"ToLID", 32, 16},  {"Reserved", 48, 16},
};

// PathRecord (IBA 15.2.5.16); the ServiceID is two components, as the
// Linux SA clients number them.
constexpr Component kPathRecord[] = {
    {"ServiceID_MSB", 0, 32},
    {"ServiceID_LSB", 32, 32},
    {"DGID", 64, 128},
    {"SGID", 192, 128},
    {"DLID", 320, 16},
    {"SLID", 336, 16},
    {"RawTraffic", 352, 1},
    {"Reserved", 353, 3},
    {"FlowLabel", 356, 20},
    {"HopLimit", 376, 8},
    {"TClass", 384, 8},
    {"Reversible", 392, 1},
    {"NumbPath", 393, 7},
    {"P_Key", 400, 16},
    {"QosClass", 416, 12},
    {"SL", 428, 4},
    {"MTUSelector", 432, 2},
    {"MTU", 434, 6},
    {"RateSelector", 440, 2},
    {"Rate", 442, 6},
    {"PacketLifeTimeSelector", 448, 2},
    {"PacketLifeTime", 450, 6},
    {"Preference", 456, 8},
    {"Reserved2", 464, 48},
};

// LinearForwardingTableRecord (IBA 15.2.5.6): a switch's LID, the block
// number, 4 reserved bytes and the block's 64 ports.
constexpr Component kLftRecord[] = {
    {"LID", 0, 16},
    {"BlockNum", 16, 16},
    {"Reserved", 32, 32},
    {"LinearForwardingTable", 64, 512},
};

// P_KeyTableRecord (IBA 15.2.5.11): the LID of the port's node (a
// switch's port-0 LID, a CA port's own), the block, the port, 3 reserved
// bytes and the block's 32 P_Keys.
constexpr Component kPKeyTableRecord[] = {
    {"LID", 0, 16},       {"BlockNum", 16, 16},    {"PortNum", 32, 8},
    {"Reserved", 40, 24}, {"P_KeyTable", 64, 512},
};

// MCMemberRecord (IBA 15.2.5.17).
constexpr Component kMcMemberRecord[] = {
    {"MGID", 0, 128},
    {"PortGID", 128, 128},
    {"Q_Key", 256, 32},
    {"MLID", 288, 16},
    {"MTUSelector", 304, 2},
    {"MTU", 306, 6},
    {"TClass", 312, 8},
    {"P_Key", 320, 16},
    {"RateSelector", 336, 2},
    {"Rate", 338, 6},
    {"PacketLifeTimeSelector", 344, 2},
    {"PacketLifeTime", 346, 6},
    {"SL", 352, 4},
    {"FlowLabel", 356, 20},
    {"HopLimit", 376, 8},
    {"Scope", 384, 4},
    {"JoinState", 388, 4},
    {"ProxyJoin", 392, 1},
    {"Reserved", 393, 23},
};

// SwitchInfoRecord (IBA 15.2.5.7): the switch's LID, 2 reserved bytes and
// SwitchInfo (14.2.5.4) to MulticastFDBTop.
constexpr Component kSwitchInfoRecord[] = {
    {"LID", 0, 16},
    {"Reserved", 16, 16},
    {"LinearFDBCap", 32, 16},
    {"RandomFDBCap", 48, 16},
    {"MulticastFDBCap", 64, 16},
    {"LinearFDBTop", 80, 16},
    {"DefaultPort", 96, 8},
    {"DefaultMulticastPrimaryPort", 104, 8},
    {"DefaultMulticastNotPrimaryPort", 112, 8},
    {"LifeTimeValue", 120, 5},
    {"PortStateChange", 125, 1},
    {"OptimizedSLtoVLMappingProgramming", 126, 2},
    {"LIDsPerPort", 128, 16},
    {"PartitionEnforcementCap", 144, 16},
    {"InboundEnforcementCap", 160, 1},
    {"OutboundEnforcementCap", 161, 1},
    {"FilterRawInboundCap", 162, 1},
    {"FilterRawOutboundCap", 163, 1},
    {"EnhancedPort0", 164, 1},
    {"Reserved2", 165, 11},
    {"MulticastFDBTop", 176, 16},
};

// MulticastForwardingTableRecord (IBA 15.2.5.8): LID, position (16 ports
// each), block of 32 MLIDs, and the block's 32 port masks.
constexpr Component kMftRecord[] = {
    {"LID", 0, 16},      {"Position", 16, 4},   {"Reserved", 20, 3},
    {"BlockNum", 23, 9}, {"Reserved2", 32, 32}, {"MulticastForwardingTable", 64, 512},
};

// SMInfoRecord (IBA 15.2.5.13): the SM port's LID and its SMInfo.
constexpr Component kSmInfoRecord[] = {
    {"LID", 0, 16},        {"Reserved", 16, 16}, {"GUID", 32, 64},    {"SM_Key", 96, 64},
    {"ActCount", 160, 32}, {"Priority", 192, 4}, {"SMState", 196, 4},
};

// GuidInfoRecord (IBA 15.2.5.18): the endport's LID, the block of 8 GUIDs.
constexpr Component kGuidInfoRecord[] = {
    {"LID", 0, 16},        {"BlockNum", 16, 8},   {"Reserved", 24, 8},
    {"Reserved2", 32, 32}, {"GUIDInfo", 64, 512},
};

// ServiceRecord (IBA 15.2.5.14): every ServiceData element is a component
// of its own, as the ComponentMask numbers them.
#define SUBNETD_SD(width, base, i) \
  { "ServiceData" #width "." #i, (base) + (width) * ((i)-1), width }
constexpr Component kServiceRecord[] = {
    {"ServiceID", 0, 64},      {"ServiceGID", 64, 128},   {"ServiceP_Key", 192, 16},
    {"Reserved", 208, 16},     {"ServiceLease", 224, 32}, {"ServiceKey", 256, 128},
    {"ServiceName", 384, 512}, SUBNETD_SD(8, 896, 1),     SUBNETD_SD(8, 896, 2),
    SUBNETD_SD(8, 896, 3),     SUBNETD_SD(8, 896, 4),     SUBNETD_SD(8, 896, 5),
    SUBNETD_SD(8, 896, 6),     SUBNETD_SD(8, 896, 7),     SUBNETD_SD(8, 896, 8),
    SUBNETD_SD(8, 896, 9),     SUBNETD_SD(8, 896, 10),    SUBNETD_SD(8, 896, 11),
    SUBNETD_SD(8, 896, 12),    SUBNETD_SD(8, 896, 13),    SUBNETD_SD(8, 896, 14),
    SUBNETD_SD(8, 896, 15),    SUBNETD_SD(8, 896, 16),    SUBNETD_SD(16, 1024, 1),
    SUBNETD_SD(16, 1024, 2),   SUBNETD_SD(16, 1024, 3),   SUBNETD_SD(16, 1024, 4),
    SUBNETD_SD(16, 1024, 5),   SUBNETD_SD(16, 1024, 6),   SUBNETD_SD(16, 1024, 7),
    SUBNETD_SD(16, 1024, 8),   SUBNETD_SD(32, 1152, 1),   SUBNETD_SD(32, 1152, 2),
    SUBNETD_SD(32, 1152, 3),   SUBNETD_SD(32, 1152, 4),   SUBNETD_SD(64, 1280, 1),
    SUBNETD_SD(64, 1280, 2),
};
#undef SUBNETD_SD

// SLtoVLMappingTableRecord (IBA 15.2.5.4): the port's LID, input and
// output port, 4 reserved bytes, 16 SLs x 4 bits.
constexpr Component kSl2VlRecord[] = {
    {"LID", 0, 16},       {"InputPortNum", 16, 8},        {"OutputPortNum", 24, 8},
    {"Reserved", 32, 32}, {"SLtoVLMappingTable", 64, 64},
};

// VLArbitrationTableRecord (IBA 15.2.5.9): the LID, output port, block
// (1 low 0-31, 2 low 32-63, 3 high 0-31, 4 high 32-63), 32 entries.
constexpr Component kVlArbRecord[] = {
    {"LID", 0, 16},       {"OutputPortNum", 16, 8},        {"BlockNum", 24, 8},
    {"Reserved", 32, 32}, {"VLArbitrationTable", 64, 512},
};

// InformInfo (IBA 13.4.8.3): a subscription to notices, 36 bytes.
#define SUBNETD_II(prefix, base)                                                          \
  {prefix "GID", (base), 128}, {prefix "LIDRangeBegin", (base) + 128, 16},                \
      {prefix "LIDRangeEnd", (base) + 144, 16}, {prefix "Reserved", (base) + 160, 16},    \
      {prefix "IsGeneric", (base) + 176, 8}, {prefix "Subscribe", (base) + 184, 8},       \
      {prefix "Type", (base) + 192, 16}, {prefix "TrapNumber", (base) + 208, 16},         \
      {prefix "QPN", (base) + 224, 24}, {prefix "Reserved2", (base) + 248, 3},            \
      {prefix "RespTimeValue", (base) + 251, 5}, {prefix "Reserved3", (base) + 256, 8}, { \
    prefix "ProducerType", (base) + 264, 24                                               \
  }
constexpr Component kInformInfo[] = {SUBNETD_II("", 0)};

// InformInfoRecord (IBA 15.2.5.12): the subscriber's GID, an enumerator
// telling its subscriptions apart, 6 reserved bytes, the InformInfo.
constexpr Component kInformInfoRecord[] = {
    {"SubscriberGID", 0, 128},
    {"Enum", 128, 16},
    {"Reserved", 144, 48},
    SUBNETD_II("InformInfo.", 192),
};
#undef SUBNETD_II

// MultiPathRecord (IBA 15.2.5.20): the 24-byte head; the SGIDs then the
// DGIDs follow it (16 bytes each), outside the component mask.
constexpr Component kMultiPathRecord[] = {
    {"RawTraffic", 0, 1},
    {"Reserved", 1, 3},
    {"FlowLabel", 4, 20},
    {"HopLimit", 24, 8},
    {"TClass", 32, 8},
    {"Reversible", 40, 1},
    {"NumbPath", 41, 7},
    {"P_Key", 48, 16},
    {"QoSClass", 64, 12},
    {"SL", 76, 4},
    {"MTUSelector", 80, 2},
    {"MTU", 82, 6},
    {"RateSelector", 88, 2},
    {"Rate", 90, 6},
    {"PacketLifeTimeSelector", 96, 2},
    {"PacketLifeTime", 98, 6},
    {"ServiceID8MSB", 104, 8},
    {"IndependenceSelector", 112, 2},
    {"Reserved2", 114, 6},
    {"SGIDCount", 120, 8},
    {"DGIDCount", 128, 8},
    {"ServiceID56LSB", 136, 56},
};

constexpr RecordLayout kLayouts[] = {
    {Attr::kNodeRecord, "NodeRecord", 108, kNodeRecord},
    {Attr::kPortInfoRecord, "PortInfoRecord", 68, kPortInfoRecord},
    {Attr::kLinkRecord, "LinkRecord", 8, kLinkRecord},
    {Attr::kPathRecord, "PathRecord", 64, kPathRecord},
    {Attr::kLftRecord, "LinearForwardingTableRecord", 72, kLftRecord},
    {Attr::kPKeyTableRecord, "P_KeyTableRecord", 72, kPKeyTableRecord},
    {Attr::kMcMemberRecord, "MCMemberRecord", 52, kMcMemberRecord},
    {Attr::kSwitchInfoRecord, "SwitchInfoRecord", 24, kSwitchInfoRecord},
    {Attr::kMftRecord, "MulticastForwardingTableRecord", 72, kMftRecord},
    {Attr::kSmInfoRecord, "SMInfoRecord", 25, kSmInfoRecord},
    {Attr::kGuidInfoRecord, "GuidInfoRecord", 72, kGuidInfoRecord},
    {Attr::kServiceRecord, "ServiceRecord", 176, kServiceRecord},
    {Attr::kSlToVlTableRecord, "SLtoVLMappingTableRecord", 16, kSl2VlRecord},
    {Attr::kVlArbTableRecord, "VLArbitrationTableRecord", 72, kVlArbRecord},
    {Attr::kInformInfo, "InformInfo", 36, kInformInfo},
    {Attr::kInformInfoRecord, "InformInfoRecord", 60, kInformInfoRecord},
    {Attr::kMultiPathRecord, "MultiPathRecord", 24, kMultiPathRecord},
};

bool bit_at(std::span<const std::uint8_t> r, std::size_t bit) {
  return (r[bit / 8] >> (7 - bit % 8)) & 1U;
}

}  // namespace

const char* method_name(std::uint8_t method) {
  switch (static_cast<Method>(method)) {
    case Method::kGet:
      return "Get";
    case Method::kSet:
      return "Set";
    case Method::kReport:
      return "Report";
    case Method::kGetTable:
      return "GetTable";
    case Method::kGetTraceTable:
      return "GetTraceTable";
    case Method::kGetMulti:
      return "GetMulti";
    case Method::kDelete:
      return "Delete";
    case Method::kGetResp:
      return "GetResp";
    case Method::kReportResp:
      return "ReportResp";
    case Method::kGetTableResp:
      return "GetTableResp";
    case Method::kGetMultiResp:
      return "GetMultiResp";
    case Method::kDeleteResp:
      return "DeleteResp";
  }
  return "unknown method";
}

const char* attr_name(std::uint16_t attr) {
  switch (static_cast<Attr>(attr)) {
    case Attr::kClassPortInfo:
      return "ClassPortInfo";
    case Attr::kNotice:
      return "Notice";
    case Attr::kInformInfo:
      return "InformInfo";
    case Attr::kNodeRecord:
      return "NodeRecord";
    case Attr::kPortInfoRecord:
      return "PortInfoRecord";
    case Attr::kSlToVlTableRecord:
      return "SLtoVLMappingTableRecord";
    case Attr::kSwitchInfoRecord:
      return "SwitchInfoRecord";
    case Attr::kLftRecord:
      return "LinearForwardingTableRecord";
    case Attr::kMftRecord:
      return "MulticastForwardingTableRecord";
    case Attr::kSmInfoRecord:
      return "SMInfoRecord";
    case Attr::kLinkRecord:
      return "LinkRecord";
    case Attr::kGuidInfoRecord:
      return "GuidInfoRecord";
    case Attr::kServiceRecord:
      return "ServiceRecord";
    case Attr::kPKeyTableRecord:
      return "P_KeyTableRecord";
    case Attr::kPathRecord:
      return "PathRecord";
    case Attr::kVlArbTableRecord:
      return "VLArbitrationTableRecord";
    case Attr::kMcMemberRecord:
      return "MCMemberRecord";
    case Attr::kMultiPathRecord:
      return "MultiPathRecord";
    case Attr::kInformInfoRecord:
      return "InformInfoRecord";
  }
  return "unknown attribute";
}

Result<SaMad> decode_sa(std::span<const std::uint8_t> b) {
  if (b.size() < kMadSize) {
    return Error{Errc::kMalformedMad,
                 fmt::format("SA MAD: {} bytes, a MAD has {}", b.size(), kMadSize)};
  }
  if (b[hdr::kBaseVersion] != 1) {
    return Error{Errc::kMalformedMad,
                 fmt::format("SA MAD: base version {}, expected 1", b[hdr::kBaseVersion])};
  }
  if (b[hdr::kMgmtClass] != kMgmtClass) {
    return Error{
        Errc::kMalformedMad,
        fmt::format("SA MAD: management class 0x{:02x}, expected 0x03", b[hdr::kMgmtClass])};
  }
  SaMad m;
  m.base_version = b[hdr::kBaseVersion];
  m.class_version = b[hdr::kClassVersion];
  m.method = b[hdr::kMethod];
  m.status = load_be16(&b[hdr::kStatus]);
  m.class_specific = load_be16(&b[hdr::kClassSpecific]);
  m.tid = load_be64(&b[hdr::kTid]);
  m.attr_id = load_be16(&b[hdr::kAttrId]);
  m.attr_mod = load_be32(&b[hdr::kAttrMod]);
  m.rmpp.version = b[hdr::kRmppVersion];
  m.rmpp.type = b[hdr::kRmppType];
  m.rmpp.resp_time = get_bits(b[hdr::kRmppTimeFlags], 3, 5);
  m.rmpp.flags = get_bits(b[hdr::kRmppTimeFlags], 0, 3);
  m.rmpp.status = b[hdr::kRmppStatus];
  m.rmpp.data1 = load_be32(&b[hdr::kRmppData1]);
  m.rmpp.data2 = load_be32(&b[hdr::kRmppData2]);
  m.sm_key = load_be64(&b[hdr::kSmKey]);
  m.attr_offset = load_be16(&b[hdr::kAttrOffset]);
  m.comp_mask = load_be64(&b[hdr::kCompMask]);
  std::memcpy(m.data.data(), &b[hdr::kData], kDataSize);
  return m;
}

std::array<std::uint8_t, kMadSize> encode_sa(const SaMad& m) {
  std::array<std::uint8_t, kMadSize> b{};
  b[hdr::kBaseVersion] = m.base_version;
  b[hdr::kMgmtClass] = kMgmtClass;
  b[hdr::kClassVersion] = m.class_version;
  b[hdr::kMethod] = m.method;
  store_be16(&b[hdr::kStatus], m.status);
  store_be16(&b[hdr::kClassSpecific], m.class_specific);
  store_be64(&b[hdr::kTid], m.tid);
  store_be16(&b[hdr::kAttrId], m.attr_id);
  store_be32(&b[hdr::kAttrMod], m.attr_mod);
  b[hdr::kRmppVersion] = m.rmpp.version;
  b[hdr::kRmppType] = m.rmpp.type;
  put_bits(b[hdr::kRmppTimeFlags], 3, 5, m.rmpp.resp_time);
  put_bits(b[hdr::kRmppTimeFlags], 0, 3, m.rmpp.flags);
  b[hdr::kRmppStatus] = m.rmpp.status;
  store_be32(&b[hdr::kRmppData1], m.rmpp.data1);
  store_be32(&b[hdr::kRmppData2], m.rmpp.data2);
  store_be64(&b[hdr::kSmKey], m.sm_key);
  store_be16(&b[hdr::kAttrOffset], m.attr_offset);
  store_be64(&b[hdr::kCompMask], m.comp_mask);
  std::memcpy(&b[hdr::kData], m.data.data(), kDataSize);
  return b;
}

const RecordLayout* layout_of(std::uint16_t attr) {
  for (const RecordLayout& l : kLayouts) {
    if (static_cast<std::uint16_t>(l.attr) == attr) return &l;
  }
  return nullptr;
}

std::uint64_t get_field(std::span<const std::uint8_t> r, const Component& c) {
  assert(c.bits <= 64 && static_cast<std::size_t>((c.offset + c.bits + 7) / 8) <= r.size());
  std::uint64_t v = 0;
  if (c.offset % 8 == 0 && c.bits % 8 == 0) {  // whole bytes: most fields
    for (std::size_t i = 0; i < c.bits / 8U; ++i) v = (v << 8) | r[c.offset / 8U + i];
    return v;
  }
  for (std::size_t i = 0; i < c.bits; ++i) v = (v << 1) | (bit_at(r, c.offset + i) ? 1U : 0U);
  return v;
}

void set_field(std::span<std::uint8_t> r, const Component& c, std::uint64_t value) {
  assert(c.bits <= 64 && static_cast<std::size_t>((c.offset + c.bits + 7) / 8) <= r.size());
  if (c.offset % 8 == 0 && c.bits % 8 == 0) {
    for (std::size_t i = c.bits / 8U; i-- > 0; value >>= 8) {
      r[c.offset / 8U + i] = static_cast<std::uint8_t>(value & 0xFFU);
    }
    return;
  }
  for (std::size_t i = 0; i < c.bits; ++i) {
    const std::size_t bit = c.offset + i;
    const auto mask = static_cast<std::uint8_t>(0x80U >> (bit % 8));
    const bool on = (value >> (c.bits - 1 - i)) & 1U;
    r[bit / 8] = static_cast<std::uint8_t>(on ? (r[bit / 8] | mask) : (r[bit / 8] & ~mask));
  }
}

const Component& component(const RecordLayout& layout, const char* name) {
  for (const Component& c : layout.components) {
    if (std::strcmp(c.name, name) == 0) return c;
  }
  assert(false && "no such component");
  return layout.components.front();
}

bool matches(const RecordLayout& layout, std::uint64_t comp_mask,
             std::span<const std::uint8_t> query, std::span<const std::uint8_t> record) {
  if (query.size() < layout.size || record.size() < layout.size) return false;
  for (std::size_t i = 0; i < layout.components.size() && i < 64; ++i) {
    if (((comp_mask >> i) & 1U) == 0) continue;
    const Component& c = layout.components[i];
    if (c.offset % 8 == 0 && c.bits % 8 == 0) {
      if (std::memcmp(&query[c.offset / 8], &record[c.offset / 8], c.bits / 8) != 0) return false;
      continue;
    }
    for (std::size_t b = c.offset; b < std::size_t{c.offset} + c.bits; ++b) {
      if (bit_at(query, b) != bit_at(record, b)) return false;
    }
  }
  return true;
}

std::vector<std::array<std::uint8_t, kMadSize>> segment_table(
    const SaMad& response, std::span<const std::uint8_t> records) {
  const std::size_t segments =
      std::max<std::size_t>(1, (records.size() + kDataSize - 1) / kDataSize);
  std::vector<std::array<std::uint8_t, kMadSize>> out;
  out.reserve(segments);
  for (std::size_t s = 0; s < segments; ++s) {
    SaMad seg = response;
    seg.data.fill(0);
    const std::size_t begin = s * kDataSize;
    const std::size_t n = begin < records.size() ? std::min(kDataSize, records.size() - begin) : 0;
    if (n != 0) std::memcpy(seg.data.data(), &records[begin], n);
    seg.rmpp.version = rmpp::kVersion;
    seg.rmpp.type = rmpp::kTypeData;
    seg.rmpp.resp_time = 0x1F;  // no time given
    seg.rmpp.flags = rmpp::kFlagActive;
    seg.rmpp.status = 0;
    seg.rmpp.data1 = static_cast<std::uint32_t>(s + 1);
    seg.rmpp.data2 = 0;
    if (s == 0) {
      seg.rmpp.flags |= rmpp::kFlagFirst;
      seg.rmpp.data2 = kSaHeaderBytes + static_cast<std::uint32_t>(records.size());
    }
    if (s + 1 == segments) {
      seg.rmpp.flags |= rmpp::kFlagLast;
      // The last segment's payload: the SA header and the bytes it uses
      // (a single segment is also the first: the same value).
      seg.rmpp.data2 = kSaHeaderBytes + static_cast<std::uint32_t>(n);
    }
    out.push_back(encode_sa(seg));
  }
  return out;
}

Result<std::vector<std::uint8_t>> reassemble(
    std::span<const std::array<std::uint8_t, kMadSize>> segments) {
  std::vector<std::uint8_t> out;
  if (segments.empty()) return Error{Errc::kMalformedMad, "RMPP: no segments"};
  std::uint32_t total = 0;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    SaMad m;
    SUBNETD_TRY_ASSIGN(m, decode_sa(segments[s]));
    if (m.rmpp.version != rmpp::kVersion || m.rmpp.type != rmpp::kTypeData ||
        (m.rmpp.flags & rmpp::kFlagActive) == 0) {
      return Error{Errc::kMalformedMad,
                   fmt::format("RMPP segment {}: not an active DATA packet", s + 1)};
    }
    if (m.rmpp.data1 != s + 1) {
      return Error{Errc::kMalformedMad,
                   fmt::format("RMPP segment {}: numbered {}", s + 1, m.rmpp.data1)};
    }
    const bool first = (m.rmpp.flags & rmpp::kFlagFirst) != 0;
    const bool last = (m.rmpp.flags & rmpp::kFlagLast) != 0;
    if (first != (s == 0) || last != (s + 1 == segments.size())) {
      return Error{Errc::kMalformedMad, fmt::format("RMPP segment {} of {}: first/last flags {}/{}",
                                                    s + 1, segments.size(), first, last)};
    }
    if (first) {
      if (m.rmpp.data2 < kSaHeaderBytes) {
        return Error{
            Errc::kMalformedMad,
            fmt::format("RMPP: payload length {} is shorter than the SA header", m.rmpp.data2)};
      }
      total = m.rmpp.data2 - kSaHeaderBytes;
    }
    out.insert(out.end(), m.data.begin(), m.data.end());
  }
  if (total > out.size()) {
    return Error{Errc::kMalformedMad,
                 fmt::format("RMPP: payload length says {} record bytes, {} segments carry {}",
                             total, segments.size(), out.size())};
  }
  out.resize(total);
  return out;
}

}  // namespace subnetd::discovery::mad::sa

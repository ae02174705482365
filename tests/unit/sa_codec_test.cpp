// SA codec tests: header round trips and a cross-check against libibmad's
// field table (the SA and RMPP headers, PathRecord and NodeRecord fields),
// component-mask matching, RMPP segmentation and reassembly, malformed
// input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "discovery/mad/sa.hpp"

namespace subnetd::discovery::mad::sa {
namespace {

using ::testing::HasSubstr;
using Bytes = std::array<std::uint8_t, kMadSize>;

Bytes random_sa(std::mt19937_64& rng) {
  Bytes b{};
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  b[0] = 1;
  b[1] = kMgmtClass;
  b[18] = b[19] = 0;  // reserved (after AttributeID)
  b[46] = b[47] = 0;  // reserved (after AttributeOffset)
  return b;
}

TEST(SaCodec, DecodeEncodeRoundTripsEveryNonReservedByte) {
  std::mt19937_64 rng(0x5A5A);
  for (int i = 0; i < 2000; ++i) {
    const Bytes b = random_sa(rng);
    auto m = decode_sa(b);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(encode_sa(*m), b) << "iteration " << i;
  }
}

TEST(SaCodec, HeaderFieldsAgreeWithLibibmad) {
  std::mt19937_64 rng(0xC0DE);
  for (int i = 0; i < 500; ++i) {
    Bytes b = random_sa(rng);
    auto m = decode_sa(b);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->method, mad_get_field(b.data(), 0, IB_MAD_METHOD_F) |
                             (mad_get_field(b.data(), 0, IB_MAD_RESPONSE_F) << 7));
    EXPECT_EQ(m->status, mad_get_field(b.data(), 0, IB_MAD_STATUS_F));
    EXPECT_EQ(m->tid, mad_get_field64(b.data(), 0, IB_MAD_TRID_F));
    EXPECT_EQ(m->attr_id, mad_get_field(b.data(), 0, IB_MAD_ATTRID_F));
    EXPECT_EQ(m->attr_mod, mad_get_field(b.data(), 0, IB_MAD_ATTRMOD_F));
    EXPECT_EQ(m->sm_key, mad_get_field64(b.data(), 0, IB_SA_MKEY_F));
    EXPECT_EQ(m->attr_offset, mad_get_field(b.data(), 0, IB_SA_ATTROFFS_F));
    EXPECT_EQ(m->comp_mask, mad_get_field64(b.data(), 0, IB_SA_COMPMASK_F));
    EXPECT_EQ(m->rmpp.version, mad_get_field(b.data(), 0, IB_SA_RMPP_VERS_F));
    EXPECT_EQ(m->rmpp.type, mad_get_field(b.data(), 0, IB_SA_RMPP_TYPE_F));
    EXPECT_EQ(m->rmpp.resp_time, mad_get_field(b.data(), 0, IB_SA_RMPP_RESP_F));
    EXPECT_EQ(m->rmpp.flags, mad_get_field(b.data(), 0, IB_SA_RMPP_FLAGS_F));
    EXPECT_EQ(m->rmpp.status, mad_get_field(b.data(), 0, IB_SA_RMPP_STATUS_F));
    EXPECT_EQ(m->rmpp.data1, mad_get_field(b.data(), 0, IB_SA_RMPP_D1_F));
    EXPECT_EQ(m->rmpp.data2, mad_get_field(b.data(), 0, IB_SA_RMPP_D2_F));
  }
}

// PathRecord components read with our table and with libibmad's fields.
TEST(SaCodec, PathRecordComponentsAgreeWithLibibmad) {
  const RecordLayout* pr = layout_of(static_cast<std::uint16_t>(Attr::kPathRecord));
  ASSERT_NE(pr, nullptr);
  ASSERT_EQ(pr->size, IB_SA_PR_RECSZ);
  std::mt19937_64 rng(0xBEEF);
  for (int i = 0; i < 500; ++i) {
    std::array<std::uint8_t, 64> r{};
    for (auto& x : r) x = static_cast<std::uint8_t>(rng());
    EXPECT_EQ(get_field(r, component(*pr, "DLID")), mad_get_field(r.data(), 0, IB_SA_PR_DLID_F));
    EXPECT_EQ(get_field(r, component(*pr, "SLID")), mad_get_field(r.data(), 0, IB_SA_PR_SLID_F));
    EXPECT_EQ(get_field(r, component(*pr, "NumbPath")),
              mad_get_field(r.data(), 0, IB_SA_PR_NPATH_F));
    EXPECT_EQ(get_field(r, component(*pr, "SL")), mad_get_field(r.data(), 0, IB_SA_PR_SL_F));
    std::array<std::uint8_t, 16> gid{};
    mad_get_array(r.data(), 0, IB_SA_PR_DGID_F, gid.data());
    EXPECT_EQ(0, std::memcmp(gid.data(), &r[component(*pr, "DGID").offset / 8], 16));
    mad_get_array(r.data(), 0, IB_SA_PR_SGID_F, gid.data());
    EXPECT_EQ(0, std::memcmp(gid.data(), &r[component(*pr, "SGID").offset / 8], 16));
  }
}

// NodeRecord embeds NodeInfo at byte 4: our components against libibmad's
// NodeInfo fields read there.
TEST(SaCodec, NodeRecordComponentsAgreeWithLibibmad) {
  const RecordLayout* nr = layout_of(static_cast<std::uint16_t>(Attr::kNodeRecord));
  ASSERT_NE(nr, nullptr);
  ASSERT_EQ(nr->size, IB_SA_NR_RECSZ);
  std::mt19937_64 rng(0xF00D);
  for (int i = 0; i < 500; ++i) {
    std::array<std::uint8_t, 128> r{};
    for (auto& x : r) x = static_cast<std::uint8_t>(rng());
    std::uint8_t* ni = r.data() + 4;  // libibmad takes non-const buffers
    EXPECT_EQ(get_field(r, component(*nr, "NodeType")), mad_get_field(ni, 0, IB_NODE_TYPE_F));
    EXPECT_EQ(get_field(r, component(*nr, "NumPorts")), mad_get_field(ni, 0, IB_NODE_NPORTS_F));
    EXPECT_EQ(get_field(r, component(*nr, "NodeGUID")), mad_get_field64(ni, 0, IB_NODE_GUID_F));
    EXPECT_EQ(get_field(r, component(*nr, "PortGUID")),
              mad_get_field64(ni, 0, IB_NODE_PORT_GUID_F));
    EXPECT_EQ(get_field(r, component(*nr, "PartitionCap")),
              mad_get_field(ni, 0, IB_NODE_PARTITION_CAP_F));
    EXPECT_EQ(get_field(r, component(*nr, "DeviceID")), mad_get_field(ni, 0, IB_NODE_DEVID_F));
    EXPECT_EQ(get_field(r, component(*nr, "LocalPortNum")),
              mad_get_field(ni, 0, IB_NODE_LOCAL_PORT_F));
    EXPECT_EQ(get_field(r, component(*nr, "VendorID")), mad_get_field(ni, 0, IB_NODE_VENDORID_F));
  }
}

// PortInfoRecord embeds PortInfo at byte 4: every named PortInfo component
// against libibmad's PortInfo field read there.
TEST(SaCodec, PortInfoRecordComponentsAgreeWithLibibmad) {
  const RecordLayout* pir = layout_of(static_cast<std::uint16_t>(Attr::kPortInfoRecord));
  ASSERT_NE(pir, nullptr);
  const std::pair<const char*, MAD_FIELDS> fields[] = {
      {"M_Key", IB_PORT_MKEY_F},
      {"GidPrefix", IB_PORT_GID_PREFIX_F},
      {"LID", IB_PORT_LID_F},
      {"MasterSMLID", IB_PORT_SMLID_F},
      {"CapabilityMask", IB_PORT_CAPMASK_F},
      {"DiagCode", IB_PORT_DIAG_F},
      {"M_KeyLeasePeriod", IB_PORT_MKEY_LEASE_F},
      {"LocalPortNum", IB_PORT_LOCAL_PORT_F},
      {"LinkWidthEnabled", IB_PORT_LINK_WIDTH_ENABLED_F},
      {"LinkWidthSupported", IB_PORT_LINK_WIDTH_SUPPORTED_F},
      {"LinkWidthActive", IB_PORT_LINK_WIDTH_ACTIVE_F},
      {"LinkSpeedSupported", IB_PORT_LINK_SPEED_SUPPORTED_F},
      {"PortState", IB_PORT_STATE_F},
      {"PortPhysicalState", IB_PORT_PHYS_STATE_F},
      {"LinkDownDefaultState", IB_PORT_LINK_DOWN_DEF_F},
      {"M_KeyProtectBits", IB_PORT_MKEY_PROT_BITS_F},
      {"LMC", IB_PORT_LMC_F},
      {"LinkSpeedActive", IB_PORT_LINK_SPEED_ACTIVE_F},
      {"LinkSpeedEnabled", IB_PORT_LINK_SPEED_ENABLED_F},
      {"NeighborMTU", IB_PORT_NEIGHBOR_MTU_F},
      {"MasterSMSL", IB_PORT_SMSL_F},
      {"VLCap", IB_PORT_VL_CAP_F},
      {"InitType", IB_PORT_INIT_TYPE_F},
      {"VLHighLimit", IB_PORT_VL_HIGH_LIMIT_F},
      {"VLArbitrationHighCap", IB_PORT_VL_ARBITRATION_HIGH_CAP_F},
      {"VLArbitrationLowCap", IB_PORT_VL_ARBITRATION_LOW_CAP_F},
      {"InitTypeReply", IB_PORT_INIT_TYPE_REPLY_F},
      {"MTUCap", IB_PORT_MTU_CAP_F},
      {"VLStallCount", IB_PORT_VL_STALL_COUNT_F},
      {"HOQLife", IB_PORT_HOQ_LIFE_F},
      {"OperationalVLs", IB_PORT_OPER_VLS_F},
      {"PartitionEnforcementInbound", IB_PORT_PART_EN_INB_F},
      {"PartitionEnforcementOutbound", IB_PORT_PART_EN_OUTB_F},
      {"FilterRawInbound", IB_PORT_FILTER_RAW_INB_F},
      {"FilterRawOutbound", IB_PORT_FILTER_RAW_OUTB_F},
      {"M_KeyViolations", IB_PORT_MKEY_VIOL_F},
      {"P_KeyViolations", IB_PORT_PKEY_VIOL_F},
      {"Q_KeyViolations", IB_PORT_QKEY_VIOL_F},
      {"GUIDCap", IB_PORT_GUID_CAP_F},
      {"ClientReregister", IB_PORT_CLIENT_REREG_F},
      {"MulticastPKeyTrapSuppressionEnabled", IB_PORT_MCAST_PKEY_SUPR_ENAB_F},
      {"SubnetTimeOut", IB_PORT_SUBN_TIMEOUT_F},
      {"RespTimeValue", IB_PORT_RESP_TIME_VAL_F},
      {"LocalPhyErrors", IB_PORT_LOCAL_PHYS_ERR_F},
      {"OverrunErrors", IB_PORT_OVERRUN_ERR_F},
      {"MaxCreditHint", IB_PORT_MAX_CREDIT_HINT_F},
      {"LinkRoundTripLatency", IB_PORT_LINK_ROUND_TRIP_F},
      {"CapabilityMask2", IB_PORT_CAPMASK2_F},
      {"LinkSpeedExtActive", IB_PORT_LINK_SPEED_EXT_ACTIVE_F},
      {"LinkSpeedExtSupported", IB_PORT_LINK_SPEED_EXT_SUPPORTED_F},
      {"LinkSpeedExtEnabled", IB_PORT_LINK_SPEED_EXT_ENABLED_F},
  };
  std::mt19937_64 rng(0xD00D);
  for (int i = 0; i < 300; ++i) {
    std::array<std::uint8_t, 72> r{};
    for (auto& x : r) x = static_cast<std::uint8_t>(rng());
    std::uint8_t* pi = r.data() + 4;  // libibmad takes non-const buffers
    for (const auto& [name, f] : fields) {
      const Component& c = component(*pir, name);
      const std::uint64_t theirs =
          c.bits > 32 ? mad_get_field64(pi, 0, f) : mad_get_field(pi, 0, f);
      EXPECT_EQ(get_field(r, c), theirs) << name;
    }
  }
}

// One record's named components against libibmad's fields, on random
// bytes; `at`: where libibmad's attribute starts in the record.
void expect_agrees(Attr attr, std::size_t at,
                   std::initializer_list<std::pair<const char*, MAD_FIELDS>> fields) {
  const RecordLayout* l = layout_of(static_cast<std::uint16_t>(attr));
  ASSERT_NE(l, nullptr);
  std::mt19937_64 rng(0xBEEF);
  for (int i = 0; i < 300; ++i) {
    std::array<std::uint8_t, 256> r{};
    for (auto& x : r) x = static_cast<std::uint8_t>(rng());
    std::uint8_t* base = r.data() + at;  // libibmad takes non-const buffers
    for (const auto& [name, f] : fields) {
      const Component& c = component(*l, name);
      const std::uint64_t theirs =
          c.bits > 32 ? mad_get_field64(base, 0, f) : mad_get_field(base, 0, f);
      EXPECT_EQ(get_field(r, c), theirs) << l->name << "." << name;
    }
  }
}

// SwitchInfoRecord and SMInfoRecord embed their attribute at byte 4;
// GuidInfoRecord and ServiceRecord have libibmad fields of their own.
TEST(SaCodec, SwitchSmGuidServiceRecordsAgreeWithLibibmad) {
  expect_agrees(Attr::kSwitchInfoRecord, 4,
                {{"LinearFDBCap", IB_SW_LINEAR_FDB_CAP_F},
                 {"RandomFDBCap", IB_SW_RANDOM_FDB_CAP_F},
                 {"MulticastFDBCap", IB_SW_MCAST_FDB_CAP_F},
                 {"LinearFDBTop", IB_SW_LINEAR_FDB_TOP_F},
                 {"DefaultPort", IB_SW_DEF_PORT_F},
                 {"DefaultMulticastPrimaryPort", IB_SW_DEF_MCAST_PRIM_F},
                 {"DefaultMulticastNotPrimaryPort", IB_SW_DEF_MCAST_NOT_PRIM_F},
                 {"LifeTimeValue", IB_SW_LIFE_TIME_F},
                 {"PortStateChange", IB_SW_STATE_CHANGE_F},
                 {"OptimizedSLtoVLMappingProgramming", IB_SW_OPT_SLTOVL_MAPPING_F},
                 {"LIDsPerPort", IB_SW_LIDS_PER_PORT_F},
                 {"PartitionEnforcementCap", IB_SW_PARTITION_ENFORCE_CAP_F},
                 {"InboundEnforcementCap", IB_SW_PARTITION_ENF_INB_F},
                 {"OutboundEnforcementCap", IB_SW_PARTITION_ENF_OUTB_F},
                 {"FilterRawInboundCap", IB_SW_FILTER_RAW_INB_F},
                 {"FilterRawOutboundCap", IB_SW_FILTER_RAW_OUTB_F},
                 {"MulticastFDBTop", IB_SW_MCAST_FDB_TOP_F}});
  expect_agrees(Attr::kSmInfoRecord, 4,
                {{"GUID", IB_SMINFO_GUID_F},
                 {"SM_Key", IB_SMINFO_KEY_F},
                 {"ActCount", IB_SMINFO_ACT_F},
                 {"Priority", IB_SMINFO_PRIO_F},
                 {"SMState", IB_SMINFO_STATE_F}});
  expect_agrees(Attr::kGuidInfoRecord, 0,
                {{"LID", IB_SA_GIR_LID_F}, {"BlockNum", IB_SA_GIR_BLOCKNUM_F}});
  expect_agrees(Attr::kServiceRecord, 0,
                {{"ServiceID", IB_SA_SR_ID_F},
                 {"ServiceP_Key", IB_SA_SR_PKEY_F},
                 {"ServiceLease", IB_SA_SR_LEASE_F}});
  // The wide ones by where libibmad puts them.
  const RecordLayout* gir = layout_of(static_cast<std::uint16_t>(Attr::kGuidInfoRecord));
  const RecordLayout* sr = layout_of(static_cast<std::uint16_t>(Attr::kServiceRecord));
  std::array<std::uint8_t, 256> r{};
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(component(*gir, "GUIDInfo").offset / 8 * 8,
            static_cast<unsigned>(mad_get_field64(r.data(), 0, IB_SA_GIR_GUID0_F) >> 56) * 8);
  std::array<std::uint8_t, 64> got{};
  mad_get_array(r.data(), 0, IB_SA_SR_GID_F, got.data());
  EXPECT_EQ(got[0], component(*sr, "ServiceGID").offset / 8);
  mad_get_array(r.data(), 0, IB_SA_SR_KEY_F, got.data());
  EXPECT_EQ(got[0], component(*sr, "ServiceKey").offset / 8);
  mad_get_array(r.data(), 0, IB_SA_SR_NAME_F, got.data());
  EXPECT_EQ(got[0], component(*sr, "ServiceName").offset / 8);
  mad_get_array(r.data(), 0, IB_SA_SR_DATA_F, got.data());
  EXPECT_EQ(got[0], component(*sr, "ServiceData8.1").offset / 8);
}

// Every layout's components tile the record: in order, without gaps or
// overlaps, up to its size.
TEST(SaCodec, ComponentsCoverEachRecordExactly) {
  for (auto attr : {Attr::kNodeRecord, Attr::kPortInfoRecord, Attr::kLinkRecord, Attr::kPathRecord,
                    Attr::kLftRecord, Attr::kSwitchInfoRecord, Attr::kMftRecord,
                    Attr::kSmInfoRecord, Attr::kGuidInfoRecord, Attr::kServiceRecord}) {
    const RecordLayout* l = layout_of(static_cast<std::uint16_t>(attr));
    ASSERT_NE(l, nullptr);
    std::uint32_t next = 0;
    for (const Component& c : l->components) {
      EXPECT_EQ(c.offset, next) << l->name << "." << c.name;
      next = c.offset + c.bits;
    }
    EXPECT_EQ(next, l->size * 8u) << l->name;
    EXPECT_LE(l->components.size(), 64u) << l->name;
  }
}

TEST(SaCodec, MatchesComparesOnlyTheMaskedComponents) {
  const RecordLayout* lr = layout_of(static_cast<std::uint16_t>(Attr::kLinkRecord));
  ASSERT_NE(lr, nullptr);
  std::array<std::uint8_t, 8> rec{}, query{};
  set_field(rec, component(*lr, "FromLID"), 7);
  set_field(rec, component(*lr, "FromPort"), 3);
  set_field(rec, component(*lr, "ToLID"), 9);
  set_field(query, component(*lr, "FromLID"), 7);
  set_field(query, component(*lr, "ToLID"), 10);
  EXPECT_TRUE(matches(*lr, 0, query, rec));
  EXPECT_TRUE(matches(*lr, 1u << 0, query, rec));                 // FromLID
  EXPECT_FALSE(matches(*lr, (1u << 0) | (1u << 3), query, rec));  // and ToLID
  EXPECT_FALSE(matches(*lr, 1u << 1, query, rec));                // FromPort 0 != 3
  // A sub-byte component: PathRecord SL (4 bits next to QosClass).
  const RecordLayout* pr = layout_of(static_cast<std::uint16_t>(Attr::kPathRecord));
  std::array<std::uint8_t, 64> a{}, b{};
  set_field(a, component(*pr, "SL"), 5);
  set_field(b, component(*pr, "SL"), 5);
  set_field(b, component(*pr, "QosClass"), 0xABC);
  EXPECT_TRUE(matches(*pr, 1u << 15, a, b));
  EXPECT_FALSE(matches(*pr, 1u << 14, a, b));
  EXPECT_EQ(get_field(b, component(*pr, "QosClass")), 0xABCu);
}

TEST(SaCodec, SegmentsAndReassemblesTables) {
  SaMad resp;
  resp.method = static_cast<std::uint8_t>(Method::kGetTableResp);
  resp.attr_id = static_cast<std::uint16_t>(Attr::kNodeRecord);
  resp.attr_offset = 14;
  resp.tid = 0x1234;
  for (std::size_t n : {std::size_t{0}, std::size_t{112}, std::size_t{200}, std::size_t{201},
                        std::size_t{112 * 20}}) {
    std::vector<std::uint8_t> records(n);
    for (std::size_t i = 0; i < n; ++i) records[i] = static_cast<std::uint8_t>(i * 7 + 1);
    const auto segs = segment_table(resp, records);
    EXPECT_EQ(segs.size(), std::max<std::size_t>(1, (n + 199) / 200)) << n;
    auto first = decode_sa(segs.front());
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->rmpp.data2, 20 + n) << "first segment's payload length, " << n << " bytes";
    EXPECT_EQ(first->tid, 0x1234u);
    EXPECT_EQ(first->attr_offset, 14u);
    auto last = decode_sa(segs.back());
    ASSERT_TRUE(last.ok());
    EXPECT_NE(last->rmpp.flags & rmpp::kFlagLast, 0) << n;
    EXPECT_EQ(last->rmpp.data2, 20 + (n == 0 ? 0 : (n - 1) % 200 + 1)) << n;
    auto back = reassemble(segs);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, records) << n;
  }
}

TEST(SaCodec, ReassemblyRejectsBrokenSequences) {
  SaMad resp;
  resp.method = static_cast<std::uint8_t>(Method::kGetTableResp);
  std::vector<std::uint8_t> records(450, 1);
  auto segs = segment_table(resp, records);
  ASSERT_EQ(segs.size(), 3u);
  std::vector<Bytes> swapped = {segs[0], segs[2], segs[1]};
  auto r = reassemble(swapped);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("segment 2"));
  std::vector<Bytes> cut = {segs[0], segs[1]};
  EXPECT_FALSE(reassemble(cut).ok());
  EXPECT_FALSE(reassemble(std::span<const Bytes>{}).ok());
}

TEST(SaCodec, MalformedInputIsAnErrorNamingTheField) {
  Bytes b{};
  b[0] = 1;
  b[1] = kMgmtClass;
  auto short_mad = decode_sa(std::span<const std::uint8_t>(b.data(), 100));
  ASSERT_FALSE(short_mad.ok());
  EXPECT_THAT(short_mad.error().message, HasSubstr("100 bytes"));
  b[1] = 0x81;
  auto wrong_class = decode_sa(b);
  ASSERT_FALSE(wrong_class.ok());
  EXPECT_THAT(wrong_class.error().message, HasSubstr("management class 0x81"));
  b[1] = kMgmtClass;
  b[0] = 2;
  auto wrong_version = decode_sa(b);
  ASSERT_FALSE(wrong_version.ok());
  EXPECT_THAT(wrong_version.error().message, HasSubstr("base version 2"));
}

}  // namespace
}  // namespace subnetd::discovery::mad::sa

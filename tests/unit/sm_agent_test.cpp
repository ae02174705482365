// SmAgent: the replies subnetd's port gives to requests addressed to the SM
// (SMInfo from `sminfo` or a peer SM), checked field by field and, for the
// SMInfo payload, read back with libibmad's field table as sminfo does.

#include "discovery/sm_agent.hpp"

#include <gtest/gtest.h>
#include <infiniband/mad.h>

namespace subnetd::discovery {
namespace {

using mad::AttrId;
using mad::Method;

constexpr Guid kPortGuid{0x0002c90300a1b2c3ULL};

Mad encode(const mad::Smp& smp, std::uint32_t dlid, std::uint32_t slid) {
  Mad m;
  mad::encode_smp(smp, std::span<std::uint8_t, kMadSize>(m.data));
  m.dlid = dlid;
  m.slid = slid;
  return m;
}

mad::Smp decode(const Mad& m) {
  auto r = mad::decode_smp(m.data, mad::DecodeOptions{.allow_unknown_attribute = true});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : mad::Smp{};
}

TEST(SmAgent, AnswersLidRoutedSmInfoGetAsMaster) {
  SmAgent agent(SmAgentOptions{kPortGuid, 14, SmState::kMaster});
  mad::Smp req = mad::make_lr_smp(Method::kGet, AttrId::kSmInfo, 0, 0x1234abcdULL);
  const Mad raw = encode(req, /*dlid=*/1, /*slid=*/7);

  auto reply = agent.answer(req, raw, 4242);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->dlid, 7U);  // back to the requester
  const mad::Smp r = decode(*reply);
  EXPECT_EQ(r.method, Method::kGetResp);
  EXPECT_EQ(r.status, mad::status::kOk);
  EXPECT_EQ(r.tid, req.tid);
  EXPECT_EQ(r.attr_id, AttrId::kSmInfo);
  EXPECT_EQ(r.mgmt_class, mad::MgmtClass::kSubnLid);

  // What sminfo reads, through libibmad's own field table.
  const auto* data = reply->data.data() + mad::kSmpDataOffset;
  EXPECT_EQ(mad_get_field64(const_cast<std::uint8_t*>(data), 0, IB_SMINFO_GUID_F), kPortGuid.value);
  EXPECT_EQ(mad_get_field(const_cast<std::uint8_t*>(data), 0, IB_SMINFO_ACT_F), 4242U);
  EXPECT_EQ(mad_get_field(const_cast<std::uint8_t*>(data), 0, IB_SMINFO_PRIO_F), 14U);
  EXPECT_EQ(mad_get_field(const_cast<std::uint8_t*>(data), 0, IB_SMINFO_STATE_F), 3U);
  EXPECT_EQ(agent.stats().sminfo_get, 1U);
}

TEST(SmAgent, DirectedRouteReplyRetracesThePath) {
  SmAgent agent(SmAgentOptions{kPortGuid, 15, SmState::kMaster});
  const std::uint8_t path[] = {3, 7};
  mad::Smp req = mad::make_dr_smp(Method::kGet, AttrId::kSmInfo, 0, path, 99);
  req.hop_pointer = 3;  // arrived: hop count + 1
  req.return_path[1] = 1;
  req.return_path[2] = 5;
  auto reply = agent.answer(req, encode(req, 0xFFFF, 0xFFFF), 1);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->dlid, mad::kPermissiveLid);
  const mad::Smp r = decode(*reply);
  EXPECT_TRUE(r.direction);
  EXPECT_EQ(r.hop_pointer, 3);
  EXPECT_EQ(r.hop_count, 2);
  EXPECT_EQ(r.initial_path, req.initial_path);
  EXPECT_EQ(r.return_path, req.return_path);
  EXPECT_EQ(mad::SmInfo::decode(mad::data_of(r)).sm_state, 3);
}

TEST(SmAgent, StateAndPriorityFollowTheSetters) {
  SmAgent agent(SmAgentOptions{kPortGuid, 200, SmState::kDiscovering});
  EXPECT_EQ(agent.sm_info(0).priority, 15);  // clamped to 4 bits
  EXPECT_EQ(agent.sm_info(0).sm_state, 1);
  agent.set_state(SmState::kMaster);
  EXPECT_EQ(agent.sm_info(0).sm_state, 3);
  EXPECT_EQ(agent.sm_info(0).sm_key, 0U);
}

TEST(SmAgent, HandsSmInfoSetsToTheSmAndRefusesOtherAttributes) {
  SmAgent agent(SmAgentOptions{kPortGuid, 15, SmState::kMaster});
  // HANDOVER is the election's to answer, on the SM strand.
  mad::Smp set = mad::make_lr_smp(Method::kSet, AttrId::kSmInfo, 1 /* HANDOVER */, 5);
  EXPECT_FALSE(agent.answer(set, encode(set, 1, 9), 0).has_value());

  mad::Smp ni = mad::make_lr_smp(Method::kGet, AttrId::kNodeInfo, 0, 6);
  auto r2 = agent.answer(ni, encode(ni, 1, 9), 0);
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(decode(*r2).status, mad::status::kMethodAttrUnsupported);
  EXPECT_EQ(agent.stats().sminfo_set, 1U);
  EXPECT_EQ(agent.stats().unsupported, 1U);
}

TEST(SmAgent, AnswersWithItsSmKeyAsOpenSmDoes) {
  // Without M_Key protection OpenSM fills in its key, and ignores a peer
  // whose answer carries another: ours goes out the same way.
  SmAgent agent(SmAgentOptions{kPortGuid, 3, SmState::kStandby, 0x5eedULL});
  mad::Smp get = mad::make_lr_smp(Method::kGet, AttrId::kSmInfo, 0, 7);
  auto r = agent.answer(get, encode(get, 1, 9), 0);
  ASSERT_TRUE(r.has_value());
  const auto info = mad::SmInfo::decode(mad::data_of(decode(*r)));
  EXPECT_EQ(info.sm_key, 0x5eedULL);
  EXPECT_EQ(info.priority, 3);
  EXPECT_EQ(info.sm_state, 2);
  agent.set_priority(9);
  agent.set_sm_key(0);
  EXPECT_EQ(agent.sm_info(0, true).priority, 9);
  EXPECT_EQ(agent.sm_info(0, true).sm_key, 0U);
}

TEST(SmAgent, LeavesTrapsAndResponsesToTheSm) {
  SmAgent agent(SmAgentOptions{kPortGuid, 15, SmState::kMaster});
  mad::Smp trap = mad::make_lr_smp(Method::kTrap, AttrId::kNotice, 0, 0);
  mad::Notice::trap128(5, false).encode(mad::data_of(trap));
  EXPECT_FALSE(agent.answer(trap, encode(trap, 1, 5), 0).has_value());
  mad::Smp resp = mad::make_lr_smp(Method::kGetResp, AttrId::kSmInfo, 0, 0);
  EXPECT_FALSE(agent.answer(resp, encode(resp, 1, 5), 0).has_value());
  mad::Smp repress = mad::make_lr_smp(Method::kTrapRepress, AttrId::kNotice, 0, 0);
  EXPECT_FALSE(agent.answer(repress, encode(repress, 1, 5), 0).has_value());
}

}  // namespace
}  // namespace subnetd::discovery

// MCMemberRecord through the SA agent (daemon/sa/mcmember.hpp): IPoIB's
// join of the broadcast group the SM created, a group created by a join,
// the checks that refuse a join, leaves, and queries.

#include <gtest/gtest.h>

#include "daemon/sa/mcmember.hpp"
#include "discovery/mad/bytes.hpp"
#include "sa_test_support.hpp"

namespace subnetd::daemon::sa {
namespace {

enum : unsigned {
  kMgid = 0,
  kPortGid = 1,
  kQKey = 2,
  kMlid = 3,
  kPKey = 7,
  kSl = 12,
  kJoinState = 16
};

class SaMcMemberTest : public SaAgentTest {
 protected:
  void SetUp() override {
    SaAgentTest::SetUp();
    if (HasFatalFailure()) return;
    routing::PartitionPlan::Partition def;
    def.pkey = 0x7FFF;
    def.ipoib = true;
    registry_.set_partition_groups(std::span(&def, 1));
  }
  mad::SaMad mc(Method m, state::Mgid mgid, PortRef port, std::uint8_t join,
                std::uint64_t extra = 0) {
    auto q = request(m, Attr::kMcMemberRecord,
                     (1ULL << kMgid) | (1ULL << kPortGid) | (1ULL << kJoinState) | extra);
    std::copy(mgid.begin(), mgid.end(), q.data.begin());
    set(q, "JoinState", join);
    const std::uint64_t guid = topo_->port(port.node, port.port).guid.value;
    for (int i = 0; i < 8; ++i) {
      q.data[16 + i] = static_cast<std::uint8_t>(0xFE80000000000000ULL >> (56 - 8 * i));
      q.data[24 + i] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
    }
    return q;
  }
  std::pair<std::uint16_t, std::vector<std::uint8_t>> send(const mad::SaMad& q, PortRef from) {
    auto a = mc_agent_.answer(mad::encode_sa(q), lid_of(from), state_);
    EXPECT_EQ(a.size(), 1U);
    auto d = mad::decode_sa(a.front());
    EXPECT_TRUE(d.ok());
    return {d->status, std::vector<std::uint8_t>(d->data.begin(), d->data.begin() + 52)};
  }
  state::McastRegistry registry_;
  SaAgent mc_agent_{{}, &registry_};
};

TEST_F(SaMcMemberTest, IpoibJoinsTheBroadcastGroupTheSmMade) {
  const PortRef a = ca_ports_[0];
  const state::Mgid bcast = state::ipoib_broadcast_mgid(0x7FFF);
  auto q = mc(Method::kSet, bcast, a, state::kJoinFull);
  auto [status, rec] = send(q, a);
  ASSERT_EQ(status, 0) << std::hex << status;
  EXPECT_EQ(get(Attr::kMcMemberRecord, rec, "MLID"), 0xC000U);
  EXPECT_EQ(get(Attr::kMcMemberRecord, rec, "Q_Key"), 0x0B1BU);
  EXPECT_EQ(get(Attr::kMcMemberRecord, rec, "P_Key"), 0xFFFFU);
  EXPECT_EQ(get(Attr::kMcMemberRecord, rec, "JoinState"), state::kJoinFull);
  EXPECT_EQ(registry_.find(bcast)->members.size(), 1U);
  // The answer method of a Set is GetResp.
  auto raw = mc_agent_.answer(mad::encode_sa(q), lid_of(a), state_);
  EXPECT_EQ(mad::decode_sa(raw.front())->method, static_cast<std::uint8_t>(Method::kGetResp));
  // A trusted query finds the member; an untrusted one the group, its
  // member fields zeroed (IBA 15.2.5.17).
  auto trusted = request(Method::kGetTable, Attr::kMcMemberRecord);
  trusted.sm_key = 1;
  auto recs = table(mc_agent_.answer(mad::encode_sa(trusted), Lid{1}, state_));
  ASSERT_EQ(recs.size(), 1U);
  EXPECT_EQ(get(Attr::kMcMemberRecord, recs[0], "JoinState"), state::kJoinFull);
  EXPECT_EQ(discovery::mad::load_be64(&recs[0][24]), topo_->port(a).guid.value);
  recs = table(mc_agent_.answer(mad::encode_sa(request(Method::kGetTable, Attr::kMcMemberRecord)),
                                Lid{1}, state_));
  ASSERT_EQ(recs.size(), 1U);
  EXPECT_EQ(get(Attr::kMcMemberRecord, recs[0], "JoinState"), 0U);
  EXPECT_EQ(discovery::mad::load_be64(&recs[0][24]), 0U);
  EXPECT_EQ(get(Attr::kMcMemberRecord, recs[0], "MLID"), 0xC000U);
  // Leave.
  auto [left, _] = send(mc(Method::kDelete, bcast, a, state::kJoinFull), a);
  EXPECT_EQ(left, 0);
  EXPECT_TRUE(registry_.find(bcast)->members.empty());
  recs = table(mc_agent_.answer(mad::encode_sa(request(Method::kGetTable, Attr::kMcMemberRecord)),
                                Lid{1}, state_));
  ASSERT_EQ(recs.size(), 1U) << "the empty group still answers, without a PortGID";
  EXPECT_EQ(get(Attr::kMcMemberRecord, recs[0], "JoinState"), 0U);
}

TEST_F(SaMcMemberTest, AJoinCreatesAGroupAndTheLastLeaveEndsIt) {
  const PortRef a = ca_ports_[0], b = ca_ports_[1];
  state::Mgid mgid{0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42};
  auto create = mc(Method::kSet, mgid, a, state::kJoinFull, (1ULL << kQKey) | (1ULL << kPKey));
  set(create, "Q_Key", 0x1111);
  set(create, "P_Key", 0xFFFF);
  auto [status, rec] = send(create, a);
  ASSERT_EQ(status, 0) << std::hex << status;
  EXPECT_EQ(get(Attr::kMcMemberRecord, rec, "MLID"), 0xC001U) << "the broadcast group has 0xc000";
  // Another port joins it as a non-member; a wrong Q_Key is refused.
  auto bad = mc(Method::kSet, mgid, b, state::kJoinNon, 1ULL << kQKey);
  set(bad, "Q_Key", 0x2222);
  EXPECT_EQ(send(bad, b).first, mad::status::kReqInvalid);
  EXPECT_EQ(send(mc(Method::kSet, mgid, b, state::kJoinNon), b).first, 0);
  EXPECT_EQ(registry_.find(mgid)->members.size(), 2U);
  EXPECT_EQ(send(mc(Method::kDelete, mgid, a, state::kJoinFull), a).first, 0);
  EXPECT_EQ(send(mc(Method::kDelete, mgid, b, state::kJoinNon), b).first, 0);
  EXPECT_FALSE(registry_.find(mgid));
}

// With VL layers multicast is deadlock-free on SL 0 (VL 0) only: a group
// created on another SL is refused; with one VL any SL is taken.
TEST_F(SaMcMemberTest, OnLayeredRoutesAGroupIsCreatedOnSlZeroOnly) {
  const PortRef a = ca_ports_[0];
  auto create = [&](std::uint8_t last, std::uint64_t sl) {
    state::Mgid mgid{0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
    auto q = mc(Method::kSet, mgid, a, state::kJoinFull,
                (1ULL << kQKey) | (1ULL << kPKey) | (1ULL << kSl));
    set(q, "Q_Key", 0x1111);
    set(q, "P_Key", 0xFFFF);
    set(q, "SL", sl);
    return send(q, a).first;
  };
  EXPECT_EQ(create(0x50, 3), 0) << "one VL: every SL maps to VL 0";
  routing::Routes layered = *state_.routes;
  layered.num_vls = 2;
  layered.lid_layer.assign(std::size_t{layered.max_lid.value} + 1, 1);
  state_.routes = std::make_shared<const routing::Routes>(std::move(layered));
  EXPECT_EQ(create(0x51, 3), mad::status::kReqInvalid);
  EXPECT_EQ(create(0x52, 0), 0);
}

TEST_F(SaMcMemberTest, RefusesWhatItMustNotDo) {
  const PortRef a = ca_ports_[0], b = ca_ports_[1];
  const state::Mgid bcast = state::ipoib_broadcast_mgid(0x7FFF);
  // Another port's join, asked by a: refused (a is not the SM's port).
  EXPECT_EQ(send(mc(Method::kSet, bcast, b, state::kJoinFull), a).first, mad::status::kReqInvalid);
  // No JoinState.
  auto none = mc(Method::kSet, bcast, a, state::kJoinFull);
  none.comp_mask &= ~(1ULL << kJoinState);
  EXPECT_EQ(send(none, a).first, mad::status::kInsufficientComponents);
  // Creation without Q_Key and P_Key, or by a non-member join.
  state::Mgid fresh{0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x43};
  EXPECT_EQ(send(mc(Method::kSet, fresh, a, state::kJoinFull), a).first,
            mad::status::kInsufficientComponents);
  auto non = mc(Method::kSet, fresh, a, state::kJoinNon, (1ULL << kQKey) | (1ULL << kPKey));
  set(non, "P_Key", 0xFFFF);
  EXPECT_EQ(send(non, a).first, mad::status::kReqInvalid);
  // A P_Key the port does not hold.
  auto foreign = mc(Method::kSet, fresh, a, state::kJoinFull, (1ULL << kQKey) | (1ULL << kPKey));
  set(foreign, "P_Key", 0x8123);
  EXPECT_EQ(send(foreign, a).first, mad::status::kReqInvalid);
  // Leaving a group one is not in.
  EXPECT_EQ(send(mc(Method::kDelete, bcast, a, state::kJoinFull), a).first,
            mad::status::kReqInvalid);
  // An all-zero MGID: the SA picks one.
  auto any =
      mc(Method::kSet, state::Mgid{}, a, state::kJoinFull, (1ULL << kQKey) | (1ULL << kPKey));
  set(any, "P_Key", 0xFFFF);
  auto [status, rec] = send(any, a);
  ASSERT_EQ(status, 0) << std::hex << status;
  EXPECT_EQ(rec[0], 0xff);
  EXPECT_EQ(rec[2], 0xa0);
}

}  // namespace
}  // namespace subnetd::daemon::sa

// The SA with partitions: PathRecords only in a P_Key both ends share with
// one full member, that the requester holds too; P_KeyTableRecords as
// programmed; gRPC's path answer (state::path_properties) agrees.

#include <gtest/gtest.h>

#include "routing/partitions.hpp"
#include "sa_test_support.hpp"
#include "state/mcast_groups.hpp"
#include "state/path_record.hpp"

namespace subnetd::daemon::sa {
namespace {

using routing::PartitionMember;
using routing::PartitionSpec;

constexpr std::uint64_t kPrDlid = 1ULL << 4, kPrSlid = 1ULL << 5, kPrPKey = 1ULL << 13;

class SaPartitionsTest : public SaAgentTest {
 protected:
  // ca_ports_[0]: full member of 0x0010 and limited in default; [1]:
  // limited member of 0x0010; [2]: full member of 0x0010; [3]: default
  // limited only. Switches: default, full.
  void SetUp() override {
    SaAgentTest::SetUp();
    if (HasFatalFailure()) return;
    // The switches enforce, in one block a port.
    for (const NodeId sw : topo_->switches())
      topo_->mutable_node(sw).partition_enforcement_cap = 32;
    const routing::Topology& t = *topo_;
    auto port_guid = [&](std::size_t i) {
      return t.port(ca_ports_[i].node, ca_ports_[i].port).guid;
    };
    PartitionSpec def{"default", routing::kDefaultPKey, true, {}, {}};
    def.members.push_back({PartitionMember::Kind::kAll, {}, {}, false});
    for (const NodeId sw : t.switches()) {
      def.members.push_back({PartitionMember::Kind::kGuid, t.node(sw).guid, {}, true});
    }
    PartitionSpec storage{"storage", 0x0010, false, {}, {}};
    storage.members.push_back({PartitionMember::Kind::kGuid, port_guid(0), {}, true});
    storage.members.push_back({PartitionMember::Kind::kGuid, port_guid(1), {}, false});
    storage.members.push_back({PartitionMember::Kind::kGuid, port_guid(2), {}, true});
    state_.partitions = std::make_shared<const routing::PartitionPlan>(
        routing::plan_partitions(t, std::vector{def, storage}, PortRef{}));
  }

  // PathRecords from `a` to `b` asked by `requester`, with a P_Key if given.
  std::vector<std::vector<std::uint8_t>> paths(PortRef a, PortRef b, PortRef requester,
                                               std::optional<std::uint16_t> pkey = {}) {
    auto q = request(Method::kGetTable, Attr::kPathRecord, kPrSlid | kPrDlid);
    set(q, "SLID", lid_of(a).value);
    set(q, "DLID", lid_of(b).value);
    if (pkey) {
      q.comp_mask |= kPrPKey;
      set(q, "P_Key", *pkey);
    }
    return table(ask(q, lid_of(requester)));
  }
};

TEST_F(SaPartitionsTest, PathRecordsNeedAFullMemberOfASharedPKey) {
  const PortRef a = ca_ports_[0], lim = ca_ports_[1], full = ca_ports_[2], other = ca_ports_[3];
  // a and full: full members of 0x0010; the default is limited at both.
  auto r = paths(a, full, a);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(get(Attr::kPathRecord, r[0], "P_Key"), 0x8010U);
  // a and the limited member of 0x0010: still 0x0010 (a is full).
  r = paths(a, lim, a);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(get(Attr::kPathRecord, r[0], "P_Key"), 0x8010U);
  // Two limited members share nothing usable.
  EXPECT_TRUE(paths(lim, other, lim).empty());
  // Asking for the default partition between two limited members: none;
  // for 0x0010 where only one end is a member: none.
  EXPECT_TRUE(paths(a, full, a, 0x7FFF).empty());
  EXPECT_TRUE(paths(a, other, a, 0x0010).empty());
  // A switch is a full member of the default: a limited CA reaches it.
  const PortRef sw{topo_->switch_node(SwitchIndex{0}), 0};
  r = paths(other, sw, other);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(get(Attr::kPathRecord, r[0], "P_Key"), 0xFFFFU);
}

TEST_F(SaPartitionsTest, TheRequesterMustHoldThePKey) {
  const PortRef a = ca_ports_[0], full = ca_ports_[2], other = ca_ports_[3];
  EXPECT_EQ(paths(a, full, full).size(), 1U);
  EXPECT_TRUE(paths(a, full, other).empty()) << "other is no member of 0x0010";
}

TEST_F(SaPartitionsTest, GrpcPathAnswerAgrees) {
  const PortRef a = ca_ports_[0], full = ca_ports_[2], lim = ca_ports_[1], other = ca_ports_[3];
  auto p = state::path_properties(state_, a, full, lid_of(full));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->pkey, 0x8010);
  auto none = state::path_properties(state_, lim, other, lid_of(other));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::kUnreachable);
  EXPECT_NE(none.error().message.find("share no partition"), std::string::npos);
}

TEST_F(SaPartitionsTest, PKeyTableRecordsAreTheProgrammedTables) {
  const PortRef a = ca_ports_[0];
  auto untrusted = request(Method::kGetTable, Attr::kPKeyTableRecord);
  EXPECT_EQ(status_of(ask(untrusted)), mad::status::kReqInvalid) << "trusted requests only";
  untrusted.sm_key = 2;
  EXPECT_EQ(status_of(ask(untrusted)), mad::status::kReqInvalid) << "not our SM_Key";
  auto q = request(Method::kGetTable, Attr::kPKeyTableRecord, 1U);  // LID
  q.sm_key = 1;
  set(q, "LID", lid_of(a).value);
  auto recs = table(ask(q));
  ASSERT_EQ(recs.size(), 1U) << "a generated CA's PartitionCap is unknown: one block";
  EXPECT_EQ(get(Attr::kPKeyTableRecord, recs[0], "LID"), lid_of(a).value);
  EXPECT_EQ(get(Attr::kPKeyTableRecord, recs[0], "BlockNum"), 0U);
  EXPECT_EQ(get(Attr::kPKeyTableRecord, recs[0], "PortNum"), a.port);
  const std::size_t keys = 8;  // P_KeyTable starts at byte 8
  EXPECT_EQ((recs[0][keys] << 8) | recs[0][keys + 1], 0x7FFF);
  EXPECT_EQ((recs[0][keys + 2] << 8) | recs[0][keys + 3], 0x8010);
  EXPECT_EQ((recs[0][keys + 4] << 8) | recs[0][keys + 5], 0);
  // By a switch's LID: port 0 and every port facing a CA.
  const NodeId sw = topo_->switch_node(SwitchIndex{0});
  set(q, "LID", lid_of({sw, 0}).value);
  recs = table(ask(q));
  std::size_t facing_cas = 0;
  for (unsigned p = 1; p <= topo_->node(sw).num_ports; ++p) {
    const routing::Port& port = topo_->port(sw, static_cast<PortNum>(p));
    facing_cas +=
        port.connected() && topo_->node(port.remote_node).type != routing::NodeType::kSwitch;
  }
  EXPECT_EQ(recs.size(), 1 + facing_cas);
  // Every table of the fabric.
  auto every = request(Method::kGetTable, Attr::kPKeyTableRecord);
  every.sm_key = 1;
  const auto all = table(ask(every));
  EXPECT_GT(all.size(), recs.size());
}

// Trap 66 for a group of partition 0x0010 reaches only the subscribers
// that are members of 0x0010.
TEST_F(SaPartitionsTest, GroupNoticesReachThePartitionsMembersOnly) {
  const PortRef member = ca_ports_[0], outsider = ca_ports_[3];
  for (const PortRef p : {member, outsider}) {
    ASSERT_EQ(status_of(ask(sa_inform(true, 66), lid_of(p))), 0);
  }
  state::McastGroup g;
  g.mgid = state::ipoib_broadcast_mgid(0x8010);
  g.pkey = 0x8010;
  g.mlid = Lid{0xC001};
  state::FabricState after = state_;
  after.generation = state_.generation + 1;
  after.mcast_groups = std::make_shared<const std::vector<state::McastGroup>>(1, g);
  const auto reports = agent_.reports(state_, after);
  ASSERT_EQ(reports.size(), 1U);
  EXPECT_EQ(reports[0].dlid, lid_of(member).value);
}

TEST_F(SaPartitionsTest, AForwardedTrapReachesTheIssuersPartitionsMembersOnly) {
  // [2] and [3] share only the default partition, where both are limited
  // members: [3] does not hear of [2]'s bad keys; [0] (storage) does.
  const PortRef issuer = ca_ports_[2], member = ca_ports_[0], outsider = ca_ports_[3];
  for (const PortRef p : {member, outsider}) {
    ASSERT_EQ(status_of(ask(sa_inform(true, 257), lid_of(p))), 0);
  }
  discovery::mad::Notice trap;
  trap.type = 2;
  trap.producer_type = 1;
  trap.trap_number = 257;
  trap.issuer_lid = static_cast<std::uint16_t>(lid_of(issuer).value);
  const auto reports = agent_.forward(trap, state_);
  ASSERT_EQ(reports.size(), 1U);
  EXPECT_EQ(reports[0].dlid, lid_of(member).value);
}

}  // namespace
}  // namespace subnetd::daemon::sa

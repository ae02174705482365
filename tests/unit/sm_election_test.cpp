// SmElection: IBA 14.4's master election and handover rules, alone. Two or
// three elections exchange what their SMs would send (SMInfo answers, Sets,
// trap 144) by hand.

#include "discovery/sm_election.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "discovery/mad/smp.hpp"

namespace subnetd::discovery {
namespace {

// SMInfo Set attribute modifiers as they arrive on the wire.
constexpr auto kHandover = static_cast<std::uint32_t>(SmControl::kHandover);
constexpr auto kAcknowledge = static_cast<std::uint32_t>(SmControl::kAcknowledge);
constexpr auto kDisable = static_cast<std::uint32_t>(SmControl::kDisable);
constexpr auto kStandby = static_cast<std::uint32_t>(SmControl::kStandby);
constexpr auto kDiscover = static_cast<std::uint32_t>(SmControl::kDiscover);

SmElection make(std::uint8_t priority, std::uint64_t guid, std::uint64_t key = 0,
                unsigned retries = 3) {
  ElectionOptions o;
  o.self = SmRank{priority, Guid{guid}};
  o.sm_key = key;
  o.poll_retries = retries;
  return SmElection(o);
}

// What `e` answers to an SMInfo Get.
PeerSm info(const SmElection& e, std::uint64_t key = 0) {
  return PeerSm{e.self().guid, e.self().priority, e.state(), key};
}

// A master alone, then a lower SM that finds it and stands by.
struct MasterAndStandby {
  SmElection master, standby;
  MasterAndStandby(std::uint8_t mp, std::uint64_t mg, std::uint8_t sp, std::uint64_t sg)
      : master(make(mp, mg)), standby(make(sp, sg)) {
    EXPECT_EQ(master.discovery_done({}).enter, SmState::kMaster);
    const std::vector<PeerSm> peers{info(master)};
    EXPECT_EQ(standby.discovery_done(peers).enter, SmState::kStandby);
  }
};

TEST(SmElection, RankIsPriorityThenTheLowerGuid) {
  EXPECT_TRUE(outranks({15, Guid{9}}, {14, Guid{1}}));
  EXPECT_FALSE(outranks({14, Guid{1}}, {15, Guid{9}}));
  EXPECT_TRUE(outranks({7, Guid{1}}, {7, Guid{2}}));
  EXPECT_FALSE(outranks({7, Guid{2}}, {7, Guid{1}}));
  EXPECT_FALSE(outranks({7, Guid{2}}, {7, Guid{2}}));
}

TEST(SmElection, AloneItBecomesMaster) {
  SmElection e = make(5, 0x10);
  EXPECT_EQ(e.state(), SmState::kDiscovering);
  const ElectionActions a = e.discovery_done({});
  EXPECT_EQ(a.enter, SmState::kMaster);
  EXPECT_TRUE(a.sweep);
  EXPECT_EQ(a.why, "no other SM found");
  EXPECT_EQ(e.master(), Guid{0x10});
  // A later sweep alone changes nothing.
  EXPECT_TRUE(e.master_sweep_done({}).empty());
}

TEST(SmElection, AHigherSmJoiningARunningMasterTakesOverByHandover) {
  SmElection low = make(10, 0x20);
  ASSERT_EQ(low.discovery_done({}).enter, SmState::kMaster);
  SmElection high = make(15, 0x30);
  // The newcomer finds a master: it stands by, polls it, and sends trap 144.
  const std::vector<PeerSm> seen_by_high{info(low)};
  ElectionActions a = high.discovery_done(seen_by_high);
  EXPECT_EQ(a.enter, SmState::kStandby);
  EXPECT_EQ(a.poll, Guid{0x20});
  EXPECT_EQ(a.trap144_to, Guid{0x20});
  EXPECT_EQ(high.master(), Guid{0x20});
  // Its polls find the master alive; it outranks it, so it reminds it.
  EXPECT_EQ(high.poll_answered(info(low)).trap144_to, Guid{0x20});
  // The master's next sweep finds the higher standby: HANDOVER to it.
  const std::vector<PeerSm> seen_by_low{info(high)};
  a = low.master_sweep_done(seen_by_low);
  EXPECT_EQ(a.handover_to, Guid{0x30});
  EXPECT_FALSE(a.enter.has_value());  // still master until the handover is answered
  EXPECT_EQ(low.handover_pending(), Guid{0x30});
  EXPECT_TRUE(low.master_sweep_done(seen_by_low).empty());  // one handover at a time
  // The standby takes it: master, sweeps, acknowledges.
  SmElection::SetReply r = high.set_received(kHandover, info(low));
  EXPECT_EQ(r.status, mad::status::kOk);
  EXPECT_EQ(r.actions.enter, SmState::kMaster);
  EXPECT_TRUE(r.actions.sweep);
  EXPECT_TRUE(r.actions.stop_polling);
  EXPECT_EQ(r.actions.acknowledge_to, Guid{0x20});
  EXPECT_EQ(high.master(), Guid{0x30});
  // Its answer reaches the old master: standby, polling the new one.
  a = low.handover_answered(Guid{0x30});
  EXPECT_EQ(a.enter, SmState::kStandby);
  EXPECT_EQ(a.poll, Guid{0x30});
  EXPECT_FALSE(a.trap144_to.has_value());
  EXPECT_EQ(low.master(), Guid{0x30});
  // The ACKNOWLEDGE, which says STANDBY (the state it was sent from).
  PeerSm ack = info(high);
  ack.state = SmState::kStandby;
  EXPECT_EQ(low.set_received(kAcknowledge, ack).status, mad::status::kOk);
  // The new master's polls: alive; the old one is lower, so no trap.
  EXPECT_TRUE(low.poll_answered(info(high)).empty());
  // And the new master's sweeps leave the lower standby alone.
  const std::vector<PeerSm> low_now{info(low)};
  EXPECT_TRUE(high.master_sweep_done(low_now).empty());
}

TEST(SmElection, AnAcknowledgeOvertakingTheHandoverAnswerCompletesIt) {
  SmElection low = make(10, 0x20);
  ASSERT_EQ(low.discovery_done({}).enter, SmState::kMaster);
  SmElection high = make(15, 0x30);
  const std::vector<PeerSm> seen_by_low{info(high)};
  ASSERT_EQ(low.master_sweep_done(seen_by_low).handover_to, Guid{0x30});
  ASSERT_EQ(high.set_received(kHandover, info(low)).status, mad::status::kOk);
  // The ACKNOWLEDGE is handled before the HANDOVER's answer reached its
  // waiter: the old master follows the new one at once ...
  PeerSm ack = info(high);
  ack.state = SmState::kStandby;
  SmElection::SetReply r = low.set_received(kAcknowledge, ack);
  EXPECT_EQ(r.status, mad::status::kOk);
  EXPECT_EQ(r.actions.enter, SmState::kStandby);
  EXPECT_EQ(r.actions.poll, Guid{0x30});
  EXPECT_EQ(low.master(), Guid{0x30});
  // ... and the late answer changes nothing.
  EXPECT_TRUE(low.handover_answered(Guid{0x30}).empty());
  // From anyone else, a master does not take an ACKNOWLEDGE.
  SmElection other = make(10, 0x20);
  ASSERT_EQ(other.discovery_done({}).enter, SmState::kMaster);
  EXPECT_EQ(other.set_received(kAcknowledge, ack).status, mad::status::kInvalidField);
}

TEST(SmElection, AStandbyTakesOverAfterTheConfiguredMissedPolls) {
  MasterAndStandby f(15, 0x30, 5, 0x40);  // 3 missed polls (make()'s default)
  SmElection& master = f.master;
  SmElection& standby = f.standby;
  EXPECT_TRUE(standby.poll_answered(info(master)).empty());  // lower: no trap
  EXPECT_TRUE(standby.poll_missed().empty());
  EXPECT_TRUE(standby.poll_missed().empty());
  EXPECT_TRUE(standby.poll_answered(info(master)).empty());  // an answer resets the count
  EXPECT_TRUE(standby.poll_missed().empty());
  EXPECT_TRUE(standby.poll_missed().empty());
  ElectionActions a = standby.poll_missed();
  EXPECT_EQ(a.enter, SmState::kDiscovering);
  EXPECT_TRUE(a.sweep);
  EXPECT_TRUE(a.stop_polling);
  EXPECT_EQ(a.why, "master SM 0x0000000000000030 lost: 3 polls unanswered");
  EXPECT_FALSE(standby.master().has_value());
  // The sweep finds nobody else: master.
  EXPECT_EQ(standby.discovery_done({}).enter, SmState::kMaster);
}

TEST(SmElection, ALowerSmStandsByForAHigherOneStillDiscovering) {
  SmElection low = make(3, 0x50);
  const std::vector<PeerSm> peers{PeerSm{Guid{0x60}, 9, SmState::kDiscovering, 0}};
  const ElectionActions a = low.discovery_done(peers);
  EXPECT_EQ(a.enter, SmState::kStandby);
  EXPECT_EQ(low.master(), Guid{0x60});
  // Equal priority: the lower GUID is master.
  SmElection twin = make(9, 0x61);
  EXPECT_EQ(twin.discovery_done(peers).enter, SmState::kStandby);
  SmElection lower_guid = make(9, 0x59);
  EXPECT_EQ(lower_guid.discovery_done(peers).enter, SmState::kMaster);
}

TEST(SmElection, TwoMastersAfterAPartitionHealsEndWithOne) {
  SmElection a = make(12, 0x70), b = make(8, 0x80);
  ASSERT_EQ(a.discovery_done({}).enter, SmState::kMaster);
  ASSERT_EQ(b.discovery_done({}).enter, SmState::kMaster);
  // Healed: each sweep finds the other master.
  const std::vector<PeerSm> seen_by_a{info(b)}, seen_by_b{info(a)};
  ElectionActions x = a.master_sweep_done(seen_by_a);
  EXPECT_EQ(x.poll, Guid{0x80});  // a outranks b and waits for its handover
  EXPECT_FALSE(x.handover_to.has_value());
  ElectionActions y = b.master_sweep_done(seen_by_b);
  EXPECT_EQ(y.handover_to, Guid{0x70});
  // While waiting, a's polls of b remind it with trap 144.
  EXPECT_EQ(a.poll_answered(info(b)).trap144_to, Guid{0x80});
  SmElection::SetReply r = a.set_received(kHandover, info(b));
  EXPECT_EQ(r.status, mad::status::kOk);
  EXPECT_FALSE(r.actions.enter.has_value());  // already master
  EXPECT_TRUE(r.actions.sweep);               // takes b's part of the fabric
  EXPECT_TRUE(r.actions.stop_polling);
  EXPECT_EQ(b.handover_answered(Guid{0x70}).enter, SmState::kStandby);
  EXPECT_EQ(a.state(), SmState::kMaster);
  EXPECT_EQ(b.master(), Guid{0x70});
}

TEST(SmElection, AMasterWaitingForAHandoverSweepsWhenTheOtherGoesSilent) {
  SmElection a = make(12, 0x70, 0, 2);
  ASSERT_EQ(a.discovery_done({}).enter, SmState::kMaster);
  const std::vector<PeerSm> other{PeerSm{Guid{0x80}, 8, SmState::kMaster, 0}};
  ASSERT_EQ(a.master_sweep_done(other).poll, Guid{0x80});
  EXPECT_TRUE(a.poll_missed().empty());
  const ElectionActions x = a.poll_missed();
  EXPECT_TRUE(x.sweep);
  EXPECT_TRUE(x.stop_polling);
  EXPECT_FALSE(x.enter.has_value());
  EXPECT_FALSE(a.polled().has_value());
}

TEST(SmElection, SetsFromTheWrongSenderOrInTheWrongStateAreRefused) {
  MasterAndStandby f(15, 0x30, 5, 0x40);
  SmElection& master = f.master;
  SmElection& s = f.standby;
  const PeerSm not_master{Guid{0x99}, 15, SmState::kStandby, 0};
  // HANDOVER from an SM that is not master: ignored, refused.
  SmElection::SetReply r = s.set_received(kHandover, not_master);
  EXPECT_EQ(r.status, mad::status::kInvalidField);
  EXPECT_TRUE(r.actions.empty());
  EXPECT_EQ(s.state(), SmState::kStandby);
  // DISABLE / DISCOVER / STANDBY from a non-master; ACKNOWLEDGE from a master.
  EXPECT_EQ(s.set_received(kDisable, not_master).status, mad::status::kInvalidField);
  EXPECT_EQ(s.set_received(kDiscover, not_master).status, mad::status::kInvalidField);
  EXPECT_EQ(s.set_received(kAcknowledge, info(master)).status, mad::status::kInvalidField);
  // STANDBY is for a NOTACTIVE SM only; modifiers outside 1..5.
  EXPECT_EQ(s.set_received(kStandby, info(master)).status, mad::status::kInvalidField);
  EXPECT_EQ(s.set_received(0, info(master)).status, mad::status::kInvalidField);
  EXPECT_EQ(s.set_received(6, info(master)).status, mad::status::kInvalidField);
  // A master refuses DISABLE and DISCOVER even from another master.
  const PeerSm other_master{Guid{0x31}, 1, SmState::kMaster, 0};
  EXPECT_EQ(master.set_received(kDisable, other_master).status, mad::status::kInvalidField);
  EXPECT_EQ(master.set_received(kDiscover, other_master).status, mad::status::kInvalidField);
  EXPECT_EQ(master.state(), SmState::kMaster);
  EXPECT_EQ(s.state(), SmState::kStandby);
  EXPECT_EQ(s.master(), Guid{0x30});
}

TEST(SmElection, DisableDiscoverAndStandbyFromTheMaster) {
  MasterAndStandby f(15, 0x30, 5, 0x40);
  SmElection& master = f.master;
  SmElection& s = f.standby;
  const std::vector<PeerSm> peers{info(master)};
  SmElection::SetReply r = s.set_received(kDisable, info(master));
  EXPECT_EQ(r.status, mad::status::kOk);
  EXPECT_EQ(r.actions.enter, SmState::kNotActive);
  EXPECT_TRUE(r.actions.stop_polling);
  // NOTACTIVE: polls, misses and DISCOVER do nothing; STANDBY brings it back.
  EXPECT_TRUE(s.poll_missed().empty());
  EXPECT_EQ(s.set_received(kDiscover, info(master)).status, mad::status::kInvalidField);
  EXPECT_EQ(s.set_received(kHandover, info(master)).status, mad::status::kInvalidField);
  r = s.set_received(kStandby, info(master));
  EXPECT_EQ(r.status, mad::status::kOk);
  EXPECT_EQ(r.actions.enter, SmState::kStandby);
  EXPECT_EQ(r.actions.poll, Guid{0x30});
  // DISCOVER: discovering, and a sweep decides again.
  r = s.set_received(kDiscover, info(master));
  EXPECT_EQ(r.status, mad::status::kOk);
  EXPECT_EQ(r.actions.enter, SmState::kDiscovering);
  EXPECT_TRUE(r.actions.sweep);
  EXPECT_EQ(s.discovery_done(peers).enter, SmState::kStandby);
}

TEST(SmElection, PeersWithAnotherSmKeyTakeNoPart) {
  SmElection e = make(1, 0x90, 0xABCD);
  const std::vector<PeerSm> peers{PeerSm{Guid{0x91}, 15, SmState::kMaster, 0x1234},
                                  PeerSm{Guid{0x90}, 1, SmState::kMaster, 0xABCD}};  // ourselves
  EXPECT_FALSE(e.accepts(peers[0]));
  EXPECT_FALSE(e.accepts(peers[1]));
  EXPECT_EQ(e.discovery_done(peers).enter, SmState::kMaster);
  EXPECT_EQ(e.set_received(kHandover, peers[0]).status, mad::status::kInvalidField);
  // With the same key it counts.
  SmElection f = make(1, 0x92, 0x1234);
  EXPECT_EQ(f.discovery_done(peers).enter, SmState::kStandby);
}

TEST(SmElection, APriorityRaisedAtRuntimeLeadsToAHandover) {
  MasterAndStandby f(10, 0x20, 5, 0x30);
  SmElection& master = f.master;
  SmElection& s = f.standby;
  EXPECT_TRUE(s.poll_answered(info(master)).empty());
  // SIGHUP with priority 12: the master hears of it (trap 144).
  EXPECT_EQ(s.set_priority(12).trap144_to, Guid{0x20});
  const std::vector<PeerSm> now{info(s)};
  EXPECT_EQ(master.master_sweep_done(now).handover_to, Guid{0x30});
  // A master lowering its priority sweeps, and hands over at the sweep's end.
  SmElection m2 = make(10, 0x20);
  ASSERT_EQ(m2.discovery_done({}).enter, SmState::kMaster);
  EXPECT_TRUE(m2.set_priority(2).sweep);
  const std::vector<PeerSm> standby{PeerSm{Guid{0x30}, 5, SmState::kStandby, 0}};
  EXPECT_EQ(m2.master_sweep_done(standby).handover_to, Guid{0x30});
  // A handover that fails leaves it master; the next sweep tries again.
  EXPECT_FALSE(m2.handover_failed(Guid{0x30}).enter.has_value());
  EXPECT_EQ(m2.state(), SmState::kMaster);
  EXPECT_EQ(m2.master_sweep_done(standby).handover_to, Guid{0x30});
}

TEST(SmElection, AStandbyWhoseMasterStepsDownRediscovers) {
  SmElection s = make(9, 0x30);
  const std::vector<PeerSm> peers{PeerSm{Guid{0x20}, 5, SmState::kMaster, 0}};
  ASSERT_EQ(s.discovery_done(peers).enter, SmState::kStandby);
  // The master it follows answers NOTACTIVE (disabled by an operator).
  const ElectionActions a = s.poll_answered(PeerSm{Guid{0x20}, 5, SmState::kNotActive, 0});
  EXPECT_EQ(a.enter, SmState::kDiscovering);
  EXPECT_TRUE(a.sweep);
  // Answers from an SM it does not poll are none of its business.
  SmElection t = make(9, 0x31);
  ASSERT_EQ(t.discovery_done(peers).enter, SmState::kStandby);
  EXPECT_TRUE(t.poll_answered(PeerSm{Guid{0x77}, 5, SmState::kNotActive, 0}).empty());
  EXPECT_EQ(t.state(), SmState::kStandby);
}

}  // namespace
}  // namespace subnetd::discovery

// The SubnetManager next to another SM (issue 17), on the simulator: a peer
// SM at another CA port (SimFabric::set_peer_sm) answers SMInfo and takes
// Sets as IBA 14.4.3 says; the test moves it as its own logic would (its
// priority, a HANDOVER it sends, kill -9). Checked end to end on the SM's
// side: who is master, what it programs (nothing while standing by; only
// what differs after a takeover), that LIDs stay, and that a bogus Set
// changes nothing. The same runs on ibsim next to a second subnetd and
// OpenSM in tests/interop/interop_election.py.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>

#include "daemon_test_support.hpp"
#include "discovery/sim/sim_counting.hpp"

namespace subnetd::daemon {
namespace {

using namespace std::chrono_literals;
using discovery::sim::PeerSmOptions;
using discovery::sim::SimFabric;

constexpr const char* kFabric = "fat-tree:levels=2,radix=8";
constexpr std::uint8_t kStandby = 2;
constexpr std::uint8_t kMaster = 3;
constexpr std::uint32_t kHandover = 1;
constexpr std::uint32_t kDisable = 3;

// One SubnetManager on a simulator it does not own (a test runs several in
// turn on one fabric: the first programs it, the next finds it programmed).
struct SmRun {
  ManualClock clock;
  state::StatePublisher publisher;
  state::EventLog events{0, {}, {}};
  routing::WorkerPool pool{2};
  boost::asio::io_context io;
  discovery::sim::CountingTransport* wire = nullptr;  // owned by the SM
  std::unique_ptr<SubnetManager> sm;
  std::thread thread;

  SmRun(SimFabric& sim, std::uint8_t priority) {
    Config cfg;
    cfg.fabric.transport = TransportKind::kSim;
    cfg.fabric.topology = kFabric;
    cfg.sweep.interval = 0ms;
    cfg.sm.priority = priority;
    TransportBundle bundle;
    auto counting = std::make_unique<discovery::sim::CountingTransport>(
        std::make_unique<discovery::sim::BorrowedSim>(sim));
    wire = counting.get();
    bundle.transport = std::move(counting);
    sm = std::make_unique<SubnetManager>(io, cfg, std::move(bundle), nullptr,
                                         std::vector<routing::LidRecord>{}, publisher, events, pool,
                                         SubnetManager::Hooks{}, FastPathOptions{}, &clock);
    sm->start();
    thread = std::thread([this] { io.run(); });
  }
  ~SmRun() { testing::stop_on_thread(*sm, io, thread); }

  const state::FabricState& now() const { return *publisher.current(); }
  state::SmState state() const { return now().state; }

  // Runs the SM's timers (polls, retries, follow-up sweeps) until `pred`
  // holds of what it published; false if it does not within `rounds`.
  bool run_until(const std::function<bool(const state::FabricState&)>& pred, int rounds = 40) {
    for (int i = 0; i < rounds; ++i) {
      if (!testing::wait_idle(*sm)) return false;
      if (pred(now())) return true;
      const auto next = clock.next_due();
      if (next == Clock::time_point::max()) return false;
      clock.advance(next - clock.now());
    }
    return pred(now());
  }
  bool run_until_state(state::SmState s, int rounds = 40) {
    return run_until([s](const state::FabricState& f) { return f.state == s; }, rounds);
  }

  state::SweepReply sweep() {
    auto fut = testing::sm_call<state::SweepReply>(
        [&](auto done) { sm->trigger_sweep("test", std::move(done)); });
    EXPECT_EQ(fut.wait_for(20s), std::future_status::ready);
    return fut.get();
  }
  bool verify() {
    auto fut = testing::sm_call<Result<state::VerifyReply>>(
        [&](auto done) { sm->verify_routing(state::VerifyRequest{false}, std::move(done)); });
    EXPECT_EQ(fut.wait_for(20s), std::future_status::ready);
    auto r = fut.get();
    return r.ok() && r->verdict == state::Verdict::kOk;
  }
  bool event_says(std::string_view text) const {
    for (const state::Event& e :
         events.recent_since(0, 100000).value_or(std::vector<state::Event>{})) {
      if (e.kind == state::EventKind::kSmState && e.message.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
};

class SmStandbySim : public ::testing::Test {
 protected:
  void SetUp() override {
    auto topo = discovery::topo::generate(kFabric);
    ASSERT_TRUE(topo.ok());
    auto s = SimFabric::create(std::move(topo).value(), discovery::sim::SimOptions{});
    ASSERT_TRUE(s.ok()) << s.error().message;
    sim = std::move(s).value();
    // The peer on the last CA; the SM attaches at the first.
    const routing::Topology& t = sim->topology();
    for (std::uint32_t n = t.num_nodes(); n-- > 0;) {
      if (t.node(NodeId{n}).type == routing::NodeType::kCa) {
        peer = PortRef{NodeId{n}, 1};
        break;
      }
    }
    ASSERT_NE(peer.port, 0);
  }

  // A first master programs the fabric (as the old master would have);
  // the LIDs every CA port got.
  std::map<std::uint32_t, std::uint32_t> program_fabric() {
    SmRun first(*sim, 15);
    EXPECT_TRUE(first.run_until_state(state::SmState::kMaster));
    return ca_lids();
  }
  std::map<std::uint32_t, std::uint32_t> ca_lids() const {
    std::map<std::uint32_t, std::uint32_t> lids;
    const routing::Topology& t = sim->topology();
    for (std::uint32_t n = 0; n < t.num_nodes(); ++n) {
      const routing::Node& node = t.node(NodeId{n});
      for (unsigned p = node.type == routing::NodeType::kSwitch ? 0 : 1;
           p <= (node.type == routing::NodeType::kSwitch ? 0u : node.num_ports); ++p) {
        lids[t.port_index(NodeId{n}, static_cast<PortNum>(p))] =
            sim->port_view(PortRef{NodeId{n}, static_cast<PortNum>(p)})->lid.value;
      }
    }
    return lids;
  }
  discovery::sim::PeerSmView peer_view() const { return *sim->peer_sm(peer); }
  void set_peer(std::uint8_t priority, std::uint8_t state) {
    ASSERT_TRUE(sim->set_peer_sm(peer, PeerSmOptions{priority, state, 1}).ok());
  }

  std::unique_ptr<SimFabric> sim;
  PortRef peer;
};

TEST_F(SmStandbySim, AHigherMasterIsFollowedAndTakenOverWhenItDiesKeepingEverything) {
  const auto lids = program_fabric();
  set_peer(10, kMaster);
  SmRun sm(*sim, 5);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kStandby, 5));
  // Standing by: the master named, nothing programmed, trap 144 sent to it.
  EXPECT_EQ(sm.now().sm_role.master_guid, peer_view().guid);
  EXPECT_EQ(sm.now().sm_role.master_lid.value, lids.at(sim->topology().port_index(peer.node, 1)));
  EXPECT_EQ(sm.wire->lft_sets.load(), 0u);
  EXPECT_EQ(peer_view().traps, 1u);
  EXPECT_FALSE(sm.sweep().ok) << "a standby refuses to sweep";

  // Polls: one SMInfo Get per period.
  const auto gets = peer_view().gets;
  sm.clock.advance(500ms);
  ASSERT_TRUE(testing::wait_idle(*sm.sm));
  EXPECT_EQ(peer_view().gets, gets + 1);

  // kill -9: three polls unanswered, then a sweep that keeps every LID and
  // writes no block (the switches hold what it computes).
  ASSERT_TRUE(sim->set_peer_sm_alive(peer, false).ok());
  ASSERT_TRUE(sm.run_until_state(state::SmState::kMaster, 10));
  EXPECT_TRUE(sm.event_says("3 polls unanswered"));
  EXPECT_EQ(ca_lids(), lids);
  EXPECT_EQ(sm.wire->lft_sets.load(), 0u);
  EXPECT_EQ(sm.now().sm_role.master_guid, sim->local_port().port_guid);
  for (const auto& p : sm.now().sm_role.peers) {
    EXPECT_NE(p.ib_state, kMaster) << "the dead master still shows as master";
  }
  EXPECT_TRUE(sm.verify());
}

TEST_F(SmStandbySim, APeerWeOutrankStandsByAndIsListed) {
  set_peer(3, kStandby);
  SmRun sm(*sim, 15);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kMaster, 5));
  const auto& role = sm.now().sm_role;
  ASSERT_EQ(role.peers.size(), 1u);
  EXPECT_EQ(role.peers[0].guid, peer_view().guid);
  EXPECT_EQ(role.peers[0].priority, 3);
  EXPECT_EQ(role.peers[0].ib_state, kStandby);
  EXPECT_EQ(role.master_guid, sim->local_port().port_guid);
  EXPECT_EQ(peer_view().now.state, kStandby) << "nothing was sent it to change";
}

TEST_F(SmStandbySim, APeerThatComesToOutrankUsIsHandedTheSubnet) {
  set_peer(3, kStandby);
  SmRun sm(*sim, 8);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kMaster, 5));
  const auto lids = ca_lids();
  const auto blocks = sm.wire->lft_sets.load();
  // The peer restarted with a higher priority; its trap 144 makes us sweep.
  set_peer(12, kStandby);
  sm.sweep();
  ASSERT_TRUE(sm.run_until_state(state::SmState::kStandby, 10));
  EXPECT_EQ(peer_view().now.state, kMaster) << "HANDOVER taken";
  EXPECT_EQ(peer_view().last_control, kHandover);
  EXPECT_EQ(peer_view().sent, 1u) << "its ACKNOWLEDGE";
  EXPECT_EQ(sm.now().sm_role.master_guid, peer_view().guid);
  EXPECT_EQ(ca_lids(), lids);
  EXPECT_EQ(sm.wire->lft_sets.load(), blocks);
}

TEST_F(SmStandbySim, SplitBrainEndsWithTheHigherMasterAndNoLidMoved) {
  set_peer(3, kStandby);
  SmRun sm(*sim, 8);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kMaster, 5));
  const auto lids = ca_lids();
  // A partition healed: the peer mastered its side meanwhile and outranks
  // us. Our next sweep finds it and hands over.
  set_peer(12, kMaster);
  sm.sweep();
  ASSERT_TRUE(sm.run_until_state(state::SmState::kStandby, 10));
  EXPECT_EQ(sm.now().sm_role.master_guid, peer_view().guid);
  EXPECT_EQ(peer_view().now.state, kMaster);
  EXPECT_EQ(ca_lids(), lids);
}

TEST_F(SmStandbySim, SplitBrainWithALowerMasterEndsWhenItHandsOver) {
  set_peer(3, kStandby);
  SmRun sm(*sim, 12);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kMaster, 5));
  const auto lids = ca_lids();
  set_peer(3, kMaster);
  sm.sweep();
  ASSERT_TRUE(testing::wait_idle(*sm.sm));
  const auto sweeps = sm.now().sweeps;
  EXPECT_EQ(sm.state(), state::SmState::kMaster) << "we outrank it: we wait for its handover";
  // Its own sweep finds us higher: it hands over, and is STANDBY once we
  // answer; a master handed a subnet sweeps it and sends no ACKNOWLEDGE
  // (as OpenSM in MASTER: the sender left MASTER at our answer).
  ASSERT_TRUE(sim->peer_sm_send(peer, kHandover).ok());
  ASSERT_TRUE(sm.run_until([&](const state::FabricState&) {
    return peer_view().now.state == kStandby && peer_view().answers == 1;
  }));
  EXPECT_EQ(peer_view().last_answer_status, 0);
  EXPECT_GT(sm.now().sweeps, sweeps) << "the part handed over is swept";
  EXPECT_EQ(sm.state(), state::SmState::kMaster);
  EXPECT_EQ(sm.now().sm_role.master_guid, sim->local_port().port_guid);
  EXPECT_EQ(ca_lids(), lids);
}

TEST_F(SmStandbySim, BogusSetsFromANonMasterAreRefused) {
  set_peer(3, kStandby);
  SmRun sm(*sim, 15);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kMaster, 5));
  // A STANDBY peer has no business disabling the master or handing it a
  // subnet it does not own.
  for (std::uint32_t control : {kDisable, kHandover, 5u}) {
    const auto answers = peer_view().answers;
    ASSERT_TRUE(sim->peer_sm_send(peer, control).ok());
    ASSERT_TRUE(sm.run_until(
        [&](const state::FabricState&) { return peer_view().answers == answers + 1; }));
    EXPECT_EQ(peer_view().last_answer_status, discovery::mad::status::kInvalidField) << control;
    EXPECT_EQ(sm.state(), state::SmState::kMaster) << control;
  }
  EXPECT_TRUE(sm.event_says("refused"));
}

TEST_F(SmStandbySim, AnSmWithAnotherKeyIsNoPeerAndItsSetsAreRefusedForThat) {
  // A master with another SM_Key (another subnet's SM, or a misconfigured
  // one): listed (every SM seen), not followed, its HANDOVER refused for
  // the key.
  ASSERT_TRUE(sim->set_peer_sm(peer, PeerSmOptions{12, kMaster, 7}).ok());
  SmRun sm(*sim, 5);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kMaster, 5));
  ASSERT_EQ(sm.now().sm_role.peers.size(), 1u);
  EXPECT_EQ(sm.now().sm_role.master_guid, sim->local_port().port_guid);
  ASSERT_TRUE(sim->peer_sm_send(peer, kHandover).ok());
  ASSERT_TRUE(sm.run_until([&](const state::FabricState&) { return peer_view().answers == 1; }));
  EXPECT_EQ(peer_view().last_answer_status, discovery::mad::status::kInvalidField);
  EXPECT_TRUE(sm.event_says("refused: its SM_Key is not ours"));
  EXPECT_EQ(sm.state(), state::SmState::kMaster);
}

TEST_F(SmStandbySim, AMasterDisablesAStandbyAndBringsItBack) {
  program_fabric();
  set_peer(10, kMaster);
  SmRun sm(*sim, 5);
  ASSERT_TRUE(sm.run_until_state(state::SmState::kStandby, 5));
  ASSERT_TRUE(sim->peer_sm_send(peer, kDisable).ok());
  ASSERT_TRUE(sm.run_until_state(state::SmState::kNotActive, 5));
  EXPECT_EQ(peer_view().last_answer_status, 0);
  ASSERT_TRUE(sim->peer_sm_send(peer, 4).ok());  // STANDBY
  ASSERT_TRUE(sm.run_until_state(state::SmState::kStandby, 5));
  EXPECT_EQ(sm.wire->lft_sets.load(), 0u);
}

TEST_F(SmStandbySim, ThePeerIsPlacedOnlyOnAnotherCaPort) {
  const routing::Topology& t = sim->topology();
  NodeId a_switch;
  for (std::uint32_t n = 0; n < t.num_nodes(); ++n) {
    if (t.node(NodeId{n}).type == routing::NodeType::kSwitch) a_switch = NodeId{n};
  }
  auto on_switch = sim->set_peer_sm(PortRef{a_switch, 1}, PeerSmOptions{});
  ASSERT_FALSE(on_switch.ok());
  EXPECT_NE(on_switch.error().message.find("not a CA"), std::string::npos);
  const auto own = t.find_by_port_guid(sim->local_port().port_guid);
  ASSERT_TRUE(own.has_value());
  auto on_sm = sim->set_peer_sm(*own, PeerSmOptions{});
  ASSERT_FALSE(on_sm.ok());
  EXPECT_NE(on_sm.error().message.find("SM's own port"), std::string::npos);
  EXPECT_FALSE(sim->set_peer_sm(peer, PeerSmOptions{16, 2, 1}).ok());
  EXPECT_FALSE(sim->peer_sm(peer).ok()) << "none placed yet";
  set_peer(3, kStandby);
  EXPECT_FALSE(sim->peer_sm_send(peer, 6).ok());
  ASSERT_TRUE(sim->set_peer_sm_alive(peer, false).ok());
  auto dead = sim->peer_sm_send(peer, kHandover);
  ASSERT_FALSE(dead.ok());
  EXPECT_NE(dead.error().message.find("no live peer SM"), std::string::npos);
}

}  // namespace
}  // namespace subnetd::daemon

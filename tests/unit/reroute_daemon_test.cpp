// The SubnetManager's fast path over the simulator: a cable is cut (or a
// switch powered off), the switches' trap 128 reaches the SM, the SM probes
// the trapping switches, repairs the tables and pushes the changed blocks;
// then LID-routed SMPs to every LID still arrive through the switches' own
// tables, and the re-balancing heavy sweep replaces the repaired tables.
// A repair the rerouter refuses goes to the heavy sweep instead.
//
// The SM runs on its own io thread, as in the daemon; the test pulls cables
// through the simulator's thread-safe fault API and watches the published
// FabricState. LID-routed probes are sent after the SM has stopped, so the
// transport has one user at a time.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "bringup_test_support.hpp"
#include "daemon/subnet_manager.hpp"
#include "daemon_test_support.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "state/event_log.hpp"

namespace subnetd::daemon {
namespace {

using namespace subnetd::state;

using bringup_testing::lid_routed_drops;
using bringup_testing::probe_every_lid;
using namespace std::chrono_literals;

// The SM owns its transport; the test keeps the simulator to cut cables
// and, once the SM has stopped, to probe.
using Borrowed = testing::BorrowedSim;

struct Harness {
  std::unique_ptr<discovery::sim::SimFabric> sim;
  StatePublisher publisher;
  EventLog events{0, {}, {}};
  routing::WorkerPool pool{2};
  boost::asio::io_context io;
  std::unique_ptr<SubnetManager> sm;
  std::thread thread;

  Harness(const std::string& spec, EngineKind engine, int lid_bits, FastPathOptions fast) {
    auto topo = discovery::topo::generate(spec);
    EXPECT_TRUE(topo.ok());
    discovery::sim::SimOptions so;
    so.lid_bits = lid_bits;
    auto s = discovery::sim::SimFabric::create(std::move(topo).value(), so);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    sim = std::move(s).value();
    Config cfg;
    cfg.fabric.transport = TransportKind::kSim;
    cfg.fabric.topology = spec;
    cfg.addressing.lid_bits = lid_bits;
    cfg.routing.engine = engine;
    cfg.sweep.interval = 0ms;  // no light sweeps: traps alone drive the SM
    TransportBundle bundle;
    bundle.transport = std::make_unique<Borrowed>(*sim);
    sm = std::make_unique<SubnetManager>(io, cfg, std::move(bundle), nullptr,
                                         std::vector<routing::LidRecord>{}, publisher, events, pool,
                                         SubnetManager::Hooks{}, fast);
    sm->start();
    thread = std::thread([this] { io.run(); });
  }
  ~Harness() { stop(); }

  void stop() {
    if (sm) testing::stop_on_thread(*sm, io, thread);
  }

  // Polls the published state until `pred` holds (true) or 20 s pass.
  bool wait_for(const std::function<bool(const FabricState&)>& pred) {
    return testing::wait_for_state(publisher, pred);
  }

  NodeId node(std::string_view name) const { return *sim->topology().find_by_name(name); }
  PortNum port_to(std::string_view from, std::string_view to) const {
    const routing::Topology& t = sim->topology();
    const NodeId a = node(from), b = node(to);
    for (unsigned p = 1; p <= t.node(a).num_ports; ++p) {
      if (t.port(a, static_cast<PortNum>(p)).remote_node == b) return static_cast<PortNum>(p);
    }
    ADD_FAILURE() << from << " is not cabled to " << to;
    return 0;
  }
  std::vector<Event> events_of(EventKind kind) {
    std::vector<Event> out;
    for (const Event& e : events.recent_since(0, 100000).value_or(std::vector<Event>{})) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }
};

bool master(const FabricState& s) {
  return s.state == SmState::kMaster && s.routes != nullptr;
}

// Probes every LID of the state's LidMap through the switches' tables;
// `dead` LIDs (their owner cut off) may fail.
void expect_every_lid_answers(Harness& h, const FabricState& s, std::size_t may_fail = 0) {
  const std::uint64_t drops_before = lid_routed_drops(h.sim->stats());
  // The LidMap refers to the swept topology (its own node numbering).
  const auto probe = probe_every_lid(*h.sim, *s.topology, *s.lids, s.sm_lid);
  EXPECT_GE(probe.answered + may_fail, probe.probed);
  if (may_fail == 0) {
    EXPECT_TRUE(probe.failures.empty()) << probe.failures.front();
    EXPECT_EQ(lid_routed_drops(h.sim->stats()), drops_before) << "LID-routed SMPs were dropped";
  }
  EXPECT_GT(probe.probed, 0U);
}

TEST(RerouteDaemon, CutCableIsRepairedByTheFastPathAndEveryLidStillAnswers) {
  FastPathOptions fast;
  fast.rebalance_delay = std::chrono::hours{1};  // keep the repaired tables in place
  Harness h("fat-tree:levels=3,k=4", EngineKind::kUpdn, 16, fast);
  ASSERT_TRUE(h.wait_for(master));
  const auto before = h.publisher.current();
  EXPECT_EQ(before->sweeps, 1U);
  const NodeId agg = h.node("agg-p0-0");
  const PortNum p = h.port_to("agg-p0-0", "core-0");
  ASSERT_TRUE(h.sim->link_down(PortRef{agg, p}).ok());
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.reroutes >= 1; }))
      << "no reroute published";
  const auto after = h.publisher.current();
  EXPECT_EQ(after->sweeps, 1U) << "the fast path, not a sweep, repaired it";
  EXPECT_EQ(after->state, SmState::kMaster);
  EXPECT_GT(after->last_reroute.count(), 0);
  EXPECT_NE(after->routes, before->routes) << "repaired tables are published";
  // The published topology no longer has the link; the tables do not use it.
  const routing::Topology& t = *after->topology;
  const NodeId swept_agg = *t.find_by_name("agg-p0-0");
  EXPECT_FALSE(t.port(swept_agg, p).connected());
  EXPECT_TRUE(before->topology->port(swept_agg, p).connected());
  const SwitchIndex agg_sw = t.node(swept_agg).switch_index;
  for (std::uint32_t l = 1; l <= after->lids->max_lid.value; ++l) {
    ASSERT_NE(after->routes->lfts[agg_sw.value].get(Lid{l}), p) << "LID " << l;
  }
  // Events: the link and the reroute, with its figures.
  EXPECT_FALSE(h.events_of(EventKind::kLinkDown).empty());
  const auto reroutes = h.events_of(EventKind::kReroute);
  ASSERT_FALSE(reroutes.empty());
  EXPECT_NE(reroutes[0].details_json.find("\"latency_us\""), std::string::npos);
  // One targeted PortInfo Get when both ends' traps arrive; here core-0's
  // route to the SM ran over the cut cable, so its trap waits for a repeat
  // and agg-p0-0 alone is read whole (4 ports). Never both ends whole.
  {
    const std::string& json = reroutes[0].details_json;
    const auto at = json.find("\"probe_smps\":");
    ASSERT_NE(at, std::string::npos) << json;
    EXPECT_LE(std::stoi(json.substr(at + 13)), 4) << json;
  }
  // The verifier agrees with what was published.
  auto verdict = testing::sm_call<Result<VerifyReply>>([&](auto done) {
                   h.sm->verify_routing({}, std::move(done));
                 }).get();
  ASSERT_TRUE(verdict.ok()) << verdict.error().message;
  EXPECT_EQ(verdict->verdict, Verdict::kOk) << verdict->message;
  ASSERT_TRUE(testing::wait_idle(*h.sm));  // every block answered
  for (const Event& e : h.events_of(EventKind::kError)) {
    EXPECT_EQ(e.message.find("not confirmed"), std::string::npos) << e.message;
  }
  h.stop();
  // Every switch holds exactly the published tables (the blocks landed).
  std::uint64_t differ = 0;
  for (std::uint32_t sw = 0; sw < t.num_switches(); ++sw) {
    const NodeId sim_node =
        *h.sim->topology().find_by_guid(t.node(t.switch_node(SwitchIndex{sw})).guid);
    for (std::uint32_t l = 1; l <= after->lids->max_lid.value; ++l) {
      const auto e = h.sim->lft_entry(sim_node, Lid{l});
      ASSERT_TRUE(e.ok());
      differ += *e != after->routes->lfts[sw].get(Lid{l}) ? 1 : 0;
    }
  }
  EXPECT_EQ(differ, 0U);
  expect_every_lid_answers(h, *after);
}

TEST(RerouteDaemon, RebalancingSweepReplacesTheRepairedTables) {
  FastPathOptions fast;
  fast.rebalance_delay = 50ms;
  Harness h("fat-tree:levels=3,k=4", EngineKind::kAuto, 24, fast);
  ASSERT_TRUE(h.wait_for(master));
  ASSERT_TRUE(h.sim->link_down("edge-p1-1", h.port_to("edge-p1-1", "agg-p1-0")).ok());
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.reroutes >= 1; }));
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.sweeps >= 2 && master(s); }))
      << "no re-balancing sweep";
  const auto s = h.publisher.current();
  EXPECT_NE(s->verification.message.find("complete, loop-free, deadlock-free"), std::string::npos)
      << s->verification.message;
  h.stop();
  expect_every_lid_answers(h, *s);
}

TEST(RerouteDaemon, FailuresArrivingTogetherAreOneRepair) {
  FastPathOptions fast;
  fast.rebalance_delay = std::chrono::hours{1};
  Harness h("fat-tree:levels=3,k=4", EngineKind::kUpdn, 16, fast);
  ASSERT_TRUE(h.wait_for(master));
  // Hold the SM's only thread while two cables go, so both sets of traps
  // are waiting when it looks.
  std::mutex mu;
  std::condition_variable cv;
  bool go = false, holding = false;
  boost::asio::post(h.io, [&] {
    std::unique_lock lock(mu);
    holding = true;
    cv.notify_all();
    cv.wait(lock, [&] { return go; });
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return holding; });
  }
  ASSERT_TRUE(h.sim->link_down("agg-p2-1", h.port_to("agg-p2-1", "core-2")).ok());
  ASSERT_TRUE(h.sim->link_down("edge-p3-0", h.port_to("edge-p3-0", "agg-p3-0")).ok());
  {
    std::lock_guard lock(mu);
    go = true;
  }
  cv.notify_all();
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.reroutes >= 1; }));
  ASSERT_TRUE(testing::wait_idle(*h.sm));  // a second repair would have been published
  const auto s = h.publisher.current();
  EXPECT_EQ(s->reroutes, 1U);
  const auto reroutes = h.events_of(EventKind::kReroute);
  ASSERT_EQ(reroutes.size(), 1U);
  EXPECT_NE(reroutes[0].details_json.find("\"switch_links\":2"), std::string::npos)
      << reroutes[0].details_json;
  h.stop();
  expect_every_lid_answers(h, *s);
}

TEST(RerouteDaemon, SwitchFailureIsRepairedAroundIt) {
  FastPathOptions fast;
  fast.rebalance_delay = std::chrono::hours{1};
  Harness h("fat-tree:levels=3,k=4", EngineKind::kUpdn, 24, fast);
  ASSERT_TRUE(h.wait_for(master));
  ASSERT_TRUE(h.sim->switch_down("agg-p1-1").ok());
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.reroutes >= 1; }));
  ASSERT_TRUE(testing::wait_idle(*h.sm));  // traps of every neighbour handled
  const auto s = h.publisher.current();
  EXPECT_EQ(s->sweeps, 1U);
  // The dead switch sends no trap; its four neighbours do. The targeted
  // probes ask about switches next to two or more of them (agg-p1-1, and
  // agg-p1-0 and the index-1 aggregation switches of the other pods, which
  // share neighbours with it), then every neighbour's link to agg-p1-1:
  // fewer SMPs than every port of the four (16), all four links found.
  const auto reroutes = h.events_of(EventKind::kReroute);
  ASSERT_EQ(reroutes.size(), 1U);
  const std::string& json = reroutes[0].details_json;
  EXPECT_NE(json.find("\"switch_links\":4,"), std::string::npos) << json;
  const auto at = json.find("\"probe_smps\":");
  ASSERT_NE(at, std::string::npos) << json;
  const int probes = std::stoi(json.substr(at + 13));
  EXPECT_GE(probes, 4) << json;
  EXPECT_LT(probes, 16) << json;
  h.stop();
  // The dead switch's own LID cannot answer; every other LID must.
  expect_every_lid_answers(h, *s, 1);
  const std::uint64_t drops = lid_routed_drops(h.sim->stats());
  const auto probe = probe_every_lid(*h.sim, *s->topology, *s->lids, s->sm_lid);
  EXPECT_EQ(probe.answered + 1, probe.probed);
  EXPECT_LE(lid_routed_drops(h.sim->stats()), drops + 1);
}

TEST(RerouteDaemon, RefusedRepairFallsBackToTheHeavySweep) {
  // ring:switches=4 under updn: cutting sw-0 - sw-1 leaves sw-1's CA only a
  // down->up route; the rerouter refuses, the heavy sweep recomputes.
  FastPathOptions fast;
  fast.rebalance_delay = std::chrono::hours{1};
  Harness h("ring:switches=4,hosts=1", EngineKind::kUpdn, 16, fast);
  ASSERT_TRUE(h.wait_for(master));
  ASSERT_TRUE(h.sim->link_down("sw-1", h.port_to("sw-1", "sw-0")).ok());
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.sweeps >= 2 && master(s); }));
  const auto s = h.publisher.current();
  EXPECT_EQ(s->reroutes, 0U);
  bool refused = false;
  for (const Event& e : h.events_of(EventKind::kError)) {
    refused |= e.message.find("refused") != std::string::npos;
  }
  EXPECT_TRUE(refused) << "the refusal is logged";
  h.stop();
  expect_every_lid_answers(h, *s);
}

TEST(RerouteDaemon, LinkUpGoesToTheHeavySweep) {
  FastPathOptions fast;
  fast.rebalance_delay = std::chrono::hours{1};
  Harness h("fat-tree:levels=2,radix=4", EngineKind::kUpdn, 16, fast);
  ASSERT_TRUE(h.wait_for(master));
  const PortNum p = h.port_to("leaf0", "spine0");
  ASSERT_TRUE(h.sim->link_down("leaf0", p).ok());
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.reroutes >= 1; }));
  ASSERT_TRUE(h.sim->link_up("leaf0", p).ok());
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.sweeps >= 2 && master(s); }))
      << "link up did not lead to a sweep";
  const auto s = h.publisher.current();
  EXPECT_EQ(s->reroutes, 1U);
  EXPECT_TRUE(s->topology->port(*s->topology->find_by_name("leaf0"), p).connected());
  h.stop();
  expect_every_lid_answers(h, *s);
}

TEST(RerouteDaemon, LinkBackAfterTheRebalancingSweepIsSeen) {
  // After the re-balancing sweep the cut link is no longer in the topology;
  // when it comes back, the probes must still see the port up (every port
  // is probed) and hand it to the heavy sweep.
  FastPathOptions fast;
  fast.rebalance_delay = 20ms;
  Harness h("fat-tree:levels=2,radix=4", EngineKind::kUpdn, 16, fast);
  ASSERT_TRUE(h.wait_for(master));
  const PortNum p = h.port_to("leaf1", "spine1");
  ASSERT_TRUE(h.sim->link_down("leaf1", p).ok());
  ASSERT_TRUE(h.wait_for([](const FabricState& s) { return s.reroutes >= 1 && s.sweeps >= 2; }));
  ASSERT_TRUE(h.wait_for([&](const FabricState& s) {
    return master(s) && !s.topology->port(*s.topology->find_by_name("leaf1"), p).connected();
  }));
  ASSERT_TRUE(h.sim->link_up("leaf1", p).ok());
  ASSERT_TRUE(h.wait_for([&](const FabricState& s) {
    return master(s) && s.topology->port(*s.topology->find_by_name("leaf1"), p).connected();
  })) << "the link that came back was not swept in";
  const auto s = h.publisher.current();
  EXPECT_GE(s->sweeps, 3U);
  h.stop();
  expect_every_lid_answers(h, *s);
}

}  // namespace
}  // namespace subnetd::daemon

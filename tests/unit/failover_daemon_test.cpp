// The SubnetManager and switch-local fast failover (issue 14): after its
// heavy sweep the SM has armed proven groups on every simulated switch by
// SMP, so a cable cut is routed around by the switches alone (checked with
// the SM stopped: nothing but the switches acts); with fast_failover off
// the same cut strands pairs until the SM repairs. With the SM running, the
// fast path repairs the tables (stage 2) and the re-balancing sweep re-arms
// and clears what the notifications left. Layered routes on several VLs
// are armed per layer and repaired in their layers by the heavy sweep;
// dateline routes per (switch, SL), and routed afresh by it.

#include <gtest/gtest.h>

#include <string>

#include "daemon_test_support.hpp"
#include "routing_test_support.hpp"

namespace subnetd::daemon {
namespace {

using namespace std::chrono_literals;

constexpr const char* kFabric = "fat-tree:levels=3,k=4";

using routing::testing::switch_links;

bool event_says(testing::SimSm& h, std::string_view text) {
  for (const state::Event& e :
       h.events.recent_since(0, 100000).value_or(std::vector<state::Event>{})) {
    if (e.message.find(text) != std::string::npos) return true;
  }
  return false;
}

// Cuts each switch link in turn, the SM stopped, and counts those the
// switches route around alone; no state they reach may loop.
std::uint32_t recovered_alone(testing::SimSm& h) {
  std::uint32_t recovered = 0;
  for (const PortRef& l : switch_links(h.sim->topology())) {
    EXPECT_TRUE(h.sim->link_down(l).ok());
    h.sim->run_for(50us);
    const auto fc = h.sim->check_failover_forwarding();
    EXPECT_EQ(fc.loops, 0U) << fc.first_problem;
    if (fc.changed > 0 && fc.unreachable_sources == 0) ++recovered;
    EXPECT_TRUE(h.sim->restore_link(l).ok());
    h.sim->clear_all_failover_state();
  }
  return recovered;
}

TEST(FailoverDaemon, TheSmArmsEverySwitchAndTheSwitchesRecoverAlone) {
  testing::SimSm h(kFabric, [](Config& cfg) { cfg.routing.engine = EngineKind::kFtree; });
  h.start();
  ASSERT_TRUE(h.settle());
  EXPECT_TRUE(event_says(h, "fast failover armed on 20 of 20 switches")) << "no arming event";
  EXPECT_TRUE(event_says(h, "32 of 32 single link failures recovered by the switches alone"));
  h.stop();  // from here on only the switches act
  for (const PortRef& l : switch_links(h.sim->topology())) {
    ASSERT_TRUE(h.sim->link_down(l).ok());
    h.sim->run_for(50us);
    const auto fc = h.sim->check_failover_forwarding();
    EXPECT_GT(fc.changed, 0U);
    EXPECT_EQ(fc.unreachable_sources, 0U) << fc.first_problem;
    EXPECT_EQ(fc.loops, 0U);
    ASSERT_TRUE(h.sim->restore_link(l).ok());
    h.sim->clear_all_failover_state();
  }
}

TEST(FailoverDaemon, TurnedOffNothingIsArmedAndACutStrandsPairs) {
  testing::SimSm h(kFabric, [](Config& cfg) {
    cfg.routing.engine = EngineKind::kFtree;
    cfg.routing.fast_failover = false;
  });
  h.start();
  ASSERT_TRUE(h.settle());
  EXPECT_FALSE(event_says(h, "fast failover armed"));
  h.stop();
  std::uint64_t unreachable = 0;
  for (const PortRef& l : switch_links(h.sim->topology())) {
    ASSERT_TRUE(h.sim->link_down(l).ok());
    h.sim->run_for(50us);
    unreachable += h.sim->check_failover_forwarding().unreachable_sources;
    ASSERT_TRUE(h.sim->restore_link(l).ok());
  }
  EXPECT_GT(unreachable, 0U);
}

// Stage 2: the fast path rewrites the tables around the cut, the
// re-balancing sweep re-arms the groups for them and clears the switches'
// notification state, after which no switch forwards differently from its
// LFT: the tables alone avoid the dead link.
TEST(FailoverDaemon, StageTwoRepairsReArmsAndClearsTheNotifications) {
  testing::SimSm h(kFabric, [](Config& cfg) { cfg.routing.engine = EngineKind::kFtree; });
  h.start();
  ASSERT_TRUE(h.settle());
  const PortRef cut{*h.sim->topology().find_by_name("agg-p0-0"), h.port_to("agg-p0-0", "core-0")};
  ASSERT_TRUE(h.sim->link_down(cut).ok());
  ASSERT_TRUE(h.settle());  // trap, fast path, re-balancing sweep
  EXPECT_GE(h.events_of(state::EventKind::kReroute), 1U);
  const auto fc = h.sim->check_failover_forwarding();
  EXPECT_EQ(fc.changed, 0U) << fc.switches_changed << " switches still forward around the cut";
  EXPECT_EQ(fc.unreachable_sources, 0U);
  auto v = h.verify(true);
  ASSERT_TRUE(v.ok()) << v.error().message;
}

// Layered routes on several VLs: the groups are per (switch, layer), armed
// by the same SMPs. With the SM stopped, the switches route around what the
// groups cover and nothing loops; with the SM running, the heavy sweep the
// trap starts repairs the tables within their layers (no LID changes its
// SL), re-arms and clears the notifications; asked to re-balance, it
// routes afresh and says so.
TEST(FailoverDaemon, LayeredRoutesAreArmedPerLayerAndRepairedInTheirLayers) {
  constexpr const char* kRandom = "random:switches=12,degree=4,hosts=4,seed=5";
  auto layered = [](Config& cfg) { cfg.routing.engine = EngineKind::kLayered; };
  {
    testing::SimSm h(kRandom, layered);
    h.start();
    ASSERT_TRUE(h.settle());
    ASSERT_GT(h.publisher.current()->routes->num_vls, 1);
    EXPECT_TRUE(event_says(h, "fast failover armed on 12 of 12 switches")) << "no arming event";
    h.stop();  // from here on only the switches act
    EXPECT_GT(recovered_alone(h), 0U);
  }
  testing::SimSm h(kRandom, layered);
  h.start();
  ASSERT_TRUE(h.settle());
  const std::vector<std::uint8_t> before = h.publisher.current()->routes->lid_layer;
  const PortRef cut = switch_links(h.sim->topology()).front();
  ASSERT_TRUE(h.sim->link_down(cut).ok());
  ASSERT_TRUE(h.settle());  // trap, heavy sweep: repaired in layers, re-armed
  EXPECT_TRUE(event_says(h, "repaired in their layers by the heavy sweep"));
  const auto routes = h.publisher.current()->routes;
  EXPECT_EQ(routes->lid_layer, before);
  const auto fc = h.sim->check_failover_forwarding();
  EXPECT_EQ(fc.changed, 0U) << fc.switches_changed << " switches still forward around the cut";
  EXPECT_EQ(fc.unreachable_sources, 0U);
  auto v = h.verify(true);
  ASSERT_TRUE(v.ok()) << v.error().message;

  // Asked to, the SM re-balances: routed afresh, saying that SLs may move.
  const state::SweepReply again = h.rebalance_now();
  ASSERT_TRUE(again.ok) << again.message;
  const auto fresh = h.publisher.current()->routes;
  ASSERT_FALSE(fresh->notes.empty());
  EXPECT_NE(fresh->notes.front().find("re-balance"), std::string::npos) << fresh->notes.front();
  EXPECT_EQ(routes->notes.size(), 1U);  // the repair's own note, not a re-balance
  EXPECT_EQ(routes->notes.front().find("re-balance"), std::string::npos);
  v = h.verify(true);
  ASSERT_TRUE(v.ok()) << v.error().message;
}

// Dimension order on per-hop dateline VLs (a torus whose layers exceed the
// VLs): armed per (switch, SL), the switches route around what the groups
// cover without a loop, and the heavy sweep routes afresh around a cut,
// re-arms and clears the notifications.
TEST(FailoverDaemon, DatelineRoutesAreArmedAndRoutedAfreshAroundACut) {
  constexpr const char* kTorus = "torus:dims=6x6,hosts=1";
  auto dateline = [](Config& cfg) {
    cfg.routing.engine = EngineKind::kLayered;
    cfg.routing.max_vls = 3;  // dimension order's 4 layers do not fit
  };
  {
    testing::SimSm h(kTorus, dateline);
    h.start();
    ASSERT_TRUE(h.settle());
    ASSERT_TRUE(h.publisher.current()->routes->per_hop_vls());
    EXPECT_TRUE(event_says(h, "fast failover armed on 36 of 36 switches")) << "no arming event";
    h.stop();  // from here on only the switches act
    EXPECT_GT(recovered_alone(h), 0U);
  }
  testing::SimSm h(kTorus, dateline);
  h.start();
  ASSERT_TRUE(h.settle());
  const PortRef cut = switch_links(h.sim->topology()).front();
  ASSERT_TRUE(h.sim->link_down(cut).ok());
  ASSERT_TRUE(h.settle());  // trap, heavy sweep: routed afresh, re-armed
  const auto routes = h.publisher.current()->routes;
  ASSERT_TRUE(routes->per_hop_vls());
  const auto fc = h.sim->check_failover_forwarding();
  EXPECT_EQ(fc.changed, 0U) << fc.switches_changed << " switches still forward around the cut";
  EXPECT_EQ(fc.unreachable_sources, 0U);
  auto v = h.verify(true);
  ASSERT_TRUE(v.ok()) << v.error().message;
}

// A re-balance the operator asked for stands when the sweep meant to do
// it fails: the retry routes afresh.
TEST(FailoverDaemon, ARebalanceRequestOutlivesAFailedSweep) {
  testing::SimSm h("random:switches=12,degree=4,hosts=4,seed=5",
                   [](Config& cfg) { cfg.routing.engine = EngineKind::kLayered; });
  h.start();
  ASSERT_TRUE(h.settle());
  ASSERT_TRUE(h.sim->set_drop_probability(1.0).ok());
  const state::SweepReply lost = h.rebalance_now();
  EXPECT_FALSE(lost.ok) << "the sweep should fail with every MAD dropped";
  ASSERT_TRUE(h.sim->set_drop_probability(0.0).ok());
  ASSERT_TRUE(h.settle());  // the retry after the failure
  const auto routes = h.publisher.current()->routes;
  ASSERT_FALSE(routes->notes.empty());
  EXPECT_NE(routes->notes.front().find("re-balance"), std::string::npos) << routes->notes.front();
  auto v = h.verify(true);
  ASSERT_TRUE(v.ok()) << v.error().message;
}

}  // namespace
}  // namespace subnetd::daemon

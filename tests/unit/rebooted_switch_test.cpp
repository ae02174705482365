// A switch that loses its tables (power cycle) is reprogrammed whole
// (issue 12.1): the SM's record of what each switch holds must not trust a
// switch that came back empty. The hard case is the switch the SM's own
// port is cabled to: while it is empty, no LID-routed trap from anywhere
// reaches the SM, and a programming pass that diffs against what the
// switch "holds" sends it nothing.
//
// Checked through the simulator's own tables: after the sweep, every LID
// answers through the switches, and a read-back verification (every LFT
// block read from every switch) finds no difference from the published
// tables.

#include <gtest/gtest.h>

#include "bringup_test_support.hpp"
#include "daemon_test_support.hpp"

namespace subnetd::daemon {
namespace {

using namespace subnetd::state;
using bringup_testing::lid_routed_drops;
using bringup_testing::probe_every_lid;
using testing::master;

constexpr const char* kFabric = "fat-tree:levels=2,radix=8";  // the SM hangs off leaf0

void expect_tables_held(testing::SimSm& h) {
  auto v = h.verify(/*read_back=*/true);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->verdict, Verdict::kOk) << v->message;
  ASSERT_TRUE(v->read_back.has_value());
  EXPECT_EQ(v->read_back->blocks_differ, 0U)
      << (v->read_back->differences.empty() ? "" : v->read_back->differences.front());
  EXPECT_EQ(v->read_back->switches_silent, 0U);
  EXPECT_GT(v->read_back->blocks_read, 0U);
}

void expect_every_lid_answers(testing::SimSm& h) {
  const auto s = h.publisher.current();
  h.stop();
  const std::uint64_t drops = lid_routed_drops(h.sim->stats());
  const auto probe = probe_every_lid(*h.sim, *s->topology, *s->lids, s->sm_lid);
  EXPECT_EQ(probe.answered, probe.probed);
  EXPECT_TRUE(probe.failures.empty()) << probe.failures.front();
  EXPECT_EQ(lid_routed_drops(h.sim->stats()), drops);
}

class RebootedSwitch : public ::testing::TestWithParam<const char*> {};

// The switch comes back empty; an operator's light sweep (what `subnetctl
// sweep --light` does) finds it and the heavy sweep reprograms all of it.
TEST_P(RebootedSwitch, IsFoundByALightSweepAndReprogrammedWhole) {
  testing::SimSm h(kFabric, [](Config& cfg) { cfg.routing.engine = EngineKind::kUpdn; });
  h.start();
  ASSERT_TRUE(h.settle());
  ASSERT_TRUE(h.sim->switch_down(GetParam()).ok());
  ASSERT_TRUE(h.sim->switch_up(GetParam()).ok());
  ASSERT_TRUE(h.settle());  // whatever the traps led to
  auto light = h.light_sweep_now();
  ASSERT_TRUE(light.ok()) << light.error().message;
  ASSERT_TRUE(h.settle());
  expect_tables_held(h);
  expect_every_lid_answers(h);
}

// The same found by the periodic light sweep alone.
TEST_P(RebootedSwitch, IsFoundByThePeriodicLightSweep) {
  testing::SimSm h(kFabric, [](Config& cfg) {
    cfg.routing.engine = EngineKind::kUpdn;
    cfg.sweep.interval = std::chrono::seconds{10};
  });
  h.start();
  // Timers due within 5 s run (trap debounce, re-balancing); the 10 s
  // light-sweep period only when the test advances the clock.
  ASSERT_TRUE(h.settle(std::chrono::seconds{5}));
  ASSERT_TRUE(h.sim->switch_down(GetParam()).ok());
  ASSERT_TRUE(h.sim->switch_up(GetParam()).ok());
  for (int period = 0; period < 3; ++period) {
    h.clock.advance(std::chrono::seconds{10});
    ASSERT_TRUE(h.settle(std::chrono::seconds{5})) << "period " << period;
  }
  expect_tables_held(h);
  expect_every_lid_answers(h);
}

// A manual heavy sweep after the reboot (which used to send 0 blocks).
TEST_P(RebootedSwitch, AHeavySweepReprogramsItWhole) {
  testing::SimSm h(kFabric, [](Config& cfg) { cfg.routing.engine = EngineKind::kUpdn; });
  h.start();
  ASSERT_TRUE(h.settle());
  ASSERT_TRUE(h.sim->switch_down(GetParam()).ok());
  ASSERT_TRUE(h.sim->switch_up(GetParam()).ok());
  ASSERT_TRUE(h.settle());
  const SweepReply r = h.sweep_now();
  EXPECT_TRUE(r.ok) << r.message;
  ASSERT_TRUE(h.settle());
  expect_tables_held(h);
  expect_every_lid_answers(h);
}

// leaf0 carries the SM's port; spine0 does not.
INSTANTIATE_TEST_SUITE_P(Switches, RebootedSwitch, ::testing::Values("leaf0", "spine0"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

// Read-back finds what a switch really holds: a block changed behind the
// SM's back is a difference, named.
TEST(ReadBack, FindsATableChangedBehindTheSmsBack) {
  testing::SimSm h(kFabric, [](Config& cfg) { cfg.routing.engine = EngineKind::kUpdn; });
  h.start();
  ASSERT_TRUE(h.settle());
  expect_tables_held(h);
  // One entry of spine1 rewritten by someone else: no trap, no state
  // change, so only reading the table back can find it.
  const routing::Topology& wiring = h.sim->topology();
  NodeId spine1;
  for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(wiring.num_nodes()); ++i) {
    if (wiring.node(NodeId{i}).description == "spine1") spine1 = NodeId{i};
  }
  ASSERT_TRUE(spine1.valid());
  const Lid lid = h.publisher.current()->sm_lid;
  const auto held = h.sim->lft_entry(spine1, lid);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(h.sim->set_lft_entry(spine1, lid, static_cast<PortNum>(*held == 1 ? 2 : 1)).ok());
  EXPECT_FALSE(h.sim->set_lft_entry(spine1, Lid{0xFFFFFF}, 1).ok());
  auto v = h.verify(/*read_back=*/true);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->verdict, Verdict::kTablesDiffer) << v->message;
  ASSERT_TRUE(v->read_back.has_value());
  EXPECT_EQ(v->read_back->blocks_differ, 1U);
  ASSERT_EQ(v->read_back->differences.size(), 1U);
  EXPECT_NE(v->read_back->differences.front().find("spine1"), std::string::npos)
      << v->read_back->differences.front();
  // Verification reports; it does not repair (a sweep does).
  auto again = h.verify(/*read_back=*/true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->verdict, Verdict::kTablesDiffer);
}

}  // namespace
}  // namespace subnetd::daemon

// The SM side of fast failover on the wire (discovery/failover_armer.hpp,
// issue 14 deliverable 2): a verified plan armed by vendor SMPs on the
// simulated switches makes every single link failure of a fat tree
// recover with no SM; arming again sends only what differs; switches
// without the feature, of another vendor, or that never answer cost at
// most one request each per daemon run and keep working through the SM's
// repairs alone.

#include "discovery/failover_armer.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/mad/failover.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "routing/engine.hpp"
#include "routing/failover_plan.hpp"
#include "routing/failover_verify.hpp"
#include "routing_test_support.hpp"

namespace subnetd::discovery {
namespace {

using routing::FailoverPlan;
using sim::SimFabric;
using sim::SimOptions;

struct Rig {
  std::unique_ptr<SimFabric> sim;
  daemon::BringUpResult up;
  std::shared_ptr<const FailoverPlan> plan;
};

Rig bring_up(const std::string& spec, SimOptions so = {}) {
  Rig r;
  auto topo = daemon::load_topology(spec);
  EXPECT_TRUE(topo.ok());
  if (!topo.ok()) return r;
  auto made = SimFabric::create(std::move(topo).value(), so);
  EXPECT_TRUE(made.ok());
  if (!made.ok()) return r;
  r.sim = std::move(made).value();
  routing::WorkerPool pool(1);
  daemon::BringUpOptions opts;
  opts.engine = "ftree";
  auto up = daemon::BringUp::run_blocking(*r.sim, pool, opts, nullptr);
  EXPECT_TRUE(up.ok()) << (up.ok() ? "" : up.error().message);
  if (!up.ok()) return r;
  r.up = std::move(up).value();
  auto plan = FailoverPlan::build(r.up.sweep.topology, r.up.lids.map, *r.up.routes, pool, {});
  EXPECT_TRUE(plan.ok());
  if (!plan.ok()) return r;
  auto verdict =
      routing::verify_failover(r.up.sweep.topology, r.up.lids.map, *r.up.routes, *plan, {}, pool);
  EXPECT_TRUE(verdict.ok());
  r.plan = std::make_shared<const FailoverPlan>(std::move(plan).value());
  return r;
}

FlowOptions quick() {
  FlowOptions f;
  f.window = 64;
  f.timeout = std::chrono::milliseconds{2};
  f.retries = 1;
  return f;
}

using routing::testing::switch_links;

TEST(FailoverArmer, ArmedBySmpEverySingleFailureIsRecoveredByTheSwitches) {
  Rig r = bring_up("fat-tree:levels=3,k=4");
  ASSERT_NE(r.plan, nullptr);
  FailoverArmer armer;
  auto rep = armer.arm_blocking(*r.sim, r.up.sweep, r.plan, quick());
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  const std::uint32_t switches = 20;
  EXPECT_EQ(rep->switches, switches);
  EXPECT_EQ(rep->capable, switches);
  EXPECT_EQ(rep->armed, switches);
  EXPECT_EQ(rep->info_gets, switches);
  EXPECT_EQ(rep->info_sets, switches);
  EXPECT_EQ(rep->notify_sets, switches);
  EXPECT_EQ(rep->lid_blocks_sent, switches * (r.plan->max_lid().value / 64 + 1));
  EXPECT_TRUE(rep->failures.empty());
  EXPECT_EQ(armer.armed_switches(), switches);

  const auto links = switch_links(r.sim->topology());
  ASSERT_EQ(links.size(), 32U);
  for (const PortRef& l : links) {
    ASSERT_TRUE(r.sim->link_down(l).ok());
    r.sim->run_for(std::chrono::microseconds{50});
    const sim::FailoverCheck fc = r.sim->check_failover_forwarding();
    EXPECT_GT(fc.changed, 0U);
    EXPECT_EQ(fc.unreachable_sources, 0U) << fc.first_problem;
    EXPECT_EQ(fc.loops, 0U);
    ASSERT_TRUE(r.sim->restore_link(l).ok());
    // Stage 2's clean-up: every armed switch forgets its notifications.
    auto cleared = run_blocking<Result<ArmReport>>(
        *r.sim, [&](MadEngine& e) { return armer.clear_notifications(e, r.up.sweep, quick()); });
    ASSERT_TRUE(cleared.ok());
    EXPECT_EQ(cleared->notify_sets, switches);
    EXPECT_EQ(r.sim->check_failover_forwarding().changed, 0U);
  }
}

TEST(FailoverArmer, ArmingAgainSendsOnlyWhatDiffers) {
  Rig r = bring_up("fat-tree:levels=3,k=4");
  ASSERT_NE(r.plan, nullptr);
  FailoverArmer armer;
  auto first = armer.arm_blocking(*r.sim, r.up.sweep, r.plan, quick());
  ASSERT_TRUE(first.ok());
  auto again = armer.arm_blocking(*r.sim, r.up.sweep, r.plan, quick());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->info_gets, 0U);
  EXPECT_EQ(again->info_sets, 0U);
  EXPECT_EQ(again->group_blocks_sent + again->lid_blocks_sent + again->notify_sets, 0U);
  EXPECT_EQ(again->armed, 20U);
  EXPECT_GT(again->blocks_unchanged, 0U);

  // The same fabric routed without one link: only some blocks change.
  routing::Topology cut = r.up.sweep.topology;
  const PortRef l = switch_links(cut).front();
  cut.disconnect(l);
  routing::WorkerPool pool(1);
  auto engine = routing::make_engine("ftree");
  ASSERT_TRUE(engine.ok());
  auto routes = (*engine)->compute(cut, r.up.lids.map, {}, pool, {});
  ASSERT_TRUE(routes.ok());
  auto plan2 = FailoverPlan::build(cut, r.up.lids.map, *routes, pool, {});
  ASSERT_TRUE(plan2.ok());
  auto changed = armer.arm_blocking(
      *r.sim, r.up.sweep, std::make_shared<const FailoverPlan>(std::move(plan2).value()), quick());
  ASSERT_TRUE(changed.ok());
  EXPECT_GT(changed->group_blocks_sent + changed->lid_blocks_sent, 0U);
  EXPECT_LT(changed->lid_blocks_sent, first->lid_blocks_sent);
  EXPECT_GT(changed->blocks_unchanged, 0U);
}

TEST(FailoverArmer, SwitchesWithoutTheFeatureAreAskedOnceAndLeftAlone) {
  SimOptions so;
  so.failover_capable = false;
  Rig r = bring_up("fat-tree:levels=2,radix=4", so);
  ASSERT_NE(r.plan, nullptr);
  FailoverArmer armer;
  auto rep = armer.arm_blocking(*r.sim, r.up.sweep, r.plan, quick());
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->not_capable, 6U);
  EXPECT_EQ(rep->capable, 0U);
  EXPECT_EQ(rep->armed, 0U);
  EXPECT_EQ(rep->lid_blocks_sent, 0U);
  auto again = armer.arm_blocking(*r.sim, r.up.sweep, r.plan, quick());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->info_gets, 0U);
  EXPECT_EQ(again->not_capable, 6U);
  EXPECT_EQ(again->smps.submitted, 0U);
}

TEST(FailoverArmer, AnotherVendorsSwitchesAreNeverAsked) {
  SimOptions so;
  so.vendor_id = 0x0002C9;  // another vendor's ID: its 0xFF3x attributes mean other things
  so.lid_bits = 16;
  Rig r = bring_up("fat-tree:levels=2,radix=4", so);
  ASSERT_NE(r.plan, nullptr);
  FailoverArmer armer;
  auto rep = armer.arm_blocking(*r.sim, r.up.sweep, r.plan, quick());
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->foreign, 6U);
  EXPECT_EQ(rep->smps.submitted, 0U);
  EXPECT_EQ(r.sim->stats().drops_of(sim::DropReason::kVendorAttribute), 0U);
}

// Switches that claim subnetd's vendor ID but drop vendor SMPs (as ibsim
// does with every vendor attribute): one timeout each, then remembered.
TEST(FailoverArmer, SilentSwitchesCostOneTimeoutPerRun) {
  SimOptions so;
  so.vendor_id = 0x0002C9;
  so.lid_bits = 16;
  Rig r = bring_up("fat-tree:levels=2,radix=4", so);
  ASSERT_NE(r.plan, nullptr);
  SweepResult sweep = r.up.sweep;
  for (const NodeId n : sweep.topology.switches()) {
    sweep.topology.mutable_node(n).vendor_id = mad::kSubnetdVendorId;
  }
  FailoverArmer armer;
  FlowOptions f = quick();
  f.retries = 0;
  auto rep = armer.arm_blocking(*r.sim, sweep, r.plan, f);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->newly_silent, 6U);
  EXPECT_EQ(rep->silent, 6U);
  EXPECT_EQ(rep->smps.timeouts, 6U);
  EXPECT_EQ(rep->armed, 0U);
  auto again = armer.arm_blocking(*r.sim, sweep, r.plan, f);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->smps.submitted, 0U);
  EXPECT_EQ(again->silent, 6U);
  EXPECT_EQ(again->newly_silent, 0U);
  // A switch that rebooted is asked again.
  armer.forget(sweep.topology.node(sweep.topology.switches().front()).guid);
  auto third = armer.arm_blocking(*r.sim, sweep, r.plan, f);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->info_gets, 1U);
}

}  // namespace
}  // namespace subnetd::discovery

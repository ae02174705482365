// SubnetManager: switch-local fast failover (issue 14). After every heavy
// sweep the SM computes the failover groups for the tables it published,
// proves them with the failover verifier, and arms them (diff-only) on the
// switches whose vendor ID and FailoverInfo say they have the feature. A
// link failure is then recovered by the switches in microseconds (stage 1);
// the fast path still repairs the LFTs (stage 2), and the re-balancing sweep
// that follows every repair re-arms the groups and clears the notification
// state the failure left.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "daemon/subnet_manager.hpp"
#include "discovery/mad/failover.hpp"
#include "routing/failover_verify.hpp"

namespace subnetd::daemon {

namespace asio = boost::asio;

asio::awaitable<void> SubnetManager::arm_fast_failover(std::shared_ptr<const BringUpResult> r) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  auto gone = [&] { return alive.expired() || stopped_; };
  if (!cfg_.routing.fast_failover) {
    failover_summary_ = "off (routing.fast_failover: false)";
    co_return;
  }
  if (r->routes->updown_rank.empty() && !r->routes->layered_without_order()) {
    failover_summary_ = fmt::format(
        "not armed: engine {} has neither an up/down order nor layers to prove groups against",
        r->routes->engine);
    co_return;
  }
  // Only switches that may have the feature are worth a plan: subnetd's
  // vendor ID, and not known to lack it or to drop vendor SMPs.
  const routing::Topology& swept = r->sweep.topology;
  std::uint32_t candidates = 0, foreign = 0;
  for (const NodeId n : swept.switches()) {
    const routing::Node& node = swept.node(n);
    if (node.vendor_id != discovery::mad::kSubnetdVendorId) {
      ++foreign;
      continue;
    }
    const auto cap = armer_.capability(node.guid);
    if (cap == discovery::FailoverArmer::Capability::kUnknown ||
        cap == discovery::FailoverArmer::Capability::kCapable) {
      ++candidates;
    }
  }
  if (candidates == 0) {
    failover_summary_ = fmt::format(
        "not armed: no switch has the feature ({} of another vendor, {} without it or silent)",
        foreign, swept.num_switches() - foreign);
    co_return;
  }

  // The tables the switches hold now: the sweep's, or as the fast path
  // repaired them while it programmed (same switch indices).
  std::shared_ptr<const routing::Routes> routes = routes_now_ ? routes_now_ : r->routes;
  std::shared_ptr<const routing::Topology> topo =
      topology_now_ ? topology_now_
                    : std::shared_ptr<const routing::Topology>(r, &r->sweep.topology);
  const routing::LidMap& lids = r->lids.map;
  routing::FailoverVerifyOptions vo;
  vo.require_coverage = cfg_.routing.failover_require_coverage;
  const auto stop = stop_source_.get_token();
  struct Planned {
    routing::FailoverPlan plan;
    routing::FailoverVerifyReport verify;
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto compute = [&]() -> Result<Planned> {
    auto plan = routing::FailoverPlan::build(*topo, lids, *routes, pool_, stop);
    if (!plan.ok()) return plan.error();
    auto v = routing::verify_failover(*topo, lids, *routes, *plan, vo, pool_, stop);
    if (!v.ok()) return v.error();
    return Planned{std::move(plan).value(), std::move(v).value()};
  };
  auto planned = co_await compute_.run(compute);
  if (gone()) co_return;
  if (!planned.ok()) {
    if (planned.error().code == Errc::kCancelled) co_return;
    failover_summary_ = "not armed: " + planned.error().message;
    spdlog::warn("fast failover: groups refused, not armed: {}", planned.error().message);
    events_.append(state::EventKind::kFailover, std::nullopt, std::nullopt,
                   "fast failover not armed: " + planned.error().message);
    co_return;
  }
  const double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const routing::FailoverVerifyReport vr = planned->verify;
  failover_plan_ = std::make_shared<const routing::FailoverPlan>(std::move(planned->plan));
  if (vr.links_with_gaps != 0) {
    spdlog::warn(
        "fast failover: {} of {} single link failures leave pairs to the SM's repair ({} "
        "(switch, destination) pairs); first: {}",
        vr.links_with_gaps, vr.links_checked, vr.gap_pairs, vr.first_gap);
  }

  const BringUpOptions opts = bring_up_options(cfg_);
  const auto t_arm = std::chrono::steady_clock::now();
  auto armed = co_await armer_.arm(engine_, r->sweep, failover_plan_, opts.program.pipeline);
  if (gone()) co_return;
  if (!armed.ok()) {
    failover_summary_ = "arming failed: " + armed.error().message;
    spdlog::error("fast failover: {}", armed.error().message);
    co_return;
  }
  const discovery::ArmReport& a = *armed;
  for (const std::string& f : a.failures) spdlog::warn("fast failover: {}", f);
  const double arm_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_arm).count();
  failover_summary_ = fmt::format(
      "armed on {} of {} switches ({} without the feature, {} silent, {} of another vendor); "
      "{} group and {} LID group blocks sent, {} unchanged, {} SMPs in {:.0f} ms; groups "
      "computed and verified in {:.0f} ms: {} of {} single link failures recovered by the "
      "switches alone",
      a.armed, a.switches, a.not_capable, a.silent, a.foreign, a.group_blocks_sent,
      a.lid_blocks_sent, a.blocks_unchanged, a.smps.submitted, arm_ms, plan_ms,
      vr.links_checked - vr.links_with_gaps, vr.links_checked);
  spdlog::info("fast failover: {}", failover_summary_);
  events_.append(state::EventKind::kFailover, std::nullopt, std::nullopt,
                 "fast failover " + failover_summary_);

  // Stage 2's clean-up: failures since the last arming (repaired by the
  // fast path, or links that went down and came back, switches that
  // rebooted) may have left notification state on the switches, and a
  // removed port stays removed until it is cleared: the groups just armed
  // are for the tables in place, so it all goes. One SMP per armed switch.
  if (a.armed != 0) {
    auto cleared = co_await armer_.clear_notifications(engine_, r->sweep, opts.program.pipeline);
    if (gone()) co_return;
    if (!cleared.ok()) {
      spdlog::warn("fast failover: clearing notifications: {}", cleared.error().message);
    } else if (!cleared->failures.empty()) {
      spdlog::warn("fast failover: clearing notifications: {}", cleared->failures.front());
    }
  }
}

asio::awaitable<void> SubnetManager::clear_failover_notifications() {
  SUBNETD_ASSERT_ON(strand_);
  if (!current_ || armer_.armed_switches() == 0) co_return;
  const std::weak_ptr<int> alive = life_;
  const std::shared_ptr<const BringUpResult> r = current_;
  const BringUpOptions opts = bring_up_options(cfg_);
  auto cleared = co_await armer_.clear_notifications(engine_, r->sweep, opts.program.pipeline);
  if (alive.expired() || stopped_) co_return;
  if (!cleared.ok()) {
    spdlog::warn("fast failover: clearing notifications: {}", cleared.error().message);
  } else if (!cleared->failures.empty()) {
    // Switches behind the dead link on the sweep's routes; the
    // re-balancing sweep clears them on its new routes.
    spdlog::info("fast failover: notifications not cleared on {} switch(es) yet: {}",
                 cleared->failures.size(), cleared->failures.front());
  }
  check_idle();
}

}  // namespace subnetd::daemon

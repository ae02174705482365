// SubnetManager: traps and the fast path (see subnet_manager.hpp and
// fast_path.hpp).

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/dump_files.hpp"
#include "daemon/sm_text.hpp"
#include "daemon/subnet_manager.hpp"
#include "discovery/trap_repress.hpp"

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;
namespace mad = discovery::mad;
using Steady = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kTrapDebounce{20};

double us_of(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

}  // namespace

void SubnetManager::on_unsolicited(const mad::Smp& smp, const discovery::Mad& m) {
  SUBNETD_ASSERT_ON(strand_);
  if (smp.attr_id == mad::AttrId::kSmInfo && !smp.is_response()) {
    if (smp.method == mad::Method::kSet) return on_sminfo_set(smp, m);
    // A Get reaches us when the transport has no agent of its own.
    if (own_agent_) {
      if (auto reply =
              own_agent_->answer(smp, m, static_cast<std::uint32_t>(engine_.stats().sent))) {
        (void)engine_.send_unsolicited(*reply);
      }
    }
    return;
  }
  if (smp.method != mad::Method::kTrap || smp.attr_id != mad::AttrId::kNotice) return;
  // Repress at once, as the SMA keeps repeating the trap until we do.
  if (auto r = engine_.send_unsolicited(discovery::trap_repress(smp, m)); !r.ok()) {
    spdlog::warn("TrapRepress: {}", r.error().message);
  }
  const mad::Notice notice = mad::Notice::decode(mad::data_of(smp));
  TrapEvent ev;
  ev.received_wall = Steady::now();
  ev.trap_number = notice.trap_number;
  ev.received_at = transport_->now();
  const bool extended = cfg_.addressing.lid_bits != 16;
  ev.issuer_lid = notice.trap_number == 128 ? notice.trap128_lid(extended) : notice.issuer_lid;
  spdlog::debug("trap {} from LID {:#x}", ev.trap_number, ev.issuer_lid);
  if (notice.trap_number != 128 && hooks_.trap_received && !stopped_ &&
      election_.state() == discovery::SmState::kMaster && first_copy(notice.issuer_lid, smp.tid)) {
    hooks_.trap_received(notice);
  }
  // Trap 144 (a port's CapabilityMask changed: an SM started there, or
  // any program opened the port's issm device): ask it for its SMInfo.
  if (notice.trap_number == 144 && !stopped_ && election_.state() == discovery::SmState::kMaster) {
    asio::co_spawn(strand_, trap144_received(ev.issuer_lid), asio::detached);
    return;
  }
  // A standby leaves the fabric to the master (traps reach it only from a
  // switch that still names us its master).
  if (notice.trap_number != 128 || stopped_ || standing_by()) return;
  if (hooks_.fast_path && hooks_.fast_path(ev)) return;
  // Traps that arrive together are one repair: the worker takes them in
  // batches, and whatever arrives while it probes joins the next batch.
  pending_traps_.push_back(ev);
  if (!trap_worker_running_) {
    trap_worker_running_ = true;
    asio::co_spawn(strand_, trap_worker(), asio::detached);
  }
}

bool SubnetManager::first_copy(std::uint32_t issuer_lid, std::uint64_t tid) {
  SUBNETD_ASSERT_ON(strand_);
  const std::pair key{issuer_lid, tid};
  if (std::find(recent_traps_.begin(), recent_traps_.end(), key) != recent_traps_.end()) {
    return false;
  }
  recent_traps_[recent_trap_next_] = key;
  recent_trap_next_ = (recent_trap_next_ + 1) % recent_traps_.size();
  return true;
}

asio::awaitable<void> SubnetManager::trap_worker() {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  while (!pending_traps_.empty() && !stopped_) {
    engine_.drain();  // traps already waiting join this batch
    std::vector<TrapEvent> traps;
    traps.swap(pending_traps_);
    co_await handle_traps(std::move(traps));
    if (alive.expired()) co_return;
  }
  trap_worker_running_ = false;
  check_idle();
}

std::vector<routing::FailedLink> SubnetManager::to_failed_links(const FastPath& fast,
                                                                std::uint64_t since) const {
  const routing::Topology& t = fast.rerouter().topology();
  std::vector<routing::FailedLink> out;
  auto add = [&](Guid g, PortNum p) {
    auto n = t.find_by_guid(g);
    if (!n || t.node(*n).type != routing::NodeType::kSwitch || p == 0 || p > t.node(*n).num_ports ||
        !t.port(*n, p).connected()) {
      return;
    }
    out.push_back({t.node(*n).switch_index, p});
  };
  for (const KnownDown& k : known_down_) {
    if (k.seq <= since) continue;
    add(k.a, k.pa);
    add(k.b, k.pb);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void SubnetManager::remember_down(const FastPath& fast,
                                  const std::vector<routing::FailedLink>& failed) {
  SUBNETD_ASSERT_ON(strand_);
  const routing::Topology& t = fast.rerouter().topology();
  for (const routing::FailedLink& f : failed) {
    const NodeId node = t.switch_node(f.sw);
    const routing::Port& port = t.port(node, f.port);
    if (!port.connected()) continue;
    const Guid a = t.node(node).guid;
    const Guid b = t.node(port.remote_node).guid;
    // A switch link is reported from both ends: once, from its smaller end.
    if (t.node(port.remote_node).type == routing::NodeType::kSwitch &&
        std::pair(b.value, port.remote_port) < std::pair(a.value, f.port)) {
      continue;
    }
    known_down_.push_back(KnownDown{++failure_seq_, a, f.port, b, port.remote_port});
    health_link_down(a, f.port, b, port.remote_port);
    events_.append(state::EventKind::kLinkDown, a, f.port,
                   fmt::format("link down: {}[{}] - {}[{}]", guid_str(a), f.port, guid_str(b),
                               port.remote_port));
  }
  // A sweep past its discovery routes its SMPs around them from now on:
  // handle_traps does it once the repair is handed to the transport, as
  // new directed routes for the whole fabric take milliseconds at k=36.
  // A long flap storm must not grow this without bound: what every sweep
  // since has folded in is of no further use.
  constexpr std::size_t kKeep = 65536;
  if (known_down_.size() > kKeep) {
    known_down_.erase(known_down_.begin(), known_down_.begin() + static_cast<std::ptrdiff_t>(
                                                                     known_down_.size() - kKeep));
  }
}

void SubnetManager::reroute_running_sweep_paths() {
  SUBNETD_ASSERT_ON(strand_);
  if (sweep_ && sweep_->result && sweep_->phase != Phase::kSweep) reroute_sweep_paths(*sweep_);
}

void SubnetManager::apply_to_new_tables(SweepInProgress& ctx,
                                        std::optional<Steady::time_point> trap_at) {
  SUBNETD_ASSERT_ON(strand_);
  if (!ctx.fast) return;
  const auto failed = to_failed_links(*ctx.fast, ctx.applied_seq);
  ctx.applied_seq = failure_seq_;
  if (failed.empty()) return;
  // From the trap when it came now, else (the rerouter was still being
  // built) from when the repair could begin.
  const auto start = trap_at.value_or(Steady::now());
  auto rep = ctx.fast->repair(failed);
  if (!rep.ok() || rep->verdict != routing::RepairReport::Verdict::kRepaired) {
    const std::string why = rep.ok() ? rep->reason : rep.error().message;
    spdlog::warn("fast path: the new tables cannot be repaired ({}); the next sweep recomputes",
                 why);
    // The programmer falls back to the computed rows; a sweep follows.
    ctx.fast.reset();
    request_heavy_sweep(std::chrono::milliseconds{0}, "repair of the new tables refused");
    return;
  }
  ctx.repaired = true;
  std::vector<routing::DirtyBlock> blocks(rep->blocks.begin(), rep->blocks.end());
  ctx.resend.insert(ctx.resend.end(), blocks.begin(), blocks.end());
  auto push = ctx.fast->push(engine_, blocks);
  const std::string what = fmt::format(
      "reroute (during programming, in the new tables): {} switch link(s), {} CA link(s) down; "
      "{} LFT entries in {} blocks on {} switches",
      rep->switch_links_failed, rep->ca_links_failed, rep->changes.size(), blocks.size(),
      push->switches);
  const std::string details = fmt::format(
      "\"switch_links\":{},\"ca_links\":{},\"entries\":{},\"blocks\":{},"
      "\"switches\":{},\"repair_us\":{:.1f},\"during_programming\":true",
      rep->switch_links_failed, rep->ca_links_failed, rep->changes.size(), blocks.size(),
      push->switches, us_of(rep->t_total));
  auto announce = [this, push, what, details, start]() -> asio::awaitable<void> {
    const std::weak_ptr<int> alive = life_;
    // The event, once every block is handed to the transport (the latency
    // of the repair), before its answers are awaited.
    co_await push->flow.all_sent();
    if (alive.expired() || stopped_) co_return;
    const auto latency = push->flow.all_sent_at() - start;
    const std::string msg =
        fmt::format("{}, handed {:.0f} us after the trap", what, us_of(latency));
    spdlog::info("{}", msg);
    events_.append(state::EventKind::kReroute, std::nullopt, std::nullopt, msg,
                   fmt::format("{{\"latency_us\":{:.1f},{}}}", us_of(latency), details));
  };
  asio::co_spawn(strand_, std::move(announce), asio::detached);
  asio::co_spawn(strand_, confirm_push(push, ctx.fast), asio::detached);
}

asio::awaitable<void> SubnetManager::handle_traps(std::vector<TrapEvent> traps) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  auto sweep_soon = [&](std::string why) {
    request_heavy_sweep(
        kTrapDebounce,
        fmt::format(
            "trap 128 from LID {:#x}{}: {}", traps[0].issuer_lid,
            traps.size() > 1 ? fmt::format(" and {} more", traps.size() - 1) : std::string(), why));
  };
  // The published tables' fast path; in a first bring-up's programming
  // step, the new tables' (nothing is published yet).
  std::shared_ptr<FastPath> fp = fast_;
  if (!fp && sweep_ && sweep_->fast) fp = sweep_->fast;
  if (!fp || fp->rerouter().stale()) {
    // The rerouter keeps routes up*/down*; routes on several VLs are
    // repaired within their layers (route_step), in the heavy sweep.
    const routing::Routes* routes = current_ ? current_->routes.get() : nullptr;
    const bool layered = routes != nullptr && routes->layered_without_order();
    sweep_soon(!layered ? std::string("no fast path")
               : routes->per_hop_vls()
                   ? std::string("no fast path for dimension-order routes on per-hop VLs: "
                                 "routed afresh by the heavy sweep")
                   : fmt::format("no fast path for routes on {} VLs: repaired in their "
                                 "layers by the heavy sweep",
                                 routes->num_vls));
    co_return;
  }
  const auto start = traps.front().received_wall;
  const auto start_transport = traps.front().received_at;
  std::vector<std::uint32_t> issuers;
  issuers.reserve(traps.size());
  for (const TrapEvent& t : traps) issuers.push_back(t.issuer_lid);
  auto found = co_await fp->identify(engine_, issuers);
  if (alive.expired() || stopped_) co_return;
  if (!found.ok()) {
    spdlog::warn("fast path: probing the trapping switches failed: {}", found.error().message);
    sweep_soon("probes failed");
    co_return;
  }
  if (found->failed.empty()) {
    // Nothing went down: a link came up (or an answer was missing), which is
    // the heavy sweep's; or a repeat of a trap already handled.
    if (found->link_up || found->unanswered != 0 || found->not_switches != 0) {
      sweep_soon(found->link_up ? "a link came up" : "some ports did not answer");
    }
    co_return;
  }
  const std::uint64_t seq_before = failure_seq_;
  remember_down(*fp, found->failed);
  // However this ends, the sweep in progress gets directed routes around
  // the links found down, after the repair (SMPs it sends meanwhile over
  // them time out and go again on the new routes: paths_version).
  struct SweepPathsAfter {
    SubnetManager* sm;
    std::weak_ptr<int> alive;
    bool due;  // remember_down recorded a link down
    ~SweepPathsAfter() {
      if (due && !alive.expired()) sm->reroute_running_sweep_paths();
    }
  } sweep_paths_after{this, alive, failure_seq_ != seq_before};
  const bool more_to_see = found->link_up || found->unanswered != 0;

  SweepInProgress* ctx = sweep_.get();
  if (ctx != nullptr && ctx->programming && ctx->fast) {
    // The switches are moving to the new tables: repair those.
    apply_to_new_tables(*ctx, start);
    if (more_to_see) sweep_soon("after reroute: some switches did not answer or a link came up");
    co_return;
  }
  // The published tables (a sweep that published meanwhile has its own).
  std::vector<routing::FailedLink> failed = found->failed;
  if (fast_ && fp != fast_) {
    fp = fast_;
    failed = to_failed_links(*fp, seq_before);
  }
  if (fp != fast_) {
    // Only the new tables exist (first bring-up, programming): done above
    // once they are built; nothing published to repair.
    co_return;
  }
  auto pushed = co_await fp->repair_and_push(engine_, failed, start);
  if (alive.expired() || stopped_) co_return;
  if (!pushed.ok()) {
    spdlog::error("fast path: {}", pushed.error().message);
    fast_.reset();  // the tables on the switches are unknown now: the heavy sweep decides
    sweep_soon("fast path failed");
    co_return;
  }
  PushOutcome& o = *pushed;
  if (o.verdict != routing::RepairReport::Verdict::kRepaired) {
    spdlog::warn("fast path: repair refused, full recompute: {}", o.reason);
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt,
                   "incremental repair refused, full recompute follows: " + o.reason);
    sweep_soon("repair refused");
    co_return;
  }
  if (ctx != nullptr && ctx->programming) {
    // The new tables' rerouter is not built yet: these blocks go out again
    // from the new tables once programming gets to its resends.
    const routing::Topology& from = fp->rerouter().topology();
    const routing::Topology& to = ctx->result->sweep.topology;
    for (const routing::DirtyBlock& b : fp->rerouter().changed_blocks()) {
      if (auto n = to.find_by_guid(from.node(from.switch_node(b.sw)).guid)) {
        ctx->resend.push_back({to.node(*n).switch_index, b.block});
      }
    }
  }

  // The latency end-point is behind us: what follows is bookkeeping.
  ++reroutes_;
  last_reroute_ = o.latency;
  const std::string msg = fmt::format(
      "reroute: {} switch link(s), {} CA link(s) down; {} LFT entries in {} blocks on {} "
      "switches rewritten in {:.0f} us (probes {:.0f} us for {} SMPs, repair {:.0f} us, blocks "
      "handed {:.0f} us after it, the rest {:.0f} us); {} orphan entries",
      o.switch_links, o.ca_links, o.changed_entries, o.blocks, o.switches_programmed,
      us_of(o.latency), us_of(found->duration), found->smps, us_of(o.compute),
      us_of(o.latency - o.repaired), us_of(o.repaired - o.compute - found->duration), o.orphans);
  spdlog::info("{}", msg);
  events_.append(
      state::EventKind::kReroute, std::nullopt, std::nullopt, msg,
      fmt::format("{{\"latency_us\":{:.1f},\"repair_us\":{:.1f},\"switch_links\":{},"
                  "\"ca_links\":{},\"entries\":{},\"blocks\":{},\"switches\":{},"
                  "\"orphans\":{},\"probe_smps\":{}}}",
                  us_of(o.latency), us_of(o.compute), o.switch_links, o.ca_links, o.changed_entries,
                  o.blocks, o.switches_programmed, o.orphans, found->smps));
  publish_repaired(*fp);
  // Multicast trees that crossed a failed link: computed again around it.
  multicast_links_failed(failed);
  (void)start_transport;
  if (o.in_flight) {
    // The answers come in the background; a switch that did not take its
    // blocks is reported then and reprogrammed whole by a sweep.
    asio::co_spawn(strand_, confirm_push(o.in_flight, fp), asio::detached);
  } else {
    asio::co_spawn(strand_, clear_failover_notifications(), asio::detached);
  }
  if (more_to_see) {
    sweep_soon("after reroute: some switches did not answer or a link came up");
  } else {
    request_heavy_sweep(fast_opts_.rebalance_delay, "re-balance after reroute");
  }
}

void SubnetManager::publish_repaired(FastPath& fast) {
  SUBNETD_ASSERT_ON(strand_);
  fast.refresh_paths();
  routes_now_ = std::make_shared<const routing::Routes>(fast.export_routes(strand_pool_));
  topology_now_ = std::make_shared<const routing::Topology>(fast.live_topology());
  if (!cfg_.dump_dir.empty() && current_) {
    // What the switches hold now, for ibdmchk and the interop checks; on
    // disk before the state that announces it.
    if (auto d = write_dump_files(cfg_.dump_dir, *topology_now_, current_->lids.map, *routes_now_,
                                  current_->sweep.sm_node,
                                  mcast_now_ ? mcast_now_.get() : current_->multicast.get());
        !d.ok()) {
      spdlog::warn("dump files: {}", d.error().message);
    }
  }
  publish(publisher_.current()->state == state::SmState::kDiscovering ? state::SmState::kDiscovering
                                                                      : state::SmState::kMaster,
          {});
}

asio::awaitable<void> SubnetManager::confirm_push(std::shared_ptr<PushInFlight> push,
                                                  std::shared_ptr<FastPath> fast) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  co_await push->confirmed();
  if (alive.expired() || stopped_) co_return;
  if (push->blocks_failed != 0) {
    const routing::Topology& t = fast->rerouter().topology();
    std::vector<std::string> names;
    for (const SwitchIndex s : push->failed_switches) {
      const Guid g = t.node(t.switch_node(s)).guid;
      // What these switches hold is unknown: the next programming sends
      // them every block.
      held_unknown_.insert(g);
      if (sweep_ && sweep_->fast == fast) sweep_->push_failed_switches.push_back(g);
      if (names.size() < 5) names.push_back(t.label(t.switch_node(s)));
    }
    const std::string msg = fmt::format(
        "reroute: {} LFT blocks not confirmed by {} switch(es) ({}{}); a sweep "
        "reprograms them",
        push->blocks_failed, push->failed_switches.size(), fmt::join(names, ", "),
        push->failed_switches.size() > names.size() ? ", ..." : "");
    spdlog::warn("{}", msg);
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt, msg);
    request_heavy_sweep(kTrapDebounce, "after reroute: some switches did not answer");
  }
  co_await clear_failover_notifications();
  if (alive.expired() || stopped_) co_return;
  check_idle();
}

}  // namespace subnetd::daemon

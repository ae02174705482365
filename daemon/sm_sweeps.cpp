// SubnetManager: heavy and light sweeps and their scheduling (see
// subnet_manager.hpp for the steps and how traps fold into them).

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unordered_map>

#include "daemon/dump_files.hpp"
#include "daemon/multicast.hpp"
#include "daemon/sm_text.hpp"
#include "daemon/subnet_manager.hpp"
#include "routing/grid_placement.hpp"
#include "routing/text.hpp"

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;
namespace mad = discovery::mad;
using Steady = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kMaxBackoff{30'000};

std::int64_t us(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

void SubnetManager::enter_phase(Phase p) {
  SUBNETD_ASSERT_ON(strand_);
  if (sweep_) sweep_->phase = p;
  if (hooks_.phase) hooks_.phase(p);
}

// ---------------------------------------------------------------- scheduling

void SubnetManager::request_heavy_sweep(std::chrono::milliseconds delay, std::string reason) {
  SUBNETD_ASSERT_ON(strand_);
  if (stopped_) return;
  if (heavy_running_) {
    // The running sweep began before whatever asks now: one more after it,
    // as soon as the most urgent request wants it.
    if (!heavy_again_ || delay < heavy_again_delay_) {
      heavy_again_reason_ = std::move(reason);
      heavy_again_delay_ = delay;
    }
    heavy_again_ = true;
    return;
  }
  // Already scheduled: coalesce, keep the earlier deadline.
  if (heavy_timer_.pending() && heavy_timer_.expiry() <= clock_.now() + delay) return;
  heavy_reason_ = std::move(reason);
  heavy_timer_.start(delay, [this] { start_heavy_sweep(); });
}

void SubnetManager::start_heavy_sweep() {
  SUBNETD_ASSERT_ON(strand_);
  if (stopped_ || heavy_running_) return;
  if (standing_by()) {
    // The master sweeps; we poll it (sm_standby.cpp).
    heavy_timer_.cancel();
    std::vector<state::Completion<state::SweepReply>> waiters;
    waiters.swap(heavy_waiters_);
    for (auto& done : waiters) {
      done(state::SweepReply{false, generation_, "this SM is not master", {}});
    }
    return;
  }
  heavy_timer_.cancel();
  heavy_running_ = true;
  std::vector<state::Completion<state::SweepReply>> waiters;
  waiters.swap(heavy_waiters_);
  asio::co_spawn(strand_, heavy_sweep_task(heavy_reason_, std::move(waiters)), asio::detached);
}

asio::awaitable<void> SubnetManager::heavy_sweep_task(
    std::string reason, std::vector<state::Completion<state::SweepReply>> waiters) {
  const std::weak_ptr<int> alive = life_;
  state::SweepReply reply = co_await heavy_sweep(reason);
  if (alive.expired()) co_return;
  heavy_running_ = false;
  for (auto& done : waiters) done(reply);
  if (stopped_) co_return;
  if (mcast_dirty_) multicast_changed();  // joins and leaves while it ran
  if (heavy_again_) {
    heavy_again_ = false;
    request_heavy_sweep(heavy_again_delay_, std::move(heavy_again_reason_));
  } else if (!heavy_waiters_.empty()) {
    request_heavy_sweep(std::chrono::milliseconds{0}, "requested during the last sweep");
  }
  check_idle();
}

// ---------------------------------------------------------------- heavy sweep

std::size_t SubnetManager::fold(routing::Topology& topo, std::uint64_t since) const {
  SUBNETD_ASSERT_ON(strand_);
  std::size_t folded = 0;
  for (const KnownDown& k : known_down_) {
    if (k.seq <= since) continue;
    auto a = topo.find_by_guid(k.a);
    if (!a || k.pa == 0 || k.pa > topo.node(*a).num_ports) continue;
    const routing::Port& port = topo.port(*a, k.pa);
    if (!port.connected()) continue;
    const PortRef far{port.remote_node, port.remote_port};
    if (topo.node(far.node).guid != k.b) continue;  // recabled since: not that link
    topo.disconnect({*a, k.pa});
    topo.mutable_port(*a, k.pa).state = routing::PortState::kDown;
    topo.mutable_port(far.node, far.port).state = routing::PortState::kDown;
    ++folded;
  }
  return folded;
}

void SubnetManager::reroute_sweep_paths(SweepInProgress& ctx) {
  SUBNETD_ASSERT_ON(strand_);
  BringUpResult& r = *ctx.result;
  const routing::Topology& t = r.sweep.topology;
  auto usable = [&](NodeId n, PortNum p) {
    const Guid g = t.node(n).guid;
    for (const KnownDown& k : known_down_) {
      if (k.seq > ctx.seq0 && ((k.a == g && k.pa == p) || (k.b == g && k.pb == p))) return false;
    }
    return true;
  };
  r.sweep.paths = discovery::bfs_paths(t, r.sweep.sm_node, r.sweep.sm_port, usable, &ctx.reached);
  ++ctx.paths_version;
}

bool SubnetManager::skip_port(const SweepInProgress& ctx, NodeId n, PortNum p) const {
  if (n.value < ctx.reached.size() && ctx.reached[n.value] == 0) return true;
  if (p == 0) return false;
  const Guid g = ctx.result->sweep.topology.node(n).guid;
  for (const KnownDown& k : known_down_) {
    if (k.seq > ctx.seq0 && ((k.a == g && k.pa == p) || (k.b == g && k.pb == p))) return true;
  }
  return false;
}

asio::awaitable<void> SubnetManager::persist_lids(const routing::LidAssignment& lids) {
  SUBNETD_ASSERT_ON(strand_);
  // Every LID now in use is remembered; the store gets the changed ones, on
  // disk before any port is programmed with them (a kill -9 right after
  // READY must not lose them).
  {
    std::unordered_map<Guid, std::size_t> index;
    for (std::size_t i = 0; i < remembered_.size(); ++i) index[remembered_[i].port_guid] = i;
    for (const routing::LidRecord& c : lids.changed) {
      auto it = index.find(c.port_guid);
      if (it != index.end()) {
        remembered_[it->second].base = c.base;
      } else {
        remembered_.push_back(c);
      }
    }
  }
  if (store_ == nullptr || lids.changed.empty()) co_return;
  auto written = std::make_shared<Signal>(strand_);
  auto failure = std::make_shared<std::optional<Error>>();
  // The writer thread runs it after every write queued before; the result
  // comes back to the strand. (The returned future is not waited on.)
  (void)store_->call([changed = lids.changed, lmcs = lids.changed_lmc, written, failure,
                      strand = strand_](Store& s) {
    auto r = s.save_lids(changed, std::span<const std::uint8_t>(lmcs));
    asio::post(strand, [r = std::move(r), written, failure]() mutable {
      if (!r.ok()) *failure = r.error();
      written->set();
    });
    return 0;
  });
  co_await written->wait();
  if (*failure) {
    spdlog::error("store: the new LIDs were not saved ({}); programming them anyway",
                  (*failure)->message);
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt,
                   "new LIDs not saved, a restart may renumber them: " + (*failure)->message);
  }
}

void SubnetManager::remember_grid(std::shared_ptr<const routing::GridPlacement> grid) {
  stored_grid_ = std::move(grid);
}

void SubnetManager::persist_grid(const std::shared_ptr<const routing::GridPlacement>& grid) {
  SUBNETD_ASSERT_ON(strand_);
  if (routing::same_placement(grid, stored_grid_)) return;
  stored_grid_ = grid;
  if (store_ != nullptr) store_->save_grid_placement(grid);
}

void SubnetManager::detect_reboots(const discovery::SweepResult& sweep,
                                   const routing::Routes* expected) {
  SUBNETD_ASSERT_ON(strand_);
  if (!current_ || expected == nullptr) return;
  const routing::Topology& t = sweep.topology;
  const routing::Topology& before = current_->sweep.topology;
  const bool extended = current_->lids.map.space.extended();
  const std::uint32_t want_top =
      extended ? expected->max_lid.value : std::min<std::uint32_t>(expected->max_lid.value, 0xFFFF);
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(SwitchIndex{s});
    const Guid guid = t.node(n).guid;
    auto old = before.find_by_guid(guid);
    if (!old) continue;  // new to us: nothing is held anyway
    const Lid had = current_->lids.map.base_lid(before, *old, 0);
    const Lid has = t.port(n, 0).lid;
    const std::uint32_t top = sweep.lft_top_of(n);
    const bool lid_reset = had.valid() && has != had;
    const bool top_reset = top != discovery::SweepResult::kUnknownTop && top < want_top;
    if (!lid_reset && !top_reset) continue;
    armer_.forget(guid);  // its failover tables are gone with its LFT
    if (held_unknown_.insert(guid).second) {
      const std::string msg = fmt::format(
          "switch {} lost its tables (port-0 LID {:#x}, was {:#x}; LinearFDBTop {}, want {}): "
          "every block is sent again",
          t.label(n), has.value, had.value, top == discovery::SweepResult::kUnknownTop ? 0 : top,
          want_top);
      spdlog::warn("{}", msg);
      events_.append(state::EventKind::kSwitchUp, guid, std::nullopt, msg);
    }
  }
}

asio::awaitable<state::SweepReply> SubnetManager::heavy_sweep(const std::string& reason) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  spdlog::info("heavy sweep ({})", reason);
  if (current_) publish(state::SmState::kDiscovering, {});
  const auto started = std::chrono::system_clock::now();
  const auto t0 = Steady::now();
  auto ctx = std::make_shared<SweepInProgress>(strand_);
  sweep_ = ctx;
  const std::uint64_t seq0 = failure_seq_;
  ctx->seq0 = seq0;
  BringUpOptions opts = bring_up_options(cfg_);
  opts.remembered_lids = remembered_;
  // The tables on the switches now (after any repairs) and their fabric:
  // layered routes are repaired in their layers from them (route_step),
  // unless the operator asked for a re-balance.
  opts.rebalance = std::exchange(rebalance_requested_, false);
  if (routes_now_ && topology_now_) {
    opts.previous_routes = routes_now_;
    opts.previous_topology = topology_now_;
  } else if (current_) {
    opts.previous_routes = current_->routes;
    opts.previous_topology =
        std::shared_ptr<const routing::Topology>(current_, &current_->sweep.topology);
  } else {
    opts.previous_grid = stored_grid_;  // the grid as placed before the restart
  }
  auto r = std::make_shared<BringUpResult>();
  ctx->result = r;

  SweepRecord rec;
  rec.started_at = std::chrono::time_point_cast<state::WallTime::duration>(started);
  rec.kind = SweepKind::kHeavy;
  auto fail = [&](const Error& e) -> state::SweepReply {
    ++sweeps_;
    sweep_.reset();
    if (e.code == Errc::kCancelled || stopped_) {
      return state::SweepReply{false, generation_, "cancelled: subnetd is stopping", {}};
    }
    spdlog::error("bring-up failed ({}): {}", reason, e.message);
    rec.ended_at =
        std::chrono::time_point_cast<state::WallTime::duration>(std::chrono::system_clock::now());
    rec.outcome = SweepOutcome::kFailed;
    rec.message = e.message;
    if (store_ != nullptr) store_->record_sweep(rec);
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt,
                   "bring-up failed: " + e.message);
    publish(current_ ? state::SmState::kMaster : state::SmState::kFailed, e.message);
    // The previous programming stands; try again later, re-balancing if
    // this sweep was to (the operator's request stands).
    if (opts.rebalance) rebalance_requested_ = true;
    request_heavy_sweep(retry_backoff_, "retry after failure");
    retry_backoff_ = std::min(kMaxBackoff, retry_backoff_ * 2);
    return state::SweepReply{false, generation_, e.message, {}};
  };
  auto gone = [&] { return alive.expired() || stopped_; };

  // 1. Discovery (traps are handled meanwhile; what they find is folded in).
  enter_phase(Phase::kSweep);
  auto t = Steady::now();
  auto swept = co_await sweep_step(engine_, opts);
  if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
  if (!swept.ok()) co_return fail(swept.error());
  r->sweep = std::move(swept).value();
  r->times.sweep = Steady::now() - t;

  // The election, when we are not master yet: another SM may be.
  if (election_.state() != discovery::SmState::kMaster) {
    const bool master = co_await elect_after_discovery(r->sweep);
    if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
    if (!master) {
      ++sweeps_;
      sweep_.reset();
      const state::SmRoleView role = role_view();
      co_return state::SweepReply{
          false,
          generation_,
          fmt::format("this SM is {}: SM {} is master", discovery::sm_state_name(election_.state()),
                      guid_str(role.master_guid)),
          {}};
    }
  }

  // 2. LIDs, durable before they reach a port.
  enter_phase(Phase::kLids);
  t = Steady::now();
  auto assign = [&] { return lids_step(r->sweep, opts); };
  auto lids = co_await compute_.run(assign);
  if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
  if (!lids.ok()) co_return fail(lids.error());
  r->lids = std::move(lids).value();
  r->times.lids = Steady::now() - t;
  own_lid_ = r->lids.map.base_lid(r->sweep.topology, r->sweep.sm_node, r->sweep.sm_port);
  co_await persist_lids(r->lids);
  if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
  // Partitions, and the multicast groups (the IPoIB broadcast group of
  // every IPoIB partition among them) whose trees this sweep programs.
  r->partitions = std::make_shared<const routing::PartitionPlan>(routing::plan_partitions(
      r->sweep.topology, cfg_.partitions, PortRef{r->sweep.sm_node, r->sweep.sm_port}));
  if (mcast_registry_ != nullptr) {
    mcast_registry_->set_partition_groups(r->partitions->partitions());
    mcast_version_ = mcast_registry_->version();
    r->mcast_groups =
        std::make_shared<const std::vector<state::McastGroup>>(mcast_registry_->groups());
    mcast_dirty_ = false;
  }
  std::string mcast_error;

  // 3. Route and verify the topology as found, minus the links the fast
  // path found down since the sweep began. An engine without a rerouter
  // (minhop) routes again when more are found meanwhile; the others repair
  // the new tables instead, once their rerouter is built (step 4).
  std::uint64_t folded_to = seq0;
  for (;;) {
    const std::size_t folded = fold(r->sweep.topology, folded_to);
    if (folded != 0) {
      spdlog::info("heavy sweep: {} link(s) found down meanwhile are left out", folded);
    }
    folded_to = failure_seq_;
    ctx->route_seq = folded_to;
    enter_phase(Phase::kRoute);
    t = Steady::now();
    const auto stop = stop_source_.get_token();
    // Directed routes found over links folded out go around them now:
    // computed with the routes, off the strand (milliseconds at k=36, the
    // time a repair under way would otherwise wait); the topology is only
    // read meanwhile. A trap handled meanwhile may compute newer ones.
    discovery::DrPaths paths;
    std::vector<std::uint8_t> reached;
    const std::uint64_t paths_version = ctx->paths_version;
    auto route = [&] {
      if (folded != 0) {
        paths = discovery::bfs_paths(r->sweep.topology, r->sweep.sm_node, r->sweep.sm_port, {},
                                     &reached);
      }
      return route_step(r->sweep, r->lids.map, opts, pool_, stop);
    };
    auto routes = co_await compute_.run(route);
    if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
    if (folded != 0 && ctx->paths_version == paths_version) {
      r->sweep.paths = std::move(paths);
      ctx->reached = std::move(reached);
      ++ctx->paths_version;
    }
    if (!routes.ok()) co_return fail(routes.error());
    r->routes = std::move(routes).value();
    r->times.route = Steady::now() - t;
    keep_multicast_on_vl0(*r);

    enter_phase(Phase::kVerify);
    t = Steady::now();
    // The multicast trees first: their dependencies are verified with the
    // unicast routes'. Trees that fail their own check are not programmed
    // (the switches keep what they hold), but unicast goes ahead.
    auto check = [&] {
      r->multicast.reset();
      if (r->mcast_groups) {
        auto mc = multicast_step(r->sweep.topology, *r->routes, *r->mcast_groups, pool_, stop);
        if (mc.ok()) {
          r->multicast = mc->tables;
        } else {
          mcast_error = mc.error().message;
        }
      }
      return verify_step(r->sweep.topology, r->lids.map, *r->routes, pool_, stop,
                         r->multicast.get());
    };
    auto verdict = co_await compute_.run(check);
    if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
    if (!verdict.ok()) co_return fail(verdict.error());
    r->verify = std::move(verdict).value();
    r->times.verify = Steady::now() - t;
    const bool reroutable = !r->routes->updown_rank.empty() && fast_opts_.enabled;
    if (failure_seq_ == folded_to || reroutable) break;
  }

  // 4. Program. The new tables' rerouter is built alongside; until it is,
  // failures are repaired in the published tables (and sent again from the
  // new ones once it is); after, in the new tables.
  detect_reboots(r->sweep, routes_now_ ? routes_now_.get()
                           : current_  ? current_->routes.get()
                                       : nullptr);
  enter_phase(Phase::kProgram);
  ctx->programming = true;
  t = Steady::now();
  asio::co_spawn(strand_, build_new_fast_path(ctx, r), asio::detached);
  discovery::ProgramLive live;
  live.resend = &ctx->resend;
  live.paths_version = &ctx->paths_version;
  live.skip = [this, &ctx = *ctx](NodeId n, PortNum p) { return skip_port(ctx, n, p); };
  live.want_row = [&ctx = *ctx, &routes = *r->routes](SwitchIndex s) {
    if (ctx.fast) {
      const routing::Rerouter& rr = ctx.fast->rerouter();
      return std::span<const std::uint8_t>(rr.row(s), rr.lft_entries());
    }
    const routing::Lft& lft = routes.lfts[s.value];
    return std::span<const std::uint8_t>(lft.data(), lft.size());
  };
  // A node whose link retrained (a port below ACTIVE) or whose switch
  // lost its tables may have reset its P_Key tables too.
  {
    const routing::Topology& fabric = r->sweep.topology;
    for (std::uint32_t i = 0; i < fabric.num_nodes(); ++i) {
      const NodeId n{i};
      bool reset = held_unknown_.count(fabric.node(n).guid) != 0;
      for (unsigned p = 1; !reset && p <= fabric.node(n).num_ports; ++p) {
        const routing::Port& port = fabric.port(n, static_cast<PortNum>(p));
        reset = port.connected() && port.state != routing::PortState::kActive;
      }
      if (reset) {
        held_pkeys_.forget(fabric.node(n).guid);
        held_vls_.forget(fabric.node(n).guid);
      }
      if (held_unknown_.count(fabric.node(n).guid) != 0) held_mfts_.forget(fabric.node(n).guid);
    }
  }
  opts.program.client_reregister = !reregistered_;
  live.held_pkeys = &held_pkeys_;
  live.held_vls = &held_vls_;
  live.partitions = r->partitions.get();
  live.multicast = r->multicast.get();
  live.held_mfts = &held_mfts_;
  if (!mcast_error.empty()) {
    spdlog::error("multicast: {}", mcast_error);
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt,
                   "multicast trees not programmed: " + mcast_error);
  }
  discovery::HeldTables held = held_tables();
  std::shared_ptr<AdoptedTables> adopted;
  if (adopt_tables_) {
    // A takeover: another master programmed the switches. What they hold
    // is read first, so that only the blocks that differ are sent (none
    // after a clean handover between SMs that route alike).
    const auto t_read = Steady::now();
    adopted = co_await read_held_lfts(r);
    if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
    spdlog::info("takeover: read {} LFT blocks of {} of {} switches in {:.0f} ms",
                 adopted->blocks_read, adopted->rows.size(), r->sweep.topology.num_switches(),
                 std::chrono::duration<double, std::milli>(Steady::now() - t_read).count());
    held.row = [adopted](Guid g) -> std::span<const std::uint8_t> {
      auto it = adopted->rows.find(g);
      if (it == adopted->rows.end()) return {};
      return {it->second.data(), it->second.size()};
    };
  }
  auto programmed = co_await program_step(engine_, opts, *r, &held, live);
  if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
  // What program_step left to do until the new rerouter no longer reads
  // the topology.
  co_await ctx->built.wait();
  if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
  if (!programmed.ok()) {
    // Some switches took part of the new tables: what they hold is unknown.
    for (std::uint32_t s = 0; s < r->sweep.topology.num_switches(); ++s) {
      held_unknown_.insert(
          r->sweep.topology.node(r->sweep.topology.switch_node(SwitchIndex{s})).guid);
    }
    co_return fail(programmed.error());
  }
  r->times.program = Steady::now() - t;
  r->times.total = Steady::now() - t0;
  adopt_tables_ = false;
  retry_backoff_ = std::chrono::milliseconds{500};
  ++sweeps_;

  // 5. Publish.
  for (const std::string& c : r->lids.conflicts) spdlog::warn("LID conflict: {}", c);
  for (const std::string& u : r->lids.unusable_remembered) {
    spdlog::warn("stored LID not usable: {}", u);
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt,
                   "stored LID not usable: " + u);
  }
  for (const std::string& w : r->sweep.warnings) spdlog::warn("sweep: {}", w);
  if (r->partitions) {
    for (const std::string& w : r->partitions->warnings()) spdlog::warn("partitions: {}", w);
  }
  for (const std::string& u : r->sweep.unreachable) spdlog::warn("unreachable: {}", u);
  if (current_) {
    log_link_changes(topology_now_ ? *topology_now_ : current_->sweep.topology, r->sweep.topology);
  }
  const routing::Topology& topo = r->sweep.topology;
  rec.ended_at =
      std::chrono::time_point_cast<state::WallTime::duration>(std::chrono::system_clock::now());
  rec.nodes = static_cast<std::uint32_t>(topo.num_nodes());
  rec.switches = static_cast<std::uint32_t>(topo.num_switches());
  rec.cas = static_cast<std::uint32_t>(topo.num_cas());
  rec.lids = r->lids.lids_used;
  rec.phases = {{"sweep", us(r->times.sweep)},
                {"lids", us(r->times.lids)},
                {"route", us(r->times.route)},
                {"verify", us(r->times.verify)},
                {"program", us(r->times.program)}};
  rec.outcome = SweepOutcome::kOk;
  rec.message = reason;
  if (store_ != nullptr) store_->record_sweep(rec);

  held_unknown_.clear();
  for (const Guid g : r->program.switches_failed) held_unknown_.insert(g);
  for (const Guid g : ctx->push_failed_switches) held_unknown_.insert(g);
  const std::string summary = fmt::format(
      "{} switches, {} CAs, {} LIDs, engine {}, routed in {:.1f} ms, {} LFT blocks sent",
      topo.num_switches(), topo.num_cas(), r->lids.lids_used, r->routes->engine,
      std::chrono::duration<double, std::milli>(r->times.route).count(),
      r->program.lft_blocks_sent + r->program.lft_blocks_resent);
  spdlog::info("subnet up: {}", summary);
  persist_grid(r->routes->grid);
  current_ = r;
  reregistered_ = true;
  mcast_now_.reset();
  mcast_groups_now_.reset();
  fast_ = ctx->fast;
  routes_now_.reset();
  topology_now_.reset();
  sweep_.reset();
  if (fast_ && ctx->repaired) {
    routes_now_ = std::make_shared<const routing::Routes>(fast_->export_routes(pool_));
    topology_now_ = std::make_shared<const routing::Topology>(fast_->live_topology());
  }
  // The dump files first: what READY announces is on disk too.
  if (!cfg_.dump_dir.empty()) {
    if (auto d = write_dump_files(cfg_.dump_dir, topology_now_ ? *topology_now_ : topo, r->lids.map,
                                  routes_now_ ? *routes_now_ : *r->routes, r->sweep.sm_node,
                                  r->multicast.get());
        !d.ok()) {
      spdlog::warn("dump files: {}", d.error().message);
    }
  }
  // The event before the state that reports it: whoever sees the state sees
  // its event too.
  events_.append(state::EventKind::kSweep, std::nullopt, std::nullopt,
                 fmt::format("heavy sweep ({}): {}", reason, summary));
  publish(state::SmState::kMaster, {});
  schedule_light_sweep();
  schedule_counter_sweep();  // the first one a period after the first bring-up

  // 6. Switch-local fast failover for the tables now in place (and, after
  // repairs, stage 2's clean-up: groups re-armed, notifications cleared).
  co_await arm_fast_failover(r);
  if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
  // 7. The other SMs: one that outranks us gets the subnet.
  co_await elect_after_master_sweep(r->sweep);
  if (gone()) co_return state::SweepReply{false, 0, "cancelled: subnetd is stopping", {}};
  co_return state::SweepReply{true, generation_, summary, {}};
}

asio::awaitable<void> SubnetManager::build_new_fast_path(std::shared_ptr<SweepInProgress> ctx,
                                                         std::shared_ptr<BringUpResult> result) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  const auto t0 = Steady::now();
  if (fast_opts_.enabled && !result->routes->updown_rank.empty()) {
    const BringUpResult& c = *result;
    FastPathConfig fc;
    fc.extended_lids = c.lids.map.space.extended();
    fc.timeout = std::chrono::duration_cast<std::chrono::microseconds>(fast_opts_.timeout);
    fc.retries = cfg_.sweep.retries;
    fc.probe_window = std::min(fc.probe_window, cfg_.sweep.smp_window);
    fc.sm_lid = c.lids.map.base_lid(c.sweep.topology, c.sweep.sm_node, c.sweep.sm_port).value;
    // Named, not a temporary inside the co_await (see discovery/coro.hpp).
    auto build = [&c, fc, this] {
      return FastPath::build(c.sweep.topology, c.lids.map, c.routes, c.sweep.sm_node,
                             c.sweep.sm_port, fc, pool_, stop_source_.get_token());
    };
    auto built = co_await compute_.run(std::move(build));
    if (alive.expired()) co_return;
    if (built.ok()) {
      ctx->fast = std::shared_ptr<FastPath>(std::move(built).value());
      ctx->fast->keep_alive(result);  // its topology and LIDs
      const routing::RerouterStats& st = ctx->fast->rerouter().stats();
      spdlog::info("fast path ready in {:.0f} ms ({:.1f} MiB precomputed)",
                   std::chrono::duration<double, std::milli>(Steady::now() - t0).count(),
                   static_cast<double>(st.memory_bytes) / (1024.0 * 1024.0));
      ctx->applied_seq = ctx->route_seq;
      apply_to_new_tables(*ctx);
    } else {
      spdlog::info("fast path off until the next sweep: {}", built.error().message);
    }
  }
  ctx->built.set();
}

// ---------------------------------------------------------------- light sweep

void SubnetManager::schedule_light_sweep() {
  SUBNETD_ASSERT_ON(strand_);
  if (stopped_ || cfg_.sweep.interval.count() == 0 || standing_by()) return;
  light_timer_.start(cfg_.sweep.interval, [this] {
    light_starting_ = true;
    asio::co_spawn(strand_, periodic_light_sweep(), asio::detached);
  });
}

asio::awaitable<void> SubnetManager::periodic_light_sweep() {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  light_starting_ = false;
  // Before the first bring-up there is nothing to compare with; a heavy
  // sweep pending or running looks at everything anyway.
  if (!current_ || heavy_running_ || heavy_timer_.pending() || light_running_) {
    schedule_light_sweep();
    check_idle();
    co_return;
  }
  const state::LightSweepReport found = co_await light_sweep();
  if (alive.expired() || stopped_) co_return;
  if (found.found_change()) {
    spdlog::info("light sweep: {}", found.change);
    request_heavy_sweep(std::chrono::milliseconds{0}, "light sweep: " + found.change);
  } else {
    schedule_light_sweep();
  }
  check_idle();
}

asio::awaitable<state::LightSweepReport> SubnetManager::light_sweep() {
  SUBNETD_ASSERT_ON(strand_);
  light_running_ = true;
  state::LightSweepReport report;
  report.started_at = std::chrono::system_clock::now();
  const auto t0 = Steady::now();
  const std::shared_ptr<const BringUpResult> c = current_;  // kept alive across the awaits
  discovery::FlowOptions popts;
  popts.window = cfg_.sweep.smp_window;
  popts.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
  popts.retries = cfg_.sweep.retries;
  discovery::Flow flow(engine_, popts);
  const routing::Topology& t = c->sweep.topology;
  const routing::Routes& routes = routes_now_ ? *routes_now_ : *c->routes;
  const bool extended = c->lids.map.space.extended();
  const std::uint32_t want_top =
      extended ? 0 : std::min<std::uint32_t>(routes.max_lid.value, 0xFFFF);
  report.switches = static_cast<std::uint32_t>(t.num_switches());
  std::vector<Guid> wiped;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(SwitchIndex{s});
    flow.submit(
        mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kSwitchInfo, 0, c->sweep.paths.path(n), 0),
        0, [&report, &t, &wiped, n, want_top, extended](Result<mad::Smp> r) {
          if (!r.ok()) {
            if (report.change.empty()) {
              report.change =
                  fmt::format("switch {} does not answer ({})", t.label(n), r.error().message);
            }
            return;
          }
          ++report.answered;
          const mad::SwitchInfo si = mad::SwitchInfo::decode(mad::data_of(*r));
          // A switch that rebooted has an empty table: LinearFDBTop 0 (in
          // the extended modes the 16-bit field reads 0xFFFF once set).
          const bool lost = extended ? si.linear_fdb_top == 0 : si.linear_fdb_top < want_top;
          if (lost) {
            wiped.push_back(t.node(n).guid);
            if (report.change.empty()) {
              report.change =
                  fmt::format("switch \"{}\" lost its forwarding table (LinearFDBTop {})",
                              printable(t.node(n).description), si.linear_fdb_top);
            }
          }
          if (si.port_state_change) {
            ++report.changed;
            if (report.change.empty()) {
              report.change = fmt::format("port state change on switch \"{}\"",
                                          printable(t.node(n).description));
            }
          }
        });
  }
  co_await flow.drained();
  // No check_idle() here: the caller acts on the report first (a heavy
  // sweep it requests must count as work), then checks.
  light_running_ = false;
  if (engine_.stopped() && report.change.empty()) {
    report.change = engine_.error() ? engine_.error()->message : "the MAD engine stopped";
  }
  for (const Guid g : wiped) held_unknown_.insert(g);
  if (report.changed > 1) {
    report.change +=
        fmt::format(" (and {} more switch(es) with a port state change)", report.changed - 1);
  }
  report.took = std::chrono::duration_cast<std::chrono::microseconds>(Steady::now() - t0);
  co_return report;
}

}  // namespace subnetd::daemon

#include "daemon/subnet_manager.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <unordered_map>

#include "daemon/sm_text.hpp"

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;
namespace mad = discovery::mad;

// A link as a pair of (GUID, port) ends, the smaller end first.
struct LinkKey {
  Guid a;
  PortNum pa;
  Guid b;
  PortNum pb;
  bool operator==(const LinkKey&) const = default;
};
struct LinkKeyHash {
  std::size_t operator()(const LinkKey& k) const noexcept {
    return std::hash<std::uint64_t>{}(k.a.value * 31 + k.pa) ^
           (std::hash<std::uint64_t>{}(k.b.value * 131 + k.pb) << 1);
  }
};

std::vector<LinkKey> links_of(const routing::Topology& t) {
  std::vector<LinkKey> out;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const routing::Node& n = t.node(NodeId{i});
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      const routing::Port& port = t.port(NodeId{i}, static_cast<PortNum>(p));
      if (!port.connected()) continue;
      LinkKey k{n.guid, static_cast<PortNum>(p), t.node(port.remote_node).guid, port.remote_port};
      if (std::pair(k.b.value, k.pb) < std::pair(k.a.value, k.pa)) continue;  // once per link
      out.push_back(k);
    }
  }
  return out;
}

}  // namespace

SubnetManager::SubnetManager(asio::io_context& io, Config cfg, TransportBundle transport,
                             StoreWriter* store, std::vector<routing::LidRecord> remembered,
                             state::StatePublisher& publisher, state::EventLog& events,
                             routing::WorkerPool& pool, Hooks hooks, FastPathOptions fast,
                             Clock* clock)
    : io_(io),
      strand_(asio::make_strand(io)),
      cfg_(std::move(cfg)),
      transport_(std::move(transport.transport)),
      sim_control_(std::move(transport.sim_control)),
      transport_name_(transport_->name()),
      own_clock_(clock == nullptr ? std::make_unique<SteadyClock>() : nullptr),
      clock_(clock == nullptr ? *own_clock_ : *clock),
      engine_(strand_, *transport_),
      store_(store),
      remembered_(std::move(remembered)),
      publisher_(publisher),
      events_(events),
      pool_(pool),
      hooks_(std::move(hooks)),
      fast_opts_(fast),
      heavy_timer_(clock_, strand_),
      light_timer_(clock_, strand_),
      perf_timer_(clock_, strand_),
      health_timer_(clock_, strand_),
      election_(discovery::ElectionOptions{
          discovery::SmRank{cfg_.sm.priority, transport_->local_port().port_guid}, cfg_.sm.key,
          cfg_.sm.poll_retries}),
      poll_timer_(clock_, strand_) {
  // The transport's agent answers SMInfo Get on its own thread; a backend
  // without one hands the requests to us.
  agent_ = transport_->sm_agent();
  if (agent_ == nullptr) {
    own_agent_ = std::make_unique<discovery::SmAgent>(
        discovery::SmAgentOptions{transport_->local_port().port_guid, cfg_.sm.priority,
                                  discovery::SmState::kDiscovering, cfg_.sm.key});
    agent_ = own_agent_.get();
  }
  agent_->set_priority(cfg_.sm.priority);
  agent_->set_sm_key(cfg_.sm.key);
  agent_->set_state(discovery::SmState::kDiscovering);
}

SubnetManager::~SubnetManager() {
  // The owner runs the io_context until stop() has wound everything down
  // (io_context::run returns once nothing waits); should a coroutine still
  // be suspended, it finds life_ expired when it resumes and ends.
  life_.reset();
  stop_source_.request_stop();
}

void SubnetManager::post(std::function<void()> fn) {
  asio::post(strand_, std::move(fn));
}

void SubnetManager::for_each_busy(
    const std::function<void(std::string_view, std::size_t)>& fn) const {
  const auto flag = [&fn](bool on, std::string_view what) {
    if (on) fn(what, 1);
  };
  const auto count = [&fn](std::size_t k, std::string_view what) {
    if (k != 0) fn(what, k);
  };
  flag(trap_worker_running_, "trap worker");
  count(pending_traps_.size(), "traps waiting");
  count(engine_.in_flight(), "MADs in flight");
  flag(heavy_running_, "heavy sweep");
  flag(heavy_timer_.pending() && heavy_timer_.expiry() <= clock_.now(), "heavy sweep due");
  flag(light_starting_ || light_running_, "light sweep");
  flag(verify_running_, "verification");
  flag(mcast_running_, "multicast");
  flag(perf_starting_ || perf_running_, "counter sweep");
  count(static_cast<std::size_t>(health_tasks_), "health tasks");
  flag(poll_running_, "poll of the master SM");
}

bool SubnetManager::idle() const {
  bool busy = false;
  for_each_busy([&busy](std::string_view, std::size_t) { busy = true; });
  return !busy;
}

void SubnetManager::check_idle() {
  SUBNETD_ASSERT_ON(strand_);
  if (idle_waiters_.empty()) return;
  engine_.drain();  // whatever already arrived is handled (and may start work)
  if (!idle()) return;
  std::vector<std::function<void()>> waiters;
  waiters.swap(idle_waiters_);
  for (auto& w : waiters) w();
}

void SubnetManager::notify_when_idle_for_test(std::function<void()> done) {
  post([this, done = std::move(done)]() mutable {
    idle_waiters_.push_back(std::move(done));
    check_idle();
  });
}

void SubnetManager::describe_busy_for_test(std::function<void(std::string)> done) {
  post([this, done = std::move(done)] {
    std::vector<std::string> busy;
    for_each_busy([&busy](std::string_view what, std::size_t k) {
      busy.push_back(k == 1 ? std::string(what) : fmt::format("{} {}", k, what));
    });
    done(busy.empty() ? std::string{"idle"} : fmt::format("{}", fmt::join(busy, ", ")));
  });
}

void SubnetManager::start() {
  keep_loop_.emplace(io_.get_executor());
  post([this] {
    publish(state::SmState::kDiscovering, {});
    engine_.set_unsolicited_handler(
        [this](const mad::Smp& smp, const discovery::Mad& m) { on_unsolicited(smp, m); });
    engine_.start();
    publish_health();
    schedule_health_timer();
    request_heavy_sweep(std::chrono::milliseconds{0}, "start-up");
  });
}

void SubnetManager::stop() {
  stop_source_.request_stop();
  post([this] {
    if (stopped_) return;
    stopped_ = true;
    keep_loop_.reset();  // the loop ends once what is left has wound down
    if (mcast_registry_ != nullptr) mcast_registry_->set_on_change({});
    light_timer_.cancel();
    heavy_timer_.cancel();
    perf_timer_.cancel();
    health_timer_.cancel();
    poll_timer_.cancel();
    engine_.stop();
    // Whoever waits for the SM gets an answer.
    std::vector<state::Completion<state::SweepReply>> waiters;
    waiters.swap(heavy_waiters_);
    for (auto& done : waiters) {
      done(state::SweepReply{false, generation_, "cancelled: subnetd is stopping", {}});
    }
    std::vector<VerifyWaiter> verifies;
    verifies.swap(verify_queue_);
    for (VerifyWaiter& w : verifies) w.done(Error{Errc::kCancelled, "subnetd is stopping"});
  });
}

void SubnetManager::publish(state::SmState state, std::string last_error) {
  SUBNETD_ASSERT_ON(strand_);
  auto s = std::make_shared<state::FabricState>();
  s->generation = ++generation_;
  // Another SM is master: whatever we hold is only the last fabric we knew.
  if (election_.state() == discovery::SmState::kStandby) state = state::SmState::kStandby;
  if (election_.state() == discovery::SmState::kNotActive) state = state::SmState::kNotActive;
  s->state = state;
  s->sm_role = role_view();
  s->transport = transport_name_;
  s->published_at = std::chrono::system_clock::now();
  s->sweeps = sweeps_;
  s->last_error = std::move(last_error);
  const auto prev = publisher_.current();
  s->reroutes = reroutes_;
  s->last_reroute = last_reroute_;
  s->last_sweep_at = prev->last_sweep_at;
  if (current_) {
    const auto& c = *current_;
    s->topology = std::shared_ptr<const routing::Topology>(current_, &c.sweep.topology);
    s->lids = std::shared_ptr<const routing::LidMap>(current_, &c.lids.map);
    s->port_info = std::shared_ptr<const std::vector<std::array<std::uint8_t, 64>>>(
        current_, &c.sweep.port_info);
    s->switch_info = std::shared_ptr<const std::vector<std::array<std::uint8_t, 64>>>(
        current_, &c.sweep.switch_info);
    if (!c.sweep.guid_clashes.empty()) {
      auto dups = std::make_shared<std::vector<std::pair<Guid, std::string>>>();
      for (const auto& d : c.sweep.guid_clashes) dups->emplace_back(d.guid, d.message);
      s->duplicate_guids = std::move(dups);
    }
    s->partitions = c.partitions;
    s->mcast_groups = mcast_groups_now_ ? mcast_groups_now_ : c.mcast_groups;
    s->multicast = mcast_now_ ? mcast_now_ : c.multicast;
    s->routes = c.routes;
    s->sm_node = c.sweep.sm_node;
    s->sm_port = c.sweep.sm_port;
    s->sm_lid = c.lids.map.base_lid(c.sweep.topology, c.sweep.sm_node, c.sweep.sm_port);
    s->engine = c.routes->engine;
    s->last_bringup = state::PhaseTimings{c.times.sweep,  c.times.lids,    c.times.route,
                                          c.times.verify, c.times.program, c.times.total};
    s->verification.ok = true;
    s->verification.message = fmt::format(
        "complete, loop-free, deadlock-free: {} switch/LID pairs, {} VL(s), {} channels, {} "
        "dependencies",
        c.verify.pairs_checked, c.verify.num_vls, c.verify.channels, c.verify.dependencies);
    s->verification.pairs_checked = c.verify.pairs_checked;
    s->verification.channels = c.verify.channels;
    s->verification.dependencies = c.verify.dependencies;
    if (routes_now_) {
      // Repaired by the fast path since the last bring-up.
      s->topology = topology_now_;
      s->routes = routes_now_;
      s->verification.message = fmt::format(
          "repaired incrementally after {} failure(s): every changed route proven up*/down* "
          "(deadlock-free with one VL) by the rerouter's check; the full verifier runs with the "
          "re-balancing sweep",
          reroutes_);
    }
  }
  if (state == state::SmState::kMaster && s->last_error.empty()) {
    s->last_sweep_at = s->published_at;
  }
  publisher_.publish(s);
  if (hooks_.published) hooks_.published(*s);
}

discovery::HeldTables SubnetManager::held_tables() const {
  SUBNETD_ASSERT_ON(strand_);
  discovery::HeldTables held;
  if (!current_) return held;  // nothing known: every block is sent
  held.row = [this, c = current_, fp = fast_](Guid g) -> std::span<const std::uint8_t> {
    if (held_unknown_.contains(g)) return {};
    auto n = c->sweep.topology.find_by_guid(g);
    if (!n || c->sweep.topology.node(*n).type != routing::NodeType::kSwitch) return {};
    const SwitchIndex s = c->sweep.topology.node(*n).switch_index;
    if (fp) {
      // The fast path's tables: every repair since the sweep was pushed.
      const routing::Rerouter& rr = fp->rerouter();
      return {rr.row(s), rr.lft_entries()};
    }
    const routing::Lft& lft = c->routes->lfts[s.value];
    return {lft.data(), lft.size()};
  };
  return held;
}

void SubnetManager::forget_held(Guid switch_guid) {
  held_unknown_.insert(switch_guid);
}

void SubnetManager::log_link_changes(const routing::Topology& before,
                                     const routing::Topology& after) {
  SUBNETD_ASSERT_ON(strand_);
  std::unordered_map<LinkKey, bool, LinkKeyHash> now;
  for (const LinkKey& k : links_of(after)) now.emplace(k, false);
  std::size_t reported = 0;
  for (const LinkKey& k : links_of(before)) {
    auto it = now.find(k);
    if (it != now.end()) {
      it->second = true;
      continue;
    }
    // A flap only when both ends are still seen: a link whose end the sweep
    // no longer reaches (cut off behind other failures) is not known down.
    if (after.find_by_guid(k.a) && after.find_by_guid(k.b)) health_link_down(k.a, k.pa, k.b, k.pb);
    if (++reported <= 1000) {
      events_.append(
          state::EventKind::kLinkDown, k.a, k.pa,
          fmt::format("link down: {}[{}] - {}[{}]", guid_str(k.a), k.pa, guid_str(k.b), k.pb));
    }
  }
  for (const auto& [k, seen] : now) {
    if (seen) continue;
    health_link_up(k.a, k.pa, k.b, k.pb);
    if (++reported <= 1000) {
      events_.append(
          state::EventKind::kLinkUp, k.a, k.pa,
          fmt::format("link up: {}[{}] - {}[{}]", guid_str(k.a), k.pa, guid_str(k.b), k.pb));
    }
  }
}

void SubnetManager::reload(ReloadPlan plan, std::string source) {
  post([this, plan = std::move(plan), source = std::move(source)]() mutable {
    // Restart-only keys are at their running values in plan.effective (the
    // caller names them); everything else applies now.
    const std::uint8_t old_priority = cfg_.sm.priority;
    cfg_ = std::move(plan.effective);
    agent_->set_sm_key(cfg_.sm.key);
    election_.set_sm_key(cfg_.sm.key);
    election_.set_poll_retries(cfg_.sm.poll_retries);
    std::string msg = fmt::format("configuration reloaded from {}", source);
    if (!plan.applied.empty()) msg += fmt::format(": {} applied", fmt::join(plan.applied, ", "));
    spdlog::info("{}", msg);
    events_.append(state::EventKind::kConfigReload, std::nullopt, std::nullopt, msg);
    light_timer_.cancel();
    schedule_light_sweep();
    perf_timer_.cancel();
    schedule_counter_sweep();
    health_.set_policy(cfg_.health);
    publish_health();
    schedule_health_timer();
    if (cfg_.sm.priority != old_priority) {
      agent_->set_priority(cfg_.sm.priority);
      apply_election(election_.set_priority(cfg_.sm.priority));
      republish_role();
    }
    if (plan.reroute) {
      request_heavy_sweep(std::chrono::milliseconds{0}, "routing configuration changed");
    } else if (plan.repartition) {
      request_heavy_sweep(std::chrono::milliseconds{0}, "partitions changed");
    }
  });
}

// ---------------------------------------------------------------- commands

state::MadCounters SubnetManager::mad_counters() const {
  const discovery::EngineStats& e = engine_.stats();
  state::MadCounters c;
  c.sent = e.sent;
  c.retries = e.retries;
  c.responses = e.responses;
  c.error_status = e.error_status;
  c.timeouts = e.timeouts;
  c.received = e.received;
  c.malformed = e.malformed;
  c.unsolicited = e.unsolicited;
  return c;
}

void SubnetManager::trigger_sweep(std::string reason, state::Completion<state::SweepReply> done) {
  post([this, done = std::move(done), reason = std::move(reason)]() mutable {
    if (stopped_) {
      done(state::SweepReply{false, generation_, "subnetd is stopping", {}});
      return;
    }
    // Answered by the next sweep to start (a running one began before this
    // request, so it may not see what the caller just changed).
    heavy_waiters_.push_back(std::move(done));
    request_heavy_sweep(std::chrono::milliseconds{0}, std::move(reason));
  });
}

void SubnetManager::trigger_rebalance(std::string reason,
                                      state::Completion<state::SweepReply> done) {
  // On the strand before the sweep request below (posts run in order): the
  // next heavy sweep to start routes afresh (a running one keeps the routes
  // it started with).
  post([this] { rebalance_requested_ = true; });
  trigger_sweep(std::move(reason), std::move(done));
}

void SubnetManager::trigger_light_sweep(std::string reason,
                                        state::Completion<Result<state::SweepReply>> done) {
  post([this, done = std::move(done), reason = std::move(reason)]() mutable {
    if (stopped_) {
      done(Error{Errc::kCancelled, "subnetd is stopping"});
      return;
    }
    if (!current_) {
      done(Error{Errc::kUnreachable,
                 "no routing yet: the first heavy sweep has not finished, so a light sweep has "
                 "nothing to compare with"});
      return;
    }
    asio::co_spawn(
        strand_,
        [this, done = std::move(done), reason = std::move(reason),
         alive = std::weak_ptr<int>(life_)]() mutable -> asio::awaitable<void> {
          // This sweep takes the periodic one's turn; the period restarts after it.
          light_timer_.cancel();
          state::LightSweepReport found = co_await light_sweep();
          if (alive.expired()) co_return;
          if (!found.found_change()) {
            const std::string msg = fmt::format(
                "light sweep: no change; all {} switches answered, none reports a port state "
                "change",
                found.answered);
            spdlog::info("{} ({})", msg, reason);
            // An operator's light sweep joins the sweep history; periodic
            // ones that find nothing would flood it.
            if (store_ != nullptr && current_) {
              const routing::Topology& t = current_->sweep.topology;
              SweepRecord rec;
              rec.started_at =
                  std::chrono::time_point_cast<state::WallTime::duration>(found.started_at);
              rec.ended_at = rec.started_at + found.took;
              rec.kind = SweepKind::kLight;
              rec.nodes = static_cast<std::uint32_t>(t.num_nodes());
              rec.switches = found.switches;
              rec.cas = static_cast<std::uint32_t>(t.num_cas());
              rec.lids = current_->lids.lids_used;
              rec.phases = {{"light", found.took.count()}};
              rec.outcome = SweepOutcome::kOk;
              rec.message = fmt::format("{}: {}", reason, msg);
              store_->record_sweep(std::move(rec));
            }
            schedule_light_sweep();
            done(state::SweepReply{true, generation_, msg, std::move(found)});
            check_idle();
            co_return;
          }
          spdlog::info("light sweep ({}): {}", reason, found.change);
          // The heavy sweep that follows answers, with what the light one found.
          heavy_waiters_.push_back([done = std::move(done), found](state::SweepReply r) mutable {
            r.light = std::move(found);
            done(std::move(r));
          });
          request_heavy_sweep(std::chrono::milliseconds{0},
                              fmt::format("light sweep ({}): {}", reason, found.change));
          check_idle();
        },
        asio::detached);
  });
}

void SubnetManager::set_port_enabled(Guid node_guid, PortNum port, bool enabled, std::string who,
                                     state::Completion<Result<void>> done) {
  post([this, done = std::move(done), node_guid, port, enabled, who = std::move(who)]() mutable {
    if (stopped_) {
      done(Error{Errc::kCancelled, "subnetd is stopping"});
      return;
    }
    if (!current_) {
      done(Error{Errc::kUnreachable, "the first sweep has not finished"});
      return;
    }
    const std::shared_ptr<const BringUpResult> c = current_;
    const routing::Topology& t = c->sweep.topology;
    auto node = t.find_by_guid(node_guid);
    if (!node) {
      done(Error{Errc::kNotFound, fmt::format("no node with GUID {}", guid_str(node_guid))});
      return;
    }
    if (port == 0 || port > t.node(*node).num_ports) {
      done(Error{Errc::kOutOfRange, fmt::format("{} has ports 1..{}, not {}", t.label(*node),
                                                t.node(*node).num_ports, port)});
      return;
    }
    if (*node == c->sweep.sm_node && port == c->sweep.sm_port && !enabled) {
      done(Error{Errc::kInvalidArgument, "refusing to disable the SM's own port"});
      return;
    }
    const std::string label = t.label(*node);
    const NodeId target = *node;
    asio::co_spawn(
        strand_,
        [this, c, target, done = std::move(done), node_guid, port, enabled, who, label,
         alive = std::weak_ptr<int>(life_)]() mutable -> asio::awaitable<void> {
          Result<void> outcome = co_await send_port_phys(c, target, port, enabled);
          if (alive.expired()) co_return;
          if (!outcome.ok()) {
            done(outcome);
            co_return;
          }
          events_.append(enabled ? state::EventKind::kPortEnable : state::EventKind::kPortDisable,
                         node_guid, port,
                         fmt::format("port {} of {} {} by {}", port, label,
                                     enabled ? "enabled" : "disabled", who));
          health_operator(node_guid, port, enabled, who);
          done(Result<void>{});
          request_heavy_sweep(
              std::chrono::milliseconds{0},
              fmt::format("port {} of {} {}", port, label, enabled ? "enabled" : "disabled"));
        },
        asio::detached);
  });
}

}  // namespace subnetd::daemon

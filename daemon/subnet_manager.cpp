#include "daemon/subnet_manager.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <unordered_map>

#include "daemon/dump_files.hpp"
#include "discovery/smp_pipeline.hpp"
#include "discovery/trap_repress.hpp"

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;
namespace mad = discovery::mad;
using Clock = std::chrono::steady_clock;

constexpr std::uint8_t kPhysPolling = 2;
constexpr std::uint8_t kPhysDisabled = 3;
constexpr std::chrono::milliseconds kTrapDebounce{20};
constexpr std::chrono::milliseconds kMaxBackoff{30'000};

std::int64_t us(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

std::string guid_str(Guid g) {
  return fmt::format("{:#018x}", g.value);
}

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
                             routing::WorkerPool& pool, Hooks hooks, FastPathOptions fast)
    : io_(io),
      strand_(asio::make_strand(io)),
      cfg_(std::move(cfg)),
      transport_(std::move(transport.transport)),
      sim_control_(std::move(transport.sim_control)),
      transport_name_(transport_->name()),
      store_(store),
      remembered_(std::move(remembered)),
      publisher_(publisher),
      events_(events),
      pool_(pool),
      hooks_(std::move(hooks)),
      light_timer_(strand_),
      heavy_timer_(strand_),
      fast_opts_(fast) {}

SubnetManager::~SubnetManager() = default;

void SubnetManager::start() {
  asio::post(strand_, [this] {
    publish(state::SmState::kDiscovering, {});
    if (int fd = transport_->event_fd(); fd >= 0) {
      transport_fd_.emplace(strand_, ::dup(fd));
    }
    schedule_heavy_sweep(std::chrono::milliseconds{0}, "start-up");
    watch_transport();
  });
}

void SubnetManager::stop() {
  stop_source_.request_stop();
  asio::post(strand_, [this] {
    stopped_ = true;
    light_timer_.cancel();
    heavy_timer_.cancel();
    if (transport_fd_) {
      boost::system::error_code ec;
      transport_fd_->cancel(ec);
      transport_fd_->close(ec);
    }
  });
}

void SubnetManager::publish(state::SmState state, std::string last_error) {
  auto s = std::make_shared<state::FabricState>();
  s->generation = ++generation_;
  s->state = state;
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
  if (state == state::SmState::kMaster && s->last_error.empty()) s->last_sweep_at = s->published_at;
  publisher_.publish(s);
  if (hooks_.published) hooks_.published(*s);
}

void SubnetManager::schedule_heavy_sweep(std::chrono::milliseconds delay, std::string reason) {
  if (stopped_) return;
  if (heavy_pending_) {
    // Already scheduled: coalesce, keep the earlier deadline.
    if (heavy_timer_.expiry() <= Clock::now() + delay) return;
  }
  heavy_pending_ = true;
  heavy_reason_ = std::move(reason);
  heavy_timer_.expires_after(delay);
  heavy_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    heavy_pending_ = false;
    heavy_sweep(heavy_reason_);
  });
}

void SubnetManager::schedule_light_sweep() {
  if (stopped_ || cfg_.sweep.interval.count() == 0) return;
  light_timer_.expires_after(cfg_.sweep.interval);
  light_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    periodic_light_sweep();
  });
}

state::SweepReply SubnetManager::heavy_sweep(const std::string& reason) {
  spdlog::info("heavy sweep ({})", reason);
  if (current_) publish(state::SmState::kDiscovering, {});
  const auto started = std::chrono::system_clock::now();

  BringUpOptions opts = bring_up_options(cfg_);
  opts.remembered_lids = remembered_;
  BringUp bring_up(*transport_, pool_);
  auto result = bring_up.run(opts, current_ ? &held_ : nullptr, stop_source_.get_token());
  ++sweeps_;
  const auto ended = std::chrono::system_clock::now();

  SweepRecord rec;
  rec.started_at = std::chrono::time_point_cast<state::WallTime::duration>(started);
  rec.ended_at = std::chrono::time_point_cast<state::WallTime::duration>(ended);
  rec.kind = SweepKind::kHeavy;

  if (!result.ok() && result.error().code == Errc::kCancelled) {
    return state::SweepReply{false, generation_, "cancelled: subnetd is stopping", {}};
  }
  if (!result.ok()) {
    const std::string msg = result.error().message;
    spdlog::error("bring-up failed ({}): {}", reason, msg);
    rec.outcome = SweepOutcome::kFailed;
    rec.message = msg;
    if (store_ != nullptr) store_->record_sweep(std::move(rec));
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt, "bring-up failed: " + msg);
    publish(current_ ? state::SmState::kMaster : state::SmState::kFailed, msg);
    // The previous programming stands; try again later.
    schedule_heavy_sweep(retry_backoff_, "retry after failure");
    retry_backoff_ = std::min(kMaxBackoff, retry_backoff_ * 2);
    return state::SweepReply{false, generation_, msg, {}};
  }
  retry_backoff_ = std::chrono::milliseconds{500};

  BringUpResult& r = *result;
  // Remember every LID now in use (the store gets the changed ones).
  {
    std::unordered_map<Guid, std::size_t> index;
    for (std::size_t i = 0; i < remembered_.size(); ++i) index[remembered_[i].port_guid] = i;
    for (const routing::LidRecord& c : r.lids.changed) {
      auto it = index.find(c.port_guid);
      if (it != index.end()) {
        remembered_[it->second].base = c.base;
      } else {
        remembered_.push_back(c);
      }
    }
  }
  if (store_ != nullptr && !r.lids.changed.empty())
    store_->save_lids(r.lids.changed, r.lids.changed_lmc);
  for (const std::string& c : r.lids.conflicts) spdlog::warn("LID conflict: {}", c);
  for (const std::string& u : r.sweep.unreachable) spdlog::warn("unreachable: {}", u);

  if (current_) {
    log_link_changes(topology_now_ ? *topology_now_ : current_->sweep.topology, r.sweep.topology);
  }

  const routing::Topology& t = r.sweep.topology;
  rec.nodes = static_cast<std::uint32_t>(t.num_nodes());
  rec.switches = static_cast<std::uint32_t>(t.num_switches());
  rec.cas = static_cast<std::uint32_t>(t.num_cas());
  rec.lids = r.lids.lids_used;
  rec.phases = {{"sweep", us(r.times.sweep)},
                {"lids", us(r.times.lids)},
                {"route", us(r.times.route)},
                {"verify", us(r.times.verify)},
                {"program", us(r.times.program)}};
  rec.outcome = SweepOutcome::kOk;
  rec.message = reason;
  if (store_ != nullptr) store_->record_sweep(std::move(rec));

  if (!cfg_.dump_dir.empty()) {
    if (auto d = write_dump_files(cfg_.dump_dir, t, r.lids.map, *r.routes, r.sweep.sm_node);
        !d.ok()) {
      spdlog::warn("dump files: {}", d.error().message);
    }
  }

  // What the switches now hold.
  held_.routes = r.routes;
  held_.switch_index_by_guid.clear();
  held_.switch_index_by_guid.reserve(t.num_switches());
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    held_.switch_index_by_guid.emplace(t.node(t.switch_node(s)).guid, s);
  }
  const std::string summary = fmt::format(
      "{} switches, {} CAs, {} LIDs, engine {}, routed in {:.1f} ms, {} LFT blocks sent",
      t.num_switches(), t.num_cas(), r.lids.lids_used, r.routes->engine,
      std::chrono::duration<double, std::milli>(r.times.route).count(), r.program.lft_blocks_sent);
  spdlog::info("subnet up: {}", summary);
  current_ = std::make_shared<const BringUpResult>(std::move(r));
  routes_now_.reset();
  topology_now_.reset();
  fast_.reset();
  publish(state::SmState::kMaster, {});
  events_.append(state::EventKind::kSweep, std::nullopt, std::nullopt,
                 fmt::format("heavy sweep ({}): {}", reason, summary));
  build_fast_path();
  schedule_light_sweep();
  return state::SweepReply{true, generation_, summary, {}};
}

void SubnetManager::build_fast_path() {
  if (!fast_opts_.enabled || !current_) return;
  const BringUpResult& c = *current_;
  FastPathConfig fc;
  fc.extended_lids = c.lids.map.space.extended();
  fc.timeout = std::chrono::duration_cast<std::chrono::microseconds>(fast_opts_.timeout);
  fc.retries = cfg_.sweep.retries;
  fc.probe_window = std::min(fc.probe_window, cfg_.sweep.smp_window);
  fc.sm_lid = c.lids.map.base_lid(c.sweep.topology, c.sweep.sm_node, c.sweep.sm_port).value;
  const auto t0 = Clock::now();
  auto built = FastPath::build(*transport_, c.sweep.topology, c.lids.map, c.routes, c.sweep.sm_node,
                               c.sweep.sm_port, fc, pool_);
  if (!built.ok()) {
    spdlog::info("fast path off until the next sweep: {}", built.error().message);
    return;
  }
  fast_ = std::move(built).value();
  const routing::RerouterStats& st = fast_->rerouter().stats();
  spdlog::info("fast path ready in {:.0f} ms ({:.1f} MiB precomputed)",
               std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
               static_cast<double>(st.memory_bytes) / (1024.0 * 1024.0));
}

void SubnetManager::log_link_changes(const routing::Topology& before,
                                     const routing::Topology& after) {
  std::unordered_map<LinkKey, bool, LinkKeyHash> now;
  for (const LinkKey& k : links_of(after)) now.emplace(k, false);
  std::size_t reported = 0;
  for (const LinkKey& k : links_of(before)) {
    auto it = now.find(k);
    if (it != now.end()) {
      it->second = true;
      continue;
    }
    if (++reported <= 1000) {
      events_.append(
          state::EventKind::kLinkDown, k.a, k.pa,
          fmt::format("link down: {}[{}] - {}[{}]", guid_str(k.a), k.pa, guid_str(k.b), k.pb));
    }
  }
  for (const auto& [k, seen] : now) {
    if (seen) continue;
    if (++reported <= 1000) {
      events_.append(
          state::EventKind::kLinkUp, k.a, k.pa,
          fmt::format("link up: {}[{}] - {}[{}]", guid_str(k.a), k.pa, guid_str(k.b), k.pb));
    }
  }
}

// Runs on: SM strand. The caller makes sure current_ is set.
state::LightSweepReport SubnetManager::light_sweep() {
  state::LightSweepReport report;
  report.started_at = std::chrono::system_clock::now();
  const auto t0 = Clock::now();
  const BringUpResult& c = *current_;
  discovery::PipelineOptions popts;
  popts.window = cfg_.sweep.smp_window;
  popts.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
  popts.retries = cfg_.sweep.retries;
  discovery::SmpPipeline pipe(*transport_, popts);
  pipe.set_unsolicited_handler(
      [this](const mad::Smp& smp, const discovery::Mad& m) { handle_unsolicited(smp, m); });
  const routing::Topology& t = c.sweep.topology;
  report.switches = static_cast<std::uint32_t>(t.num_switches());
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(s);
    pipe.submit(
        mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kSwitchInfo, 0, c.sweep.paths.path(n), 0),
        0, [&report, &t, n](Result<mad::Smp> r) {
          if (!r.ok()) {
            if (report.change.empty()) {
              report.change = fmt::format("switch \"{}\" does not answer ({})",
                                          t.node(n).description, r.error().message);
            }
            return;
          }
          ++report.answered;
          if (mad::SwitchInfo::decode(mad::data_of(*r)).port_state_change) {
            ++report.changed;
            if (report.change.empty()) {
              report.change =
                  fmt::format("port state change on switch \"{}\"", t.node(n).description);
            }
          }
        });
  }
  // A pipeline that cannot run leaves the switches unexamined: that too is
  // for the heavy sweep to sort out.
  if (auto r = pipe.run(); !r.ok()) report.change = r.error().message;
  if (report.changed > 1) {
    report.change +=
        fmt::format(" (and {} more switch(es) with a port state change)", report.changed - 1);
  }
  report.took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
  return report;
}

void SubnetManager::periodic_light_sweep() {
  // Before the first bring-up there is nothing to compare with; a pending
  // heavy sweep will look at everything anyway.
  if (!current_ || heavy_pending_) {
    schedule_light_sweep();
    return;
  }
  const state::LightSweepReport found = light_sweep();
  if (found.found_change()) {
    spdlog::info("light sweep: {}", found.change);
    schedule_heavy_sweep(std::chrono::milliseconds{0}, "light sweep: " + found.change);
    return;
  }
  schedule_light_sweep();
}

void SubnetManager::watch_transport() {
  if (stopped_) return;
  if (!transport_fd_) {
    // No descriptor to wait on: poll.
    auto poll = std::make_shared<asio::steady_timer>(strand_, std::chrono::milliseconds{10});
    poll->async_wait([this, poll](boost::system::error_code ec) {
      if (ec || stopped_) return;
      drain_and_handle_traps();
      watch_transport();
    });
    return;
  }
  transport_fd_->async_wait(asio::posix::stream_descriptor::wait_read,
                            [this](boost::system::error_code ec) {
                              if (ec || stopped_) return;
                              drain_and_handle_traps();
                              watch_transport();
                            });
}

void SubnetManager::drain_and_handle_traps() {
  draining_ = true;
  drain_transport();
  draining_ = false;
  // Traps found here are handled now, on this thread. A post would hand
  // them to whichever io thread runs the strand next, often the other one,
  // asleep: its wake-up (0.1-1 ms on a VM) would come before the fast path
  // even starts.
  if (!pending_traps_.empty() && !traps_posted_) {
    traps_posted_ = true;  // process_traps clears it once it has drained
    process_traps();
  }
}

void SubnetManager::drain_transport() {
  for (int i = 0; i < 4096; ++i) {
    auto got = transport_->receive(std::chrono::microseconds{0});
    if (!got.ok()) {
      spdlog::error("transport {}: {}", transport_name_, got.error().message);
      return;
    }
    if (!got->has_value()) return;
    const discovery::Mad& m = **got;
    auto smp = mad::decode_smp(m.data);
    if (!smp.ok()) {
      spdlog::debug("dropped malformed MAD: {}", smp.error().message);
      continue;
    }
    if (!smp->is_response()) handle_unsolicited(*smp, m);
    // Responses here are late answers to finished pipelines: nothing waits for them.
  }
}

void SubnetManager::handle_unsolicited(const mad::Smp& smp, const discovery::Mad& m) {
  if (smp.method != mad::Method::kTrap || smp.attr_id != mad::AttrId::kNotice) return;
  // Repress at once, as the SMA keeps repeating the trap until we do.
  if (auto r = transport_->send(discovery::trap_repress(smp, m)); !r.ok()) {
    spdlog::warn("TrapRepress: {}", r.error().message);
  }

  const mad::Notice notice = mad::Notice::decode(mad::data_of(smp));
  TrapEvent ev;
  ev.received_wall = std::chrono::steady_clock::now();
  ev.trap_number = notice.trap_number;
  ev.received_at = transport_->now();
  const bool extended = cfg_.addressing.lid_bits != 16;
  ev.issuer_lid = notice.trap_number == 128 ? notice.trap128_lid(extended) : notice.issuer_lid;
  spdlog::debug("trap {} from LID {:#x}", ev.trap_number, ev.issuer_lid);
  if (notice.trap_number != 128) return;
  if (hooks_.fast_path && hooks_.fast_path(ev)) return;
  // Queue it; traps that arrive together are handled as one repair once the
  // transport is drained (process_traps runs after the current handler).
  pending_traps_.push_back(ev);
  if (!traps_posted_ && !draining_) {  // while draining, drain_and_handle_traps takes them
    traps_posted_ = true;
    asio::post(strand_, [this] { process_traps(); });
  }
}

void SubnetManager::process_traps() {
  if (stopped_) return;
  // Coalesce: whatever else already arrived joins this repair.
  drain_transport();
  traps_posted_ = false;
  std::vector<TrapEvent> traps;
  traps.swap(pending_traps_);
  if (traps.empty()) return;
  if (heavy_pending_ && heavy_timer_.expiry() <= Clock::now()) return;  // a sweep is due anyway
  if (fast_ && !fast_->rerouter().stale() && fast_reroute(traps)) return;
  schedule_heavy_sweep(kTrapDebounce,
                       fmt::format("trap 128 from LID {:#x}{}", traps[0].issuer_lid,
                                   traps.size() > 1 ? fmt::format(" and {} more", traps.size() - 1)
                                                    : std::string()));
}

bool SubnetManager::fast_reroute(const std::vector<TrapEvent>& traps) {
  const auto start = traps.front().received_wall;
  const auto start_transport = traps.front().received_at;
  std::vector<std::uint32_t> issuers;
  issuers.reserve(traps.size());
  for (const TrapEvent& t : traps) issuers.push_back(t.issuer_lid);
  // Traps that arrive meanwhile are queued for the next round.
  const FastPath::Unsolicited unsolicited = [this](const mad::Smp& smp, const discovery::Mad& m) {
    handle_unsolicited(smp, m);
  };
  auto found = fast_->identify(issuers, unsolicited);
  if (!found.ok()) {
    spdlog::warn("fast path: probing the trapping switches failed: {}", found.error().message);
    return false;
  }
  if (found->failed.empty()) {
    // Nothing went down: a link came up (or an answer was missing), which is
    // the heavy sweep's; or a repeat of a trap already handled.
    return !found->link_up && found->unanswered == 0 && found->not_switches == 0;
  }
  auto pushed = fast_->repair_and_push(found->failed, start, start_transport, unsolicited);
  if (!pushed.ok()) {
    spdlog::error("fast path: {}", pushed.error().message);
    fast_.reset();  // the tables on the switches are unknown now: the heavy sweep decides
    return false;
  }
  const PushOutcome& o = *pushed;
  if (o.verdict != routing::RepairReport::Verdict::kRepaired) {
    spdlog::warn("fast path: repair refused, full recompute: {}", o.reason);
    events_.append(state::EventKind::kError, std::nullopt, std::nullopt,
                   "incremental repair refused, full recompute follows: " + o.reason);
    return false;
  }

  // The latency end-point is behind us: what follows is bookkeeping.
  const routing::Topology& topo = current_->sweep.topology;
  fast_->refresh_paths();
  routes_now_ = std::make_shared<const routing::Routes>(fast_->export_routes(pool_));
  topology_now_ = std::make_shared<const routing::Topology>(fast_->live_topology());
  held_.routes = routes_now_;
  for (std::uint32_t s : o.failed_switches) {
    // What these switches hold is unknown: the next programming sends them
    // every block.
    held_.switch_index_by_guid.erase(topo.node(topo.switch_node(s)).guid);
  }
  ++reroutes_;
  last_reroute_ = o.latency;
  publish(state::SmState::kMaster, {});
  if (!cfg_.dump_dir.empty()) {
    // What the switches hold now, for ibdmchk and the interop checks.
    if (auto d = write_dump_files(cfg_.dump_dir, *topology_now_, current_->lids.map, *routes_now_,
                                  current_->sweep.sm_node);
        !d.ok()) {
      spdlog::warn("dump files: {}", d.error().message);
    }
  }

  auto us_of = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1000.0; };
  for (const routing::FailedLink& f : found->failed) {
    const NodeId node = topo.switch_node(f.sw);
    const routing::Port& port = topo.port(node, f.port);
    if (topo.node(port.remote_node).type == routing::NodeType::kSwitch &&
        std::pair(topo.node(port.remote_node).guid.value, port.remote_port) <
            std::pair(topo.node(node).guid.value, f.port)) {
      continue;  // once per link, from its smaller end
    }
    events_.append(state::EventKind::kLinkDown, topo.node(node).guid, f.port,
                   fmt::format("link down: {}[{}] - {}[{}]", guid_str(topo.node(node).guid), f.port,
                               guid_str(topo.node(port.remote_node).guid), port.remote_port));
  }
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
      fmt::format("{{\"latency_us\":{:.1f},\"repair_us\":{:.1f},\"confirmed_us\":{:.1f},"
                  "\"switch_links\":{},\"ca_links\":{},\"entries\":{},\"blocks\":{},"
                  "\"switches\":{},\"orphans\":{},\"blocks_failed\":{},\"probe_smps\":{}}}",
                  us_of(o.latency), us_of(o.compute), us_of(o.confirmed), o.switch_links,
                  o.ca_links, o.changed_entries, o.blocks, o.switches_programmed, o.orphans,
                  o.blocks_failed, found->smps));
  if (o.blocks_failed != 0 || found->link_up || found->unanswered != 0) {
    schedule_heavy_sweep(kTrapDebounce,
                         "after reroute: some switches did not answer or a link "
                         "came up");
  } else {
    schedule_heavy_sweep(fast_opts_.rebalance_delay, "re-balance after reroute");
  }
  return true;
}

void SubnetManager::reload(Config cfg, std::string source) {
  asio::post(strand_, [this, cfg = std::move(cfg), source = std::move(source)]() mutable {
    std::vector<std::string> ignored;
    if (cfg.fabric.transport != cfg_.fabric.transport ||
        cfg.fabric.topology != cfg_.fabric.topology || cfg.fabric.ca != cfg_.fabric.ca ||
        cfg.fabric.port != cfg_.fabric.port) {
      ignored.push_back("fabric");
    }
    if (cfg.addressing.lid_bits != cfg_.addressing.lid_bits ||
        cfg.addressing.lmc != cfg_.addressing.lmc) {
      ignored.push_back("addressing");
    }
    if (cfg.store.path != cfg_.store.path) ignored.push_back("store");
    if (cfg.api.socket != cfg_.api.socket || cfg.api.tcp != cfg_.api.tcp) ignored.push_back("api");
    const bool reroute = cfg.routing.engine != cfg_.routing.engine ||
                         cfg.routing.root_guids != cfg_.routing.root_guids;
    Config next = cfg;
    next.fabric = cfg_.fabric;
    next.addressing = cfg_.addressing;
    next.store = cfg_.store;
    next.api = cfg_.api;
    cfg_ = std::move(next);
    std::string msg = fmt::format("configuration reloaded from {}", source);
    if (!ignored.empty()) {
      msg += fmt::format("; changes to {} need a restart and were not applied",
                         fmt::join(ignored, ", "));
    }
    spdlog::info("{}", msg);
    events_.append(state::EventKind::kConfigReload, std::nullopt, std::nullopt, msg);
    light_timer_.cancel();
    schedule_light_sweep();
    if (reroute)
      schedule_heavy_sweep(std::chrono::milliseconds{0}, "routing configuration changed");
  });
}

void SubnetManager::trigger_sweep(std::string reason, state::Completion<state::SweepReply> done) {
  asio::post(strand_, [this, done = std::move(done), reason = std::move(reason)] {
    if (stopped_) {
      done(state::SweepReply{false, generation_, "subnetd is stopping", {}});
      return;
    }
    heavy_timer_.cancel();
    heavy_pending_ = false;
    done(heavy_sweep(reason));
  });
}

void SubnetManager::trigger_light_sweep(std::string reason,
                                        state::Completion<Result<state::SweepReply>> done) {
  asio::post(strand_, [this, done = std::move(done), reason = std::move(reason)] {
    if (stopped_) {
      done(Error{Errc::kCancelled, "subnetd is stopping"});
      return;
    }
    if (!current_) {
      done(Error{Errc::kUnreachable,
                 "no routing yet: the first heavy sweep has not finished, so a "
                 "light sweep has nothing to compare with"});
      return;
    }
    // This sweep takes the periodic one's turn; the period restarts after it.
    light_timer_.cancel();
    state::LightSweepReport found = light_sweep();
    if (!found.found_change()) {
      const std::string msg = fmt::format(
          "light sweep: no change; all {} switches answered, none reports a port state change",
          found.answered);
      spdlog::info("{} ({})", msg, reason);
      // An operator's light sweep joins the sweep history; periodic ones
      // that find nothing would flood it.
      if (store_ != nullptr) {
        const routing::Topology& t = current_->sweep.topology;
        SweepRecord rec;
        rec.started_at = std::chrono::time_point_cast<state::WallTime::duration>(found.started_at);
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
      return;
    }
    spdlog::info("light sweep ({}): {}", reason, found.change);
    // The heavy sweep runs now, in place of any that was pending.
    heavy_timer_.cancel();
    heavy_pending_ = false;
    state::SweepReply reply =
        heavy_sweep(fmt::format("light sweep ({}): {}", reason, found.change));
    reply.light = std::move(found);
    done(std::move(reply));
  });
}

void SubnetManager::verify_routing(state::VerifyRequest request,
                                   state::Completion<Result<state::VerifyReply>> done) {
  asio::post(strand_, [this, done = std::move(done), request] {
    if (!current_) {
      done(Error{Errc::kUnreachable, "no routing yet: the first sweep has not finished"});
      return;
    }
    if (request.read_back) {
      done(Error{Errc::kUnsupported, "read-back verification is not available yet"});
      return;
    }
    const BringUpResult& c = *current_;
    auto v = routing::verify(topology_now_ ? *topology_now_ : c.sweep.topology, c.lids.map,
                             routes_now_ ? *routes_now_ : *c.routes, pool_, {});
    state::VerifyReply reply;
    reply.generation = generation_;
    if (!v.ok()) {
      switch (v.error().code) {
        case Errc::kIncomplete:
          reply.verdict = state::Verdict::kIncomplete;
          break;
        case Errc::kForwardingLoop:
          reply.verdict = state::Verdict::kLoop;
          break;
        case Errc::kCdgCycle:
          reply.verdict = state::Verdict::kCreditLoop;
          break;
        default:
          done(v.error());
          return;
      }
      reply.message = v.error().message;
      done(std::move(reply));
      return;
    }
    reply.pairs_checked = v->pairs_checked;
    reply.num_vls = v->num_vls;
    reply.channels = v->channels;
    reply.dependencies = v->dependencies;
    reply.took = std::chrono::microseconds(static_cast<std::int64_t>(v->total_seconds * 1e6));
    reply.message = fmt::format(
        "complete, loop-free, deadlock-free: {} switch/LID pairs, {} VL(s), {} channels, {} "
        "dependencies, {:.1f} ms",
        v->pairs_checked, v->num_vls, v->channels, v->dependencies, v->total_seconds * 1000.0);
    done(std::move(reply));
  });
}

void SubnetManager::set_port_enabled(Guid node_guid, PortNum port, bool enabled, std::string who,
                                     state::Completion<Result<void>> done) {
  asio::post(
      strand_, [this, done = std::move(done), node_guid, port, enabled, who = std::move(who)] {
        if (!current_) {
          done(Error{Errc::kUnreachable, "the first sweep has not finished"});
          return;
        }
        const BringUpResult& c = *current_;
        const routing::Topology& t = c.sweep.topology;
        auto node = t.find_by_guid(node_guid);
        if (!node) {
          done(Error{Errc::kNotFound, fmt::format("no node with GUID {}", guid_str(node_guid))});
          return;
        }
        if (port == 0 || port > t.node(*node).num_ports) {
          done(Error{Errc::kOutOfRange,
                     fmt::format("\"{}\" has ports 1..{}, not {}", t.node(*node).description,
                                 t.node(*node).num_ports, port)});
          return;
        }
        if (*node == c.sweep.sm_node && port == c.sweep.sm_port && !enabled) {
          done(Error{Errc::kInvalidArgument, "refusing to disable the SM's own port"});
          return;
        }
        // Disabling via PortPhysicalState (as ibportstate does); keep the LID
        // fields of an endpoint port as they are.
        mad::PortInfo pi;
        pi.local_port_num = port;
        pi.port_phys_state = enabled ? kPhysPolling : kPhysDisabled;
        if (t.node(*node).type != routing::NodeType::kSwitch) {
          pi.lid = static_cast<std::uint16_t>(
              std::min<std::uint32_t>(c.lids.map.base_lid(t, *node, port).value, 0xFFFF));
          pi.master_sm_lid = static_cast<std::uint16_t>(std::min<std::uint32_t>(
              c.lids.map.base_lid(t, c.sweep.sm_node, c.sweep.sm_port).value, 0xFFFF));
          pi.lmc = c.lids.map.lmc;
        }
        mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kPortInfo, port,
                                        c.sweep.path_to_port(*node, port), 0);
        pi.encode(mad::data_of(smp));
        discovery::PipelineOptions popts;
        popts.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
        popts.retries = cfg_.sweep.retries;
        discovery::SmpPipeline pipe(*transport_, popts);
        Result<void> outcome;
        pipe.submit(smp, 0, [&outcome](Result<mad::Smp> r) {
          if (!r.ok()) outcome = r.error();
        });
        if (auto r = pipe.run(); !r.ok()) outcome = r.error();
        if (!outcome.ok()) {
          done(outcome);
          return;
        }
        events_.append(enabled ? state::EventKind::kPortEnable : state::EventKind::kPortDisable,
                       node_guid, port,
                       fmt::format("port {} of \"{}\" {} by {}", port, t.node(*node).description,
                                   enabled ? "enabled" : "disabled", who));
        done(Result<void>{});
        heavy_timer_.cancel();
        heavy_pending_ = false;
        heavy_sweep(fmt::format("port {} of \"{}\" {}", port, t.node(*node).description,
                                enabled ? "enabled" : "disabled"));
      });
}

}  // namespace subnetd::daemon

#pragma once
// The rig of sm_core_bench.cpp: the SM in process on the latency simulator,
// a transport that lets time pass by itself (SimWire), cable cuts and the
// checks that the published tables end without them. See sm_core_bench.cpp.

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "api/server.hpp"
#include "bench_util.hpp"
#include "daemon/bringup.hpp"
#include "daemon/subnet_manager.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "state/event_log.hpp"
#include "subnet/v1/subnet.grpc.pb.h"

namespace subnetd::bench::sm_core {

namespace v1 = ::subnet::v1;
using daemon::Phase;
using namespace std::chrono_literals;
using Ns = std::chrono::nanoseconds;

// A bound on every wait for the SM (a failure, never a delay: a run that
// works never waits for it).
inline constexpr auto kLimit = std::chrono::minutes{10};

inline double ms_of(Ns d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five;
  in >> one >> five;
  return one + " " + five;
}

struct Args {
  std::string spec = "fat-tree:levels=3,k=36";
  int lid_bits = 24;
  std::string engine = "auto";
  unsigned threads = 2;
  unsigned window = 64;
  std::vector<std::string> parts = {"bringup", "status", "phases"};
  int samples = 10;
  std::uint64_t seed = 1;
  int sweeps = 5;
  int status_gap_us = 1000;
  std::vector<std::pair<unsigned, unsigned>> windows;  // (overall, per destination)
  bool verbose = false;
  // Counter sweeps (the performance manager) on: the phases part adds a
  // case that cuts a cable while one runs.
  bool perfmgr = false;
  // The simulator's traffic model, bytes a second per LID (< 0: its
  // default); 0 keeps the PMA reads from recounting LFTs in this process.
  double traffic = -1;
  // Switch-local fast failover armed (routing.fast_failover). With it the
  // simulator emulates the switches' own failover as a link goes down, on
  // the thread the SM's receive() runs on: its CPU lands in the reroute's
  // probe time.
  bool failover = true;
  bool wants(std::string_view part) const {
    return std::find(parts.begin(), parts.end(), part) != parts.end();
  }
};

// p50/p99/max of `v` (sorted here), as "n 10  p50 ...".
inline std::string quantiles(std::vector<double> v, const char* unit) {
  if (v.empty()) return "n 0";
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
  };
  return fmt::format("n {:<5} p50 {:8.3f} {}  p99 {:8.3f} {}  max {:8.3f} {}", v.size(), at(0.5),
                     unit, at(0.99), unit, v.back(), unit);
}

// The SM's transport: the simulator, plus time that passes by itself. The
// engine watches our eventfd instead of the simulator's: readable while the
// simulator's is, and after kick() until the simulator's clock has passed
// the fault by kTrapFlight (a trap on its way to the SM has arrived by
// then). Only receive(0) calls that find nothing move the clock, and never
// past that bound: a sweep in flight is not hurried along. Runs on: the SM
// strand, but kick() from any thread.
class SimWire final : public discovery::Transport {
 public:
  // A trap crosses at most lid_routed_hop_limit links (64).
  static constexpr Ns kTrapFlight =
      64 * discovery::sim::LatencyModel{}.hop_delay + discovery::sim::LatencyModel{}.sma_processing;

  explicit SimWire(discovery::sim::SimFabric& sim)
      : sim_(sim), fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~SimWire() override {
    if (fd_ >= 0) ::close(fd_);
  }
  bool valid() const { return fd_ >= 0; }

  // With a latency model a send delivers nothing at once: the eventfd stays.
  Result<void> send(const discovery::Mad& m) override { return sim_.send(m); }
  Result<std::optional<discovery::Mad>> receive(std::chrono::microseconds t) override {
    auto got = sim_.receive(t);
    const Ns until{until_ns_.load()};
    if (got.ok() && !got->has_value() && until.count() != 0) {
      const Ns now = sim_.now();
      if (now < until) {
        got = sim_.receive(std::chrono::duration_cast<std::chrono::microseconds>(until - now) +
                           std::chrono::microseconds{1});
      }
      if (sim_.now() >= until) {
        // Unless a newer kick moved the bound meanwhile.
        auto expected = until.count();
        until_ns_.compare_exchange_strong(expected, 0);
      }
    }
    // Nothing received: the simulator's inbox is empty. While the engine
    // pumps by itself it does not watch the fd: no syscall per answer then
    // (watch_event_fd(true) brings the fd up to date).
    if (watched_.load(std::memory_order_relaxed)) sync(got.ok() && got->has_value());
    return got;
  }
  std::chrono::nanoseconds now() const override { return sim_.now(); }
  discovery::LocalPort local_port() const override { return sim_.local_port(); }
  int event_fd() const override { return fd_; }
  bool virtual_time() const override { return true; }
  void watch_event_fd(bool watched) override {
    sim_.watch_event_fd(watched);
    watched_ = watched;
    if (watched) sync(true);
  }
  std::string name() const override { return "sim"; }

  // A fault was injected now: its traps are on their way.
  void kick() {
    until_ns_ = (sim_.now() + kTrapFlight).count();
    sync(false);
  }

 private:
  // `maybe_more`: the simulator's inbox may hold something (ask its eventfd).
  void sync(bool maybe_more) {
    std::lock_guard lock(mu_);
    pollfd p{sim_.event_fd(), POLLIN, 0};
    const bool want = until_ns_.load() != 0 || (maybe_more && ::poll(&p, 1, 0) > 0);
    if (want == armed_) return;
    std::uint64_t v = 1;
    [[maybe_unused]] const ssize_t n =
        want ? ::write(fd_, &v, sizeof v) : ::read(fd_, &v, sizeof v);
    armed_ = want;
  }

  discovery::sim::SimFabric& sim_;
  const int fd_;
  std::mutex mu_;
  bool armed_ = false;                      // guarded by mu_
  std::atomic<bool> watched_ = true;        // the engine waits on fd_
  std::atomic<std::int64_t> until_ns_ = 0;  // transport time the kick lasts to; 0 = none
};

// A switch-to-switch cable, by its ends in the simulator's topology.
struct Cable {
  PortRef a, b;
  Guid ga, gb;
};

// Where each step of a heavy sweep began: wall clock, transport clock, SMPs
// the SM had sent. `end` marks the sweep's publish.
struct Mark {
  int phase = 0;  // Phase, or kEnd
  Clock::time_point wall;
  Ns sim{};
  std::uint64_t smps = 0;
};
constexpr int kEnd = 5;
const char* const kPhaseNames[] = {"discovery",    "lids",        "routing",
                                   "verification", "programming", "(end)"};

// The node with GUID `g` (not Topology::find_by_guid: its index is built
// lazily, and the SM may be using it).
inline std::optional<NodeId> find_guid(const routing::Topology& t, Guid g) {
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    if (t.node(NodeId{i}).guid == g) return NodeId{i};
  }
  return std::nullopt;
}

// How one injected failure ended (see the file comment).
struct Outcome {
  std::vector<double> published_ms, new_tables_ms;
  std::vector<std::string> messages;  // of the events, for verbose=1
  std::uint64_t sma_drops = 0;        // SMPs dropped at a full SMA queue meanwhile
  std::string lost;                   // why the published state still uses the cable
};

// The SubnetManager with everything it needs, as the daemon and the unit
// tests (trap_phases_test) build it.
class Rig {
 public:
  Rig(const Args& args, std::unique_ptr<discovery::sim::SimFabric> sim)
      : args_(args), sim_(std::move(sim)), pool_(args.threads, daemon::kComputeNice) {}
  ~Rig() { stop(); }

  Result<void> start() {
    auto wire = std::make_unique<SimWire>(*sim_);
    if (!wire->valid()) return Error{Errc::kIo, "eventfd failed"};
    wire_ = wire.get();
    daemon::Config cfg;
    cfg.fabric.transport = daemon::TransportKind::kSim;
    cfg.fabric.topology = args_.spec;
    cfg.addressing.lid_bits = args_.lid_bits;
    cfg.sweep.interval = 0ms;  // traps and the program drive the SM
    cfg.sweep.smp_window = args_.window;
    if (args_.engine == "ftree") cfg.routing.engine = daemon::EngineKind::kFtree;
    if (args_.engine == "updn") cfg.routing.engine = daemon::EngineKind::kUpdn;
    // Counter sweeps only when the program moves the clock by this much.
    if (args_.perfmgr) cfg.perfmgr.interval = kCounterPeriod;
    cfg.routing.fast_failover = args_.failover;
    daemon::TransportBundle bundle;
    bundle.transport = std::move(wire);
    daemon::SubnetManager::Hooks hooks;
    hooks.phase = [this](Phase p) { on_phase(p); };
    hooks.published = [this](const state::FabricState& s) {
      if (s.state == state::SmState::kMaster) mark(kEnd);
    };
    sm_ = std::make_unique<daemon::SubnetManager>(
        io_, cfg, std::move(bundle), nullptr, std::vector<routing::LidRecord>{}, publisher_,
        events_, pool_, std::move(hooks), daemon::FastPathOptions{}, &clock_);
    if (args_.perfmgr) sm_->attach_counters(&counters_);
    start_marking();
    sm_->start();
    thread_ = std::thread([this] { io_.run(); });
    if (!publisher_.wait_for([](const state::FabricState& s) { return master(s); }, kLimit)) {
      return Error{Errc::kTimeout,
                   "the first bring-up did not finish: " + publisher_.current()->last_error};
    }
    if (!wait_idle()) return Error{Errc::kTimeout, "the SM is not idle after its bring-up"};
    return ok_result();
  }
  void stop() {
    if (!thread_.joinable()) return;
    sm_->stop();
    thread_.join();
  }

  static bool master(const state::FabricState& s) {
    return s.state == state::SmState::kMaster && s.routes != nullptr;
  }

  bool wait_idle() {
    auto idle = std::make_shared<std::promise<void>>();
    auto fut = idle->get_future();
    sm_->notify_when_idle_for_test([idle] { idle->set_value(); });
    return fut.wait_for(kLimit) == std::future_status::ready;
  }
  // Runs the SM's timers until it is idle and master with nothing due
  // within a minute.
  bool settle() {
    for (int round = 0; round < 50; ++round) {
      if (!wait_idle()) return false;
      const auto next = clock_.next_due();
      const bool quiet = next == daemon::Clock::time_point::max() || next - clock_.now() > 1min;
      if (quiet && master(*publisher_.current())) return true;
      if (next == daemon::Clock::time_point::max()) return false;
      clock_.advance(next - clock_.now());
    }
    return false;
  }
  // An operator's heavy sweep; its reply.
  std::future<state::SweepReply> sweep() {
    auto promise = std::make_shared<std::promise<state::SweepReply>>();
    auto fut = promise->get_future();
    sm_->trigger_sweep("sm_core_bench",
                       [promise](state::SweepReply r) { promise->set_value(std::move(r)); });
    return fut;
  }

  // Cuts `c` when the next heavy sweep enters `phase` (on the SM strand).
  void cut_at(Phase phase, const Cable& c) {
    std::lock_guard lock(mu_);
    inject_at_ = phase;
    inject_ = c;
    injected_ = false;
  }
  bool injected() {
    std::lock_guard lock(mu_);
    return injected_;
  }
  Result<void> cut(const Cable& c) {
    SUBNETD_TRY(sim_->link_down(c.a));
    wire_->kick();
    return ok_result();
  }
  // Cuts `c` on an idle SM and waits for its reroute and for the SM to be
  // idle again.
  Result<void> cut_and_reroute(const Cable& c) {
    const std::uint64_t reroutes = publisher_.current()->reroutes;
    SUBNETD_TRY(cut(c));
    if (publisher_.wait_for(
            [reroutes](const state::FabricState& s) { return s.reroutes > reroutes; }, kLimit) ==
            nullptr ||
        !wait_idle()) {
      return Error{Errc::kTimeout, "no reroute on an idle SM"};
    }
    return ok_result();
  }
  // Starts a counter sweep (the performance manager's period passes) and
  // cuts `c` as soon as it has begun; waits for the reroute, the end of
  // the counter sweep and an idle SM. Whether the reroute came before the
  // counter sweep ended goes to `during`.
  static constexpr std::chrono::minutes kCounterPeriod{30};
  Result<void> counter_sweep_and_cut(const Cable& c, bool* during) {
    const std::uint64_t reroutes = publisher_.current()->reroutes;
    const std::uint64_t sweeps = counters_.current()->sweep;
    clock_.advance(kCounterPeriod);
    SUBNETD_TRY(cut(c));
    if (publisher_.wait_for(
            [reroutes](const state::FabricState& s) { return s.reroutes > reroutes; }, kLimit) ==
        nullptr) {
      return Error{Errc::kTimeout, "no reroute during a counter sweep"};
    }
    *during = counters_.current()->sweep == sweeps;
    if (!wait_idle() || counters_.current()->sweep != sweeps + 1) {
      return Error{Errc::kTimeout, "the counter sweep did not end"};
    }
    return ok_result();
  }
  // One counter sweep alone (the first reads every PMA's ClassPortInfo too).
  Result<void> counter_sweep() {
    const std::uint64_t sweeps = counters_.current()->sweep;
    clock_.advance(kCounterPeriod);
    if (!wait_idle() || counters_.current()->sweep != sweeps + 1) {
      return Error{Errc::kTimeout, "the counter sweep did not end"};
    }
    return ok_result();
  }
  const state::CounterBoard& counters() const { return counters_; }
  Result<void> restore(const Cable& c) {
    SUBNETD_TRY(sim_->link_up(c.a));
    wire_->kick();
    return ok_result();
  }

  // Marks of every heavy sweep step since the last take_marks().
  void start_marking() {
    std::lock_guard lock(mu_);
    marks_.clear();
    marking_ = true;
  }
  std::vector<Mark> take_marks() {
    std::lock_guard lock(mu_);
    marking_ = false;
    return std::move(marks_);
  }

  // The kReroute events after `after_id`, and how the published state
  // treats `c`: it must hold neither the cable nor a route through it.
  Outcome outcome(std::int64_t after_id, const Cable& c) const {
    Outcome o;
    for (const state::Event& e :
         events_.recent_since(after_id, 100000).value_or(std::vector<state::Event>{})) {
      if (e.kind != state::EventKind::kReroute) continue;
      const auto at = e.details_json.find("\"latency_us\":");
      double us = -1;
      if (at != std::string::npos) {
        const char* first = e.details_json.data() + at + 13;
        std::from_chars(first, e.details_json.data() + e.details_json.size(), us);
      }
      const bool during = e.details_json.find("\"during_programming\":true") != std::string::npos;
      (during ? o.new_tables_ms : o.published_ms).push_back(us / 1000.0);
      o.messages.push_back(e.message);
    }
    o.lost = routed_through(c);
    return o;
  }
  // Empty when the published state knows `c` is gone; else what it still has.
  std::string routed_through(const Cable& c) const {
    const auto s = publisher_.current();
    if (!master(*s)) return "the SM is not master";
    const routing::Topology& t = *s->topology;
    const auto na = find_guid(t, c.ga), nb = find_guid(t, c.gb);
    if (!na || !nb) return "an end switch is not in the published topology";
    for (const auto& [n, p, other] : {std::tuple{*na, c.a.port, *nb}, {*nb, c.b.port, *na}}) {
      const routing::Port& port = t.port(n, p);
      if (port.connected() && port.remote_node == other)
        return "the cable is still in the topology";
      const routing::Lft& lft = s->routes->lfts[t.node(n).switch_index.value];
      for (std::uint32_t l = 1; l <= s->lids->max_lid.value; ++l) {
        if (lft.get(Lid{l}) == p) {
          return fmt::format("{} still routes LID {:#x} through the dead port {}", t.label(n), l,
                             p);
        }
      }
    }
    return {};
  }
  bool has_cable(const Cable& c) const {
    const auto s = publisher_.current();
    if (!master(*s)) return false;
    const routing::Topology& t = *s->topology;
    const auto n = find_guid(t, c.ga);
    const routing::Port* port = n ? &t.port(*n, c.a.port) : nullptr;
    return port != nullptr && port->connected() && t.node(port->remote_node).guid == c.gb;
  }

  const discovery::sim::SimFabric& sim() const { return *sim_; }
  daemon::ManualClock& clock() { return clock_; }
  daemon::SubnetManager& sm() { return *sm_; }
  state::StatePublisher& publisher() { return publisher_; }
  state::EventLog& events() { return events_; }

 private:
  // On the strand, as a step of a heavy sweep begins.
  void on_phase(Phase p) {
    std::optional<Cable> cut_now;
    {
      std::lock_guard lock(mu_);
      if (inject_at_ && *inject_at_ == p && !injected_) {
        injected_ = true;
        inject_at_.reset();
        cut_now = inject_;
      }
    }
    mark(static_cast<int>(p));
    if (cut_now) {
      if (auto r = cut(*cut_now); !r.ok()) fmt::print(stderr, "cut: {}\n", r.error().message);
    }
  }
  void mark(int phase) {
    Mark m{phase, Clock::now(), sim_->now(), sim_->stats().sent_by_sm};
    std::lock_guard lock(mu_);
    if (marking_) marks_.push_back(m);
  }

  const Args& args_;
  std::unique_ptr<discovery::sim::SimFabric> sim_;
  SimWire* wire_ = nullptr;  // owned by the SM
  daemon::ManualClock clock_;
  state::StatePublisher publisher_;
  state::EventLog events_{0, {}, {}};
  routing::WorkerPool pool_;
  boost::asio::io_context io_;
  std::unique_ptr<daemon::SubnetManager> sm_;
  std::thread thread_;

  state::CounterBoard counters_;
  std::mutex mu_;
  std::optional<Phase> inject_at_;  // guarded by mu_, as the rest here
  Cable inject_;
  bool injected_ = false;
  bool marking_ = false;
  std::vector<Mark> marks_;
};

inline Result<std::unique_ptr<discovery::sim::SimFabric>> make_sim(const Args& args) {
  auto topo = discovery::topo::generate(args.spec);
  if (!topo.ok()) return topo.error();
  discovery::sim::SimOptions so;
  so.lid_bits = args.lid_bits;
  so.latency = discovery::sim::LatencyModel{};
  if (args.traffic >= 0) so.traffic_bytes_per_lid = args.traffic;
  return discovery::sim::SimFabric::create(std::move(topo).value(), so);
}

// ---------------------------------------------------------------- bringup

}  // namespace subnetd::bench::sm_core

// takeover_sim_bench: a standby SM taking over from a dead master, and a
// clean handover, on the latency simulator at any scale (issue 17; the
// ibsim run of the same is takeover_ibsim.py, which also runs OpenSM).
//
//   takeover_sim_bench [SPEC] [lid_bits=24] [window=64] [threads=2]
//                      [poll_ms=500] [retries=3]
//
// 1. SM A (priority 15) brings the fabric up: the old master's tables.
// 2. A peer SM (the simulator's, SimFabric::set_peer_sm) is MASTER with
//    priority 10 at the last CA; SM B (priority 5) starts on the same
//    fabric and stands by (timed: its discovery sweep).
// 3. The peer is killed. B's poll timer runs `retries` periods (the SM's
//    clock is a manual one: detection is period x retries by construction,
//    plus the SMP timeouts of the lost polls on the transport), then B
//    sweeps, reads what the switches hold and sends what differs. Printed:
//    the takeover sweep in simulated fabric time (the latency model: what
//    a fabric of real switches would take) and in wall time (this
//    machine's CPU), LIDs changed, LFT blocks sent and read.
// 4. The peer comes back STANDBY with priority 12: B's next sweep hands
//    the subnet over (timed, blocks sent).
//
// Exit status 0 when every step worked, 1 otherwise.

#include <array>
#include <atomic>
#include <cstdio>
#include <map>

#include "discovery/sim/sim_counting.hpp"
#include "sm_core_rig.hpp"

namespace subnetd::bench {
namespace {

using namespace std::chrono_literals;
using sm_core::SimWire;
using Ns = std::chrono::nanoseconds;

struct Args {
  std::string spec = "fat-tree:levels=3,k=80";
  int lid_bits = 24;
  unsigned window = 64;
  unsigned threads = 2;
  unsigned poll_ms = 500;
  unsigned retries = 3;
};

// One SM on the shared simulator, on its own io thread.
struct Sm {
  daemon::ManualClock clock;
  state::StatePublisher publisher;
  state::EventLog events{0, {}, {}};
  routing::WorkerPool pool;
  boost::asio::io_context io;
  discovery::sim::CountingTransport* wire = nullptr;  // SimWire, counted; owned by the SM
  std::unique_ptr<daemon::SubnetManager> sm;
  std::thread thread;
  // Transport time at which the last heavy sweep began.
  std::atomic<std::int64_t> sweep_began{0};
  // Transport time at which each phase of the last heavy sweep began, and
  // at which it published MASTER (what follows, the fast failover arming,
  // runs with the SM master already).
  std::array<std::atomic<std::int64_t>, 5> phase_began{};
  std::atomic<std::int64_t> master_at{0};
  std::atomic<Clock::rep> master_wall{0};  // and when, on this machine's clock

  Sm(discovery::sim::SimFabric& sim, const Args& a, std::uint8_t priority)
      : pool(a.threads, daemon::kComputeNice) {
    daemon::Config cfg;
    cfg.fabric.transport = daemon::TransportKind::kSim;
    cfg.fabric.topology = a.spec;
    cfg.addressing.lid_bits = a.lid_bits;
    cfg.sweep.interval = 0ms;
    cfg.sweep.smp_window = a.window;
    cfg.sm.priority = priority;
    cfg.sm.poll_period = std::chrono::milliseconds{a.poll_ms};
    cfg.sm.poll_retries = a.retries;
    auto w = std::make_unique<discovery::sim::CountingTransport>(std::make_unique<SimWire>(sim));
    wire = w.get();
    daemon::TransportBundle bundle;
    bundle.transport = std::move(w);
    daemon::SubnetManager::Hooks hooks;
    hooks.published = [this, &sim](const state::FabricState& f) {
      if (f.state == state::SmState::kMaster && master_at.load() == 0) {
        master_at = sim.now().count();
        master_wall = Clock::now().time_since_epoch().count();
      }
    };
    hooks.phase = [this, &sim](daemon::Phase p) {
      if (p == daemon::Phase::kSweep) sweep_began = sim.now().count();
      phase_began[static_cast<std::size_t>(p)] = sim.now().count();
    };
    sm = std::make_unique<daemon::SubnetManager>(
        io, cfg, std::move(bundle), nullptr, std::vector<routing::LidRecord>{}, publisher, events,
        pool, std::move(hooks), daemon::FastPathOptions{}, &clock);
    sm->start();
    thread = std::thread([this] { io.run(); });
  }
  ~Sm() {
    sm->stop();
    thread.join();
  }
  // Where the last heavy sweep's fabric time went, by phase (programming:
  // on a takeover, the read of what the switches hold, then the blocks
  // that differ).
  std::string phases(const discovery::sim::SimFabric& sim) const {
    std::string out;
    for (std::size_t i = 0; i < phase_began.size(); ++i) {
      const std::int64_t end =
          i + 1 < phase_began.size() ? phase_began[i + 1].load() : master_at.load();
      out += fmt::format(" {} {:.3f} s", daemon::phase_name(static_cast<daemon::Phase>(i)),
                         static_cast<double>(end - phase_began[i].load()) / 1e9);
    }
    return out + fmt::format("; then fast failover armed in {:.3f} s",
                             static_cast<double>(sim.now().count() - master_at.load()) / 1e9);
  }
  bool wait_state(state::SmState s) {
    return publisher.wait_for([s](const state::FabricState& f) { return f.state == s; },
                              sm_core::kLimit) != nullptr;
  }
  bool wait_idle() {
    auto idle = std::make_shared<std::promise<void>>();
    auto fut = idle->get_future();
    sm->notify_when_idle_for_test([idle] { idle->set_value(); });
    return fut.wait_for(sm_core::kLimit) == std::future_status::ready;
  }
};

std::map<std::uint32_t, std::uint32_t> end_port_lids(const discovery::sim::SimFabric& sim) {
  std::map<std::uint32_t, std::uint32_t> lids;
  const routing::Topology& t = sim.topology();
  for (std::uint32_t n = 0; n < t.num_nodes(); ++n) {
    const routing::Node& node = t.node(NodeId{n});
    const bool sw = node.type == routing::NodeType::kSwitch;
    for (unsigned p = sw ? 0 : 1; p <= (sw ? 0u : node.num_ports); ++p) {
      const PortRef at{NodeId{n}, static_cast<PortNum>(p)};
      lids[t.port_index(at.node, at.port)] = sim.port_view(at)->lid.value;
    }
  }
  return lids;
}

std::size_t changed(const std::map<std::uint32_t, std::uint32_t>& a,
                    const std::map<std::uint32_t, std::uint32_t>& b) {
  std::size_t n = 0;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    n += it == b.end() || it->second != v ? 1 : 0;
  }
  return n;
}

int fail(const char* what) {
  std::printf("FAILED: %s\n", what);
  return 1;
}

int run(const Args& a) {
  std::printf("takeover_sim_bench %s lid_bits=%d window=%u threads=%u poll=%ums x %u\n",
              a.spec.c_str(), a.lid_bits, a.window, a.threads, a.poll_ms, a.retries);
  sm_core::Args ra;
  ra.spec = a.spec;
  ra.lid_bits = a.lid_bits;
  ra.traffic = 0;
  auto made = sm_core::make_sim(ra);
  if (!made.ok()) return fail(made.error().message.c_str());
  auto sim = std::move(made).value();
  const routing::Topology& t = sim->topology();
  PortRef peer;
  for (std::uint32_t n = t.num_nodes(); n-- > 0 && peer.port == 0;) {
    if (t.node(NodeId{n}).type == routing::NodeType::kCa) peer = PortRef{NodeId{n}, 1};
  }
  std::printf("fabric: %zu switches, %zu CAs\n", t.num_switches(), t.num_cas());

  // 1. The old master programs the fabric.
  auto w0 = Clock::now();
  {
    Sm first(*sim, a, 15);
    if (!first.wait_state(state::SmState::kMaster) || !first.wait_idle()) {
      return fail("the first master's bring-up");
    }
    std::printf("old master's bring-up: %.2f s wall, %llu LFT blocks sent; simulated:%s\n",
                seconds_since(w0), static_cast<unsigned long long>(first.wire->lft_sets.load()),
                first.phases(*sim).c_str());
  }
  const auto lids = end_port_lids(*sim);

  // 2. The standby.
  if (!sim->set_peer_sm(peer, discovery::sim::PeerSmOptions{10, 3, 1}).ok()) {
    return fail("placing the peer SM");
  }
  w0 = Clock::now();
  Ns s0 = sim->now();
  Sm b(*sim, a, 5);
  if (!b.wait_state(state::SmState::kStandby) || !b.wait_idle()) return fail("standing by");
  std::printf("standby: discovery sweep %.3f s simulated, %.2f s wall; %llu LFT blocks sent\n",
              std::chrono::duration<double>(sim->now() - s0).count(), seconds_since(w0),
              static_cast<unsigned long long>(b.wire->lft_sets.load()));

  // 3. kill -9 of the master.
  if (!sim->set_peer_sm_alive(peer, false).ok()) return fail("killing the peer");
  b.master_at = 0;
  const auto sets0 = b.wire->lft_sets.load(), gets0 = b.wire->lft_gets.load();
  const auto fo_sets0 = b.wire->failover_sets.load();
  s0 = sim->now();
  w0 = Clock::now();
  unsigned polls = 0;
  while (b.publisher.current()->state == state::SmState::kStandby && polls <= a.retries) {
    b.clock.advance(std::chrono::milliseconds{a.poll_ms});
    ++polls;
    if (!b.wait_idle()) return fail("polling");
  }
  if (!b.wait_state(state::SmState::kMaster) || !b.wait_idle()) return fail("taking over");
  // Detection: the poll periods (the SM's clock) and the lost polls' SMP
  // timeouts (the transport's); then the sweep, on the transport.
  const Ns began{b.sweep_began.load()};
  const double timeouts = std::chrono::duration<double>(began - s0).count();
  const double detect = polls * a.poll_ms / 1000.0 + timeouts;
  const double sweep = std::chrono::duration<double>(Ns{b.master_at.load()} - began).count();
  std::printf(
      "takeover: detection %.3f s (%u polls %u ms apart + %.3f s of SMP timeouts), sweep %.3f s "
      "simulated: %.3f s in all (%.2f s wall); %zu of %zu LIDs changed, %llu LFT blocks read, "
      "%llu sent\n",
      detect, polls, a.poll_ms, timeouts, sweep, detect + sweep,
      seconds(Clock::time_point{Clock::duration{b.master_wall.load()}} - w0),
      changed(lids, end_port_lids(*sim)), lids.size(),
      static_cast<unsigned long long>(b.wire->lft_gets.load() - gets0),
      static_cast<unsigned long long>(b.wire->lft_sets.load() - sets0));

  std::printf("takeover sweep, simulated time by phase:%s; failover re-armed with %llu SMPs\n",
              b.phases(*sim).c_str(),
              static_cast<unsigned long long>(b.wire->failover_sets.load() - fo_sets0));

  // 4. A clean handover to a peer that now outranks us.
  if (!sim->set_peer_sm_alive(peer, true).ok() ||
      !sim->set_peer_sm(peer, discovery::sim::PeerSmOptions{12, 2, 1}).ok()) {
    return fail("bringing the peer back");
  }
  const auto sets1 = b.wire->lft_sets.load();
  w0 = Clock::now();
  s0 = sim->now();
  auto fut = std::make_shared<std::promise<void>>();
  b.sm->trigger_sweep("peer's trap 144", [fut](state::SweepReply) { fut->set_value(); });
  if (fut->get_future().wait_for(sm_core::kLimit) != std::future_status::ready ||
      !b.wait_state(state::SmState::kStandby) || !b.wait_idle()) {
    return fail("handing over");
  }
  std::printf(
      "handover: sweep + HANDOVER %.3f s simulated (%.2f s wall), %llu LFT blocks sent, peer %s\n",
      std::chrono::duration<double>(sim->now() - s0).count(), seconds_since(w0),
      static_cast<unsigned long long>(b.wire->lft_sets.load() - sets1),
      sim->peer_sm(peer)->now.state == 3 ? "MASTER" : "not master");
  std::printf("peak RSS %.0f MiB\n", peak_rss_mib());
  return 0;
}

}  // namespace
}  // namespace subnetd::bench

int main(int argc, char** argv) {
  using namespace subnetd::bench;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  spdlog::set_level(spdlog::level::warn);
  Args a;
  for (int i = 1; i < argc; ++i) {
    const Arg arg = split_arg(argv[i]);
    bool ok = true;
    if (arg.key.empty()) {
      a.spec = arg.value;
    } else if (arg.key == "lid_bits") {
      ok = parse_value(arg.value, a.lid_bits);
    } else if (arg.key == "window") {
      ok = parse_value(arg.value, a.window) && a.window > 0;
    } else if (arg.key == "threads") {
      ok = parse_value(arg.value, a.threads) && a.threads > 0;
    } else if (arg.key == "poll_ms") {
      ok = parse_value(arg.value, a.poll_ms) && a.poll_ms > 0;
    } else if (arg.key == "retries") {
      ok = parse_value(arg.value, a.retries) && a.retries > 0;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", argv[i]);
      return 2;
    }
  }
  return run(a);
}

// Traps during every phase of a heavy sweep (issue 13): a cable is cut in
// the simulator at the moment the SM enters a phase (the SubnetManager's
// phase hook) — discovery, LID assignment, routing, verification,
// programming — of an operator's sweep, of the re-balancing sweep that
// follows a repair, and of the very first bring-up. Whatever the phase, the
// failure is repaired by the fast path or folded into the sweep, never lost:
// once the SM is idle, the published topology lacks the cable, no table
// names its ports, the verifier passes, and every LID answers through the
// tables the switches actually hold.
//
// The SM's timers run on a ManualClock: nothing happens "later" unless the
// test says so, and every wait is for the event itself.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <thread>

#include "bringup_test_support.hpp"
#include "daemon/subnet_manager.hpp"
#include "daemon_test_support.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "state/event_log.hpp"

namespace subnetd::daemon {
namespace {

using namespace subnetd::state;
using bringup_testing::lid_routed_drops;
using bringup_testing::probe_every_lid;
using namespace std::chrono_literals;

constexpr const char* kFabric = "fat-tree:levels=3,k=4";

// The SM owns its transport; the test keeps the simulator.
class Borrowed final : public discovery::Transport {
 public:
  explicit Borrowed(discovery::sim::SimFabric& s) : s_(s) {}
  Result<void> send(const discovery::Mad& m) override { return s_.send(m); }
  Result<std::optional<discovery::Mad>> receive(std::chrono::microseconds t) override {
    return s_.receive(t);
  }
  std::chrono::nanoseconds now() const override { return s_.now(); }
  discovery::LocalPort local_port() const override { return s_.local_port(); }
  int event_fd() const override { return s_.event_fd(); }
  bool virtual_time() const override { return s_.virtual_time(); }
  std::string name() const override { return "sim"; }

 private:
  discovery::sim::SimFabric& s_;
};

bool master(const FabricState& s) {
  return s.state == SmState::kMaster && s.routes != nullptr;
}

struct Harness {
  std::unique_ptr<discovery::sim::SimFabric> sim;
  ManualClock clock;
  StatePublisher publisher;
  EventLog events{0, {}, {}};
  routing::WorkerPool pool{2};
  boost::asio::io_context io;
  std::unique_ptr<SubnetManager> sm;
  std::thread thread;
  // What to break, and in which phase (of the next sweep that enters it).
  std::optional<Phase> inject_at;
  std::function<void()> inject;
  bool injected = false;

  Harness(const std::string& engine, bool start_now = true) {
    auto topo = discovery::topo::generate(kFabric);
    EXPECT_TRUE(topo.ok());
    discovery::sim::SimOptions so;
    auto s = discovery::sim::SimFabric::create(std::move(topo).value(), so);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    sim = std::move(s).value();
    Config cfg;
    cfg.fabric.transport = TransportKind::kSim;
    cfg.fabric.topology = kFabric;
    cfg.routing.engine = engine == "ftree" ? EngineKind::kFtree : EngineKind::kUpdn;
    cfg.sweep.interval = 0ms;  // no light sweeps: traps alone drive the SM
    TransportBundle bundle;
    bundle.transport = std::make_unique<Borrowed>(*sim);
    SubnetManager::Hooks hooks;
    // On the strand, as the phase begins: the cut is at that moment.
    hooks.phase = [this](Phase p) {
      if (!injected && inject_at && *inject_at == p) {
        injected = true;
        inject();
      }
    };
    sm = std::make_unique<SubnetManager>(io, cfg, std::move(bundle), nullptr,
                                         std::vector<routing::LidRecord>{}, publisher, events, pool,
                                         std::move(hooks), FastPathOptions{}, &clock);
    if (start_now) start();
  }
  ~Harness() { stop(); }

  void start() {
    sm->start();
    thread = std::thread([this] { io.run(); });
  }
  void stop() {
    if (sm) testing::stop_on_thread(*sm, io, thread);
  }

  PortNum port_to(std::string_view from, std::string_view to) const {
    const routing::Topology& t = sim->topology();
    const NodeId a = *t.find_by_name(from), b = *t.find_by_name(to);
    for (unsigned p = 1; p <= t.node(a).num_ports; ++p) {
      if (t.port(a, static_cast<PortNum>(p)).remote_node == b) return static_cast<PortNum>(p);
    }
    ADD_FAILURE() << from << " is not cabled to " << to;
    return 0;
  }
  // Cuts a-b when the sweep enters `phase`.
  void cut_at(Phase phase, std::string a, std::string b) {
    injected = false;
    inject_at = phase;
    inject = [this, a, b] { ASSERT_TRUE(sim->link_down(a, port_to(a, b)).ok()); };
  }

  // Runs the SM's timers (retries, follow-up sweeps) in virtual time until
  // it is idle and master with nothing due within a minute: the state it
  // settles on. False if it does not settle within `rounds` timer firings.
  bool settle(int rounds = 50) {
    for (int i = 0; i < rounds; ++i) {
      if (!testing::wait_idle(*sm)) return false;
      const auto next = clock.next_due();
      const bool quiet = next == Clock::time_point::max() || next - clock.now() > 1min;
      if (quiet && master(*publisher.current())) return true;
      if (next == Clock::time_point::max()) return false;
      clock.advance(next - clock.now());
    }
    return false;
  }

  SweepReply sweep_now() {
    auto fut = testing::sm_call<SweepReply>(
        [&](auto done) { sm->trigger_sweep("test", std::move(done)); });
    EXPECT_EQ(fut.wait_for(20s), std::future_status::ready);
    return fut.get();
  }
  std::size_t events_of(EventKind kind) {
    std::size_t n = 0;
    for (const Event& e : events.recent_since(0, 100000).value_or(std::vector<Event>{})) {
      n += e.kind == kind ? 1 : 0;
    }
    return n;
  }
};

// The published state knows a-b is gone: not in the topology, no table of
// either end switch names its port, the verifier passes.
void expect_routed_around(Harness& h, const std::string& a, const std::string& b) {
  const auto s = h.publisher.current();
  ASSERT_TRUE(master(*s)) << sm_state_name(s->state);
  const routing::Topology& t = *s->topology;
  const NodeId na = *t.find_by_name(a);
  const NodeId nb = *t.find_by_name(b);
  for (const auto& [n, other] : {std::pair{na, nb}, std::pair{nb, na}}) {
    for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
      const routing::Port& port = t.port(n, static_cast<PortNum>(pn));
      EXPECT_FALSE(port.connected() && port.remote_node == other)
          << a << " - " << b << " is still in the published topology";
    }
  }
  const PortNum pa = h.port_to(a, b), pb = h.port_to(b, a);
  for (const auto& [n, p] : {std::pair{na, pa}, std::pair{nb, pb}}) {
    const routing::Lft& lft = s->routes->lfts[t.node(n).switch_index];
    for (std::uint32_t l = 1; l <= s->lids->max_lid.value; ++l) {
      ASSERT_NE(lft.get(Lid{l}), p) << t.node(n).description << " still routes LID " << l
                                    << " through the dead port " << static_cast<int>(p);
    }
  }
  auto verdict = testing::sm_call<Result<VerifyReply>>([&](auto done) {
                   h.sm->verify_routing({}, std::move(done));
                 }).get();
  ASSERT_TRUE(verdict.ok()) << verdict.error().message;
  EXPECT_EQ(verdict->verdict, Verdict::kOk) << verdict->message;
}

// After the SM stopped: every LID answers through the switches' own tables.
void expect_every_lid_answers(Harness& h) {
  const auto s = h.publisher.current();
  h.stop();
  const std::uint64_t drops_before = lid_routed_drops(h.sim->stats());
  const auto probe = probe_every_lid(*h.sim, *s->topology, *s->lids, s->sm_lid);
  EXPECT_EQ(probe.answered, probe.probed);
  EXPECT_TRUE(probe.failures.empty()) << probe.failures.front();
  EXPECT_EQ(lid_routed_drops(h.sim->stats()), drops_before) << "LID-routed SMPs were dropped";
}

struct Case {
  const char* engine;
  Phase phase;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return fmt::format("{}_{}", info.param.engine,
                     bringup_testing::param_name(phase_name(info.param.phase)));
}

const Case kCases[] = {
    {"ftree", Phase::kSweep},  {"ftree", Phase::kLids},    {"ftree", Phase::kRoute},
    {"ftree", Phase::kVerify}, {"ftree", Phase::kProgram}, {"updn", Phase::kSweep},
    {"updn", Phase::kRoute},   {"updn", Phase::kProgram},
};

class TrapInPhase : public ::testing::TestWithParam<Case> {};

// An operator's heavy sweep; the cable goes in the given phase. Before the
// programming step the published tables are repaired by the fast path (a
// reroute event, long before the sweep ends); in it, the new tables are.
TEST_P(TrapInPhase, OfAnOperatorsSweepIsRepairedNeverLost) {
  Harness h(GetParam().engine);
  ASSERT_TRUE(testing::wait_for_state(h.publisher, master));
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  h.cut_at(GetParam().phase, "edge-p2-0", "agg-p2-1");
  const SweepReply reply = h.sweep_now();
  EXPECT_TRUE(h.injected);
  EXPECT_TRUE(reply.ok) << reply.message;
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  EXPECT_GE(h.events_of(EventKind::kReroute), 1U) << "the fast path did not act on the trap";
  expect_routed_around(h, "edge-p2-0", "agg-p2-1");
  expect_every_lid_answers(h);
}

// The re-balancing sweep that follows a repair, with a second cable going
// in each of its phases.
TEST_P(TrapInPhase, OfTheRebalancingSweepIsRepairedNeverLost) {
  Harness h(GetParam().engine);
  ASSERT_TRUE(testing::wait_for_state(h.publisher, master));
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  ASSERT_TRUE(h.sim->link_down("edge-p1-1", h.port_to("edge-p1-1", "agg-p1-0")).ok());
  ASSERT_TRUE(
      testing::wait_for_state(h.publisher, [](const FabricState& s) { return s.reroutes >= 1; }));
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  h.cut_at(GetParam().phase, "agg-p3-0", "core-1");
  h.clock.advance(FastPathOptions{}.rebalance_delay);  // the re-balancing sweep starts
  ASSERT_TRUE(testing::wait_for_state(
      h.publisher, [](const FabricState& s) { return s.sweeps >= 2 && master(s); }));
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  EXPECT_TRUE(h.injected);
  EXPECT_GE(h.events_of(EventKind::kReroute), 2U);
  expect_routed_around(h, "edge-p1-1", "agg-p1-0");
  expect_routed_around(h, "agg-p3-0", "core-1");
  expect_every_lid_answers(h);
}

INSTANTIATE_TEST_SUITE_P(Phases, TrapInPhase, ::testing::ValuesIn(kCases), case_name);

// The first bring-up has nothing published to repair: a failure in its
// discovery or routing is folded in or sends it round again, and the
// tables it settles on route around the cable.
class TrapInFirstBringUp : public ::testing::TestWithParam<Phase> {};

TEST_P(TrapInFirstBringUp, IsFoldedInNeverLost) {
  Harness h("ftree", /*start_now=*/false);
  h.cut_at(GetParam(), "edge-p0-1", "agg-p0-1");
  h.start();
  ASSERT_TRUE(h.settle()) << "the SM did not settle";
  EXPECT_TRUE(h.injected);
  expect_routed_around(h, "edge-p0-1", "agg-p0-1");
  expect_every_lid_answers(h);
}

INSTANTIATE_TEST_SUITE_P(Phases, TrapInFirstBringUp,
                         ::testing::Values(Phase::kSweep, Phase::kRoute, Phase::kProgram),
                         [](const ::testing::TestParamInfo<Phase>& param) {
                           return bringup_testing::param_name(phase_name(param.param));
                         });

}  // namespace
}  // namespace subnetd::daemon

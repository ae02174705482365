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
using testing::master;
using namespace std::chrono_literals;

constexpr const char* kFabric = "fat-tree:levels=3,k=4";

// SimSm with the cable to cut and the phase to cut it in.
struct Harness : testing::SimSm {
  // What to break, and in which phase (of the next sweep that enters it).
  std::optional<Phase> inject_at;
  std::function<void()> inject;
  bool injected = false;

  explicit Harness(const std::string& engine, bool start_now = true)
      : SimSm(
            kFabric,
            [&engine](Config& cfg) {
              cfg.routing.engine = engine == "ftree" ? EngineKind::kFtree : EngineKind::kUpdn;
            },
            hooks_for(this)) {
    if (start_now) start();
  }

  // On the strand, as the phase begins: the cut is at that moment. (Static:
  // it runs before the Harness is constructed; the hook runs after.)
  static SubnetManager::Hooks hooks_for(Harness* self) {
    SubnetManager::Hooks h;
    h.phase = [self](Phase p) {
      if (!self->injected && self->inject_at && *self->inject_at == p) {
        self->injected = true;
        self->inject();
      }
    };
    return h;
  }
  // Cuts a-b when the sweep enters `phase`.
  void cut_at(Phase phase, std::string a, std::string b) {
    injected = false;
    inject_at = phase;
    inject = [this, a, b] { ASSERT_TRUE(sim->link_down(a, port_to(a, b)).ok()); };
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
    const routing::Lft& lft = s->routes->lfts[t.node(n).switch_index.value];
    for (std::uint32_t l = 1; l <= s->lids->max_lid.value; ++l) {
      ASSERT_NE(lft.get(Lid{l}), p) << t.node(n).description << " still routes LID " << l
                                    << " through the dead port " << static_cast<int>(p);
    }
  }
  auto verdict = h.verify();
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

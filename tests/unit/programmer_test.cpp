// Programmer, checked through the fabric it programs: after a BringUp the SM
// sends LID-routed NodeInfo Gets to every LID (every LMC LID with lmc=2),
// which the simulated switches forward through the tables the Programmer
// wrote into *them*; every one must be answered by the LID's owner, and the
// simulator's LID-routed drop counters must stay 0. Then: every port the SM
// armed is ACTIVE and every switch holds exactly the computed LFT; a second
// run with HeldTables sends no LFT block, one changed entry sends exactly one
// block; a deliberately wrong entry loses the SMP for that LID (the check can
// fail); 17- and 24-bit modes with LIDs above 0xFFFF.

#include "discovery/programmer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bringup_test_support.hpp"
#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/sweeper.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"

namespace subnetd::discovery {
namespace {

using bringup_testing::join_lines;
using bringup_testing::lid_routed_drops;
using bringup_testing::probe_every_lid;
using routing::NodeType;
using routing::PortState;
using routing::Topology;
using sim::DropReason;
using sim::SimFabric;

struct Case {
  std::string spec;
  int lid_bits = 16;
  std::uint8_t lmc = 0;
  // Remembered LIDs handed to the bring-up, consecutive (aligned to 2^lmc)
  // from here; 0 = none (dense from 1).
  std::uint32_t lid_base = 0;
};

struct Up {
  std::unique_ptr<SimFabric> sim;
  daemon::BringUpResult r;
  Lid sm_lid;
};

// Remembered LIDs for every end port of `t`, 2^lmc apart from `base`.
std::vector<routing::LidRecord> remembered(const Topology& t, std::uint32_t base,
                                           std::uint8_t lmc) {
  std::vector<routing::LidRecord> out;
  std::uint32_t next = base;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    if (t.node(n).type == NodeType::kSwitch) {
      out.push_back({t.port(n, 0).guid, Lid{next}});
      next += 1U << lmc;
      continue;
    }
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      if (!t.port(n, static_cast<PortNum>(p)).connected()) continue;
      out.push_back({t.port(n, static_cast<PortNum>(p)).guid, Lid{next}});
      next += 1U << lmc;
    }
  }
  return out;
}

daemon::BringUpOptions options(const Case& s, const Topology& truth) {
  daemon::BringUpOptions o;
  o.space = *routing::LidSpace::from_bits(s.lid_bits);
  o.sweep.extended_lids = o.space.extended();
  o.lmc = s.lmc;
  o.engine = "updn";
  if (s.lid_base != 0) o.remembered_lids = remembered(truth, s.lid_base, s.lmc);
  return o;
}

void bring_up(const Case& s, Up& up) {
  auto truth = daemon::load_topology(s.spec);
  ASSERT_TRUE(truth.ok()) << truth.error().message;
  const daemon::BringUpOptions opts = options(s, *truth);
  sim::SimOptions so;
  so.lid_bits = s.lid_bits;
  auto made = SimFabric::create(std::move(truth).value(), so);
  ASSERT_TRUE(made.ok()) << made.error().message;
  up.sim = std::move(made).value();
  routing::WorkerPool pool(2);
  auto r = daemon::BringUp::run_blocking(*up.sim, pool, opts, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  up.r = std::move(r).value();
  up.sm_lid = up.r.lids.map.base_lid(up.r.sweep.topology, up.r.sweep.sm_node, up.r.sweep.sm_port);
}

// Re-programming on the first pass's sweep result, whose port states (INIT)
// are stale once the ports are ACTIVE: tables only, no ARMED/ACTIVE step
// (asking an ACTIVE port for ARMED is an invalid transition).
const ProgramOptions kTablesOnly = [] {
  ProgramOptions o;
  o.activate = false;
  return o;
}();

// What the switches hold: `routes` (the tests replace it as they program).
struct TestHeld : HeldTables {
  explicit TestHeld(const Up& up) : routes(up.r.routes) {
    const Topology& t = up.r.sweep.topology;
    for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
      index[t.node(t.switch_node(SwitchIndex{s})).guid] = SwitchIndex{s};
    }
    row = [this](Guid g) -> std::span<const std::uint8_t> {
      auto it = index.find(g);
      if (it == index.end()) return {};
      const routing::Lft& lft = routes->lfts[it->second.value];
      return {lft.data(), lft.size()};
    };
  }
  TestHeld(const TestHeld&) = delete;
  TestHeld& operator=(const TestHeld&) = delete;

  std::shared_ptr<const routing::Routes> routes;
  std::unordered_map<Guid, SwitchIndex> index;
};

NodeId sim_node(const Up& up, NodeId found) {
  return *up.sim->topology().find_by_guid(up.r.sweep.topology.node(found).guid);
}

// Every switch's own LFT in the simulator equals the computed one for every
// LID up to max_lid; every cabled port is ACTIVE; every end port holds its
// LID, LMC and the SM's LID.
void expect_fabric_holds(const Up& up) {
  const Topology& t = up.r.sweep.topology;
  const routing::LidMap& lids = up.r.lids.map;
  std::size_t lft_mismatches = 0;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId sw = sim_node(up, t.switch_node(SwitchIndex{s}));
    for (std::uint32_t l = 1; l <= lids.max_lid.value; ++l) {
      const std::uint8_t want = up.r.routes->lfts[s].get(Lid{l});
      auto have = up.sim->lft_entry(sw, Lid{l});
      ASSERT_TRUE(have.ok());
      if (*have != want && ++lft_mismatches <= 5) {
        ADD_FAILURE() << t.node(t.switch_node(SwitchIndex{s})).description << " LID " << l
                      << ": holds " << int{*have} << ", computed " << int{want};
      }
    }
  }
  EXPECT_EQ(lft_mismatches, 0U);
  std::uint64_t cabled = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const NodeId sn = sim_node(up, n);
    const bool sw = t.node(n).type == NodeType::kSwitch;
    for (unsigned pn = sw ? 0 : 1; pn <= t.node(n).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      auto v = up.sim->port_view({sn, p});
      ASSERT_TRUE(v.ok());
      const bool linked = pn > 0 && t.port(n, p).connected();
      if (linked) {
        ++cabled;
        EXPECT_EQ(v->state, PortState::kActive) << t.node(n).description << " port " << pn;
      }
      if (pn == 0 || (!sw && linked)) {
        EXPECT_EQ(v->lid, lids.base_lid(t, n, p)) << t.node(n).description << " port " << pn;
        EXPECT_EQ(v->lmc, sw ? 0 : lids.lmc) << t.node(n).description;
        EXPECT_EQ(v->master_sm_lid, up.sm_lid) << t.node(n).description;
      }
    }
  }
  // The sweep found every cabled port in INIT: each was armed, then activated.
  EXPECT_EQ(up.r.program.ports_armed, cabled);
  EXPECT_EQ(up.r.program.ports_activated, cabled);
}

// ------------------------------------------------------------------ every family

class EveryLid : public testing::TestWithParam<std::string> {};

TEST_P(EveryLid, AnswersThroughTheSwitchesOwnTables) {
  Up up;
  bring_up({GetParam(), 16, 2, 0}, up);
  if (HasFatalFailure()) return;
  expect_fabric_holds(up);
  const Topology& t = up.r.sweep.topology;
  std::uint64_t owned = 0;
  for (std::uint32_t l = 1; l <= up.r.lids.map.max_lid.value; ++l) {
    owned += up.r.lids.map.owner_of(Lid{l}).node.valid() ? 1 : 0;
  }
  std::uint64_t ca_ports = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    if (t.node(NodeId{i}).type == NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(NodeId{i}).num_ports; ++p) {
      ca_ports += t.port(NodeId{i}, static_cast<PortNum>(p)).connected() ? 1 : 0;
    }
  }
  EXPECT_EQ(owned, t.num_switches() + 4 * ca_ports) << "LMC 2: four LIDs per CA port";
  const auto probe = probe_every_lid(*up.sim, t, up.r.lids.map, up.sm_lid);
  EXPECT_EQ(probe.probed, owned);
  EXPECT_EQ(probe.answered, probe.probed) << join_lines(probe.failures);
  EXPECT_EQ(lid_routed_drops(up.sim->stats()), 0U);
  EXPECT_EQ(up.sim->stats().drops_total(), 0U);
}

INSTANTIATE_TEST_SUITE_P(Families, EveryLid, testing::ValuesIn(bringup_testing::family_specs()),
                         [](const auto& i) { return bringup_testing::param_name(i.param); });

// ------------------------------------------------------------------ diffed LFT blocks

// The daemon's next heavy sweep: sweep again, find the LIDs on the ports,
// route identically, and program against HeldTables from the first pass:
// no LFT block, no LID and no port state is sent again.
TEST(Programmer, SecondRunWithHeldTablesSendsNothingNew) {
  Up up;
  bring_up({"fat-tree:levels=3,k=4", 16, 2, 0}, up);
  if (HasFatalFailure()) return;
  EXPECT_GT(up.r.program.lft_blocks_sent, 0U);
  const TestHeld held(up);
  routing::WorkerPool pool(2);
  daemon::BringUpOptions opts = options({"", 16, 2, 0}, {});
  auto again = daemon::BringUp::run_blocking(*up.sim, pool, opts, &held);
  ASSERT_TRUE(again.ok()) << again.error().message;
  // The LIDs found on the ports are kept.
  const Topology& t1 = up.r.sweep.topology;
  const Topology& t2 = again->sweep.topology;
  for (std::uint32_t l = 1; l <= up.r.lids.map.max_lid.value; ++l) {
    const PortRef o = up.r.lids.map.owner_of(Lid{l});
    if (!o.node.valid()) continue;
    const Guid g =
        t1.node(o.node).type == NodeType::kSwitch ? t1.port(o.node, 0).guid : t1.port(o).guid;
    const auto o2 = t2.find_by_port_guid(g);
    ASSERT_TRUE(o2.has_value());
    EXPECT_EQ(again->lids.map.base_lid(t2, o2->node, o2->port),
              up.r.lids.map.base_lid(t1, o.node, o.port));
  }
  EXPECT_TRUE(again->lids.conflicts.empty());
  EXPECT_EQ(again->program.lft_blocks_sent, 0U);
  const std::uint64_t blocks = up.r.sweep.topology.num_switches() *
                               (up.r.routes->max_lid.value / routing::kLftBlockSize + 1);
  EXPECT_EQ(again->program.lft_blocks_unchanged, blocks);
  EXPECT_EQ(again->program.port_lid_sets, 0U);
  EXPECT_EQ(again->program.ports_armed, 0U);
  EXPECT_EQ(again->program.ports_activated, 0U);
  // What is left is LinearFDBTop, once per switch, and the P_Key, SL2VL and
  // VLArb tables: a bring-up holds none (the daemon keeps what ports
  // acknowledged; pkey_programming_test, vl_tables_test).
  EXPECT_EQ(again->program.smps.sent, up.r.sweep.topology.num_switches() +
                                          again->program.pkey_blocks_sent +
                                          again->program.sl2vl_sets + again->program.vlarb_sets);
}

// One changed entry is one block; two entries in one block are still one;
// entries in two blocks are two. The simulator's tables follow.
TEST(Programmer, ChangedEntriesSendOnlyTheirBlocks) {
  Up up;
  // 8 leaves x 8 CAs + 12 switches: LIDs up to 0x4c, two blocks.
  bring_up({"fat-tree:levels=2,radix=16,hosts_per_edge=8", 16, 0, 0}, up);
  if (HasFatalFailure()) return;
  const Topology& t = up.r.sweep.topology;
  ASSERT_GT(up.r.routes->max_lid.value, routing::kLftBlockSize);
  TestHeld held(up);

  // Switch 0 (a leaf): re-point the LID of a CA on another leaf to another
  // up-port (still a valid route, though the Programmer does not care).
  const NodeId sw = t.switch_node(SwitchIndex{0});
  std::vector<PortNum> up_ports;
  for (unsigned p = 1; p <= t.node(sw).num_ports; ++p) {
    const routing::Port& port = t.port(sw, static_cast<PortNum>(p));
    if (port.connected() && t.node(port.remote_node).type == NodeType::kSwitch) {
      up_ports.push_back(static_cast<PortNum>(p));
    }
  }
  ASSERT_GE(up_ports.size(), 2U);
  auto remote_ca_lid = [&](std::uint32_t from, std::uint32_t below) {
    for (std::uint32_t l = from; l < below; ++l) {
      const PortRef o = up.r.lids.map.owner_of(Lid{l});
      if (!o.node.valid() || t.node(o.node).type == NodeType::kSwitch) continue;
      if (t.port(o).remote_node != sw) return l;
    }
    return 0U;
  };
  struct Step {
    const char* what;
    std::vector<std::uint32_t> lids;
    std::uint64_t blocks;
  };
  const std::uint32_t a = remote_ca_lid(1, 64);
  const std::uint32_t b = remote_ca_lid(a + 1, 64);
  const std::uint32_t c = remote_ca_lid(64, up.r.routes->max_lid.value + 1);
  ASSERT_TRUE(a != 0 && b != 0 && c != 0);
  const std::vector<Step> steps = {{"one entry", {a}, 1},
                                   {"two entries in one block", {a, b}, 1},
                                   {"entries in two blocks", {b, c}, 2}};
  for (const Step& step : steps) {
    SCOPED_TRACE(step.what);
    routing::Routes changed = *held.routes;
    for (std::uint32_t l : step.lids) {
      const std::uint8_t now = changed.lfts[0].get(Lid{l});
      changed.lfts[0].set(Lid{l}, now == up_ports[0] ? up_ports[1] : up_ports[0]);
    }
    Programmer p(*up.sim, kTablesOnly);
    auto report = p.program(up.r.sweep, up.r.lids.map, changed, &held);
    ASSERT_TRUE(report.ok()) << report.error().message;
    ASSERT_TRUE(report->ok()) << report->failures.front();
    EXPECT_EQ(report->lft_blocks_sent, step.blocks);
    for (std::uint32_t l : step.lids) {
      EXPECT_EQ(*up.sim->lft_entry(sim_node(up, sw), Lid{l}), changed.lfts[0].get(Lid{l}));
    }
    held.routes = std::make_shared<const routing::Routes>(std::move(changed));
  }
  // The re-pointed routes still deliver.
  const auto probe = probe_every_lid(*up.sim, t, up.r.lids.map, up.sm_lid);
  EXPECT_EQ(probe.answered, probe.probed) << join_lines(probe.failures);
}

// ------------------------------------------------------------------ the check can fail

// Routes with one wrong entry at the destination's own leaf: pointing back up
// makes a loop (the packet bounces leaf <-> spine until the hop limit);
// "drop" makes the leaf discard it. Either way exactly that LID goes
// unanswered and the LID-routed drop counter rises; everything else arrives.
TEST(Programmer, AWrongEntryLosesTheSmpForThatLid) {
  Up up;
  bring_up({"fat-tree:levels=2,radix=8", 16, 0, 0}, up);
  if (HasFatalFailure()) return;
  const Topology& t = up.r.sweep.topology;
  TestHeld held(up);
  // A CA that is not the SM, and its leaf.
  PortRef victim;
  for (std::uint32_t l = up.r.lids.map.max_lid.value; l >= 1 && !victim.node.valid(); --l) {
    const PortRef o = up.r.lids.map.owner_of(Lid{l});
    if (o.node.valid() && t.node(o.node).type == NodeType::kCa && o.node != up.r.sweep.sm_node) {
      victim = o;
    }
  }
  ASSERT_TRUE(victim.node.valid());
  const Lid victim_lid = up.r.lids.map.base_lid(t, victim.node, victim.port);
  const NodeId leaf = t.port(victim).remote_node;
  const SwitchIndex leaf_index = t.node(leaf).switch_index;
  PortNum up_port = 0;
  for (unsigned p = 1; p <= t.node(leaf).num_ports && up_port == 0; ++p) {
    const routing::Port& port = t.port(leaf, static_cast<PortNum>(p));
    if (port.connected() && t.node(port.remote_node).type == NodeType::kSwitch) {
      up_port = static_cast<PortNum>(p);
    }
  }
  ASSERT_NE(up_port, 0);

  struct Wrong {
    const char* what;
    std::uint8_t port;
    DropReason reason;
  };
  for (const Wrong& w : {Wrong{"loop back up", up_port, DropReason::kHopLimit},
                         Wrong{"drop", routing::kDropPort, DropReason::kLftUnset}}) {
    SCOPED_TRACE(w.what);
    routing::Routes wrong = *up.r.routes;
    wrong.lfts[leaf_index.value].set(victim_lid, w.port);
    auto report = Programmer(*up.sim, kTablesOnly).program(up.r.sweep, up.r.lids.map, wrong, &held);
    ASSERT_TRUE(report.ok()) << report.error().message;
    ASSERT_TRUE(report->ok()) << report->failures.front();
    EXPECT_EQ(report->lft_blocks_sent, 1U);
    held.routes = std::make_shared<const routing::Routes>(wrong);

    const std::uint64_t before = up.sim->stats().drops_of(w.reason);
    const std::uint64_t lr_before = lid_routed_drops(up.sim->stats());
    const auto probe = probe_every_lid(*up.sim, t, up.r.lids.map, up.sm_lid);
    EXPECT_EQ(probe.answered + 1, probe.probed);
    ASSERT_EQ(probe.failures.size(), 1U) << join_lines(probe.failures);
    EXPECT_NE(probe.failures[0].find(fmt::format("LID {:#x}", victim_lid.value)), std::string::npos)
        << probe.failures[0];
    EXPECT_EQ(up.sim->stats().drops_of(w.reason), before + 1);
    EXPECT_EQ(lid_routed_drops(up.sim->stats()), lr_before + 1);
  }

  // Programming the verified routes again repairs it: one block, all arrive.
  auto fixed =
      Programmer(*up.sim, kTablesOnly).program(up.r.sweep, up.r.lids.map, *up.r.routes, &held);
  ASSERT_TRUE(fixed.ok());
  ASSERT_TRUE(fixed->ok()) << fixed->failures.front();
  EXPECT_EQ(fixed->lft_blocks_sent, 1U);
  const auto probe = probe_every_lid(*up.sim, t, up.r.lids.map, up.sm_lid);
  EXPECT_EQ(probe.answered, probe.probed) << join_lines(probe.failures);
}

// A switch that stops answering between the sweep and programming: the
// report names it for every SMP that failed, and since the tables are not
// all in place no port is moved to ARMED or ACTIVE anywhere.
TEST(Programmer, ASwitchThatStopsAnsweringIsNamedAndNothingIsActivated) {
  auto truth = daemon::load_topology("fat-tree:levels=2,radix=4");
  ASSERT_TRUE(truth.ok());
  auto made = SimFabric::create(*truth, {});
  ASSERT_TRUE(made.ok());
  SimFabric& sim = **made;
  auto swept = Sweeper(sim, {}).run();
  ASSERT_TRUE(swept.ok()) << swept.error().message;
  routing::LidAssignOptions lo;
  auto lids = routing::assign_lids(swept->topology, lo);
  ASSERT_TRUE(lids.ok());
  routing::WorkerPool pool(1);
  auto routes = (*routing::make_engine("updn"))->compute(swept->topology, lids->map, {}, pool, {});
  ASSERT_TRUE(routes.ok());

  const NodeId spine = *truth->find_by_name("spine1");
  ASSERT_TRUE(sim.set_node_silent(spine, true).ok());
  ProgramOptions po;
  po.pipeline.timeout = std::chrono::milliseconds{1};
  po.pipeline.retries = 1;
  auto report = Programmer(sim, po).program(*swept, lids->map, *routes, nullptr);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_FALSE(report->ok());
  // PortInfo (its LID), SwitchInfo (LinearFDBTop), its SL2VL tables (one
  // Set for all ports), the VLArb tables of its cabled ports (low and high:
  // two blocks each) and its LFT blocks.
  const std::uint64_t blocks = routes->max_lid.value / routing::kLftBlockSize + 1;
  const NodeId swept_spine = *swept->topology.find_by_name("spine1");
  std::uint64_t cabled = 0;
  for (unsigned p = 1; p <= swept->topology.node(swept_spine).num_ports; ++p) {
    cabled += swept->topology.port(swept_spine, static_cast<PortNum>(p)).connected() ? 1 : 0;
  }
  EXPECT_EQ(report->failures.size(), 2 + 1 + 2 * cabled + blocks) << join_lines(report->failures);
  for (const std::string& f : report->failures) {
    EXPECT_NE(f.find("\"spine1\""), std::string::npos) << f;
    EXPECT_NE(f.find("no answer after 2 tries"), std::string::npos) << f;
  }
  EXPECT_EQ(report->ports_armed, 0U);
  EXPECT_EQ(report->ports_activated, 0U);
  for (std::uint32_t i = 0; i < truth->num_nodes(); ++i) {
    for (unsigned p = 1; p <= truth->node(NodeId{i}).num_ports; ++p) {
      const auto v = sim.port_view({NodeId{i}, static_cast<PortNum>(p)});
      EXPECT_NE(v->state, PortState::kArmed);
      EXPECT_NE(v->state, PortState::kActive);
    }
  }
}

// ------------------------------------------------------------------ SMA queues

// A programming pass with the daemon's flow options (64 SMPs in flight) on
// switches whose SMAs queue only 4 SMPs, with a per-switch window of 4: ~130
// LFT blocks per switch (LIDs from 0x2000), sent to 8 switches at a time,
// never overflow a queue. `per_destination` 0 shows the check can fail.
constexpr unsigned kShortQueue = 4;

struct ShortQueues {
  ProgramReport report;
  std::uint64_t drops = 0;  // at full SMA queues, while programming
};

ShortQueues program_on_short_queues(unsigned per_destination) {
  ShortQueues out;
  const Case c{"fat-tree:levels=3,k=4", 16, 0, 0x2000};
  auto truth = daemon::load_topology(c.spec);
  EXPECT_TRUE(truth.ok());
  if (!truth.ok()) return out;
  sim::SimOptions so;
  so.latency = sim::LatencyModel{};
  so.latency->sma_queue_depth = kShortQueue;
  auto made = SimFabric::create(*truth, so);
  EXPECT_TRUE(made.ok());
  if (!made.ok()) return out;
  SimFabric& sim = **made;
  auto swept = Sweeper(sim, {}).run();  // retries make up for its drops
  EXPECT_TRUE(swept.ok());
  if (!swept.ok()) return out;
  routing::LidAssignOptions lo;
  lo.previous = remembered(*truth, c.lid_base, c.lmc);
  auto lids = routing::assign_lids(swept->topology, lo);
  EXPECT_TRUE(lids.ok());
  if (!lids.ok()) return out;
  routing::WorkerPool pool(1);
  auto routes = (*routing::make_engine("updn"))->compute(swept->topology, lids->map, {}, pool, {});
  EXPECT_TRUE(routes.ok());
  if (!routes.ok()) return out;
  daemon::Config cfg;
  cfg.sweep.smp_window = 64;
  ProgramOptions po = daemon::bring_up_options(cfg).program;
  EXPECT_EQ(po.pipeline.per_destination, daemon::kSmpsPerSwitch);
  po.pipeline.per_destination = per_destination;
  po.pipeline.retries = 0;  // a dropped SMP shows as a failure
  const std::uint64_t before = sim.stats().drops_of(DropReason::kSmaQueueFull);
  auto report = Programmer(sim, po).program(*swept, lids->map, *routes, nullptr);
  EXPECT_TRUE(report.ok());
  if (report.ok()) out.report = std::move(report).value();
  out.drops = sim.stats().drops_of(DropReason::kSmaQueueFull) - before;
  return out;
}

TEST(Programmer, PerSwitchWindowKeepsEverySmaQueueWithinItsDepth) {
  const ShortQueues q = program_on_short_queues(kShortQueue);
  EXPECT_EQ(q.drops, 0U);
  EXPECT_TRUE(q.report.ok()) << join_lines(q.report.failures);
  EXPECT_GT(q.report.lft_blocks_sent, 20U * 100U);  // 20 switches, ~130 blocks each
  EXPECT_EQ(q.report.smps.retries, 0U);
}

TEST(Programmer, WithoutItTheSamePassOverflowsTheQueues) {
  const ShortQueues q = program_on_short_queues(/*per_destination=*/0);
  EXPECT_GT(q.drops, 0U);
  EXPECT_FALSE(q.report.ok());
}

// ------------------------------------------------------------------ extended LIDs

class Extended : public testing::TestWithParam<Case> {};

TEST_P(Extended, LidsAbove16BitsAreDeliveredLidRouted) {
  const Case& s = GetParam();
  Up up;
  bring_up(s, up);
  if (HasFatalFailure()) return;
  const Topology& t = up.r.sweep.topology;
  EXPECT_TRUE(up.r.lids.conflicts.empty()) << join_lines(up.r.lids.conflicts);
  EXPECT_GT(up.sm_lid.value, 0xFFFFU) << "the SM's own LID is past 16 bits too";
  EXPECT_GT(up.r.lids.map.max_lid.value, 0xFFFFU);
  // Every end port got the remembered LID.
  for (const routing::LidRecord& rec : remembered(up.sim->topology(), s.lid_base, s.lmc)) {
    const auto ref = t.find_by_port_guid(rec.port_guid);
    ASSERT_TRUE(ref.has_value());
    EXPECT_EQ(up.r.lids.map.base_lid(t, ref->node, ref->port), rec.base);
  }
  expect_fabric_holds(up);
  std::uint64_t end_ports = t.num_switches();
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    if (t.node(NodeId{i}).type == NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(NodeId{i}).num_ports; ++p) {
      end_ports += t.port(NodeId{i}, static_cast<PortNum>(p)).connected() ? 1U << s.lmc : 0;
    }
  }
  const auto probe = probe_every_lid(*up.sim, t, up.r.lids.map, up.sm_lid);
  EXPECT_EQ(probe.probed, end_ports);
  EXPECT_EQ(probe.answered, probe.probed) << join_lines(probe.failures);
  EXPECT_EQ(lid_routed_drops(up.sim->stats()), 0U);
  EXPECT_EQ(up.sim->stats().drops_total(), 0U);
}

INSTANTIATE_TEST_SUITE_P(Modes, Extended,
                         testing::Values(Case{"fat-tree:levels=3,k=4", 17, 0, 0x10000},
                                         Case{"torus:dims=3x3,hosts=2", 17, 2, 0x1B000},
                                         Case{"fat-tree:levels=3,k=4", 24, 2, 0x10400},
                                         Case{"random:switches=12,degree=4,hosts=2,seed=3", 24, 0,
                                              0x20000}),
                         [](const auto& i) {
                           return bringup_testing::param_name(fmt::format(
                               "{}_{}bit_lmc{}", i.param.spec, i.param.lid_bits, i.param.lmc));
                         });

}  // namespace
}  // namespace subnetd::discovery

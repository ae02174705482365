// SimFabric at the SMP level: traps, faults, extended LIDs, the latency
// model, bad input and generated fabrics, on the hand-wired fat tree of
// sim_test_support.hpp. Directed routes, the SMA and LID routing:
// sim_test.cpp.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <random>
#include <set>
#include <thread>

#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "sim_test_support.hpp"

namespace subnetd::discovery::sim {
namespace {

using namespace std::chrono_literals;
using namespace simtest;
// ------------------------------------------------------------------ traps and faults

TEST(SimTraps, LinkDownSendsTrap128UntilRepressed) {
  SimOptions opts;
  opts.trap_resend_interval = 100ms;
  opts.trap_max_sends = 5;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);  // includes leaf2 -> SM
  sm.route(kToLeaf0, kLeafLid[2], 3);
  sm.route(kToSpine0, kLeafLid[2], 3);

  // host5 hangs off leaf2 port 2: cut that cable.
  ASSERT_TRUE(fabric->link_down("leaf2", 2).ok());
  EXPECT_EQ(fabric->port_view({f.leaf[2], 2})->state, PortState::kDown);
  EXPECT_EQ(fabric->port_view({f.host[5], 1})->state, PortState::kDown);
  EXPECT_EQ(fabric->port_view({f.host[5], 1})->phys_state, kPhysPolling);
  EXPECT_TRUE(*fabric->port_state_change(f.leaf[2]));

  pollfd pfd{fabric->event_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 0), 1) << "the trap wakes the event fd";
  auto got = fabric->receive(0us);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(::poll(&pfd, 1, 0), 0) << "drained";
  const Mad trap = **got;
  auto t = mad::decode_smp(trap.data);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->method, Method::kTrap);
  EXPECT_EQ(t->attr_id, AttrId::kNotice);
  EXPECT_FALSE(t->directed());
  EXPECT_EQ(trap.slid, kLeafLid[2]);
  EXPECT_EQ(trap.dlid, kSmLid);
  const auto notice = mad::Notice::decode(mad::data_of(*t));
  EXPECT_EQ(notice.trap_number, 128);
  EXPECT_EQ(notice.issuer_lid, kLeafLid[2]);
  EXPECT_EQ(notice.trap128_lid(false), kLeafLid[2]);

  // Repeated with the same TID every 100 ms of transport time.
  const auto t0 = fabric->now();
  got = fabric->receive(1s);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(fabric->now() - t0, 100ms);
  EXPECT_EQ(mad::decode_smp((*got)->data)->tid, t->tid);

  // TrapRepress (LID-routed back to the issuer) stops the repeats.
  mad::Smp repress = *t;
  repress.method = Method::kTrapRepress;
  Mad m;
  mad::encode_smp(repress, std::span<std::uint8_t, kMadSize>(m.data));
  m.dlid = kLeafLid[2];
  ASSERT_TRUE(fabric->send(m).ok());
  EXPECT_EQ(fabric->stats().traps_repressed, 1U);
  got = fabric->receive(1s);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(fabric->stats().traps_sent, 2U);

  // A new event raises a new trap (new TID); unrepressed it stops after
  // trap_max_sends copies.
  ASSERT_TRUE(fabric->link_up("leaf2", 2).ok());
  EXPECT_EQ(fabric->port_view({f.leaf[2], 2})->state, PortState::kInit);
  std::set<std::uint64_t> tids;
  int copies = 0;
  for (;;) {
    got = fabric->receive(1s);
    ASSERT_TRUE(got.ok());
    if (!got->has_value()) break;
    tids.insert(mad::decode_smp((*got)->data)->tid);
    ++copies;
  }
  EXPECT_EQ(copies, 5);
  ASSERT_EQ(tids.size(), 1U);
  EXPECT_NE(*tids.begin(), t->tid);
}

TEST(SimTraps, NoTrapWithoutLidOrRoute) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  // Unconfigured switches notice (PortStateChange) but have nowhere to send.
  ASSERT_TRUE(fabric->link_down({f.leaf[1], 1}).ok());
  EXPECT_TRUE(*fabric->port_state_change(f.leaf[1]));
  EXPECT_EQ(fabric->stats().traps_sent, 0U);
  // Configured but without a route to the SM: sent, and lost in the tables.
  Sm sm(*fabric);
  program_lids(sm);
  ASSERT_TRUE(fabric->link_up({f.leaf[1], 1}).ok());
  EXPECT_EQ(fabric->stats().traps_sent, 1U);
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kLftUnset), 1U);
  auto got = fabric->receive(0us);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  // Errors name what is wrong.
  auto bad = fabric->link_down("leaf0", 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("no cable"), std::string::npos);
  EXPECT_FALSE(fabric->link_down("nosuch", 1).ok());
  EXPECT_FALSE(fabric->switch_down(f.host[3]).ok());
}

TEST(SimFaults, SwitchDownAndUp) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  sm.route(kToSpine0, 5, 2);
  ASSERT_TRUE(fabric->switch_down("spine0").ok());
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(fabric->port_view({f.leaf[l], 3})->state, PortState::kDown) << l;
    EXPECT_TRUE(*fabric->port_state_change(f.leaf[l]));
  }
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToSpine0));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kLinkDown), 1U);
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, Path{1, 4, 3})) << "leaf2 via spine1";
  // Back on: as after a power cycle.
  ASSERT_TRUE(fabric->switch_up(f.spine[0]).ok());
  EXPECT_EQ(fabric->port_view({f.leaf[0], 3})->state, PortState::kInit);
  auto p0 = sm.get<mad::PortInfo>(AttrId::kPortInfo, 0, kToSpine0);
  ASSERT_TRUE(p0);
  EXPECT_EQ(p0->lid, 0) << "LIDs are lost with the power";
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{5}), 255);
  EXPECT_EQ(sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToSpine0)->linear_fdb_top, 0);
}

TEST(SimFaults, DropProbabilityOneTimesEverythingOut) {
  SimOptions opts;
  opts.seed = 42;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  ASSERT_TRUE(fabric->set_drop_probability(1.0).ok());
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost0))
      << "the SM's own node is reached without a link";
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf0));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kRandomLoss), 5U);
  EXPECT_FALSE(fabric->set_drop_probability(1.5).ok());
  EXPECT_FALSE(fabric->set_drop_probability(-0.1).ok());
  // A lossy fabric loses some, not all (seeded: deterministic).
  ASSERT_TRUE(fabric->set_drop_probability(0.3).ok());
  int answered = 0;
  for (int i = 0; i < 200; ++i)
    answered += sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf2) ? 1 : 0;
  // Six traversals per exchange: P(all survive) = 0.7^6 ~ 0.118.
  EXPECT_GT(answered, 5);
  EXPECT_LT(answered, 60);
}

TEST(SimFaults, FaultsFromAnotherThreadWakeTheEventFd) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  std::thread injector([&] {
    for (int i = 0; i < 50; ++i) {
      EXPECT_TRUE(fabric->link_down({f.host[5], 1}).ok());
      EXPECT_TRUE(fabric->link_up({f.host[5], 1}).ok());
      (void)fabric->stats();
    }
  });
  // Meanwhile the SM keeps working.
  int answered = 0;
  for (int i = 0; i < 50; ++i)
    answered += sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4) ? 1 : 0;
  injector.join();
  EXPECT_EQ(answered, 50);
  // leaf2's trap 128 came in among the answers or is waiting; the event fd
  // is readable exactly while something waits.
  std::size_t traps = 0;
  for (const Mad& m : sm.unsolicited) traps += mad::decode_smp(m.data)->method == Method::kTrap;
  for (;;) {
    pollfd pfd{fabric->event_fd(), POLLIN, 0};
    const bool readable = ::poll(&pfd, 1, 0) == 1;
    auto got = fabric->receive(0us);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(readable, got->has_value());
    if (!got->has_value()) break;
    traps += mad::decode_smp((*got)->data)->method == Method::kTrap;
  }
  EXPECT_GE(traps, 1U);
}

// ------------------------------------------------------------------ extended LIDs

TEST(SimExtended, TwentyFourBitLidsEndToEnd) {
  SimOptions opts;
  opts.lid_bits = 24;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  constexpr std::uint32_t kSm24 = 0x100001;
  constexpr std::uint32_t kHost24 = 0x123456;
  const auto set_ext = [&](const Path& p, PortNum port, std::uint32_t lid) {
    mad::ExtPortInfo e;
    e.lid = lid;
    e.master_sm_lid = kSm24;
    e.lid_bits = 24;
    ASSERT_EQ(sm.set_status(AttrId::kExtPortInfo, port, p, e), 0);
  };
  set_ext(kToHost0, 1, kSm24);
  set_ext(kToHost4, 1, kHost24);
  auto e = sm.get<mad::ExtPortInfo>(AttrId::kExtPortInfo, 1, kToHost4);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->lid, kHost24);
  EXPECT_EQ(e->lid_bits, 24);
  auto pi = sm.get<mad::PortInfo>(AttrId::kPortInfo, 1, kToHost4);
  EXPECT_EQ(pi->lid, 0xFFFF) << "a 16-bit field cannot show it";
  EXPECT_EQ(pi->master_sm_lid, 0xFFFF);
  // PortInfo Set leaves an extended port's LID alone.
  mad::PortInfo small;
  small.lid = 5;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, small), 0);
  EXPECT_EQ(sm.get<mad::ExtPortInfo>(AttrId::kExtPortInfo, 1, kToHost4)->lid, kHost24);
  // Out of range for the port's mode.
  mad::ExtPortInfo too_big;
  too_big.lid = 0x1C000;
  too_big.lid_bits = 17;
  EXPECT_EQ(sm.set_status(AttrId::kExtPortInfo, 1, kToHost4, too_big), mad::status::kInvalidField);

  auto esi = sm.get<mad::ExtSwitchInfo>(AttrId::kExtSwitchInfo, 0, kToLeaf0);
  ASSERT_TRUE(esi);
  EXPECT_EQ(esi->linear_fdb_cap, 0xF00000U);
  for (const Path& p : {kToLeaf0, kToSpine0, kToLeaf2}) {
    mad::ExtSwitchInfo top;
    top.linear_fdb_top = kHost24;
    ASSERT_EQ(sm.set_status(AttrId::kExtSwitchInfo, 0, p, top), 0);
  }
  const AttrId ext_lft = AttrId::kExtLinearForwardingTable;
  sm.route(kToLeaf0, kHost24, 3, ext_lft);
  sm.route(kToSpine0, kHost24, 3, ext_lft);
  sm.route(kToLeaf2, kHost24, 1, ext_lft);
  sm.route(kToLeaf2, kSm24, 3, ext_lft);
  sm.route(kToSpine0, kSm24, 1, ext_lft);
  sm.route(kToLeaf0, kSm24, 1, ext_lft);
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{kHost24}), 3);

  Mad raw;
  auto r = sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost24, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2040U);
  EXPECT_EQ(raw.slid, kHost24);
  EXPECT_EQ(raw.dlid, kSm24);
  // Beyond LinearFDBCap.
  EXPECT_EQ(sm.dr(Method::kGet, ext_lft, 0xF00000 / 64, kToLeaf0)->status,
            mad::status::kInvalidField);
  EXPECT_EQ(fabric->stats().drops_total(), 0U);
}

TEST(SimExtended, Trap128CarriesTheFullLid) {
  SimOptions opts;
  opts.lid_bits = 17;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  constexpr std::uint32_t kSm17 = 0x10001;
  constexpr std::uint32_t kLeaf17 = 0x1A000;
  mad::ExtPortInfo e;
  e.lid = kSm17;
  e.master_sm_lid = kSm17;
  e.lid_bits = 17;
  ASSERT_EQ(sm.set_status(AttrId::kExtPortInfo, 1, kToHost0, e), 0);
  e.lid = kLeaf17;
  ASSERT_EQ(sm.set_status(AttrId::kExtPortInfo, 0, kToLeaf0, e), 0);
  mad::ExtSwitchInfo top;
  top.linear_fdb_top = kLeaf17;
  ASSERT_EQ(sm.set_status(AttrId::kExtSwitchInfo, 0, kToLeaf0, top), 0);
  sm.route(kToLeaf0, kSm17, 1, AttrId::kExtLinearForwardingTable);
  ASSERT_TRUE(fabric->link_down({f.leaf[0], 2}).ok());
  auto got = fabric->receive(0us);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->slid, kLeaf17);
  const auto n = mad::Notice::decode(mad::data_of(*mad::decode_smp((*got)->data)));
  EXPECT_EQ(n.issuer_lid, 0xFFFF);
  EXPECT_EQ(n.trap128_lid(true), kLeaf17);
}

// ------------------------------------------------------------------ time

TEST(SimLatency, NowAdvancesByHopsAndSmaTime) {
  SimOptions opts;
  opts.latency = LatencyModel{};
  opts.latency->hop_delay = 1us;
  opts.latency->sma_processing = 5us;
  opts.latency->dr_relay = 0ns;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  for (const Path& p : {kToHost0, kToLeaf0, kToLeaf2, kToHost4}) {
    const auto t0 = fabric->now();
    ASSERT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, p));
    EXPECT_EQ(fabric->now() - t0, 2 * p.size() * 1us + 5us) << p.size() << " hops";
  }
}

TEST(SimLatency, DrRelayAndLidRoutedTiming) {
  SimOptions opts;
  opts.latency = LatencyModel{};
  opts.latency->hop_delay = 100ns;
  opts.latency->sma_processing = 2us;
  opts.latency->dr_relay = 700ns;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  auto t0 = fabric->now();
  ASSERT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4));
  // 8 link crossings; leaf0, spine0, leaf2 relay each way.
  EXPECT_EQ(fabric->now() - t0, 8 * 100ns + 2us + 6 * 700ns);
  program_lids(sm);
  program_routes_sm_host4(sm);
  t0 = fabric->now();
  ASSERT_TRUE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->now() - t0, 8 * 100ns + 2us) << "switches forward LID-routed SMPs in hardware";
}

TEST(SimLatency, SmaQueueOverflowDrops) {
  SimOptions opts;
  opts.latency = LatencyModel{};
  opts.latency->sma_processing = 1ms;
  opts.latency->sma_queue_depth = 2;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  for (int i = 0; i < 5; ++i) {
    mad::Smp s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, kToHost0, 0x10U + i);
    Mad m;
    mad::encode_smp(s, std::span<std::uint8_t, kMadSize>(m.data));
    ASSERT_TRUE(fabric->send(m).ok());
  }
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kSmaQueueFull), 3U);
  int answers = 0;
  for (;;) {
    auto got = fabric->receive(10ms);
    ASSERT_TRUE(got.ok());
    if (!got->has_value()) break;
    ++answers;
  }
  EXPECT_EQ(answers, 2);
}

TEST(SimTime, ZeroLatencyReceiveTimeoutAdvancesTheClock) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  EXPECT_EQ(fabric->now(), 0ns);
  auto got = fabric->receive(250ms);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(fabric->now(), 250ms);
  Sm sm(*fabric);
  ASSERT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4));
  EXPECT_EQ(fabric->now(), 250ms) << "answers take no time without a latency model";
}

// ------------------------------------------------------------------ bad input

TEST(SimBadInput, MalformedMadsAreCountedAndDropped) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Mad m;
  m.data[0] = 2;  // base version
  ASSERT_TRUE(fabric->send(m).ok());
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kMalformed), 1U);

  // Random bytes and randomly corrupted valid SMPs (fixed seed): nothing
  // crashes, every MAD is accounted for, and the fabric still works.
  const std::uint64_t seed = 20261130;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  const mad::Smp valid = mad::make_dr_smp(Method::kGet, AttrId::kPortInfo, 3, kToLeaf2, 7);
  const auto valid_bytes = mad::encode_smp(valid);
  for (int i = 0; i < 4000; ++i) {
    if (i % 2 == 0) {
      for (auto& b : m.data) b = static_cast<std::uint8_t>(rng());
    } else {
      std::copy(valid_bytes.begin(), valid_bytes.end(), m.data.begin());
      for (int k = 0; k < 3; ++k) m.data[rng() % 64] = static_cast<std::uint8_t>(rng());
      if (rng() % 2 == 0) m.data[128 + rng() % 128] = static_cast<std::uint8_t>(rng() % 8);
    }
    m.dlid = static_cast<std::uint32_t>(rng() % 0x20000);
    ASSERT_TRUE(fabric->send(m).ok());
  }
  for (;;) {
    auto got = fabric->receive(0us);
    ASSERT_TRUE(got.ok());
    if (!got->has_value()) break;
  }
  const SimStats st = fabric->stats();
  EXPECT_EQ(st.sent_by_sm, 4001U);
  EXPECT_GT(st.drops_of(DropReason::kMalformed), 2000U);
  Sm sm(*fabric);
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4));
}

TEST(SimBadInput, CreateRejectsBadOptions) {
  SimOptions opts;
  opts.lid_bits = 20;
  EXPECT_FALSE(SimFabric::create(build_small().topo, opts).ok());
  opts = {};
  opts.sm_node = "leaf0";
  auto r = SimFabric::create(build_small().topo, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("CA port"), std::string::npos);
  opts.sm_node = "host3";
  opts.sm_port = 2;
  EXPECT_FALSE(SimFabric::create(build_small().topo, opts).ok());
  opts.sm_port = 1;
  r = SimFabric::create(build_small().topo, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->local_port().node_guid.value, 0x2030U);
  EXPECT_EQ((*r)->local_port().port_guid.value, 0x2031U);
  opts = {};
  opts.sm_guid = Guid{0x2051};  // host5's port GUID
  r = SimFabric::create(build_small().topo, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->local_port().ca_name, "host5");
  opts = {};
  opts.drop_probability = 2;
  EXPECT_FALSE(SimFabric::create(build_small().topo, opts).ok());
}

// ------------------------------------------------------------------ generated fabrics

TEST(SimGenerated, EveryNodeOfAFatTreeAnswersAlongABfsPath) {
  auto topo = topo::generate("fat-tree:levels=3,k=8");
  ASSERT_TRUE(topo.ok()) << topo.error().message;
  const routing::Topology copy = *topo;
  auto fabric = SimFabric::create(std::move(topo).value(), {});
  ASSERT_TRUE(fabric.ok());
  SimFabric& sim = **fabric;
  Sm sm(sim);
  // BFS over the wiring from the SM; every node must answer NodeInfo with
  // its own GUID and the port it was entered by.
  const PortRef sm_port{*copy.find_by_guid(sim.local_port().node_guid), sim.local_port().port_num};
  std::vector<Path> path(copy.num_nodes());
  std::vector<PortNum> entered(copy.num_nodes(), 0);
  std::vector<bool> seen(copy.num_nodes(), false);
  std::vector<NodeId> queue{sm_port.node};
  seen[sm_port.node.value] = true;
  entered[sm_port.node.value] = sm_port.port;
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const NodeId n = queue[q];
    const routing::Node& node = copy.node(n);
    if (node.type != NodeType::kSwitch && n != sm_port.node) continue;
    for (unsigned p = 1; p <= node.num_ports; ++p) {
      if (n == sm_port.node && p != sm_port.port) continue;
      const routing::Port& port = copy.port(n, static_cast<PortNum>(p));
      if (!port.connected() || seen[port.remote_node.value]) continue;
      seen[port.remote_node.value] = true;
      path[port.remote_node.value] = path[n.value];
      path[port.remote_node.value].push_back(static_cast<std::uint8_t>(p));
      entered[port.remote_node.value] = port.remote_port;
      queue.push_back(port.remote_node);
    }
  }
  ASSERT_EQ(queue.size(), copy.num_nodes());
  for (NodeId n : queue) {
    auto ni = sm.get<mad::NodeInfo>(AttrId::kNodeInfo, 0, path[n.value]);
    ASSERT_TRUE(ni) << copy.node(n).description;
    EXPECT_EQ(ni->node_guid, copy.node(n).guid.value);
    EXPECT_EQ(ni->local_port_num, entered[n.value]);
  }
  EXPECT_EQ(sim.stats().drops_total(), 0U);
}

}  // namespace
}  // namespace subnetd::discovery::sim

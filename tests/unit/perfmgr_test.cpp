// The performance manager: PMA codecs, its bookkeeping (deltas, clears,
// saturation), and counter sweeps of the SM over the simulator's PMAs
// (traffic model, injected errors, a link going down), on a manual clock.

#include <gtest/gtest.h>

#include <atomic>

#include "daemon/perfmgr/perf_manager.hpp"
#include "daemon_test_support.hpp"
#include "discovery/mad/pma.hpp"

namespace subnetd::daemon {
namespace {

namespace pma = discovery::mad::pma;
using namespace std::chrono_literals;

TEST(PmaCodec, PortCountersRoundTripAndSaturate) {
  pma::PortCounters c;
  c.symbol_errors = 70000;  // beyond 16 bits: the wire saturates it
  c.link_downed = 3;
  c.rcv_errors = 9;
  c.link_integrity = 20;  // 4 bits
  c.buffer_overrun = 2;
  c.vl15_dropped = 7;
  c.xmit_words = 0xDEADBEEF;
  c.rcv_pkts = 12345;
  c.xmit_wait = 99;
  std::array<std::uint8_t, 192> data{};
  pma::encode_port_counters(c, 5, data);
  const pma::PortCounters back = pma::decode_port_counters(data);
  EXPECT_EQ(pma::port_select(data), 5);
  EXPECT_EQ(back.symbol_errors, 0xFFFFU);
  EXPECT_EQ(back.link_integrity, 0xFU);
  EXPECT_EQ(back.buffer_overrun, 2U);
  EXPECT_EQ(back.link_downed, 3U);
  EXPECT_EQ(back.vl15_dropped, 7U);
  EXPECT_EQ(back.xmit_words, 0xDEADBEEFU);
  EXPECT_EQ(back.rcv_pkts, 12345U);
  EXPECT_EQ(back.xmit_wait, 99U);
  EXPECT_TRUE(back.near_saturation(0.75));
  EXPECT_FALSE(pma::PortCounters{}.near_saturation(0.75));

  pma::PortCountersExtended x{1, 2, 3, 4, 5, 6, 7, 0xFFFFFFFFFFULL};
  pma::encode_port_counters_ext(x, 9, data);
  EXPECT_EQ(pma::decode_port_counters_ext(data), x);

  const discovery::Mad clear = pma::make_clear(4, 0x12, 77);
  auto h = pma::decode_header(clear.data);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->method, 0x02);
  EXPECT_EQ(h->attr, pma::Attr::kPortCounters);
  EXPECT_EQ(h->tid, 77U);
  EXPECT_EQ(pma::counter_select(std::span(clear.data).subspan(pma::kDataOffset)), 0xFFFF);
  EXPECT_EQ(clear.dlid, 0x12U);
  discovery::Mad smp;
  smp.data[0] = 1;
  smp.data[1] = 0x81;
  EXPECT_FALSE(pma::decode_header(smp.data).ok());
}

TEST(PerfManager, DeltasTotalsAndCountersThatWereCleared) {
  perfmgr::PerfManager pm;
  const std::vector<perfmgr::Target> targets = {{NodeId{0}, Guid{0xa}, 1, 5},
                                                {NodeId{1}, Guid{0xb}, 2, 6}};
  const auto t0 = std::chrono::system_clock::time_point{} + 1000s;
  pma::PortCounters a;
  a.symbol_errors = 4;
  a.xmit_words = 100;
  std::vector<perfmgr::Reading> r(2);
  r[0].counters = a;  // port b does not answer
  auto s1 = pm.ingest(targets, r, t0, 5ms, "b: timeout");
  EXPECT_EQ(s1->ports_read, 1U);
  EXPECT_EQ(s1->ports_failed, 1U);
  EXPECT_EQ(s1->last_error, "b: timeout");
  const state::PortCounterEntry* e = s1->find(Guid{0xa}, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->total.symbol_errors, 4U);  // the first reading is the total so far
  EXPECT_EQ(e->total.xmit_bytes, 400U);
  EXPECT_EQ(e->delta.errors(), 0U);
  // Errors it shows at its first reading are new to the operator.
  ASSERT_EQ(pm.erring().size(), 1U);
  EXPECT_EQ(perfmgr::PerfManager::new_errors(*pm.erring()[0]), 4U);

  a.symbol_errors = 10;
  a.xmit_words = 300;
  r[0].counters = a;
  r[0].cleared = true;  // and then cleared: the next delta counts from zero
  r[1].counters = pma::PortCounters{};
  auto s2 = pm.ingest(targets, r, t0 + 60s, 5ms, "");
  e = s2->find(Guid{0xa}, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->delta.symbol_errors, 6U);
  EXPECT_EQ(e->delta.xmit_bytes, 800U);
  EXPECT_EQ(e->total.symbol_errors, 10U);
  EXPECT_DOUBLE_EQ(e->interval_s, 60.0);
  EXPECT_EQ(e->clears, 1U);
  ASSERT_EQ(pm.erring().size(), 1U);
  EXPECT_EQ(pm.erring()[0]->node_guid, Guid{0xa});

  a = {};
  a.symbol_errors = 2;  // since the clear
  r[0] = {};
  r[0].counters = a;
  auto s3 = pm.ingest(targets, r, t0 + 120s, 5ms, "");
  e = s3->find(Guid{0xa}, 1);
  EXPECT_EQ(e->delta.symbol_errors, 2U);
  EXPECT_EQ(e->total.symbol_errors, 12U);

  // Someone else cleared it (perfquery -R): a lower value is the new delta.
  a.symbol_errors = 1;
  r[0].counters = a;
  auto s4 = pm.ingest(targets, r, t0 + 180s, 5ms, "");
  EXPECT_EQ(s4->find(Guid{0xa}, 1)->delta.symbol_errors, 1U);
  EXPECT_EQ(s4->find(Guid{0xa}, 1)->total.symbol_errors, 13U);
}

// A port that leaves the targets (its link went down) keeps its totals
// until it comes back; targets in any order give a snapshot by key.
TEST(PerfManager, HistoryFollowsPortsAcrossTargetChanges) {
  perfmgr::PerfManager pm;
  const perfmgr::Target a{NodeId{0}, Guid{0xa}, 1, 5};
  const perfmgr::Target b{NodeId{1}, Guid{0xb}, 2, 6};
  const perfmgr::Target c{NodeId{2}, Guid{0x9}, 3, 7};
  const auto t0 = std::chrono::system_clock::time_point{} + 1000s;
  auto reading = [](std::uint32_t errors) {
    perfmgr::Reading r;
    r.counters = pma::PortCounters{};
    r.counters->symbol_errors = errors;
    return r;
  };
  pm.ingest({a, b}, {reading(1), reading(10)}, t0, 1ms, "");
  auto s2 = pm.ingest({a}, {reading(3)}, t0 + 60s, 1ms, "");  // b's link is down
  ASSERT_EQ(s2->ports.size(), 1U);
  EXPECT_EQ(s2->find(Guid{0xa}, 1)->delta.symbol_errors, 2U);
  // b is back, c is new, and the caller's order is not by key.
  auto s3 = pm.ingest({b, c, a}, {reading(15), reading(4), reading(3)}, t0 + 120s, 1ms, "");
  ASSERT_EQ(s3->ports.size(), 3U);
  EXPECT_EQ(s3->ports[0].node_guid, Guid{0x9});
  EXPECT_EQ(s3->ports[2].node_guid, Guid{0xb});
  const state::PortCounterEntry* eb = s3->find(Guid{0xb}, 2);
  ASSERT_NE(eb, nullptr);
  EXPECT_EQ(eb->delta.symbol_errors, 5U);
  EXPECT_EQ(eb->total.symbol_errors, 15U);
  EXPECT_DOUBLE_EQ(eb->interval_s, 120.0);
  EXPECT_EQ(s3->find(Guid{0x9}, 3)->total.symbol_errors, 4U);
  EXPECT_EQ(s3->find(Guid{0x9}, 3)->interval_s, 0.0);  // a first reading
  EXPECT_EQ(s3->find(Guid{0xa}, 1)->delta.symbol_errors, 0U);
  // A port that does not answer keeps its totals, with no delta.
  std::vector<perfmgr::Reading> r4{reading(15), perfmgr::Reading{}, reading(3)};
  auto s4 = pm.ingest({b, c, a}, r4, t0 + 180s, 1ms, "");
  EXPECT_EQ(s4->ports_failed, 1U);
  EXPECT_EQ(s4->find(Guid{0x9}, 3)->total.symbol_errors, 4U);
  EXPECT_EQ(s4->find(Guid{0x9}, 3)->delta.errors(), 0U);
}

// The SM reading counters every 10 s of its manual clock; the simulator's
// traffic accrues on a clock the test moves too.
struct CounterSm {
  std::atomic<std::int64_t> traffic_ns{0};
  state::CounterBoard board;
  testing::SimSm h;

  CounterSm()
      : h(
            "fat-tree:levels=2,radix=8", [](Config& c) { c.perfmgr.interval = 10s; }, {}, {},
            [this](discovery::sim::SimOptions& o) {
              o.traffic_clock = [this] { return std::chrono::nanoseconds{traffic_ns.load()}; };
            }) {
    h.sm->attach_counters(&board);
    h.start();
  }
  // One period: traffic for `secs`, then the counter sweep it starts.
  std::shared_ptr<const state::PortCounterSnapshot> period(std::int64_t secs = 10) {
    const std::uint64_t before = board.current()->sweep;
    traffic_ns += secs * 1'000'000'000;
    h.clock.advance(10s);
    EXPECT_TRUE(testing::wait_idle(*h.sm));
    auto s = board.current();
    EXPECT_EQ(s->sweep, before + 1);
    return s;
  }
  const state::PortCounterEntry& entry(const std::shared_ptr<const state::PortCounterSnapshot>& s,
                                       std::string_view node, PortNum port) const {
    const routing::Topology& t = h.sim->topology();
    const state::PortCounterEntry* e = s->find(t.node(*t.find_by_name(node)).guid, port);
    EXPECT_NE(e, nullptr) << node << "/" << int{port};
    static const state::PortCounterEntry none;
    return e != nullptr ? *e : none;
  }
};

TEST(CounterSweep, ReadsEveryPortAndSeesTrafficAndInjectedErrors) {
  CounterSm c;
  ASSERT_NE(c.h.publisher.wait_for(testing::master, 20s), nullptr);
  ASSERT_TRUE(testing::wait_idle(*c.h.sm));
  EXPECT_EQ(c.board.current()->sweep, 0U);  // none before the first period

  auto s1 = c.period();
  // 32 CA cables and 32 leaf-spine cables, both ends each.
  EXPECT_EQ(s1->ports_read, 128U);
  EXPECT_EQ(s1->ports_failed, 0U);
  const PortNum up = c.h.port_to("leaf1", "spine0");
  EXPECT_TRUE(c.entry(s1, "leaf1", up).extended);

  // Errors on one port; traffic everywhere.
  const routing::Topology& t = c.h.sim->topology();
  const NodeId leaf1 = *t.find_by_name("leaf1");
  discovery::sim::PortErrors e;
  e.symbol_errors = 12;
  e.rcv_errors = 3;
  ASSERT_TRUE(c.h.sim->inject_port_errors({leaf1, up}, e).ok());
  const std::int64_t last_event = c.h.events.last_id();
  auto s2 = c.period();
  const state::PortCounterEntry& x = c.entry(s2, "leaf1", up);
  EXPECT_EQ(x.delta.symbol_errors, 12U);
  EXPECT_EQ(x.delta.rcv_errors, 3U);
  EXPECT_GT(x.interval_s, 0.0);
  // What one end sends the other receives (the traffic model's 10 s).
  const state::PortCounterEntry& peer = c.entry(s2, "spine0", c.h.port_to("spine0", "leaf1"));
  EXPECT_GT(x.delta.xmit_bytes, 0U);
  EXPECT_NEAR(static_cast<double>(x.delta.xmit_bytes), static_cast<double>(peer.delta.rcv_bytes),
              8.0);
  // One event, naming the port and what rose.
  auto evs = c.h.events.since(last_event, 100);
  ASSERT_TRUE(evs.ok());
  std::vector<state::Event> counters;
  for (const state::Event& ev : *evs) {
    if (ev.kind == state::EventKind::kCounters) counters.push_back(ev);
  }
  ASSERT_EQ(counters.size(), 1U);
  EXPECT_EQ(counters[0].port, up);
  EXPECT_NE(counters[0].message.find("12 symbol errors, 3 receive errors"), std::string::npos)
      << counters[0].message;

  // Near saturation: read, then cleared; the next delta counts from zero.
  e = {};
  e.symbol_errors = 60000;
  ASSERT_TRUE(c.h.sim->inject_port_errors({leaf1, up}, e).ok());
  auto s3 = c.period();
  EXPECT_EQ(c.entry(s3, "leaf1", up).delta.symbol_errors, 60000U);
  EXPECT_EQ(c.entry(s3, "leaf1", up).clears, 1U);
  auto after = c.h.sim->port_counters({leaf1, up});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->symbol_errors, 0U);
  e.symbol_errors = 5;
  ASSERT_TRUE(c.h.sim->inject_port_errors({leaf1, up}, e).ok());
  auto s4 = c.period();
  EXPECT_EQ(c.entry(s4, "leaf1", up).delta.symbol_errors, 5U);
  EXPECT_EQ(c.entry(s4, "leaf1", up).total.symbol_errors, 60017U);
}

TEST(CounterSweep, ALinkThatGoesDownCountsOnBothEnds) {
  CounterSm c;
  ASSERT_NE(c.h.publisher.wait_for(testing::master, 20s), nullptr);
  ASSERT_TRUE(testing::wait_idle(*c.h.sm));
  c.period();
  const routing::Topology& t = c.h.sim->topology();
  const NodeId leaf2 = *t.find_by_name("leaf2");
  const PortNum up = c.h.port_to("leaf2", "spine3");
  ASSERT_TRUE(c.h.sim->link_down({leaf2, up}).ok());
  ASSERT_TRUE(testing::wait_idle(*c.h.sm));  // the repair
  ASSERT_TRUE(c.h.sim->link_up({leaf2, up}).ok());
  ASSERT_TRUE(c.h.sim->restore_link({leaf2, up}).ok());
  auto pc = c.h.sim->port_counters({leaf2, up});
  ASSERT_TRUE(pc.ok());
  EXPECT_EQ(pc->link_downed, 1U);
  auto peer =
      c.h.sim->port_counters({t.port(leaf2, up).remote_node, t.port(leaf2, up).remote_port});
  ASSERT_TRUE(peer.ok());
  EXPECT_EQ(peer->link_downed, 1U);
}

}  // namespace
}  // namespace subnetd::daemon

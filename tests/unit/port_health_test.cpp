// The fault-handling policy (issue 16, item 4): PortHealth's rules alone,
// who a link's removal cuts off, its YAML, its audit in the store, and the
// SM isolating flapping and erring links on the simulator (manual clock).

#include "daemon/health/port_health.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "daemon/config.hpp"
#include "daemon/store.hpp"
#include "tests/unit/daemon_test_support.hpp"

namespace subnetd::daemon {
namespace {

using namespace std::chrono_literals;
using health::HealthPolicy;
using health::LinkEnds;
using health::PortHealth;
using T = PortHealth::Time;

HealthPolicy policy3() {
  HealthPolicy p;
  p.flap_count = 3;
  p.flap_window = 10min;
  p.hold_down = 5min;
  return p;
}

const LinkEnds kLink = LinkEnds::of(Guid{0x20}, 3, Guid{0x10}, 7);

TEST(PortHealth, LinkEndsAreOrdered) {
  EXPECT_EQ(kLink.a, Guid{0x10});
  EXPECT_EQ(kLink.pa, 7);
  EXPECT_EQ(kLink, LinkEnds::of(Guid{0x10}, 7, Guid{0x20}, 3));
}

TEST(PortHealth, FlapsCountOncePerDownAndOnlyWithinTheWindow) {
  PortHealth h(policy3());
  const T t0{1h};
  EXPECT_FALSE(h.link_down(kLink, t0));
  // The fast path and the next sweep report the same failure: one flap.
  EXPECT_FALSE(h.link_down(kLink, t0 + 1s));
  h.link_up(kLink);
  EXPECT_FALSE(h.link_down(kLink, t0 + 2min));
  h.link_up(kLink);
  // The first down left the 10 min window: still two.
  EXPECT_FALSE(h.link_down(kLink, t0 + 11min));
  h.link_up(kLink);
  auto v = h.link_down(kLink, t0 + 12min);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->cause, state::HealthCause::kFlapping);
  EXPECT_EQ(v->link, kLink);
  EXPECT_EQ(v->reason, "3 link downs in 10 min (limit 3 in 10 min)");
  // While the SM acts on it, more flaps ask nothing more.
  h.link_up(kLink);
  EXPECT_FALSE(h.link_down(kLink, t0 + 12min + 1s));
}

TEST(PortHealth, IsolatedUntilTheHoldDownThenHistoryStartsAgain) {
  PortHealth h(policy3());
  const T t0{1h};
  std::optional<PortHealth::Verdict> v;
  for (int i = 0; i < 3; ++i) {
    v = h.link_down(kLink, t0 + i * 10s);
    h.link_up(kLink);
  }
  ASSERT_TRUE(v);
  v->node = kLink.a;
  v->port = kLink.pa;
  h.isolated(*v, t0 + 30s);
  EXPECT_TRUE(h.is_isolated(kLink));
  EXPECT_EQ(h.next_deadline(), t0 + 30s + 5min);
  // Its own disabling is no flap.
  EXPECT_FALSE(h.link_down(kLink, t0 + 31s));
  EXPECT_TRUE(h.due(t0 + 5min).empty());
  ASSERT_EQ(h.due(t0 + 30s + 5min).size(), 1U);
  EXPECT_EQ(h.link_of(kLink.b, kLink.pb), kLink);
  h.restored(kLink);
  EXPECT_FALSE(h.is_isolated(kLink));
  EXPECT_EQ(h.tracks().at(kLink).isolations, 1U);
  // Coming back up is not a flap; the count starts from zero.
  h.link_up(kLink);
  EXPECT_FALSE(h.link_down(kLink, t0 + 6min));
  h.link_up(kLink);
  EXPECT_FALSE(h.link_down(kLink, t0 + 6min + 1s));
}

TEST(PortHealth, RefusalsStayFlaggedWithoutAskingAgainAndLapse) {
  PortHealth h(policy3());
  const T t0{1h};
  std::optional<PortHealth::Verdict> v;
  for (int i = 0; i < 3; ++i) {
    v = h.link_down(kLink, t0 + i * 1s);
    h.link_up(kLink);
  }
  ASSERT_TRUE(v);
  h.refused(*v, t0 + 3s, "; would disconnect");
  EXPECT_FALSE(h.link_down(kLink, t0 + 4s));  // flagged already: no new verdict
  EXPECT_EQ(h.tracks().at(kLink).status, state::HealthStatus::kRefused);
  EXPECT_TRUE(h.due(t0 + 1h).empty());  // nothing to restore
  h.link_up(kLink);
  h.expire(t0 + 4s + 5min + 1s);
  EXPECT_FALSE(h.tracks().contains(kLink) && h.tracks().at(kLink).status);
  // Long quiet: forgotten entirely.
  h.expire(t0 + 1h);
  EXPECT_FALSE(h.tracks().contains(kLink));
}

TEST(PortHealth, OperatorDisableIsNoFlapAndOffMeansOff) {
  PortHealth h(policy3());
  const T t0{1h};
  h.operator_disabled(kLink);
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(h.link_down(kLink, t0 + i * 1s));
    h.link_up(kLink);
  }
  HealthPolicy off = policy3();
  off.enabled = false;
  PortHealth h2(off);
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(h2.link_down(kLink, t0 + i * 1s));
    h2.link_up(kLink);
  }
}

TEST(PortHealth, ErrorRateAboveTheLimit) {
  HealthPolicy p = policy3();
  PortHealth off(p);  // error_rate 0: errors are no cause
  EXPECT_FALSE(off.port_errors(kLink, 1'000'000, 60, T{1h}));
  p.error_rate = 100;
  PortHealth h(p);
  EXPECT_FALSE(h.port_errors(kLink, 100, 60, T{1h}));  // 100/min: at the limit
  EXPECT_FALSE(h.port_errors(kLink, 500, 0, T{1h}));   // a first reading has no rate
  auto v = h.port_errors(kLink, 50, 10, T{1h});        // 300/min
  ASSERT_TRUE(v);
  EXPECT_EQ(v->cause, state::HealthCause::kErrors);
  EXPECT_EQ(v->reason, "50 errors in 10 s (300 per minute, limit 100)");
  EXPECT_DOUBLE_EQ(h.tracks().at(kLink).errors_per_minute, 300.0);
}

TEST(EndpointsCutOff, CaLinksAndTheOnlyPathOut) {
  // A 2-level fat tree of 4-port switches: each leaf has 2 hosts and 2
  // uplinks. Seen from a host of leaf0.
  auto g = discovery::topo::generate("fat-tree:levels=2,radix=4");
  ASSERT_TRUE(g.ok());
  routing::Topology t = std::move(g).value();
  auto ports_of = [&t](NodeId leaf, routing::NodeType type) {
    std::vector<PortNum> out;
    for (unsigned p = 1; p <= t.node(leaf).num_ports; ++p) {
      const routing::Port& x = t.port(leaf, static_cast<PortNum>(p));
      if (x.connected() && t.node(x.remote_node).type == type) {
        out.push_back(static_cast<PortNum>(p));
      }
    }
    return out;
  };
  const NodeId leaf0 = *t.find_by_name("leaf0");
  const NodeId leaf1 = *t.find_by_name("leaf1");
  const NodeId sm = t.port(leaf0, ports_of(leaf0, routing::NodeType::kCa).at(0)).remote_node;
  const auto hosts = ports_of(leaf1, routing::NodeType::kCa);
  const auto ups = ports_of(leaf1, routing::NodeType::kSwitch);
  ASSERT_EQ(hosts.size(), 2U);
  ASSERT_EQ(ups.size(), 2U);
  // A host's link: that host's port.
  EXPECT_EQ(health::endpoints_cut_off(t, sm, leaf1, hosts[0]), 1U);
  // One of two uplinks: nobody.
  EXPECT_EQ(health::endpoints_cut_off(t, sm, leaf1, ups[0]), 0U);
  // With the other uplink gone, the last one carries leaf1's two hosts.
  t.disconnect({leaf1, ups[1]});
  EXPECT_EQ(health::endpoints_cut_off(t, sm, leaf1, ups[0]), 2U);
  // The SM's own link cuts the SM's port off (and so everyone else).
  EXPECT_GE(health::endpoints_cut_off(t, sm, leaf0, ports_of(leaf0, routing::NodeType::kCa)[0]),
            1U);
}

TEST(HealthConfig, KeysAndErrors) {
  const std::string base = "fabric:\n  topology: \"fat-tree:levels=2,radix=4\"\n";
  auto r = parse_config(base +
                            "health:\n  enabled: true\n  flap_count: 3\n  flap_window: 2m\n"
                            "  error_rate: 500\n  hold_down: 1h\n  isolate_disconnecting: true\n",
                        "t.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->health.flap_count, 3U);
  EXPECT_EQ(r->health.flap_window, 2min);
  EXPECT_EQ(r->health.error_rate, 500U);
  EXPECT_EQ(r->health.hold_down, 1h);
  EXPECT_TRUE(r->health.isolate_disconnecting);
  auto bad = parse_config(base + "health:\n  hold_down: 0s\n", "t.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("t.yaml:4:14: health.hold_down"), std::string::npos)
      << bad.error().message;
  auto typo = parse_config(base + "health:\n  flap_cuont: 3\n", "t.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("health.flap_cuont"), std::string::npos);
}

TEST(HealthStore, AuditAndTheIsolationsThatSurviveARestart) {
  char tmpl[] = "/tmp/subnetd-health-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    auto s = Store::open(dir + "/subnetd.db");
    ASSERT_TRUE(s.ok()) << s.error().message;
    Store& st = **s;
    HealthAction a;
    a.at = state::WallTime{std::chrono::seconds{1'000}};
    a.node_guid = Guid{0x10};
    a.port = 7;
    a.peer_guid = Guid{0x20};
    a.peer_port = 3;
    a.action = "isolate";
    a.cause = "flapping";
    a.reason = "3 link downs";
    a.who = "policy";
    a.until = a.at + std::chrono::minutes{5};
    ASSERT_TRUE(st.record_health_action(a).ok());
    HealthAction b = a;  // another link, isolated then returned
    b.node_guid = Guid{0x30};
    ASSERT_TRUE(st.record_health_action(b).ok());
    b.action = "restore";
    b.cause = "";
    b.until.reset();
    b.who = "operator";
    ASSERT_TRUE(st.record_health_action(b).ok());
    HealthAction bad = a;
    bad.action = "explode";
    auto e = st.record_health_action(bad);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message.find("\"explode\""), std::string::npos);
  }
  auto s = Store::open(dir + "/subnetd.db");
  ASSERT_TRUE(s.ok());
  auto active = (*s)->active_isolations();
  ASSERT_TRUE(active.ok()) << active.error().message;
  ASSERT_EQ(active->size(), 1U);
  EXPECT_EQ((*active)[0].node_guid, Guid{0x10});
  EXPECT_EQ((*active)[0].until, state::WallTime{std::chrono::seconds{1'300}});
  auto all = (*s)->health_actions(10);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3U);
  EXPECT_EQ((*all)[0].action, "restore");
  EXPECT_EQ((*all)[0].who, "operator");
  std::filesystem::remove_all(dir);
}

// The SM on a 2-level fat tree (radix 8: each leaf has 4 hosts and 4
// uplinks) with the policy at 3 flaps in 10 min and a 5 min hold-down.
struct HealthSm {
  state::HealthBoard board;
  state::CounterBoard counters;
  testing::SimSm h;

  explicit HealthSm(const std::function<void(Config&)>& more = {})
      : h("fat-tree:levels=2,radix=8", [&more](Config& c) {
          c.health.flap_count = 3;
          c.health.flap_window = 10min;
          c.health.hold_down = 5min;
          c.perfmgr.interval = 0ms;
          if (more) more(c);
        }) {
    h.sm->attach_health(&board);
    h.sm->attach_counters(&counters);
    h.start();
    EXPECT_TRUE(settle());
  }
  // Until nothing is due within 5 s (below the counter period of the test
  // that runs one).
  bool settle() { return h.settle(5s); }
  // Cuts the cable and lets the SM repair, then plugs it back in and lets
  // it sweep (the link comes up again).
  void flap(PortRef end, bool back_up = true) {
    ASSERT_TRUE(h.sim->link_down(end).ok());
    ASSERT_TRUE(settle());
    if (!back_up) return;
    ASSERT_TRUE(h.sim->link_up(end).ok());
    ASSERT_TRUE(settle());
  }
  bool link_in_fabric(PortRef end) const {
    const auto s = h.publisher.current();
    const routing::Topology& t = *s->topology;
    const routing::Topology& st = h.sim->topology();
    auto n = t.find_by_guid(st.node(end.node).guid);
    return n && t.port(*n, end.port).connected();
  }
  std::uint8_t phys(PortRef p) const { return h.sim->port_view(p).value().phys_state; }
};

TEST(HealthSm, AFlappingLinkIsIsolatedAfterNFlapsAndReturnsAfterTheHoldDown) {
  HealthSm s;
  const routing::Topology& t = s.h.sim->topology();
  const NodeId leaf1 = *t.find_by_name("leaf1");
  const PortRef end{leaf1, s.h.port_to("leaf1", "spine2")};
  const PortRef far{t.port(end.node, end.port).remote_node, t.port(end.node, end.port).remote_port};
  s.flap(end);
  s.flap(end);
  EXPECT_TRUE(s.board.current()->ports.empty());
  EXPECT_TRUE(s.link_in_fabric(end));
  // The third down crosses the limit: one end is disabled, and the cable
  // plugged back in stays dark.
  s.flap(end);
  auto snap = s.board.current();
  ASSERT_EQ(snap->ports.size(), 1U);
  const state::UnhealthyPort& u = snap->ports[0];
  EXPECT_EQ(u.status, state::HealthStatus::kIsolated);
  EXPECT_EQ(u.cause, state::HealthCause::kFlapping);
  EXPECT_EQ(u.downs.size(), 3U);
  EXPECT_NE(u.reason.find("3 link downs"), std::string::npos) << u.reason;
  ASSERT_TRUE(u.until);
  EXPECT_NEAR(std::chrono::duration<double>(*u.until - u.since).count(), 300.0, 1.0);
  EXPECT_EQ(snap->isolated_total, 1U);
  EXPECT_TRUE(s.phys(end) == 3 || s.phys(far) == 3);
  EXPECT_FALSE(s.link_in_fabric(end));
  EXPECT_EQ(s.h.events_of(state::EventKind::kHealth), 1U);
  auto v = s.h.verify();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, state::Verdict::kOk) << v->message;

  // Hold-down over: enabled again, swept in, listed no more.
  s.h.clock.advance(5min);
  ASSERT_TRUE(s.settle());
  EXPECT_NE(s.phys(end), 3);  // not Disabled
  EXPECT_NE(s.phys(far), 3);
  EXPECT_TRUE(s.link_in_fabric(end));
  snap = s.board.current();
  EXPECT_TRUE(snap->ports.empty());
  EXPECT_EQ(snap->restored_total, 1U);
  EXPECT_EQ(s.h.events_of(state::EventKind::kHealth), 2U);
  // Its history started again: two more flaps isolate nothing.
  s.flap(end);
  s.flap(end);
  EXPECT_TRUE(s.board.current()->ports.empty());
}

TEST(HealthSm, AStandbyLeavesAnIsolatedLinkAloneUntilItIsMasterAgain) {
  HealthSm s([](Config& c) { c.sm.priority = 5; });
  const routing::Topology& t = s.h.sim->topology();
  const PortRef end{*t.find_by_name("leaf1"), s.h.port_to("leaf1", "spine2")};
  const PortRef far{t.port(end.node, end.port).remote_node, t.port(end.node, end.port).remote_port};
  for (int i = 0; i < 3; ++i) s.flap(end);
  auto dark = [&] { return s.phys(end) == 3 || s.phys(far) == 3; };
  ASSERT_TRUE(dark());
  // A higher SM comes up: our next sweep hands the subnet over.
  PortRef peer;
  for (std::uint32_t n = t.num_nodes(); n-- > 0 && peer.port == 0;) {
    if (t.node(NodeId{n}).type == routing::NodeType::kCa) peer = PortRef{NodeId{n}, 1};
  }
  ASSERT_TRUE(s.h.sim->set_peer_sm(peer, discovery::sim::PeerSmOptions{12, 2, 1}).ok());
  s.h.sweep_now();
  ASSERT_TRUE(testing::wait_for_state(s.h.publisher, [](const state::FabricState& f) {
    return f.state == state::SmState::kStandby;
  }));
  // The hold-down ends while we stand by: the link is the master's now.
  s.h.clock.advance(5min);
  ASSERT_TRUE(testing::wait_idle(*s.h.sm));
  EXPECT_TRUE(dark()) << "a standby enabled a port";
  EXPECT_EQ(s.board.current()->restored_total, 0U);
  // The master dies: we take over, and carry out the hold-down that ended.
  ASSERT_TRUE(s.h.sim->set_peer_sm_alive(peer, false).ok());
  for (int i = 0; i < 10 && s.h.publisher.current()->state != state::SmState::kMaster; ++i) {
    s.h.clock.advance(500ms);
    ASSERT_TRUE(testing::wait_idle(*s.h.sm));
  }
  ASSERT_TRUE(s.settle());
  EXPECT_FALSE(dark());
  EXPECT_EQ(s.board.current()->restored_total, 1U);
}

TEST(HealthSm, AnIsolationThatWouldDisconnectAHostIsRefused) {
  HealthSm s;
  const routing::Topology& t = s.h.sim->topology();
  const NodeId leaf2 = *t.find_by_name("leaf2");
  PortNum host_port = 0;
  for (unsigned p = 1; p <= t.node(leaf2).num_ports; ++p) {
    const routing::Port& x = t.port(leaf2, static_cast<PortNum>(p));
    if (x.connected() && t.node(x.remote_node).type == routing::NodeType::kCa) {
      host_port = static_cast<PortNum>(p);
      break;
    }
  }
  ASSERT_NE(host_port, 0);
  const PortRef end{leaf2, host_port};
  for (int i = 0; i < 3; ++i) s.flap(end);
  auto snap = s.board.current();
  ASSERT_EQ(snap->ports.size(), 1U);
  EXPECT_EQ(snap->ports[0].status, state::HealthStatus::kRefused);
  EXPECT_NE(snap->ports[0].reason.find("would disconnect 1 endpoint port"), std::string::npos)
      << snap->ports[0].reason;
  EXPECT_EQ(snap->refused_total, 1U);
  EXPECT_EQ(snap->isolated_total, 0U);
  EXPECT_NE(s.phys(end), 3);  // left in service
  EXPECT_TRUE(s.link_in_fabric(end));
  // A fourth flap raises nothing new.
  s.flap(end);
  EXPECT_EQ(s.board.current()->refused_total, 1U);
}

// Both uplinks of a leaf flap together: each isolation alone would leave
// the other uplink, both together would cut the leaf's hosts off. One is
// isolated, the other refused.
TEST(HealthSm, TwoIsolationsDecidedTogetherNeverDisconnectTogether) {
  state::HealthBoard board;
  testing::SimSm h("fat-tree:levels=2,radix=4", [](Config& c) {
    c.health.flap_count = 3;
    c.health.hold_down = 5min;
    c.perfmgr.interval = 0ms;
  });
  h.sm->attach_health(&board);
  h.start();
  ASSERT_TRUE(h.settle(5s));
  const routing::Topology& t = h.sim->topology();
  const NodeId leaf = *t.find_by_name("leaf1");
  std::vector<PortRef> ups;
  for (unsigned p = 1; p <= t.node(leaf).num_ports; ++p) {
    const routing::Port& x = t.port(leaf, static_cast<PortNum>(p));
    if (x.connected() && t.node(x.remote_node).type == routing::NodeType::kSwitch) {
      ups.push_back({leaf, static_cast<PortNum>(p)});
    }
  }
  ASSERT_EQ(ups.size(), 2U);
  for (int i = 0; i < 3; ++i) {
    for (const PortRef& u : ups) ASSERT_TRUE(h.sim->link_down(u).ok());
    ASSERT_TRUE(h.settle(5s));
    for (const PortRef& u : ups) ASSERT_TRUE(h.sim->link_up(u).ok());
    ASSERT_TRUE(h.settle(5s));
  }
  auto snap = board.current();
  ASSERT_EQ(snap->ports.size(), 2U);
  EXPECT_EQ(snap->isolated_total, 1U);
  EXPECT_EQ(snap->refused_total, 1U);
  // The leaf's hosts are still in the fabric, through the refused uplink.
  const auto s = h.publisher.current();
  for (unsigned p = 1; p <= t.node(leaf).num_ports; ++p) {
    const routing::Port& x = t.port(leaf, static_cast<PortNum>(p));
    if (!x.connected() || t.node(x.remote_node).type == routing::NodeType::kSwitch) continue;
    EXPECT_TRUE(s->topology->find_by_guid(t.node(x.remote_node).guid).has_value())
        << t.label(x.remote_node) << " was cut off";
  }
}

TEST(HealthSm, TheOperatorsEnableEndsAnIsolationAndTheirDisableIsNoFlap) {
  HealthSm s;
  const routing::Topology& t = s.h.sim->topology();
  const PortRef end{*t.find_by_name("leaf3"), s.h.port_to("leaf3", "spine1")};
  for (int i = 0; i < 3; ++i) s.flap(end);
  ASSERT_EQ(s.board.current()->ports.size(), 1U);
  const state::UnhealthyPort u = s.board.current()->ports[0];
  auto enable = [&](bool on) {
    auto fut = testing::sm_call<Result<void>>([&](auto done) {
      s.h.sm->set_port_enabled(u.node_guid, u.port, on, "test operator", std::move(done));
    });
    ASSERT_EQ(fut.wait_for(20s), std::future_status::ready);
    ASSERT_TRUE(fut.get().ok());
    ASSERT_TRUE(s.settle());
  };
  enable(true);
  EXPECT_TRUE(s.board.current()->ports.empty());
  EXPECT_EQ(s.board.current()->restored_total, 1U);
  EXPECT_TRUE(s.link_in_fabric(end));
  // The operator's own disable and enable, three times: no isolation.
  for (int i = 0; i < 3; ++i) {
    enable(false);
    enable(true);
  }
  EXPECT_TRUE(s.board.current()->ports.empty());
  EXPECT_EQ(s.board.current()->isolated_total, 1U);
}

TEST(HealthSm, AnErringLinkIsIsolatedAndRoutedAround) {
  HealthSm s([](Config& c) {
    c.health.error_rate = 100;
    c.perfmgr.interval = 10s;
  });
  const routing::Topology& t = s.h.sim->topology();
  const PortRef end{*t.find_by_name("leaf0"), s.h.port_to("leaf0", "spine3")};
  s.h.clock.advance(10s);  // the first counter sweep: the baseline
  ASSERT_TRUE(s.settle());
  discovery::sim::PortErrors e;
  e.symbol_errors = 500;
  ASSERT_TRUE(s.h.sim->inject_port_errors(end, e).ok());
  s.h.clock.advance(10s);  // 500 in 10 s: 3,000 a minute
  ASSERT_TRUE(s.settle());
  auto snap = s.board.current();
  ASSERT_EQ(snap->ports.size(), 1U);
  EXPECT_EQ(snap->ports[0].status, state::HealthStatus::kIsolated);
  EXPECT_EQ(snap->ports[0].cause, state::HealthCause::kErrors);
  EXPECT_GT(snap->ports[0].errors_per_minute, 100.0);
  EXPECT_FALSE(s.link_in_fabric(end));
  auto v = s.h.verify();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, state::Verdict::kOk) << v->message;
}

}  // namespace
}  // namespace subnetd::daemon

// The simulator's switch-local fast failover (issue 14, deliverable 1):
// after a bring-up, failover tables are armed on every switch directly
// (groups = the equal-cost next hops towards the LID's switch, which on a
// fat tree are the up*/down*-legal ones; notifications out of every
// switch-to-switch port). Then a link or a switch dies, and with no SM
// acting the effective forwarding state (LFT + groups + what notifications
// removed) must deliver every pair of CAs that is still connected, without
// loops, once detection and notification have had their microseconds.
// The same cuts without failover armed lose pairs (the checks can fail).
// Then the wire: the vendor attributes that arm the same tables by SMP, as
// an SM will (discovery/mad/failover.hpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/mad/failover.hpp"
#include "discovery/mad_engine.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "routing/failover_plan.hpp"
#include "routing/failover_verify.hpp"
#include "routing/lft.hpp"
#include "routing_test_support.hpp"

namespace subnetd::discovery::sim {
namespace {

using routing::NodeType;
using routing::PortState;
using routing::Topology;

struct Fabric {
  std::unique_ptr<SimFabric> sim;
  std::vector<std::pair<PortRef, Lid>> cas;  // every CA port with its LID
  std::uint32_t max_lid = 0;
  std::shared_ptr<daemon::BringUpResult> result;  // what the bring-up found and routed
};

Fabric bring_up(const std::string& spec, const std::string& engine = "updn") {
  Fabric f;
  auto topo = daemon::load_topology(spec);
  EXPECT_TRUE(topo.ok());
  if (!topo.ok()) return f;
  SimOptions so;
  so.latency = LatencyModel{};
  auto made = SimFabric::create(std::move(topo).value(), so);
  EXPECT_TRUE(made.ok());
  if (!made.ok()) return f;
  f.sim = std::move(made).value();
  routing::WorkerPool pool(1);
  daemon::BringUpOptions opts;
  opts.engine = engine;
  auto r = daemon::BringUp::run_blocking(*f.sim, pool, opts, nullptr);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return f;
  f.result = std::make_shared<daemon::BringUpResult>(std::move(r).value());
  const Topology& t = f.sim->topology();
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    if (t.node(n).type == NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      const PortRef ref{n, static_cast<PortNum>(p)};
      if (!t.port(ref).connected()) continue;
      const Lid lid = f.sim->port_view(ref)->lid;
      f.cas.emplace_back(ref, lid);
      f.max_lid = std::max(f.max_lid, lid.value);
    }
  }
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    f.max_lid =
        std::max(f.max_lid, f.sim->port_view({t.switch_node(SwitchIndex{s}), 0})->lid.value);
  }
  return f;
}

// Switch-to-switch hop counts (BFS from every switch).
std::vector<std::vector<int>> switch_hops(const Topology& t) {
  std::vector<std::vector<int>> d(t.num_nodes());
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId src = t.switch_node(SwitchIndex{s});
    std::vector<int>& dist = d[src.value];
    dist.assign(t.num_nodes(), -1);
    std::queue<NodeId> q;
    dist[src.value] = 0;
    q.push(src);
    while (!q.empty()) {
      const NodeId n = q.front();
      q.pop();
      for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
        const routing::Port& tp = t.port(n, static_cast<PortNum>(p));
        if (!tp.connected() || t.node(tp.remote_node).type != NodeType::kSwitch) continue;
        if (dist[tp.remote_node.value] >= 0) continue;
        dist[tp.remote_node.value] = dist[n.value] + 1;
        q.push(tp.remote_node);
      }
    }
  }
  return d;
}

// The switch a LID is delivered by.
std::map<std::uint32_t, NodeId> lid_homes(const Fabric& f) {
  const Topology& t = f.sim->topology();
  std::map<std::uint32_t, NodeId> home;
  for (const auto& [ref, lid] : f.cas) home[lid.value] = t.port(ref).remote_node;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(SwitchIndex{s});
    home[f.sim->port_view({n, 0})->lid.value] = n;
  }
  return home;
}

// Per switch: per LID, the group of ports whose neighbour is as far from
// the LID's switch as the LFT port's neighbour; notifications out of every
// port towards a switch.
std::vector<std::pair<NodeId, FailoverTables>> equal_cost_tables(const Fabric& f) {
  std::vector<std::pair<NodeId, FailoverTables>> out;
  const Topology& t = f.sim->topology();
  const auto hops = switch_hops(t);
  const auto home = lid_homes(f);
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId sw = t.switch_node(SwitchIndex{s});
    FailoverTables ft;
    ft.enabled = true;
    ft.groups.emplace_back();  // id 0: none
    ft.lid_group.assign(f.max_lid + 1, 0);
    std::map<std::vector<unsigned>, std::uint8_t> ids;
    for (unsigned p = 1; p <= t.node(sw).num_ports; ++p) {
      const routing::Port& tp = t.port(sw, static_cast<PortNum>(p));
      if (tp.connected() && t.node(tp.remote_node).type == NodeType::kSwitch)
        ft.notify.set(static_cast<PortNum>(p));
    }
    for (const auto& [lid, dest] : home) {
      const std::uint8_t lp = *f.sim->lft_entry(sw, Lid{lid});
      if (dest == sw || lp == 0 || lp == routing::kDropPort) continue;
      const routing::Port& via = t.port(sw, lp);
      if (t.node(via.remote_node).type != NodeType::kSwitch) continue;
      const int want = hops[via.remote_node.value][dest.value];
      std::vector<unsigned> ports;
      for (unsigned p = 1; p <= t.node(sw).num_ports; ++p) {
        const routing::Port& tp = t.port(sw, static_cast<PortNum>(p));
        if (!tp.connected() || t.node(tp.remote_node).type != NodeType::kSwitch) continue;
        if (hops[tp.remote_node.value][dest.value] == want) ports.push_back(p);
      }
      if (ports.empty()) continue;
      auto [it, added] = ids.try_emplace(ports, static_cast<std::uint8_t>(ft.groups.size()));
      if (added) {
        PortMask m;
        for (unsigned p : ports) m.set(static_cast<PortNum>(p));
        ft.groups.push_back(m);
      }
      ft.lid_group[lid] = it->second;
    }
    out.emplace_back(sw, std::move(ft));
  }
  return out;
}

void arm_equal_cost_groups(const Fabric& f) {
  for (auto& [sw, ft] : equal_cost_tables(f)) ASSERT_TRUE(f.sim->set_failover(sw, ft).ok());
}

enum class Walk { kDelivered, kDropped, kDeadLink, kLoop };

// Follows the effective forwarding state from a CA port to a LID.
Walk walk(const SimFabric& sim, PortRef from, Lid lid) {
  const Topology& t = sim.topology();
  auto up = [&sim](PortRef r) { return sim.port_view(r)->state == PortState::kActive; };
  if (!up(from)) return Walk::kDeadLink;
  NodeId at = t.port(from).remote_node;
  for (int hop = 0; hop < 64; ++hop) {
    const std::uint8_t out = *sim.effective_port(at, lid);
    if (out == 0) return Walk::kDelivered;
    if (out == routing::kDropPort) return Walk::kDropped;
    if (!up({at, out})) return Walk::kDeadLink;
    const routing::Port& tp = t.port(at, out);
    if (t.node(tp.remote_node).type != NodeType::kSwitch) {
      return sim.port_view({tp.remote_node, tp.remote_port})->lid == lid ? Walk::kDelivered
                                                                         : Walk::kDropped;
    }
    at = tp.remote_node;
  }
  return Walk::kLoop;
}

struct Check {
  int pairs = 0, delivered = 0, lost = 0, loops = 0;
};

// Every pair of CA ports whose links are both up (on a fat tree with one
// failure, every such pair is still connected).
Check check_pairs(const Fabric& f) {
  Check c;
  for (const auto& [src, slid] : f.cas) {
    if (f.sim->port_view(src)->state != PortState::kActive) continue;
    for (const auto& [dst, dlid] : f.cas) {
      if (src == dst || f.sim->port_view(dst)->state != PortState::kActive) continue;
      ++c.pairs;
      switch (walk(*f.sim, src, dlid)) {
        case Walk::kDelivered:
          ++c.delivered;
          break;
        case Walk::kLoop:
          ++c.loops;
          ++c.lost;
          break;
        default:
          ++c.lost;
      }
    }
  }
  return c;
}

using routing::testing::switch_links;

// Enough for a detection and a few notification hops (microseconds each).
constexpr std::chrono::microseconds kSettle{50};

TEST(SimFailover, EverySingleSwitchLinkFailureIsRecoveredByTheSwitches) {
  const std::string spec = "fat-tree:levels=3,k=4";
  const Fabric probe = bring_up(spec);
  ASSERT_NE(probe.sim, nullptr);
  const std::vector<PortRef> links = switch_links(probe.sim->topology());
  ASSERT_EQ(links.size(), 32U);
  std::uint64_t notifications = 0;
  for (const PortRef& l : links) {
    const Fabric f = bring_up(spec);
    ASSERT_NE(f.sim, nullptr);
    arm_equal_cost_groups(f);
    const Check before = check_pairs(f);
    ASSERT_EQ(before.delivered, before.pairs);
    ASSERT_TRUE(f.sim->link_down(l).ok());
    f.sim->run_for(kSettle);
    const Check after = check_pairs(f);
    const auto& t = f.sim->topology();
    EXPECT_EQ(after.lost, 0) << t.node(l.node).description << " port " << int{l.port} << ": "
                             << after.lost << " of " << after.pairs << " pairs lost, "
                             << after.loops << " in loops";
    EXPECT_EQ(after.pairs, before.pairs);
    const SimStats st = f.sim->stats();
    EXPECT_EQ(st.failover_detections, 2U);  // one at each end
    notifications += st.notifications_sent;
  }
  // Edge-aggregation and aggregation-core cuts strand the aggregation or core
  // switch for one destination: some notifications were needed.
  EXPECT_GT(notifications, 0U);
}

// The groups the SM computes (routing/failover_plan.hpp), armed on the
// simulated switches: after every single switch-link failure the switches
// settle where the failover verifier says they do. On a fat tree nothing is
// lost; on a ring and a torus under updn, and under layered routes on
// several VLs, the links the verifier counts as leaving pairs to the SM are
// exactly those after which the simulator loses pairs, and nothing ever
// loops.
TEST(SimFailover, PlannedGroupsRecoverExactlyWhatTheVerifierPromises) {
  struct Case {
    const char* spec;
    const char* engine;
  };
  for (const Case c :
       {Case{"fat-tree:levels=3,k=4", "ftree"}, Case{"ring:switches=6,hosts=1", "updn"},
        Case{"torus:dims=3x3,hosts=1", "updn"},
        // Several VLs: groups per (switch, layer), notifications per switch.
        Case{"torus:dims=3x3,hosts=1", "layered"},
        Case{"random:switches=10,degree=4,hosts=4,seed=5", "layered"},
        Case{"dragonfly:a=4,p=4,h=2,g=5", "layered"},
        // Branch layers: some LIDs' SL depends on the source, their groups
        // chosen switch by switch.
        Case{"random:switches=40,degree=4,hosts=1,seed=3", "layered"}}) {
    const Fabric probe = bring_up(c.spec, c.engine);
    ASSERT_NE(probe.result, nullptr);
    routing::WorkerPool pool(1);
    const auto& r = *probe.result;
    auto plan = routing::FailoverPlan::build(r.sweep.topology, r.lids.map, *r.routes, pool);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto report =
        routing::verify_failover(r.sweep.topology, r.lids.map, *r.routes, *plan, {}, pool);
    ASSERT_TRUE(report.ok()) << c.spec << ": " << report.error().message;
    EXPECT_GT(plan->stats().pairs_with_alternative, 0U) << c.spec;
    if (std::string_view(c.engine) == "layered") {
      EXPECT_GT(r.routes->num_vls, 1) << c.spec;
      EXPECT_GT(plan->num_layers(), 1) << c.spec;
    }
    if (std::string_view(c.spec).starts_with("random:switches=40")) {
      EXPECT_FALSE(r.routes->path_layers.empty()) << c.spec;
      EXPECT_GT(plan->stats().lids_per_switch, 0U) << c.spec;
    }
    std::uint32_t sim_links_losing = 0;
    const std::vector<PortRef> links = switch_links(probe.sim->topology());
    ASSERT_EQ(links.size(), report->links_checked) << c.spec;
    for (const PortRef& l : links) {
      const Fabric f = bring_up(c.spec, c.engine);
      ASSERT_NE(f.sim, nullptr);
      ASSERT_TRUE(f.sim->arm_failover(r.sweep.topology, *plan).ok());
      ASSERT_EQ(check_pairs(f).lost, 0);
      ASSERT_TRUE(f.sim->link_down(l).ok());
      f.sim->run_for(kSettle);
      const Check after = check_pairs(f);
      EXPECT_EQ(after.loops, 0) << c.spec;
      if (after.lost != 0) ++sim_links_losing;
      // The simulator's own check, which walks only from switches whose
      // forwarding changed, agrees with walking every pair.
      const FailoverCheck fc = f.sim->check_failover_forwarding();
      EXPECT_EQ(fc.loops, 0U);
      EXPECT_GT(fc.changed, 0U);
      EXPECT_EQ(fc.unreachable_sources != 0, after.lost != 0) << c.spec << ": " << fc.first_problem;
    }
    EXPECT_EQ(sim_links_losing, report->links_with_gaps) << c.spec << ": " << report->first_gap;
    if (std::string_view(c.engine) == "ftree") {
      EXPECT_EQ(sim_links_losing, 0U);
    }
  }
}

TEST(SimFailover, WithoutFailoverTheSameCutsLosePairs) {
  const std::string spec = "fat-tree:levels=3,k=4";
  const Fabric probe = bring_up(spec);
  ASSERT_NE(probe.sim, nullptr);
  int lost = 0;
  for (const PortRef& l : switch_links(probe.sim->topology())) {
    const Fabric f = bring_up(spec);
    ASSERT_NE(f.sim, nullptr);
    ASSERT_TRUE(f.sim->link_down(l).ok());
    f.sim->run_for(kSettle);
    const int lost_here = check_pairs(f).lost;
    lost += lost_here;
    EXPECT_EQ(f.sim->check_failover_forwarding().unreachable_sources != 0, lost_here != 0);
  }
  EXPECT_GT(lost, 0);
}

TEST(SimFailover, TrafficIsLostUntilTheSwitchNoticesThenMoves) {
  const Fabric f = bring_up("fat-tree:levels=3,k=4");
  ASSERT_NE(f.sim, nullptr);
  arm_equal_cost_groups(f);
  // An edge switch's uplink carries some pairs.
  const Topology& t = f.sim->topology();
  PortRef uplink{};
  for (const PortRef& l : switch_links(t)) {
    bool edge = false;
    for (unsigned p = 1; p <= t.node(l.node).num_ports; ++p) {
      const routing::Port& tp = t.port(l.node, static_cast<PortNum>(p));
      edge = edge || (tp.connected() && t.node(tp.remote_node).type != NodeType::kSwitch);
    }
    if (edge) {
      uplink = l;
      break;
    }
  }
  ASSERT_TRUE(uplink.node.valid());
  ASSERT_TRUE(f.sim->link_down(uplink).ok());
  const Check at_once = check_pairs(f);
  EXPECT_GT(at_once.lost, 0);  // the switches still send into the dead link
  // Once the edge switch has noticed, its own CAs' traffic takes its other
  // uplinks; no notification needed for that.
  f.sim->run_for(LatencyModel{}.failover_detect);
  int from_edge = 0;
  for (const auto& [src, slid] : f.cas) {
    if (t.port(src).remote_node != uplink.node) continue;
    for (const auto& [dst, dlid] : f.cas) {
      if (t.port(dst).remote_node == uplink.node) continue;
      ++from_edge;
      EXPECT_EQ(walk(*f.sim, src, dlid), Walk::kDelivered) << "to LID " << dlid.value;
    }
  }
  EXPECT_GT(from_edge, 0);
  // The aggregation end had no other way down to that edge switch: it
  // notified its neighbours, which move within microseconds.
  f.sim->run_for(kSettle);
  EXPECT_EQ(check_pairs(f).lost, 0);
  EXPECT_GT(f.sim->stats().notifications_sent, 0U);
}

TEST(SimFailover, ADeadSwitchIsRoutedAroundAndNotificationsEnd) {
  const std::string spec = "fat-tree:levels=3,k=4";
  const Fabric probe = bring_up(spec);
  ASSERT_NE(probe.sim, nullptr);
  const Topology& t0 = probe.sim->topology();
  for (std::uint32_t s = 0; s < t0.num_switches(); ++s) {
    const Fabric f = bring_up(spec);
    ASSERT_NE(f.sim, nullptr);
    arm_equal_cost_groups(f);
    const NodeId victim = f.sim->topology().switch_node(SwitchIndex{s});
    ASSERT_TRUE(f.sim->switch_down(victim).ok());
    f.sim->run_for(kSettle);
    const SimStats st = f.sim->stats();
    // Each switch notifies at most once per destination over each port.
    EXPECT_LE(st.notifications_sent, std::uint64_t{t0.num_switches()} * t0.num_switches() * 4);
    const Check after = check_pairs(f);  // pairs of CAs whose links are up
    EXPECT_EQ(after.lost, 0) << f.sim->topology().node(victim).description;
    EXPECT_EQ(after.loops, 0);
    // Nothing is left to do: no event keeps running.
    const SimStats later = (f.sim->run_for(std::chrono::milliseconds{1}), f.sim->stats());
    EXPECT_EQ(later.notifications_sent, st.notifications_sent);
  }
}

// Many failures at once (a third of the switch links of a k=8 tree, cut in
// the same instant, seeded), with the planned groups armed: the storm of
// notifications ends (each switch notifies once per destination over each
// port at most), nothing loops, and a second settle adds nothing. (Pairs
// may be left to the SM: several failures at once are beyond what the
// verifier proves.)
TEST(SimFailover, NotificationStormsFromManySimultaneousFailuresEnd) {
  const std::string spec = "fat-tree:levels=3,k=8,hosts_per_edge=1";
  const Fabric f = bring_up(spec, "ftree");
  ASSERT_NE(f.result, nullptr);
  routing::WorkerPool pool(1);
  const auto& r = *f.result;
  auto plan = routing::FailoverPlan::build(r.sweep.topology, r.lids.map, *r.routes, pool);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(f.sim->arm_failover(r.sweep.topology, *plan).ok());
  std::vector<PortRef> links = switch_links(f.sim->topology());
  std::mt19937 rng(11);
  std::shuffle(links.begin(), links.end(), rng);
  links.resize(links.size() / 3);
  for (const PortRef& l : links) ASSERT_TRUE(f.sim->link_down(l).ok());
  f.sim->run_for(kSettle);
  const SimStats st = f.sim->stats();
  const std::uint64_t n = f.sim->topology().num_switches();
  EXPECT_GT(st.notifications_sent, 0U);
  EXPECT_LE(st.notifications_sent, n * n * 8);
  const FailoverCheck fc = f.sim->check_failover_forwarding();
  EXPECT_EQ(fc.loops, 0U) << fc.first_problem;
  EXPECT_GT(fc.changed, 0U);
  f.sim->run_for(std::chrono::milliseconds{1});
  EXPECT_EQ(f.sim->stats().notifications_sent, st.notifications_sent);
  EXPECT_EQ(f.sim->stats().failover_last_change, st.failover_last_change);
}

TEST(SimFailover, ClearedStateAndDisarmedTablesForwardByTheLftAgain) {
  const Fabric f = bring_up("fat-tree:levels=3,k=4");
  ASSERT_NE(f.sim, nullptr);
  arm_equal_cost_groups(f);
  const Topology& t = f.sim->topology();
  const NodeId sw = t.switch_node(SwitchIndex{0});
  const Lid some = f.cas.back().second;
  const std::uint8_t lft = *f.sim->lft_entry(sw, some);
  EXPECT_EQ(*f.sim->effective_port(sw, some), lft);
  ASSERT_TRUE(f.sim->clear_failover_state(sw).ok());
  ASSERT_TRUE(f.sim->set_failover(sw, FailoverTables{}).ok());  // disarmed
  EXPECT_EQ(*f.sim->effective_port(sw, some), lft);
}

TEST(SimFailover, BadTablesAreRefusedWithTheirReason) {
  const Fabric f = bring_up("fat-tree:levels=2,radix=4");
  ASSERT_NE(f.sim, nullptr);
  const Topology& t = f.sim->topology();
  const NodeId sw = t.switch_node(SwitchIndex{0});
  FailoverTables bad_port;
  bad_port.enabled = true;
  bad_port.groups.resize(2);
  bad_port.groups[1].set(200);
  auto r = f.sim->set_failover(sw, bad_port);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("names port 200"), std::string::npos) << r.error().message;
  FailoverTables bad_group;
  bad_group.enabled = true;
  bad_group.groups.resize(2);
  bad_group.lid_group = {0, 7};
  r = f.sim->set_failover(sw, bad_group);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("names failover group 7"), std::string::npos)
      << r.error().message;
  // A CA is not a switch.
  EXPECT_FALSE(f.sim->set_failover(f.cas.front().first.node, FailoverTables{}).ok());
}

// ------------------------------------------------------------------ the wire

// One SMP, LID-routed to `lid`, answered (or not) by the simulator.
struct Answer {
  std::uint16_t status = 0xFFFF;  // 0xFFFF: no answer
  mad::Smp smp;
};

Answer ask(SimFabric& sim, Lid lid, mad::Method m, mad::AttrId attr, std::uint32_t attr_mod,
           const std::function<void(mad::SmpData)>& fill = {}) {
  mad::Smp smp = mad::make_lr_smp(m, attr, attr_mod, 0);
  if (fill) fill(mad::data_of(smp));
  Mad request;
  mad::encode_smp(smp, std::span<std::uint8_t, kMadSize>(request.data));
  request.dlid = lid.value;
  request.slid = 1;
  auto body = [&request](MadEngine& engine) -> boost::asio::awaitable<Answer> {
    Answer a;
    FlowOptions o;
    o.retries = 0;
    o.timeout = std::chrono::milliseconds{1};
    Flow flow(engine, o);
    auto done = [&a](Result<const Mad*> r) {
      if (!r.ok()) return;
      auto d = mad::decode_smp((*r)->data);
      if (!d.ok()) return;
      a.status = d->status;
      a.smp = *d;
    };
    flow.submit_raw(request, {}, done);
    co_await flow.drained();
    co_return a;
  };
  return run_blocking<Answer>(sim, body);
}

TEST(FailoverWire, LayoutsAreAsDocumented) {
  std::array<std::uint8_t, mad::kSmpDataSize> buf{};
  mad::FailoverInfo fi;
  fi.cap_local = true;
  fi.cap_notify = true;
  fi.enabled = true;
  fi.group_cap = 255;
  fi.group_top = 0x0102;
  fi.lid_top = 0x01BFFF;
  fi.detect_ns = 1000;
  fi.notify_hop_ns = 700;
  fi.encode(mad::SmpData(buf));
  EXPECT_EQ(buf[0], 0x03);
  EXPECT_EQ(buf[1], 0x01);
  EXPECT_EQ(buf[3], 255);
  EXPECT_EQ(buf[4], 0x01);
  EXPECT_EQ(buf[5], 0x02);
  EXPECT_EQ(buf[9], 0x01);
  EXPECT_EQ(buf[10], 0xBF);
  EXPECT_EQ(buf[11], 0xFF);
  EXPECT_EQ(mad::FailoverInfo::decode(mad::ConstSmpData(buf)), fi);
  mad::FailoverGroupBlock gb;
  mad::mask_set(gb.groups[1], 9);  // group 2b+1, port 9: byte 32 + 1, bit 1
  buf.fill(0);
  gb.encode(mad::SmpData(buf));
  EXPECT_EQ(buf[33], 0x02);
  EXPECT_EQ(mad::FailoverGroupBlock::decode(mad::ConstSmpData(buf)), gb);
  mad::FailoverNotifyConfig nc;
  mad::mask_set(nc.notify, 1);
  nc.clear_state = true;
  buf.fill(0);
  nc.encode(mad::SmpData(buf));
  EXPECT_EQ(buf[0], 0x02);
  EXPECT_EQ(buf[32], 0x01);
  EXPECT_EQ(mad::FailoverNotifyConfig::decode(mad::ConstSmpData(buf)), nc);
}

// The tables of equal_cost_tables() armed by SMP Sets of the four
// attributes behave exactly as the same tables armed directly, before and
// after a cut, and read back as written.
TEST(FailoverWire, TablesArmedBySmpForwardAsTablesArmedDirectly) {
  const std::string spec = "fat-tree:levels=3,k=4";
  const Fabric direct = bring_up(spec);
  const Fabric wire = bring_up(spec);
  ASSERT_NE(direct.sim, nullptr);
  ASSERT_NE(wire.sim, nullptr);
  arm_equal_cost_groups(direct);
  const Topology& t = wire.sim->topology();
  for (auto& [sw, ft] : equal_cost_tables(wire)) {
    const Lid lid = wire.sim->port_view({sw, 0})->lid;
    const Answer ni = ask(*wire.sim, lid, mad::Method::kGet, mad::AttrId::kNodeInfo, 0);
    ASSERT_EQ(ni.status, 0);
    EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(ni.smp)).vendor_id, mad::kSubnetdVendorId);
    const Answer caps = ask(*wire.sim, lid, mad::Method::kGet, mad::AttrId::kFailoverInfo, 0);
    ASSERT_EQ(caps.status, 0);
    const auto have = mad::FailoverInfo::decode(mad::data_of(caps.smp));
    EXPECT_TRUE(have.cap_local && have.cap_notify && !have.enabled);
    EXPECT_EQ(have.group_cap, mad::kFailoverMaxGroups);
    for (std::uint32_t b = 0; b * mad::kFailoverGroupsPerBlock < ft.groups.size(); ++b) {
      mad::FailoverGroupBlock gb;
      for (unsigned i = 0; i < mad::kFailoverGroupsPerBlock; ++i) {
        const std::size_t g = b * mad::kFailoverGroupsPerBlock + i;
        if (g == 0 || g >= ft.groups.size()) continue;
        for (unsigned p = 1; p < 256; ++p) {
          if (ft.groups[g].test(static_cast<PortNum>(p))) mad::mask_set(gb.groups[i], p);
        }
      }
      const Answer a = ask(*wire.sim, lid, mad::Method::kSet, mad::AttrId::kFailoverGroupTable, b,
                           [&gb](mad::SmpData d) { gb.encode(d); });
      ASSERT_EQ(a.status, 0);
      EXPECT_EQ(mad::FailoverGroupBlock::decode(mad::data_of(a.smp)), gb);
    }
    for (std::uint32_t b = 0; b * mad::kFailoverLidsPerBlock < ft.lid_group.size(); ++b) {
      mad::FailoverLidGroupBlock lb;
      for (unsigned i = 0; i < mad::kFailoverLidsPerBlock; ++i) {
        const std::size_t l = b * mad::kFailoverLidsPerBlock + i;
        if (l < ft.lid_group.size()) lb.groups[i] = ft.lid_group[l];
      }
      const Answer a = ask(*wire.sim, lid, mad::Method::kSet, mad::AttrId::kFailoverLidGroupTable,
                           b, [&lb](mad::SmpData d) { lb.encode(d); });
      ASSERT_EQ(a.status, 0);
    }
    mad::FailoverNotifyConfig nc;
    for (unsigned p = 1; p < 256; ++p) {
      if (ft.notify.test(static_cast<PortNum>(p))) mad::mask_set(nc.notify, p);
    }
    ASSERT_EQ(ask(*wire.sim, lid, mad::Method::kSet, mad::AttrId::kFailoverNotifyConfig, 0,
                  [&nc](mad::SmpData d) { nc.encode(d); })
                  .status,
              0);
    mad::FailoverInfo on;
    on.enabled = true;
    on.group_top = static_cast<std::uint16_t>(ft.groups.size() - 1);
    on.lid_top = static_cast<std::uint32_t>(ft.lid_group.size() - 1);
    const Answer armed = ask(*wire.sim, lid, mad::Method::kSet, mad::AttrId::kFailoverInfo, 0,
                             [&on](mad::SmpData d) { on.encode(d); });
    ASSERT_EQ(armed.status, 0);
    const auto now = mad::FailoverInfo::decode(mad::data_of(armed.smp));
    EXPECT_TRUE(now.enabled);
    EXPECT_EQ(now.group_top, on.group_top);
    EXPECT_EQ(now.lid_top, on.lid_top);
    EXPECT_EQ(now.detect_ns, 1000U);
  }
  auto same = [&](const char* when) {
    for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
      const NodeId sw = t.switch_node(SwitchIndex{s});
      for (std::uint32_t l = 1; l <= wire.max_lid; ++l) {
        ASSERT_EQ(*wire.sim->effective_port(sw, Lid{l}), *direct.sim->effective_port(sw, Lid{l}))
            << when << ": " << t.node(sw).description << " LID " << l;
      }
    }
  };
  same("armed");
  const PortRef cut = switch_links(t).front();
  ASSERT_TRUE(wire.sim->link_down(cut).ok());
  ASSERT_TRUE(direct.sim->link_down(cut).ok());
  wire.sim->run_for(kSettle);
  direct.sim->run_for(kSettle);
  same("after a cut");
  EXPECT_EQ(check_pairs(wire).lost, 0);
}

TEST(FailoverWire, SwitchesWithoutTheFeatureAndBadRequestsAreAnsweredWithAStatus) {
  const Fabric f = bring_up("fat-tree:levels=2,radix=4");
  ASSERT_NE(f.sim, nullptr);
  const Topology& t = f.sim->topology();
  const Lid sw = f.sim->port_view({t.switch_node(SwitchIndex{0}), 0})->lid;
  const Lid ca = f.cas.back().second;
  using mad::AttrId;
  using mad::Method;
  // A CA has none of it.
  EXPECT_EQ(ask(*f.sim, ca, Method::kGet, AttrId::kFailoverInfo, 0).status,
            mad::status::kMethodAttrUnsupported);
  // Group 0 is "no group"; ports beyond the switch's; blocks beyond 255
  // groups or the LFT capacity; attr_mod of a single attribute.
  mad::FailoverGroupBlock g0;
  mad::mask_set(g0.groups[0], 1);
  EXPECT_EQ(ask(*f.sim, sw, Method::kSet, AttrId::kFailoverGroupTable, 0,
                [&g0](mad::SmpData d) { g0.encode(d); })
                .status,
            mad::status::kInvalidField);
  mad::FailoverGroupBlock far;
  mad::mask_set(far.groups[1], 200);
  EXPECT_EQ(ask(*f.sim, sw, Method::kSet, AttrId::kFailoverGroupTable, 0,
                [&far](mad::SmpData d) { far.encode(d); })
                .status,
            mad::status::kInvalidField);
  EXPECT_EQ(ask(*f.sim, sw, Method::kGet, AttrId::kFailoverGroupTable, 128).status,
            mad::status::kInvalidField);
  EXPECT_EQ(ask(*f.sim, sw, Method::kGet, AttrId::kFailoverLidGroupTable, 0x10000000).status,
            mad::status::kInvalidField);
  EXPECT_EQ(ask(*f.sim, sw, Method::kGet, AttrId::kFailoverInfo, 1).status,
            mad::status::kInvalidField);

  // A simulator whose switches lack the feature says so and refuses to arm.
  auto topo = daemon::load_topology("fat-tree:levels=2,radix=4");
  ASSERT_TRUE(topo.ok());
  SimOptions so;
  so.failover_capable = false;
  auto plain = SimFabric::create(std::move(topo).value(), so);
  ASSERT_TRUE(plain.ok());
  routing::WorkerPool pool(1);
  daemon::BringUpOptions opts;
  opts.engine = "updn";
  ASSERT_TRUE(daemon::BringUp::run_blocking(**plain, pool, opts, nullptr).ok());
  const Lid psw = (*plain)->port_view({t.switch_node(SwitchIndex{0}), 0})->lid;
  const Answer caps = ask(**plain, psw, Method::kGet, AttrId::kFailoverInfo, 0);
  ASSERT_EQ(caps.status, 0);
  const auto none = mad::FailoverInfo::decode(mad::data_of(caps.smp));
  EXPECT_FALSE(none.cap_local || none.cap_notify);
  EXPECT_EQ(none.group_cap, 0);
  mad::FailoverInfo on;
  on.enabled = true;
  EXPECT_EQ(ask(**plain, psw, Method::kSet, AttrId::kFailoverInfo, 0,
                [&on](mad::SmpData d) { on.encode(d); })
                .status,
            mad::status::kInvalidField);
  EXPECT_EQ(ask(**plain, psw, Method::kGet, AttrId::kFailoverGroupTable, 0).status,
            mad::status::kMethodAttrUnsupported);
}

}  // namespace
}  // namespace subnetd::discovery::sim

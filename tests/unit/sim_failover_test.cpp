// The simulator's switch-local fast failover (issue 14, deliverable 1):
// after a bring-up, failover tables are armed on every switch directly
// (groups = the equal-cost next hops towards the LID's switch, which on a
// fat tree are the up*/down*-legal ones; notifications out of every
// switch-to-switch port). Then a link or a switch dies, and with no SM
// acting the effective forwarding state (LFT + groups + what notifications
// removed) must deliver every pair of CAs that is still connected, without
// loops, once detection and notification have had their microseconds.
// The same cuts without failover armed lose pairs (the checks can fail).

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "routing/lft.hpp"

namespace subnetd::discovery::sim {
namespace {

using routing::NodeType;
using routing::PortState;
using routing::Topology;

struct Fabric {
  std::unique_ptr<SimFabric> sim;
  std::vector<std::pair<PortRef, Lid>> cas;  // every CA port with its LID
  std::uint32_t max_lid = 0;
};

Fabric bring_up(const std::string& spec) {
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
  opts.engine = "updn";
  auto r = daemon::BringUp::run_blocking(*f.sim, pool, opts, nullptr);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return f;
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

// Arms every switch: per LID, the group of ports whose neighbour is as far
// from the LID's switch as the LFT port's neighbour.
void arm_equal_cost_groups(const Fabric& f) {
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
      if (ports.size() < 2) continue;
      auto [it, added] = ids.try_emplace(ports, static_cast<std::uint8_t>(ft.groups.size()));
      if (added) {
        PortMask m;
        for (unsigned p : ports) m.set(static_cast<PortNum>(p));
        ft.groups.push_back(m);
      }
      ft.lid_group[lid] = it->second;
    }
    ASSERT_TRUE(f.sim->set_failover(sw, std::move(ft)).ok());
  }
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

std::vector<PortRef> switch_links(const Topology& t) {
  std::vector<PortRef> out;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(SwitchIndex{s});
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      const routing::Port& tp = t.port(n, static_cast<PortNum>(p));
      if (!tp.connected() || t.node(tp.remote_node).type != NodeType::kSwitch) continue;
      if (tp.remote_node.value < n.value) continue;  // each link once
      out.push_back({n, static_cast<PortNum>(p)});
    }
  }
  return out;
}

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
    lost += check_pairs(f).lost;
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

}  // namespace
}  // namespace subnetd::discovery::sim

// The SM's multicast end to end on the simulator: the IPoIB broadcast
// group of the default partition exists after the first bring-up; joins
// (made in the registry, as the SA makes them) are programmed into the
// switches' MFTs without a sweep, leaves take ports out again, and a heavy
// sweep keeps what is programmed; a failed link a tree crosses is routed
// around by the fast path, trees included; the first bring-up asks
// clients to register again; with routes on several VLs every group is on
// SL 0, whatever a partition's ipoib.sl says.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "daemon_test_support.hpp"
#include "routing_test_support.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::daemon {
namespace {

using namespace std::chrono_literals;
using state::FabricState;

struct Harness {
  std::unique_ptr<discovery::sim::SimFabric> sim;
  state::StatePublisher publisher;
  state::EventLog events{0, {}, {}};
  routing::WorkerPool pool{2};
  state::McastRegistry registry;
  boost::asio::io_context io;
  std::unique_ptr<SubnetManager> sm;
  std::thread thread;

  Config cfg;

  explicit Harness(const std::string& spec, EngineKind engine, FastPathOptions fast = {},
                   const std::function<void(Config&)>& configure = {}) {
    auto topo = discovery::topo::generate(spec);
    EXPECT_TRUE(topo.ok());
    auto s = discovery::sim::SimFabric::create(std::move(topo).value(), {});
    EXPECT_TRUE(s.ok());
    sim = std::move(s).value();
    cfg.fabric.topology = spec;
    cfg.routing.engine = engine;
    cfg.sweep.interval = 0ms;
    if (configure) configure(cfg);
    TransportBundle bundle;
    bundle.transport = std::make_unique<testing::BorrowedSim>(*sim);
    sm = std::make_unique<SubnetManager>(io, cfg, std::move(bundle), nullptr,
                                         std::vector<routing::LidRecord>{}, publisher, events, pool,
                                         SubnetManager::Hooks{}, fast);
    sm->attach_multicast(&registry);
    sm->start();
    thread = std::thread([this] { io.run(); });
  }
  ~Harness() { testing::stop_on_thread(*sm, io, thread); }

  std::shared_ptr<const FabricState> wait(const std::function<bool(const FabricState&)>& pred) {
    return publisher.wait_for(pred, 20s);
  }
  // The switch a CA port hangs off, in the simulator, and its port there.
  std::pair<NodeId, PortNum> attachment(PortRef ca) const {
    const routing::Port& p = sim->topology().port(ca);
    return {p.remote_node, p.remote_port};
  }
};

std::size_t members_of(const FabricState& s, const state::Mgid& mgid) {
  if (!s.mcast_groups) return 0;
  for (const auto& g : *s.mcast_groups) {
    if (g.mgid == mgid) return g.members.size();
  }
  return 0;
}

TEST(MulticastDaemon, JoinsAndLeavesReachTheSwitches) {
  Harness h("fat-tree:levels=2,radix=8", EngineKind::kAuto);
  const state::Mgid bcast = state::ipoib_broadcast_mgid(0x7FFF);
  auto up = h.wait([&](const FabricState& s) {
    return s.state == state::SmState::kMaster && s.mcast_groups != nullptr &&
           s.mcast_groups->size() == 1;
  });
  ASSERT_NE(up, nullptr) << "the broadcast group after the first bring-up";
  EXPECT_EQ(up->mcast_groups->front().mgid, bcast);
  EXPECT_EQ(up->mcast_groups->front().mlid.value, 0xC000U);

  const auto cas = routing::testing::cabled_ca_ports(h.sim->topology());
  ASSERT_GE(cas.size(), 8U);
  const std::vector<PortRef> joined{cas[0], cas[3], cas[cas.size() - 1]};
  for (const PortRef& p : joined) {
    ASSERT_TRUE(h.registry.join(bcast, h.sim->topology().port(p).guid, state::kJoinFull).ok());
  }
  auto with = h.wait([&](const FabricState& s) { return members_of(s, bcast) == 3; });
  ASSERT_NE(with, nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  for (const PortRef& p : joined) {
    const auto [sw, port] = h.attachment(p);
    auto m = h.sim->mft_entry(sw, Lid{0xC000});
    ASSERT_TRUE(m.ok());
    EXPECT_TRUE(m->test(port)) << h.sim->topology().label(p.node) << " is not delivered";
  }
  const auto [other_sw, other_port] = h.attachment(cas[1]);
  EXPECT_FALSE(h.sim->mft_entry(other_sw, Lid{0xC000})->test(other_port)) << "no member there";

  // A leave takes the port out.
  ASSERT_TRUE(
      h.registry.leave(bcast, h.sim->topology().port(joined[1]).guid, state::kJoinFull).ok());
  ASSERT_NE(h.wait([&](const FabricState& s) { return members_of(s, bcast) == 2; }), nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  const auto [left_sw, left_port] = h.attachment(joined[1]);
  EXPECT_FALSE(h.sim->mft_entry(left_sw, Lid{0xC000})->test(left_port));

  // A heavy sweep keeps the tables (and sends no MFT block: nothing changed).
  auto done = testing::sm_call<state::SweepReply>(
      [&](auto cb) { h.sm->trigger_sweep("test", std::move(cb)); });
  ASSERT_EQ(done.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(done.get().ok);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  const auto [sw0, port0] = h.attachment(joined[0]);
  EXPECT_TRUE(h.sim->mft_entry(sw0, Lid{0xC000})->test(port0));
}

// Where a packet for `mlid` sent by `from` reaches, flooded through the
// switches' MFTs over the links that are up: the CA ports it is delivered
// to.
std::set<PortRef> delivered(const discovery::sim::SimFabric& sim, PortRef from, Lid mlid) {
  const routing::Topology& t = sim.topology();
  std::set<PortRef> out;
  std::set<NodeId> seen;
  std::vector<NodeId> todo{t.port(from).remote_node};
  while (!todo.empty()) {
    const NodeId sw = todo.back();
    todo.pop_back();
    if (!seen.insert(sw).second) continue;
    const auto mask = sim.mft_entry(sw, mlid);
    if (!mask.ok()) continue;
    for (unsigned pn = 1; pn <= t.node(sw).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      const routing::Port& port = t.port(sw, p);
      if (!mask->test(p) || !port.connected()) continue;
      const auto view = sim.port_view({sw, p});
      if (!view.ok() || view->state != routing::PortState::kActive) continue;
      if (t.node(port.remote_node).type == routing::NodeType::kSwitch) {
        todo.push_back(port.remote_node);
      } else {
        out.insert({port.remote_node, port.remote_port});
      }
    }
  }
  return out;
}

TEST(MulticastDaemon, TreesAreRepairedAroundAFailedLink) {
  FastPathOptions fast;
  fast.rebalance_delay = std::chrono::hours{1};  // no re-balancing sweep: the fast path alone
  Harness h("fat-tree:levels=3,k=4", EngineKind::kAuto, fast);
  const state::Mgid bcast = state::ipoib_broadcast_mgid(0x7FFF);
  ASSERT_NE(h.wait([](const FabricState& s) {
    return s.state == state::SmState::kMaster && s.mcast_groups != nullptr;
  }),
            nullptr);
  const auto cas = routing::testing::cabled_ca_ports(h.sim->topology());
  for (const PortRef& p : cas) {
    ASSERT_TRUE(h.registry.join(bcast, h.sim->topology().port(p).guid, state::kJoinFull).ok());
  }
  ASSERT_NE(h.wait([&](const FabricState& s) { return members_of(s, bcast) == cas.size(); }),
            nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  const std::set<PortRef> everyone(cas.begin(), cas.end());
  ASSERT_EQ(delivered(*h.sim, cas[0], Lid{0xC000}), everyone);

  // A switch-to-switch link of the tree, not the SM's way to anything:
  // an aggregation switch's uplink it forwards the group on.
  const routing::Topology& t = h.sim->topology();
  PortRef cut{};
  for (const NodeId sw : t.switches()) {
    if (t.label(sw).find("agg") == std::string::npos) continue;
    const auto mask = h.sim->mft_entry(sw, Lid{0xC000});
    for (unsigned pn = 1; pn <= t.node(sw).num_ports && !cut.node.valid(); ++pn) {
      const auto p = static_cast<PortNum>(pn);
      const routing::Port& port = t.port(sw, p);
      if (mask->test(p) && port.connected() &&
          t.label(port.remote_node).find("core") != std::string::npos) {
        cut = {sw, p};
      }
    }
    if (cut.node.valid()) break;
  }
  ASSERT_TRUE(cut.node.valid()) << "the tree uses no aggregation uplink";
  auto multicast_events = [&h] {
    const auto all = h.events.recent_since(0, 100000).value_or(std::vector<state::Event>{});
    return std::count_if(all.begin(), all.end(), [](const state::Event& e) {
      return e.kind == state::EventKind::kMulticast;
    });
  };
  const auto announced_before = multicast_events();
  ASSERT_TRUE(h.sim->link_down(cut).ok());
  ASSERT_NE(h.wait([](const FabricState& s) { return s.reroutes >= 1; }), nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  EXPECT_EQ(h.publisher.current()->sweeps, 1U) << "no heavy sweep did it";
  EXPECT_FALSE(h.sim->mft_entry(cut.node, Lid{0xC000})->test(cut.port));
  // Every member still gets what any member sends.
  EXPECT_EQ(delivered(*h.sim, cas[0], Lid{0xC000}), everyone);
  EXPECT_EQ(delivered(*h.sim, cas.back(), Lid{0xC000}), everyone);
  EXPECT_GT(multicast_events(), announced_before) << "the repair is announced";
}

// The SM that starts knows none of the joins: its first bring-up asks every
// CA port's clients to register again (ClientReregister), and only that one.
TEST(MulticastDaemon, FirstBringUpAsksClientsToRejoin) {
  Harness h("fat-tree:levels=2,radix=4", EngineKind::kAuto);
  ASSERT_NE(h.wait([](const FabricState& s) { return s.state == state::SmState::kMaster; }),
            nullptr);
  auto done = testing::sm_call<state::SweepReply>(
      [&](auto cb) { h.sm->trigger_sweep("again", std::move(cb)); });
  ASSERT_EQ(done.wait_for(20s), std::future_status::ready);
  ASSERT_TRUE(done.get().ok);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  for (const PortRef& p : routing::testing::cabled_ca_ports(h.sim->topology())) {
    auto v = h.sim->port_view(p);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->client_reregisters, 1U) << h.sim->topology().label(p.node);
  }
}

// A partition's ipoib.sl other than 0 would put IPoIB's broadcast traffic
// on a unicast layer's VL, whose CDG its trees never joined: with layered
// routes the SM moves the group to SL 0 and says so.
TEST(MulticastDaemon, LayeredRoutesKeepGroupsOnSl0) {
  auto sl3 = [](Config& cfg) {
    routing::PartitionSpec p;
    p.name = "default";
    p.pkey = 0x7FFF;
    p.ipoib = true;
    p.ipoib_params.sl = 3;
    p.members.push_back(routing::PartitionMember{});  // every port, full
    cfg.partitions = {p};
  };
  const state::Mgid bcast = state::ipoib_broadcast_mgid(0x7FFF);
  auto group = [&](const FabricState& s) -> const state::McastGroup* {
    if (!s.mcast_groups) return nullptr;
    for (const auto& g : *s.mcast_groups) {
      if (g.mgid == bcast) return &g;
    }
    return nullptr;
  };
  {
    Harness h("random:switches=12,degree=4,hosts=4,seed=5", EngineKind::kLayered, {}, sl3);
    auto up = h.wait([&](const FabricState& s) {
      return s.state == state::SmState::kMaster && group(s) != nullptr;
    });
    ASSERT_NE(up, nullptr);
    ASSERT_GT(up->routes->num_vls, 1);
    EXPECT_EQ(group(*up)->sl, 0);
    EXPECT_EQ(h.registry.find(bcast)->sl, 0);
    bool said = false;
    for (const state::Event& e :
         h.events.recent_since(0, 1000).value_or(std::vector<state::Event>{})) {
      said |= e.kind == state::EventKind::kMulticast &&
              e.message.find("moved from SL 3 to SL 0") != std::string::npos;
    }
    EXPECT_TRUE(said) << "no event says the group moved";
  }
  // On one VL (up*/down*) the partition's SL stands.
  Harness h("random:switches=12,degree=4,hosts=4,seed=5", EngineKind::kUpdn, {}, sl3);
  auto up = h.wait([&](const FabricState& s) {
    return s.state == state::SmState::kMaster && group(s) != nullptr;
  });
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(group(*up)->sl, 3);

  // A member joins on SL 3; then the routes take layers (a reload): the
  // group moves, and every client is asked to register again, so the
  // member joins again and learns SL 0.
  const auto cas = routing::testing::cabled_ca_ports(h.sim->topology());
  ASSERT_TRUE(h.registry.join(bcast, h.sim->topology().port(cas[0]).guid, state::kJoinFull).ok());
  ASSERT_NE(h.wait([&](const FabricState& s) { return members_of(s, bcast) == 1; }), nullptr);
  Config layered = h.cfg;
  layered.routing.engine = EngineKind::kLayered;
  h.sm->reload(plan_reload(h.cfg, layered), "test");
  auto moved = h.wait([&](const FabricState& s) {
    return s.routes != nullptr && s.routes->num_vls > 1 && group(s) != nullptr && group(s)->sl == 0;
  });
  ASSERT_NE(moved, nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  for (const PortRef& p : cas) {
    auto v = h.sim->port_view(p);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->client_reregisters, 2U) << h.sim->topology().label(p.node);
  }
}

}  // namespace
}  // namespace subnetd::daemon

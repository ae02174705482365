// Multicast trees (routing/mcast.hpp): one tree per group reaching every
// member, trimmed to what members need, tops taken in turn, climb-then-
// descend in the unicast up/down order; verify_multicast catches cycles,
// one-way links and valleys, and the plain verifier finds the credit loop
// that valley trees close together with each other.

#include "routing/mcast.hpp"

#include <gtest/gtest.h>

#include <set>

#include "routing/engine.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::Fabric;
using testing::make_fabric;
using testing::port_to;
using testing::route_fabric;
using testing::sw_index;

class McastOnEngines : public ::testing::TestWithParam<std::string> {};

TEST_P(McastOnEngines, EveryGroupIsOneVerifiedTree) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=4");
  const Routes routes = route_fabric(f, GetParam());
  const auto cas = testing::cabled_ca_ports(f.topo);
  ASSERT_GE(cas.size(), 8U);
  std::vector<McastGroupIn> groups;
  groups.push_back({Lid{0xC000}, cas});                            // everyone (IPoIB broadcast)
  groups.push_back({Lid{0xC001}, {cas[0], cas[cas.size() - 1]}});  // far apart
  groups.push_back({Lid{0xC002}, {cas[0], cas[1]}});               // one leaf
  groups.push_back({Lid{0xC003}, {cas[2], {f.topo.switch_node(SwitchIndex{0}), 0}}});
  WorkerPool pool(1);
  auto t = compute_multicast(f.topo, routes, groups, pool);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->notes().empty());
  auto v = verify_multicast(f.topo, *t, groups, routes.updown_rank);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->groups, groups.size());
  // Two ports under one leaf: that leaf alone forwards, to both.
  std::size_t switches_with_c002 = 0;
  for (std::uint32_t s = 0; s < f.topo.num_switches(); ++s) {
    const PortMask m = t->ports(SwitchIndex{s}, Lid{0xC002});
    if (m.none()) continue;
    ++switches_with_c002;
    EXPECT_EQ(m.count(), 2U);
  }
  EXPECT_EQ(switches_with_c002, 1U) << "the tree is trimmed to the members' leaf";
  // The unicast tables and the trees together: no credit loop.
  VerifyOptions vo;
  vo.multicast = &*t;
  auto full = verify(f.topo, f.lids, routes, vo, pool, {});
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_EQ(t->max_mlid(), 0xC003U);
}

INSTANTIATE_TEST_SUITE_P(Engines, McastOnEngines, ::testing::Values("ftree", "updn", "minhop"));

// Layered routes on several VLs: multicast rides VL 0 with layer 0's
// unicast routes, whose CDG holds every up*/down* dependency of the escape
// order. Trees that climb and descend in that order add nothing to it;
// trees in any other order can close a loop with its routes. Dimension
// order (the torus) leaves VL 0 to multicast alone. Many groups over
// irregular fabrics, checked by the plain verifier with the trees.
class McastOnLayered : public ::testing::TestWithParam<std::string> {};

TEST_P(McastOnLayered, TreesKeepVlZeroAcyclic) {
  const Fabric f = make_fabric(GetParam());
  const Routes routes = route_fabric(f, "layered@8");
  ASSERT_GT(routes.num_vls, 1) << "the case needs layers";
  const auto cas = testing::cabled_ca_ports(f.topo);
  ASSERT_GE(cas.size(), 8U);
  std::vector<McastGroupIn> groups;
  groups.push_back({Lid{0xC000}, cas});
  // Every (i, i + k) pair for a spread of strides: trees topped all over.
  std::uint32_t mlid = 0xC001;
  for (std::size_t k = 1; k < cas.size() && mlid < 0xC040; k += 3) {
    for (std::size_t i = 0; i + k < cas.size() && mlid < 0xC040; i += 5) {
      groups.push_back({Lid{mlid++}, {cas[i], cas[i + k]}});
    }
  }
  WorkerPool pool(2);
  auto t = compute_multicast(f.topo, routes, groups, pool);
  ASSERT_TRUE(t.ok()) << t.error().message;
  VerifyOptions vo;
  vo.multicast = &*t;
  auto full = verify(f.topo, f.lids, routes, vo, pool, {});
  ASSERT_TRUE(full.ok()) << full.error().message;
}

INSTANTIATE_TEST_SUITE_P(Fabrics, McastOnLayered,
                         ::testing::Values("random:switches=24,degree=4,hosts=2,seed=3",
                                           "random:switches=40,degree=5,hosts=2,seed=7",
                                           "dragonfly:a=4,p=2,h=2,g=5", "torus:dims=5x5,hosts=1"));

TEST(Mcast, GroupsTakeTheirTopsInTurn) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=8");
  const Routes routes = route_fabric(f, "ftree");
  const auto cas = testing::cabled_ca_ports(f.topo);
  // Members under different leaves: every tree needs a spine.
  std::vector<McastGroupIn> groups;
  for (std::uint32_t g = 0; g < 8; ++g) {
    groups.push_back({Lid{kMlidBase + g}, {cas.front(), cas.back()}});
  }
  WorkerPool pool(1);
  auto t = compute_multicast(f.topo, routes, groups, pool);
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::set<std::uint32_t> spines_used;
  for (std::uint32_t s = 0; s < f.topo.num_switches(); ++s) {
    const NodeId n = f.topo.switch_node(SwitchIndex{s});
    bool has_ca = false;
    for (unsigned p = 1; p <= f.topo.node(n).num_ports; ++p) {
      const Port& port = f.topo.port(n, static_cast<PortNum>(p));
      has_ca |= port.connected() && f.topo.node(port.remote_node).type != NodeType::kSwitch;
    }
    if (!has_ca && !t->entries(SwitchIndex{s}).empty()) spines_used.insert(s);
  }
  EXPECT_GE(spines_used.size(), 4U) << "8 groups over the spines, not all on one";
  ASSERT_TRUE(verify_multicast(f.topo, *t, groups, routes.updown_rank).ok());
}

TEST(Mcast, RejectsBadMlidsAndMembers) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=4");
  const Routes routes = route_fabric(f, "ftree");
  WorkerPool pool(1);
  const std::vector<McastGroupIn> low{{Lid{0xBFFF}, {}}};
  EXPECT_EQ(compute_multicast(f.topo, routes, low, pool).error().code, Errc::kInvalidArgument);
  const std::vector<McastGroupIn> twice{{Lid{0xC000}, {}}, {Lid{0xC000}, {}}};
  EXPECT_EQ(compute_multicast(f.topo, routes, twice, pool).error().code, Errc::kInvalidArgument);
  const std::vector<McastGroupIn> ghost{{Lid{0xC000}, {{NodeId{9999}, 1}}}};
  EXPECT_EQ(compute_multicast(f.topo, routes, ghost, pool).error().code, Errc::kInvalidArgument);
}

// Hand-made trees on a 2-level fat tree with radix 4: leaves leaf0..3,
// spines spine0..1.
struct Crafted {
  Fabric f = make_fabric("fat-tree:levels=2,radix=4");
  std::vector<std::vector<McastTables::Entry>> rows =
      std::vector<std::vector<McastTables::Entry>>(f.topo.num_switches());
  // Links a - b in group `mlid` (both directions).
  void link(std::uint32_t mlid, std::string_view a, std::string_view b) {
    add(mlid, a, port_to(f, a, b));
    add(mlid, b, port_to(f, b, a));
  }
  void add(std::uint32_t mlid, std::string_view sw, PortNum p) {
    auto& row = rows[sw_index(f, sw).value];
    auto it = std::find_if(row.begin(), row.end(), [&](const auto& e) { return e.mlid == mlid; });
    if (it == row.end()) it = row.insert(row.end(), McastTables::Entry{mlid, {}});
    it->ports.set(p);
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.mlid < y.mlid; });
  }
  McastTables tables() const { return mcast_tables_for_test(rows); }
};

TEST(McastVerify, CatchesCyclesOneWayLinksAndValleys) {
  {
    Crafted c;  // leaf0 - spine0 - leaf1 - spine1 - leaf0: a cycle
    c.link(0xC000, "leaf0", "spine0");
    c.link(0xC000, "spine0", "leaf1");
    c.link(0xC000, "leaf1", "spine1");
    c.link(0xC000, "spine1", "leaf0");
    auto v = verify_multicast(c.f.topo, c.tables(), {}, {});
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Errc::kForwardingLoop);
    EXPECT_NE(v.error().message.find("cycle"), std::string::npos) << v.error().message;
  }
  {
    Crafted c;  // leaf0 forwards to spine0, which does not forward back
    c.add(0xC000, "leaf0", port_to(c.f, "leaf0", "spine0"));
    auto v = verify_multicast(c.f.topo, c.tables(), {}, {});
    ASSERT_FALSE(v.ok());
    EXPECT_NE(v.error().message.find("does not forward back"), std::string::npos);
  }
  {
    Crafted c;  // two trees that do not meet
    c.link(0xC000, "leaf0", "spine0");
    c.link(0xC000, "leaf1", "spine1");
    auto v = verify_multicast(c.f.topo, c.tables(), {}, {});
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Errc::kIncomplete);
  }
}

TEST(McastVerify, ValleysCloseACreditLoopTheVerifierFinds) {
  Crafted c;
  const Routes routes = route_fabric(c.f, "ftree");
  // Each tree alone is a tree; A and B go down to a leaf and up again.
  c.link(0xC000, "spine0", "leaf1");  // A: spine0 - leaf1 - spine1
  c.link(0xC000, "leaf1", "spine1");
  c.link(0xC001, "spine1", "leaf0");  // B: spine1 - leaf0 - spine0
  c.link(0xC001, "leaf0", "spine0");
  c.link(0xC002, "leaf1", "spine1");  // C: leaf1 - spine1 - leaf0
  c.link(0xC002, "spine1", "leaf0");
  c.link(0xC003, "leaf0", "spine0");  // D: leaf0 - spine0 - leaf1
  c.link(0xC003, "spine0", "leaf1");
  const McastTables t = c.tables();
  ASSERT_TRUE(verify_multicast(c.f.topo, t, {}, {}).ok()) << "every tree is a tree";
  auto oriented = verify_multicast(c.f.topo, t, {}, routes.updown_rank);
  ASSERT_FALSE(oriented.ok());
  EXPECT_EQ(oriented.error().code, Errc::kCdgCycle);
  WorkerPool pool(1);
  ASSERT_TRUE(verify(c.f.topo, c.f.lids, routes, pool, {}).ok());
  VerifyOptions vo;
  vo.multicast = &t;
  auto full = verify(c.f.topo, c.f.lids, routes, vo, pool, {});
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, Errc::kCdgCycle) << full.error().message;
}

TEST(McastVerify, AMemberLeftOutIsNamed) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=4");
  const Routes routes = route_fabric(f, "ftree");
  const auto cas = testing::cabled_ca_ports(f.topo);
  std::vector<McastGroupIn> groups{{Lid{0xC000}, {cas[0], cas[3]}}};
  WorkerPool pool(1);
  auto t = compute_multicast(f.topo, routes, groups, pool);
  ASSERT_TRUE(t.ok());
  groups[0].members.push_back(cas[5]);  // asked of the verifier, not of the tree
  auto v = verify_multicast(f.topo, *t, groups, routes.updown_rank);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("is not delivered"), std::string::npos) << v.error().message;
}

}  // namespace
}  // namespace subnetd::routing

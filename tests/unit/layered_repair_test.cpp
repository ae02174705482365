// routing/engines/layered_repair.hpp: after links fail under layered
// routes, the destination LIDs keep their layers (the SL hosts hold; those
// that fit theirs no longer move, and are counted), only the routes that
// crossed a failed link change, and the result is complete,
// loop-free and acyclic on every VL (the verifier); what it cannot repair
// in place it refuses with a reason.

#include "routing/engines/layered_repair.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <string>

#include "routing/engines/layered.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::cut_links;
using testing::Fabric;
using testing::make_fabric;
using testing::trace_all;

Routes route_layered(const Topology& topo, const LidMap& lids, std::uint8_t vls) {
  EngineOptions opts;
  opts.max_vls = vls;
  WorkerPool pool(2);
  auto r = LayeredEngine{}.compute(topo, lids, opts, pool, {});
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? std::move(r).value() : Routes{};
}

void expect_deadlock_free(const Topology& topo, const LidMap& lids, const Routes& r) {
  const auto t = trace_all(topo, lids, r);
  EXPECT_EQ(t.delivered, t.reachable_pairs) << t.first_failure;
  EXPECT_EQ(t.misrouted, 0U);
  WorkerPool pool(2);
  auto v = verify(topo, lids, r, pool, {});
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->num_vls, r.num_vls);
}

// The data LIDs that some switch sent over a port of `cut` (switch, port).
std::set<std::uint32_t> lids_over(const LidMap& lids, const Routes& r,
                                  const std::set<std::pair<std::uint32_t, PortNum>>& cut) {
  std::set<std::uint32_t> out;
  for (const auto& [s, p] : cut) {
    for (std::uint32_t l = 1; l <= lids.max_lid.value; ++l) {
      if (r.lfts[s].get(Lid{l}) == p) out.insert(l);
    }
  }
  return out;
}

struct Case {
  const char* spec;
  std::size_t cut;
  std::uint8_t vls;
  // Every LID re-attached in its own layer. Else some may move to another
  // (a layer the engine filled densely may have no room for a detour), or
  // the repair be refused (kCdgCycle) if one fits no layer.
  bool must_repair;
};

const Case kCases[] = {
    {"random:switches=60,degree=5,hosts=2,seed=3", 4, 8, false},
    {"random:switches=120,degree=8,hosts=4,seed=1", 6, 8, false},
    {"random:switches=40,degree=6,hosts=2,seed=9", 3, 3, false},
    {"random:switches=40,degree=6,hosts=2,seed=9", 1, 8, false},
    {"dragonfly:a=4,p=2,h=2,g=5", 3, 8, true},
    {"hypercube:dim=5,hosts=2", 2, 8, true},
    {"torus:dims=4x4x4,hosts=1", 2, 8, true},  // dimension order, then not a torus
    {"mesh:dims=6x6,hosts=2", 1, 8, true},
};

class LayeredRepairTest : public ::testing::TestWithParam<Case> {};

TEST_P(LayeredRepairTest, EveryLidKeepsItsLayerAndOnlyBrokenRoutesChange) {
  const Case& c = GetParam();
  SCOPED_TRACE(c.spec);
  Fabric f = make_fabric(c.spec);
  const Topology before = f.topo;
  const Routes prev = route_layered(before, f.lids, c.vls);
  ASSERT_GT(prev.num_vls, 1);
  // The ends of the links about to fail.
  std::set<std::pair<std::uint32_t, PortNum>> ends;
  const std::vector<std::string> cut = cut_links(f.topo, c.cut, 5);
  ASSERT_EQ(cut.size(), c.cut);
  for (std::uint32_t s = 0; s < before.num_switches(); ++s) {
    const NodeId node = before.switch_node(SwitchIndex{s});
    for (unsigned p = 1; p <= before.node(node).num_ports; ++p) {
      const auto pn = static_cast<PortNum>(p);
      if (before.port(node, pn).connected() && !f.topo.port(node, pn).connected()) {
        ends.insert({s, pn});
      }
    }
  }
  ASSERT_EQ(ends.size(), 2 * c.cut);

  EngineOptions opts;
  opts.max_vls = c.vls;
  LayeredRepairStats st;
  auto r = repair_layered(f.topo, f.lids, before, prev, opts, {}, &st);
  if (!r.ok()) {
    EXPECT_FALSE(c.must_repair) << r.error().message;
    EXPECT_EQ(r.error().code, Errc::kCdgCycle) << r.error().message;
    EXPECT_NE(r.error().message.find("nor any other"), std::string::npos) << r.error().message;
    std::cout << c.spec << ": refused: " << r.error().message << "\n";
    return;
  }
  EXPECT_EQ(r->num_vls, prev.num_vls);
  EXPECT_EQ(r->vl0_rank, prev.vl0_rank);
  expect_deadlock_free(f.topo, f.lids, *r);

  const std::set<std::uint32_t> hit = lids_over(f.lids, prev, ends);
  const SwitchGraph g = SwitchGraph::build(f.topo, f.lids).value();
  std::uint64_t data = 0, moved = 0, layer_changes = 0;
  for (std::uint32_t l = 1; l <= f.lids.max_lid.value; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (!att.routable() || att.port == 0) continue;
    ++data;
    if (r->layer(Lid{l}) != prev.layer(Lid{l})) {
      EXPECT_TRUE(hit.contains(l)) << "LID " << l << " changed layer, though no route to it failed";
      ++layer_changes;
    }
    if (hit.contains(l)) continue;
    for (std::uint32_t s = 0; s < f.topo.num_switches(); ++s) {
      ASSERT_EQ(r->lfts[s].get(Lid{l}), prev.lfts[s].get(Lid{l}))
          << "LID " << l << " at switch " << s << " changed, though no route to it failed";
    }
  }
  EXPECT_EQ(st.lids_kept + st.lids_regrown, data);
  EXPECT_EQ(st.lids_regrown, hit.size() - std::count_if(hit.begin(), hit.end(), [&](auto l) {
                               return g.attachment(Lid{l}).port == 0;
                             }));
  EXPECT_EQ(st.lids_moved, layer_changes);
  if (c.must_repair) {
    EXPECT_EQ(st.lids_moved, 0U) << "every LID fits its own layer here";
  }
  EXPECT_GT(st.lids_kept, 0U);
  EXPECT_GT(st.entries_rewritten, 0U);

  // What a full recompute does to the SLs the hosts hold.
  const Routes fresh = route_layered(f.topo, f.lids, c.vls);
  for (std::uint32_t l = 1; l <= f.lids.max_lid.value; ++l) {
    if (fresh.layer(Lid{l}) != prev.layer(Lid{l})) ++moved;
  }
  std::cout << c.spec << ": " << r->notes.front() << "; routing afresh would move " << moved
            << " of " << data << " LIDs to another layer\n";
}

INSTANTIATE_TEST_SUITE_P(Fabrics, LayeredRepairTest, ::testing::ValuesIn(kCases));

// The daemon's repair (RepairBalance::kHotSpotsInLayer): after the broken
// routes are mended, the hot spots their detours made are spread, each
// LID kept in the layer the repair alone leaves it in (no SL changes);
// the busiest link carries fewer paths, and the routes stay complete and
// deadlock-free. With nothing broken, nothing is rewritten.
TEST(LayeredRepair, HotSpotsSpreadInTheirLayersAfterARepair) {
  Fabric f = make_fabric("random:switches=200,degree=8,hosts=8,seed=1");
  const Topology before = f.topo;
  const Routes prev = route_layered(before, f.lids, 8);
  ASSERT_GT(prev.num_vls, 1);
  EngineOptions opts;
  opts.max_vls = 8;
  LayeredRepairStats same_st;
  auto same = repair_layered(before, f.lids, before, prev, opts, {}, &same_st,
                             RepairBalance::kHotSpotsInLayer);
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same_st.hot_spot_moves, 0U);
  for (std::uint32_t s = 0; s < before.num_switches(); ++s) {
    ASSERT_EQ(same->lfts[s], prev.lfts[s]) << "switch " << s;
  }

  cut_links(f.topo, 3, 1);
  LayeredRepairStats plain_st, spread_st;
  auto plain = repair_layered(f.topo, f.lids, before, prev, opts, {}, &plain_st);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  auto spread = repair_layered(f.topo, f.lids, before, prev, opts, {}, &spread_st,
                               RepairBalance::kHotSpotsInLayer);
  ASSERT_TRUE(spread.ok()) << spread.error().message;
  EXPECT_EQ(plain_st.hot_spot_moves, 0U);
  EXPECT_GT(spread_st.hot_spot_moves, 0U);
  EXPECT_EQ(spread_st.lids_moved, plain_st.lids_moved);
  for (std::uint32_t l = 1; l <= f.lids.max_lid.value; ++l) {
    EXPECT_EQ(spread->layer(Lid{l}), plain->layer(Lid{l})) << "LID " << l;
  }
  const std::vector<std::uint64_t> p = testing::path_loads(f, *plain),
                                   q = testing::path_loads(f, *spread);
  ASSERT_FALSE(p.empty());
  EXPECT_LT(*std::max_element(q.begin(), q.end()), *std::max_element(p.begin(), p.end()));
  expect_deadlock_free(f.topo, f.lids, *spread);
  // Its new trees' searches past the grower's cap, refused unfinished,
  // are counted and said (dozens here; tens of thousands at 1,000
  // switches).
  EXPECT_GT(spread_st.searches_given_up, 0U);
  EXPECT_NE(spread->notes.back().find(
                fmt::format("; {} searches for a cycle given up at", spread_st.searches_given_up)),
            std::string::npos)
      << spread->notes.back();
}

TEST(LayeredRepair, RepairsAgainAfterASecondFailure) {
  Fabric f = make_fabric("torus:dims=6x6,hosts=2");
  const Topology first = f.topo;
  const Routes r0 = route_layered(first, f.lids, 8);
  EngineOptions opts;
  opts.max_vls = 8;
  cut_links(f.topo, 2, 1);
  const Topology second = f.topo;
  auto r1 = repair_layered(second, f.lids, first, r0, opts, {});
  ASSERT_TRUE(r1.ok()) << r1.error().message;
  cut_links(f.topo, 2, 2);
  auto r2 = repair_layered(f.topo, f.lids, second, *r1, opts, {});
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  expect_deadlock_free(f.topo, f.lids, *r2);
  for (std::uint32_t l = 1; l <= f.lids.max_lid.value; ++l) {
    EXPECT_EQ(r2->layer(Lid{l}), r0.layer(Lid{l}));
  }
}

TEST(LayeredRepair, ALinkThatComesBackIsRepairedSafelyOrRefused) {
  // The routes stay as they are (nothing broke); layer 0 gains the new
  // link's up*/down* dependencies for multicast, which may close a cycle
  // with the routes kept there: then the repair is refused, never unsafe.
  Fabric f = make_fabric("random:switches=50,degree=6,hosts=2,seed=7");
  const Topology full = f.topo;
  cut_links(f.topo, 3, 3);
  const Routes degraded = route_layered(f.topo, f.lids, 8);
  EngineOptions opts;
  opts.max_vls = 8;
  LayeredRepairStats st;
  auto r = repair_layered(full, f.lids, f.topo, degraded, opts, {}, &st);
  if (!r.ok()) {
    EXPECT_EQ(r.error().code, Errc::kCdgCycle) << r.error().message;
    return;
  }
  EXPECT_EQ(st.lids_regrown, 0U);
  expect_deadlock_free(full, f.lids, *r);
}

TEST(LayeredRepair, ACaThatComesBackIsRoutedInALayer) {
  Fabric f = make_fabric("random:switches=30,degree=5,hosts=2,seed=2");
  const Topology full = f.topo;
  // Unplug one CA, route, plug it back.
  NodeId ca{};
  for (std::uint32_t i = 0; i < f.topo.num_nodes(); ++i) {
    if (f.topo.node(NodeId{i}).type == NodeType::kCa) {
      ca = NodeId{i};
      break;
    }
  }
  f.topo.disconnect({ca, 1});
  const Routes without = route_layered(f.topo, f.lids, 8);
  EngineOptions opts;
  opts.max_vls = 8;
  auto r = repair_layered(full, f.lids, f.topo, without, opts, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  expect_deadlock_free(full, f.lids, *r);
}

TEST(LayeredRepair, RefusesWhatItCannotKeepInLayers) {
  const Fabric f = make_fabric("random:switches=30,degree=5,hosts=2,seed=2");
  EngineOptions opts;
  opts.max_vls = 8;
  // One VL: balanced up*/down*, the rerouter's to repair.
  const Routes one = route_layered(f.topo, f.lids, 1);
  auto r = repair_layered(f.topo, f.lids, f.topo, one, opts, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kUnsupported);
  EXPECT_NE(r.error().message.find("not layered"), std::string::npos) << r.error().message;
  // Fewer VLs offered now than the layers need.
  const Routes eight = route_layered(f.topo, f.lids, 8);
  ASSERT_GT(eight.num_vls, 2);
  opts.max_vls = 2;
  r = repair_layered(f.topo, f.lids, f.topo, eight, opts, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kUnsupported);
  EXPECT_NE(r.error().message.find("offer 2 data VL"), std::string::npos) << r.error().message;
  // Tables for another fabric.
  opts.max_vls = 8;
  const Fabric other = make_fabric("random:switches=20,degree=5,hosts=2,seed=2");
  r = repair_layered(f.topo, f.lids, other.topo, eight, opts, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  // A multicast order that does not cover the tables.
  Routes short_order = eight;
  short_order.vl0_rank.pop_back();
  r = repair_layered(f.topo, f.lids, f.topo, short_order, opts, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_NE(r.error().message.find("multicast order"), std::string::npos) << r.error().message;
}

TEST(LayeredRepair, AFabricThatSplitsKeepsEachPartRoutedAndDropsTheRest) {
  // Two links of a ring: two lines, each routed within itself; the
  // entries toward the other part are dropped, not left to wander.
  Fabric f = make_fabric("ring:switches=8,hosts=1");
  const Topology ring = f.topo;
  const Routes prev = route_layered(ring, f.lids, 8);
  ASSERT_GT(prev.num_vls, 1);
  const NodeId a = ring.switch_node(SwitchIndex{0});
  const NodeId b = ring.switch_node(SwitchIndex{4});
  for (const NodeId sw : {a, b}) {
    for (unsigned p = 1; p <= ring.node(sw).num_ports; ++p) {
      const Port& port = f.topo.port(sw, static_cast<PortNum>(p));
      if (port.connected() && f.topo.node(port.remote_node).type == NodeType::kSwitch) {
        f.topo.disconnect({sw, static_cast<PortNum>(p)});
        break;
      }
    }
  }
  const SwitchGraph g = SwitchGraph::build(f.topo, f.lids).value();
  ASSERT_EQ(g.num_components(), 2U);
  EngineOptions opts;
  opts.max_vls = 8;
  auto r = repair_layered(f.topo, f.lids, ring, prev, opts, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  expect_deadlock_free(f.topo, f.lids, *r);
  for (std::uint32_t l = 1; l <= f.lids.max_lid.value; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (!att.routable()) continue;
    for (std::uint32_t s = 0; s < f.topo.num_switches(); ++s) {
      if (g.component(SwitchIndex{s}) != g.component(att.sw)) {
        EXPECT_EQ(r->lfts[s].get(Lid{l}), kDropPort) << "LID " << l << " at switch " << s;
      }
    }
  }
}

TEST(LayeredRepair, NothingBrokenChangesNothing) {
  const Fabric f = make_fabric("dragonfly:a=4,p=2,h=2,g=5");
  const Routes prev = route_layered(f.topo, f.lids, 8);
  EngineOptions opts;
  opts.max_vls = 8;
  LayeredRepairStats st;
  auto r = repair_layered(f.topo, f.lids, f.topo, prev, opts, {}, &st);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(st.entries_rewritten, 0U);
  EXPECT_EQ(st.switch_lids_rerouted, 0U);
  for (std::uint32_t s = 0; s < f.topo.num_switches(); ++s) {
    EXPECT_TRUE(r->lfts[s] == prev.lfts[s]) << "switch " << s;
  }
  EXPECT_EQ(r->lid_layer, prev.lid_layer);
}

}  // namespace
}  // namespace subnetd::routing

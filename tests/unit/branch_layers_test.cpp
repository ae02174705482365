// Layers per source (Routes::path_layers): the verifier finds the credit
// loops of routes whose SL depends on the source, as an oracle of its own
// (check_path_layers, routing_test_support.hpp) does; the layered
// engine's branch layers (EngineOptions::branch_layers) keep every layer
// acyclic, each branch of a tree on one layer, and the busiest link less
// busy than without them; fast failover groups and the layered repair
// keep each source on its layer.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>

#include "routing/engines/layered.hpp"
#include "routing/engines/layered_repair.hpp"
#include "routing/failover_plan.hpp"
#include "routing/failover_verify.hpp"
#include "routing/layers.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::check_path_layers;
using testing::cut_links;
using testing::Fabric;
using testing::make_fabric;
using testing::path_loads;
using testing::route_fabric;
using testing::trace_all;

Result<Routes> route_branches(const Fabric& f, bool branches) {
  EngineOptions opts;
  opts.max_vls = 4;
  opts.branch_layers = branches;
  WorkerPool pool(2);
  return layered_general_routes(f.topo, f.lids, opts, pool, {});
}

std::uint64_t busiest(const Fabric& f, const Routes& r) {
  const std::vector<std::uint64_t> load = path_loads(f, r);
  return load.empty() ? 0 : *std::max_element(load.begin(), load.end());
}

Result<VerifyReport> verify_routes(const Fabric& f, const Routes& r) {
  WorkerPool pool(2);
  return verify(f.topo, f.lids, r, pool, {});
}

// Repaired routes: complete, acyclic per layer to the oracle and the
// verifier, and fast failover plans and verifies them.
void expect_repaired_sound(const Fabric& f, const Routes& fixed) {
  const auto t = trace_all(f.topo, f.lids, fixed);
  EXPECT_EQ(t.delivered, t.reachable_pairs) << t.first_failure;
  auto c = check_path_layers(f.topo, f.lids, fixed);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto v = verify_routes(f, fixed);
  ASSERT_TRUE(v.ok()) << v.error().message;
  WorkerPool pool(2);
  auto plan = FailoverPlan::build(f.topo, f.lids, fixed, pool);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto report = verify_failover(f.topo, f.lids, fixed, *plan, {}, pool);
  ASSERT_TRUE(report.ok()) << report.error().message;
}

TEST(CheckPathLayers, FindsTheLoopsOfOneLayerAndPassesLayersPerLid) {
  for (const char* spec : {"ring:switches=6,hosts=1", "torus:dims=4x4,hosts=1"}) {
    const Fabric f = make_fabric(spec);
    Routes r = route_fabric(f, "minhop");
    auto one = check_path_layers(f.topo, f.lids, r);
    ASSERT_FALSE(one.ok()) << spec;
    EXPECT_EQ(one.error().code, Errc::kCdgCycle);
    EXPECT_NE(one.error().message.find("layer 0"), std::string::npos) << one.error().message;
    auto a = assign_layers(f.topo, f.lids, r, LayerOptions{8}, {});
    ASSERT_TRUE(a.ok()) << a.error().message;
    r.num_vls = a->layers;
    r.lid_layer = a->lid_layer;
    auto layered = check_path_layers(f.topo, f.lids, r);
    ASSERT_TRUE(layered.ok()) << spec << ": " << layered.error().message;
    EXPECT_GT(*layered, 0u);
  }
}

TEST(CheckPathLayers, ReadsTheLayerOfEachSource) {
  const Fabric f = make_fabric("ring:switches=6,hosts=1");
  Routes r = route_fabric(f, "minhop");
  auto a = assign_layers(f.topo, f.lids, r, LayerOptions{8}, {});
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_GE(a->layers, 2);
  r.num_vls = a->layers;
  r.lid_layer = a->lid_layer;
  ASSERT_TRUE(check_path_layers(f.topo, f.lids, r).ok());
  // Every source's traffic on layer 0, whatever its LID's layer: one VL's
  // loops again.
  r.path_layers.assign(std::size_t{f.lids.max_lid.value} + 1,
                       std::vector<std::uint8_t>(r.lfts.size(), 0));
  auto all0 = check_path_layers(f.topo, f.lids, r);
  ASSERT_FALSE(all0.ok());
  EXPECT_EQ(all0.error().code, Errc::kCdgCycle);
  auto v0 = verify_routes(f, r);
  ASSERT_FALSE(v0.ok());
  EXPECT_EQ(v0.error().code, Errc::kCdgCycle) << v0.error().message;
  // Each source on its LID's layer again, given per source: acyclic.
  for (std::uint32_t l = 0; l < r.path_layers.size(); ++l) {
    r.path_layers[l].assign(r.lfts.size(), r.lid_layer[l]);
  }
  EXPECT_TRUE(check_path_layers(f.topo, f.lids, r).ok());
  EXPECT_TRUE(verify_routes(f, r).ok());
  // A layer past the routes' VLs is named.
  r.path_layers[r.path_layers.size() - 1].assign(r.lfts.size(), 9);
  auto past = check_path_layers(f.topo, f.lids, r);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().code, Errc::kInvalidArgument);
  EXPECT_NE(past.error().message.find("on layer 9"), std::string::npos) << past.error().message;
  auto vpast = verify_routes(f, r);
  ASSERT_FALSE(vpast.ok());
  EXPECT_EQ(vpast.error().code, Errc::kInvalidArgument);
  EXPECT_NE(vpast.error().message.find("on layer 9"), std::string::npos) << vpast.error().message;
}

TEST(CheckPathLayers, ALoopInTheTablesIsNamed) {
  const Fabric f = make_fabric("ring:switches=6,hosts=1");
  Routes r = route_fabric(f, "minhop");
  // sw-0 and sw-1 send every LID to each other.
  const SwitchIndex a = testing::sw_index(f, "sw-0");
  const SwitchIndex b = testing::sw_index(f, "sw-1");
  for (std::uint32_t l = 1; l <= f.lids.max_lid.value; ++l) {
    r.lfts[a.value].set(Lid{l}, testing::port_to(f, "sw-0", "sw-1"));
    r.lfts[b.value].set(Lid{l}, testing::port_to(f, "sw-1", "sw-0"));
  }
  auto c = check_path_layers(f.topo, f.lids, r);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::kInvalidArgument);
  EXPECT_NE(c.error().message.find("loops"), std::string::npos) << c.error().message;
}

// Fast failover and the SM-side repair keep one layer per LID: they refuse
// routes with layers per source, saying so (the daemon never asks the
// engine for them).
// Fast failover on branch layers: a LID whose layer depends on the source
// takes its class's group where a switch carries one layer and its entry
// alone where branches on several layers meet (the neighbours of its
// switch). The failover verifier and the tests' own oracle (every source
// on its layer, over entries and groups as the switches hold them) find
// every layer acyclic, and some such LID has an alternative somewhere.
TEST(BranchLayersFailover, GroupsKeepEachSourcesLayer) {
  for (const char* spec :
       {"random:switches=40,degree=4,hosts=1,seed=1", "random:switches=100,degree=8,hosts=1,seed=1",
        "random:switches=100,degree=8,hosts=1,seed=2"}) {
    SCOPED_TRACE(spec);
    const Fabric f = make_fabric(spec);
    auto r = route_branches(f, true);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_FALSE(r->path_layers.empty());
    WorkerPool pool(2);
    auto plan = FailoverPlan::build(f.topo, f.lids, *r, pool);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto report = verify_failover(f.topo, f.lids, *r, *plan, {}, pool);
    ASSERT_TRUE(report.ok()) << report.error().message;
    auto oracle = testing::check_failover_layers(f.topo, f.lids, *r, *plan);
    ASSERT_TRUE(oracle.ok()) << oracle.error().message;

    SwitchGraph g;
    auto built = SwitchGraph::build(f.topo, f.lids);
    ASSERT_TRUE(built.ok());
    g = std::move(built).value();
    std::size_t split = 0, with_alternative = 0, meeting = 0;
    for (std::uint32_t l = 1; l < r->path_layers.size(); ++l) {
      if (r->path_layers[l].empty()) continue;
      ++split;
      const Lid lid{l};
      EXPECT_TRUE(plan->per_switch(lid)) << "LID " << l;
      EXPECT_EQ(plan->lid_class(lid), FailoverPlan::kNoClass);
      const std::uint32_t t = g.attachment(lid).sw.value;
      // The layers each switch carries: its own and those arriving.
      std::vector<std::set<std::uint8_t>> carried(g.num_switches());
      for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
        for (std::uint32_t x = s; x != t;) {
          carried[x].insert(r->path_layer(s, lid));
          x = g.arc(g.arc_at_port(SwitchIndex{x}, r->lfts[x].get(lid))).to.value;
        }
      }
      for (std::uint32_t x = 0; x < g.num_switches(); ++x) {
        if (x == t) continue;
        const PortMask& grp = plan->lid_group_ports(SwitchIndex{x}, lid);
        if (carried[x].size() > 1) {
          ++meeting;
          PortMask entry;
          entry.set(r->lfts[x].get(lid));
          EXPECT_TRUE(grp.subset_of(entry)) << "LID " << l << " at switch " << x;
        } else if (grp.count() >= 2) {
          ++with_alternative;
          // Every port of it leads to the LID's switch or to a switch
          // carrying the same layer.
          grp.for_each([&](PortNum p) {
            const std::uint32_t w = g.peer_at_port(SwitchIndex{x}, p).value;
            EXPECT_TRUE(w == t || carried[w].count(*carried[x].begin()) != 0)
                << "LID " << l << " at switch " << x << " port " << int{p};
          });
        }
      }
    }
    EXPECT_EQ(plan->stats().lids_per_switch, split);
    EXPECT_GT(meeting, 0u);
    EXPECT_GT(with_alternative, 0u);
  }
}

// The verifier and the oracle agree on groups widened at random (one port
// more): both find a credit loop, or neither does; some widened plans
// close one. Per-switch groups are walked from each source on its own
// layer.
TEST(BranchLayersFailover, TheVerifierAgreesWithTheOracleOnWidenedGroups) {
  const Fabric f = make_fabric("random:switches=40,degree=4,hosts=1,seed=1");
  auto r = route_branches(f, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->path_layers.empty());
  WorkerPool pool(2);
  SwitchGraph g;
  auto built = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(built.ok());
  g = std::move(built).value();
  std::mt19937_64 rng(7);
  FailoverVerifyOptions vopts;
  vopts.check_failures = false;
  int cyclic = 0, acyclic = 0;
  for (int trial = 0; trial < 60; ++trial) {
    auto plan = FailoverPlan::build(f.topo, f.lids, *r, pool);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    // Widen one group by one more switch port of its switch.
    const auto s = static_cast<std::uint32_t>(rng() % g.num_switches());
    const auto groups = plan->groups(SwitchIndex{s});
    const auto arcs = g.arcs(SwitchIndex{s});
    if (groups.size() < 2 || arcs.empty()) continue;
    const auto id = static_cast<std::uint8_t>(1 + rng() % (groups.size() - 1));
    plan->mutable_group_for_test(SwitchIndex{s}, id).set(arcs[rng() % arcs.size()].local_port);
    const bool oracle = testing::check_failover_layers(f.topo, f.lids, *r, *plan).ok();
    auto v = verify_failover(f.topo, f.lids, *r, *plan, vopts, pool);
    ASSERT_TRUE(v.ok() || v.error().code == Errc::kCdgCycle) << v.error().message;
    EXPECT_EQ(v.ok(), oracle) << "trial " << trial << ": "
                              << (v.ok() ? std::string("verified") : v.error().message);
    ++(oracle ? acyclic : cyclic);
  }
  EXPECT_GT(cyclic, 0);
  EXPECT_GT(acyclic, 0);
}

// The layered repair keeps the layers of every source of an intact LID
// (on the fabric as it was: nothing changes), and after links fail
// re-attaches the switches cut off from the broken ones each on its
// sources' layer; the routes stay complete and acyclic per layer, and
// fast failover plans them.
TEST(BranchLayersRepair, KeepsEachSourcesLayerAndMendsBrokenOnesOnOne) {
  Fabric f = make_fabric("random:switches=100,degree=8,hosts=1,seed=1");
  const Topology before = f.topo;
  auto prev = route_branches(f, true);
  ASSERT_TRUE(prev.ok()) << prev.error().message;
  ASSERT_FALSE(prev->path_layers.empty());
  std::size_t split = 0;
  for (const auto& v : prev->path_layers) split += v.empty() ? 0 : 1;
  EngineOptions opts;
  opts.max_vls = 4;
  LayeredRepairStats same_st;
  auto same = repair_layered(before, f.lids, before, *prev, opts, {}, &same_st,
                             RepairBalance::kHotSpotsInLayer);
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same_st.branch_lids_kept, split);
  EXPECT_EQ(same_st.lids_moved, 0u);
  EXPECT_EQ(same->path_layers, prev->path_layers);
  for (std::uint32_t s = 0; s < before.num_switches(); ++s) {
    ASSERT_EQ(same->lfts[s], prev->lfts[s]) << "switch " << s;
  }

  cut_links(f.topo, 6, 3);
  LayeredRepairStats st;
  auto fixed =
      repair_layered(f.topo, f.lids, before, *prev, opts, {}, &st, RepairBalance::kHotSpotsInLayer);
  ASSERT_TRUE(fixed.ok()) << fixed.error().message;
  EXPECT_GT(st.branch_lids_kept, 0u);
  EXPECT_GT(st.branch_lids_reattached, 0u);  // broken, each source kept on its layer
  EXPECT_LE(st.lids_moved, st.branch_lids_merged);
  EXPECT_LE(st.branch_lids_kept + st.branch_lids_reattached + st.branch_lids_merged, split);
  std::size_t kept = 0;
  for (std::uint32_t l = 1; l < prev->path_layers.size(); ++l) {
    if (prev->path_layers[l].empty()) continue;
    if (l < fixed->path_layers.size() && !fixed->path_layers[l].empty()) {
      ++kept;
      EXPECT_EQ(fixed->path_layers[l], prev->path_layers[l]) << "LID " << l;
    }
  }
  EXPECT_EQ(kept, st.branch_lids_kept + st.branch_lids_reattached);
  expect_repaired_sound(f, *fixed);
}

// Random graphs with one CA per switch, where single trees funnel into
// their switch: the hot-spot trees no single layer helps take a layer per
// branch, the busiest link carries fewer paths than without, and every
// layer stays acyclic.
TEST(BranchLayers, HotSpotTreesTakeALayerPerBranch) {
  for (const char* spec : {"random:switches=40,degree=4,hosts=1,seed=1",
                           "random:switches=100,degree=8,hosts=1,seed=1"}) {
    SCOPED_TRACE(spec);
    const Fabric f = make_fabric(spec);
    auto without = route_branches(f, false);
    ASSERT_TRUE(without.ok()) << without.error().message;
    EXPECT_TRUE(without->path_layers.empty());
    auto with = route_branches(f, true);
    ASSERT_TRUE(with.ok()) << with.error().message;
    const auto t = trace_all(f.topo, f.lids, *with);
    EXPECT_EQ(t.delivered, t.reachable_pairs) << t.first_failure;
    auto c = check_path_layers(f.topo, f.lids, *with);
    ASSERT_TRUE(c.ok()) << c.error().message;
    auto v = verify_routes(f, *with);
    ASSERT_TRUE(v.ok()) << v.error().message;
    EXPECT_EQ(v->num_vls, with->num_vls);
    EXPECT_LT(busiest(f, *with), busiest(f, *without));

    // Each branch on one layer: a switch's path shares the layer of its
    // next hop's, unless that next hop forwards straight to the LID's
    // switch (the branches part there).
    SwitchGraph g;
    auto built = SwitchGraph::build(f.topo, f.lids);
    ASSERT_TRUE(built.ok());
    g = std::move(built).value();
    std::size_t split = 0, several = 0;
    for (std::uint32_t l = 1; l < with->path_layers.size(); ++l) {
      const std::vector<std::uint8_t>& by_switch = with->path_layers[l];
      if (by_switch.empty()) continue;
      ++split;
      const LidAttachment att = g.attachment(Lid{l});
      ASSERT_TRUE(att.routable() && att.port != 0) << "LID " << l;
      auto next = [&](std::uint32_t s) {
        return g.arc(g.arc_at_port(SwitchIndex{s}, with->lfts[s].get(Lid{l}))).to.value;
      };
      std::set<std::uint8_t> layers;
      for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
        layers.insert(with->path_layer(s, Lid{l}));
        if (s == att.sw.value) continue;
        const std::uint32_t y = next(s);
        if (y == att.sw.value || next(y) == att.sw.value) continue;
        EXPECT_EQ(with->path_layer(s, Lid{l}), with->path_layer(y, Lid{l}))
            << "LID " << l << ", switch " << s << " -> " << y;
      }
      if (layers.size() > 1) ++several;
    }
    // A tree whose every branch took its layer is on one layer: not split.
    EXPECT_GT(split, 0u);
    EXPECT_EQ(several, split);
  }
}

// Heavier damage: a broken LID whose cut-off switches cannot all re-attach
// on their sources' layers takes one layer (its sources on others move:
// counted), and the routes stay complete and acyclic.
TEST(BranchLayersRepair, ABrokenLidThatCannotKeepEverySourcesLayerTakesOne) {
  Fabric f = make_fabric("random:switches=100,degree=8,hosts=1,seed=1");
  const Topology before = f.topo;
  auto prev = route_branches(f, true);
  ASSERT_TRUE(prev.ok()) << prev.error().message;
  cut_links(f.topo, 10, 1);
  EngineOptions opts;
  opts.max_vls = 4;
  LayeredRepairStats st;
  auto fixed =
      repair_layered(f.topo, f.lids, before, *prev, opts, {}, &st, RepairBalance::kHotSpotsInLayer);
  ASSERT_TRUE(fixed.ok()) << fixed.error().message;
  EXPECT_GT(st.branch_lids_merged, 0u);
  EXPECT_GT(st.branch_lids_reattached, 0u);
  std::size_t on_one = 0;
  for (std::uint32_t l = 1; l < prev->path_layers.size(); ++l) {
    if (prev->path_layers[l].empty()) continue;
    if (l < fixed->path_layers.size() && !fixed->path_layers[l].empty()) continue;
    ++on_one;
    EXPECT_LT(fixed->layer(Lid{l}), fixed->num_vls) << "LID " << l;
  }
  EXPECT_EQ(on_one, st.branch_lids_merged);
  EXPECT_GE(st.lids_moved, st.branch_lids_merged);  // every switch has a CA: its SL changed
  expect_repaired_sound(f, *fixed);
}

}  // namespace
}  // namespace subnetd::routing

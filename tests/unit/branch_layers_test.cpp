// Layers per source (Routes::path_layers): the verifier finds the credit
// loops of routes whose SL depends on the source, as an oracle of its own
// (check_path_layers, routing_test_support.hpp) does; the layered
// engine's branch layers (EngineOptions::branch_layers) keep every layer
// acyclic, each branch of a tree on one layer, and the busiest link less
// busy than without them; fast failover and the repair refuse them.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "routing/engines/layered.hpp"
#include "routing/engines/layered_repair.hpp"
#include "routing/failover_plan.hpp"
#include "routing/layers.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::check_path_layers;
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
TEST(CheckPathLayers, FailoverAndRepairRefuseLayersPerSource) {
  const Fabric f = make_fabric("random:switches=40,degree=4,hosts=1,seed=1");
  auto r = route_branches(f, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->path_layers.empty());
  WorkerPool pool(2);
  auto plan = FailoverPlan::build(f.topo, f.lids, *r, pool);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, Errc::kUnsupported);
  EXPECT_NE(plan.error().message.find("per source"), std::string::npos) << plan.error().message;
  EngineOptions opts;
  opts.max_vls = 4;
  auto repaired = repair_layered(f.topo, f.lids, f.topo, *r, opts, {});
  ASSERT_FALSE(repaired.ok());
  EXPECT_EQ(repaired.error().code, Errc::kUnsupported);
  EXPECT_NE(repaired.error().message.find("per source"), std::string::npos)
      << repaired.error().message;
  // Without them both take the same fabric's routes.
  auto plain = route_branches(f, false);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(FailoverPlan::build(f.topo, f.lids, *plain, pool).ok());
  EXPECT_TRUE(repair_layered(f.topo, f.lids, f.topo, *plain, opts, {}).ok());
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
    EXPECT_GT(split, 0u);
    EXPECT_GT(several, 0u);
  }
}

}  // namespace
}  // namespace subnetd::routing

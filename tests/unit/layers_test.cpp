// routing/layers.hpp: shortest-path routes (minhop) that close credit loops
// on one VL are split into layers, and the verifier (its own code: per-VL
// dependency marking from Routes::lid_layer and a DFS cycle search) finds
// every layer acyclic. Routes that are deadlock-free already stay on one
// layer; a budget too small is an error that says so.

#include "routing/layers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "routing/engine.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::Fabric;
using testing::make_fabric;
using testing::route_fabric;

Result<VerifyReport> verify_routes(const Fabric& f, const Routes& r) {
  WorkerPool pool(2);
  return verify(f.topo, f.lids, r, pool, {});
}

struct LayerCase {
  const char* spec;
  bool loops_on_one_vl;  // minhop's routes close a credit loop on one VL
};

const LayerCase kCases[] = {
    {"ring:switches=6,hosts=1", true},
    {"ring:switches=9,hosts=2", true},
    {"torus:dims=4x4,hosts=1", true},
    {"torus:dims=5x5,hosts=1", true},
    {"torus:dims=3x3x3,hosts=1", false},
    {"mesh:dims=4x4,hosts=1", false},
    {"mesh:dims=3x3x2,hosts=2", false},
    {"dragonfly:a=4,p=2,h=2,g=5", false},
    {"random:switches=32,degree=4,hosts=2,seed=1", false},
    {"random:switches=50,degree=6,hosts=1,seed=7", false},
    {"fat-tree:levels=3,k=4", false},
};

class LayersTest : public ::testing::TestWithParam<LayerCase> {};

TEST_P(LayersTest, EveryLayerIsAcyclicAndTheBudgetHolds) {
  const LayerCase& c = GetParam();
  const Fabric f = make_fabric(c.spec);
  Routes r = route_fabric(f, "minhop");
  auto one_vl = verify_routes(f, r);
  if (c.loops_on_one_vl) {
    ASSERT_FALSE(one_vl.ok()) << "the case needs no layers: " << c.spec;
    EXPECT_EQ(one_vl.error().code, Errc::kCdgCycle);
  }
  auto a = assign_layers(f.topo, f.lids, r, LayerOptions{8}, {});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_GE(a->layers, 1);
  EXPECT_LE(a->layers, 8);
  if (c.loops_on_one_vl) {
    EXPECT_GE(a->layers, 2);
  }
  std::uint8_t highest = 0;
  for (const std::uint8_t l : a->lid_layer) highest = std::max(highest, l);
  EXPECT_EQ(highest + 1, a->layers);
  r.num_vls = a->layers;
  r.lid_layer = a->lid_layer;
  auto v = verify_routes(f, r);
  ASSERT_TRUE(v.ok()) << c.spec << ": " << v.error().message;
  EXPECT_EQ(v->num_vls, a->layers);
  std::cout << c.spec << ": " << int{a->layers} << " layer(s), " << a->dependencies
            << " dependencies\n";
}

INSTANTIATE_TEST_SUITE_P(Families, LayersTest, ::testing::ValuesIn(kCases));

TEST(Layers, UpDownRoutesStayOnOneLayer) {
  for (const char* spec :
       {"torus:dims=5x5,hosts=1", "random:switches=50,degree=6,hosts=1,seed=7"}) {
    const Fabric f = make_fabric(spec);
    const Routes r = route_fabric(f, "updn");
    auto a = assign_layers(f.topo, f.lids, r, LayerOptions{8}, {});
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ(a->layers, 1) << spec;
  }
}

TEST(Layers, ABudgetTooSmallIsAnErrorNamingIt) {
  const Fabric f = make_fabric("torus:dims=5x5,hosts=1");
  const Routes r = route_fabric(f, "minhop");
  auto a = assign_layers(f.topo, f.lids, r, LayerOptions{1}, {});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, Errc::kCdgCycle);
  EXPECT_NE(a.error().message.find("more than 1 VL"), std::string::npos) << a.error().message;
  auto zero = assign_layers(f.topo, f.lids, r, LayerOptions{0}, {});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().code, Errc::kOutOfRange);
}

TEST(Layers, ALoopInTheTablesIsNamed) {
  const Fabric f = make_fabric("ring:switches=6,hosts=1");
  Routes r = route_fabric(f, "minhop");
  // Two neighbours send a LID of a third switch to each other.
  const SwitchIndex a = testing::sw_index(f, "sw-0");
  const SwitchIndex b = testing::sw_index(f, "sw-1");
  Lid target{0};
  for (std::uint32_t l = 1; l <= f.lids.max_lid.value; ++l) {
    const PortRef o = f.lids.owner_of(Lid{l});
    if (o.node.valid() && f.topo.node(o.node).type == NodeType::kCa &&
        f.topo.node(f.topo.port(o.node, o.port).remote_node).description == "sw-3") {
      target = Lid{l};
      break;
    }
  }
  ASSERT_NE(target.value, 0u);
  r.lfts[a.value].set(target, testing::port_to(f, "sw-0", "sw-1"));
  r.lfts[b.value].set(target, testing::port_to(f, "sw-1", "sw-0"));
  auto l = assign_layers(f.topo, f.lids, r, LayerOptions{8}, {});
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, Errc::kForwardingLoop);
}

}  // namespace
}  // namespace subnetd::routing

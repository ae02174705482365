// daemon/bringup.hpp route_step with the routes programmed before: on
// layered routes, a sweep that finds a switch link lost repairs them in
// their layers (every LID keeps its SL), and one that finds a link gained
// routes afresh and says that SLs may change.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "bringup_test_support.hpp"
#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/sim/sim_fabric.hpp"

namespace subnetd::daemon {
namespace {

namespace sim = discovery::sim;

// A port of switch `sw` cabled to another switch (0: none).
PortNum switch_link_of(const routing::Topology& t, NodeId sw) {
  for (unsigned p = 1; p <= t.node(sw).num_ports; ++p) {
    const routing::Port& port = t.port(sw, static_cast<PortNum>(p));
    if (port.connected() && t.node(port.remote_node).type == routing::NodeType::kSwitch) {
      return static_cast<PortNum>(p);
    }
  }
  return 0;
}

TEST(LayeredResweep, ALostLinkIsRepairedInTheLayersAndAGainedOneRoutedAfresh) {
  std::unique_ptr<sim::SimFabric> fabric = bringup_testing::sim_of("torus:dims=5x5,hosts=1");
  ASSERT_NE(fabric, nullptr);
  routing::WorkerPool pool(1);
  BringUpOptions o;
  o.engine = "layered";
  auto first = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_GT(first->routes->num_vls, 1);

  // One switch-to-switch link goes down.
  const routing::Topology& t = first->sweep.topology;
  const NodeId sw = t.switch_node(SwitchIndex{0});
  const PortNum cut = switch_link_of(t, sw);
  ASSERT_NE(cut, 0);
  ASSERT_TRUE(fabric->link_down(t.node(sw).description, cut).ok());
  o.previous_routes = first->routes;
  o.previous_topology = std::make_shared<const routing::Topology>(t);
  auto second = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_FALSE(second->routes->notes.empty());
  EXPECT_NE(second->routes->notes.front().find("layered repair"), std::string::npos)
      << second->routes->notes.front();
  EXPECT_EQ(second->routes->num_vls, first->routes->num_vls);
  for (std::uint32_t l = 1; l <= second->lids.map.max_lid.value; ++l) {
    EXPECT_EQ(second->routes->layer(Lid{l}), first->routes->layer(Lid{l})) << "LID " << l;
  }

  // It comes back: routed afresh, to use it.
  ASSERT_TRUE(fabric->link_up(t.node(sw).description, cut).ok());
  o.previous_routes = second->routes;
  o.previous_topology = std::make_shared<const routing::Topology>(second->sweep.topology);
  auto third = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(third.ok()) << third.error().message;
  ASSERT_FALSE(third->routes->notes.empty());
  EXPECT_NE(third->routes->notes.front().find("routed afresh to use what the fabric gained"),
            std::string::npos)
      << third->routes->notes.front();
}

// Dimension order on per-hop dateline VLs (a torus whose layers exceed
// the VLs): a lost link is routed afresh, the first note saying why, on
// the datelines still (a LID's SL follows its switch's coordinates, so
// nearly every one keeps it); whole again, the same.
TEST(LayeredResweep, DatelineRoutesAreRoutedAfreshAroundALostLink) {
  std::unique_ptr<sim::SimFabric> fabric = bringup_testing::sim_of("torus:dims=6x6,hosts=1");
  ASSERT_NE(fabric, nullptr);
  routing::WorkerPool pool(1);
  BringUpOptions o;
  o.engine = "layered";
  o.max_vls = 3;
  auto first = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(first->routes->per_hop_vls());

  const routing::Topology& t = first->sweep.topology;
  const NodeId sw = t.switch_node(SwitchIndex{0});
  const PortNum cut = switch_link_of(t, sw);
  ASSERT_NE(cut, 0);
  ASSERT_TRUE(fabric->link_down(t.node(sw).description, cut).ok());
  o.previous_routes = first->routes;
  o.previous_topology = std::make_shared<const routing::Topology>(t);
  auto second = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_FALSE(second->routes->notes.empty());
  EXPECT_NE(second->routes->notes.front().find("per-hop dateline VLs routed afresh around the "
                                               "change"),
            std::string::npos)
      << second->routes->notes.front();
  EXPECT_TRUE(second->routes->per_hop_vls()) << "the torus with its gap keeps its datelines";
  EXPECT_EQ(second->routes->num_vls, 3);
  std::uint32_t kept = 0, data = 0;
  for (std::uint32_t l = 1; l <= second->lids.map.max_lid.value; ++l) {
    if (first->routes->layer(Lid{l}) == 0) continue;  // switch LIDs and the like
    ++data;
    kept += second->routes->layer(Lid{l}) == first->routes->layer(Lid{l}) ? 1 : 0;
  }
  EXPECT_GT(kept * 10, data * 9) << kept << " of " << data << " LIDs kept their SL";

  ASSERT_TRUE(fabric->link_up(t.node(sw).description, cut).ok());
  o.previous_routes = second->routes;
  o.previous_topology = std::make_shared<const routing::Topology>(second->sweep.topology);
  auto third = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_TRUE(third->routes->per_hop_vls());
}

}  // namespace
}  // namespace subnetd::daemon

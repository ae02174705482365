// daemon/bringup.hpp route_step with the routes programmed before: on
// layered routes, a sweep that finds a switch link lost repairs them in
// their layers (every LID keeps its SL), and one that finds a link gained
// routes afresh and says that SLs may change.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "bringup_test_support.hpp"
#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "grid_test_support.hpp"

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

// Layered routes on three data VLs: a torus whose dimension-order layers
// need more takes dateline VLs.
BringUpOptions on_dateline_vls() {
  BringUpOptions o;
  o.engine = "layered";
  o.max_vls = 3;
  return o;
}

// Dimension order on per-hop dateline VLs (a torus whose layers exceed
// the VLs): a lost link is routed afresh, the first note saying why, on
// the datelines still (a LID's SL follows its switch's coordinates, so
// nearly every one keeps it); whole again, the same.
TEST(LayeredResweep, DatelineRoutesAreRoutedAfreshAroundALostLink) {
  std::unique_ptr<sim::SimFabric> fabric = bringup_testing::sim_of("torus:dims=6x6,hosts=1");
  ASSERT_NE(fabric, nullptr);
  routing::WorkerPool pool(1);
  BringUpOptions o = on_dateline_vls();
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

// Each CA port's SL, by its port GUID.
std::map<std::uint64_t, std::uint8_t> sls_by_guid(const BringUpResult& r) {
  return routing::testing::sls_by_port_guid(r.sweep.topology, r.lids.map, *r.routes);
}

// The switch that canonical grid coordinates start from (the least GUID)
// dies: the next sweep places the torus as the routes before it did
// (Routes::grid, routing/grid_placement.hpp), so on dateline VLs, where a
// LID's SL follows its switch's coordinates, every other LID keeps its SL.
// (A torus of more than 256 switches: smaller ones are routed in general
// too, and those routes kept where better balanced.)
TEST(LayeredResweep, DatelineSlsStayWhenTheLeastGuidSwitchDies) {
  auto truth = load_topology("torus:dims=7x7x6,hosts=1");
  ASSERT_TRUE(truth.ok()) << truth.error().message;
  const NodeId least = truth->switch_node(routing::testing::least_guid_switch(*truth));
  const std::string dying = truth->node(least).description;
  // The SM on a CA of another switch.
  sim::SimOptions so;
  for (std::uint32_t i = 0; i < truth->num_nodes() && so.sm_node.empty(); ++i) {
    const routing::Node& node = truth->node(NodeId{i});
    if (node.type != routing::NodeType::kSwitch && truth->port(NodeId{i}, 1).remote_node != least) {
      so.sm_node = node.description;
    }
  }
  auto made = sim::SimFabric::create(std::move(truth).value(), so);
  ASSERT_TRUE(made.ok()) << made.error().message;
  std::unique_ptr<sim::SimFabric> fabric = std::move(made).value();
  routing::WorkerPool pool(1);
  BringUpOptions o = on_dateline_vls();
  auto first = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(first->routes->per_hop_vls());
  ASSERT_NE(first->routes->grid, nullptr);

  const routing::Topology& t = first->sweep.topology;
  ASSERT_TRUE(fabric->switch_down(dying).ok());
  o.previous_routes = first->routes;
  o.previous_topology = std::make_shared<const routing::Topology>(t);
  auto second = BringUp::run_blocking(*fabric, pool, o, nullptr);
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_TRUE(second->routes->per_hop_vls()) << second->routes->notes.front();
  const auto before = sls_by_guid(*first), after = sls_by_guid(*second);
  ASSERT_EQ(after.size() + 1, before.size());  // the dead switch's CA
  for (const auto& [guid, sl] : after) {
    ASSERT_TRUE(before.contains(guid)) << std::hex << guid;
    EXPECT_EQ(sl, before.at(guid)) << "port GUID " << std::hex << guid;
  }
}

}  // namespace
}  // namespace subnetd::daemon

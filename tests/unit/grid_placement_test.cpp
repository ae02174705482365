// routing/grid_placement.hpp: a grid found again is placed as the last
// routes' was, so that the death of the switch canonical coordinates start
// from moves no other switch, nor the SL dimension order gives its LIDs.

#include "routing/grid_placement.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "grid_test_support.hpp"
#include "routing/engines/layered.hpp"
#include "routing/grid_shape.hpp"
#include "routing/switch_graph.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::coordinates_by_guid;
using testing::expect_delivered_deadlock_free;
using testing::expect_grid_coordinates;
using testing::Fabric;
using testing::least_guid_switch;
using testing::make_fabric;
using testing::shape_of;
using testing::sls_by_port_guid;
using testing::without_switch;

// Canonical coordinates start from the switch of least GUID: when it dies
// (or a neighbour of it), the grid found without it is placed otherwise,
// but given the last placement (Routes::grid) every other switch keeps
// its coordinates, on rings and paths alike.
TEST(GridPlacement, ADeadSwitchMovesNoOtherWhereTheLastPlacementIsGiven) {
  for (const char* spec : {"torus:dims=6x6x6,hosts=1", "torus:dims=7x5,hosts=1",
                           "torus:dims=6x3,hosts=1", "mesh:dims=5x4,hosts=1"}) {
    SCOPED_TRACE(spec);
    const Fabric f = make_fabric(spec);
    auto whole = shape_of(f);
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    const GridPlacement before = placement_of(f.topo, *whole);
    const auto want = coordinates_by_guid(f.topo, *whole);
    auto g = SwitchGraph::build(f.topo, f.lids);
    ASSERT_TRUE(g.ok());
    const SwitchIndex least = least_guid_switch(f.topo);
    const SwitchIndex next_to_it = g->arcs(least).front().to;
    for (const SwitchIndex dead : {least, next_to_it}) {
      SCOPED_TRACE(f.topo.switch_label(dead));
      const Fabric d = without_switch(f, dead);
      auto gd = SwitchGraph::build(d.topo, d.lids);
      ASSERT_TRUE(gd.ok());
      auto expected = want;
      expected.erase(f.topo.node(f.topo.switch_node(dead)).guid.value);
      auto placed = grid_shape_with_gaps(d.topo, *gd, 64, &before);
      ASSERT_TRUE(placed.ok()) << placed.error().message;
      EXPECT_EQ(placed->size, whole->size);
      EXPECT_EQ(placed->wrap, whole->wrap);
      EXPECT_EQ(placed->missing_switches, 1U);
      EXPECT_EQ(coordinates_by_guid(d.topo, *placed), expected);
      expect_grid_coordinates(d, *gd, *placed);
      if (dead == least && whole->wrap.front() != 0) {
        // What the placement is for: on rings, canonically, the next
        // least GUID goes to the origin and every switch moves.
        auto canonical = grid_shape_with_gaps(d.topo, *gd, 64);
        ASSERT_TRUE(canonical.ok()) << canonical.error().message;
        EXPECT_NE(coordinates_by_guid(d.topo, *canonical), expected);
      }
      // Back whole, placed as the grid with its gap was: as at first.
      auto gap_placement = placement_of(d.topo, *placed);
      auto again = grid_shape(f.topo, *g, &gap_placement);
      ASSERT_TRUE(again.ok()) << again.error().message;
      EXPECT_EQ(coordinates_by_guid(f.topo, *again), want);
    }
  }
}

// A placement that fits no longer (another grid, or most switches moved)
// leaves the canonical coordinates.
TEST(GridPlacement, APlacementThatFitsNoMoreLeavesTheCanonicalCoordinates) {
  const Fabric f = make_fabric("torus:dims=6x6,hosts=1");
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  auto canonical = grid_shape(f.topo, *g);
  ASSERT_TRUE(canonical.ok());
  // Another grid's placement (other sizes): not applied.
  GridPlacement other = placement_of(f.topo, *canonical);
  other.size = {9, 4};
  auto shape = grid_shape(f.topo, *g, &other);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(coordinates_by_guid(f.topo, *shape), coordinates_by_guid(f.topo, *canonical));
  // Every switch's coordinates scrambled: no symmetry keeps half of them.
  GridPlacement scrambled = placement_of(f.topo, *canonical);
  for (std::size_t i = 0; i + 2 < scrambled.guids.size(); i += 3) {
    std::swap(scrambled.guids[i], scrambled.guids[i + 2]);
  }
  std::sort(scrambled.guids.begin(), scrambled.guids.end());  // find() needs them sorted
  std::vector<std::uint32_t> shuffled = scrambled.coord;
  for (std::size_t i = 0; i < shuffled.size() / 2; ++i) {
    shuffled[2 * i] = scrambled.coord[(2 * i * 7 + 2) % shuffled.size()];
    shuffled[2 * i + 1] = scrambled.coord[(2 * i * 11 + 3) % shuffled.size()];
  }
  scrambled.coord = shuffled;
  shape = grid_shape(f.topo, *g, &scrambled);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(coordinates_by_guid(f.topo, *shape), coordinates_by_guid(f.topo, *canonical));
}

// Dimension order on dateline VLs gives a LID its SL by its switch's
// coordinates: with the last routes' placement, the switch of least GUID
// dying moves no other LID's SL; without it, a third of them move.
TEST(GridPlacement, DatelineSlsStayWhenTheLeastGuidSwitchDies) {
  const Fabric f = make_fabric("torus:dims=6x6x6,hosts=1");
  WorkerPool pool(2);
  EngineOptions opts;
  opts.max_vls = 3;
  auto first = LayeredEngine{}.compute(f.topo, f.lids, opts, pool, {});
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(first->per_hop_vls());
  ASSERT_NE(first->grid, nullptr);
  auto sls = [](const Fabric& x, const Routes& r) { return sls_by_port_guid(x.topo, x.lids, r); };
  const auto before = sls(f, *first);
  const Fabric d = without_switch(f, least_guid_switch(f.topo));
  opts.previous_grid = first->grid;
  auto placed = LayeredEngine{}.compute(d.topo, d.lids, opts, pool, {});
  opts.previous_grid = nullptr;
  auto canonical = LayeredEngine{}.compute(d.topo, d.lids, opts, pool, {});
  ASSERT_TRUE(placed.ok()) << placed.error().message;
  ASSERT_TRUE(canonical.ok()) << canonical.error().message;
  ASSERT_TRUE(placed->per_hop_vls()) << placed->notes.front();
  expect_delivered_deadlock_free(d, *placed);
  std::size_t kept = 0, kept_canonically = 0;
  const auto after = sls(d, *placed), after_canonically = sls(d, *canonical);
  ASSERT_EQ(after.size(), before.size() - 1);  // the dead switch's CA
  for (const auto& [guid, sl] : after) {
    ASSERT_TRUE(before.contains(guid));
    kept += sl == before.at(guid) ? 1 : 0;
    kept_canonically += after_canonically.at(guid) == before.at(guid) ? 1 : 0;
  }
  EXPECT_EQ(kept, after.size());
  // Canonically, the LIDs whose switch's half of some ring moved (144 of
  // 215 kept theirs when this was written).
  EXPECT_GT((after.size() - kept_canonically) * 5, after.size())
      << kept_canonically << " of " << after.size();
  // The placement goes on with the routes, for the sweep after.
  ASSERT_NE(placed->grid, nullptr);
  EXPECT_EQ(placed->grid->size, first->grid->size);
}

// The switch at canonical point `at` (the grid whole), by GUID.
Guid guid_at(const Topology& topo, const GridShape& shape, std::vector<std::uint32_t> at) {
  for (const auto& [guid, c] : coordinates_by_guid(topo, shape)) {
    if (c == at) return Guid{guid};
  }
  ADD_FAILURE() << "no switch at the point";
  return Guid{};
}

// `c` one step along dimension d, down (the grid's wraps applied).
std::vector<std::uint32_t> step_down(const GridShape& shape, std::vector<std::uint32_t> c,
                                     std::uint32_t d) {
  c[d] = c[d] == 0 ? shape.size[d] - 1 : c[d] - 1;
  return c;
}

// A seed (the origin, then its neighbour along each dimension) places a
// grid alike whatever placement came before and whichever switch is
// least: the origin at 0, each named neighbour at 1 on its dimension, in
// the order named. The seed here names the dimensions last to first and
// each neighbour one step down canonically, so it is no canonical
// placement.
TEST(GridPlacement, ASeedPlacesTheGridWhateverCameBefore) {
  for (const char* spec : {"torus:dims=6x6x6,hosts=1", "torus:dims=7x5,hosts=1",
                           "mesh:dims=5x4,hosts=1", "hypercube:dim=4,hosts=1"}) {
    SCOPED_TRACE(spec);
    const Fabric f = make_fabric(spec);
    auto g = SwitchGraph::build(f.topo, f.lids);
    ASSERT_TRUE(g.ok());
    auto canonical = grid_shape(f.topo, *g);
    ASSERT_TRUE(canonical.ok()) << canonical.error().message;
    const std::uint32_t nd = canonical->dims();
    // The origin: on rings one step in from the least GUID's point, on
    // paths the far end (a mesh's corner).
    std::vector<std::uint32_t> origin(nd);
    for (std::uint32_t d = 0; d < nd; ++d) {
      origin[d] = canonical->wrap[d] != 0 ? 1 : canonical->size[d] - 1;
    }
    std::vector<Guid> seed{guid_at(f.topo, *canonical, origin)};
    for (std::uint32_t j = nd; j-- > 0;) {
      seed.push_back(guid_at(f.topo, *canonical, step_down(*canonical, origin, j)));
    }
    auto seeded = grid_shape(f.topo, *g, nullptr, seed);
    ASSERT_TRUE(seeded.ok()) << seeded.error().message;
    EXPECT_NE(seeded->placement.find("placed by its seed"), std::string::npos) << seeded->placement;
    expect_grid_coordinates(f, *g, *seeded);
    const auto coords = coordinates_by_guid(f.topo, *seeded);
    EXPECT_EQ(coords.at(seed[0].value), std::vector<std::uint32_t>(nd, 0));
    for (std::uint32_t j = 0; j < nd; ++j) {
      std::vector<std::uint32_t> unit(nd, 0);
      unit[j] = 1;
      EXPECT_EQ(coords.at(seed[j + 1].value), unit) << "neighbour " << j;
    }
    EXPECT_NE(coords, coordinates_by_guid(f.topo, *canonical));
    // The seed comes before the last placement: a standby with another
    // one, or none, places the grid as the master did.
    const GridPlacement before = placement_of(f.topo, *canonical);
    auto over = grid_shape(f.topo, *g, &before, seed);
    ASSERT_TRUE(over.ok());
    EXPECT_EQ(coordinates_by_guid(f.topo, *over), coords);
    // The least-GUID switch dead: with the seed alone (a restart with no
    // placement kept), every other switch where it was.
    const SwitchIndex least = least_guid_switch(f.topo);
    if (f.topo.node(f.topo.switch_node(least)).guid == seed[0]) continue;
    const Fabric d = without_switch(f, least);
    auto gd = SwitchGraph::build(d.topo, d.lids);
    ASSERT_TRUE(gd.ok());
    auto gapped = grid_shape_with_gaps(d.topo, *gd, 64, nullptr, seed);
    ASSERT_TRUE(gapped.ok()) << gapped.error().message;
    auto expected = coords;
    expected.erase(f.topo.node(f.topo.switch_node(least)).guid.value);
    EXPECT_EQ(coordinates_by_guid(d.topo, *gapped), expected);
  }
}

// A seed that does not fit the grid is said, and the grid placed as the
// last placement says, or canonically.
TEST(GridPlacement, ASeedThatDoesNotFitIsSaidAndLeftAside) {
  const Fabric f = make_fabric("mesh:dims=5x4,hosts=1");
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  auto canonical = grid_shape(f.topo, *g);
  ASSERT_TRUE(canonical.ok());
  ASSERT_EQ(canonical->describe(), "5x4 mesh");
  auto at = [&](std::uint32_t x, std::uint32_t y) { return guid_at(f.topo, *canonical, {x, y}); };
  struct Case {
    std::vector<Guid> seed;
    const char* why;
  };
  const Case cases[] = {
      {{at(0, 0), at(1, 0)}, "2 switches named; the 5x4 mesh needs 3"},
      {{at(0, 0), at(1, 0), Guid{0x77}}, "switch 0x0000000000000077 is not in the grid"},
      {{at(0, 0), at(1, 0), at(1, 1)}, "is not a grid neighbour of the origin"},
      {{at(0, 0), at(0, 1), at(0, 1)}, "along a dimension named before"},
      {{at(2, 0), at(3, 0), at(2, 1)}, "(on a path it must be at an end)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    auto shape = grid_shape(f.topo, *g, nullptr, c.seed);
    ASSERT_TRUE(shape.ok());
    EXPECT_NE(shape->placement.find(c.why), std::string::npos) << shape->placement;
    EXPECT_NE(shape->placement.find("the grid placed canonically"), std::string::npos)
        << shape->placement;
    EXPECT_EQ(coordinates_by_guid(f.topo, *shape), coordinates_by_guid(f.topo, *canonical));
  }
  // With a last placement (the mesh turned end to end), placed as it.
  GridPlacement turned = placement_of(f.topo, *canonical);
  for (std::size_t i = 0; i < turned.coord.size(); i += 2) {
    turned.coord[i] = turned.size[0] - 1 - turned.coord[i];
  }
  auto shape = grid_shape(f.topo, *g, &turned, cases[2].seed);
  ASSERT_TRUE(shape.ok());
  EXPECT_NE(shape->placement.find("the grid placed as the routes before"), std::string::npos)
      << shape->placement;
  EXPECT_EQ(placement_of(f.topo, *shape), turned);
}

// The layered engine routes a torus on dateline VLs by its seed, and its
// notes say so: SMs given the same seed give every LID the same SL
// whatever each routed before.
TEST(GridPlacement, TheLayeredEngineRoutesBySeedAndSaysSo) {
  const Fabric f = make_fabric("torus:dims=6x6x6,hosts=1");
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  auto canonical = grid_shape(f.topo, *g);
  ASSERT_TRUE(canonical.ok());
  const std::vector<std::uint32_t> origin{3, 2, 4};
  std::vector<Guid> seed{guid_at(f.topo, *canonical, origin)};
  for (std::uint32_t j = 0; j < 3; ++j) {
    std::vector<std::uint32_t> c = origin;
    c[j] = (c[j] + 1) % 6;
    seed.push_back(guid_at(f.topo, *canonical, c));
  }
  WorkerPool pool(2);
  EngineOptions opts;
  opts.max_vls = 3;
  opts.grid_seed = seed;
  auto master = LayeredEngine{}.compute(f.topo, f.lids, opts, pool, {});
  ASSERT_TRUE(master.ok()) << master.error().message;
  ASSERT_TRUE(master->per_hop_vls());
  const bool said = std::any_of(master->notes.begin(), master->notes.end(), [](const auto& n) {
    return n.find("layered: the grid placed by its seed (switch 0x") != std::string::npos;
  });
  EXPECT_TRUE(said) << master->notes.front();
  expect_delivered_deadlock_free(f, *master);
  // A standby that routed the grid canonically before takes over.
  opts.previous_grid = std::make_shared<const GridPlacement>(placement_of(f.topo, *canonical));
  auto standby = LayeredEngine{}.compute(f.topo, f.lids, opts, pool, {});
  ASSERT_TRUE(standby.ok()) << standby.error().message;
  EXPECT_EQ(*standby->grid, *master->grid);
  EXPECT_EQ(sls_by_port_guid(f.topo, f.lids, *standby), sls_by_port_guid(f.topo, f.lids, *master));
  // Without the seed, the SLs differ: the seed is what keeps them.
  opts.grid_seed.clear();
  auto unseeded = LayeredEngine{}.compute(f.topo, f.lids, opts, pool, {});
  ASSERT_TRUE(unseeded.ok());
  EXPECT_NE(sls_by_port_guid(f.topo, f.lids, *unseeded), sls_by_port_guid(f.topo, f.lids, *master));
}

}  // namespace
}  // namespace subnetd::routing

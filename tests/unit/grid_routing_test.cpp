// routing/grid_shape.hpp and routing/engines/dor.hpp: tori, meshes and
// hypercubes are recognised from their cabling alone (and nothing else
// is); their dimension-order routes are complete, shortest, deadlock-free
// on the layers they name (the verifier's own check), use as many layers as
// the shape needs and no more, and load every link of a torus alike.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grid_test_support.hpp"
#include "routing/engines/auto_engine.hpp"
#include "routing/engines/dor.hpp"
#include "routing/engines/layered.hpp"
#include "routing/engines/layered_repair.hpp"
#include "routing/engines/tree_grower.hpp"
#include "routing/grid_shape.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::coordinates_by_guid;
using testing::cut_links;
using testing::expect_delivered_deadlock_free;
using testing::expect_grid_coordinates;
using testing::Fabric;
using testing::lids_for;
using testing::make_fabric;
using testing::path_loads;
using testing::rebuilt;
using testing::shape_of;
using testing::trace_all;
using testing::without_switch;

struct ShapeCase {
  const char* spec;
  std::vector<std::uint32_t> sizes;  // sorted
  std::uint32_t rings;
  std::uint32_t vls;  // dor_layers, and the VLs the routes use (VL 0: multicast)
};

const ShapeCase kShapes[] = {
    {"torus:dims=8x8x8,hosts=1", {8, 8, 8}, 3, 8},
    {"torus:dims=5x5x5,hosts=1", {5, 5, 5}, 3, 5},
    // A ring of four is two paths of two: a 4x4x4 torus is a 6-cube.
    {"torus:dims=4x4x4,hosts=1", {2, 2, 2, 2, 2, 2}, 0, 2},
    {"torus:dims=5x3,hosts=1", {3, 5}, 2, 3},
    {"torus:dims=6x2,hosts=2", {2, 6}, 1, 3},  // size 2: one link, a path
    {"torus:dims=6x6,hosts=2", {6, 6}, 2, 4},
    {"mesh:dims=5x3,hosts=2", {3, 5}, 0, 2},
    {"mesh:dims=3x3x2,hosts=1", {2, 3, 3}, 0, 2},
    {"mesh:dims=6,hosts=1", {6}, 0, 2},
    {"hypercube:dim=5,hosts=1", {2, 2, 2, 2, 2}, 0, 2},
    {"ring:switches=7,hosts=2", {7}, 1, 3},
    {"ring:switches=3,hosts=1", {3}, 1, 2},
};

class GridShapeTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(GridShapeTest, FindsTheDimensionsAndCoordinatesThatFitEveryLink) {
  const ShapeCase& c = GetParam();
  const Fabric f = make_fabric(c.spec);
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  auto shape = grid_shape(f.topo, *g);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  std::vector<std::uint32_t> sizes = shape->size;
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, c.sizes) << shape->describe();
  EXPECT_EQ(std::count(shape->wrap.begin(), shape->wrap.end(), 1), c.rings) << shape->describe();
  EXPECT_EQ(dor_layers(*shape), c.vls);
  EXPECT_EQ(shape->missing_links, 0U);
  expect_grid_coordinates(f, *g, *shape);

  // The search that tolerates missing links finds a whole grid as it is.
  auto gapped = grid_shape_with_gaps(f.topo, *g, 0);
  ASSERT_TRUE(gapped.ok()) << gapped.error().message;
  sizes = gapped->size;
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, c.sizes) << gapped->describe();
  EXPECT_EQ(std::count(gapped->wrap.begin(), gapped->wrap.end(), 1), c.rings);
  EXPECT_EQ(gapped->missing_links, 0U);
  expect_grid_coordinates(f, *g, *gapped);
  // And with the same coordinates, though it starts from another origin.
  EXPECT_EQ(gapped->size, shape->size);
  EXPECT_EQ(gapped->wrap, shape->wrap);
  EXPECT_EQ(gapped->coord, shape->coord);
}

// Hops from every switch to every other (BFS), for the shortest-path check.
std::vector<std::vector<std::uint32_t>> all_hops(const SwitchGraph& g) {
  std::vector<std::vector<std::uint32_t>> hops;
  for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
    const SwitchIndex src[] = {SwitchIndex{s}};
    hops.push_back(hops_to_nearest(g, src));
  }
  return hops;
}

Result<Routes> route_layered(const Fabric& f, std::uint8_t vls) {
  EngineOptions opts;
  opts.max_vls = vls;
  WorkerPool pool(2);
  return LayeredEngine{}.compute(f.topo, f.lids, opts, pool, {});
}

TEST_P(GridShapeTest, DimensionOrderRoutesAreShortestAndDeadlockFreeOnTheirLayers) {
  const ShapeCase& c = GetParam();
  const Fabric f = make_fabric(c.spec);
  auto r = route_layered(f, 15);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->engine, "layered");
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.front().find("dimension-order routes"), std::string::npos) << r->notes.front();
  EXPECT_EQ(r->num_vls, c.vls);
  // VL 0 is multicast's: no CA/router LID on it.
  for (std::uint32_t l = 1; l < r->lid_layer.size(); ++l) {
    const PortRef owner = f.lids.owner_of(Lid{l});
    if (!owner.node.valid() || r->layer(Lid{l}) != 0) continue;
    EXPECT_EQ(f.topo.node(owner.node).type, NodeType::kSwitch) << "LID " << l << " on VL 0";
  }
  const auto t = trace_all(f.topo, f.lids, *r);
  EXPECT_EQ(t.delivered, t.reachable_pairs) << t.first_failure;
  WorkerPool pool(2);
  auto v = verify(f.topo, f.lids, *r, pool, {});
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->num_vls, c.vls);

  // Every route is a shortest one.
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  const auto hops = all_hops(*g);
  for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
    const LidAttachment att = g->attachment(Lid{l});
    if (!att.routable()) continue;
    for (std::uint32_t s = 0; s < g->num_switches(); ++s) {
      std::uint32_t cur = s, taken = 0;
      while (cur != att.sw.value && taken <= g->num_switches()) {
        const std::uint32_t a = g->arc_at_port(SwitchIndex{cur}, r->lfts[cur].get(Lid{l}));
        ASSERT_NE(a, kNoArc);
        cur = g->arc(a).to.value;
        ++taken;
      }
      ASSERT_EQ(taken, hops[s][att.sw.value]) << "LID " << l << " from switch " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grids, GridShapeTest, ::testing::ValuesIn(kShapes));

// On a torus every link carries the same CA-to-CA paths: with two CAs per
// switch, the destinations exactly half-way round a ring of even size go
// either way in equal numbers.
TEST(Dor, EveryLinkOfATorusCarriesTheSamePaths) {
  for (const char* spec : {"torus:dims=6x6,hosts=2", "torus:dims=8x8x8,hosts=2",
                           "ring:switches=9,hosts=2", "hypercube:dim=6,hosts=1"}) {
    const Fabric f = make_fabric(spec);
    auto r = route_layered(f, 9);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::vector<std::uint64_t> load = path_loads(f, *r);
    ASSERT_FALSE(load.empty());
    EXPECT_EQ(*std::min_element(load.begin(), load.end()),
              *std::max_element(load.begin(), load.end()))
        << spec;
  }
}

// The layers are what makes the routes deadlock-free: on one VL the same
// tables close a credit loop round the rings.
TEST(Dor, OnOneVlTheSameTablesLoop) {
  const Fabric f = make_fabric("torus:dims=5x5,hosts=1");
  auto r = route_layered(f, 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->num_vls, 4);
  r->num_vls = 1;
  r->lid_layer.clear();
  WorkerPool pool(2);
  auto v = verify(f.topo, f.lids, *r, pool, {});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kCdgCycle) << v.error().message;
}

// Parallel cables between neighbours are one grid link; the routes spread
// over them.
TEST(Dor, ParallelCablesShareTheTraffic) {
  Topology t;
  constexpr std::uint32_t kRing = 6;
  std::vector<NodeId> sw;
  for (std::uint32_t i = 0; i < kRing; ++i) {
    sw.push_back(t.add_node(NodeType::kSwitch, Guid{0x100 + i}, 6, "sw-" + std::to_string(i)));
  }
  for (std::uint32_t i = 0; i < kRing; ++i) {
    const NodeId next = sw[(i + 1) % kRing];
    ASSERT_TRUE(t.connect({sw[i], 1}, {next, 3}).ok());
    ASSERT_TRUE(t.connect({sw[i], 2}, {next, 4}).ok());
    for (std::uint8_t h = 0; h < 2; ++h) {
      const NodeId ca =
          t.add_node(NodeType::kCa, Guid{0x1000 + 2 * i + h}, 1, "h-" + std::to_string(2 * i + h));
      ASSERT_TRUE(t.connect({sw[i], static_cast<PortNum>(5 + h)}, {ca, 1}).ok());
    }
  }
  Fabric f;
  f.topo = std::move(t);
  f.lids = lids_for(f.topo);
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  auto shape = grid_shape(f.topo, *g);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(shape->describe(), "ring of 6");
  auto r = route_layered(f, 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->num_vls, 3);
  const auto trace = trace_all(f.topo, f.lids, *r);
  EXPECT_EQ(trace.delivered, trace.reachable_pairs) << trace.first_failure;
  for (const std::uint64_t l : path_loads(f, *r)) EXPECT_GT(l, 0U) << "an idle parallel cable";
}

// Anything but a grid is routed as any other topology, and the shape
// says why it is none; a grid with a link missing is no whole grid.
TEST(GridShape, NoGridIsFoundWhereThereIsNone) {
  for (const char* spec :
       {"torus:dims=5x5,hosts=1", "mesh:dims=4x3,hosts=1", "random:switches=30,degree=4,seed=2",
        "fat-tree:levels=3,k=4", "dragonfly:a=4,p=2,h=2,g=5"}) {
    Fabric f = make_fabric(spec);
    const bool grid =
        std::string_view(spec).starts_with("torus") || std::string_view(spec).starts_with("mesh");
    if (grid) cut_links(f.topo, 1, 3);
    SCOPED_TRACE(std::string(spec) + (grid ? ", one link cut" : ""));
    auto g = SwitchGraph::build(f.topo, f.lids);
    ASSERT_TRUE(g.ok());
    auto shape = grid_shape(f.topo, *g);
    ASSERT_FALSE(shape.ok()) << shape->describe();
    EXPECT_EQ(shape.error().code, Errc::kNotFound);
    EXPECT_TRUE(shape.error().message.starts_with("no torus or mesh: ")) << shape.error().message;
    if (grid) continue;  // found with its gap: GappedGridTest
    auto gapped = grid_shape_with_gaps(f.topo, *g, 1000);
    ASSERT_FALSE(gapped.ok()) << gapped->describe();
    EXPECT_EQ(gapped.error().code, Errc::kNotFound);
    auto r = route_layered(f, 8);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->notes.front().find("dimension-order"), std::string::npos) << r->notes.front();
  }
}

std::string notes_of(const Routes& r) {
  std::string notes;
  for (const std::string& n : r.notes) notes += n + "\n";
  return notes;
}

// Grids with links missing (seeded cuts): found with their coordinates
// and the count of links missing, refused when more are missing than
// allowed, and routed in dimension order repaired around the gaps.
struct GapCase {
  const char* spec;
  std::size_t cut;
  std::uint64_t seed;
  std::vector<std::uint32_t> sizes;  // sorted
  std::uint32_t rings;
};

const GapCase kGaps[] = {
    {"torus:dims=8x8x8,hosts=1", 30, 1, {8, 8, 8}, 3},  // 2% of its 1,536 links
    {"torus:dims=5x5x5,hosts=1", 6, 2, {5, 5, 5}, 3},
    {"torus:dims=6x6,hosts=2", 2, 3, {6, 6}, 2},
    {"mesh:dims=8x6,hosts=1", 2, 4, {6, 8}, 0},
    {"mesh:dims=4x4x3,hosts=1", 3, 5, {3, 4, 4}, 0},
    {"hypercube:dim=6,hosts=1", 4, 6, {2, 2, 2, 2, 2, 2}, 0},
};

class GappedGridTest : public ::testing::TestWithParam<GapCase> {
 protected:
  Fabric fabric() const {
    Fabric f = make_fabric(GetParam().spec);
    cut_links(f.topo, GetParam().cut, GetParam().seed);
    return f;
  }
};

TEST_P(GappedGridTest, FindsTheGridAndCountsTheLinksMissing) {
  const GapCase& c = GetParam();
  const Fabric f = fabric();
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->num_components(), 1U);
  EXPECT_FALSE(grid_shape(f.topo, *g).ok());
  auto shape = grid_shape_with_gaps(f.topo, *g, c.cut);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  std::vector<std::uint32_t> sizes = shape->size;
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, c.sizes) << shape->describe();
  EXPECT_EQ(std::count(shape->wrap.begin(), shape->wrap.end(), 1), c.rings);
  EXPECT_EQ(shape->missing_links, c.cut);
  expect_grid_coordinates(f, *g, *shape);
  // The coordinates the whole grid had: a cable coming back and routing
  // afresh leaves the LIDs' layers where they were.
  auto whole_shape = shape_of(make_fabric(c.spec));
  ASSERT_TRUE(whole_shape.ok()) << whole_shape.error().message;
  EXPECT_EQ(shape->size, whole_shape->size);
  EXPECT_EQ(shape->coord, whole_shape->coord);

  auto strict = grid_shape_with_gaps(f.topo, *g, c.cut - 1);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().code, Errc::kOutOfRange);
  EXPECT_NE(strict.error().message.find(
                fmt::format("but {} of its {} links missing, more than the {} links it may lack",
                            c.cut, shape->grid_links(), c.cut - 1)),
            std::string::npos)
      << strict.error().message;
}

TEST_P(GappedGridTest, DimensionOrderRoutesRepairedAroundTheGapsAreCompleteAndDeadlockFree) {
  const Fabric f = fabric();
  auto r = route_layered(f, 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.front().find(fmt::format("with {} of its", GetParam().cut)), std::string::npos)
      << r->notes.front();
  EXPECT_TRUE(r->notes.front().starts_with("layered: the switches form a ")) << r->notes.front();
  EXPECT_LE(r->num_vls, 8);
  expect_delivered_deadlock_free(f, *r);
}

INSTANTIATE_TEST_SUITE_P(Grids, GappedGridTest, ::testing::ValuesIn(kGaps));

// A torus routed at a cold start with 2% of its links missing, then whole
// again when they come back: the coordinates are the same, so nearly every
// LID's layer (its SL, which hosts keep in their connections) is too; only
// those the repair moved around a gap, or sent to VL 0, differ.
TEST(GappedGrid, NearlyEveryLidKeepsItsLayerWhenTheGapsCloseAgain) {
  const Fabric whole = make_fabric("torus:dims=8x8x8,hosts=1");
  Fabric cut = make_fabric("torus:dims=8x8x8,hosts=1");
  cut_links(cut.topo, 30, 1);
  auto with_gaps = route_layered(cut, 8);
  ASSERT_TRUE(with_gaps.ok()) << with_gaps.error().message;
  ASSERT_NE(with_gaps->notes.front().find("missing: dimension-order"), std::string::npos)
      << with_gaps->notes.front();
  auto again = route_layered(whole, 8);
  ASSERT_TRUE(again.ok()) << again.error().message;
  std::uint32_t cas = 0, same = 0;
  for (const NodeId n : whole.topo.switches()) {
    for (PortNum p = 1; p <= whole.topo.node(n).num_ports; ++p) {
      const Port& port = whole.topo.port(n, p);
      if (!port.connected() || whole.topo.node(port.remote_node).type != NodeType::kCa) continue;
      const std::uint32_t lid =
          whole.lids.base_lid(whole.topo, port.remote_node, port.remote_port).value;
      ++cas;
      same += with_gaps->lid_layer.at(lid) == again->lid_layer.at(lid) ? 1 : 0;
    }
  }
  ASSERT_EQ(cas, 512U);
  EXPECT_GE(same, cas * 95 / 100) << same << " of " << cas << " LIDs kept their layer";
}

// A grid of more than kLayeredGridCompareMaxSwitches switches is routed
// in general as well only when its repaired dimension-order routes miss
// the goal: their busiest link carries more than kLayeredGridGoal times
// the mean of shortest routes' paths over the links. The better balanced
// routes are kept, the first note says which and by how much.
TEST(GappedGrid, ALargeGridIsRoutedInGeneralTooOnlyWhenItsRepairMissesTheGoal) {
  for (const auto& [cut, compared] : {std::pair<std::size_t, bool>{17, false}, {69, true}}) {
    SCOPED_TRACE(std::to_string(cut) + " links cut");
    Fabric f = make_fabric("torus:dims=8x6x6,hosts=1");
    ASSERT_GT(f.topo.switches().size(), kLayeredGridCompareMaxSwitches);
    cut_links(f.topo, cut, 8);
    auto r = route_layered(f, 8);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::string& note = r->notes.front();
    EXPECT_TRUE(note.starts_with("layered: the switches form a ")) << note;
    EXPECT_EQ(note.find("whose busiest link carries") != std::string::npos, compared) << note;
    std::cout << note << "\n";
    // Routed in general, a grid this large is routed on seeded layers
    // alone (layered_grid_layers).
    if (note.find("routed as any other topology, whose busiest") != std::string::npos) {
      EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
        return n.starts_with("layered: routed on seeded layers alone");
      }));
    }
    expect_delivered_deadlock_free(f, *r);
    // auto, which routes gapped grids the same way, offers the general
    // engine's routes in its note just when they were compared.
    EngineOptions opts;
    opts.max_vls = 8;
    WorkerPool pool(2);
    auto a = AutoEngine{}.compute(f.topo, f.lids, opts, pool, {});
    ASSERT_TRUE(a.ok()) << a.error().message;
    ASSERT_FALSE(a->notes.empty());
    EXPECT_EQ(
        a->notes.front().find(", or in general where that is better balanced") != std::string::npos,
        compared)
        << a->notes.front();
    EXPECT_EQ(a->lfts, r->lfts);
  }
}

// The dimension-order routes in boxes on `f`, a grid with `missing` links
// missing, as the engine hands them to the repair: on 8 VLs, VL 0's order
// (multicast's) breadth first from switch 0 (the engine's bfs_rank).
std::optional<Routes> boxed_dor(const Fabric& f, std::size_t missing) {
  auto g = SwitchGraph::build(f.topo, f.lids);
  EXPECT_TRUE(g.ok());
  if (!g.ok()) return std::nullopt;
  auto shape = grid_shape_with_gaps(f.topo, *g, missing);
  EXPECT_TRUE(shape.ok()) << shape.error().message;
  if (!shape.ok()) return std::nullopt;
  auto dor = dor_routes(*g, *shape, dor_cover(*shape), {});
  EXPECT_TRUE(dor.ok()) << dor.error().message;
  if (!dor.ok()) return std::nullopt;
  dor->num_vls = 8;
  std::vector<std::uint32_t> dist, order;
  bfs_hops(*g, 0, dist, order);
  EXPECT_EQ(order.size(), g->num_switches());
  dor->vl0_rank.assign(g->num_switches(), 0);
  for (std::uint32_t i = 0; i < order.size(); ++i) dor->vl0_rank[order[i]] = i;
  return std::move(*dor);
}

// A grid with gaps routed afresh: after the repair of its dimension-order
// routes, the hot-spot steps (RepairBalance::kHotSpots) take the busiest
// link's paths down, and the routes stay complete, deadlock-free and
// within the budget. The repair alone (the daemon's, after a change)
// takes none.
TEST(GappedGrid, HotSpotStepsTakeTheBusiestLinkDown) {
  Fabric f = make_fabric("torus:dims=8x8x8,hosts=2");
  cut_links(f.topo, 30, 1);
  const std::optional<Routes> dor = boxed_dor(f, 30);
  ASSERT_TRUE(dor);
  EngineOptions opts;
  opts.max_vls = 8;
  LayeredRepairStats plain_st, spread_st;
  auto plain = repair_layered(f.topo, f.lids, f.topo, *dor, opts, {}, &plain_st);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  auto spread =
      repair_layered(f.topo, f.lids, f.topo, *dor, opts, {}, &spread_st, RepairBalance::kHotSpots);
  ASSERT_TRUE(spread.ok()) << spread.error().message;
  EXPECT_EQ(plain_st.hot_spot_moves, 0U);
  EXPECT_GT(spread_st.hot_spot_moves, 0U);
  const std::vector<std::uint64_t> before = path_loads(f, *plain), after = path_loads(f, *spread);
  ASSERT_FALSE(before.empty());
  EXPECT_LT(*std::max_element(after.begin(), after.end()),
            *std::max_element(before.begin(), before.end()));
  EXPECT_LE(spread->num_vls, 8);
  expect_delivered_deadlock_free(f, *plain);
  expect_delivered_deadlock_free(f, *spread);
}

// The coordinates follow the switches' GUIDs, not the search's origin nor
// the order discovery found the switches in: the same fabric, whole, with
// gaps or found in another order, gets the same coordinates, and so
// dimension-order routing puts its LIDs in the same layers (SLs).
TEST(GridShape, TheCoordinatesFollowTheGuidsNotTheSwitchOrder) {
  for (const char* spec :
       {"torus:dims=8x8x8,hosts=1", "torus:dims=6x4x3,hosts=1", "mesh:dims=5x3,hosts=1",
        "torus:dims=6x2,hosts=1", "hypercube:dim=5,hosts=1", "ring:switches=7,hosts=1"}) {
    SCOPED_TRACE(spec);
    const Fabric f = make_fabric(spec);
    const Fabric back = rebuilt(f, kNoSwitch, true);
    auto g = SwitchGraph::build(f.topo, f.lids);
    auto gb = SwitchGraph::build(back.topo, back.lids);
    ASSERT_TRUE(g.ok() && gb.ok());
    auto shape = grid_shape(f.topo, *g);
    ASSERT_TRUE(shape.ok()) << shape.error().message;
    const auto want = coordinates_by_guid(f.topo, *shape);
    auto shape_back = grid_shape(back.topo, *gb);
    ASSERT_TRUE(shape_back.ok()) << shape_back.error().message;
    EXPECT_EQ(shape_back->size, shape->size);
    EXPECT_EQ(shape_back->wrap, shape->wrap);
    EXPECT_EQ(coordinates_by_guid(back.topo, *shape_back), want);
    auto gapped_back = grid_shape_with_gaps(back.topo, *gb, 0);
    ASSERT_TRUE(gapped_back.ok()) << gapped_back.error().message;
    EXPECT_EQ(coordinates_by_guid(back.topo, *gapped_back), want);
    // The least GUID at the origin of every ring, in the lower half of
    // every path.
    const std::vector<std::uint32_t>& least = want.begin()->second;
    for (std::uint32_t d = 0; d < shape->dims(); ++d) {
      EXPECT_LE(least[d], shape->wrap[d] != 0 ? 0 : (shape->size[d] - 1) / 2) << d;
    }
  }
}

// A switch that died takes its grid links with it: the grid is still
// found, the point left empty counted, and routed as one.
TEST(GridShape, AGridWithADeadSwitchIsFoundWithItsGap) {
  Fabric whole = make_fabric("torus:dims=6x6x6,hosts=1");
  cut_links(whole.topo, 3, 9);
  const Fabric f = without_switch(whole, SwitchIndex{77});
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->num_switches(), 215U);
  auto shape = grid_shape_with_gaps(f.topo, *g, 20);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(shape->describe(), "6x6x6 torus");
  EXPECT_EQ(shape->missing_switches, 1U);
  // Its six links, and the three cut (none of them at the dead switch).
  EXPECT_EQ(shape->missing_links, 9U) << shape->gaps();
  EXPECT_EQ(shape->gaps(), "1 of its 216 switches and 9 of its 648 links");
  expect_grid_coordinates(f, *g, *shape);
  // Every other switch where it was in the whole grid.
  const Fabric intact = make_fabric("torus:dims=6x6x6,hosts=1");
  auto intact_shape = shape_of(intact);
  ASSERT_TRUE(intact_shape.ok()) << intact_shape.error().message;
  auto want = coordinates_by_guid(intact.topo, *intact_shape);
  want.erase(whole.topo.node(whole.topo.switch_node(SwitchIndex{77})).guid.value);
  EXPECT_EQ(coordinates_by_guid(f.topo, *shape), want);

  auto r = route_layered(f, 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->notes.empty());
  EXPECT_TRUE(r->notes.front().starts_with(
      "layered: the switches form a 6x6x6 torus with 1 of its 216 switches and 9 of its 648 "
      "links missing: "))
      << r->notes.front();
  expect_delivered_deadlock_free(f, *r);
}

TEST(GridShape, TwoSeparatePartsAreNoGrid) {
  Fabric f = make_fabric("ring:switches=6,hosts=1");
  // Cut the ring twice: two lines of three, not one grid.
  f.topo.disconnect({f.topo.switch_node(SwitchIndex{0}), 2});
  f.topo.disconnect({f.topo.switch_node(SwitchIndex{3}), 2});
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->num_components(), 2U);
  auto shape = grid_shape(f.topo, *g);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.error().message.find("more than one part"), std::string::npos)
      << shape.error().message;
}

// The layers are boxes of grid points whose windows each ring carries
// without a cycle; together they hold every point, and a search finds
// fewer than one per combination of ring halves.
TEST(Dor, TheLayersCoverTheGridWithFewBoxes) {
  struct Case {
    const char* spec;
    std::uint32_t boxes;
  };
  const Case cases[] = {
      {"torus:dims=8x8x8,hosts=1", 7},  // halves: 8
      {"torus:dims=5x5x5,hosts=1", 4},  // 8; no fewer: 125 points, 64 a box
      {"torus:dims=6x6,hosts=1", 3},    // 4
      {"torus:dims=8x8,hosts=1", 4},    // a row needs two boxes: 16 rows of 5
      {"torus:dims=8x3,hosts=1", 2},    // the ring of 3 is whole in each
      {"ring:switches=9,hosts=1", 2},
  };
  for (const Case& c : cases) {
    const Fabric f = make_fabric(c.spec);
    auto g = SwitchGraph::build(f.topo, f.lids);
    ASSERT_TRUE(g.ok());
    auto shape = grid_shape(f.topo, *g);
    ASSERT_TRUE(shape.ok()) << shape.error().message;
    const DorCover cover = dor_cover(*shape);
    EXPECT_EQ(cover.count, c.boxes) << c.spec;
    EXPECT_EQ(dor_layers(*shape), c.boxes + 1) << c.spec;
    ASSERT_EQ(cover.start.size(), std::size_t{cover.count} * shape->dims());
    for (std::uint32_t d = 0; d < shape->dims(); ++d) {
      const std::uint32_t k = shape->size[d];
      const bool ring = shape->wrap[d] != 0 && k >= 5;
      EXPECT_EQ(cover.width[d], ring ? (k + 1) / 2 + 1 : k) << c.spec << " dimension " << d;
      for (std::uint32_t b = 0; b < cover.count && !ring; ++b) {
        EXPECT_EQ(cover.start[b * shape->dims() + d], 0U) << c.spec;
      }
    }
    for (std::uint32_t s = 0; s < g->num_switches(); ++s) {
      EXPECT_LT(cover.box_of(*shape, SwitchIndex{s}), cover.count) << c.spec << " switch " << s;
    }
    EXPECT_EQ(dor_cover(*shape).start, cover.start) << c.spec << ": the same boxes each time";
  }
}

// A torus whose dimension-order layers do not fit the budget takes
// per-hop VLs at the rings' datelines (three data VLs); with two it is
// routed by the general engine within them. The notes say why.
TEST(Dor, ATorusNeedingMoreVlsThanGivenTakesDatelinesOrIsRoutedInGeneral) {
  const Fabric f = make_fabric("torus:dims=5x5x5,hosts=1");
  auto dl = route_layered(f, 4);
  ASSERT_TRUE(dl.ok()) << dl.error().message;
  EXPECT_TRUE(dl->per_hop_vls());
  EXPECT_EQ(dl->num_vls, 3);
  EXPECT_NE(notes_of(*dl).find("5x5x5 torus, whose dimension-order layers need 5 data VLs (one "
                               "for multicast), more than the 4 given: dimension-order routes on "
                               "3 data VL(s), each hop's VL set by its switch's SL2VL"),
            std::string::npos)
      << notes_of(*dl);
  expect_delivered_deadlock_free(f, *dl);

  auto r = route_layered(f, 2);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->per_hop_vls());
  EXPECT_LE(r->num_vls, 2);
  EXPECT_NE(notes_of(*r).find("5x5x5 torus, whose dimension-order routes need 5 data VLs (one "
                              "for multicast), more than the 2 given"),
            std::string::npos)
      << notes_of(*r);
  expect_delivered_deadlock_free(f, *r);
}

// A torus whose layers in boxes fit the VLs, with gaps: repaired on
// dateline VLs as well (the VLs past the datelines' free for detours,
// where the boxes leave none and what fits no layer funnels on VL 0's
// up*/down*), and the datelines kept only where their busiest link
// carries 1/kLayeredGridDatelineGain fewer paths than the boxes'.
TEST(GappedGrid, DatelinesReplaceTheBoxesOnlyWhereTheyBalanceClearlyBetter) {
  auto route = [](std::size_t cut) {
    Fabric f = make_fabric("torus:dims=8x8x8,hosts=1");
    cut_links(f.topo, cut, 1);
    f.lids = lids_for(f.topo);
    return std::pair(f, route_layered(f, 8));
  };
  const auto [lined, on_lines] = route(60);  // 4% of the links
  ASSERT_TRUE(on_lines.ok()) << on_lines.error().message;
  EXPECT_TRUE(on_lines->per_hop_vls()) << notes_of(*on_lines);
  EXPECT_NE(notes_of(*on_lines).find("dimension order on dateline VLs, whose busiest link carries"),
            std::string::npos)
      << notes_of(*on_lines);
  EXPECT_LE(on_lines->num_vls, 8);
  expect_delivered_deadlock_free(lined, *on_lines);
  // The boxes' routes, repaired as the engine repairs them.
  const std::optional<Routes> dor = boxed_dor(lined, 60);
  ASSERT_TRUE(dor);
  EngineOptions opts;
  opts.max_vls = 8;
  auto boxed = repair_layered(lined.topo, lined.lids, lined.topo, *dor, opts, {}, nullptr,
                              RepairBalance::kHotSpots);
  ASSERT_TRUE(boxed.ok()) << boxed.error().message;
  const std::vector<std::uint64_t> on_boxes = path_loads(lined, *boxed),
                                   on_datelines = path_loads(lined, *on_lines);
  const std::uint64_t box_max = *std::max_element(on_boxes.begin(), on_boxes.end());
  const std::uint64_t line_max = *std::max_element(on_datelines.begin(), on_datelines.end());
  EXPECT_LT(line_max * kLayeredGridDatelineGain, box_max * (kLayeredGridDatelineGain - 1))
      << line_max << " paths on datelines, " << box_max << " in boxes";

  // 2%: the boxes, close to the datelines, are kept.
  const auto [kept, in_boxes] = route(30);
  ASSERT_TRUE(in_boxes.ok()) << in_boxes.error().message;
  EXPECT_FALSE(in_boxes->per_hop_vls());
  EXPECT_NE(notes_of(*in_boxes).find("dimension order in boxes, whose busiest link carries"),
            std::string::npos)
      << notes_of(*in_boxes);
}

// The boxes' and the datelines' repairs run at once on a pool of two, one
// after the other on a pool of one: the same routes either way, with the
// datelines kept (4% of the links cut) and with the boxes kept (2%).
TEST(GappedGrid, BoxesAndDatelinesRepairedAtOnceRouteAsOneAfterTheOther) {
  for (const std::size_t cut : {60U, 30U}) {
    Fabric f = make_fabric("torus:dims=8x8x8,hosts=1");
    cut_links(f.topo, cut, 1);
    f.lids = lids_for(f.topo);
    EngineOptions opts;
    opts.max_vls = 8;
    WorkerPool one(1), two(2);
    auto serial = LayeredEngine{}.compute(f.topo, f.lids, opts, one, {});
    auto at_once = LayeredEngine{}.compute(f.topo, f.lids, opts, two, {});
    ASSERT_TRUE(serial.ok()) << serial.error().message;
    ASSERT_TRUE(at_once.ok()) << at_once.error().message;
    EXPECT_NE(notes_of(*at_once).find(cut == 60 ? "dimension order on dateline VLs, whose"
                                                : "dimension order in boxes, whose"),
              std::string::npos)
        << cut << ": " << notes_of(*at_once);
    EXPECT_EQ(at_once->notes, serial->notes) << cut;
    EXPECT_EQ(at_once->num_vls, serial->num_vls) << cut;
    EXPECT_EQ(at_once->lid_layer, serial->lid_layer) << cut;
    EXPECT_EQ(at_once->hop_vls, serial->hop_vls) << cut;
    EXPECT_TRUE(at_once->lfts == serial->lfts) << cut;
  }
}

}  // namespace
}  // namespace subnetd::routing

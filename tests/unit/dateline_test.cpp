// Per-hop VLs (routing/engines/dor.hpp, dor_dateline_routes): tori whose
// dimension-order layers exceed the VLs route on three data VLs whatever
// their size, the VL of a hop given by the switch's SL2VL for the port
// (Routes::hop_vls) and the destination's SL; the verifier checks one
// dependency graph across the VLs, and finds what a wrong table breaks.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "routing/engines/dor.hpp"
#include "routing/engines/layered.hpp"
#include "routing/failover_plan.hpp"
#include "routing/failover_verify.hpp"
#include "routing/grid_shape.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::cut_links;
using testing::Fabric;
using testing::lids_for;
using testing::make_fabric;
using testing::trace_all;

struct Grid {
  SwitchGraph g;
  GridShape shape;
};

Grid grid_of(const Fabric& f) {
  auto g = SwitchGraph::build(f.topo, f.lids);
  EXPECT_TRUE(g.ok());
  auto shape = grid_shape(f.topo, *g);
  EXPECT_TRUE(shape.ok()) << shape.error().message;
  return Grid{std::move(g).value(), shape.ok() ? std::move(shape).value() : GridShape{}};
}

struct DatelineCase {
  const char* spec;
  std::uint32_t sls;  // SL 0 and one per half of each ring of four or more
  std::uint8_t vls;   // 3 with such a ring, else 2
};

const DatelineCase kCases[] = {
    {"torus:dims=6x6x6,hosts=2", 9, 3},
    {"torus:dims=5x5x5,hosts=1", 9, 3},  // odd rings: the middle is neither half's wrap
    {"torus:dims=7x6,hosts=2", 5, 3},
    {"ring:switches=9,hosts=2", 3, 3},
    {"torus:dims=8x3,hosts=1", 3, 3},  // a ring of three: one hop at most, no bit
    {"mesh:dims=5x3,hosts=1", 2, 2},
};

class DatelineTest : public ::testing::TestWithParam<DatelineCase> {};

// The same tables as the layers' dimension order, every hop's VL one the
// routes use, no LID on SL 0, every CA-to-CA pair delivered, and the
// dependency graph across the VLs acyclic (the verifier's own check).
TEST_P(DatelineTest, RoutesAreDimensionOrderAndDeadlockFreeOnTheirVls) {
  const DatelineCase& c = GetParam();
  const Fabric f = make_fabric(c.spec);
  const Grid grid = grid_of(f);
  EXPECT_EQ(dor_dateline_sls(grid.shape), c.sls);
  auto r = dor_dateline_routes(grid.g, grid.shape, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->num_vls, c.vls);
  ASSERT_TRUE(r->per_hop_vls());
  auto boxes = dor_routes(grid.g, grid.shape, dor_cover(grid.shape), {});
  ASSERT_TRUE(boxes.ok()) << boxes.error().message;
  ASSERT_EQ(r->lfts.size(), boxes->lfts.size());
  for (std::size_t s = 0; s < r->lfts.size(); ++s) {
    for (std::uint32_t l = 1; l <= grid.g.max_lid().value; ++l) {
      ASSERT_EQ(r->lfts[s].get(Lid{l}), boxes->lfts[s].get(Lid{l}))
          << "switch " << s << " LID " << l;
    }
  }
  for (std::uint32_t l = 1; l <= grid.g.max_lid().value; ++l) {
    const LidAttachment att = grid.g.attachment(Lid{l});
    if (!att.routable()) continue;
    const std::uint8_t sl = r->layer(Lid{l});
    EXPECT_GE(sl, 1) << "LID " << l << " on multicast's SL";
    EXPECT_LT(sl, c.sls) << "LID " << l;
    for (std::uint32_t s = 0; s < grid.g.num_switches(); ++s) {
      const std::uint8_t p = r->lfts[s].get(Lid{l});
      const std::uint8_t vl = r->hop_vl(s, p, sl);
      EXPECT_TRUE(vl >= 1 && vl < r->num_vls) << "switch " << s << " LID " << l << " VL " << +vl;
    }
  }
  for (std::uint32_t s = 0; s < grid.g.num_switches(); ++s) {
    for (std::uint32_t p = 0; p <= grid.g.num_ports(SwitchIndex{s}); ++p) {
      EXPECT_EQ(r->hop_vl(s, static_cast<std::uint8_t>(p), 0), 0) << "multicast leaves VL 0";
      EXPECT_EQ(r->hop_vl(s, static_cast<std::uint8_t>(p), c.sls), kDropVl) << "an unused SL";
    }
  }
  const auto t = trace_all(f.topo, f.lids, *r);
  EXPECT_EQ(t.delivered, t.reachable_pairs) << t.first_failure;
  WorkerPool pool(2);
  auto v = verify(f.topo, f.lids, *r, pool, {});
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->num_vls, c.vls);
}

INSTANTIATE_TEST_SUITE_P(Grids, DatelineTest, ::testing::ValuesIn(kCases));

// With every hop of a data SL on VL 1 the same tables close a credit loop
// round a ring, and the verifier names it.
TEST(Dateline, OnOneVlTheSameTablesLoop) {
  const Fabric f = make_fabric("torus:dims=6x6,hosts=1");
  const Grid grid = grid_of(f);
  auto r = dor_dateline_routes(grid.g, grid.shape, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (std::vector<std::uint8_t>& table : r->hop_vls) {
    for (std::uint8_t& vl : table) vl = vl == 2 ? 1 : vl;
  }
  WorkerPool pool(2);
  auto v = verify(f.topo, f.lids, *r, pool, {});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kCdgCycle);
  EXPECT_NE(v.error().message.find("per-hop VLs: credit loop"), std::string::npos)
      << v.error().message;
  EXPECT_NE(v.error().message.find("(VL 1)"), std::string::npos) << v.error().message;
}

// A loop whose every dependency changes VL lies in no one VL's graph: the
// search across the VLs finds it (each ring's + links alternating VLs).
TEST(Dateline, ALoopThatChangesVlAtEveryHopIsFound) {
  const Fabric f = make_fabric("ring:switches=8,hosts=1");
  const Grid grid = grid_of(f);
  auto r = dor_dateline_routes(grid.g, grid.shape, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (std::uint32_t s = 0; s < grid.g.num_switches(); ++s) {
    for (const SwitchArc& a : grid.g.arcs(SwitchIndex{s})) {
      const auto step = grid_step(grid.shape, SwitchIndex{s}, a.to);
      ASSERT_TRUE(step.has_value());
      for (std::uint32_t sl = 1; sl < dor_dateline_sls(grid.shape); ++sl) {
        r->hop_vls[s][a.local_port * kNumSls + sl] =
            static_cast<std::uint8_t>(1 + grid.shape.at(SwitchIndex{s}, step->dim) % 2);
      }
    }
  }
  WorkerPool pool(2);
  auto v = verify(f.topo, f.lids, *r, pool, {});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kCdgCycle) << v.error().message;
  EXPECT_NE(v.error().message.find("(VL 1)"), std::string::npos) << v.error().message;
  EXPECT_NE(v.error().message.find("(VL 2)"), std::string::npos) << v.error().message;
}

// An SL a switch's table drops (or sends on a VL the routes do not use)
// on a route's hop is a route that never arrives.
TEST(Dateline, AHopOnADroppedVlIsReported) {
  const Fabric f = make_fabric("torus:dims=6x6,hosts=1");
  const Grid grid = grid_of(f);
  for (const std::uint8_t bad : {kDropVl, std::uint8_t{3}}) {
    auto r = dor_dateline_routes(grid.g, grid.shape, {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    // Switch 0's hop towards the first CA LID elsewhere.
    std::uint32_t lid = 1;
    while (!grid.g.attachment(Lid{lid}).routable() || grid.g.attachment(Lid{lid}).port == 0 ||
           grid.g.attachment(Lid{lid}).sw.value == 0) {
      ++lid;
    }
    const std::uint8_t p = r->lfts[0].get(Lid{lid});
    r->hop_vls[0][p * kNumSls + r->layer(Lid{lid})] = bad;
    WorkerPool pool(2);
    auto v = verify(f.topo, f.lids, *r, pool, {});
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Errc::kIncomplete);
    EXPECT_NE(
        v.error().message.find(bad == kDropVl ? "which drops it" : "beyond the routes' 3 VLs"),
        std::string::npos)
        << v.error().message;
  }
}

// Four rings of four or more would need 17 SLs, and it says so; on a grid
// with links missing the hops over them are left to the repair.
TEST(Dateline, FourRingsAreRefusedAndGapsLeftToTheRepair) {
  Fabric f = make_fabric("torus:dims=6x6x6,hosts=1");
  {
    // (The generators make three dimensions at most: the shape by hand.)
    const Grid grid = grid_of(f);
    GridShape four;
    four.size = {5, 5, 5, 5};
    four.wrap = {1, 1, 1, 1};
    EXPECT_EQ(dor_dateline_sls(four), 17U);
    auto r = dor_dateline_routes(grid.g, four, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::kOutOfRange);
    EXPECT_NE(r.error().message.find("need 17 SLs"), std::string::npos) << r.error().message;
  }
  cut_links(f.topo, 3, 1);
  f.lids = lids_for(f.topo);
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  auto shape = grid_shape_with_gaps(f.topo, *g, 3);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  auto r = dor_dateline_routes(*g, *shape, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::uint64_t unrouted = 0;
  for (const Lft& lft : r->lfts) {
    for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
      unrouted += lft.get(Lid{l}) == kDropPort && g->attachment(Lid{l}).routable() ? 1 : 0;
    }
  }
  EXPECT_GT(unrouted, 0U) << "the hops over the missing links";
}

// A torus with links missing whose layers exceed the VLs: dateline routes
// repaired around the gaps, the VLs past the datelines' given to free SLs
// for the detours the datelines' CDG refuses; every pair delivered, the
// dependency graph across the VLs acyclic, every LID on its switch's
// dateline SL, a free SL or SL 0.
TEST(Dateline, AGappedTorusIsRepairedOnTheDatelinesAndFreeSls) {
  Fabric f = make_fabric("torus:dims=6x6x6,hosts=2");
  cut_links(f.topo, 6, 3);
  f.lids = lids_for(f.topo);
  EngineOptions eo;
  eo.max_vls = 5;
  WorkerPool pool(2);
  auto r = LayeredEngine{}.compute(f.topo, f.lids, eo, pool, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->per_hop_vls()) << r->notes.front();
  EXPECT_EQ(r->num_vls, 5);
  std::string notes;
  for (const std::string& n : r->notes) notes += n + "\n";
  EXPECT_NE(notes.find("each hop's VL set by its switch's SL2VL at each ring's dateline"),
            std::string::npos)
      << notes;
  const auto t = trace_all(f.topo, f.lids, *r);
  EXPECT_EQ(t.delivered, t.reachable_pairs) << t.first_failure;
  auto v = verify(f.topo, f.lids, *r, pool, {});
  ASSERT_TRUE(v.ok()) << v.error().message;
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  auto shape = grid_shape_with_gaps(f.topo, *g, 6);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  auto whole = dor_dateline_routes(*g, *shape, {});
  ASSERT_TRUE(whole.ok());
  const std::uint32_t sls = dor_dateline_sls(*shape);
  for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
    const LidAttachment att = g->attachment(Lid{l});
    if (!att.routable() || att.port == 0) continue;
    const std::uint8_t sl = r->layer(Lid{l});
    EXPECT_TRUE(sl == whole->layer(Lid{l}) || sl >= sls || sl == 0) << "LID " << l << " SL " << +sl;
  }
}

// Fast failover arms such routes: groups per (switch, SL), proven on one
// dependency graph across the VLs with each port's SL2VL applied.
TEST(Dateline, FailoverPlansAreProvenAcrossTheVls) {
  const Fabric f = make_fabric("torus:dims=6x6,hosts=1");
  const Grid grid = grid_of(f);
  auto r = dor_dateline_routes(grid.g, grid.shape, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  r->engine = "layered";
  WorkerPool pool(2);
  auto plan = FailoverPlan::build(f.topo, f.lids, *r, pool, {});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  // A class per (switch, SL): one SL per switch on a whole torus.
  EXPECT_EQ(plan->num_classes(), grid.g.num_switches());
  for (std::uint32_t c = 0; c < plan->num_classes(); ++c) {
    EXPECT_NE(plan->class_layer(c), 0) << "class " << c;  // SL 0: multicast's alone
  }
  EXPECT_GT(plan->stats().pairs_with_alternative, 0U);
  auto report = verify_failover(f.topo, f.lids, *r, *plan, {}, pool);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->channels, std::uint64_t{grid.g.num_arcs()} * r->num_vls);
  EXPECT_GT(report->links_checked, 0U);
  // A SL2VL that drops a class's VL on one port: refused, named.
  Routes dropped = *r;
  const std::uint8_t sl = r->layer(Lid{1}) != 0 ? r->layer(Lid{1}) : 1;
  for (std::size_t i = sl; i < dropped.hop_vls[0].size(); i += kNumSls) {
    dropped.hop_vls[0][i] = kDropVl;
  }
  auto refused = FailoverPlan::build(f.topo, f.lids, dropped, pool, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("drops"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find(f.topo.switch_label(SwitchIndex{0})), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace subnetd::routing

// Fast failover groups (routing/failover_plan.hpp) and their verifier
// (routing/failover_verify.hpp), issue 14 deliverable 3: on fat trees
// (pristine and degraded), random graphs and tori the groups the SM computes
// keep the channel dependency graph acyclic over every port of every group,
// and on fat trees every single link failure is recovered by the switches
// alone. A group set that allows a credit loop is refused.

#include "routing/failover_plan.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <string>
#include <string_view>

#include "routing/engine.hpp"
#include "routing/failover_verify.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::Fabric;
using testing::make_fabric;

Routes route(const Fabric& f, std::string_view engine, WorkerPool& pool) {
  auto r = testing::route_engine(f.topo, f.lids, engine, pool);
  EXPECT_TRUE(r.ok()) << f.spec << ": " << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return Routes{};
  auto v = verify(f.topo, f.lids, *r, pool, {});
  EXPECT_TRUE(v.ok()) << f.spec << ": " << (v.ok() ? "" : v.error().message);
  return std::move(r).value();
}

// Every group of every switch widened to all of the switch's switch ports.
void widen_groups(FailoverPlan& plan, const SwitchGraph& g) {
  for (std::uint32_t s = 0; s < plan.num_switches(); ++s) {
    PortMask all;
    for (const SwitchArc& a : g.arcs(SwitchIndex{s})) all.set(a.local_port);
    for (std::size_t id = 1; id < plan.groups(SwitchIndex{s}).size(); ++id) {
      plan.mutable_group_for_test(SwitchIndex{s}, static_cast<std::uint8_t>(id)) = all;
    }
  }
}

struct Case {
  const char* spec;
  const char* engine;
  unsigned cut;     // switch links removed before routing (seeded)
  bool full_cover;  // every single failure must be recovered locally
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.spec << " " << c.engine << " cut " << c.cut << (c.full_cover ? " full cover" : "");
}

class FailoverPlanFabrics : public ::testing::TestWithParam<Case> {};

TEST_P(FailoverPlanFabrics, GroupsAreDeadlockFreeAndCoverSingleFailures) {
  const Case c = GetParam();
  WorkerPool pool(2);
  Fabric f = make_fabric(c.spec);
  if (c.cut != 0) testing::cut_links(f.topo, c.cut, 7);
  const Routes routes = route(f, c.engine, pool);
  // The tori on 3 VLs take datelines (their dimension-order boxes need 4
  // and 8).
  if (std::string_view(c.engine).starts_with("layered@3")) {
    EXPECT_TRUE(routes.per_hop_vls()) << c.spec;
  }
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_GT(plan->stats().pairs_with_alternative, 0U) << c.spec;
  EXPECT_EQ(plan->stats().pairs_narrowed, 0U) << c.spec;
  FailoverVerifyOptions opts;
  opts.require_coverage = c.full_cover;
  auto report = verify_failover(f.topo, f.lids, routes, *plan, opts, pool);
  ASSERT_TRUE(report.ok()) << c.spec << ": " << report.error().message;
  EXPECT_GT(report->links_checked, 0U);
  EXPECT_GT(report->dependencies, 0U);
  if (c.full_cover) {
    EXPECT_EQ(report->gap_pairs, 0U) << report->first_gap;
    EXPECT_GT(report->stranded_pairs, 0U);  // notifications had work to do
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fabrics, FailoverPlanFabrics,
    ::testing::Values(Case{"fat-tree:levels=2,radix=8", "ftree", 0, true},
                      Case{"fat-tree:levels=3,k=4", "ftree", 0, true},
                      Case{"fat-tree:levels=3,k=6,hosts_per_edge=2", "ftree", 0, true},
                      Case{"fat-tree:levels=3,k=6,hosts_per_edge=2", "updn", 0, true},
                      Case{"fat-tree:levels=3,k=8,hosts_per_edge=1", "ftree", 6, false},
                      Case{"fat-tree:levels=3,k=8,hosts_per_edge=1", "updn", 6, false},
                      Case{"fat-tree:levels=3,k=8,hosts_per_edge=1", "layered@1", 6, false},
                      Case{"random:switches=40,degree=6,hosts=2,seed=3", "updn", 0, false},
                      Case{"random:switches=40,degree=6,hosts=2,seed=3", "layered@1", 0, false},
                      Case{"torus:dims=4x4x3,hosts=1", "updn", 0, false},
                      Case{"ring:switches=8,hosts=1", "updn", 0, false},
                      // Several VLs: groups per (switch, layer), each layer's
                      // CDG checked apart (layered, dimension order).
                      Case{"random:switches=40,degree=6,hosts=2,seed=3", "layered", 0, false},
                      Case{"random:switches=40,degree=6,hosts=4,seed=3", "layered@4", 3, false},
                      Case{"dragonfly:a=4,p=2,h=2,g=5", "layered", 0, false},
                      Case{"fat-tree:levels=3,k=8,hosts_per_edge=1", "layered", 6, false},
                      Case{"torus:dims=4x4x3,hosts=1", "layered", 0, false},
                      Case{"torus:dims=5x5,hosts=2", "layered@2", 2, false},
                      // Per-hop dateline VLs: groups per (switch, SL), one
                      // CDG across the VLs checked (whole, and repaired
                      // around missing links).
                      Case{"torus:dims=6x6x6,hosts=1", "layered@3", 0, false},
                      // (The general engine balances the 5x5 torus minus
                      // 2 links better than repaired datelines since its
                      // seeded layers hold a spanning tree's escape paths.)
                      Case{"torus:dims=7x7,hosts=2", "layered@3/one-layer-per-lid", 2, false},
                      Case{"hypercube:dim=5,hosts=2", "layered", 0, false}),
    // Named by fabric, engine and cut (else gtest prints the parameter's
    // pointers).
    [](const ::testing::TestParamInfo<Case>& param_info) {
      std::string s = std::string(param_info.param.spec) + "_" + param_info.param.engine + "_cut" +
                      std::to_string(param_info.param.cut);
      for (char& c : s) {
        if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
      }
      return s;
    });

// Past FailoverPlan::kSearchWork (here lowered to 0, so that small
// fabrics take the large ones' way): layers take only dependencies that
// agree with their order, per-hop plans search a few nodes at most. The
// plans still verify acyclic, and still give alternatives.
TEST(FailoverPlanWithoutFullSearches, PlansVerifyOnLayersAndDatelines) {
  WorkerPool pool(2);
  for (const auto& [spec, engine] :
       {std::pair{"torus:dims=6x6x6,hosts=1", "layered@3"},
        std::pair{"random:switches=40,degree=6,hosts=2,seed=3", "layered"}}) {
    Fabric f = make_fabric(spec);
    const Routes routes = route(f, engine, pool);
    auto searched = FailoverPlan::build(f.topo, f.lids, routes, pool);
    auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool, {}, 0);
    ASSERT_TRUE(searched.ok() && plan.ok()) << spec;
    EXPECT_GT(plan->stats().pairs_with_alternative, 0U) << spec;
    // Another plan than the full searches' (they find room the order
    // or a capped search does not, and lose it to later classes: the
    // counts differ either way).
    EXPECT_NE(plan->stats().pairs_with_alternative, searched->stats().pairs_with_alternative)
        << spec;
    auto report = verify_failover(f.topo, f.lids, routes, *plan, {}, pool);
    ASSERT_TRUE(report.ok()) << spec << ": " << report.error().message;
    EXPECT_GT(report->dependencies, 0U);
  }
}

// Every group of every switch widened to all of its switch ports: traffic
// may then turn down->up, and on a torus that closes a credit loop.
TEST(FailoverVerify, GroupsThatAllowACreditLoopAreRefused) {
  WorkerPool pool(2);
  Fabric f = make_fabric("torus:dims=4x4,hosts=1");
  const Routes routes = route(f, "updn", pool);
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(verify_failover(f.topo, f.lids, routes, *plan, {}, pool).ok());
  widen_groups(*plan, *SwitchGraph::build(f.topo, f.lids));
  auto bad = verify_failover(f.topo, f.lids, routes, *plan, {}, pool);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kCdgCycle) << bad.error().message;
  EXPECT_NE(bad.error().message.find("credit loop"), std::string::npos);
}

// The same on dateline VLs: going on round a ring crosses its dateline
// and comes back on the VL it started on.
TEST(FailoverVerify, GroupsThatAllowACreditLoopAcrossVlsAreRefused) {
  WorkerPool pool(2);
  Fabric f = make_fabric("torus:dims=6x6,hosts=1");
  const Routes routes = route(f, "layered@3", pool);
  ASSERT_TRUE(routes.per_hop_vls());
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(verify_failover(f.topo, f.lids, routes, *plan, {}, pool).ok());
  widen_groups(*plan, *SwitchGraph::build(f.topo, f.lids));
  auto bad = verify_failover(f.topo, f.lids, routes, *plan, {}, pool);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kCdgCycle) << bad.error().message;
  EXPECT_NE(bad.error().message.find("credit loop across VLs"), std::string::npos)
      << bad.error().message;
}

TEST(FailoverVerify, AGroupNamingAPortWithoutASwitchIsRefused) {
  WorkerPool pool(1);
  Fabric f = make_fabric("fat-tree:levels=2,radix=4");
  const Routes routes = route(f, "ftree", pool);
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok());
  // Leaf 0's port 1 goes to a CA.
  const SwitchIndex leaf = f.topo.node(*f.topo.find_by_name("leaf0")).switch_index;
  ASSERT_GT(plan->groups(leaf).size(), 1U);
  plan->mutable_group_for_test(leaf, 1).set(1);
  auto bad = verify_failover(f.topo, f.lids, routes, *plan, {}, pool);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("port 1"), std::string::npos) << bad.error().message;
}

// Without groups (every id emptied) the same failures are left to the SM:
// the coverage check can fail.
TEST(FailoverVerify, WithoutAlternativesFailuresAreGapsAndCoverageIsRefused) {
  WorkerPool pool(1);
  Fabric f = make_fabric("fat-tree:levels=3,k=4");
  const Routes routes = route(f, "ftree", pool);
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok());
  for (std::uint32_t s = 0; s < plan->num_switches(); ++s) {
    for (std::size_t id = 1; id < plan->groups(SwitchIndex{s}).size(); ++id) {
      plan->mutable_group_for_test(SwitchIndex{s}, static_cast<std::uint8_t>(id)) = PortMask{};
    }
  }
  auto counted = verify_failover(f.topo, f.lids, routes, *plan, {}, pool);
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->links_with_gaps, counted->links_checked);
  EXPECT_FALSE(counted->first_gap.empty());
  FailoverVerifyOptions strict;
  strict.require_coverage = true;
  auto refused = verify_failover(f.topo, f.lids, routes, *plan, strict, pool);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Errc::kUnreachable);
}

// On a line every link is a bridge: its failure cuts the pairs across it
// off, which no alternative could save, so they are not gaps (the switches
// still strand and notify), and coverage is complete.
TEST(FailoverVerify, PairsABridgeCutsOffAreNotGaps) {
  WorkerPool pool(2);
  Fabric f = make_fabric("mesh:dims=5,hosts=1");
  const Routes routes = route(f, "updn", pool);
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  FailoverVerifyOptions strict;
  strict.require_coverage = true;
  auto report = verify_failover(f.topo, f.lids, routes, *plan, strict, pool);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->links_checked, 4U);
  EXPECT_EQ(report->gap_pairs, 0U) << report->first_gap;
  EXPECT_GT(report->stranded_pairs, 0U);
}

TEST(FailoverPlan, RoutesWithoutAnUpDownOrderOrLayersHaveNoPlan) {
  WorkerPool pool(1);
  Fabric f = make_fabric("ring:switches=4,hosts=1");
  auto e = make_engine("minhop");
  ASSERT_TRUE(e.ok());
  auto r = (*e)->compute(f.topo, f.lids, EngineOptions{}, pool, {});
  ASSERT_TRUE(r.ok());
  auto plan = FailoverPlan::build(f.topo, f.lids, *r, pool);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, Errc::kUnsupported);
}

// On a fat tree an edge switch's group for a remote edge switch is all its
// up-links, an aggregation switch's for an edge switch below it the one
// down-link, and LIDs take their switch's group.
TEST(FailoverPlan, FatTreeGroupsAreTheLegalNextHops) {
  WorkerPool pool(1);
  Fabric f = make_fabric("fat-tree:levels=3,k=4");
  const Routes routes = route(f, "ftree", pool);
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok());
  auto idx = [&](const char* name) { return testing::sw_index(f, name); };
  const SwitchIndex e00 = idx("edge-p0-0"), e10 = idx("edge-p1-0"), a00 = idx("agg-p0-0");
  const PortMask& up = plan->group(e00, e10);
  EXPECT_EQ(up.count(), 2U);
  EXPECT_TRUE(up.test(testing::port_to(f, "edge-p0-0", "agg-p0-0")));
  EXPECT_TRUE(up.test(testing::port_to(f, "edge-p0-0", "agg-p0-1")));
  const PortMask& down = plan->group(a00, e00);
  EXPECT_EQ(down.count(), 1U);
  EXPECT_TRUE(down.test(testing::port_to(f, "agg-p0-0", "edge-p0-0")));
  EXPECT_EQ(plan->group_id(e00, e00), 0);
  // A CA LID behind edge-p1-0 takes the group of (e00, e10).
  for (std::uint32_t l = 1; l <= plan->max_lid().value; ++l) {
    if (plan->home(Lid{l}) == e10) {
      EXPECT_EQ(plan->lid_group(e00, Lid{l}), plan->group_id(e00, e10));
      EXPECT_EQ(plan->lid_group(e10, Lid{l}), 0);
    }
  }
  EXPECT_EQ(plan->notify(e00).count(), 2U);  // both up-links
}

// Routes on several VLs: a LID takes the group of its class, a switch's
// CA/router LIDs on one layer; switch LIDs take none. Widened to every
// switch port, the groups close a credit loop on some VL, and the verifier,
// which checks each VL's graph apart, says which.
TEST(FailoverPlan, LayeredGroupsArePerSwitchAndLayer) {
  WorkerPool pool(2);
  Fabric f = make_fabric("random:switches=200,degree=8,hosts=8,seed=1");
  const Routes routes = route(f, "layered", pool);
  ASSERT_GT(routes.num_vls, 1);
  auto plan = FailoverPlan::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->num_layers(), routes.num_vls);
  EXPECT_GT(plan->num_classes(), plan->stats().destinations);  // some switch's LIDs on two layers
  EXPECT_GT(plan->stats().pairs_with_alternative, plan->stats().pairs_grouped / 2);
  const SwitchGraph g = *SwitchGraph::build(f.topo, f.lids);
  std::uint32_t per_switch = 0;
  for (std::uint32_t l = 1; l <= plan->max_lid().value; ++l) {
    const LidAttachment at = g.attachment(Lid{l});
    if (!at.routable()) continue;
    if (plan->per_switch(Lid{l})) {  // branch layers: branch_layers_test
      ASSERT_LT(l, routes.path_layers.size());
      EXPECT_FALSE(routes.path_layers[l].empty()) << "LID " << l;
      ++per_switch;
      continue;
    }
    const std::uint32_t c = plan->lid_class(Lid{l});
    if (at.port == 0) {
      EXPECT_EQ(c, FailoverPlan::kNoClass);
      EXPECT_EQ(plan->lid_group(SwitchIndex{0}, Lid{l}), 0);
      continue;
    }
    ASSERT_NE(c, FailoverPlan::kNoClass);
    EXPECT_EQ(plan->class_switch(c), at.sw);
    EXPECT_EQ(plan->class_layer(c), routes.layer(Lid{l}));
    for (std::uint32_t s = 0; s < plan->num_switches(); s += 37) {
      if (s == at.sw.value) continue;
      EXPECT_EQ(plan->lid_group(SwitchIndex{s}, Lid{l}), plan->class_group_id(SwitchIndex{s}, c));
    }
  }
  EXPECT_EQ(per_switch, plan->stats().lids_per_switch);
  auto report = verify_failover(f.topo, f.lids, routes, *plan, {}, pool);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->channels, std::uint64_t{g.num_arcs()} * routes.num_vls);

  // A LID put in another switch's class is refused before any walk.
  FailoverPlan moved = *plan;
  for (std::uint32_t l = 1; l <= moved.max_lid().value; ++l) {
    const LidAttachment at = g.attachment(Lid{l});
    if (!at.routable() || at.port == 0 || moved.per_switch(Lid{l})) continue;
    std::uint32_t other = 0;  // the first class of another switch
    while (other < moved.num_classes() && moved.class_switch(other) == at.sw) ++other;
    ASSERT_LT(other, moved.num_classes());
    moved.mutable_lid_class_for_test(Lid{l}) = other;
    auto refused = verify_failover(f.topo, f.lids, routes, moved, {}, pool);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
    EXPECT_NE(refused.error().message.find("not with its switch"), std::string::npos)
        << refused.error().message;
    break;
  }

  widen_groups(*plan, g);
  auto bad = verify_failover(f.topo, f.lids, routes, *plan, {}, pool);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kCdgCycle) << bad.error().message;
  EXPECT_NE(bad.error().message.find("credit loop on VL"), std::string::npos);
}

}  // namespace
}  // namespace subnetd::routing

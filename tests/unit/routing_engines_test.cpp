// Routing engines (minhop, updn, auto) on every generator family, with the
// verifier's verdict checked against what is known and reachability checked
// against a BFS oracle (routing_test_support.hpp).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stop_token>
#include <string>
#include <tuple>

#include "routing/engine.hpp"
#include "routing/engines/auto_engine.hpp"
#include "routing/engines/layered.hpp"
#include "routing/engines/updn.hpp"
#include "routing/hop_table.hpp"
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

Routes route(const Fabric& f, std::string_view engine, unsigned threads = 2,
             const EngineOptions& opts = {}) {
  auto e = make_engine(engine);
  EXPECT_TRUE(e.ok());
  WorkerPool pool(threads);
  auto r = (*e)->compute(f.topo, f.lids, opts, pool, {});
  EXPECT_TRUE(r.ok()) << f.spec << " / " << engine << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : Routes{};
}

Result<VerifyReport> verify_routes(const Fabric& f, const Routes& routes, unsigned threads = 2) {
  WorkerPool pool(threads);
  return verify(f.topo, f.lids, routes, pool, {});
}

// ---------------------------------------------------------------------------
// SwitchGraph

TEST(SwitchGraph, ArcsAttachmentsAndSkippedLinks) {
  Topology t;
  const NodeId a = t.add_node(NodeType::kSwitch, Guid{0x10}, 4, "sw-a");
  const NodeId b = t.add_node(NodeType::kSwitch, Guid{0x20}, 4, "sw-b");
  const NodeId c = t.add_node(NodeType::kSwitch, Guid{0x30}, 4, "sw-c");
  const NodeId h1 = t.add_node(NodeType::kCa, Guid{0x100}, 1, "h-1");
  const NodeId h2 = t.add_node(NodeType::kCa, Guid{0x200}, 1, "h-2");
  const NodeId h3 = t.add_node(NodeType::kCa, Guid{0x300}, 1, "h-3");
  t.add_node(NodeType::kCa, Guid{0x400}, 1, "h-4");  // never cabled
  ASSERT_TRUE(t.connect({a, 1}, {b, 2}).ok());
  ASSERT_TRUE(t.connect({a, 2}, {b, 1}).ok());  // parallel link
  ASSERT_TRUE(t.connect({a, 3}, {h1, 1}).ok());
  ASSERT_TRUE(t.connect({h2, 1}, {h3, 1}).ok());  // CA to CA, no switch
  ASSERT_TRUE(t.connect({c, 1}, {c, 2}).ok());    // loopback cable
  const LidMap lids = lids_for(t);
  auto g = SwitchGraph::build(t, lids);
  ASSERT_TRUE(g.ok()) << g.error().message;

  constexpr SwitchIndex s0{0}, s1{1}, s2{2};  // sw-a, sw-b, sw-c
  EXPECT_EQ(g->num_switches(), 3u);
  EXPECT_EQ(g->num_arcs(), 4u);
  ASSERT_EQ(g->arcs(s0).size(), 2u);
  EXPECT_EQ(g->arcs(s0)[0].to, s1);
  EXPECT_EQ(g->arcs(s0)[0].local_port, 1);
  EXPECT_EQ(g->arcs(s0)[0].remote_port, 2);
  EXPECT_EQ(g->arcs(s0)[1].local_port, 2);
  EXPECT_EQ(g->arcs(s0)[1].remote_port, 1);
  EXPECT_EQ(g->arc_at_port(s0, 2), g->first_arc(s0) + 1);
  EXPECT_EQ(g->arc_source(g->arc_at_port(s1, 1)), s1);
  EXPECT_EQ(g->arc_at_port(s0, 3), kNoArc);  // a CA
  EXPECT_EQ(g->arc_at_port(s0, 4), kNoArc);  // dark
  EXPECT_EQ(g->arc_at_port(s0, 9), kNoArc);  // no such port
  EXPECT_TRUE(g->arcs(s2).empty());
  EXPECT_EQ(g->num_components(), 2u);
  EXPECT_EQ(g->component(s0), g->component(s1));
  EXPECT_NE(g->component(s0), g->component(s2));

  const LidAttachment h1_at = g->attachment(lids.base_lid(t, h1, 1));
  EXPECT_EQ(h1_at.sw, s0);
  EXPECT_EQ(h1_at.port, 3);
  const LidAttachment b_at = g->attachment(lids.base_lid(t, b, 0));
  EXPECT_EQ(b_at.sw, s1);
  EXPECT_EQ(b_at.port, 0);
  EXPECT_FALSE(g->attachment(lids.base_lid(t, h2, 1)).routable());
  EXPECT_TRUE(g->has_endpoints(s0));
  EXPECT_FALSE(g->has_endpoints(s1));

  std::string notes;
  for (const auto& n : g->notes()) notes += n + "\n";
  EXPECT_NE(notes.find("CA \"h-2\" port 1 is cabled to CA \"h-3\" port 1"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("\"sw-c\""), std::string::npos) << notes;

  // Engines route what can be routed and the verifier agrees.
  Fabric f{"hand-made", std::move(t), lids};
  for (std::string_view engine : engine_names()) {
    const Routes r = route(f, engine);
    auto v = verify_routes(f, r);
    EXPECT_TRUE(v.ok()) << engine << ": " << v.error().message;
    const auto trace = trace_all(f.topo, f.lids, r);
    EXPECT_EQ(trace.delivered, trace.reachable_pairs) << engine << ": " << trace.first_failure;
  }
}

// Degenerate fabrics route without fuss: nothing at all, two CAs cabled to
// each other, one switch with its CAs.
TEST(Engines, DegenerateFabrics) {
  Fabric empty{"empty", Topology{}, LidMap{}};
  empty.lids.owner.resize(1);
  Fabric pair{"pair", Topology{}, LidMap{}};
  const NodeId a = pair.topo.add_node(NodeType::kCa, Guid{0x100}, 1, "a");
  const NodeId b = pair.topo.add_node(NodeType::kCa, Guid{0x200}, 1, "b");
  ASSERT_TRUE(pair.topo.connect({a, 1}, {b, 1}).ok());
  pair.lids = lids_for(pair.topo);
  Fabric single = make_fabric("ring:switches=1,hosts=3");
  for (const Fabric* f : {&empty, &pair, &single}) {
    for (std::string_view engine : engine_names()) {
      const Routes r = route(*f, engine);
      EXPECT_EQ(r.lfts.size(), f->topo.num_switches()) << f->spec;
      auto v = verify_routes(*f, r);
      ASSERT_TRUE(v.ok()) << f->spec << " " << engine << ": " << v.error().message;
      const auto trace = trace_all(f->topo, f->lids, r);
      EXPECT_EQ(trace.delivered, trace.reachable_pairs) << f->spec << ": " << trace.first_failure;
    }
  }
}

TEST(SwitchGraph, RejectsLidOwnedByMissingNode) {
  Topology t;
  t.add_node(NodeType::kSwitch, Guid{0x10}, 4, "sw");
  LidMap lids = lids_for(t);
  lids.owner.resize(5);
  lids.max_lid = Lid{4};
  lids.owner[4] = PortRef{NodeId{7}, 1};
  auto g = SwitchGraph::build(t, lids);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, Errc::kInvalidArgument);
  EXPECT_NE(g.error().message.find("LID 0x4"), std::string::npos) << g.error().message;
}

// ---------------------------------------------------------------------------
// Registry

TEST(EngineRegistry, KnownAndUnknownNames) {
  for (std::string_view name : engine_names()) {
    auto e = make_engine(name);
    ASSERT_TRUE(e.ok()) << name;
    EXPECT_EQ((*e)->name(), name);
  }
  auto bad = make_engine("lash");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("\"lash\""), std::string::npos);
  EXPECT_NE(bad.error().message.find("minhop, updn, auto"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Every family x every engine

enum class Expect { kPass, kCycle, kPassOrCycle };

struct FamilyCase {
  const char* spec;
  Expect minhop;  // updn and auto must always pass
};

const FamilyCase kFamilies[] = {
    {"fat-tree:levels=2,radix=8", Expect::kPass},
    {"fat-tree:levels=2,radix=4,ca_ports=2", Expect::kPass},
    {"fat-tree:levels=3,k=4", Expect::kPass},
    {"fat-tree:levels=3,k=6,hosts_per_edge=2", Expect::kPass},
    {"pgft:h=2,m=4.4,w=1.2,p=1.2", Expect::kPass},  // parallel links
    // A ring of >= 5 switches has unique 2-hop routes in both directions, so
    // its dependencies close a loop each way; a torus has such rings.
    {"ring:switches=6,hosts=1", Expect::kCycle},
    {"ring:switches=9,hosts=2", Expect::kCycle},
    {"torus:dims=5x5,hosts=1", Expect::kCycle},
    {"torus:dims=4x4,hosts=1", Expect::kCycle},
    {"torus:dims=3x3x3,hosts=1", Expect::kPassOrCycle},
    {"mesh:dims=4x4,hosts=1", Expect::kPassOrCycle},
    {"mesh:dims=3x3x2,hosts=2", Expect::kPassOrCycle},
    {"dragonfly:a=4,p=2,h=2,g=5", Expect::kPassOrCycle},
    {"random:switches=32,degree=4,hosts=2,seed=1", Expect::kPassOrCycle},
    {"random:switches=50,degree=6,hosts=1,seed=7", Expect::kPassOrCycle},
};

class FamilyTest : public ::testing::TestWithParam<std::tuple<FamilyCase, std::string_view>> {};

TEST_P(FamilyTest, VerdictAndReachability) {
  const auto& [fc, engine] = GetParam();
  const Fabric f = make_fabric(fc.spec);
  ASSERT_GT(f.topo.num_switches(), 0u);
  const Routes r = route(f, engine);
  ASSERT_EQ(r.lfts.size(), f.topo.num_switches());
  const std::string_view spec(fc.spec);
  const bool fat_tree = spec.starts_with("fat-tree") || spec.starts_with("pgft");
  // auto: ftree on fat trees, else layered (EngineOptions::max_vls is 8).
  EXPECT_EQ(r.engine, engine == "minhop"             ? "minhop"
                      : engine == "auto" && fat_tree ? "ftree"
                      : engine == "auto"             ? "layered"
                                                     : "updn");
  if (engine == "auto") {
    ASSERT_FALSE(r.notes.empty());
    EXPECT_TRUE(r.notes.front().starts_with("auto: " + r.engine + ", ")) << r.notes.front();
  }

  // Reachability against the oracle, whatever the deadlock verdict.
  const auto trace = trace_all(f.topo, f.lids, r);
  EXPECT_GT(trace.reachable_pairs, 0u);
  EXPECT_EQ(trace.delivered, trace.reachable_pairs) << trace.first_failure;
  EXPECT_EQ(trace.misrouted, 0u);

  auto v = verify_routes(f, r);
  const Expect expect = engine == "minhop" ? fc.minhop : Expect::kPass;
  if (expect == Expect::kPass) {
    EXPECT_TRUE(v.ok()) << v.error().message;
  } else if (expect == Expect::kCycle) {
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Errc::kCdgCycle) << v.error().message;
    EXPECT_NE(v.error().message.find("VL 0: credit loop "), std::string::npos);
  } else if (!v.ok()) {
    EXPECT_EQ(v.error().code, Errc::kCdgCycle) << v.error().message;
  }
  if (r.engine == "updn") {
    // Up*/down* holds for management routes too. (Not for ftree: under
    // fat-tree levels two top switches have no up/down path, so their switch
    // LIDs take shortest paths, management traffic on VL15; see ftree.hpp.)
    WorkerPool pool(2);
    VerifyOptions all;
    all.switch_traffic = true;
    auto with_switches = verify(f.topo, f.lids, r, all, pool, {});
    EXPECT_TRUE(with_switches.ok()) << with_switches.error().message;
  }
  if (v.ok()) {
    EXPECT_EQ(v->pairs_checked, trace.reachable_pairs);
    EXPECT_EQ(v->switches, f.topo.num_switches());
  }
  // Load statistics describe the switch-to-switch links.
  EXPECT_GT(r.load.links, 0u);
  EXPECT_GE(static_cast<double>(r.load.max_routes), r.load.mean_routes);
  EXPECT_GT(r.load.mean_routes, 0.0);
}

std::string family_name(const ::testing::TestParamInfo<FamilyTest::ParamType>& info) {
  std::string s =
      std::string(std::get<0>(info.param).spec) + "_" + std::string(std::get<1>(info.param));
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, FamilyTest,
                         ::testing::Combine(::testing::ValuesIn(kFamilies),
                                            ::testing::Values(std::string_view("minhop"),
                                                              std::string_view("updn"),
                                                              std::string_view("auto"))),
                         family_name);

// ---------------------------------------------------------------------------
// Link cuts: updn must stay complete and deadlock-free on whatever remains,
// connected or not; minhop stays complete and loop-free.

TEST(LinkCuts, UpdnSurvivesRandomCuts) {
  const char* specs[] = {"fat-tree:levels=3,k=6,hosts_per_edge=2", "fat-tree:levels=2,radix=8",
                         "random:switches=40,degree=4,hosts=1,seed=3", "torus:dims=4x4,hosts=1"};
  const double fractions[] = {0.05, 0.2, 0.5};
  for (const char* spec : specs) {
    const Fabric pristine = make_fabric(spec);
    const std::size_t links = testing::switch_links(pristine.topo).size();
    for (double fraction : fractions) {
      for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        Fabric f = pristine;
        const auto count = std::max<std::size_t>(1, static_cast<std::size_t>(fraction * links));
        const auto cut = cut_links(f.topo, count, seed);
        const std::string what = fmt::format("{}: cut {} of {} links with seed {} (first: {})",
                                             spec, count, links, seed, cut.front());
        std::printf("%s\n", what.c_str());
        SCOPED_TRACE(what);
        for (std::string_view engine : {"updn", "minhop"}) {
          const Routes r = route(f, engine);
          const auto trace = trace_all(f.topo, f.lids, r);
          EXPECT_EQ(trace.delivered, trace.reachable_pairs)
              << engine << ": " << trace.first_failure;
          EXPECT_EQ(trace.misrouted, 0u) << engine;
          auto v = verify_routes(f, r);
          if (engine == "updn") {
            EXPECT_TRUE(v.ok()) << v.error().message;
            WorkerPool pool(2);
            VerifyOptions all;
            all.switch_traffic = true;
            auto with_switches = verify(f.topo, f.lids, r, all, pool, {});
            EXPECT_TRUE(with_switches.ok()) << with_switches.error().message;
          } else if (!v.ok()) {
            EXPECT_EQ(v.error().code, Errc::kCdgCycle) << v.error().message;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Balance, counted as Routes::load counts it: CA LIDs per switch-to-switch
// link. On fat-tree:levels=2,radix=8 (8 leaves, 4 spines, 4 CAs a leaf) a
// leaf sends 32 - 4 = 28 remote CA LIDs over its 4 up-links, so the best any
// engine can do is 7 on every up-link (a spine's down-link carries its leaf's
// 4). Both engines must reach that optimum.

// CA/router LIDs switch s routes through its port p.
std::uint32_t carried(const Fabric& f, const Routes& r, const SwitchGraph& g, SwitchIndex s,
                      PortNum p) {
  std::uint32_t c = 0;
  for (std::uint32_t d = 1; d <= f.lids.max_lid.value; ++d) {
    c += g.attachment(Lid{d}).port != 0 && r.lfts[s.value].get(Lid{d}) == p;
  }
  return c;
}

TEST(Balance, LeafSpineIsOptimal) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=8");
  ASSERT_EQ(f.lids.max_lid.value, 8u * 4 + 8 + 4);
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  for (std::string_view engine : {"minhop", "updn"}) {
    const Routes r = route(f, engine);
    EXPECT_EQ(r.load.max_routes, 7u) << engine;
    EXPECT_EQ(r.load.links, 2u * 8 * 4);
    EXPECT_DOUBLE_EQ(r.load.mean_routes, (8 * 4 * 7 + 4 * 8 * 4) / 64.0) << engine;
    for (std::uint32_t i = 0; i < g->num_switches(); ++i) {
      const SwitchIndex s{i};
      for (const SwitchArc& a : g->arcs(s)) {
        EXPECT_EQ(carried(f, r, *g, s, a.local_port), g->has_endpoints(s) ? 7u : 4u)
            << engine << " switch " << i << " port " << int{a.local_port};
      }
    }
  }
}

// Radix 36 (18 spines, 36 leaves of 18 CAs): 630 remote CA LIDs over 18
// up-links is exactly 35 each. Dense candidate sets like these take the
// block-transpose path of the LFT fill.
TEST(Balance, HighRadixLeafSpineIsOptimal) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=36");
  for (std::string_view engine : {"minhop", "updn"}) {
    const Routes r = route(f, engine);
    EXPECT_EQ(r.load.max_routes, 35u) << engine;
    EXPECT_TRUE(verify_routes(f, r).ok()) << engine;
    const auto trace = trace_all(f.topo, f.lids, r);
    EXPECT_EQ(trace.delivered, trace.reachable_pairs) << engine << ": " << trace.first_failure;
  }
}

// On fat-tree:levels=3,k=8 (128 CAs, 4 a leaf) an edge switch sends 124
// remote CA LIDs over 4 up-links (31 each at best), an aggregation switch
// 112 other-pod LIDs over 4 (28), a core 16 per pod-link: the optimum maximum
// is 31, and every edge must spread its LIDs within one of each other.
TEST(Balance, ThreeLevelEdgesSpreadEvenly) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=8");
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  for (std::string_view engine : {"minhop", "updn"}) {
    const Routes r = route(f, engine);
    EXPECT_EQ(r.load.max_routes, 31u) << engine;
    for (std::uint32_t i = 0; i < g->num_switches(); ++i) {
      const SwitchIndex s{i};
      if (!g->has_endpoints(s)) continue;
      std::vector<std::uint32_t> counts;
      for (const SwitchArc& a : g->arcs(s)) counts.push_back(carried(f, r, *g, s, a.local_port));
      const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
      EXPECT_LE(*hi - *lo, 1u) << engine << " edge switch " << i;
    }
  }
}

// ---------------------------------------------------------------------------
// Determinism, cancellation, roots, auto

TEST(Engines, SameTablesWithOneAndFourThreads) {
  for (const char* spec : {"random:switches=100,degree=6,hosts=2,seed=5", "fat-tree:levels=3,k=8",
                           "torus:dims=6x6,hosts=1"}) {
    const Fabric f = make_fabric(spec);
    for (std::string_view engine : {"minhop", "updn"}) {
      const Routes one = route(f, engine, 1);
      const Routes four = route(f, engine, 4);
      ASSERT_EQ(one.lfts.size(), four.lfts.size());
      for (std::size_t s = 0; s < one.lfts.size(); ++s) {
        ASSERT_TRUE(one.lfts[s] == four.lfts[s]) << spec << " " << engine << " switch " << s;
      }
      EXPECT_EQ(one.load.max_routes, four.load.max_routes);
      EXPECT_EQ(one.load.mean_routes, four.load.mean_routes);
    }
  }
}

TEST(Engines, StopTokenCancels) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=8");
  std::stop_source stop;
  stop.request_stop();
  WorkerPool pool(2);
  for (std::string_view engine : engine_names()) {
    auto e = make_engine(engine);
    ASSERT_TRUE(e.ok());
    auto r = (*e)->compute(f.topo, f.lids, {}, pool, stop.get_token());
    ASSERT_FALSE(r.ok()) << engine;
    EXPECT_EQ(r.error().code, Errc::kCancelled) << engine;
  }
}

TEST(Updn, AutomaticRootsAreTheFatTreeCores) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=6");
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  WorkerPool pool(2);
  auto order = updn_order(f.topo, *g, {}, pool, {});
  ASSERT_TRUE(order.ok()) << order.error().message;
  ASSERT_EQ(order->roots.size(), 9u);  // (k/2)^2 cores
  for (SwitchIndex s : order->roots) {
    EXPECT_EQ(f.topo.node(f.topo.switch_node(s)).description.rfind("core-", 0), 0u);
  }
  // A total order with exactly one switch that has no earlier neighbour.
  std::vector<std::uint32_t> sorted = order->pos;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint32_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  std::uint32_t minima = 0;
  for (std::uint32_t s = 0; s < g->num_switches(); ++s) {
    bool has_up = false;
    for (const SwitchArc& a : g->arcs(SwitchIndex{s})) {
      has_up |= order->pos[a.to.value] < order->pos[s];
    }
    minima += has_up ? 0 : 1;
  }
  EXPECT_EQ(minima, 1u);
}

// A degraded fat tree keeps its tiers: agg-p0-0 loses all its edge links, so
// it ends up 3 hops from every CA, above the cores. updn must still use every
// remaining shortest path: the same maximum routes per link as minhop, and
// every edge switch spreads its CA LIDs evenly over the up-links it has left.
// (Random cuts are covered for correctness by LinkCuts; with cuts that leave
// cores unable to reach some edge downward, those cores' entries for it must
// climb their single up-link, which the per-entry load count then shows.)
TEST(Updn, DegradedFatTreeKeepsItsTiers) {
  Fabric f = make_fabric("fat-tree:levels=3,k=6");
  const NodeId agg = *f.topo.find_by_name("agg-p0-0");
  for (unsigned p = 1; p <= f.topo.node(agg).num_ports; ++p) {
    const Port& port = f.topo.port(agg, static_cast<PortNum>(p));
    if (port.connected() && f.topo.node(port.remote_node).description.rfind("edge-", 0) == 0) {
      f.topo.disconnect({agg, static_cast<PortNum>(p)});
    }
  }
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  WorkerPool pool(2);
  auto order = updn_order(f.topo, *g, {}, pool, {});
  ASSERT_TRUE(order.ok());
  ASSERT_EQ(order->roots.size(), 1u);
  EXPECT_EQ(order->roots[0], f.topo.node(agg).switch_index);
  for (std::uint32_t s = 0; s < g->num_switches(); ++s) {
    const std::string& name = f.topo.node(f.topo.switch_node(SwitchIndex{s})).description;
    if (name.rfind("core-", 0) == 0) {
      EXPECT_EQ(order->rank[s], 1u) << name;
    } else if (name.rfind("edge-", 0) == 0) {
      EXPECT_EQ(order->rank[s], 3u) << name;
    }
  }
  const Routes minhop = route(f, "minhop");
  const Routes updn = route(f, "updn");
  EXPECT_TRUE(verify_routes(f, updn).ok());
  EXPECT_EQ(updn.load.max_routes, minhop.load.max_routes);
  for (std::uint32_t i = 0; i < g->num_switches(); ++i) {
    const SwitchIndex s{i};
    if (!g->has_endpoints(s)) continue;
    std::vector<std::uint32_t> counts;
    for (const SwitchArc& a : g->arcs(s)) counts.push_back(carried(f, updn, *g, s, a.local_port));
    const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
    EXPECT_LE(*hi - *lo, 1u) << "edge switch " << i;
  }
}

TEST(Updn, CentreRootWhenEverySwitchHasHosts) {
  const Fabric f = make_fabric("mesh:dims=5x5,hosts=1");
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  WorkerPool pool(1);
  auto order = updn_order(f.topo, *g, {}, pool, {});
  ASSERT_TRUE(order.ok());
  ASSERT_EQ(order->roots.size(), 1u);
  EXPECT_EQ(f.topo.node(f.topo.switch_node(order->roots[0])).description, "sw-2-2");
}

TEST(Updn, ConfiguredRoots) {
  const Fabric f = make_fabric("random:switches=30,degree=4,hosts=1,seed=2");
  EngineOptions opts;
  opts.root_guids = {f.topo.node(f.topo.switch_node(SwitchIndex{7})).guid,
                     f.topo.node(f.topo.switch_node(SwitchIndex{19})).guid};
  const Routes r = route(f, "updn", 2, opts);
  auto v = verify_routes(f, r);
  EXPECT_TRUE(v.ok()) << v.error().message;
  const auto trace = trace_all(f.topo, f.lids, r);
  EXPECT_EQ(trace.delivered, trace.reachable_pairs) << trace.first_failure;

  WorkerPool pool(1);
  UpdnEngine updn;
  EngineOptions not_switch;
  not_switch.root_guids = {
      f.topo.node(NodeId{static_cast<std::uint32_t>(f.topo.num_nodes() - 1)}).guid};
  auto bad = updn.compute(f.topo, f.lids, not_switch, pool, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("not a switch"), std::string::npos) << bad.error().message;
  EngineOptions unknown;
  unknown.root_guids = {Guid{0xdeadbeef}};
  auto missing = updn.compute(f.topo, f.lids, unknown, pool, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Errc::kNotFound);
  EXPECT_NE(missing.error().message.find("0x00000000deadbeef"), std::string::npos);
}

// On a mesh (or hypercube) dimension-order routes need one VL, and
// multicast one of its own (no spanning tree is safe beside them on one):
// auto takes layered there with two VLs, and updn with one.
TEST(Auto, LayeredOnAMeshWithTwoVlsUpdnWithOne) {
  const Fabric f = make_fabric("mesh:dims=4x3,hosts=2");
  EngineOptions opts;
  opts.max_vls = 2;
  const Routes a = route(f, "auto", 2, opts);
  EXPECT_EQ(a.engine, "layered");
  EXPECT_EQ(a.num_vls, 2);
  ASSERT_FALSE(a.notes.empty());
  EXPECT_TRUE(a.notes.front().starts_with("auto: layered, the switches form a "))
      << a.notes.front();
  EXPECT_NE(a.notes.front().find(" mesh, whose dimension-order routes need 2 of the 2 data VL(s)"),
            std::string::npos)
      << a.notes.front();
  opts.max_vls = 1;
  const Routes one = route(f, "auto", 2, opts);
  EXPECT_EQ(one.engine, "updn");
  EXPECT_EQ(one.num_vls, 1);
}

// A torus with links missing is still routed as a grid: dimension order
// repaired around the gaps, at any size (no switch-count limit, the
// repair costs what the broken routes cost), and the note says so; with
// more links missing than a grid may lack, it is routed as any other
// topology.
TEST(Auto, LayeredDimensionOrderOnATorusWithLinksMissing) {
  Fabric f = make_fabric("torus:dims=5x5x5,hosts=1");
  cut_links(f.topo, 4, 7);
  EngineOptions opts;
  opts.max_vls = 8;
  const Routes a = route(f, "auto", 2, opts);
  EXPECT_EQ(a.engine, "layered");
  EXPECT_LE(a.num_vls, 8);
  ASSERT_FALSE(a.notes.empty());
  EXPECT_EQ(a.notes.front(),
            fmt::format("auto: layered, the switches form a 5x5x5 torus with 4 of its 375 links "
                        "missing: routed as a grid, repaired around the gaps, or in general where "
                        "that is better balanced (next note), on {} of the 8 data VL(s) the switch "
                        "links offer (VL 0 for multicast)",
                        a.num_vls));
  ASSERT_GE(a.notes.size(), 2U);
  EXPECT_TRUE(a.notes[1].starts_with(
      "layered: the switches form a 5x5x5 torus with 4 of its 375 links missing: "))
      << a.notes[1];
  EXPECT_NE(a.notes[1].find(" CA-to-CA paths against "), std::string::npos) << a.notes[1];
  auto v = verify_routes(f, a);
  EXPECT_TRUE(v.ok()) << v.error().message;

  cut_links(f.topo, 28, 8);  // 32 of 375: over kLayeredGridMaxMissingShare
  const Routes many = route(f, "auto", 2, opts);
  EXPECT_EQ(many.engine, "layered");
  ASSERT_FALSE(many.notes.empty());
  EXPECT_TRUE(many.notes.front().starts_with("auto: layered, the fabric is no fat tree"))
      << many.notes.front();
  bool said = false;
  for (const std::string& n : many.notes) {
    said |= n.starts_with(
        "layered: the switches form a 5x5x5 torus, but 32 of its 375 links missing, more than "
        "the 29 links it may lack: routed as any other topology");
  }
  std::string notes;
  for (const std::string& n : many.notes) notes += n + "\n";
  EXPECT_TRUE(said) << notes;
}

// Off fat trees auto is layered with two VLs or more, updn with one; the
// same tables as the engine it names, and its first note says why.
TEST(Auto, LayeredOffFatTreesWithTwoVlsUpdnWithOne) {
  const Fabric f = make_fabric("dragonfly:a=4,p=2,h=2,g=5");
  for (const std::uint8_t vls : {2, 1}) {
    SCOPED_TRACE(vls);
    EngineOptions opts;
    opts.max_vls = vls;
    const std::string want = vls > 1 ? "layered" : "updn";
    const Routes a = route(f, "auto", 2, opts);
    const Routes same = route(f, want, 2, opts);
    EXPECT_EQ(a.engine, want);
    ASSERT_FALSE(a.notes.empty());
    EXPECT_EQ(a.notes.front().rfind("auto: " + want + ", the fabric is no fat tree ", 0), 0U)
        << a.notes.front();
    EXPECT_NE(a.notes.front().find(vls > 1 ? "offer 2 data VLs" : "offers a single data VL"),
              std::string::npos)
        << a.notes.front();
    EXPECT_LE(a.num_vls, vls);
    ASSERT_EQ(a.lfts.size(), same.lfts.size());
    for (std::size_t s = 0; s < a.lfts.size(); ++s) EXPECT_TRUE(a.lfts[s] == same.lfts[s]);
  }
}

// A complete fat tree gets ftree; one with links missing gets layered on
// one VL (balanced up*/down*), which exports an up/down order for fast
// failover and the note names a switch short of up-links; a large one
// (trees of more than two LIDs) keeps ftree, and says why.
TEST(Auto, FtreeOnFatTreesBalancedUpDownWhereLinksAreMissing) {
  Fabric f = make_fabric("fat-tree:levels=3,k=8");
  const Routes whole = route(f, "auto");
  EXPECT_EQ(whole.engine, "ftree");
  ASSERT_FALSE(whole.notes.empty());
  EXPECT_EQ(whole.notes.front(), "auto: ftree, the fabric is a fat tree");

  cut_links(f.topo, 6, 3);
  const Routes a = route(f, "auto");
  EXPECT_EQ(a.engine, "layered");
  EXPECT_EQ(a.num_vls, 1);
  EXPECT_EQ(a.updown_rank.size(), f.topo.num_switches());
  ASSERT_FALSE(a.notes.empty());
  EXPECT_TRUE(
      a.notes.front().starts_with("auto: layered on one VL (balanced up*/down*), the fabric is a "
                                  "fat tree with links missing ("))
      << a.notes.front();
  EXPECT_NE(a.notes.front().find(" up-links"), std::string::npos) << a.notes.front();
  auto v = verify_routes(f, a);
  EXPECT_TRUE(v.ok()) << v.error().message;

  // 2,048 CA LIDs on 320 switches: a tree per LID; 5,488 on 980 (k=28):
  // two; 16,384 on 1,280: more than two per tree.
  EXPECT_EQ(layered_lids_per_tree(320, 2048, 128, 1), 1U);
  EXPECT_EQ(layered_lids_per_tree(320, 2048, 128, 8), 2U);  // 16 CAs per edge switch
  EXPECT_EQ(layered_lids_per_tree(512, 1024, 512, 8), 1U);  // 2 CAs per switch
  EXPECT_EQ(layered_lids_per_tree(980, 5488, 392, 1), kAutoBalancedMaxLidsPerTree);
  EXPECT_GT(layered_lids_per_tree(1280, 16384, 512, 1), kAutoBalancedMaxLidsPerTree);
}

// Above the size limit auto is updn, unless the switches form a grid, or
// one with a few links missing: dimension-order routes take no time at
// any size, nor does their repair around a gap.
TEST(Auto, UpdnAboveTheLayeredSizeLimitUnlessTheSwitchesFormAGrid) {
  Fabric f = make_fabric("torus:dims=46x45,hosts=1");
  ASSERT_GT(f.topo.num_switches(), kAutoLayeredMaxSwitches);
  const Routes grid = route(f, "auto");
  EXPECT_EQ(grid.engine, "layered");
  ASSERT_FALSE(grid.notes.empty());
  EXPECT_TRUE(grid.notes.front().starts_with("auto: layered, the switches form a 46x45 torus"))
      << grid.notes.front();
  EXPECT_NE(grid.notes.front().find(
                " torus, whose dimension-order routes need 5 of the 8 data VL(s) the switch links "
                "offer (VL 0 for multicast)"),
            std::string::npos)
      << grid.notes.front();
  cut_links(f.topo, 1, 5);  // a torus with a link missing is still routed as one
  const Routes gapped = route(f, "auto");
  EXPECT_EQ(gapped.engine, "layered");
  ASSERT_FALSE(gapped.notes.empty());
  EXPECT_NE(gapped.notes.front().find(" torus with 1 of its 4140 links missing"), std::string::npos)
      << gapped.notes.front();
  cut_links(f.topo, 400, 6);  // more than a grid may lack (8%: 325)
  const Routes a = route(f, "auto");
  EXPECT_EQ(a.engine, "updn");
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes.front().find(fmt::format("has {} switches", f.topo.num_switches())),
            std::string::npos)
      << a.notes.front();
}

// A large grid with more gaps than its repair can mend quickly (links
// missing x switches^2 past kLayeredGridRepairWork) is routed as any other
// topology of its size, and the notes say why.
TEST(Auto, UpdnOnALargeGridWithTooManyGapsToRepairQuickly) {
  Fabric f = make_fabric("torus:dims=64x64,hosts=1");
  cut_links(f.topo, 17, 4);  // 17 x 4096^2 > 2^28; 16 would be repaired
  const Routes a = route(f, "auto");
  EXPECT_EQ(a.engine, "updn");
  ASSERT_GE(a.notes.size(), 2U);
  EXPECT_EQ(a.notes[1],
            "auto: the switches form a 64x64 torus with 17 of its 8192 links missing, but its "
            "dimension-order routes could not be repaired around them (repairing 17 broken links' "
            "routes over 4096 switches would take too long (links x switches^2 above 2^28, about "
            "10 s))");
}

// ---------------------------------------------------------------------------
// Hop tables against a plain BFS.

TEST(HopTable, ShortestAndUpDownAgainstBfs) {
  const Fabric f = make_fabric("random:switches=70,degree=3,hosts=1,seed=11");
  auto g = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(g.ok());
  WorkerPool pool(2);
  auto hops = shortest_hops(*g, pool, {});
  ASSERT_TRUE(hops.ok());
  const std::uint32_t n = g->num_switches();
  for (std::uint32_t t = 0; t < n; ++t) {
    std::vector<std::uint32_t> dist(n, UINT32_MAX);
    std::vector<SwitchIndex> q{SwitchIndex{t}};
    dist[t] = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      for (const SwitchArc& a : g->arcs(q[i])) {
        if (dist[a.to.value] == UINT32_MAX) {
          dist[a.to.value] = dist[q[i].value] + 1;
          q.push_back(a.to);
        }
      }
    }
    for (std::uint32_t v = 0; v < n; ++v) {
      ASSERT_EQ(hops->hops(SwitchIndex{v}, SwitchIndex{t}), dist[v]);
    }
  }
  // Up/down: hops are never shorter than the shortest path, and a switch in
  // mode D has a down-neighbour in mode D one hop closer.
  auto order = updn_order(f.topo, *g, {}, pool, {});
  ASSERT_TRUE(order.ok());
  auto ud = updown_hops(*g, order->pos, pool, {});
  ASSERT_TRUE(ud.ok());
  for (std::uint32_t ti = 0; ti < n; ++ti) {
    const SwitchIndex t{ti};
    for (std::uint32_t vi = 0; vi < n; ++vi) {
      const SwitchIndex v{vi};
      ASSERT_NE(ud->hops(v, t), HopTable::kUnreachable);
      ASSERT_GE(ud->hops(v, t), hops->hops(v, t));
      if (v == t || !ud->down(v, t)) continue;
      bool ok = false;
      for (const SwitchArc& a : g->arcs(v)) {
        ok |= order->pos[a.to.value] > order->pos[vi] && ud->down(a.to, t) &&
              ud->hops(a.to, t) + 1 == ud->hops(v, t);
      }
      ASSERT_TRUE(ok) << "switch " << vi << " to " << ti;
    }
  }
  auto ecc = eccentricities(*g, pool, {});
  ASSERT_TRUE(ecc.ok());
  for (std::uint32_t v = 0; v < n; ++v) {
    std::uint32_t m = 0;
    for (std::uint32_t t = 0; t < n; ++t) {
      m = std::max<std::uint32_t>(m, hops->hops(SwitchIndex{v}, SwitchIndex{t}));
    }
    EXPECT_EQ((*ecc)[v], m);
  }
}

}  // namespace
}  // namespace subnetd::routing

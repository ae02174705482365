// routing/engines/tree_grower.hpp: the in-tree step of the layered engine.
// A switch whose every channel into the tree its layer refuses still joins
// when a neighbour in the tree can forward on another channel instead,
// and the dependencies of the tree it returns are all in the layer.

#include "routing/engines/tree_grower.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "routing/switch_graph.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::lids_for;

// t, x, y and m: t-x, t-y, x-y and x-m, one cable each, one CA per switch.
struct Square {
  Topology topo;
  LidMap lids;
  SwitchGraph g;
  std::uint32_t t = 0, x = 0, y = 0, m = 0;
  std::uint32_t arc(std::uint32_t from, std::uint32_t to) const {
    for (std::uint32_t a = g.first_arc(SwitchIndex{from}); a < g.first_arc(SwitchIndex{from + 1});
         ++a) {
      if (g.arc(a).to.value == to) return a;
    }
    ADD_FAILURE() << "no arc " << from << "->" << to;
    return kNoArc;
  }
};

Square make_square() {
  Square s;
  std::vector<NodeId> sw;
  for (std::uint32_t i = 0; i < 4; ++i) {
    sw.push_back(s.topo.add_node(NodeType::kSwitch, Guid{0x100 + i}, 8, "sw-" + std::to_string(i)));
    const NodeId ca = s.topo.add_node(NodeType::kCa, Guid{0x1000 + i}, 1, "h-" + std::to_string(i));
    EXPECT_TRUE(s.topo.connect({sw[i], 8}, {ca, 1}).ok());
  }
  EXPECT_TRUE(s.topo.connect({sw[0], 1}, {sw[1], 1}).ok());  // t-x
  EXPECT_TRUE(s.topo.connect({sw[0], 2}, {sw[2], 1}).ok());  // t-y
  EXPECT_TRUE(s.topo.connect({sw[1], 2}, {sw[2], 2}).ok());  // x-y
  EXPECT_TRUE(s.topo.connect({sw[1], 3}, {sw[3], 1}).ok());  // x-m
  s.lids = lids_for(s.topo);
  auto g = SwitchGraph::build(s.topo, s.lids);
  EXPECT_TRUE(g.ok());
  if (g.ok()) s.g = std::move(g).value();
  s.t = s.topo.node(sw[0]).switch_index.value;
  s.x = s.topo.node(sw[1]).switch_index.value;
  s.y = s.topo.node(sw[2]).switch_index.value;
  s.m = s.topo.node(sw[3]).switch_index.value;
  return s;
}

// cdg_frame holds a bit for exactly the dependencies a route can make
// (into a switch, then out of it, the way back included), and a dag in it
// refuses any other edge rather than lose it.
TEST(CdgFrame, HoldsExactlyTheDependenciesOfChannelsThroughASwitch) {
  const Square s = make_square();
  const auto frame = cdg_frame(s.g);
  ASSERT_EQ(frame->nodes(), s.g.num_arcs());
  OrderedDag dag(frame);
  std::uint32_t allowed = 0;
  for (std::uint32_t a = 0; a < s.g.num_arcs(); ++a) {
    for (std::uint32_t b = 0; b < s.g.num_arcs(); ++b) {
      std::uint32_t out = 0, in = 0;
      const bool through = s.g.arc_source(b) == s.g.arc(a).to;
      EXPECT_EQ(frame->slots(a, b, out, in), through) << a << "->" << b;
      if (through) ++allowed;
    }
  }
  // Switches of degree 2, 3, 2 and 1: 4 + 9 + 4 + 1 dependencies.
  EXPECT_EQ(allowed, 18U);
  const std::uint32_t tx = s.arc(s.t, s.x), xm = s.arc(s.x, s.m), mx = s.arc(s.m, s.x);
  EXPECT_EQ(dag.add(tx, xm), OrderedDag::Add::kNew);
  EXPECT_EQ(dag.add(xm, mx), OrderedDag::Add::kNew);    // m's way back
  EXPECT_EQ(dag.add(tx, mx), OrderedDag::Add::kCycle);  // m->x leaves m, not x
  EXPECT_EQ(dag.edges(), 2U);
  EXPECT_TRUE(dag.contains(tx, xm));
  EXPECT_FALSE(dag.contains(tx, mx));
}

// x joins straight into t (y's way round costs more), and the layer
// already holds x->t before m->x, so m's one channel into the tree is
// refused: x turns to y instead, and m joins.
TEST(TreeGrower, ASwitchWhoseChannelsAreRefusedJoinsThroughANeighbourTurningElsewhere) {
  const Square s = make_square();
  const std::uint32_t xt = s.arc(s.x, s.t), xy = s.arc(s.x, s.y), yt = s.arc(s.y, s.t);
  const std::uint32_t mx = s.arc(s.m, s.x);
  std::vector<std::uint64_t> load(s.g.num_arcs(), 0);
  load[xt] = 5;
  // Any edge (the one that shuts m out is no dependency a route makes).
  const auto frame = DagFrame::complete(s.g.num_arcs());
  OrderedDag dag(frame);
  ASSERT_EQ(dag.add(xt, mx), OrderedDag::Add::kNew);
  RefusedDeps refused(frame);
  std::vector<Dep> added;
  const std::vector<std::uint32_t> rev = reverse_arcs(s.g);
  TreeGrower grower(s.g, rev);

  const std::span<const std::uint32_t> grown = grower.grow(s.t, load, 10, 0, &dag, &refused, added);
  const std::vector<std::uint32_t> tree(grown.begin(), grown.end());

  ASSERT_EQ(tree.size(), 4U);
  EXPECT_EQ(tree.front(), s.t);
  ASSERT_EQ(grower.outs(s.x).size(), 1U);
  EXPECT_EQ(grower.outs(s.x).front(), xy);
  EXPECT_EQ(grower.outs(s.m).front(), mx);
  EXPECT_EQ(grower.outs(s.y).front(), yt);
  // Each switch after the one it forwards to.
  auto at = [&](std::uint32_t v) { return std::find(tree.begin(), tree.end(), v) - tree.begin(); };
  EXPECT_LT(at(s.y), at(s.x));
  EXPECT_LT(at(s.x), at(s.m));
  // The tree's dependencies are in the layer, and m->x onto x->t (which
  // closes a cycle) is remembered as refused.
  EXPECT_TRUE(dag.contains(mx, xy));
  EXPECT_TRUE(dag.contains(xy, yt));
  EXPECT_TRUE(refused.contains(mx, xt));
  for (const auto& [in, out] : added) EXPECT_TRUE(dag.contains(in, out));
}

// Where no neighbour can turn (x's only other way, through y, is refused
// too), the tree leaves m out and its dependencies stay as they were.
TEST(TreeGrower, ASwitchNoNeighbourCanTakeIsLeftOut) {
  const Square s = make_square();
  const std::uint32_t xt = s.arc(s.x, s.t), xy = s.arc(s.x, s.y), mx = s.arc(s.m, s.x);
  std::vector<std::uint64_t> load(s.g.num_arcs(), 0);
  load[xt] = 5;
  // Any edge (the one that shuts m out is no dependency a route makes).
  const auto frame = DagFrame::complete(s.g.num_arcs());
  OrderedDag dag(frame);
  ASSERT_EQ(dag.add(xt, mx), OrderedDag::Add::kNew);
  ASSERT_EQ(dag.add(xy, mx), OrderedDag::Add::kNew);
  const std::size_t before = dag.edges();
  RefusedDeps refused(frame);
  std::vector<Dep> added;
  const std::vector<std::uint32_t> rev = reverse_arcs(s.g);
  TreeGrower grower(s.g, rev);

  const auto tree = grower.grow(s.t, load, 10, 0, &dag, &refused, added);

  EXPECT_EQ(tree.size(), 3U);
  EXPECT_EQ(std::count(tree.begin(), tree.end(), s.m), 0);
  EXPECT_EQ(grower.outs(s.x).front(), xt);
  EXPECT_EQ(dag.edges(), before + added.size());
}

// The search bet (TreeGrower::SearchBet): with odds no search can meet,
// searches give up at the cap once the sample is seen, and never without
// it. Trees grown either way, towards every switch of a random graph on
// one layer, forward each switch after the one it forwards to, and every
// dependency they made is in the layer: a search given up is a refusal,
// never an accepted edge.
TEST(TreeGrower, SearchesGiveUpAtTheCapOnlyWhenLongOnesRarelyPay) {
  const testing::Fabric f = testing::make_fabric("random:switches=60,degree=6,hosts=1,seed=5");
  auto built = SwitchGraph::build(f.topo, f.lids);
  ASSERT_TRUE(built.ok());
  const SwitchGraph& g = *built;
  const std::vector<std::uint32_t> rev = reverse_arcs(g);
  const std::vector<std::uint64_t> load(g.num_arcs(), 0);
  auto grow_all = [&](TreeGrower::SearchBet bet) {
    const auto frame = cdg_frame(g);
    OrderedDag dag(frame);
    RefusedDeps refused(frame);
    TreeGrower grower(g, rev);
    grower.set_search_bet(bet);
    std::vector<Dep> added;
    for (std::uint32_t t = 0; t < g.num_switches(); ++t) {
      added.clear();
      const std::span<const std::uint32_t> tree = grower.grow(t, load, 1, 0, &dag, &refused, added);
      std::vector<std::uint32_t> at(g.num_switches(), kNoArc);
      for (std::uint32_t i = 0; i < tree.size(); ++i) at[tree[i]] = i;
      for (const std::uint32_t s : tree) {
        for (const std::uint32_t a : grower.outs(s)) {
          const std::uint32_t x = g.arc(a).to.value;
          EXPECT_LT(at[x], at[s]) << "tree " << t << ": " << s << " forwards to " << x;
          for (const std::uint32_t b : x == t ? std::span<const std::uint32_t>() : grower.outs(x)) {
            EXPECT_TRUE(dag.contains(a, b)) << "tree " << t << ": " << a << "->" << b;
          }
        }
      }
      for (const auto& [in, out] : added) EXPECT_TRUE(dag.contains(in, out));
    }
    return grower.searches_given_up();
  };
  TreeGrower::SearchBet never;
  never.sample = ~std::uint64_t{0};
  TreeGrower::SearchBet always;
  always.scan = 0;  // every search past the order gives up
  always.sample = 1;
  always.odds = 0;  // fewer than one in 0 pay: always
  always.probe = ~std::uint64_t{0};
  EXPECT_EQ(grow_all(never), 0U);
  EXPECT_GT(grow_all(always), 0U);
}

// ShortestTrees, breadth first, gives every switch LID the tree grow()
// gives with no load and no CDG: the same switches, each after the one it
// forwards to, on the same channel. Each fabric has switches with several
// channels one hop nearer (checked), so the tie between them, which the
// Dijkstra breaks by the least channel, is exercised: a random graph, a
// two-level fat tree (every leaf reaches another through each spine) and
// a torus (the corners of its squares).
TEST(ShortestTrees, GiveTheTreesOfAnUnloadedGrow) {
  for (const char* spec : {"random:switches=80,degree=7,hosts=1,seed=3",
                           "fat-tree:levels=2,radix=8", "torus:dims=4x3,hosts=1"}) {
    testing::Fabric f = testing::make_fabric(spec);
    auto built = SwitchGraph::build(f.topo, f.lids);
    ASSERT_TRUE(built.ok()) << spec;
    const SwitchGraph& g = *built;
    const std::vector<std::uint32_t> rev = reverse_arcs(g);
    const std::vector<std::uint64_t> no_load(g.num_arcs(), 0);
    TreeGrower grower(g, rev);
    ShortestTrees shortest(g, rev);
    std::vector<Dep> added;
    std::uint64_t ties = 0;
    for (std::uint32_t t = 0; t < g.num_switches(); ++t) {
      std::vector<std::uint32_t> want(g.num_switches(), kNoArc), got(g.num_switches(), kNoArc);
      const auto grown = grower.grow(t, no_load, 1, 0, nullptr, nullptr, added);
      for (const std::uint32_t s : grown) want[s] = s == t ? kNoArc : grower.outs(s).front();
      const auto tree = shortest.grow(t);
      ASSERT_EQ(tree.size(), grown.size()) << spec << " t=" << t;
      ASSERT_EQ(tree.front(), t);
      // Hops to t, from the tree: each switch comes after its next hop.
      std::vector<std::uint32_t> hops(g.num_switches(), kNoArc);
      for (const std::uint32_t s : tree) {
        got[s] = shortest.out(s);
        if (s == t) {
          hops[s] = 0;
          continue;
        }
        const std::uint32_t next = g.arc(got[s]).to.value;
        ASSERT_NE(hops[next], kNoArc) << spec << " t=" << t << ": " << s << " before " << next;
        hops[s] = hops[next] + 1;
      }
      // Switches with more than one channel one hop nearer: the ties.
      for (const std::uint32_t s : tree) {
        std::uint32_t nearer = 0;
        for (std::uint32_t a = g.first_arc(SwitchIndex{s}); a < g.first_arc(SwitchIndex{s + 1});
             ++a) {
          nearer += hops[g.arc(a).to.value] + 1 == hops[s] ? 1 : 0;
        }
        ties += nearer > 1 ? 1 : 0;
      }
      EXPECT_EQ(got, want) << spec << " t=" << t;
    }
    EXPECT_GT(ties, 0U) << spec;
  }
}

}  // namespace
}  // namespace subnetd::routing

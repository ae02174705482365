// routing/ordered_dag.hpp: the online topological order every VL layer's
// CDG is kept acyclic with. Against a brute-force oracle (a depth-first
// search over the edges taken so far): add() refuses exactly the edges that
// close a cycle, the order stays topological after every add, undo() takes
// edges back last-first, and a starting order is kept where edges agree.

#include "routing/ordered_dag.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace subnetd::routing {
namespace {

using Edge = std::pair<std::uint32_t, std::uint32_t>;

// Whether `to` is reachable from `from` over `edges` (n nodes).
bool reaches(std::uint32_t n, const std::set<Edge>& edges, std::uint32_t from, std::uint32_t to) {
  std::vector<std::vector<std::uint32_t>> out(n);
  for (const auto& [u, v] : edges) out[u].push_back(v);
  std::vector<std::uint8_t> seen(n, 0);
  std::vector<std::uint32_t> stack{from};
  seen[from] = 1;
  while (!stack.empty()) {
    const std::uint32_t x = stack.back();
    stack.pop_back();
    if (x == to) return true;
    for (const std::uint32_t y : out[x]) {
      if (seen[y] == 0) {
        seen[y] = 1;
        stack.push_back(y);
      }
    }
  }
  return false;
}

void expect_topological(const OrderedDag& dag, const std::set<Edge>& edges) {
  for (const auto& [u, v] : edges) {
    ASSERT_LT(dag.position(u), dag.position(v)) << u << "->" << v;
  }
}

TEST(OrderedDag, SelfLoopsAndDuplicates) {
  OrderedDag dag(DagFrame::complete(3));
  EXPECT_EQ(dag.add(1, 1), OrderedDag::Add::kCycle);
  EXPECT_EQ(dag.add(2, 0), OrderedDag::Add::kNew);
  EXPECT_EQ(dag.add(2, 0), OrderedDag::Add::kKnown);
  EXPECT_EQ(dag.add(0, 2), OrderedDag::Add::kCycle);
  EXPECT_EQ(dag.edges(), 1U);
  EXPECT_TRUE(dag.contains(2, 0));
  EXPECT_FALSE(dag.contains(0, 2));
}

// A long chain added against the order, then the edge that closes it.
TEST(OrderedDag, ChainAgainstTheOrderThenItsCycle) {
  constexpr std::uint32_t kN = 200;
  OrderedDag dag(DagFrame::complete(kN));
  std::set<Edge> edges;
  for (std::uint32_t x = kN - 1; x > 0; --x) {
    ASSERT_EQ(dag.add(x, x - 1), OrderedDag::Add::kNew);
    edges.emplace(x, x - 1);
    expect_topological(dag, edges);
  }
  EXPECT_EQ(dag.add(0, kN - 1), OrderedDag::Add::kCycle);
  EXPECT_EQ(dag.add(0, kN / 2), OrderedDag::Add::kCycle);
  EXPECT_EQ(dag.add(kN - 1, 0), OrderedDag::Add::kNew);
  EXPECT_EQ(dag.edges(), kN);
}

// add() with a scan limit: a search that would scan more nodes refuses
// the edge and leaves the graph as it was, though the edge closes no
// cycle; one within the limit reorders as before.
TEST(OrderedDag, ASearchPastItsLimitRefusesAndLeavesTheGraph) {
  OrderedDag dag(DagFrame::complete(24));
  std::set<Edge> edges;
  for (std::uint32_t x = 0; x < 9; ++x) {  // two chains in the order
    ASSERT_EQ(dag.add(x, x + 1), OrderedDag::Add::kNew);
    ASSERT_EQ(dag.add(10 + x, 11 + x), OrderedDag::Add::kNew);
    edges.emplace(x, x + 1);
    edges.emplace(10 + x, 11 + x);
  }
  // 19 -> 0 against the order: both chains must be scanned to move.
  EXPECT_EQ(dag.add(19, 0, 4), OrderedDag::Add::kCycle);
  EXPECT_TRUE(dag.gave_up());
  EXPECT_EQ(dag.last_scan(), 4U);
  EXPECT_EQ(dag.edges(), edges.size());
  EXPECT_FALSE(dag.contains(19, 0));
  expect_topological(dag, edges);
  // Within the limit: 21 -> 20 scans one node.
  EXPECT_EQ(dag.add(21, 20, 4), OrderedDag::Add::kNew);
  EXPECT_FALSE(dag.gave_up());
  EXPECT_EQ(dag.last_scan(), 1U);
  edges.emplace(21, 20);
  expect_topological(dag, edges);
  // Without one, 19 -> 0 closes no cycle.
  EXPECT_EQ(dag.add(19, 0), OrderedDag::Add::kNew);
  EXPECT_GT(dag.last_scan(), 4U);
  edges.emplace(19, 0);
  expect_topological(dag, edges);
  EXPECT_EQ(dag.add(9, 10, 4), OrderedDag::Add::kCycle);  // 9 -> 10 -> ... -> 19 -> 0 -> 9
  EXPECT_EQ(dag.add(0, 1), OrderedDag::Add::kKnown);
  EXPECT_EQ(dag.last_scan(), 0U);
  EXPECT_FALSE(dag.gave_up());
  // A cycle found within the limit is a cycle, not a give-up.
  EXPECT_EQ(dag.add(1, 0, 4), OrderedDag::Add::kCycle);
  EXPECT_FALSE(dag.gave_up());
  EXPECT_GT(dag.last_scan(), 0U);
  // A self-loop searches nothing, even right after a search gave up.
  OrderedDag small(DagFrame::complete(4));
  ASSERT_EQ(small.add(0, 1), OrderedDag::Add::kNew);
  EXPECT_EQ(small.add(2, 0, 1), OrderedDag::Add::kCycle);  // 0, then 1 to scan
  EXPECT_TRUE(small.gave_up());
  EXPECT_EQ(small.add(3, 3), OrderedDag::Add::kCycle);
  EXPECT_FALSE(small.gave_up());
  EXPECT_EQ(small.last_scan(), 0U);
}

struct RandomCase {
  std::uint32_t nodes;
  std::uint32_t tries;
  std::uint64_t seed;
};

class OrderedDagRandom : public ::testing::TestWithParam<RandomCase> {};

// Random edges (dense enough that most late ones close a cycle): every
// verdict matches the oracle, the order stays topological, and undoing
// a batch restores exactly the edges before it.
TEST_P(OrderedDagRandom, AgreesWithBruteForce) {
  const RandomCase c = GetParam();
  std::mt19937_64 rng(c.seed);
  std::uniform_int_distribution<std::uint32_t> node(0, c.nodes - 1);
  OrderedDag dag(DagFrame::complete(c.nodes));
  std::set<Edge> edges;
  std::vector<Edge> batch;
  std::uint32_t refused = 0, taken = 0;
  for (std::uint32_t i = 0; i < c.tries; ++i) {
    const std::uint32_t u = node(rng), v = node(rng);
    const bool cycle = u == v || reaches(c.nodes, edges, v, u);
    const bool known = edges.contains({u, v});
    const OrderedDag::Add r = dag.add(u, v);
    if (known) {
      ASSERT_EQ(r, OrderedDag::Add::kKnown) << u << "->" << v;
    } else if (cycle) {
      ASSERT_EQ(r, OrderedDag::Add::kCycle) << u << "->" << v;
      ++refused;
    } else {
      ASSERT_EQ(r, OrderedDag::Add::kNew) << u << "->" << v;
      edges.emplace(u, v);
      batch.emplace_back(u, v);
      ++taken;
    }
    ASSERT_EQ(dag.edges(), edges.size());
    expect_topological(dag, edges);
    // Every 16th try, take back the batch or keep it (by a coin).
    if (i % 16 == 15) {
      if (rng() % 2 == 0) {
        dag.undo(batch);
        for (const Edge& e : batch) edges.erase(e);
        ASSERT_EQ(dag.edges(), edges.size());
        for (const Edge& e : batch) EXPECT_FALSE(dag.contains(e.first, e.second));
        expect_topological(dag, edges);
      }
      batch.clear();
    }
  }
  // The case exercised both verdicts.
  EXPECT_GT(refused, 0U);
  EXPECT_GT(taken, 0U);
}

INSTANTIATE_TEST_SUITE_P(Graphs, OrderedDagRandom,
                         ::testing::Values(RandomCase{8, 200, 1}, RandomCase{30, 600, 2},
                                           RandomCase{60, 1500, 3}, RandomCase{120, 2000, 4},
                                           // Sparse and wide: reorderings that reach few
                                           // nodes in a wide window (sorted, not read
                                           // back from a bit per position).
                                           RandomCase{3000, 4000, 5}));

// Edges that agree with a starting order never move a node.
TEST(OrderedDag, StartingOrderKeptWhereEdgesAgree) {
  const std::vector<std::uint32_t> pos{3, 0, 2, 1};  // order: 1, 3, 2, 0
  OrderedDag dag(DagFrame::complete(4), pos);
  std::vector<std::uint64_t> start;
  for (std::uint32_t x = 0; x < 4; ++x) start.push_back(dag.position(x));
  for (std::uint32_t x = 0; x < 4; ++x) {
    for (std::uint32_t y = 0; y < 4; ++y) EXPECT_EQ(start[x] < start[y], pos[x] < pos[y]);
  }
  EXPECT_EQ(dag.add(1, 3), OrderedDag::Add::kNew);
  EXPECT_EQ(dag.add(3, 2), OrderedDag::Add::kNew);
  EXPECT_EQ(dag.add(2, 0), OrderedDag::Add::kNew);
  for (std::uint32_t x = 0; x < 4; ++x) EXPECT_EQ(dag.position(x), start[x]);
  EXPECT_EQ(dag.add(0, 1), OrderedDag::Add::kCycle);
}

// Nodes moved, one after another, to the same place in the order use up
// the room between its neighbours' labels; the labels around are spread
// again and the order stays right.
TEST(OrderedDag, ManyMovesToOnePlaceSpreadTheLabels) {
  constexpr std::uint32_t kN = 300, kAt = 250;
  OrderedDag dag(DagFrame::complete(kN));
  std::set<Edge> edges;
  // Each i has no edge out, so it alone moves: just after kAt.
  for (std::uint32_t i = 0; i < 200; ++i) {
    ASSERT_EQ(dag.add(kAt, i), OrderedDag::Add::kNew) << i;
    edges.emplace(kAt, i);
    expect_topological(dag, edges);
  }
  // The order there: kAt, 199, 198, ..., 0, kAt + 1.
  EXPECT_LT(dag.position(kAt), dag.position(199));
  for (std::uint32_t i = 199; i > 0; --i) EXPECT_LT(dag.position(i), dag.position(i - 1)) << i;
  EXPECT_LT(dag.position(0), dag.position(kAt + 1));
  EXPECT_LT(dag.position(kAt - 1), dag.position(kAt));
  EXPECT_EQ(dag.add(0, kAt), OrderedDag::Add::kCycle);
}

}  // namespace
}  // namespace subnetd::routing

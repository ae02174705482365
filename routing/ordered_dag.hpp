#pragma once
// OrderedDag: a directed graph kept acyclic as edges are added, with a
// topological order maintained online.
//
// Used for channel dependency graphs (nodes are channels, i.e. SwitchGraph
// arcs): an added dependency u->v with u ordered before v agrees with the
// order and costs a scan of u's few edges. One that does not closes a cycle
// iff v reaches u. That is searched two ways at once in order, as
// Haeupler, Kavitha, Mathew, Sen and Tarjan's two-way ordered search
// ("Incremental cycle detection, topological ordering, and strong
// component maintenance", TALG 2012): forward from v, the least ordered
// node reached first, and backward from u, the most ordered first, until
// the two searches meet (a cycle) or pass each other in the order. Then
// only the nodes scanned move: those reaching u just after the backward
// search's next node, those v reaches just before the forward search's
// next node. Pearce and Kelly's search, which this replaced, had to visit
// every node between the two before it could reorder (random 2,000
// switches: two thirds of the layered engine's time).
//
// Moving nodes to any place in the order needs an order with room between
// its nodes: a doubly linked list with 64-bit labels, spread again over a
// growing stretch of the list around an insertion that finds no room
// (order maintenance, as in Dietz and Sleator).
//
// Edges can be taken back last-first (a subgraph of a DAG keeps its order).
//
// Owner: one routing computation; single-threaded.

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace subnetd::routing {

class OrderedDag {
 public:
  enum class Add { kNew, kKnown, kCycle };

  // `nodes` nodes, no edges, ordered by index.
  explicit OrderedDag(std::uint32_t nodes);
  // No edges, node x at position order_pos[x] (a permutation of 0..n-1).
  // Edges added in agreement with it cost no reordering.
  explicit OrderedDag(std::vector<std::uint32_t> order_pos);

  // Adds u->v unless it closes a cycle (kCycle: the graph is unchanged).
  Add add(std::uint32_t u, std::uint32_t v);
  // Takes back edges add() returned kNew for, in the order they were added
  // (the last one first).
  void undo(std::span<const std::pair<std::uint32_t, std::uint32_t>> added);
  bool contains(std::uint32_t u, std::uint32_t v) const {
    // A channel's dependencies are few (the ports of one switch): a scan
    // of the shorter list beats hashing every edge.
    const std::vector<std::uint32_t>& from_u = out_[u];
    const std::vector<std::uint32_t>& into_v = in_[v];
    if (from_u.size() <= into_v.size()) {
      return std::find(from_u.begin(), from_u.end(), v) != from_u.end();
    }
    return std::find(into_v.begin(), into_v.end(), u) != into_v.end();
  }
  std::size_t edges() const { return edges_; }
  bool empty() const { return edges_ == 0; }
  // Where x stands in the order: position(u) < position(v) when u comes
  // first (a label, not a rank: the values have gaps, and change).
  std::uint64_t position(std::uint32_t x) const { return node_[x].label; }

 private:
  bool reorder(std::uint32_t u, std::uint32_t v);
  void unlink(std::uint32_t x);
  // Links `block` (in order, unlinked) in after node `after` and labels it.
  void insert_after(std::uint32_t after, std::span<const std::uint32_t> block);

  // What a search reads of a node it meets, side by side in one line.
  struct Node {
    std::uint64_t label = 0;       // order: labels grow along the list
    std::uint32_t fwd_epoch = 0;   // reached forward in this search
    std::uint32_t back_epoch = 0;  // reached backward
    std::uint32_t prev = 0;        // the list, in order
    std::uint32_t next = 0;
  };
  // Nodes 0..n-1, then the list's head (label 0) and tail (label max).
  std::vector<Node> node_;
  std::uint32_t head_ = 0, tail_ = 0;
  std::vector<std::vector<std::uint32_t>> out_, in_;
  std::size_t edges_ = 0;
  std::uint32_t epoch_ = 0;
  // Each side's queue (a heap by label, as (label, node)) and the nodes it
  // scanned, in the order scanned.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> fwd_, bwd_;
  std::vector<std::uint32_t> fwd_done_, bwd_done_;
};

}  // namespace subnetd::routing

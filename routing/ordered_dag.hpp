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
// Edges are bits, in a window of nodes each node may have edges with
// (DagFrame): a channel's successors leave its head switch, its
// predecessors enter its tail, so a CDG costs a few words a node and a
// search reads a node's edges from one line next to the others', where
// a list per node cost two misses a node scanned (random 2,000 switches,
// layered engine: 31 s -> 21.5 s, the same routes; 90 -> 38 MiB).
//
// Owner: one routing computation; single-threaded.

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace subnetd::routing {

// Which edges a graph may have: node x's successors among out_first[x] ..
// out_first[x] + out_width - 1 (consecutive nodes), its predecessors among
// in_nodes[in_first[x] .. in_first[x] + in_width - 1] (kNone: no node),
// where a node u sits at slot in_slot[u] in the window of every successor
// it may have. A channel dependency graph fits (cdg_frame below);
// complete() fits any graph, at 2n^2 bits.
struct DagFrame {
  static constexpr std::uint32_t kNone = ~0U;
  std::vector<std::uint32_t> out_first, in_first, in_nodes, in_slot;
  std::uint32_t out_width = 0, in_width = 0;

  std::uint32_t nodes() const { return static_cast<std::uint32_t>(out_first.size()); }
  // Where edge u->v's bit is in u's successors, and in v's predecessors;
  // false when the frame has no room for that edge.
  bool slots(std::uint32_t u, std::uint32_t v, std::uint32_t& out, std::uint32_t& in) const {
    out = v - out_first[u];
    in = in_slot[u];
    return out < out_width && in < in_width && in_nodes[in_first[v] + in] == u;
  }
  // Every node may have an edge to every other: small graphs (tests).
  static std::shared_ptr<const DagFrame> complete(std::uint32_t nodes);
};

class SwitchGraph;

// The frame of g's channel dependency graphs: a channel's dependencies go
// to the channels leaving its head, and come from the channels entering
// its tail. One for all of a computation's CDGs. With `vls` > 1, of one
// graph over the channels of that many VLs whose dependencies may change
// VL (per-hop VLs, Routes::hop_vls): channel (arc a, VL v) is node
// a * vls + v.
std::shared_ptr<const DagFrame> cdg_frame(const SwitchGraph& g, std::uint32_t vls = 1);

class OrderedDag {
 public:
  enum class Add { kNew, kKnown, kCycle };

  // The frame's nodes, no edges, ordered by index.
  explicit OrderedDag(std::shared_ptr<const DagFrame> frame);
  // No edges, node x at position order_pos[x] (a permutation of 0..n-1).
  // Edges added in agreement with it cost no reordering.
  OrderedDag(std::shared_ptr<const DagFrame> frame, std::vector<std::uint32_t> order_pos);

  // Adds u->v unless it closes a cycle (kCycle: the graph is unchanged;
  // also for an edge the frame has no room for, which no CDG adds).
  Add add(std::uint32_t u, std::uint32_t v) { return add(u, v, ~0U); }
  // The same, but a search that scans more than `max_scan` nodes gives up
  // and refuses the edge (kCycle, the graph unchanged), as callers for
  // whom a refusal is always safe bound their time by.
  Add add(std::uint32_t u, std::uint32_t v, std::uint32_t max_scan);
  // The nodes the last add() searched before it decided (0: the edge
  // agreed with the order, or was known), and whether it gave up at
  // max_scan rather than find a cycle.
  std::uint32_t last_scan() const { return last_scan_; }
  bool gave_up() const { return gave_up_; }
  // Takes back edges add() returned kNew for, in the order they were added
  // (the last one first).
  void undo(std::span<const std::pair<std::uint32_t, std::uint32_t>> added);
  bool contains(std::uint32_t u, std::uint32_t v) const {
    const std::uint32_t bit = v - frame_->out_first[u];
    return bit < frame_->out_width &&
           ((words_[std::size_t{u} * stride_ + bit / 64] >> (bit % 64)) & 1U) != 0;
  }
  std::size_t edges() const { return edges_; }
  bool empty() const { return edges_ == 0; }
  // Where x stands in the order: position(u) < position(v) when u comes
  // first (a label, not a rank: the values have gaps, and change).
  std::uint64_t position(std::uint32_t x) const { return node_[x].label; }

 private:
  bool reorder(std::uint32_t u, std::uint32_t v, std::uint32_t max_scan);
  void unlink(std::uint32_t x);
  // Links `block` (in order, unlinked) in after node `after` and labels it.
  void insert_after(std::uint32_t after, std::span<const std::uint32_t> block);

  void set(std::uint32_t u, std::uint32_t v, std::uint32_t out, std::uint32_t in, bool on);

  // What a search reads of a node it meets, in 16 bytes: a search's
  // misses are mostly a node's predecessors, scattered over the fabric,
  // and a smaller node leaves more of them in the cache (the list's
  // backward links, which no search reads, are apart in prev_).
  struct Node {
    std::uint64_t label = 0;  // order: labels grow along the list
    // epoch_: reached forward in this search; epoch_ + 1: backward (a
    // node both sides reach ends the search).
    std::uint32_t mark = 0;
    std::uint32_t next = 0;  // the list, in order
  };
  // Nodes 0..n-1, then the list's head (label 0) and tail (label max).
  std::vector<Node> node_;
  std::vector<std::uint32_t> prev_;
  std::uint32_t head_ = 0, tail_ = 0;
  std::shared_ptr<const DagFrame> frame_;
  // By node, stride_ words: out_words_ of successor bits (by slot in its
  // window), then predecessor bits.
  std::uint32_t out_words_ = 0, stride_ = 0;
  std::vector<std::uint64_t> words_;
  std::size_t edges_ = 0;
  std::uint32_t epoch_ = 0;  // even; a search's marks are epoch_ and epoch_ + 1
  std::uint32_t last_scan_ = 0;
  bool gave_up_ = false;
  // Each side's queue (a heap by label, as (label, node)) and the nodes it
  // scanned, in the order scanned.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> fwd_, bwd_;
  std::vector<std::uint32_t> fwd_done_, bwd_done_;
};

}  // namespace subnetd::routing

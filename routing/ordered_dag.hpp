#pragma once
// OrderedDag: a directed graph kept acyclic as edges are added, with a
// topological order maintained online — Pearce and Kelly, "A dynamic
// topological sort algorithm for directed acyclic graphs" (JEA 2006).
//
// Used for channel dependency graphs (nodes are channels, i.e. SwitchGraph
// arcs): an added dependency u->v with ord(u) < ord(v) agrees with the order
// and costs a scan of u's few edges; one that does not closes a cycle iff v reaches u
// through nodes ordered before u, and otherwise only the nodes between the
// two are reordered. Edges can be taken back last-first (a subgraph of a DAG
// keeps its order).
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
  std::uint32_t position(std::uint32_t x) const { return node_[x].ord; }

 private:
  bool reorder(std::uint32_t u, std::uint32_t v);

  // What a search reads of a node it meets, side by side: one cache line
  // where three arrays took three (random 1,000 switches: the layered
  // engine 13.4-14.2 s against 14.7-17.7 s, runs side by side).
  struct Node {
    std::uint32_t ord = 0;         // position in the order
    std::uint32_t fwd_epoch = 0;   // reached forward in this search
    std::uint32_t back_epoch = 0;  // reached backward
  };
  std::vector<Node> node_;
  std::vector<std::uint32_t> at_;  // position -> node
  std::vector<std::vector<std::uint32_t>> out_, in_;
  std::size_t edges_ = 0;
  std::uint32_t epoch_ = 0;
  // Nodes reached forward, backward (each side's queue), and the
  // positions they held, as (position << 32 | node).
  std::vector<std::uint64_t> fwd_, bwd_, slots_;
  // Scratch, a bit per position: the positions a reordering takes, read
  // back in order (zero between reorderings).
  std::vector<std::uint64_t> taken_;
};

}  // namespace subnetd::routing

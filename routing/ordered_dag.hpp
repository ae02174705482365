#pragma once
// OrderedDag: a directed graph kept acyclic as edges are added, with a
// topological order maintained online — Pearce and Kelly, "A dynamic
// topological sort algorithm for directed acyclic graphs" (JEA 2006).
//
// Used for channel dependency graphs (nodes are channels, i.e. SwitchGraph
// arcs): an added dependency u->v with ord(u) < ord(v) agrees with the order
// and costs a hash insert; one that does not closes a cycle iff v reaches u
// through nodes ordered before u, and otherwise only the nodes between the
// two are reordered. Edges can be taken back last-first (a subgraph of a DAG
// keeps its order).
//
// Owner: one routing computation; single-threaded.

#include <cstdint>
#include <span>
#include <unordered_set>
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
  bool contains(std::uint32_t u, std::uint32_t v) const { return edges_.contains(key(u, v)); }
  std::size_t edges() const { return edges_.size(); }
  bool empty() const { return edges_.empty(); }
  std::uint32_t position(std::uint32_t x) const { return ord_[x]; }

 private:
  static std::uint64_t key(std::uint32_t u, std::uint32_t v) {
    return (std::uint64_t{u} << 32) | v;
  }
  bool reorder(std::uint32_t u, std::uint32_t v);

  std::vector<std::uint32_t> ord_;  // node -> position in the order
  std::vector<std::vector<std::uint32_t>> out_, in_;
  std::unordered_set<std::uint64_t> edges_;
  std::vector<std::uint32_t> mark_, back_mark_;  // reached forward, backward
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> fwd_, bwd_, stack_, back_stack_, slots_;
};

}  // namespace subnetd::routing

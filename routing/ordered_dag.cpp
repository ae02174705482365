#include "routing/ordered_dag.hpp"

#include <algorithm>
#include <numeric>

namespace subnetd::routing {

OrderedDag::OrderedDag(std::uint32_t nodes)
    : ord_(nodes), out_(nodes), in_(nodes), mark_(nodes, 0), back_mark_(nodes, 0) {
  std::iota(ord_.begin(), ord_.end(), 0U);
}

OrderedDag::OrderedDag(std::vector<std::uint32_t> order_pos)
    : ord_(std::move(order_pos)),
      out_(ord_.size()),
      in_(ord_.size()),
      mark_(ord_.size(), 0),
      back_mark_(ord_.size(), 0) {}

OrderedDag::Add OrderedDag::add(std::uint32_t u, std::uint32_t v) {
  if (u == v) return Add::kCycle;
  if (contains(u, v)) return Add::kKnown;
  if (ord_[u] > ord_[v] && !reorder(u, v)) return Add::kCycle;
  ++edges_;
  out_[u].push_back(v);
  in_[v].push_back(u);
  return Add::kNew;
}

void OrderedDag::undo(std::span<const std::pair<std::uint32_t, std::uint32_t>> added) {
  for (auto it = added.rbegin(); it != added.rend(); ++it) {
    out_[it->first].pop_back();
    in_[it->second].pop_back();
    --edges_;
  }
}

// ord(v) < ord(u): false when v reaches u (the edge would close a cycle),
// else moves what u is reached from before what v reaches. The search goes
// forward from v (through nodes ordered before u) and backward from u
// (through nodes ordered after v) a node at a time each: a node both reach
// is a cycle, found where the two meet, long before either side has seen
// all it reaches (most searches in a dense CDG end in a cycle). Without a
// meeting each side runs to its end, as the reordering needs both.
bool OrderedDag::reorder(std::uint32_t u, std::uint32_t v) {
  const std::uint32_t ub = ord_[u], lb = ord_[v];
  ++epoch_;
  fwd_.clear();
  bwd_.clear();
  stack_.assign(1, v);
  back_stack_.assign(1, u);
  mark_[v] = epoch_;
  back_mark_[u] = epoch_;
  while (!stack_.empty() || !back_stack_.empty()) {
    if (!stack_.empty()) {
      const std::uint32_t x = stack_.back();
      stack_.pop_back();
      fwd_.push_back(std::uint64_t{ord_[x]} << 32 | x);
      for (const std::uint32_t y : out_[x]) {
        if (back_mark_[y] == epoch_) return false;
        if (mark_[y] != epoch_ && ord_[y] < ub) {
          mark_[y] = epoch_;
          stack_.push_back(y);
        }
      }
    }
    if (!back_stack_.empty()) {
      const std::uint32_t x = back_stack_.back();
      back_stack_.pop_back();
      bwd_.push_back(std::uint64_t{ord_[x]} << 32 | x);
      for (const std::uint32_t y : in_[x]) {
        if (mark_[y] == epoch_) return false;
        if (back_mark_[y] != epoch_ && ord_[y] > lb) {
          back_mark_[y] = epoch_;
          back_stack_.push_back(y);
        }
      }
    }
  }
  // Each side by position (the key's high half), then the positions both
  // held, merged: what v reaches takes the last of them, what reaches u
  // the first, each side keeping its own order.
  std::sort(fwd_.begin(), fwd_.end());
  std::sort(bwd_.begin(), bwd_.end());
  slots_.resize(fwd_.size() + bwd_.size());
  auto pos = [](std::uint64_t key) { return static_cast<std::uint32_t>(key >> 32); };
  std::merge(bwd_.begin(), bwd_.end(), fwd_.begin(), fwd_.end(), slots_.begin());
  std::size_t i = 0;
  for (const std::uint64_t key : bwd_) ord_[static_cast<std::uint32_t>(key)] = pos(slots_[i++]);
  for (const std::uint64_t key : fwd_) ord_[static_cast<std::uint32_t>(key)] = pos(slots_[i++]);
  return true;
}

}  // namespace subnetd::routing

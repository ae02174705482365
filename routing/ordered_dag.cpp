#include "routing/ordered_dag.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <utility>

namespace subnetd::routing {

OrderedDag::OrderedDag(std::uint32_t nodes)
    : OrderedDag([nodes] {
        std::vector<std::uint32_t> pos(nodes);
        std::iota(pos.begin(), pos.end(), 0U);
        return pos;
      }()) {}

OrderedDag::OrderedDag(std::vector<std::uint32_t> order_pos)
    : node_(order_pos.size()),
      at_(order_pos.size()),
      out_(order_pos.size()),
      in_(order_pos.size()),
      taken_((order_pos.size() + 63) / 64, 0) {
  for (std::uint32_t x = 0; x < order_pos.size(); ++x) {
    node_[x].ord = order_pos[x];
    at_[order_pos[x]] = x;
  }
}

OrderedDag::Add OrderedDag::add(std::uint32_t u, std::uint32_t v) {
  if (u == v) return Add::kCycle;
  if (contains(u, v)) return Add::kKnown;
  if (node_[u].ord > node_[v].ord && !reorder(u, v)) return Add::kCycle;
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
// (through nodes ordered after v) a node at a time each, breadth first: a
// node both reach is a cycle, found where the two meet, long before either
// side has seen all it reaches (most searches in a dense CDG end in a
// cycle; breadth first, they met after a third of the nodes depth first
// took, the routes the same). Without a meeting each side runs to its end,
// as the reordering needs both.
bool OrderedDag::reorder(std::uint32_t u, std::uint32_t v) {
  const std::uint32_t ub = node_[u].ord, lb = node_[v].ord;
  auto key = [&](std::uint32_t x) { return std::uint64_t{node_[x].ord} << 32 | x; };
  auto node = [](std::uint64_t k) { return static_cast<std::uint32_t>(k); };
  ++epoch_;
  // Each side's queue is the nodes it reached, as keys.
  fwd_.assign(1, key(v));
  bwd_.assign(1, key(u));
  node_[v].fwd_epoch = epoch_;
  node_[u].back_epoch = epoch_;
  for (std::size_t f = 0, b = 0; f < fwd_.size() || b < bwd_.size();) {
    if (f < fwd_.size()) {
      for (const std::uint32_t y : out_[node(fwd_[f++])]) {
        Node& ny = node_[y];
        if (ny.back_epoch == epoch_) return false;
        if (ny.fwd_epoch != epoch_ && ny.ord < ub) {
          ny.fwd_epoch = epoch_;
          fwd_.push_back(key(y));
        }
      }
    }
    if (b < bwd_.size()) {
      for (const std::uint32_t y : in_[node(bwd_[b++])]) {
        Node& ny = node_[y];
        if (ny.fwd_epoch == epoch_) return false;
        if (ny.back_epoch != epoch_ && ny.ord > lb) {
          ny.back_epoch = epoch_;
          bwd_.push_back(key(y));
        }
      }
    }
  }
  // Each side by position (the key's high half), and the positions both
  // held in order: what v reaches takes the last of them, what reaches u
  // the first, each side keeping its own order.
  auto pos = [](std::uint64_t k) { return static_cast<std::uint32_t>(k >> 32); };
  const std::size_t reached = fwd_.size() + bwd_.size();
  slots_.resize(reached);
  if (ub - lb <= 256 * reached) {
    // A window of a few words a node: the positions as bits, read back in
    // order (they are distinct), sort both sides at once — cheaper than
    // two sorts (random 1,000 switches: the sorts were 15% of routing).
    for (const std::uint64_t k : fwd_) taken_[pos(k) / 64] |= std::uint64_t{1} << (pos(k) % 64);
    for (const std::uint64_t k : bwd_) taken_[pos(k) / 64] |= std::uint64_t{1} << (pos(k) % 64);
    fwd_.clear();
    bwd_.clear();
    std::size_t n = 0;
    for (std::uint32_t w = lb / 64; w <= ub / 64; ++w) {
      for (std::uint64_t bits = std::exchange(taken_[w], 0); bits != 0; bits &= bits - 1) {
        const auto p = static_cast<std::uint32_t>(w * 64 + std::countr_zero(bits));
        const std::uint32_t x = at_[p];
        const std::uint64_t k = key(x);
        (node_[x].back_epoch == epoch_ ? bwd_ : fwd_).push_back(k);
        slots_[n++] = k;
      }
    }
  } else {
    std::sort(fwd_.begin(), fwd_.end());
    std::sort(bwd_.begin(), bwd_.end());
    std::merge(bwd_.begin(), bwd_.end(), fwd_.begin(), fwd_.end(), slots_.begin());
  }
  std::size_t i = 0;
  for (const std::uint64_t k : bwd_) node_[node(k)].ord = pos(slots_[i++]);
  for (const std::uint64_t k : fwd_) node_[node(k)].ord = pos(slots_[i++]);
  for (const std::uint64_t k : slots_) at_[node_[node(k)].ord] = node(k);
  return true;
}

}  // namespace subnetd::routing

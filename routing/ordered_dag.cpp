#include "routing/ordered_dag.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <utility>

#include "routing/switch_graph.hpp"

namespace subnetd::routing {

std::shared_ptr<const DagFrame> DagFrame::complete(std::uint32_t nodes) {
  auto f = std::make_shared<DagFrame>();
  f->out_first.assign(nodes, 0);
  f->in_first.assign(nodes, 0);
  f->in_nodes.resize(nodes);
  std::iota(f->in_nodes.begin(), f->in_nodes.end(), 0U);
  f->in_slot = f->in_nodes;
  f->out_width = f->in_width = nodes;
  return f;
}

std::shared_ptr<const DagFrame> cdg_frame(const SwitchGraph& g, std::uint32_t vls) {
  auto f = std::make_shared<DagFrame>();
  const std::uint32_t arcs = g.num_arcs(), n = g.num_switches();
  const std::size_t nodes = std::size_t{arcs} * vls;  // channel (a, vl): a * vls + vl
  f->out_first.resize(nodes);
  f->in_first.resize(nodes);
  f->in_slot.resize(nodes);
  std::vector<std::uint32_t> entering(n, 0), slot(arcs);
  for (std::uint32_t a = 0; a < arcs; ++a) slot[a] = entering[g.arc(a).to.value]++;
  std::uint32_t degree = 0, in_degree = 0;
  for (std::uint32_t s = 0; s < n; ++s) {
    degree = std::max(degree, g.first_arc(SwitchIndex{s + 1}) - g.first_arc(SwitchIndex{s}));
    in_degree = std::max(in_degree, entering[s]);
  }
  f->out_width = degree * vls;
  f->in_width = in_degree * vls;
  f->in_nodes.assign(std::size_t{n} * f->in_width, DagFrame::kNone);
  for (std::uint32_t a = 0; a < arcs; ++a) {
    for (std::uint32_t vl = 0; vl < vls; ++vl) {
      const std::size_t x = std::size_t{a} * vls + vl;
      f->out_first[x] = g.first_arc(g.arc(a).to) * vls;
      f->in_slot[x] = slot[a] * vls + vl;
      f->in_nodes[std::size_t{g.arc(a).to.value} * f->in_width + f->in_slot[x]] =
          static_cast<std::uint32_t>(x);
      f->in_first[x] = g.arc_source(a).value * f->in_width;
    }
  }
  return f;
}

OrderedDag::OrderedDag(std::shared_ptr<const DagFrame> frame)
    : OrderedDag(frame, [n = frame->nodes()] {
        std::vector<std::uint32_t> pos(n);
        std::iota(pos.begin(), pos.end(), 0U);
        return pos;
      }()) {}

OrderedDag::OrderedDag(std::shared_ptr<const DagFrame> frame, std::vector<std::uint32_t> order_pos)
    : node_(order_pos.size() + 2), prev_(order_pos.size() + 2, 0), frame_(std::move(frame)) {
  const auto n = static_cast<std::uint32_t>(order_pos.size());
  out_words_ = (frame_->out_width + 63) / 64;
  stride_ = out_words_ + (frame_->in_width + 63) / 64;
  words_.assign(std::size_t{n} * stride_, 0);
  head_ = n;
  tail_ = n + 1;
  std::vector<std::uint32_t> at(n);
  for (std::uint32_t x = 0; x < n; ++x) at[order_pos[x]] = x;
  // Labels spread evenly over the whole range.
  const std::uint64_t step = UINT64_MAX / (std::uint64_t{n} + 1);
  node_[head_].label = 0;
  node_[tail_].label = UINT64_MAX;
  std::uint32_t prev = head_;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t x = at[i];
    node_[x].label = (std::uint64_t{i} + 1) * step;
    prev_[x] = prev;
    node_[prev].next = x;
    prev = x;
  }
  node_[prev].next = tail_;
  prev_[tail_] = prev;
}

OrderedDag::Add OrderedDag::add(std::uint32_t u, std::uint32_t v, std::uint32_t max_scan) {
  std::uint32_t out = 0, in = 0;
  last_scan_ = 0;
  gave_up_ = false;
  if (u == v || !frame_->slots(u, v, out, in)) return Add::kCycle;
  if (contains(u, v)) return Add::kKnown;
  if (node_[u].label > node_[v].label && !reorder(u, v, max_scan)) return Add::kCycle;
  ++edges_;
  set(u, v, out, in, true);
  return Add::kNew;
}

void OrderedDag::undo(std::span<const std::pair<std::uint32_t, std::uint32_t>> added) {
  for (auto it = added.rbegin(); it != added.rend(); ++it) {
    std::uint32_t out = 0, in = 0;
    if (!frame_->slots(it->first, it->second, out, in)) continue;  // never added
    set(it->first, it->second, out, in, false);
    --edges_;
  }
}

void OrderedDag::set(std::uint32_t u, std::uint32_t v, std::uint32_t out, std::uint32_t in,
                     bool on) {
  std::uint64_t& o = words_[std::size_t{u} * stride_ + out / 64];
  std::uint64_t& i = words_[std::size_t{v} * stride_ + out_words_ + in / 64];
  const std::uint64_t ob = std::uint64_t{1} << (out % 64), ib = std::uint64_t{1} << (in % 64);
  o = on ? o | ob : o & ~ob;
  i = on ? i | ib : i & ~ib;
}

namespace {

// Room, per node, a stretch of the list is spread to when an insertion
// found none: the next insertions there find room for a while (16 halvings
// before the stretch is spread again, wider).
constexpr std::uint64_t kRoom = std::uint64_t{1} << 16;

using Reached = std::pair<std::uint64_t, std::uint32_t>;  // (label, node)
// Heaps: the forward side's least label on top, the backward side's most.
bool after_in_order(const Reached& a, const Reached& b) {
  return a.first > b.first;
}
bool before_in_order(const Reached& a, const Reached& b) {
  return a.first < b.first;
}

}  // namespace

// v is ordered before u: false when v reaches u (the edge would close a
// cycle), else moves what reaches u before what v reaches. The forward
// search from v scans the least ordered node it reached first (through
// nodes ordered before u), the backward one from u the most ordered first
// (through nodes ordered after v), a node each in turn, until they meet (a
// node both reach: a cycle) or the forward side's next node is ordered
// after the backward side's next one. Then (ordered along any path, the
// nodes on it rising) every node v reaches ordered before the forward
// side's next node F was scanned, and every node reaching u ordered after
// the backward side's next node B. The scanned backward nodes go, in their
// order, just after B, the forward ones just before F: each backward node
// moves earlier, but stays after every node reaching it (all ordered at B
// or before, or scanned); each forward node moves later, but stays before
// every node it reaches (ordered at F or after, or scanned). With a side's
// queue empty, B is the node before v, F the node after u.
bool OrderedDag::reorder(std::uint32_t u, std::uint32_t v, std::uint32_t max_scan) {
  const std::uint64_t lb = node_[v].label, ub = node_[u].label;
  if (epoch_ >= UINT32_MAX - 3) {  // marks wrap: clear them
    for (Node& x : node_) x.mark = 0;
    epoch_ = 0;
  }
  epoch_ += 2;
  const std::uint32_t fwd_mark = epoch_, back_mark = epoch_ + 1;
  fwd_.assign(1, Reached{lb, v});
  bwd_.assign(1, Reached{ub, u});
  fwd_done_.clear();
  bwd_done_.clear();
  node_[v].mark = fwd_mark;
  node_[u].mark = back_mark;
  auto scanned = [&] { return static_cast<std::uint32_t>(fwd_done_.size() + bwd_done_.size()); };
  auto closed = [&] {  // a node both sides reach: a cycle
    last_scan_ = scanned();
    return false;
  };
  for (bool forward = true;
       !fwd_.empty() && !bwd_.empty() && fwd_.front().first < bwd_.front().first;
       forward = !forward) {
    if (scanned() >= max_scan) {
      gave_up_ = true;
      return closed();
    }
    if (forward) {
      std::pop_heap(fwd_.begin(), fwd_.end(), after_in_order);
      const std::uint32_t x = fwd_.back().second;
      fwd_.pop_back();
      fwd_done_.push_back(x);
      const std::uint64_t* w = &words_[std::size_t{x} * stride_];
      const std::uint32_t first = frame_->out_first[x];
      for (std::uint32_t k = 0; k < out_words_; ++k) {
        for (std::uint64_t bits = w[k]; bits != 0; bits &= bits - 1) {
          const std::uint32_t y =
              first + k * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
          Node& ny = node_[y];
          if (ny.mark == back_mark) return closed();
          if (ny.mark != fwd_mark && ny.label < ub) {
            ny.mark = fwd_mark;
            fwd_.emplace_back(ny.label, y);
            std::push_heap(fwd_.begin(), fwd_.end(), after_in_order);
          }
        }
      }
    } else {
      std::pop_heap(bwd_.begin(), bwd_.end(), before_in_order);
      const std::uint32_t x = bwd_.back().second;
      bwd_.pop_back();
      bwd_done_.push_back(x);
      const std::uint64_t* w = &words_[std::size_t{x} * stride_ + out_words_];
      const std::uint32_t* from = &frame_->in_nodes[frame_->in_first[x]];
      for (std::uint32_t k = 0; k < stride_ - out_words_; ++k) {
        // The predecessors lie all over the node array: ask for every one
        // before reading the first, so that their misses overlap (a few
        // percent at most, routing/README.md).
        for (std::uint64_t bits = w[k]; bits != 0; bits &= bits - 1) {
          __builtin_prefetch(
              &node_[from[k * 64 + static_cast<std::uint32_t>(std::countr_zero(bits))]]);
        }
        for (std::uint64_t bits = w[k]; bits != 0; bits &= bits - 1) {
          const std::uint32_t y = from[k * 64 + static_cast<std::uint32_t>(std::countr_zero(bits))];
          Node& ny = node_[y];
          if (ny.mark == fwd_mark) return closed();
          if (ny.mark != back_mark && ny.label > lb) {
            ny.mark = back_mark;
            bwd_.emplace_back(ny.label, y);
            std::push_heap(bwd_.begin(), bwd_.end(), before_in_order);
          }
        }
      }
    }
  }
  last_scan_ = scanned();
  // B and F (neither was scanned: a node reached by both sides is a
  // cycle, found where the second side reached it).
  const std::uint32_t b = bwd_.empty() ? prev_[v] : bwd_.front().second;
  const std::uint32_t f = fwd_.empty() ? node_[u].next : fwd_.front().second;
  for (const std::uint32_t x : fwd_done_) unlink(x);
  for (const std::uint32_t x : bwd_done_) unlink(x);
  // Scanned backward most ordered first: in order, reversed.
  std::reverse(bwd_done_.begin(), bwd_done_.end());
  if (!bwd_done_.empty()) insert_after(b, bwd_done_);
  insert_after(prev_[f], fwd_done_);
  return true;
}

void OrderedDag::unlink(std::uint32_t x) {
  node_[prev_[x]].next = node_[x].next;
  prev_[node_[x].next] = prev_[x];
}

void OrderedDag::insert_after(std::uint32_t after, std::span<const std::uint32_t> block) {
  const std::uint32_t next = node_[after].next;
  std::uint32_t prev = after;
  for (const std::uint32_t x : block) {
    prev_[x] = prev;
    node_[prev].next = x;
    prev = x;
  }
  node_[prev].next = next;
  prev_[next] = prev;
  // Labels: spread over the room between the block's neighbours if there
  // is any; else over a stretch around it, grown (about three times each
  // step) until it has kRoom a node. The list's ends are labelled 0 and
  // the largest label, so the whole list always has room.
  std::uint32_t lo = block.front(), hi = block.back();
  std::uint64_t count = block.size();
  std::uint64_t need = 1;
  for (;;) {
    const std::uint64_t a = node_[prev_[lo]].label, z = node_[node_[hi].next].label;
    const std::uint64_t step = (z - a) / (count + 1);
    if (step >= need) {
      std::uint64_t label = a;
      for (std::uint32_t x = lo;; x = node_[x].next) {
        label += step;
        node_[x].label = label;
        if (x == hi) break;
      }
      return;
    }
    need = kRoom;
    const std::uint64_t grow = count;
    for (std::uint64_t i = 0; i < grow && prev_[lo] != head_; ++i, ++count) lo = prev_[lo];
    for (std::uint64_t i = 0; i < grow && node_[hi].next != tail_; ++i, ++count)
      hi = node_[hi].next;
  }
}

}  // namespace subnetd::routing

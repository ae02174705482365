#pragma once
// TreeGrower: the in-tree step of the layered engine (engines/layered.hpp)
// and of its in-layer repair (engines/layered_repair.hpp): a Dijkstra
// towards one switch over channels weighted by load, where a switch joins
// only through a channel whose dependencies keep its layer's channel
// dependency graph acyclic (routing/ordered_dag.hpp). The layers'
// starting CDGs are layer_cdg.hpp's.
//
// Internal to routing/engines; single-threaded: a computation growing
// trees at once on several threads gives each its own TreeGrower.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "routing/engines/layer_cdg.hpp"
#include "routing/lft.hpp"
#include "routing/ordered_dag.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

// Hot-spot steps after the layered engine's rip-up pass
// (layered_general.cpp), and after a repair (layered_repair.hpp,
// RepairBalance): at most one per tree (two in the engine's,
// kHotSpotStepsPerTree), and none once kHotSpotStall
// steps in a row have not taken the busiest channel's load down by
// 1/kHotSpotDrop. The engine's busiest
// link over the lower bound (layers_bench, 8 VLs), with a quarter of the
// trees' count and 32 steps of stall (when a step took ~20 ms at 2,000
// switches), then with these (a step ~5 ms): random 2,000 switches,
// degree 16: 1.52 -> 1.33, 2 s -> 6 s of steps (2.38 before any; 128
// steps of stall: 1.25 in 13 s more); 1 CA per switch 1.67 either way;
// random 1,000 1.12 -> 1.11; 200 1.09 -> 1.08; fat tree k=16 minus 5%
// 1.32 -> 1.25; torus 8x8x8 (general engine) 1.59 -> 1.53, minus 2% of
// its links 4.73 -> 4.50.
inline constexpr std::uint32_t kHotSpotStall = 64;
inline constexpr std::uint64_t kHotSpotDrop = 128;

// A channel dependency: (channel in, channel out), SwitchGraph arc indices.
using Dep = std::pair<std::uint32_t, std::uint32_t>;

// A set of channel dependencies: a bit per dependency the frame
// (cdg_frame) allows.
class DepSet {
 public:
  explicit DepSet(std::shared_ptr<const DagFrame> frame)
      : frame_(std::move(frame)),
        words_((frame_->out_width + 63) / 64),
        bits_(std::size_t{frame_->nodes()} * words_, 0) {}
  bool contains(std::uint32_t in, std::uint32_t out) const {
    const std::uint32_t bit = out - frame_->out_first[in];
    return bit < frame_->out_width &&
           ((bits_[std::size_t{in} * words_ + bit / 64] >> (bit % 64)) & 1U) != 0;
  }
  void insert(std::uint32_t in, std::uint32_t out) {
    const std::uint32_t bit = out - frame_->out_first[in];
    if (bit < frame_->out_width) {
      bits_[std::size_t{in} * words_ + bit / 64] |= std::uint64_t{1} << (bit % 64);
    }
  }

 private:
  std::shared_ptr<const DagFrame> frame_;
  std::uint32_t words_;
  std::vector<std::uint64_t> bits_;
};

// Takes back, last first, the dependencies from `mark` on of `added`, each
// in the dag of its layer in `added_layer` (a layer per branch:
// TreeGrower::grow_split), and drops them from both lists.
inline void take_back_split(std::span<OrderedDag> dags, std::vector<Dep>& added,
                            std::vector<std::uint8_t>& added_layer, std::size_t mark = 0) {
  for (std::size_t i = added.size(); i-- > mark;) {
    dags[added_layer[i]].undo(std::span<const Dep>(&added[i], 1));
  }
  added.resize(mark);
  added_layer.resize(mark);
}

// Dependencies a layer refused (they closed a cycle), refused again
// without a search: it may have been refused for a tree taken back since;
// refusing stays safe.
using RefusedDeps = DepSet;

// Grows in-trees towards one switch. A switch two hops from the
// destination may also keep other channels into the destination's
// neighbours (kMaxOut in all): the destination's LIDs spread over them, as
// the last hops are where one tree's traffic converges. Eight, not four: a
// fat tree's leaf reaches a leaf of its pod through each of its k/2
// aggregation switches (k=16 minus 5% of its links, layered on 8 VLs:
// 1.25 -> 1.16 the bound; random graphs, the dragonfly, tori and the
// same fat tree on one VL unchanged).
class TreeGrower {
 public:
  static constexpr std::uint32_t kMaxOut = 8;

  TreeGrower(const SwitchGraph& g, std::span<const std::uint32_t> rev)
      : g_(g),
        rev_(rev),
        outs_(std::size_t{g.num_switches()} * kMaxOut, kNoArc),
        num_outs_(g.num_switches(), 0),
        cost_(g.num_switches(), 0),
        done_(g.num_switches(), 0),
        joined_at_(g.num_switches(), 0),
        offered_(g.num_switches(), 0),
        heap_pos_(g.num_switches(), 0),
        failed_(g.num_arcs(), 0) {}

  // Grows the tree towards switch t over channels weighted by `load` plus
  // one `hop`. With a `dag`, a switch joins through a channel only if the
  // dependencies it adds (the channel, then each channel its head forwards
  // on) keep the dag acyclic (those it newly took are appended to `added`;
  // those it refused are remembered in `refused` and refused again without
  // a search). A switch two hops from t also keeps each other channel
  // into a neighbour of t whose cost is within `slack` of its own, on the
  // same condition. With an `updown` ranking instead (dag, refused and
  // added unused), the condition is up*/down*'s: no channel that goes down
  // (to a switch ranked after its source) is followed by one that goes up.
  // With a `dag`, a switch left out (every channel it has into the tree
  // refused) may still join through a neighbour x in the tree that takes
  // another of its channels onward instead, to a switch that joined
  // before x, when the dependencies of every channel into x onto it
  // (x's children's, and the left-out switch's) and of it onward keep
  // the dag acyclic (x's old dependencies stay in it). Random 2,000
  // switches: half the trees a layer refused missed three switches or
  // fewer, and each refused tree was grown again on another layer.
  // Returns the switches reached, t first, each after every switch it
  // forwards to; outs() gives their channels, the tree's first.
  std::span<const std::uint32_t> grow(std::uint32_t t, std::span<const std::uint64_t> load,
                                      std::uint64_t hop, std::uint64_t slack, OrderedDag* dag,
                                      RefusedDeps* refused, std::vector<Dep>& added,
                                      std::span<const std::uint32_t> updown = {}) {
    ++epoch_;
    reached_.clear();
    heap_.clear();
    auto up = [&](std::uint32_t a) {
      return updown[g_.arc(a).to.value] < updown[g_.arc_source(a).value];
    };
    // Adds every dependency of channel `in` onto its head's channels; on a
    // refusal takes back what it added and returns false.
    // Adds the dependency in -> out to the dag (appended to `added` when
    // new); false, remembered in `refused`, when it closes a cycle.
    const bool split = !split_dags_.empty();
    auto depend_on = [&](OrderedDag& d, RefusedDeps& r, std::uint32_t layer, std::uint32_t in,
                         std::uint32_t out) {
      if (!node_of_.empty()) {
        in = node_of_[in];
        out = node_of_[out];
      }
      const OrderedDag::Add res =
          r.contains(in, out) ? OrderedDag::Add::kCycle : search(d, in, out);
      if (res == OrderedDag::Add::kNew) {
        added.emplace_back(in, out);
        if (split) added_layer_->push_back(static_cast<std::uint8_t>(layer));
      }
      if (res != OrderedDag::Add::kCycle) return true;
      r.insert(in, out);
      return false;
    };
    auto depend = [&](std::uint32_t in, std::uint32_t out) {
      return depend_on(*dag, *refused, 0, in, out);
    };
    // Takes back what depend() added since `mark`.
    auto take_back = [&](std::size_t mark) {
      if (split) {
        take_back_split(split_dags_, added, *added_layer_, mark);
        return;
      }
      dag->undo(std::span<const Dep>(added).subspan(mark));
      added.resize(mark);
    };
    auto into_t = [&](std::uint32_t w) {
      return num_outs_[w] != 0 && g_.arc(outs_[std::size_t{w} * kMaxOut]).to.value == t;
    };
    // Channel `in`'s dependencies (onto each channel its head forwards
    // on) added to d (layer k); on a refusal all taken back, false.
    auto take_into = [&](OrderedDag& d, RefusedDeps& r, std::uint32_t k, std::uint32_t in) {
      const std::size_t mark = added.size();
      for (const std::uint32_t out : outs(g_.arc(in).to.value)) {
        if (!depend_on(d, r, k, in, out)) {
          take_back(mark);
          return false;
        }
      }
      return true;
    };
    auto take_on = [&](std::uint32_t in, std::uint32_t k) {  // split mode
      return take_into(split_dags_[k], split_refused_[k], k, in);
    };
    // Split mode: a switch joining through a neighbour of t picks the
    // first layer of split_pref_ that takes its dependencies; any other
    // keeps its next hop's layer (an already joined switch, its own).
    auto take_split = [&](std::uint32_t in) {
      const std::uint32_t s = g_.arc_source(in).value, x = g_.arc(in).to.value;
      if (x == t) {
        path_layer_[s] = static_cast<std::uint8_t>(split_pref_.front());
        return true;
      }
      if (done_[s] == epoch_) return take_on(in, path_layer_[s]);
      if (into_t(x)) {
        for (const std::uint32_t k : split_pref_) {
          if (take_on(in, k)) {
            path_layer_[s] = static_cast<std::uint8_t>(k);
            return true;
          }
        }
        return false;
      }
      if (!take_on(in, path_layer_[x])) return false;
      path_layer_[s] = path_layer_[x];
      return true;
    };
    auto take = [&](std::uint32_t in) {
      if (split) return take_split(in);
      if (!updown.empty()) {
        if (up(in)) return true;
        const auto outs_in = outs(g_.arc(in).to.value);
        return std::none_of(outs_in.begin(), outs_in.end(), up);
      }
      return dag == nullptr || take_into(*dag, *refused, 0, in);
    };
    auto join = [&](std::uint32_t s, std::uint32_t arc, std::uint64_t cost) {
      done_[s] = epoch_;
      joined_at_[s] = static_cast<std::uint32_t>(reached_.size());
      cost_[s] = cost;
      num_outs_[s] = 0;
      if (arc != kNoArc) outs_[std::size_t{s} * kMaxOut + num_outs_[s]++] = arc;
      reached_.push_back(s);
      const std::uint32_t first = g_.first_arc(SwitchIndex{s});
      const std::uint32_t end = g_.first_arc(SwitchIndex{s + 1});
      const bool constrained = dag != nullptr || !updown.empty();
      if (constrained && arc != kNoArc && into_t(g_.arc(arc).to.value)) {
        for (std::uint32_t o = first; o < end && num_outs_[s] < kMaxOut; ++o) {
          const std::uint32_t w = g_.arc(o).to.value;
          if (o == arc || done_[w] != epoch_ || !into_t(w)) continue;
          if (cost_[w] + hop + load[o] > cost + slack) continue;
          if (take(o)) outs_[std::size_t{s} * kMaxOut + num_outs_[s]++] = o;
        }
      }
      for (std::uint32_t o = first; o < end; ++o) {
        const std::uint32_t in = rev_[o];
        if (in == kNoArc || done_[g_.arc(o).to.value] == epoch_) continue;
        offer(g_.arc(o).to.value, Item{cost + hop + load[in], in});
      }
    };
    auto drain = [&] {
      while (!heap_.empty()) {
        const auto [best, u] = pop();
        if (take(best.arc)) {
          join(u, best.arc, best.cost);
          continue;
        }
        // Refused: u's next channel into the tree, if any.
        failed_[best.arc] = epoch_;
        offered_[u] = 0;
        for (std::uint32_t a = g_.first_arc(SwitchIndex{u}); a < g_.first_arc(SwitchIndex{u + 1});
             ++a) {
          const std::uint32_t w = g_.arc(a).to.value;
          if (done_[w] != epoch_ || failed_[a] == epoch_) continue;
          offer(u, Item{cost_[w] + hop + load[a], a});
        }
        if (offered_[u] != epoch_) left_out_.push_back(u);
      }
    };
    left_out_.clear();
    join(t, kNoArc, 0);
    drain();
    if (dag != nullptr && updown.empty()) {
      // Joins left-out switch m through a neighbour x in the tree that
      // forwards on another channel instead; false when none can.
      auto reattach = [&](std::uint32_t m) {
        for (std::uint32_t c = g_.first_arc(SwitchIndex{m}); c < g_.first_arc(SwitchIndex{m + 1});
             ++c) {
          const std::uint32_t x = g_.arc(c).to.value;
          if (done_[x] != epoch_ || num_outs_[x] == 0) continue;  // t: never refused
          if (split && into_t(x)) continue;                       // its children's layers differ
          // The channels into x the tree uses, and m's.
          into_.assign(1, c);
          for (std::uint32_t o = g_.first_arc(SwitchIndex{x}); o < g_.first_arc(SwitchIndex{x + 1});
               ++o) {
            const std::uint32_t z = g_.arc(o).to.value, in = rev_[o];
            if (in == kNoArc || done_[z] != epoch_) continue;
            const auto zo = outs(z);
            if (std::find(zo.begin(), zo.end(), in) != zo.end()) into_.push_back(in);
          }
          for (std::uint32_t b = g_.first_arc(SwitchIndex{x}); b < g_.first_arc(SwitchIndex{x + 1});
               ++b) {
            const std::uint32_t y = g_.arc(b).to.value;
            if (done_[y] != epoch_ || joined_at_[y] >= joined_at_[x] || b == outs(x).front()) {
              continue;
            }
            // Split mode: x keeps its layer, which y's path must share
            // unless y forwards straight to t.
            const std::uint32_t k = split ? path_layer_[x] : 0;
            if (split && y != t && !into_t(y) && path_layer_[y] != k) continue;
            auto dep = [&](std::uint32_t in, std::uint32_t out) {
              return split ? depend_on(split_dags_[k], split_refused_[k], k, in, out)
                           : depend(in, out);
            };
            const std::size_t mark = added.size();
            const auto yo = outs(y);
            if (std::all_of(into_.begin(), into_.end(),
                            [&](std::uint32_t in) { return dep(in, b); }) &&
                std::all_of(yo.begin(), yo.end(), [&](std::uint32_t o) { return dep(b, o); })) {
              if (split) path_layer_[m] = static_cast<std::uint8_t>(k);
              cost_[x] = cost_[y] + hop + load[b];
              num_outs_[x] = 1;
              outs_[std::size_t{x} * kMaxOut] = b;
              join(m, c, cost_[x] + hop + load[c]);
              return true;
            }
            take_back(mark);
          }
        }
        return false;
      };
      // Left-out switches drained again once one joins: its neighbours
      // may join through it.
      for (std::size_t i = 0; i < left_out_.size(); ++i) {
        const std::uint32_t m = left_out_[i];
        if (done_[m] != epoch_ && reattach(m)) drain();
      }
    }
    return reached_;
  }
  std::span<const std::uint32_t> outs(std::uint32_t s) const {
    return std::span<const std::uint32_t>(outs_).subspan(std::size_t{s} * kMaxOut, num_outs_[s]);
  }
  // grow() with a layer per branch: a switch joining the tree through a
  // neighbour of t takes the first layer of `pref` (indices into `dags`
  // and `refused`) that takes its dependencies, and every switch behind it
  // keeps that layer; the neighbours of t themselves add none (t forwards
  // to its CAs). New dependencies go to `added`, their layers to
  // `added_layer`; path_layer(s) then gives each switch's layer. A
  // left-out switch re-attaches as in grow(), on the layer of the switch
  // it joins through, never through a neighbour of t (whose children's
  // layers differ).
  std::span<const std::uint32_t> grow_split(std::uint32_t t, std::span<const std::uint64_t> load,
                                            std::uint64_t hop, std::uint64_t slack,
                                            std::span<OrderedDag> dags,
                                            std::span<RefusedDeps> refused,
                                            std::span<const std::uint32_t> pref,
                                            std::vector<Dep>& added,
                                            std::vector<std::uint8_t>& added_layer) {
    split_dags_ = dags;
    split_refused_ = refused;
    split_pref_ = pref;
    added_layer_ = &added_layer;
    path_layer_.resize(g_.num_switches(), 0);
    path_layer_[t] = static_cast<std::uint8_t>(pref.front());
    const std::span<const std::uint32_t> tree =
        grow(t, load, hop, slack, &dags[pref.front()], &refused[pref.front()], added);
    split_dags_ = {};
    split_refused_ = {};
    split_pref_ = {};
    added_layer_ = nullptr;
    return tree;
  }
  std::uint8_t path_layer(std::uint32_t s) const { return path_layer_[s]; }
  // Per-hop VLs (Routes::hop_vls): the dag's node for each channel, as the
  // VL the tree's SL takes on it (cdg_frame with VLs); empty: the channel
  // itself. Dependencies in `added` and `refused` are then nodes.
  void map_channels(std::span<const std::uint32_t> node_of) { node_of_ = node_of; }

  // How far a search for a cycle goes. A dependency that disagrees with
  // its layer's order costs a search (OrderedDag's two-way search), and a
  // refusal is always safe. Once `sample` searches longer than `scan`
  // nodes have run in full and fewer than one in `odds` of them ended in
  // an accepted dependency, searches give up at `scan` nodes (a refusal,
  // remembered as any other); every `probe`-th still runs in full, which
  // keeps the odds current, so the cap lifts again if they rise.
  // Random 2,000 switches of degree 16 (layers_bench): 1.2M of 1.8M
  // searches found a cycle, 43 nodes in on average (54M of the 55M nodes
  // scanned, a third of the engine's time); of the searches past 16 nodes
  // 1.2% ended accepted (3-4% of those sampled once the cap is on). With
  // the bet: 25M nodes scanned, 16-18 s against 20-22 s, 1.47 the bound
  // against 1.50. Random 200 of degree 8 accepts 6% of its long
  // searches, the 8x8x8 torus routed in general 10%, the dragonfly 12%:
  // no cap there, where a fixed one of 4 or 16 nodes took that torus from
  // 1.31 the bound to 5.2.
  struct SearchBet {
    std::uint32_t scan = 16;
    std::uint64_t odds = 24;
    std::uint64_t sample = 256;
    std::uint64_t probe = 16;
  };
  void set_search_bet(SearchBet bet) { bet_ = bet; }
  const SearchBet& search_bet() const { return bet_; }
  // Searches that gave up at the cap, so far.
  std::uint64_t searches_given_up() const { return given_up_; }

 private:
  OrderedDag::Add search(OrderedDag& d, std::uint32_t in, std::uint32_t out) {
    const std::uint64_t seen = long_ok_ + long_cycle_;
    const bool cap =
        seen >= bet_.sample && long_ok_ * bet_.odds < seen && ++probe_ % bet_.probe != 0;
    const OrderedDag::Add res = d.add(in, out, cap ? bet_.scan : ~0U);
    if (cap) {
      if (d.gave_up()) ++given_up_;
    } else if (d.last_scan() > bet_.scan) {
      ++(res == OrderedDag::Add::kCycle ? long_cycle_ : long_ok_);
    }
    return res;
  }
  SearchBet bet_;
  std::uint64_t long_ok_ = 0, long_cycle_ = 0, probe_ = 0, given_up_ = 0;
  std::span<const std::uint32_t> node_of_;
  std::span<OrderedDag> split_dags_;  // grow_split's
  std::span<RefusedDeps> split_refused_;
  std::span<const std::uint32_t> split_pref_;
  std::vector<std::uint8_t>* added_layer_ = nullptr;
  std::vector<std::uint8_t> path_layer_;  // by switch: grow_split's layer
  const SwitchGraph& g_;
  std::span<const std::uint32_t> rev_;
  std::vector<std::uint32_t> outs_;
  std::vector<std::uint8_t> num_outs_;
  std::vector<std::uint64_t> cost_;
  std::vector<std::uint32_t> done_;
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> reached_;
  std::vector<std::uint32_t> joined_at_;  // by switch: its place in reached_
  std::vector<std::uint32_t> left_out_;   // switches whose every channel was refused
  std::vector<std::uint32_t> into_;       // scratch: the channels into one switch

  // The Dijkstra's queue holds switches, each under its cheapest channel
  // into the tree (cost, then arc: the order a queue of channels would
  // pop them in); a switch whose channel is refused is offered its next
  // one. A 4-ary heap with positions, so a cheaper channel moves its
  // switch up in place: at most one entry per switch, where a queue of
  // channels held one per channel. An entry carries its key, which a
  // sift compares without a read per switch elsewhere (random 2,000
  // switches: the heap's sifts were a third of the Dijkstra's time).
  struct Item {
    std::uint64_t cost = 0;
    std::uint32_t arc = kNoArc;
    bool operator<(const Item& o) const { return cost != o.cost ? cost < o.cost : arc < o.arc; }
  };
  struct Entry {
    Item item;
    std::uint32_t sw = 0;
  };
  static constexpr std::uint32_t kArity = 4;
  void offer(std::uint32_t u, Item item) {
    std::uint32_t i = 0;
    if (offered_[u] != epoch_) {
      offered_[u] = epoch_;
      i = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back(Entry{item, u});
    } else {
      i = heap_pos_[u];
      if (!(item < heap_[i].item)) return;
    }
    sift_up(i, Entry{item, u});
  }
  // The cheapest channel into the tree and its switch, off the queue.
  std::pair<Item, std::uint32_t> pop() {
    const Entry top = heap_.front();
    const Entry last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
    return {top.item, top.sw};
  }
  // Places x at slot i or above it.
  void sift_up(std::uint32_t i, Entry x) {
    while (i > 0) {
      const std::uint32_t parent = (i - 1) / kArity;
      if (!(x.item < heap_[parent].item)) break;
      heap_[i] = heap_[parent];
      heap_pos_[heap_[i].sw] = i;
      i = parent;
    }
    heap_[i] = x;
    heap_pos_[x.sw] = i;
  }
  // Places x at the top slot or below it.
  void sift_down(Entry x) {
    std::uint32_t i = 0;
    const auto size = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      const std::uint32_t first = i * kArity + 1;
      if (first >= size) break;
      std::uint32_t child = first;
      for (std::uint32_t c = first + 1; c < std::min(first + kArity, size); ++c) {
        if (heap_[c].item < heap_[child].item) child = c;
      }
      if (!(heap_[child].item < x.item)) break;
      heap_[i] = heap_[child];
      heap_pos_[heap_[i].sw] = i;
      i = child;
    }
    heap_[i] = x;
    heap_pos_[x.sw] = i;
  }
  std::vector<std::uint32_t> offered_;  // epoch: in the queue (or was)
  std::vector<std::uint32_t> heap_pos_;
  std::vector<std::uint32_t> failed_;  // by arc, epoch: refused this tree
  std::vector<Entry> heap_;
};

// Switch LIDs' trees: shortest paths towards t, each switch forwarding on
// the least-indexed of its channels into a switch one hop nearer. That is
// the tree TreeGrower::grow() gives with no load, no CDG and a hop of 1
// (its queue pops by cost, then channel, and every switch one hop nearer
// joins before a switch pops), found breadth first (bfs_hops): the heap
// and the offers of the Dijkstra were most of the 0.4-0.5 s the switch
// LIDs took at 2,000 switches.
class ShortestTrees {
 public:
  ShortestTrees(const SwitchGraph& g, std::span<const std::uint32_t> rev)
      : g_(g), rev_(rev), out_(g.num_switches(), kNoArc) {}

  // The switches reaching t, t first, each after the switch it forwards
  // to; out() gives its channel.
  std::span<const std::uint32_t> grow(std::uint32_t t) {
    bfs_hops(g_, t, dist_, order_);
    for (const std::uint32_t x : order_) {
      out_[x] = kNoArc;
      if (x == t) continue;
      for (std::uint32_t a = g_.first_arc(SwitchIndex{x}); a < g_.first_arc(SwitchIndex{x + 1});
           ++a) {
        if (rev_[a] != kNoArc && dist_[g_.arc(a).to.value] + 1 == dist_[x]) {
          out_[x] = a;
          break;
        }
      }
    }
    return order_;
  }
  // Switch s's channel towards the last grow()'s t (kNoArc: t itself).
  std::uint32_t out(std::uint32_t s) const { return out_[s]; }

 private:
  const SwitchGraph& g_;
  std::span<const std::uint32_t> rev_;
  std::vector<std::uint32_t> dist_, out_, order_;
};

// Loads some routes put on channels: (channel, sources crossing it).
using ArcLoads = std::vector<std::pair<std::uint32_t, std::uint64_t>>;

// A list's loads added to the channels' `load`, or taken off; and the
// busiest of the channels a list names.
inline void add_loads(std::span<std::uint64_t> load, const ArcLoads& list) {
  for (const auto& [a, from] : list) load[a] += from;
}
inline void take_loads(std::span<std::uint64_t> load, const ArcLoads& list) {
  for (const auto& [a, from] : list) load[a] -= from;
}
inline std::uint64_t busiest_of(std::span<const std::uint64_t> load, const ArcLoads& list) {
  std::uint64_t busiest = 0;
  for (const auto& l : list) busiest = std::max(busiest, load[l.first]);
  return busiest;
}

// The pace of the hot-spot steps (kHotSpotStall): next() gives the
// busiest channel of `load` for each step, kNoArc once `steps` are taken
// or kHotSpotStall steps in a row have not taken the busiest channel's
// load down by 1/kHotSpotDrop.
class HotSpotPace {
 public:
  HotSpotPace(std::span<const std::uint64_t> load, std::uint64_t steps)
      : load_(load),
        steps_(steps),
        mark_(load.empty() ? 0 : *std::max_element(load.begin(), load.end())) {}
  std::uint32_t next() {
    if (load_.empty() || step_ >= steps_ || stalled_ >= kHotSpotStall) return kNoArc;
    const auto hot =
        static_cast<std::uint32_t>(std::max_element(load_.begin(), load_.end()) - load_.begin());
    if (load_[hot] * kHotSpotDrop < mark_ * (kHotSpotDrop - 1)) {
      mark_ = load_[hot];
      stalled_ = 0;
    }
    ++step_;
    ++stalled_;  // this step counts as stalled until a later one drops
    return hot;
  }

 private:
  std::span<const std::uint64_t> load_;
  std::uint64_t steps_, step_ = 0, stalled_ = 0, mark_;
};

// Forwarding entries LID by LID, every switch's entry for a LID side by
// side: the layered engine reads and writes a LID's whole column at a
// time (a tree placed, its loads summed, a regrown tree taken back), which
// in per-switch tables is a cache miss a switch (random 2,000 switches, 8
// CAs each: a fifth of the engine's time). lfts() builds the per-switch
// tables, a block of LIDs at a time.
class LidColumns {
 public:
  LidColumns(std::uint32_t switches, Lid max_lid)
      : n_(switches), ports_((std::size_t{max_lid.value} + 1) * switches, kDropPort) {}
  // The entries of `rows` (a table per switch; null: none, all drop) for
  // LIDs 0..max_lid.
  LidColumns(std::span<const Lft* const> rows, Lid max_lid)
      : LidColumns(static_cast<std::uint32_t>(rows.size()), max_lid) {
    for (std::uint32_t first = 0; first <= max_lid.value; first += kLftBlockSize) {
      const std::uint32_t end = std::min(first + kLftBlockSize, max_lid.value + 1);
      for (std::uint32_t s = 0; s < n_; ++s) {
        if (rows[s] == nullptr) continue;
        for (std::uint32_t lid = first; lid < end; ++lid) set(s, lid, rows[s]->get(Lid{lid}));
      }
    }
  }
  std::uint8_t get(std::uint32_t s, std::uint32_t lid) const {
    return ports_[std::size_t{lid} * n_ + s];
  }
  void set(std::uint32_t s, std::uint32_t lid, std::uint8_t port) {
    ports_[std::size_t{lid} * n_ + s] = port;
  }
  std::vector<Lft> lfts(Lid max_lid) const {
    std::vector<Lft> out(n_);
    for (Lft& lft : out) lft.resize(max_lid);
    for (std::uint32_t first = 0; first <= max_lid.value; first += kLftBlockSize) {
      const std::uint32_t end = std::min(first + kLftBlockSize, max_lid.value + 1);
      for (std::uint32_t s = 0; s < n_; ++s) {
        std::uint8_t* row = out[s].data();
        for (std::uint32_t lid = first; lid < end; ++lid) row[lid] = get(s, lid);
      }
    }
    return out;
  }

 private:
  std::uint32_t n_;
  std::vector<std::uint8_t> ports_;
};

// The loads the routes to one LID put on channels, as LidColumns hold
// them, for the layered engine's rip-up and hot-spot passes and the
// repair's hot spots. `sources`: CA/router LIDs by switch.
class LidLoads {
 public:
  LidLoads(const SwitchGraph& g, std::span<const std::uint64_t> sources,
           std::span<const std::uint32_t> rev)
      : g_(g),
        sources_(sources),
        rev_(rev),
        part_switches_(g.num_components()),
        next_arc_(g.num_switches(), kNoArc),
        walk_mark_(g.num_switches(), 0),
        carried_(g.num_switches(), 0) {
    for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
      part_switches_[g.component(SwitchIndex{s})].push_back(s);
    }
  }

  // Calls fn(arc, sources) once for every channel the routes to `lid`
  // (delivered by t) cross, with the sources whose route crosses it: each
  // switch of t's part read once and the sources summed down the tree,
  // where walking every source's route read a switch's entry once per
  // route through it (2,000 switches: a quarter of the engine's time). A
  // route that ends short of t (none do) stops there; a loop (none
  // either) is cut where it closes.
  template <class Fn>
  void for_each(const LidColumns& cols, std::uint32_t t, std::uint32_t lid, Fn&& fn) {
    epoch_ += 2;
    const std::uint32_t on_walk = epoch_, known = epoch_ + 1;
    rootward_.clear();  // every switch after the one it forwards to
    walk_mark_[t] = known;
    for (const std::uint32_t s : part_switches_[g_.component(SwitchIndex{t})]) {
      walk_.clear();
      for (std::uint32_t cur = s; walk_mark_[cur] != known;) {
        if (walk_mark_[cur] == on_walk) {
          next_arc_[walk_.back()] = kNoArc;
          break;
        }
        walk_mark_[cur] = on_walk;
        walk_.push_back(cur);
        carried_[cur] = sources_[cur];
        const std::uint32_t a = g_.arc_at_port(SwitchIndex{cur}, cols.get(cur, lid));
        next_arc_[cur] = a;
        if (a == kNoArc) break;
        cur = g_.arc(a).to.value;
      }
      for (auto it = walk_.rbegin(); it != walk_.rend(); ++it) {
        walk_mark_[*it] = known;
        rootward_.push_back(*it);
      }
    }
    for (auto it = rootward_.rbegin(); it != rootward_.rend(); ++it) {
      const std::uint32_t a = next_arc_[*it];
      if (a == kNoArc || carried_[*it] == 0) continue;
      fn(a, carried_[*it]);
      carried_[g_.arc(a).to.value] += carried_[*it];
    }
  }

  // The sources whose route to `lid` crosses channel `a`: the switches
  // that forward `lid` into a's tail, found back from it (a few, but for a
  // destination's last hops), where for_each reads every switch (the
  // hot-spot steps, which ask this of a thousand LIDs a step at 2,000
  // switches, took most of their time so).
  std::uint64_t on(const LidColumns& cols, std::uint32_t a, std::uint32_t lid) {
    const std::uint32_t x = g_.arc_source(a).value;
    if (cols.get(x, lid) != g_.arc(a).local_port) return 0;
    epoch_ += 2;
    walk_mark_[x] = epoch_;
    walk_.assign(1, x);
    std::uint64_t from = sources_[x];
    for (std::size_t head = 0; head < walk_.size(); ++head) {
      const std::uint32_t z = walk_[head];
      for (std::uint32_t o = g_.first_arc(SwitchIndex{z}); o < g_.first_arc(SwitchIndex{z + 1});
           ++o) {
        const std::uint32_t w = g_.arc(o).to.value, in = rev_[o];
        if (in == kNoArc || walk_mark_[w] == epoch_ || cols.get(w, lid) != g_.arc(in).local_port) {
          continue;
        }
        walk_mark_[w] = epoch_;
        walk_.push_back(w);
        from += sources_[w];
      }
    }
    return from;
  }

 private:
  const SwitchGraph& g_;
  std::span<const std::uint64_t> sources_;
  std::span<const std::uint32_t> rev_;
  std::vector<std::vector<std::uint32_t>> part_switches_;
  std::vector<std::uint32_t> next_arc_, walk_mark_, walk_, rootward_;
  std::vector<std::uint64_t> carried_;
  std::uint32_t epoch_ = 0;
};

// Routes `lid`, delivered by tree.front() (t), along `tree` (the switches
// grower.grow() returned, with their channels in grower.outs()): each
// switch takes the channel whose load plus the load of the channel after
// it is least, and every channel gains the sources whose route crosses it
// (appended to `placed`, when given, for each channel some route crosses).
// `pick` and `subtree` are scratch by switch.
// `table` takes the entries.
inline void place_lid(const SwitchGraph& g, const TreeGrower& grower,
                      std::span<const std::uint32_t> tree, std::uint32_t lid,
                      std::span<const std::uint64_t> sources, std::span<std::uint64_t> load,
                      std::vector<std::uint32_t>& pick, std::vector<std::uint64_t>& subtree,
                      LidColumns& table, ArcLoads* placed = nullptr) {
  const std::uint32_t t = tree.front();
  for (const std::uint32_t s : tree) {
    subtree[s] = sources[s];
    if (s == t) continue;
    std::uint32_t best = kNoArc;
    std::uint64_t best_load = 0;
    for (const std::uint32_t a : grower.outs(s)) {
      const std::uint32_t w = g.arc(a).to.value;
      const std::uint64_t l = load[a] + (w == t ? 0 : load[pick[w]]);
      if (best == kNoArc || l < best_load) {
        best = a;
        best_load = l;
      }
    }
    pick[s] = best;
  }
  for (auto it = tree.rbegin(); it != tree.rend(); ++it) {
    const std::uint32_t s = *it;
    if (s == t) {
      table.set(s, lid, g.attachment(Lid{lid}).port);
      continue;
    }
    const std::uint32_t a = pick[s];
    table.set(s, lid, g.arc(a).local_port);
    load[a] += subtree[s];
    if (placed != nullptr && subtree[s] != 0) placed->emplace_back(a, subtree[s]);
    subtree[g.arc(a).to.value] += subtree[s];
  }
}

// LFT entries of CA/router LIDs per channel (switch-to-switch arc): the
// busiest and the mean over the arcs (Routes::load), from `table`.
inline LinkLoad entry_load(const SwitchGraph& g, const LidColumns& table) {
  std::vector<std::uint64_t> entries(g.num_arcs(), 0);
  for (std::uint32_t lid = 1; lid <= g.max_lid().value; ++lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable() || att.port == 0) continue;
    for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
      const std::uint32_t a = g.arc_at_port(SwitchIndex{s}, table.get(s, lid));
      if (a != kNoArc) ++entries[a];
    }
  }
  LinkLoad load;
  std::uint64_t total = 0;
  for (const std::uint64_t e : entries) {
    total += e;
    load.max_routes = std::max(load.max_routes, e);
  }
  load.links = g.num_arcs();
  load.mean_routes =
      entries.empty() ? 0.0 : static_cast<double>(total) / static_cast<double>(entries.size());
  return load;
}

}  // namespace subnetd::routing

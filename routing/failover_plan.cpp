#include "routing/failover_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "routing/arrival_layers.hpp"
#include "routing/cdg.hpp"
#include "routing/engines/tree_grower.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kCappedScan = 4;

struct MaskHash {
  std::size_t operator()(const PortMask& m) const {
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (std::uint64_t w : m.words()) h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

bool test_bit(const std::uint64_t* row, std::uint32_t i) {
  return (row[i / 64] >> (i % 64)) & 1U;
}

// One switch's groups while they are numbered.
class GroupTable {
 public:
  GroupTable() { masks_.emplace_back(); }  // id 0: none
  // The id of `m` (numbering it if there is room), and whether it had to be
  // narrowed to a smaller group.
  std::pair<std::uint8_t, bool> id_of(const PortMask& m) {
    if (!masks_.empty() && m == masks_[last_]) return {static_cast<std::uint8_t>(last_), false};
    if (auto it = ids_.find(m); it != ids_.end()) {
      last_ = it->second;
      return {it->second, false};
    }
    if (masks_.size() <= FailoverPlan::kMaxGroups) {
      const auto id = static_cast<std::uint8_t>(masks_.size());
      masks_.push_back(m);
      ids_.emplace(m, id);
      last_ = id;
      return {id, false};
    }
    std::uint8_t best = 0;
    unsigned best_count = 1;
    for (std::size_t i = 1; i < masks_.size(); ++i) {
      const unsigned c = masks_[i].count();
      if (c > best_count && masks_[i].subset_of(m)) {
        best = static_cast<std::uint8_t>(i);
        best_count = c;
      }
    }
    return {best, true};
  }
  std::vector<PortMask>& masks() { return masks_; }

 private:
  std::vector<PortMask> masks_;
  std::unordered_map<PortMask, std::uint8_t, MaskHash> ids_;
  std::size_t last_ = 0;
};

}  // namespace

Result<FailoverPlan> FailoverPlan::build(const Topology& topo, const LidMap& lids,
                                         const Routes& routes, WorkerPool& pool,
                                         std::stop_token stop, std::uint64_t search_work) {
  const auto t0 = Clock::now();
  const auto n = static_cast<std::uint32_t>(topo.num_switches());
  if (routes.layered_without_order()) {
    return build_layered(topo, lids, routes, pool, stop, search_work);
  }
  if (!routes.path_layers.empty()) {
    return Error{Errc::kUnsupported,
                 fmt::format("routes of engine {} give layers per source but no layer per LID; "
                             "fast failover plans layers per source only beside one",
                             routes.engine)};
  }
  if (routes.updown_rank.empty()) {
    return Error{Errc::kUnsupported,
                 fmt::format("routes of engine {} carry neither an up/down order nor layers; fast "
                             "failover groups need one (ftree, updn, layered)",
                             routes.engine)};
  }
  if (routes.updown_rank.size() != n || routes.lfts.size() != n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("routes of engine {} are for {} switches, the fabric has {}",
                             routes.engine, routes.lfts.size(), n)};
  }
  auto built = SwitchGraph::build(topo, lids);
  if (!built.ok()) return built.error();
  const SwitchGraph& g = *built;

  auto before = [&](std::uint32_t a, std::uint32_t b) {
    const std::uint32_t ra = routes.updown_rank[a];
    const std::uint32_t rb = routes.updown_rank[b];
    if (ra != rb) return ra < rb;
    return topo.node(topo.switch_node(SwitchIndex{a})).guid.value <
           topo.node(topo.switch_node(SwitchIndex{b})).guid.value;
  };
  std::vector<std::uint8_t> up(g.num_arcs(), 0);
  for (std::uint32_t a = 0; a < g.num_arcs(); ++a) {
    up[a] = before(g.arc(a).to.value, g.arc_source(a).value) ? 1 : 0;
  }
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0U);
  std::sort(order.begin(), order.end(), before);

  // Closures, bit t of row s: down_ok (s reaches t going only down) from the
  // bottom of the order up, then legal (some up*down* route) from the top
  // down. Independent per word of the rows: word ranges run in parallel.
  const std::uint32_t words = (n + 63) / 64;
  std::vector<std::uint64_t> down_ok(std::size_t{n} * words, 0);
  std::vector<std::uint64_t> legal(std::size_t{n} * words, 0);
  const std::size_t chunks =
      std::max<std::size_t>(1, std::min<std::size_t>(words, std::size_t{pool.size()} * 4));
  pool.parallel_for(chunks, 1, [&](std::size_t cb, std::size_t ce, unsigned) {
    for (std::size_t c = cb; c < ce; ++c) {
      const auto w0 = static_cast<std::uint32_t>(c * words / chunks);
      const auto w1 = static_cast<std::uint32_t>((c + 1) * words / chunks);
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const std::uint32_t s = *it;
        std::uint64_t* row = &down_ok[std::size_t{s} * words];
        if (s / 64 >= w0 && s / 64 < w1) row[s / 64] |= std::uint64_t{1} << (s % 64);
        for (std::uint32_t a = g.first_arc(SwitchIndex{s}); a < g.first_arc(SwitchIndex{s + 1});
             ++a) {
          if (up[a] != 0) continue;
          const std::uint64_t* src = &down_ok[std::size_t{g.arc(a).to.value} * words];
          for (std::uint32_t w = w0; w < w1; ++w) row[w] |= src[w];
        }
      }
      for (const std::uint32_t s : order) {
        std::uint64_t* row = &legal[std::size_t{s} * words];
        const std::uint64_t* own = &down_ok[std::size_t{s} * words];
        for (std::uint32_t w = w0; w < w1; ++w) row[w] = own[w];
        for (std::uint32_t a = g.first_arc(SwitchIndex{s}); a < g.first_arc(SwitchIndex{s + 1});
             ++a) {
          if (up[a] == 0) continue;
          const std::uint64_t* src = &legal[std::size_t{g.arc(a).to.value} * words];
          for (std::uint32_t w = w0; w < w1; ++w) row[w] |= src[w];
        }
      }
    }
  });
  if (stop.stop_requested()) return Error{Errc::kCancelled, "failover plan cancelled"};

  FailoverPlan plan;
  plan.n_ = n;
  const std::span<const LidAttachment> attach = g.attachments();
  plan.home_.resize(attach.size());
  std::vector<std::uint8_t> is_dest(n, 0);
  for (std::size_t l = 0; l < attach.size(); ++l) {
    plan.home_[l] = l == 0 ? kNoSwitch.value : attach[l].sw.value;
    if (l != 0 && attach[l].routable()) is_dest[attach[l].sw.value] = 1;
  }
  std::vector<std::uint32_t> dests;
  for (std::uint32_t t = 0; t < n; ++t) {
    if (is_dest[t] != 0) dests.push_back(t);
  }

  // "descends": bit t of row s is set when some entry of s for one of t's
  // CA/router LIDs climbs (then no group may send t down into s).
  std::vector<std::uint64_t> climbs(std::size_t{n} * words, 0);
  const auto lid_end = static_cast<std::uint32_t>(attach.size());
  pool.parallel_for(n, 16, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t si = b; si < e; ++si) {
      const SwitchIndex s{static_cast<std::uint32_t>(si)};
      const Lft& lft = routes.lfts[si];
      const std::uint8_t* row = lft.data();
      const std::uint32_t end = std::min(lid_end, lft.size());
      std::uint64_t* out = &climbs[si * words];
      for (std::uint32_t l = 1; l < end; ++l) {
        const LidAttachment& at = attach[l];
        if (at.port == 0 || !at.routable() || at.sw == s) continue;
        const std::uint32_t a = g.arc_at_port(s, row[l]);
        if (a != kNoArc && up[a] != 0) {
          out[at.sw.value / 64] |= std::uint64_t{1} << (at.sw.value % 64);
        }
      }
    }
  });
  if (stop.stop_requested()) return Error{Errc::kCancelled, "failover plan cancelled"};

  // Groups, switch by switch.
  plan.gid_.assign(std::size_t{n} * n, 0);
  std::vector<std::vector<PortMask>> per_switch(n);
  std::atomic<std::uint64_t> grouped{0}, alternative{0}, narrowed{0};
  pool.parallel_for(n, 8, [&](std::size_t b, std::size_t e, unsigned) {
    std::vector<PortMask> mask(n);
    std::uint64_t my_grouped = 0, my_alt = 0, my_narrowed = 0;
    for (std::size_t si = b; si < e && !stop.stop_requested(); ++si) {
      const SwitchIndex s{static_cast<std::uint32_t>(si)};
      std::fill(mask.begin(), mask.end(), PortMask{});
      const std::uint64_t* dok = &down_ok[si * words];
      const std::uint64_t* leg = &legal[si * words];
      const std::uint64_t* my_climbs = &climbs[si * words];
      // Legal next hops, one arc at a time over word-wide sets of destinations.
      for (std::uint32_t a = g.first_arc(s); a < g.first_arc(SwitchIndex{s.value + 1}); ++a) {
        const std::uint32_t m = g.arc(a).to.value;
        const PortNum p = g.arc(a).local_port;
        const std::uint64_t* mdok = &down_ok[std::size_t{m} * words];
        const std::uint64_t* mclimb = &climbs[std::size_t{m} * words];
        const std::uint64_t* mleg = &legal[std::size_t{m} * words];
        for (std::uint32_t w = 0; w < words; ++w) {
          std::uint64_t hit;
          if (up[a] == 0) {
            hit = dok[w] & mdok[w] & ~mclimb[w];
            if (m / 64 == w) hit |= dok[w] & (std::uint64_t{1} << (m % 64));
          } else {
            // Up-links where s does not reach t going down, and also where
            // it does but its own entries already climb for t: then no
            // neighbour above sends t down into s (the engine's promise,
            // and no group above names s: it does not descend), so what
            // s forwards for t came from below and may climb.
            hit = leg[w] & (~dok[w] | my_climbs[w]) & mleg[w];
          }
          for (; hit != 0; hit &= hit - 1) {
            mask[w * 64 + static_cast<std::uint32_t>(std::countr_zero(hit))].set(p);
          }
        }
      }
      // The switch's own entries for CA/router LIDs of destinations it has
      // an up*down* route to.
      const Lft& lft = routes.lfts[si];
      const std::uint8_t* row = lft.data();
      const std::uint32_t end = std::min(lid_end, lft.size());
      for (std::uint32_t l = 1; l < end; ++l) {
        const LidAttachment& at = attach[l];
        if (at.port == 0 || !at.routable() || at.sw == s || !test_bit(leg, at.sw.value)) continue;
        if (g.arc_at_port(s, row[l]) != kNoArc) mask[at.sw.value].set(row[l]);
      }
      GroupTable table;
      std::uint8_t* gid_row = &plan.gid_[si * n];
      for (const std::uint32_t t : dests) {
        if (t == s.value || mask[t].none()) continue;
        const auto [id, narrow] = table.id_of(mask[t]);
        gid_row[t] = id;
        if (id != 0) {
          ++my_grouped;
          if (table.masks()[id].count() >= 2) ++my_alt;
        }
        if (narrow) ++my_narrowed;
      }
      per_switch[si] = std::move(table.masks());
    }
    grouped += my_grouped;
    alternative += my_alt;
    narrowed += my_narrowed;
  });
  if (stop.stop_requested()) return Error{Errc::kCancelled, "failover plan cancelled"};

  plan.classes_ = n;
  plan.class_switch_.resize(n);
  std::iota(plan.class_switch_.begin(), plan.class_switch_.end(), 0U);
  plan.class_layer_.assign(n, 0);
  plan.lid_class_.resize(plan.home_.size());
  for (std::size_t l = 0; l < plan.home_.size(); ++l) {
    plan.lid_class_[l] = plan.home_[l] == kNoSwitch.value ? kNoClass : plan.home_[l];
  }
  plan.finish(g, std::move(per_switch));
  plan.stats_.destinations = static_cast<std::uint32_t>(dests.size());
  plan.stats_.classes = static_cast<std::uint32_t>(dests.size());
  plan.stats_.pairs_grouped = grouped.load();
  plan.stats_.pairs_with_alternative = alternative.load();
  plan.stats_.pairs_narrowed = narrowed.load();
  plan.stats_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return plan;
}

Result<FailoverPlan> FailoverPlan::build_layered(const Topology& topo, const LidMap& lids,
                                                 const Routes& routes, WorkerPool& pool,
                                                 std::stop_token stop, std::uint64_t search_work) {
  const auto t0 = Clock::now();
  const auto n = static_cast<std::uint32_t>(topo.num_switches());
  // Per-hop VLs (Routes::hop_vls): a class is a switch's LIDs on one SL,
  // and the layers' graphs are one over (channel, VL) nodes, a channel's
  // VL for the class the SL2VL of the port it leaves by.
  const bool per_hop = routes.per_hop_vls();
  if (per_hop && routes.hop_vls.size() != n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("routes of engine {} give per-hop VLs for {} switches, the fabric "
                             "has {}",
                             routes.engine, routes.hop_vls.size(), n)};
  }
  if (per_hop && !routes.path_layers.empty()) {
    return Error{Errc::kUnsupported,
                 fmt::format("routes of engine {} give per-hop VLs and layers per source; fast "
                             "failover plans one or the other",
                             routes.engine)};
  }
  if (routes.lfts.size() != n || (!routes.vl0_rank.empty() && routes.vl0_rank.size() != n)) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("routes of engine {} are for {} switches (multicast order for {}), "
                             "the fabric has {}",
                             routes.engine, routes.lfts.size(), routes.vl0_rank.size(), n)};
  }
  auto built = SwitchGraph::build(topo, lids);
  if (!built.ok()) return built.error();
  const SwitchGraph& g = *built;
  const std::uint32_t arcs = g.num_arcs();
  const std::uint8_t layers = routes.num_vls;
  const std::uint32_t slots = per_hop ? kNumSls : layers;  // what a LID's layer names
  const std::span<const LidAttachment> attach = g.attachments();

  // Classes: (switch, layer) pairs that deliver some CA/router LID (per
  // hop: (switch, SL)).
  FailoverPlan plan;
  plan.n_ = n;
  plan.layers_ = layers;
  plan.home_.resize(attach.size());
  plan.lid_class_.assign(attach.size(), kNoClass);
  std::vector<std::uint32_t> class_of(std::size_t{n} * slots, kNoClass);
  std::vector<std::uint8_t> is_dest(n, 0);
  for (std::size_t l = 0; l < attach.size(); ++l) {
    plan.home_[l] = l == 0 ? kNoSwitch.value : attach[l].sw.value;
    if (l == 0 || !attach[l].routable() || attach[l].port == 0) continue;
    const std::uint8_t k = routes.layer(Lid{static_cast<std::uint32_t>(l)});
    if (k >= slots) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("routes of engine {} put LID {:#x} on {} {} of {}", routes.engine, l,
                               per_hop ? "SL" : "layer", k, slots)};
    }
    is_dest[attach[l].sw.value] = 1;
    if (l < routes.path_layers.size() && !routes.path_layers[l].empty()) {
      // Its layer depends on the source: its classes are those of the
      // layers its traffic is on (below), which need not include its own.
      plan.lid_class_[l] = kPerSwitch;  // its row is set below
      continue;
    }
    std::uint32_t& c = class_of[std::size_t{attach[l].sw.value} * slots + k];
    if (c == kNoClass) {
      c = plan.classes_++;
      plan.class_switch_.push_back(attach[l].sw.value);
      plan.class_layer_.push_back(k);
    }
    plan.lid_class_[l] = c;
  }
  // The arc of switch x's entry for `lid` (kNoArc: it delivers or drops).
  auto entry_arc = [&](std::uint32_t x, std::uint32_t lid) {
    return g.arc_at_port(SwitchIndex{x}, routes.lfts[x].get(Lid{lid}));
  };
  // LIDs whose layer depends on the source (Routes::path_layers): by
  // switch, the layers their traffic is on there (arrival_layers.hpp). A
  // LID is in class (t, k) at the switches that carry layer k; it takes
  // that class's group where k is all they carry, and a group of its
  // entry alone where branches on several layers meet (a dead entry then
  // strands the switch, whose neighbours turn away: no detour mixes the
  // layers).
  std::vector<std::uint32_t> split_lids;  // by row
  std::vector<LayerSet> carried;          // row * n + switch
  std::vector<LayerSet> row_layers;       // by row: every layer some switch carries
  if (!routes.path_layers.empty()) {
    std::vector<LayerSet> sets;
    std::vector<std::uint32_t> scratch;
    for (std::size_t l = 1; l < attach.size() && l < routes.path_layers.size(); ++l) {
      if (plan.lid_class_[l] != kPerSwitch) continue;  // one layer, or not routed
      const Lid lid{static_cast<std::uint32_t>(l)};
      const std::uint32_t t = attach[l].sw.value;
      for (std::uint32_t x = 0; x < n; ++x) {
        if (routes.path_layer(x, lid) >= layers) {
          return Error{Errc::kInvalidArgument,
                       fmt::format("routes of engine {} send LID {:#x} from {} on layer {} of {}",
                                   routes.engine, l, topo.switch_label(SwitchIndex{x}),
                                   routes.path_layer(x, lid), layers)};
        }
      }
      if (!arrival_layers(
              g, t, [&](std::uint32_t x) { return entry_arc(x, lid.value); },
              [&](std::uint32_t x) { return routes.path_layer(x, lid); }, sets, scratch)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("routes of engine {} loop for LID {:#x}", routes.engine, l)};
      }
      plan.lid_class_[l] = kPerSwitch | static_cast<std::uint32_t>(split_lids.size());
      split_lids.push_back(lid.value);
      carried.insert(carried.end(), sets.begin(), sets.end());
      // Its classes: (t, k) for every layer some switch carries.
      LayerSet all = 0;
      for (const LayerSet x : sets) all |= x;
      row_layers.push_back(all);
      for (std::uint32_t k = 0; k < layers; ++k) {
        std::uint32_t& c = class_of[std::size_t{t} * slots + k];
        if ((all & layer_bit(k)) == 0 || c != kNoClass) continue;
        c = plan.classes_++;
        plan.class_switch_.push_back(t);
        plan.class_layer_.push_back(static_cast<std::uint8_t>(k));
      }
    }
  }
  const std::uint32_t classes = plan.classes_;
  // By class, its LIDs; a LID whose layer depends on the source is in
  // every class of its switch on a layer some switch carries it on.
  auto split_row = [&](std::uint32_t c) {
    return c != kNoClass && (c & kPerSwitch) != 0 ? c & ~kPerSwitch : kNoClass;
  };
  std::vector<std::uint32_t> lid_first(std::size_t{classes} + 1, 0), lid_list;
  auto for_each_class = [&](std::size_t l, auto&& fn) {
    const std::uint32_t c = plan.lid_class_[l];
    if (c == kNoClass) return;
    const std::uint32_t row = split_row(c);
    if (row == kNoClass) return fn(c);
    for (std::uint32_t k = 0; k < layers; ++k) {
      if ((row_layers[row] & layer_bit(k)) != 0) {
        fn(class_of[std::size_t{attach[l].sw.value} * slots + k]);
      }
    }
  };
  for (std::size_t l = 0; l < attach.size(); ++l) {
    for_each_class(l, [&](std::uint32_t c) { ++lid_first[c + 1]; });
  }
  for (std::uint32_t c = 0; c < classes; ++c) lid_first[c + 1] += lid_first[c];
  lid_list.resize(lid_first[classes]);
  {
    std::vector<std::uint32_t> fill(lid_first.begin(), lid_first.end() - 1);
    for (std::size_t l = 0; l < attach.size(); ++l) {
      for_each_class(l,
                     [&](std::uint32_t c) { lid_list[fill[c]++] = static_cast<std::uint32_t>(l); });
    }
  }
  // Whether switch x carries class c's traffic to `lid` (a LID of c).
  auto carries = [&](std::uint32_t c, std::uint32_t lid, std::uint32_t x) {
    const std::uint32_t row = split_row(plan.lid_class_[lid]);
    return row == kNoClass ||
           (carried[std::size_t{row} * n + x] & layer_bit(plan.class_layer_[c])) != 0;
  };
  // By destination switch, the rows of its LIDs whose layer depends on
  // the source.
  std::vector<std::vector<std::uint32_t>> split_rows_of(split_lids.empty() ? 0 : n);
  for (std::uint32_t row = 0; row < split_lids.size(); ++row) {
    split_rows_of[attach[split_lids[row]].sw.value].push_back(row);
  }

  // The VL class c's traffic takes on channel a: its layer's, or per hop
  // the SL2VL of the port a leaves by (kDropVl and beyond: none).
  const std::uint32_t vls = layers;
  auto vl_on = [&](std::uint32_t c, std::uint32_t a) -> std::uint32_t {
    return per_hop ? routes.hop_vl(g.arc_source(a).value, g.arc(a).local_port, plan.class_layer_[c])
                   : plan.class_layer_[c];
  };
  // Each layer's CDG as the routes stand, LID by LID: a block of channels'
  // out-port sets per layer, or per hop per (VL in, VL out), as the
  // verifier keeps them.
  const std::size_t layer_words = std::size_t{arcs} * kCdgDepWords;
  const std::uint32_t blocks = per_hop ? vls * vls : vls;
  std::vector<std::vector<std::uint64_t>> slot_deps(pool.size());
  std::atomic<std::uint32_t> dropped{kNoArc};  // a channel whose VL is none
  pool.parallel_for(classes, 4, [&](std::size_t b, std::size_t e, unsigned slot) {
    std::vector<std::uint64_t>& dep = slot_deps[slot];
    if (dep.empty()) dep.assign(layer_words * blocks, 0);
    for (std::size_t ci = b; ci < e && !stop.stop_requested(); ++ci) {
      const auto c = static_cast<std::uint32_t>(ci);
      const std::uint32_t t = plan.class_switch_[c];
      const std::uint32_t part = g.component(SwitchIndex{t});
      for (std::uint32_t i = lid_first[c]; i < lid_first[c + 1]; ++i) {
        const std::uint32_t lid = lid_list[i];
        for (std::uint32_t x = 0; x < n; ++x) {
          if (x == t || g.component(SwitchIndex{x}) != part || !carries(c, lid, x)) continue;
          const std::uint32_t a = entry_arc(x, lid);
          if (a == kNoArc || g.arc(a).to.value == t) continue;
          const std::uint32_t o = entry_arc(g.arc(a).to.value, lid);
          if (o == kNoArc) continue;
          const std::uint32_t v1 = vl_on(c, a), v2 = vl_on(c, o);
          if (v1 >= vls || v2 >= vls) {
            dropped = v1 >= vls ? a : o;
            continue;
          }
          const std::uint32_t block = per_hop ? v1 * vls + v2 : v1;
          const PortNum p = g.arc(o).local_port;
          dep[layer_words * block + std::size_t{a} * kCdgDepWords + p / 64] |= std::uint64_t{1}
                                                                               << (p % 64);
        }
      }
    }
  });
  if (stop.stop_requested()) return Error{Errc::kCancelled, "failover plan cancelled"};
  if (const std::uint32_t a = dropped.load(); a != kNoArc) {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("routes of engine {} send traffic out of {}[{}] on a VL that its "
                    "SL2VL drops or the routes do not use",
                    routes.engine, topo.switch_label(g.arc_source(a)), g.arc(a).local_port)};
  }
  std::vector<std::uint64_t> deps(layer_words * blocks, 0);
  for (const auto& d : slot_deps) {
    for (std::size_t i = 0; i < d.size(); ++i) deps[i] |= d[i];
  }
  slot_deps.clear();
  if (!routes.vl0_rank.empty()) {  // multicast's dependencies on VL 0
    const std::vector<std::uint32_t> rev = reverse_arcs(g);
    for_each_updown_dep(g, routes.vl0_rank, rev, [&](std::uint32_t in, std::uint32_t out) {
      const PortNum p = g.arc(out).local_port;
      deps[std::size_t{in} * kCdgDepWords + p / 64] |= std::uint64_t{1} << (p % 64);
    });
  }
  // Groups, class by class, in each layer's CDG kept acyclic online
  // (OrderedDag, from a topological order of the routes' own dependencies,
  // which it holds): a channel s->w joins s's group for the class when the
  // dependencies it adds keep the layer acyclic: from every channel the
  // class may arrive at s by (entries and groups of s's neighbours), and
  // into every channel w may send it on (w's entries and group). The
  // switch's own entries are tried like any other channel (another LID of
  // the class may take them), nearest the class's switch first.
  // Per hop, one graph over (channel, VL) nodes, channel a on VL v node
  // a * vls + v (cdg_frame), a block's dependencies changing VL.
  std::vector<OrderedDag> dags;
  const std::uint32_t num_dags = per_hop ? 1 : vls;
  dags.reserve(num_dags);
  const std::shared_ptr<const DagFrame> frame = per_hop ? cdg_frame(g, vls) : cdg_frame(g);
  for (std::uint32_t k = 0; k < num_dags; ++k) {
    auto for_block = [&](std::uint32_t block, std::uint32_t a, std::uint32_t to_vl, auto&& fn) {
      const std::uint64_t* dep = &deps[layer_words * block + std::size_t{a} * kCdgDepWords];
      for (std::uint32_t i = 0; i < kCdgDepWords; ++i) {
        for (std::uint64_t w = dep[i]; w != 0; w &= w - 1) {
          const auto p = static_cast<PortNum>(i * 64 + std::countr_zero(w));
          fn(g.arc_at_port(g.arc(a).to, p) * (per_hop ? vls : 1) + to_vl);
        }
      }
    };
    auto for_deps = [&](std::uint32_t x, auto&& fn) {
      if (!per_hop) return for_block(k, x, 0, fn);
      for (std::uint32_t v2 = 0; v2 < vls; ++v2) for_block((x % vls) * vls + v2, x / vls, v2, fn);
    };
    std::optional<OrderedDag> dag = ordered_cdg(frame, for_deps);
    if (!dag) {
      return Error{Errc::kCdgCycle,
                   per_hop ? fmt::format("routes of engine {}: their dependencies across the VLs "
                                         "close a cycle; no failover groups",
                                         routes.engine)
                           : fmt::format("routes of engine {}: the dependencies of layer {} close "
                                         "a cycle; no failover groups",
                                         routes.engine, k)};
    }
    dags.push_back(std::move(*dag));
  }
  deps.clear();
  deps.shrink_to_fit();
  const std::vector<std::uint32_t> rev = reverse_arcs(g);
  plan.gid_.assign(std::size_t{n} * classes, 0);
  std::vector<GroupTable> tables(n);
  std::vector<PortMask> h(n);  // entries and group: every port the class may leave by
  std::vector<PortMask> grp(n);
  std::vector<std::uint32_t> order, dist(n), cand;
  std::vector<Dep> added;
  // Searches for a new order cost up to the layer's size each: beyond
  // kSearchWork (classes x switches x ports) a channel joins only where its
  // dependencies agree with the order as it stands. Random graphs of
  // degree 16, 8 CAs per switch (failover_bench): 600 switches (737
  // classes x 9,600 channels, 2^22.8) plan in 3.3-3.9 s with searches and
  // leave 64,811 (switch, destination) pairs to the SM, 0.9 s and 78,853
  // without; 1,000 switches (1,150 x 16,000, 2^24.1) 13.7 s and 226,361
  // with, 2.0 s and 253,381 without (66 s with searches before the
  // two-way ordered search); 2,000 (2^26.05) 9.4 s without. (At 2^26,
  // set when 1,000 was thought to be 2^27, random 1,000 searched.)
  // Per-hop plans (dateline tori) past it still search, but give up past
  // kCappedScan nodes (a refusal is always safe); nine in ten searches
  // that find a new order scan four nodes or fewer. Pairs a single link
  // failure leaves to the SM, summed over every link (with the channel
  // order below): torus 12x12x12 14,063,694 -> 7,818,634 (plan 2.4 ->
  // 4.0-5.6 s), 16x16x16 110.5 M -> 58.5 M (20 -> 34 s). On random graphs
  // it gained less for the time (random 1,000: 254,415 -> 229,505, 2.2
  // -> 5.5 s; 2,000: 4% fewer, 11.7 -> 22.3 s), so they keep to the
  // order.
  const bool search = std::uint64_t{classes} * arcs <= search_work;
  const std::uint32_t max_scan = search ? ~0U : per_hop ? kCappedScan : 0;
  // Where the plan searches (whole or capped), channels that add the
  // fewest new dependencies go first (below).
  const bool fewest = max_scan != 0;
  std::vector<std::uint32_t> new_deps(fewest ? arcs : 0);  // by channel, for one switch
  // Two ports a group at most: the class's entry and the nearest channel
  // that fits (or two entries). Every class's group adds dependencies to a
  // layer the engine left dense, so small groups leave room for the next
  // classes' alternatives: unbounded groups left more pairs to the SM
  // (failover_bench, 1,000 link failures, (source, LID) pairs unreachable:
  // random 200 136,048 against 97,676, dragonfly g=16 10,905 against 7,174;
  // three ports 120,029 and 9,280), and on random 1,000 numbered more
  // distinct sets than a switch's 255 ids (532,068 of 944,152 pairs
  // narrowed). Two ports of d give at most d + d(d-1)/2 sets: 136 at
  // degree 16.
  constexpr unsigned max_ports = 2;
  std::uint64_t grouped = 0, alternative = 0, narrowed = 0;
  for (std::uint32_t c = 0; c < classes; ++c) {
    if ((c & 15U) == 0 && stop.stop_requested()) {
      return Error{Errc::kCancelled, "failover plan cancelled"};
    }
    const std::uint32_t t = plan.class_switch_[c];
    const std::uint32_t part = g.component(SwitchIndex{t});
    OrderedDag& dag = dags[per_hop ? 0 : plan.class_layer_[c]];
    // The dag's node of channel a for this class (kNoArc: a VL none takes).
    auto node = [&](std::uint32_t a) -> std::uint32_t {
      if (!per_hop) return a;
      const std::uint32_t v = vl_on(c, a);
      return v < vls ? a * vls + v : kNoArc;
    };
    std::fill(h.begin(), h.end(), PortMask{});
    std::fill(grp.begin(), grp.end(), PortMask{});
    for (std::uint32_t x = 0; x < n; ++x) {
      if (x == t || g.component(SwitchIndex{x}) != part) continue;
      for (std::uint32_t i = lid_first[c]; i < lid_first[c + 1]; ++i) {
        if (!carries(c, lid_list[i], x)) continue;
        const std::uint32_t a = entry_arc(x, lid_list[i]);
        if (a != kNoArc) h[x].set(g.arc(a).local_port);
      }
    }
    bfs_hops(g, t, dist, order);  // nearest the class's switch first: where its traffic converges
    // Calls fn(u, v) for the dag's nodes of each dependency channel a
    // (s->w) brings the class: from every channel the class may arrive at
    // s by, into every channel w may send it on; stops at the first fn
    // that returns false, or a channel on a VL none takes (false).
    auto for_each_dep = [&](std::uint32_t s, std::uint32_t a, auto&& fn) {
      auto one = [&](std::uint32_t in, std::uint32_t out) {
        const std::uint32_t u = node(in), v = node(out);
        return u != kNoArc && v != kNoArc && fn(u, v);
      };
      bool ok = true;
      for (std::uint32_t o = g.first_arc(SwitchIndex{s}); ok && o < g.first_arc(SwitchIndex{s + 1});
           ++o) {
        const std::uint32_t in = rev[o];  // from o's neighbour into s
        if (in != kNoArc && h[g.arc(o).to.value].test(g.arc(in).local_port)) ok = one(in, a);
      }
      const std::uint32_t w = g.arc(a).to.value;
      if (ok && w != t) {
        h[w].for_each([&](PortNum p) {
          if (ok) ok = one(a, g.arc_at_port(SwitchIndex{w}, p));
        });
      }
      return ok;
    };
    // Takes channel a (s->w) into the layer for the class, or nothing.
    auto take = [&](std::uint32_t s, std::uint32_t a) {
      added.clear();
      const bool ok = for_each_dep(s, a, [&](std::uint32_t u, std::uint32_t v) {
        if (max_scan == 0 && dag.position(u) > dag.position(v) && !dag.contains(u, v)) {
          return false;
        }
        const OrderedDag::Add r = dag.add(u, v, max_scan);
        if (r == OrderedDag::Add::kNew) added.emplace_back(u, v);
        return r != OrderedDag::Add::kCycle;
      });
      if (!ok) dag.undo(added);
      return ok;
    };
    // The dependencies take(s, a) would add that the layer lacks (kNoArc:
    // a VL none takes).
    auto new_deps_of = [&](std::uint32_t s, std::uint32_t a) {
      std::uint32_t count = 0;
      const bool ok = for_each_dep(s, a, [&](std::uint32_t u, std::uint32_t v) {
        if (!dag.contains(u, v)) ++count;
        return true;
      });
      return ok ? count : kNoArc;
    };
    // A channel s->w may join the group only if every LID that takes
    // the group at s (on this class's layer alone there) finds its layer
    // carried at w, where the LID's entry and group then hold it.
    const LayerSet bit = layer_bit(plan.class_layer_[c]);
    auto keeps_layer = [&](std::uint32_t s, std::uint32_t w) {
      if (split_rows_of.empty()) return true;
      for (const std::uint32_t row : split_rows_of[t]) {
        const LayerSet* at = &carried[std::size_t{row} * n];
        if (at[s] == bit && (at[w] & bit) == 0) return false;
      }
      return true;
    };
    for (const std::uint32_t s : order) {
      if (s == t || h[s].none()) continue;
      cand.clear();
      for (std::uint32_t a = g.first_arc(SwitchIndex{s}); a < g.first_arc(SwitchIndex{s + 1});
           ++a) {
        const std::uint32_t w = g.arc(a).to.value;
        if (w == t || (!h[w].none() && keeps_layer(s, w))) cand.push_back(a);
      }
      // Entries first, then (where the layer is searched, whole or
      // capped) those that add the fewest dependencies the layer does not
      // hold yet, then nearer the class's switch first. A channel whose
      // turns the routes or earlier groups already make leaves the layer
      // room for the next classes' alternatives (single link failures'
      // pairs left to the SM, failover_bench: the 8x8x8 torus in boxes
      // 97,002 -> 80,797, the dragonfly g=16 1,413 -> 1,212, random 200
      // 12,788 -> 12,612; on dateline VLs 6x6x6 38,641 -> 39,708 but
      // 7x7x7 114,525 -> 110,429, 9x9x9 723,622 -> 691,773, and capped
      // at 12x12x12 9,179,661 -> 7,818,634). Without searches only
      // dependencies that agree with the order are taken, and counting
      // new ones there left more (random 1,000: 254,415 -> 261,698).
      if (fewest) {
        for (const std::uint32_t a : cand) new_deps[a] = new_deps_of(s, a);
      }
      std::stable_sort(cand.begin(), cand.end(), [&](std::uint32_t x, std::uint32_t y) {
        const bool ex = h[s].test(g.arc(x).local_port), ey = h[s].test(g.arc(y).local_port);
        if (ex != ey) return ex;
        if (fewest && new_deps[x] != new_deps[y]) return new_deps[x] < new_deps[y];
        return dist[g.arc(x).to.value] < dist[g.arc(y).to.value];
      });
      for (const std::uint32_t a : cand) {
        if (grp[s].count() >= max_ports) break;
        if (take(s, a)) grp[s].set(g.arc(a).local_port);
      }
      h[s] |= grp[s];
    }
    for (std::uint32_t s = 0; s < n; ++s) {
      if (s == t || grp[s].none()) continue;
      const auto [id, narrow] = tables[s].id_of(grp[s]);
      plan.gid_[std::size_t{s} * classes + c] = id;
      if (id != 0) {
        ++grouped;
        if (tables[s].masks()[id].count() >= 2) ++alternative;
      }
      if (narrow) ++narrowed;
    }
  }
  // Per switch, the group of each LID whose layer depends on the source:
  // its class's where the switch carries one layer, its entry alone where
  // several meet.
  plan.split_gid_.assign(split_lids.size() * n, 0);
  for (std::uint32_t row = 0; row < split_lids.size(); ++row) {
    const std::uint32_t lid = split_lids[row];
    const std::uint32_t t = attach[lid].sw.value;
    for (std::uint32_t x = 0; x < n; ++x) {
      const LayerSet at = carried[std::size_t{row} * n + x];
      if (x == t || at == 0) continue;
      std::uint8_t& id = plan.split_gid_[std::size_t{row} * n + x];
      if (std::has_single_bit(at)) {
        const std::uint32_t c = class_of[std::size_t{t} * slots + std::countr_zero(at)];
        id = plan.gid_[std::size_t{x} * classes + c];
      } else if (const std::uint32_t a = entry_arc(x, lid); a != kNoArc) {
        PortMask entry;
        entry.set(g.arc(a).local_port);
        const auto [eid, narrow] = tables[x].id_of(entry);
        id = eid;
        if (narrow) ++narrowed;
      }
    }
  }
  plan.stats_.lids_per_switch = static_cast<std::uint32_t>(split_lids.size());
  std::vector<std::vector<PortMask>> per_switch(n);
  for (std::uint32_t s = 0; s < n; ++s) per_switch[s] = std::move(tables[s].masks());
  plan.finish(g, std::move(per_switch));
  plan.stats_.destinations =
      static_cast<std::uint32_t>(std::count(is_dest.begin(), is_dest.end(), 1));
  plan.stats_.classes = classes;
  plan.stats_.pairs_grouped = grouped;
  plan.stats_.pairs_with_alternative = alternative;
  plan.stats_.pairs_narrowed = narrowed;
  plan.stats_.memory_bytes += std::size_t{arcs} * layers * 4;
  plan.stats_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return plan;
}

void FailoverPlan::finish(const SwitchGraph& g, std::vector<std::vector<PortMask>> per_switch) {
  const std::uint32_t n = n_;
  group_first_.assign(std::size_t{n} + 1, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    group_first_[s + 1] = group_first_[s] + static_cast<std::uint32_t>(per_switch[s].size());
    stats_.max_groups =
        std::max(stats_.max_groups, static_cast<std::uint32_t>(per_switch[s].size() - 1));
    stats_.groups += static_cast<std::uint32_t>(per_switch[s].size() - 1);
  }
  masks_.reserve(group_first_[n]);
  for (auto& v : per_switch) masks_.insert(masks_.end(), v.begin(), v.end());
  notify_.assign(n, PortMask{});
  for (std::uint32_t a = 0; a < g.num_arcs(); ++a) {
    notify_[g.arc_source(a).value].set(g.arc(a).local_port);
  }
  stats_.switches = n;
  stats_.layers = layers_;
  stats_.memory_bytes = gid_.size() + masks_.size() * sizeof(PortMask) +
                        notify_.size() * sizeof(PortMask) + home_.size() * 4 +
                        group_first_.size() * 4 + lid_class_.size() * 4 + class_switch_.size() * 5 +
                        split_gid_.size();
}

}  // namespace subnetd::routing

#include "routing/failover_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <numeric>
#include <unordered_map>

#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

using Clock = std::chrono::steady_clock;

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
                                         std::stop_token stop) {
  const auto t0 = Clock::now();
  const auto n = static_cast<std::uint32_t>(topo.num_switches());
  if (routes.updown_rank.empty()) {
    return Error{Errc::kUnsupported,
                 fmt::format("routes of engine {} carry no up/down order; fast failover groups "
                             "need one (ftree, updn)",
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

  plan.group_first_.assign(std::size_t{n} + 1, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    plan.group_first_[s + 1] =
        plan.group_first_[s] + static_cast<std::uint32_t>(per_switch[s].size());
    plan.stats_.max_groups =
        std::max(plan.stats_.max_groups, static_cast<std::uint32_t>(per_switch[s].size() - 1));
    plan.stats_.groups += static_cast<std::uint32_t>(per_switch[s].size() - 1);
  }
  plan.masks_.reserve(plan.group_first_[n]);
  for (auto& v : per_switch) plan.masks_.insert(plan.masks_.end(), v.begin(), v.end());
  plan.notify_.assign(n, PortMask{});
  for (std::uint32_t a = 0; a < g.num_arcs(); ++a) {
    plan.notify_[g.arc_source(a).value].set(g.arc(a).local_port);
  }

  plan.stats_.switches = n;
  plan.stats_.destinations = static_cast<std::uint32_t>(dests.size());
  plan.stats_.pairs_grouped = grouped.load();
  plan.stats_.pairs_with_alternative = alternative.load();
  plan.stats_.pairs_narrowed = narrowed.load();
  plan.stats_.memory_bytes = plan.gid_.size() + plan.masks_.size() * sizeof(PortMask) +
                             plan.notify_.size() * sizeof(PortMask) + plan.home_.size() * 4 +
                             plan.group_first_.size() * 4;
  plan.stats_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return plan;
}

}  // namespace subnetd::routing

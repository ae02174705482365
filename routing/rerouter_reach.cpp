// What failures take from the rerouter's reachability tables: down_ok
// (who reaches whom over live down-links) and legal (who still has any
// up*/down* route to whom), both decremental. Called by Rerouter::run()
// (rerouter_repair.cpp) after the failures are marked; see rerouter.hpp.

#include <algorithm>
#include <bit>
#include <functional>
#include <utility>

#include "routing/rerouter.hpp"
#include "routing/rerouter_internal.hpp"

namespace subnetd::routing::rerouter_internal {

// Removes down_ok bits that needed a failed down-link: a decremental
// closure from the upper ends, word-parallel over the destinations that
// could be affected (those below the failed links).
void update_down_ok(Rerouter::Impl& m, RepairReport& rep) {
  auto& work = m.work;
  work.clear();
  auto& tw = m.target_words;
  tw.clear();
  const std::uint32_t words = m.words;
  std::vector<std::uint64_t>& bits = m.down_ok;
  // Target words: the union of the lower ends' rows.
  std::vector<std::uint64_t>& acc = m.down_ok_acc;
  acc.assign(words, 0);
  bool any = false;
  for (const FailedLink& f : m.new_failed) {
    const std::uint32_t s = f.sw.value;
    const PortSlot& sl = m.slot(s, f.port);
    if (!(sl.flags & kSwitchLink) || !sl.down()) continue;  // take each link from its upper end
    const std::uint64_t* low = &bits[std::size_t{sl.peer} * words];
    for (std::uint32_t w = 0; w < words; ++w) acc[w] |= low[w];
    if (!m.in_work[s]) {
      m.in_work[s] = 1;
      work.push_back(s);
    }
    any = true;
  }
  if (!any) return;
  for (std::uint32_t w = 0; w < words; ++w) {
    if (acc[w] != 0) tw.emplace_back(w, acc[w]);
  }
  for (std::size_t i = 0; i < work.size(); ++i) {
    const std::uint32_t x = work[i];
    m.in_work[x] = 0;
    std::uint64_t* row_x = &bits[std::size_t{x} * words];
    bool lost = false;
    for (const auto& [w, mask] : tw) {
      std::uint64_t v = (x / 64 == w) ? std::uint64_t{1} << (x % 64) : 0;
      for (std::uint32_t k = m.down_first[x]; k < m.down_first[x + 1]; ++k) {
        const PortSlot& sl = m.slot(x, m.down_list[k]);
        if (sl.flags & kLive) v |= bits[std::size_t{sl.peer} * words + w];
      }
      const std::uint64_t next = (row_x[w] & ~mask) | (v & mask & row_x[w]);
      if (next != row_x[w]) {
        m.down_ok_undo.emplace_back(std::size_t{x} * words + w, row_x[w]);
        row_x[w] = next;
        ++rep.down_ok_updates;
        lost = true;
      }
    }
    if (!lost) continue;
    for (std::uint32_t k = m.up_first[x]; k < m.up_first[x + 1]; ++k) {
      const PortSlot& sl = m.slot(x, m.up_list[k]);
      if ((sl.flags & kLive) && !m.in_work[sl.peer]) {
        m.in_work[sl.peer] = 1;
        work.push_back(sl.peer);
      }
    }
  }
}

// Removes legal bits (up*/down* routes) the failures took, per
// destination switch and word: from the switches whose down_ok shrank and
// the lower ends of failed links (they lost an up-link), down the order to
// the switches below them. Each loss is kept in legal_lost: the
// destination switches a switch can no longer reach legally.
//
// A switch this repair cut off from every other switch is left out on
// both sides: nothing can reach it or leave it, so its LIDs are
// unreachable (choose() drops them) and its row is kept; tracking every
// switch's loss of it would be a walk over the whole fabric.
void update_legal(Rerouter::Impl& m) {
  const std::uint32_t words = m.words;
  auto& cut = m.cut_words;
  cut.clear();
  for (const FailedLink& f : m.new_failed) {
    const std::uint32_t s = f.sw.value;
    if (m.live_links[s] != 0 || !(m.slot(s, f.port).flags & kSwitchLink)) continue;
    cut.emplace_back(s / 64, std::uint64_t{1} << (s % 64));
  }
  auto not_cut = [&](std::uint32_t w, std::uint64_t bits) {
    for (const auto& [cw, mask] : cut) {
      if (cw == w) bits &= ~mask;
    }
    return bits;
  };
  auto& heap = m.legal_heap;
  heap.clear();
  auto add = [&](std::uint32_t x, std::uint32_t w, std::uint64_t bits) {
    m.legal_pend[std::size_t{x} * words + w] |= bits;
    m.legal_pend_sum[std::size_t{x} * m.sum_words + w / 64] |= std::uint64_t{1} << (w % 64);
    if (m.in_work[x]) return;
    m.in_work[x] = 1;
    heap.push_back(m.pos[x]);
    std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  };
  for (const auto& [index, old] : m.down_ok_undo) {
    const auto x = static_cast<std::uint32_t>(index / words);
    const auto w = static_cast<std::uint32_t>(index % words);
    if (const std::uint64_t lost = old & ~m.down_ok[index]; lost != 0) add(x, w, lost);
  }
  for (const FailedLink& f : m.new_failed) {
    const PortSlot& sl = m.slot(f.sw.value, f.port);
    if (!(sl.flags & kSwitchLink) || !sl.up()) continue;  // the lower end lost an up-link
    const std::uint64_t* above = &m.legal[std::size_t{sl.peer} * words];
    for (std::uint32_t w = 0; w < words; ++w) {
      if (above[w] != 0) add(f.sw.value, w, above[w]);
    }
  }
  // Top down the order: when a switch is taken, every switch above it has
  // lost what it will lose, so each switch is settled once, all its words
  // together, and passes its losses to the switches below it.
  auto& lost_here = m.lost_here;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const std::uint32_t x = m.by_pos[heap.back()];
    heap.pop_back();
    m.in_work[x] = 0;
    std::uint64_t* pend = &m.legal_pend[std::size_t{x} * words];
    std::uint64_t* sum = &m.legal_pend_sum[std::size_t{x} * m.sum_words];
    lost_here.clear();
    for (std::uint32_t sw = 0; sw < m.sum_words; ++sw) {
      for (std::uint64_t sb = std::exchange(sum[sw], 0); sb != 0; sb &= sb - 1) {
        const std::uint32_t w = sw * 64 + static_cast<std::uint32_t>(std::countr_zero(sb));
        const std::uint64_t cand = pend[w];
        pend[w] = 0;
        if (m.live_links[x] == 0) continue;  // cut off (or no switch links at all)
        std::uint64_t at_risk = cand & ~m.down_ok_word(x, w);
        if (!cut.empty()) at_risk = not_cut(w, at_risk);
        if (at_risk == 0) continue;
        const std::uint64_t cur = m.legal[std::size_t{x} * words + w];
        at_risk &= cur;
        if (std::popcount(at_risk) <= 2) {
          // A destination or two: their by-destination rows are cached.
          for (std::uint64_t b = at_risk; b != 0; b &= b - 1) {
            const std::uint32_t t = w * 64 + static_cast<std::uint32_t>(std::countr_zero(b));
            for (std::uint32_t k = m.up_first[x]; k < m.up_first[x + 1]; ++k) {
              const PortSlot& sl = m.slot(x, m.up_list[k]);
              if ((sl.flags & kLive) && m.legal_bit_by_dest(sl.peer, t)) {
                at_risk &= ~(std::uint64_t{1} << (t % 64));
                break;
              }
            }
          }
        } else {
          for (std::uint32_t k = m.up_first[x]; k < m.up_first[x + 1] && at_risk != 0; ++k) {
            const PortSlot& sl = m.slot(x, m.up_list[k]);
            if (sl.flags & kLive) at_risk &= ~m.legal[std::size_t{sl.peer} * words + w];
          }
        }
        if (at_risk == 0) continue;
        m.legal_undo.emplace_back(std::size_t{x} * words + w, cur);
        m.legal_update(x, w, at_risk, false);
        m.legal_lost.push_back({x, w, at_risk});
        lost_here.emplace_back(w, at_risk);
      }
    }
    if (lost_here.empty()) continue;
    for (std::uint32_t k = m.down_first[x]; k < m.down_first[x + 1]; ++k) {
      const PortSlot& sl = m.slot(x, m.down_list[k]);
      if ((sl.flags & kLive) == 0) continue;
      const std::uint64_t* below = &m.legal[std::size_t{sl.peer} * words];
      for (const auto& [w, lost] : lost_here) {
        if (const std::uint64_t b = below[w] & lost; b != 0) add(sl.peer, w, b);
      }
    }
  }
}

}  // namespace subnetd::routing::rerouter_internal

// Rerouter::repair() and apply_for_test(): mark the failures, update
// down_ok and legal (rerouter_reach.cpp), seed the entries that named a
// failed port or lead into a lost route, worklist rounds, orphan fill, then
// check_changes() (rerouter_check.cpp) or roll back. See rerouter.hpp.

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <numeric>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "routing/bitops.hpp"
#include "routing/rerouter.hpp"
#include "routing/rerouter_internal.hpp"

namespace subnetd::routing {
namespace {

using namespace rerouter_internal;

// Appends to `out` every i in [0, n) with row[i] == value (16 bytes a step).
void scan_row(const std::uint8_t* row, std::uint32_t n, std::uint8_t value,
              std::vector<std::uint32_t>& out) {
  std::uint32_t i = 0;
#if defined(__SSE2__)
  const __m128i v = _mm_set1_epi8(static_cast<char>(value));
  for (; i + 16 <= n; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i));
    auto m = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, v)));
    while (m != 0) {
      out.push_back(i + static_cast<std::uint32_t>(std::countr_zero(m)));
      m &= m - 1;
    }
  }
#endif
  for (; i < n; ++i) {
    if (row[i] == value) out.push_back(i);
  }
}

// Everything one repair (or apply_for_test) does, over the Rerouter's state.
// A short-lived object on the caller's stack; all buffers live in Impl.
class Repair {
 public:
  enum class Choice { kChosen, kDeadEnd, kBlocked, kUnreachable };

  Repair(Rerouter::Impl& m, std::uint8_t* table, std::uint32_t stride, std::uint32_t n,
         const Topology& topo, const LidMap& lids)
      : m_(m), table_(table), stride_(stride), n_(n), topo_(topo), lids_(lids) {}

  std::uint8_t* row(std::uint32_t s) const { return table_ + std::size_t{s} * stride_; }

  std::string where(std::uint32_t s) const { return topo_.switch_label(SwitchIndex{s}); }

  void begin() {
    ++m_.epoch;
    if (m_.epoch == 0) {  // wrapped: forget every stamp
      std::fill(m_.touched.begin(), m_.touched.end(), 0);
      std::fill(m_.blocked_mark.begin(), m_.blocked_mark.end(), 0);
      std::fill(m_.down_mark.begin(), m_.down_mark.end(), 0);
      for (auto& s : m_.seed_range) s.epoch = 0;
      for (auto& p : m_.pick_state) p.epoch = 0;
      m_.epoch = 1;
    }
    m_.recs.clear();
    m_.rec_index.clear();
    m_.new_dead.clear();
    m_.new_failed.clear();
    m_.down_ok_undo.clear();
    m_.legal_undo.clear();
    m_.legal_lost.clear();
    m_.lost_recs.clear();
    m_.lost_scanned = false;
    m_.lid_undo.clear();
    m_.orphan_undo.clear();
    m_.changes.clear();
    m_.blocks.clear();
    m_.dead_all.clear();
    m_.second_chance.clear();
  }

  // Marks the failed links down; returns an error for a bad argument (before
  // anything changed).
  Result<void> mark_failures(std::span<const FailedLink> failed, RepairReport& rep) {
    for (const FailedLink& f : failed) {
      const std::uint32_t s = f.sw.value;
      if (s >= n_) {
        return Error{Errc::kNotFound,
                     fmt::format("failed link: no switch with index {} ({} switches)", s, n_)};
      }
      if (f.port == 0 || !m_.has_port(s, f.port)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("failed link: switch {} has no port {}", where(s), f.port)};
      }
      if ((m_.slot(s, f.port).flags & (kSwitchLink | kCaLink)) == 0) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("failed link: port {} of switch {} was not cabled when the "
                                 "routes were computed",
                                 f.port, where(s))};
      }
    }
    for (const FailedLink& f : failed) {
      const std::uint32_t s = f.sw.value;
      PortSlot& sl = m_.ports[m_.slot_index(s, f.port)];
      if ((sl.flags & kLive) == 0) continue;  // known already (e.g. both ends reported)
      sl.flags &= static_cast<std::uint8_t>(~kLive);
      m_.new_dead.push_back(m_.slot_index(s, f.port));
      m_.new_failed.push_back(f);
      if (sl.flags & kCaLink) {
        ++rep.ca_links_failed;
        continue;
      }
      ++rep.switch_links_failed;
      PortSlot& far = m_.ports[m_.slot_index(sl.peer, sl.peer_port)];
      far.flags &= static_cast<std::uint8_t>(~kLive);
      m_.new_dead.push_back(m_.slot_index(sl.peer, sl.peer_port));
      m_.new_failed.push_back(FailedLink{SwitchIndex{sl.peer}, sl.peer_port});
      --m_.live_links[s];
      --m_.live_links[sl.peer];
    }
    return {};
  }

  // LIDs behind failed CA links can no longer be reached.
  void mark_unreachable_lids() {
    for (const FailedLink& f : m_.new_failed) {
      const std::uint32_t s = f.sw.value;
      if ((m_.slot(s, f.port).flags & kCaLink) == 0) continue;
      // The CA/router port at the far end and its 2^LMC LIDs.
      const Port& p = topo_.port(topo_.switch_node(f.sw), f.port);
      const std::uint32_t idx = topo_.port_index(p.remote_node, p.remote_port);
      const std::uint32_t base =
          idx < lids_.base_by_port.size() ? lids_.base_by_port[idx].value : 0;
      if (base == 0) continue;
      const std::uint32_t count = lids_.lids_per_port(topo_, p.remote_node);
      for (std::uint32_t d = base; d < base + count && d < stride_; ++d) {
        if (m_.lid[d].sw != s || m_.lid[d].port != f.port) continue;
        m_.lid_undo.emplace_back(d, m_.lid[d]);
        m_.lid[d].sw = kNoSwitch.value;
      }
    }
  }

  // Adds to the worklist every entry that leads into a switch which lost
  // its legal route to the entry's destination switch.
  void seed_lost_routes(RepairReport& rep) {
    m_.lost_recs.clear();
    for_entries_into_lost(m_, table_, stride_, [&](std::uint32_t y, std::uint32_t d) {
      const std::uint32_t r = record_for(y, d);
      m_.pending.push_back(r);
      m_.lost_recs.push_back(r);
      ++rep.moved_off_lost;
      return true;
    });
    m_.lost_scanned = true;
    // A switch with CAs that lost its route to a switch with CA/router
    // LIDs: its CAs' traffic there would have to follow an orphan route.
    // Its entries go through the worklist, which refuses the repair if it
    // can still reach them at all (the full recompute finds routes).
    for (const Rerouter::Impl::LegalLoss& loss : m_.legal_lost) {
      if (m_.has_endpoints[loss.sw] == 0) continue;
      for (std::uint64_t bits = loss.bits; bits != 0; bits &= bits - 1) {
        const std::uint32_t t = loss.word * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
        if (m_.t_has_data[t] == 0) continue;
        for (std::uint32_t i = m_.lids_first[t]; i < m_.lids_first[t + 1]; ++i) {
          m_.pending.push_back(record_for(loss.sw, m_.lids_list[i]));
        }
      }
    }
  }

  // Seeds: every entry that names a newly failed port, ascending LID per
  // switch. Switches cut off from every other switch keep their rows (no
  // route can reach them or leave them).
  void seed(RepairReport& rep) {
    // Failed ends grouped by switch, so each switch's seeds form one range
    // of records, ascending by LID (record_for searches it).
    auto& ends = m_.seed_ends;
    ends.assign(m_.new_failed.begin(), m_.new_failed.end());
    std::sort(ends.begin(), ends.end());
    for (std::size_t i = 0; i < ends.size();) {
      const std::uint32_t s = ends[i].sw.value;
      std::size_t j = i;
      const auto begin = static_cast<std::uint32_t>(m_.recs.size());
      for (; j < ends.size() && ends[j].sw.value == s; ++j) {
        const PortSlot& sl = m_.slot(s, ends[j].port);
        if ((sl.flags & kSwitchLink) && m_.live_links[s] == 0) continue;  // cut off
        m_.scan_buf.clear();
        scan_row(row(s), stride_, ends[j].port, m_.scan_buf);
        for (std::uint32_t d : m_.scan_buf) m_.recs.push_back({s, d, ends[j].port});
      }
      const auto end = static_cast<std::uint32_t>(m_.recs.size());
      if (end != begin) {
        if (j - i > 1) {
          std::sort(m_.recs.begin() + begin, m_.recs.end(),
                    [](const auto& a, const auto& b) { return a.lid < b.lid; });
        }
        m_.seed_range[s] = {m_.epoch, begin, end};
        m_.touched[s] = m_.epoch;
        rep.seeds += end - begin;
      }
      i = j;
    }
    m_.pending.resize(m_.recs.size());
    std::iota(m_.pending.begin(), m_.pending.end(), 0U);
  }

  // The record of (s, d), created (old = the current entry) if none exists.
  std::uint32_t record_for(std::uint32_t s, std::uint32_t d) {
    if (m_.touched[s] == m_.epoch) {
      const Rerouter::Impl::SeedRange& range = m_.seed_range[s];
      if (range.epoch == m_.epoch) {
        auto first = m_.recs.begin() + range.begin;
        auto last = m_.recs.begin() + range.end;
        auto it = std::lower_bound(first, last, d,
                                   [](const auto& r, std::uint32_t l) { return r.lid < l; });
        if (it != last && it->lid == d) return static_cast<std::uint32_t>(it - m_.recs.begin());
      }
      if (const std::uint32_t* idx = m_.rec_index.find(key_of(s, d))) return *idx;
    }
    const auto idx = static_cast<std::uint32_t>(m_.recs.size());
    m_.recs.push_back({s, d, row(s)[d]});
    m_.rec_index.put(key_of(s, d), idx);
    m_.touched[s] = m_.epoch;
    return idx;
  }

  void set_entry(std::uint32_t s, std::uint32_t d, std::uint8_t q) {
    std::uint8_t& e = row(s)[d];
    const std::uint8_t prev = e;
    if (prev == q) return;
    e = q;
    m_.touched[s] = m_.epoch;
    if (q != kDropPort && m_.has_port(s, q) && m_.slot(s, q).down()) m_.down_mark[s] = m_.epoch;
    if (m_.lid0[d].data == 0) return;  // loads count data LIDs
    if (prev != kDropPort && m_.has_port(s, prev) && (m_.slot(s, prev).flags & kSwitchLink)) {
      const std::uint32_t i = m_.slot_index(s, prev);
      --m_.load[i];
    }
    if (q != kDropPort && m_.has_port(s, q) && (m_.slot(s, q).flags & kSwitchLink)) {
      ++m_.load[m_.slot_index(s, q)];
    }
  }

  enum class Validity { kInvalid, kStale, kGood };

  // Whether s may send d (destination switch t) to the neighbour behind
  // port slot `sl`: over a down-link the neighbour's entry must go down (or
  // deliver); over an up-link it must be a usable entry that does not come
  // straight back. kStale: usable, but the neighbour's entry names a port
  // that just failed (it is on the worklist itself).
  Validity candidate(const PortSlot& sl, std::uint32_t d, std::uint32_t t) {
    const std::uint32_t nb = sl.peer;
    if (nb == t) return Validity::kGood;
    if (sl.down()) {
      if (!m_.down_ok_bit(nb, t)) return Validity::kInvalid;
      const std::uint8_t e = row(nb)[d];
      if (e == kDropPort || !m_.has_port(nb, e)) {
        maybe_later_ |= e == kDropPort && m_.blocked_mark[nb] == m_.epoch;
        return Validity::kInvalid;
      }
      const PortSlot& se = m_.slot(nb, e);
      if (!se.down() || m_.is_orphan(nb, d)) {
        // nb is on the worklist, or leads straight back (it moves once s
        // is a dead end): either may turn down later.
        maybe_later_ |= (se.flags & kLive) == 0 || e == sl.peer_port;
        return Validity::kInvalid;
      }
      return (se.flags & kLive) ? Validity::kGood : Validity::kStale;
    }
    // Up-link. A neighbour untouched by this repair and without orphans
    // still holds its engine-made (or earlier repaired) entry: legal and
    // complete. It cannot lead straight back into s: that would be a
    // down-link into s, which s would have found entering it (see choose).
    if (m_.touched[nb] != m_.epoch && m_.orphan_count[nb] == 0) {
      return m_.implicit_orphan(nb, d) ? Validity::kInvalid : Validity::kGood;
    }
    const std::uint8_t e = row(nb)[d];
    if (e == kDropPort || e == sl.peer_port || !m_.has_port(nb, e)) {
      // A neighbour leading straight back moves away once s is a dead end
      // (it is pushed); a blocked one may take an up-link on its retry.
      maybe_later_ |= e == sl.peer_port || (e == kDropPort && m_.blocked_mark[nb] == m_.epoch);
      return Validity::kInvalid;
    }
    if (m_.is_orphan(nb, d)) return Validity::kInvalid;
    const PortSlot& se = m_.slot(nb, e);
    if ((se.flags & kSwitchLink) == 0) return Validity::kInvalid;  // nb != t: must forward
    return (se.flags & kLive) ? Validity::kGood : Validity::kStale;
  }

  // For the fill of an implicit orphan s that has no legal neighbour: a
  // neighbour q (an orphan too) whose entry for d goes straight to a switch
  // with a legal route (then q stays as it is), or else leads back into s
  // (its route crossed the failure with s's: q then goes to a legal
  // neighbour of its own). Either way s -> q -> legal, a route that cannot
  // come back. Returns s's port to q and q's next port, or via == 0. q
  // never carries CAs when d is a CA/router LID (its own traffic would
  // follow the orphan). The last q found is tried first: the LIDs of one
  // destination switch come together.
  struct TwoHop {
    PortNum via = 0;
    PortNum next = 0;
  };
  TwoHop two_hop(std::uint32_t s, std::uint32_t d) {
    const std::uint32_t t = m_.lid0[d].sw;
    const bool data = m_.lid0[d].data != 0;
    const std::uint32_t first = m_.port_base[s], count = m_.port_base[s + 1] - first;
    PortNum& hint = m_.two_hop_hint[s];
    for (std::uint32_t k = 0; k < count; ++k) {
      const PortNum via = static_cast<PortNum>((hint + k) % count);
      if (via == 0) continue;
      const PortSlot& sl = m_.ports[first + via];
      if (!sl.live_switch() || (data && m_.has_endpoints[sl.peer] != 0)) continue;
      const std::uint32_t q = sl.peer;
      if (m_.legal_bit_by_dest(q, t)) continue;  // legal entries keep their rules
      const std::uint8_t e = row(q)[d];
      if (e != kDropPort && e != sl.peer_port && m_.has_port(q, e)) {
        const PortSlot& ql = m_.slot(q, e);
        if (ql.live_switch() && m_.legal_bit_by_dest(ql.peer, t) &&
            !m_.explicit_orphan(ql.peer, d)) {
          hint = via;
          return {via, e};
        }
        continue;  // q's route goes elsewhere: leave it alone
      }
      if (e != sl.peer_port) continue;
      for (std::uint32_t qi = m_.port_base[q] + 1; qi < m_.port_base[q + 1]; ++qi) {
        const PortSlot& ql = m_.ports[qi];
        if (!ql.live_switch() || !m_.legal_bit_by_dest(ql.peer, t) ||
            m_.explicit_orphan(ql.peer, d)) {
          continue;
        }
        hint = via;
        return {via, static_cast<PortNum>(qi - m_.port_base[q])};
      }
    }
    return {};
  }

  bool legal_neighbour(std::uint32_t s, std::uint32_t t) const {
    for (std::uint32_t si = m_.port_base[s] + 1; si < m_.port_base[s + 1]; ++si) {
      const PortSlot& sl = m_.ports[si];
      if (sl.live_switch() && m_.legal_bit_by_dest(sl.peer, t)) return true;
    }
    return false;
  }

  // The rotation of switch s in this repair. It starts where the first
  // LID asks (d mod the class's size), so that switches that each move one
  // LID do not all start at their first port.
  Rerouter::Impl::PickState& pick_state(std::uint32_t s, std::uint32_t d) {
    Rerouter::Impl::PickState& ps = m_.pick_state[s];
    if (ps.epoch != m_.epoch) {
      ps.epoch = m_.epoch;
      const std::uint32_t ups = m_.up_first[s + 1] - m_.up_first[s];
      const std::uint32_t downs = m_.down_first[s + 1] - m_.down_first[s];
      ps.cursor_up = ups == 0 ? 0 : d % ups;
      ps.cursor_down = downs == 0 ? 0 : d % downs;
    }
    return ps;
  }

  // A legal port of one class, or kDropPort: of the next kPickChoices legal
  // ports in the switch's rotation, the least loaded (the "power of two
  // choices": close to least-loaded balance without reading every port's
  // load, which at 3,000 switches a repair is most of its cache misses).
  // A stale port (usable, but its neighbour's entry is being repaired too)
  // only when no port is good. `probe` looks without moving the rotation.
  PortNum pick(std::uint32_t s, std::uint32_t d, std::uint32_t t, bool up, bool probe) {
    const PortNum* list = up ? &m_.up_list[m_.up_first[s]] : &m_.down_list[m_.down_first[s]];
    const std::uint32_t k =
        up ? m_.up_first[s + 1] - m_.up_first[s] : m_.down_first[s + 1] - m_.down_first[s];
    if (k == 0) return kDropPort;
    Rerouter::Impl::PickState& ps = pick_state(s, d);
    std::uint32_t& cursor = up ? ps.cursor_up : ps.cursor_down;
    PortNum best = kDropPort, stale = kDropPort;
    std::uint32_t best_load = UINT32_MAX, stale_load = UINT32_MAX;
    std::uint32_t best_at = 0, stale_at = 0;
    std::uint32_t good = 0;
    std::uint32_t j = 0;
    for (std::uint32_t at = cursor; j < k; ++j, at = at + 1 == k ? 0 : at + 1) {
      const PortNum q = list[at];
      const std::uint32_t si = m_.slot_index(s, q);
      const PortSlot& sl = m_.ports[si];
      if ((sl.flags & kLive) == 0) continue;
      const std::uint32_t l = m_.load[si];
      const Validity v = candidate(sl, d, t);
      if (v == Validity::kGood) {
        if (l < best_load) {
          best = q;
          best_load = l;
          best_at = at;
        }
        if (++good == kPickChoices) break;
      } else if (v == Validity::kStale && l < stale_load) {
        stale = q;
        stale_load = l;
        stale_at = at;
      }
    }
    if (best == kDropPort && stale != kDropPort) {
      best = stale;
      best_at = stale_at;
    }
    if (best != kDropPort && !probe && m_.lid0[d].data != 0) {
      cursor = best_at + 1 == k ? 0 : best_at + 1;
    }
    return best;
  }

  Choice choose(std::uint32_t s, std::uint32_t d) {
    const std::uint32_t t = m_.lid[d].sw;
    if (t == s) {
      set_entry(s, d, m_.lid[d].port);
      return Choice::kChosen;
    }
    if (t == kNoSwitch.value || m_.live_links[t] == 0 || m_.live_links[s] == 0) {
      set_entry(s, d, kDropPort);
      return Choice::kUnreachable;
    }
    if (m_.is_orphan(s, d)) {
      // An orphan whose route broke: it had no legal next hop before and
      // failures add none. Dropped now, re-filled at the end.
      m_.set_orphan(s, d, false);  // no-op for implicit orphans: they stay
      set_entry(s, d, kDropPort);
      return Choice::kDeadEnd;
    }
    const std::uint8_t cur = row(s)[d];
    maybe_later_ = false;
    // Entered over a down-link by a neighbour above s: s must keep going
    // down. Only possible while s's entry goes down (the invariant: nobody
    // sends d down into a switch whose entry for d goes up).
    bool entered_down = false;
    if (cur != kDropPort && m_.has_port(s, cur) && m_.slot(s, cur).down()) {
      for (std::uint32_t i = m_.up_first[s]; i < m_.up_first[s + 1]; ++i) {
        const PortSlot& sl = m_.slot(s, m_.up_list[i]);
        if ((sl.flags & kLive) == 0) continue;
        if (row(sl.peer)[d] == sl.peer_port && !m_.is_orphan(sl.peer, d)) {
          entered_down = true;
          break;
        }
      }
    }
    PortNum q = kDropPort;
    if (m_.down_ok_bit(s, t)) q = pick(s, d, t, false, false);
    if (q == kDropPort && !entered_down) q = pick(s, d, t, true, false);
    if (q != kDropPort) {
      set_entry(s, d, q);
      return Choice::kChosen;
    }
    set_entry(s, d, kDropPort);
    if (entered_down && pick(s, d, t, true, true) != kDropPort) {
      m_.blocked_mark[s] = m_.epoch;
      return Choice::kBlocked;
    }
    return Choice::kDeadEnd;
  }

  // Every neighbour (only those above s when `above_only`) whose entry for a
  // LID of the run leads into s joins the next round. `run` holds record
  // indices of one switch s.
  void push_pointers(std::uint32_t s, std::span<const std::uint32_t> run, bool above_only,
                     bool orphans_too) {
    // A neighbour above s sends d down into s only while s's entry for d
    // goes down (the invariant), or when that neighbour's own entry is an
    // orphan (exempt from it): otherwise the neighbours above need no look.
    bool above = m_.down_mark[s] == m_.epoch;
    for (std::uint32_t r : run) {
      const std::uint8_t old = m_.recs[r].old;
      above = above || (old != kDropPort && m_.has_port(s, old) && m_.slot(s, old).down());
    }
    // LIDs of the run by LFT block: one 64-byte compare per neighbour and
    // block instead of a load per LID.
    for (std::size_t i = 0; i < run.size();) {
      const std::uint32_t block = m_.recs[run[i]].lid / kLftBlockSize;
      std::uint64_t want = 0;
      std::size_t j = i;
      for (; j < run.size() && m_.recs[run[j]].lid / kLftBlockSize == block; ++j) {
        want |= std::uint64_t{1} << (m_.recs[run[j]].lid % kLftBlockSize);
      }
      i = j;
      const std::uint32_t base = block * kLftBlockSize;
      auto orphan_above = [&](std::uint32_t u) {
        if (m_.orphan_count[u] != 0) return true;
        for (std::uint64_t w = want; w != 0; w &= w - 1) {
          if (m_.implicit_orphan(u, base + static_cast<std::uint32_t>(std::countr_zero(w))))
            return true;
        }
        return false;
      };
      auto scan = [&](const PortNum* list, std::uint32_t k, bool up_side) {
        for (std::uint32_t a = 0; a < k; ++a) {
          const PortSlot& sl = m_.slot(s, list[a]);
          if ((sl.flags & kLive) == 0) continue;
          if (up_side && !above && !orphan_above(sl.peer)) continue;
          for (std::uint64_t hit = equal_mask64(row(sl.peer) + base, sl.peer_port) & want; hit != 0;
               hit &= hit - 1) {
            const std::uint32_t d = base + static_cast<std::uint32_t>(std::countr_zero(hit));
            // Orphans may lead into orphans; only legal routes must move
            // (unless s has nowhere to go but through them).
            if (!orphans_too && m_.implicit_orphan(sl.peer, d)) continue;
            m_.next_pending.push_back(record_for(sl.peer, d));
          }
        }
      };
      scan(&m_.up_list[m_.up_first[s]], m_.up_first[s + 1] - m_.up_first[s], true);
      if (!above_only) {
        scan(&m_.down_list[m_.down_first[s]], m_.down_first[s + 1] - m_.down_first[s], false);
      }
    }
  }

  void push_runs(const std::vector<std::uint32_t>& list, bool above_only, bool orphans_too) {
    for (std::size_t i = 0; i < list.size();) {
      const std::uint32_t s = m_.recs[list[i]].sw;
      std::size_t j = i + 1;
      while (j < list.size() && m_.recs[list[j]].sw == s) ++j;
      push_pointers(s, std::span<const std::uint32_t>(list).subspan(i, j - i), above_only,
                    orphans_too);
      i = j;
    }
  }

  // What choose() reads first about a record's switch: its entry, its
  // port slots and their loads. Records of one repair are scattered over
  // the switches; reading ahead lets those misses overlap.
  void prefetch_record(const Rerouter::Impl::Rec& rec) const {
    __builtin_prefetch(row(rec.sw) + rec.lid);
    const std::uint32_t first = m_.port_base[rec.sw];
    __builtin_prefetch(&m_.ports[first]);
    __builtin_prefetch(&m_.ports[first] + 8);
    __builtin_prefetch(&m_.load[first]);
    __builtin_prefetch(&m_.pick_state[rec.sw]);
  }

  // Worklist rounds until every entry on it is settled.
  void route(RepairReport& rep) {
    while (!m_.pending.empty()) {
      ++rep.rounds;
      m_.dead.clear();
      m_.dead_orphans.clear();
      m_.blocked.clear();
      m_.next_pending.clear();
      const std::size_t count = m_.pending.size();
      for (std::size_t i = 0; i < count; ++i) {
        if (i + kPrefetchAhead < count) prefetch_record(m_.recs[m_.pending[i + kPrefetchAhead]]);
        const std::uint32_t r = m_.pending[i];
        const auto& rec = m_.recs[r];
        switch (choose(rec.sw, rec.lid)) {
          case Choice::kChosen:
          case Choice::kUnreachable:
            break;
          case Choice::kDeadEnd:
            // An implicit orphan: every legal route into it was moved
            // (seed_lost_routes), and orphans may keep leading into it as
            // long as the fill finds it a legal neighbour, or an orphan
            // neighbour one hop from one (two_hop): routes that cannot
            // come back. Without either, the fill must route it through
            // orphans: those leading into it move first, as into any dead
            // end, so that no loop can form.
            if (!m_.implicit_orphan(rec.sw, rec.lid)) {
              m_.dead.push_back(r);
            } else if (!legal_neighbour(rec.sw, m_.lid0[rec.lid].sw) &&
                       two_hop(rec.sw, rec.lid).via == 0) {
              m_.dead_orphans.push_back(r);
            }
            m_.dead_all.push_back(r);
            if (maybe_later_) m_.second_chance.push_back(r);
            ++rep.dead_ends;
            break;
          case Choice::kBlocked:
            m_.blocked.push_back(r);
            break;
        }
      }
      // Dead ends: every pointer must move. Blocked switches: the
      // neighbours above must move, then the switch tries again (now
      // nobody enters it from above, an up-link is legal).
      push_runs(m_.dead, false, false);
      push_runs(m_.dead_orphans, false, true);
      push_runs(m_.blocked, true, false);
      m_.next_pending.insert(m_.next_pending.end(), m_.blocked.begin(), m_.blocked.end());
      std::swap(m_.pending, m_.next_pending);
    }
  }

  // Dead ends that can still reach their LID: first a legal entry where one
  // has appeared meanwhile, then orphan entries (see rerouter.hpp).
  Result<void> fill(RepairReport& rep) {
    // Second chance: a legal entry may have appeared next to a dead end
    // after it was decided (a blocked neighbour took an up-link on its
    // retry, a neighbour on the worklist turned down). Only those dead ends
    // can gain one, and each success may enable another: repeat while any
    // succeeds.
    auto& retry = m_.second_chance;
    for (bool progress = true; progress && !retry.empty();) {
      progress = false;
      std::size_t keep = 0;
      for (std::uint32_t r : retry) {
        const auto& rec = m_.recs[r];
        if (row(rec.sw)[rec.lid] != kDropPort) continue;
        const Choice c = choose(rec.sw, rec.lid);
        if (c == Choice::kChosen || c == Choice::kUnreachable) {
          progress = true;
        } else {
          retry[keep++] = r;
        }
      }
      retry.resize(keep);
      if (!progress) break;
      // Whatever now has a legal entry may unlock any dead end.
      retry.clear();
      for (std::uint32_t r : m_.dead_all) {
        const auto& rec = m_.recs[r];
        if (row(rec.sw)[rec.lid] == kDropPort) retry.push_back(r);
      }
    }
    auto& open = m_.next_pending;
    open.clear();
    for (std::uint32_t r : m_.dead_all) {
      const auto& rec = m_.recs[r];
      if (row(rec.sw)[rec.lid] == kDropPort) open.push_back(r);
    }
    for (bool progress = true; progress && !open.empty();) {
      progress = false;
      std::size_t keep = 0;
      for (std::uint32_t r : open) {
        const auto& rec = m_.recs[r];
        const std::uint32_t s = rec.sw, d = rec.lid;
        PortNum best = kDropPort;
        bool best_orphan = true;
        const std::uint32_t first = m_.port_base[s], last = m_.port_base[s + 1];
        // The port the previous orphan entry of s took usually serves the
        // next LID too (LIDs of one destination switch come together).
        if (const PortNum h = m_.orphan_hint[s]; h != 0) {
          const PortSlot& sl = m_.ports[first + h];
          const std::uint8_t e = sl.live_switch() ? row(sl.peer)[d] : kDropPort;
          if (e != kDropPort && e != sl.peer_port && !m_.is_orphan(sl.peer, d)) {
            best = h;
            best_orphan = false;
          }
        }
        for (std::uint32_t si = first + 1; best_orphan && si < last; ++si) {
          const PortSlot& sl = m_.ports[si];
          if (!sl.live_switch()) continue;
          const std::uint8_t e = row(sl.peer)[d];
          if (e == kDropPort || e == sl.peer_port) continue;
          const bool orphan = m_.is_orphan(sl.peer, d);
          if (best == kDropPort || (best_orphan && !orphan)) {
            best = static_cast<PortNum>(si - first);
            best_orphan = orphan;
            if (!orphan) break;
          }
        }
        if (best_orphan && m_.implicit_orphan(s, d)) {
          // No neighbour with a legal route: through one that has one.
          const TwoHop h = two_hop(s, d);
          if (h.via != 0) {
            const std::uint32_t q = m_.ports[first + h.via].peer;
            const std::uint32_t qr = record_for(q, d);
            if (row(q)[d] != h.next) {
              set_entry(q, d, h.next);
              if (m_.recs[qr].old != h.next) ++rep.orphans;
            }
            best = h.via;
            best_orphan = true;
          }
        }
        if (best == kDropPort) {
          open[keep++] = r;
          continue;
        }
        if (m_.has_endpoints[s] != 0 && m_.lid0[d].data != 0) {
          return Error{Errc::kCdgCycle,
                       fmt::format("switch {} carries CAs but has no up*/down* route to LID {} "
                                   "left: its traffic would turn down->up",
                                   where(s), d)};
        }
        set_entry(s, d, best);
        m_.orphan_hint[s] = best;
        if (!m_.implicit_orphan(s, d)) m_.set_orphan(s, d, true);
        ++rep.orphans;
        progress = true;
      }
      open.resize(keep);
    }
    // What is left cannot reach its LID at all: it stays dropped.
    return {};
  }

  // changes and blocks from the records (distinct by construction).
  void finalize(std::vector<std::uint64_t>& dirty_since, std::uint32_t blocks_per_switch) {
    for (const auto& rec : m_.recs) {
      const std::uint8_t now = row(rec.sw)[rec.lid];
      if (now == rec.old) continue;
      m_.changes.push_back({SwitchIndex{rec.sw}, Lid{rec.lid}, rec.old, now});
    }
    for (const LftChange& c : m_.changes) {
      const std::size_t bit =
          std::size_t{c.sw.value} * blocks_per_switch + c.lid.value / kLftBlockSize;
      const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
      if (m_.dirty_now[bit / 64] & mask) continue;
      m_.dirty_now[bit / 64] |= mask;
      dirty_since[bit / 64] |= mask;
      m_.blocks.push_back({c.sw, c.lid.value / kLftBlockSize});
    }
    for (const DirtyBlock& b : m_.blocks) {
      const std::size_t bit = std::size_t{b.sw.value} * blocks_per_switch + b.block;
      m_.dirty_now[bit / 64] = 0;
    }
  }

  // Undoes everything since begin() (refusal).
  void rollback() {
    for (auto it = m_.recs.rbegin(); it != m_.recs.rend(); ++it)
      set_entry(it->sw, it->lid, it->old);
    for (auto it = m_.down_ok_undo.rbegin(); it != m_.down_ok_undo.rend(); ++it)
      m_.down_ok[it->first] = it->second;
    for (auto it = m_.legal_undo.rbegin(); it != m_.legal_undo.rend(); ++it) {
      const auto x = static_cast<std::uint32_t>(it->first / m_.words);
      const auto w = static_cast<std::uint32_t>(it->first % m_.words);
      m_.legal_update(x, w, it->second & ~m_.legal[it->first], true);
    }
    m_.legal_lost.clear();
    m_.lost_recs.clear();
    m_.lost_scanned = false;
    for (auto it = m_.lid_undo.rbegin(); it != m_.lid_undo.rend(); ++it)
      m_.lid[it->first] = it->second;
    for (auto it = m_.orphan_undo.rbegin(); it != m_.orphan_undo.rend(); ++it) {
      m_.set_orphan(static_cast<std::uint32_t>(it->first >> 32),
                    static_cast<std::uint32_t>(it->first), it->second, false);
    }
    for (std::uint32_t si : m_.new_dead) m_.ports[si].flags |= kLive;
    for (const FailedLink& f : m_.new_failed) {
      if (m_.slot(f.sw.value, f.port).flags & kSwitchLink) ++m_.live_links[f.sw.value];
    }
    m_.changes.clear();
    m_.blocks.clear();
  }

 private:
  Rerouter::Impl& m_;
  std::uint8_t* table_;
  std::uint32_t stride_;
  std::uint32_t n_;
  const Topology& topo_;
  const LidMap& lids_;
  bool maybe_later_ = false;  // set by candidate(): see Impl::second_chance
};

}  // namespace

Result<RepairReport> Rerouter::repair(std::span<const FailedLink> failed) {
  return run(failed, nullptr);
}

Result<RepairReport> Rerouter::apply_for_test(std::span<const FailedLink> failed,
                                              std::span<const LftChange> changes) {
  for (const LftChange& c : changes) {
    if (c.sw.value >= n_ || c.lid.value >= stride_) {
      return Error{Errc::kInvalidArgument, fmt::format("change of switch {} LID {} is outside the "
                                                       "tables",
                                                       c.sw.value, c.lid.value)};
    }
  }
  return run(failed, &changes);
}

Result<RepairReport> Rerouter::run(std::span<const FailedLink> failed,
                                   const std::span<const LftChange>* given) {
  const auto t0 = Clock::now();
  RepairReport rep;
  if (stale_) {
    rep.verdict = RepairReport::Verdict::kNeedsFullRecompute;
    rep.reason = "an earlier repair was refused; the tables wait for a full recompute";
    return rep;
  }
  Impl& m = *impl_;
  Repair r(m, table_.get(), stride_, n_, topo_, lids_);
  r.begin();
  SUBNETD_TRY(r.mark_failures(failed, rep));
  r.mark_unreachable_lids();
  update_down_ok(m, rep);
  update_legal(m);
  rep.legal_routes_lost = 0;
  for (const Impl::LegalLoss& l : m.legal_lost) {
    rep.legal_routes_lost += static_cast<std::uint64_t>(std::popcount(l.bits));
  }
  rep.t_reach = Clock::now() - t0;
  Result<void> made;
  if (given == nullptr) {
    const auto ts = Clock::now();
    r.seed(rep);
    r.seed_lost_routes(rep);
    rep.t_seed = Clock::now() - ts;
    const auto t = Clock::now();
    r.route(rep);
    made = r.fill(rep);
    rep.t_route = Clock::now() - t;
  } else {
    for (const LftChange& c : *given) {
      r.record_for(c.sw.value, c.lid.value);
      r.set_entry(c.sw.value, c.lid.value, c.new_port);
    }
  }
  const auto t = Clock::now();
  r.finalize(m.dirty_since, m.blocks_per_switch);
  const Result<void> checked = made.ok() ? check_changes() : made;
  rep.t_check = Clock::now() - t;
  if (!checked.ok()) {
    r.rollback();
    stale_ = true;
    rep.verdict = RepairReport::Verdict::kNeedsFullRecompute;
    rep.reason = checked.error().message;
  }
  rep.changes = m.changes;
  rep.blocks = m.blocks;
  rep.t_total = Clock::now() - t0;
  return rep;
}

}  // namespace subnetd::routing

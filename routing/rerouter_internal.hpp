#pragma once
// What the Rerouter's source files share: port slots, per-LID destinations,
// the (switch, LID) map, and Rerouter::Impl (the precomputed state and the
// per-repair scratch). Internal to routing/.
//
//   rerouter_build.cpp   build() (the precompute and warm-up), reset(),
//                        changed_blocks(), export_routes(), link queries
//   rerouter_repair.cpp  repair() / apply_for_test(): failures, seeds,
//                        worklist rounds, orphan fill, rollback
//   rerouter_reach.cpp   the down_ok and legal updates a repair starts with
//   rerouter_check.cpp   check_changes()

#include <bit>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "routing/bitops.hpp"
#include "routing/rerouter.hpp"

namespace subnetd::routing::rerouter_internal {

using Clock = std::chrono::steady_clock;

inline constexpr std::uint32_t kNone = UINT32_MAX;
// Orphan chains are short (a fat tree needs at most three); a longer one in
// check_changes means the fill went wrong.
inline constexpr std::uint32_t kMaxOrphanWalk = 64;
// How many items ahead the repair's loops prefetch what the next ones read
// (their switches are scattered: each item is a few cache misses).
inline constexpr std::size_t kPrefetchAhead = 12;
// Legal ports a pick compares by load (see Repair::pick).
inline constexpr std::uint32_t kPickChoices = 2;

// Port slot flags.
inline constexpr std::uint8_t kSwitchLink = 1;  // cabled to another switch
inline constexpr std::uint8_t kCaLink = 2;      // cabled to a CA/router port (a delivery port)
inline constexpr std::uint8_t kUp = 4;          // switch link toward the smaller (rank, GUID)
inline constexpr std::uint8_t kLive = 8;        // the link is up as far as we know

struct PortSlot {
  std::uint32_t peer = kNoSwitch.value;  // neighbour switch (switch links)
  PortNum peer_port = 0;                 // the cable's port on the neighbour
  std::uint8_t flags = 0;
  bool live_switch() const { return (flags & (kSwitchLink | kLive)) == (kSwitchLink | kLive); }
  bool down() const { return (flags & (kSwitchLink | kUp)) == kSwitchLink; }
  bool up() const { return (flags & (kSwitchLink | kUp)) == (kSwitchLink | kUp); }
};

struct LidInfo {
  std::uint32_t sw = kNoSwitch.value;  // delivering switch; kNoSwitch = unrouted or unreachable
  PortNum port = 0;                    // delivery port (0 = the switch's own LID)
  std::uint8_t data = 0;               // a CA/router LID: loads ports
};

inline std::uint64_t key_of(std::uint32_t sw, std::uint32_t lid) {
  return (std::uint64_t{sw} << 32) | lid;
}

// Open-addressing map from (switch, LID) keys to a 32-bit value. Capacity is
// a power of two kept at most half full; clear() costs O(entries) through
// the list of used slots, so per-repair maps are cheap to reset.
class KeyMap {
 public:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  KeyMap() { rebuild(1024); }

  std::uint32_t* find(std::uint64_t key) {
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  const std::uint32_t* find(std::uint64_t key) const {
    return const_cast<KeyMap*>(this)->find(key);
  }
  // Inserts or overwrites.
  void put(std::uint64_t key, std::uint32_t value) {
    if ((used_.size() + 1) * 2 > keys_.size()) rebuild(keys_.size() * 2);
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        values_[i] = value;
        return;
      }
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        values_[i] = value;
        used_.push_back(static_cast<std::uint32_t>(i));
        return;
      }
    }
  }
  void clear() {
    for (std::uint32_t i : used_) keys_[i] = kEmpty;
    used_.clear();
  }
  std::size_t size() const { return used_.size(); }
  std::size_t bytes() const {
    return keys_.size() * (sizeof(std::uint64_t) + sizeof(std::uint32_t)) +
           used_.capacity() * sizeof(std::uint32_t);
  }

 private:
  // Fibonacci hashing: the top bits of the product mix every key bit.
  std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void rebuild(std::size_t capacity) {
    std::vector<std::uint64_t> old_keys = std::move(keys_);
    std::vector<std::uint32_t> old_values = std::move(values_);
    keys_.assign(capacity, kEmpty);
    values_.assign(capacity, 0);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(capacity));
    used_.clear();
    for (std::size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != kEmpty) put(old_keys[i], old_values[i]);
    }
  }

  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> values_;
  std::vector<std::uint32_t> used_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace subnetd::routing::rerouter_internal

namespace subnetd::routing {

struct Rerouter::Impl {
  // ---- static shape
  std::vector<std::uint32_t> port_base;  // S+1 offsets into ports
  std::vector<rerouter_internal::PortSlot> ports;
  std::vector<std::uint32_t> up_first, down_first;  // S+1 offsets into up_list / down_list
  std::vector<PortNum> up_list, down_list;          // switch-link ports by class
  std::vector<std::uint8_t> has_endpoints;
  std::uint32_t words = 0;  // 64-bit words per down_ok row

  // ---- current state (what repairs change) and what reset() returns to
  std::vector<rerouter_internal::LidInfo> lid, lid0;
  std::vector<std::uint32_t> live_links;  // per switch: live switch-to-switch links
  std::vector<std::uint32_t> live_links0;
  std::vector<std::uint32_t> load, load0;  // per port slot: data LIDs routed
  // down_ok[s * words + t/64] bit t%64: s reaches t over live down-links only
  // (s reaches itself).
  std::vector<std::uint64_t> down_ok, down_ok0;
  // Orphans. Implicit: every entry of switch s for a LID of switch t while s
  // has no up*/down* route to t (legal bit clear): at build, or since a
  // repair took the last one (failures only remove routes, so only reset()
  // brings one back). legal[s] = down_ok[s] | legal of every live up-link's
  // far end. This is the per-destination-switch state of the repair: an
  // implicit orphan needs no entry changed unless it named a failed port.
  // Explicit: entries the repair filled at a switch that still has a route
  // in principle but got none, (switch, LID) -> 1 while an orphan.
  std::vector<std::uint64_t> legal, legal0;  // S x words, like down_ok
  // The same bits by destination: legal_t[t * words + s/64] bit s%64. The
  // repair asks about one destination switch at many switches (every
  // neighbour, every up-link), which this keeps in one 1 KiB row at 8,000
  // switches instead of a cache line per switch.
  std::vector<std::uint64_t> legal_t, legal_t0;
  // LIDs by delivering switch at build (lid0): lids_first[t] .. lids_first[t+1]
  // index lids_list, ascending.
  std::vector<std::uint32_t> lids_first, lids_list;
  // Explicit orphans: a bitmap over LIDs per switch that holds any, from a
  // pool that grows only when more switches hold orphans than ever before.
  std::vector<std::uint32_t> orphan_slot;   // per switch: pool slot or rerouter_internal::kNone
  std::vector<std::uint32_t> orphan_count;  // per switch: explicit orphans
  std::vector<std::uint64_t> orphan_pool;   // slots x lid_words
  std::vector<std::uint32_t> free_slots;
  std::uint32_t lid_words = 0;
  std::vector<std::uint64_t> dirty_since;  // S x blocks bits: blocks changed since build
  std::uint32_t blocks_per_switch = 0;

  // ---- per-repair scratch
  struct Rec {
    std::uint32_t sw;
    std::uint32_t lid;
    std::uint8_t old;
  };
  std::uint32_t epoch = 0;
  std::vector<Rec> recs;                // one per (switch, LID) touched in this repair
  rerouter_internal::KeyMap rec_index;  // (switch, LID) -> index into recs, for non-seed records
  struct SeedRange {
    std::uint32_t epoch = 0;
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
  };
  std::vector<SeedRange> seed_range;   // per switch: its seeds in recs (ascending LID)
  std::vector<std::uint32_t> touched;  // per switch: epoch of the last record
  struct PickState {
    std::uint32_t epoch = 0;
    std::uint32_t cursor_up = 0, cursor_down = 0;
  };
  std::vector<PickState> pick_state;
  std::vector<std::uint32_t> pending, next_pending, dead, dead_orphans, blocked, retry, dead_all;
  // Dead ends that rejected a neighbour which may still change (blocked and
  // waiting for its retry, or on the worklist): the fill tries them again.
  std::vector<std::uint32_t> second_chance;
  std::vector<std::uint32_t> blocked_mark;  // per switch: epoch when it has a blocked record
  std::vector<std::uint32_t> down_mark;     // per switch: epoch when an entry was set going down
  std::vector<PortNum> orphan_hint;         // per switch: port the last orphan entry took
  std::vector<PortNum> two_hop_hint;        // per switch: Repair::two_hop's last port
  std::vector<std::uint8_t> t_has_data;     // per switch: it delivers CA/router LIDs
  std::vector<std::uint32_t> scan_buf;
  std::vector<std::uint32_t> new_dead;  // port slots failed in this repair
  std::vector<FailedLink> new_failed;   // their switch ends (for the check)
  std::vector<FailedLink> seed_ends;
  std::vector<std::pair<std::size_t, std::uint64_t>> down_ok_undo, legal_undo;
  // legal bits this repair cleared: (switch, word, bits).
  struct LegalLoss {
    std::uint32_t sw;
    std::uint32_t word;
    std::uint64_t bits;
  };
  std::vector<LegalLoss> legal_lost;
  // update_legal's scratch: candidate bits per (switch, word), all zero
  // between repairs, and the switches by their place in the up/down order
  // (top first): a switch is settled once, after every switch above it.
  std::vector<std::uint64_t> legal_pend;
  // Which words of a switch's legal_pend row are non-zero (sum_words bits a
  // switch): a switch usually has one destination word pending, and
  // reading its whole row (1 KiB at 8,000 switches) to find it was most of
  // the update's cache misses.
  std::vector<std::uint64_t> legal_pend_sum;
  std::uint32_t sum_words = 0;
  std::vector<std::uint32_t> pos, by_pos;
  std::vector<std::uint32_t> legal_heap;  // positions, a min-heap
  std::vector<std::pair<std::uint32_t, std::uint64_t>> lost_here;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> cut_words;  // switches cut off now
  struct Probe {  // one LFT block to read: for_entries_into_lost
    std::uint32_t sw;
    std::uint32_t block;
    std::uint64_t want;
    std::uint8_t port;
  };
  std::vector<Probe> probes;
  // The records for_entries_into_lost found (when lost_scanned): the check
  // reads their entries instead of scanning the tables again.
  std::vector<std::uint32_t> lost_recs;
  bool lost_scanned = false;
  std::vector<std::pair<std::uint32_t, rerouter_internal::LidInfo>> lid_undo;
  std::vector<std::pair<std::uint64_t, bool>> orphan_undo;  // (switch, LID), previous state
  std::vector<LftChange> changes;
  std::vector<DirtyBlock> blocks;
  std::vector<std::uint64_t> dirty_now;  // S x blocks bits, cleared after each repair
  std::vector<std::uint32_t> work;       // down_ok worklist
  std::vector<std::pair<std::uint32_t, std::uint64_t>> target_words;
  std::vector<std::uint64_t> down_ok_acc;  // update_down_ok's union of rows
  std::vector<std::uint8_t> in_work;
  std::vector<std::uint32_t> check_mark;  // per switch: check_epoch when it has changes
  std::uint32_t check_epoch = 0;

  std::uint32_t slot_index(std::uint32_t s, PortNum p) const { return port_base[s] + p; }
  bool has_port(std::uint32_t s, PortNum p) const { return port_base[s] + p < port_base[s + 1]; }
  const rerouter_internal::PortSlot& slot(std::uint32_t s, PortNum p) const {
    return ports[port_base[s] + p];
  }
  bool down_ok_bit(std::uint32_t s, std::uint32_t t) const {
    if (down_first[s] == down_first[s + 1]) return s == t;  // no down-links: no read
    return (down_ok[std::size_t{s} * words + t / 64] >> (t % 64)) & 1U;
  }
  std::uint64_t down_ok_word(std::uint32_t s, std::uint32_t w) const {
    if (down_first[s] == down_first[s + 1]) {
      return s / 64 == w ? std::uint64_t{1} << (s % 64) : 0;
    }
    return down_ok[std::size_t{s} * words + w];
  }
  // Two layouts of one bit: by switch where one switch asks about many
  // destinations (a run of records), by destination where one destination
  // is asked about many switches.
  bool legal_bit(std::uint32_t s, std::uint32_t t) const {
    return (legal[std::size_t{s} * words + t / 64] >> (t % 64)) & 1U;
  }
  bool legal_bit_by_dest(std::uint32_t s, std::uint32_t t) const {
    return (legal_t[std::size_t{t} * words + s / 64] >> (s % 64)) & 1U;
  }
  // Clears (lost) or sets legal bits of switch s in word w of its row, in
  // both layouts.
  void legal_update(std::uint32_t s, std::uint32_t w, std::uint64_t bits, bool on) {
    std::uint64_t& cur = legal[std::size_t{s} * words + w];
    cur = on ? (cur | bits) : (cur & ~bits);
    const std::uint64_t mask = std::uint64_t{1} << (s % 64);
    for (; bits != 0; bits &= bits - 1) {
      const std::uint32_t t = w * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
      std::uint64_t& col = legal_t[std::size_t{t} * words + s / 64];
      col = on ? (col | mask) : (col & ~mask);
    }
  }
  bool implicit_orphan(std::uint32_t s, std::uint32_t d) const {
    const std::uint32_t t0 = lid0[d].sw;
    return t0 != kNoSwitch.value && !legal_bit(s, t0);
  }
  bool explicit_orphan(std::uint32_t s, std::uint32_t d) const {
    if (orphan_count[s] == 0) return false;
    const std::uint64_t w = orphan_pool[std::size_t{orphan_slot[s]} * lid_words + d / 64];
    return (w >> (d % 64)) & 1U;
  }
  bool is_orphan(std::uint32_t s, std::uint32_t d) const {
    return implicit_orphan(s, d) || explicit_orphan(s, d);
  }
  // Marks or clears an explicit orphan; `undo` records it for rollback.
  void set_orphan(std::uint32_t s, std::uint32_t d, bool on, bool undo = true) {
    if (explicit_orphan(s, d) == on) return;
    if (undo) orphan_undo.emplace_back(rerouter_internal::key_of(s, d), !on);
    if (orphan_slot[s] == rerouter_internal::kNone) {
      if (free_slots.empty()) {
        free_slots.push_back(static_cast<std::uint32_t>(orphan_pool.size() / lid_words));
        orphan_pool.resize(orphan_pool.size() + lid_words, 0);
      }
      orphan_slot[s] = free_slots.back();
      free_slots.pop_back();
    }
    std::uint64_t& w = orphan_pool[std::size_t{orphan_slot[s]} * lid_words + d / 64];
    w ^= std::uint64_t{1} << (d % 64);
    if (on) {
      ++orphan_count[s];
    } else if (--orphan_count[s] == 0) {
      free_slots.push_back(orphan_slot[s]);  // all its bits are clear again
      orphan_slot[s] = rerouter_internal::kNone;
    }
  }
};

}  // namespace subnetd::routing

namespace subnetd::routing::rerouter_internal {

// Calls f(neighbour switch, LID) for every entry of a switch that still has
// an up*/down* route to t and leads into x, for every destination switch t
// that x lost its legal route to in the current repair (legal_lost): those
// entries must move, as no legal route may enter an orphan. Reads each
// neighbour's entries for t's LIDs a 64-byte block at a time. The repair
// moves them; check_changes() proves none is left.
template <class F>
void for_entries_into_lost(Rerouter::Impl& m, const std::uint8_t* table, std::uint32_t stride,
                           F&& f) {
  // Two passes: list the blocks to read, then read them, a few ahead: they
  // are scattered over the tables, and independent reads overlap.
  auto& probes = m.probes;
  probes.clear();
  // A switch's losses are listed together (update_legal settles a switch
  // once): each neighbour below it is visited once for all of them, and
  // the blocks of neighbouring destinations merge into one read (near the
  // roots of updn a switch loses thousands of destinations with one LID
  // each, 64 to a block: 3.6 times fewer reads there).
  const auto& lost = m.legal_lost;
  for (std::size_t g = 0; g < lost.size();) {
    const std::uint32_t x = lost[g].sw;
    std::size_t g_end = g + 1;
    while (g_end < lost.size() && lost[g_end].sw == x) ++g_end;
    // Only a neighbour below x can have a legal route: one above would
    // give x its own.
    for (std::uint32_t k = m.down_first[x]; k < m.down_first[x + 1]; ++k) {
      const PortSlot& sl = m.slot(x, m.down_list[k]);
      if (!sl.live_switch()) continue;
      for (std::size_t li = g; li < g_end; ++li) {
        const Rerouter::Impl::LegalLoss& loss = lost[li];
        std::uint64_t legal_here = 0;
        if (std::popcount(loss.bits) <= 2) {  // by destination: those rows are cached
          for (std::uint64_t b = loss.bits; b != 0; b &= b - 1) {
            const std::uint32_t t =
                loss.word * 64 + static_cast<std::uint32_t>(std::countr_zero(b));
            if (m.legal_bit_by_dest(sl.peer, t)) legal_here |= b & -b;
          }
        } else {
          legal_here = loss.bits & m.legal[std::size_t{sl.peer} * m.words + loss.word];
        }
        for (std::uint64_t bits = legal_here; bits != 0; bits &= bits - 1) {
          const std::uint32_t t =
              loss.word * 64 + static_cast<std::uint32_t>(std::countr_zero(bits));
          const std::uint32_t first = m.lids_first[t], last = m.lids_first[t + 1];
          for (std::uint32_t i = first; i < last;) {
            const std::uint32_t block = m.lids_list[i] / kLftBlockSize;
            std::uint64_t want = 0;
            for (; i < last && m.lids_list[i] / kLftBlockSize == block; ++i) {
              want |= std::uint64_t{1} << (m.lids_list[i] % kLftBlockSize);
            }
            Rerouter::Impl::Probe* back = probes.empty() ? nullptr : &probes.back();
            if (back != nullptr && back->sw == sl.peer && back->block == block &&
                back->port == sl.peer_port) {
              back->want |= want;
            } else {
              probes.push_back({sl.peer, block, want, sl.peer_port});
            }
          }
        }
      }
    }
    g = g_end;
  }
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (i + kPrefetchAhead < probes.size()) {
      const Rerouter::Impl::Probe& ahead = probes[i + kPrefetchAhead];
      __builtin_prefetch(table + std::size_t{ahead.sw} * stride +
                         std::size_t{ahead.block} * kLftBlockSize);
    }
    const Rerouter::Impl::Probe& p = probes[i];
    const std::uint32_t base = p.block * kLftBlockSize;
    const std::uint8_t* r = table + std::size_t{p.sw} * stride + base;
    for (std::uint64_t hit = equal_mask64(r, p.port) & p.want; hit != 0; hit &= hit - 1) {
      if (!f(p.sw, base + static_cast<std::uint32_t>(std::countr_zero(hit)))) return;
    }
  }
}

// rerouter_reach.cpp. update_down_ok removes the down_ok bits the failed
// links (m.new_failed) took, with undo records in m.down_ok_undo;
// update_legal then removes the legal bits, with undo records in
// m.legal_undo, listing each loss in m.legal_lost.
void update_down_ok(Rerouter::Impl& m, RepairReport& rep);
void update_legal(Rerouter::Impl& m);

}  // namespace subnetd::routing::rerouter_internal

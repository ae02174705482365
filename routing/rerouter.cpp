#include "routing/rerouter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "routing/bitops.hpp"

namespace subnetd::routing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kNone = UINT32_MAX;
// Orphan chains are short (a fat tree needs at most three); a longer one in
// check_changes means the fill went wrong.
constexpr std::uint32_t kMaxOrphanWalk = 64;

// Port slot flags.
constexpr std::uint8_t kSwitchLink = 1;  // cabled to another switch
constexpr std::uint8_t kCaLink = 2;      // cabled to a CA/router port (a delivery port)
constexpr std::uint8_t kUp = 4;          // switch link toward the smaller (rank, GUID)
constexpr std::uint8_t kLive = 8;        // the link is up as far as we know

struct PortSlot {
  std::uint32_t peer = kNoSwitch;  // neighbour switch (switch links)
  PortNum peer_port = 0;           // the cable's port on the neighbour
  std::uint8_t flags = 0;
  bool live_switch() const { return (flags & (kSwitchLink | kLive)) == (kSwitchLink | kLive); }
  bool down() const { return (flags & (kSwitchLink | kUp)) == kSwitchLink; }
  bool up() const { return (flags & (kSwitchLink | kUp)) == (kSwitchLink | kUp); }
};

struct LidInfo {
  std::uint32_t sw = kNoSwitch;  // delivering switch; kNoSwitch = unrouted or unreachable
  PortNum port = 0;              // delivery port (0 = the switch's own LID)
  std::uint8_t data = 0;         // a CA/router LID: loads ports
};

std::uint64_t key_of(std::uint32_t sw, std::uint32_t lid) {
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

}  // namespace

struct Rerouter::Impl {
  // ---- static shape
  std::vector<std::uint32_t> port_base;  // S+1 offsets into ports
  std::vector<PortSlot> ports;
  std::vector<std::uint32_t> up_first, down_first;  // S+1 offsets into up_list / down_list
  std::vector<PortNum> up_list, down_list;          // switch-link ports by class
  std::vector<std::uint8_t> has_endpoints;
  std::uint32_t words = 0;  // 64-bit words per down_ok row

  // ---- current state (what repairs change) and what reset() returns to
  std::vector<LidInfo> lid, lid0;
  std::vector<std::uint32_t> live_links;  // per switch: live switch-to-switch links
  std::vector<std::uint32_t> live_links0;
  std::vector<std::uint32_t> load, load0;  // per port slot: data LIDs routed
  // down_ok[s * words + t/64] bit t%64: s reaches t over live down-links only
  // (s reaches itself).
  std::vector<std::uint64_t> down_ok, down_ok0;
  // Orphans. Implicit: every entry of switch s for a LID of switch t when s
  // had no up*/down* route to t at build (legal0 bit clear); failures only
  // remove routes, so that never changes. Explicit: entries the repair
  // filled, (switch, LID) -> 1 while an orphan (0 = no longer).
  std::vector<std::uint64_t> legal0;  // S x words, like down_ok
  // Explicit orphans: a bitmap over LIDs per switch that holds any, from a
  // pool that grows only when more switches hold orphans than ever before.
  std::vector<std::uint32_t> orphan_slot;   // per switch: pool slot or kNone
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
  std::vector<Rec> recs;  // one per (switch, LID) touched in this repair
  KeyMap rec_index;       // (switch, LID) -> index into recs, for non-seed records
  struct SeedRange {
    std::uint32_t epoch = 0;
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
  };
  std::vector<SeedRange> seed_range;   // per switch: its seeds in recs (ascending LID)
  std::vector<std::uint32_t> touched;  // per switch: epoch of the last record
  struct PickState {
    std::uint32_t epoch = 0;
    std::uint32_t level_up = 0, level_down = 0;  // lower bounds of live class loads
    std::uint32_t cursor_up = 0, cursor_down = 0;
  };
  std::vector<PickState> pick_state;
  std::vector<std::uint32_t> pending, next_pending, dead, blocked, retry, dead_all;
  // Dead ends that rejected a neighbour which may still change (blocked and
  // waiting for its retry, or on the worklist): the fill tries them again.
  std::vector<std::uint32_t> second_chance;
  std::vector<std::uint32_t> blocked_mark;  // per switch: epoch when it has a blocked record
  std::vector<std::uint32_t> down_mark;     // per switch: epoch when an entry was set going down
  std::vector<PortNum> orphan_hint;         // per switch: port the last orphan entry took
  std::vector<std::uint32_t> scan_buf;
  std::vector<std::uint32_t> new_dead;  // port slots failed in this repair
  std::vector<FailedLink> new_failed;   // their switch ends (for the check)
  std::vector<FailedLink> seed_ends;
  std::vector<std::pair<std::size_t, std::uint64_t>> down_ok_undo;
  std::vector<std::pair<std::uint32_t, LidInfo>> lid_undo;
  std::vector<std::pair<std::uint64_t, bool>> orphan_undo;  // (switch, LID), previous state
  std::vector<LftChange> changes;
  std::vector<DirtyBlock> blocks;
  std::vector<std::uint64_t> dirty_now;  // S x blocks bits, cleared after each repair
  std::vector<std::uint32_t> work;       // down_ok worklist
  std::vector<std::pair<std::uint32_t, std::uint64_t>> target_words;
  std::vector<std::uint8_t> in_work;
  std::vector<std::uint32_t> check_mark;  // per switch: check_epoch when it has changes
  std::uint32_t check_epoch = 0;

  std::uint32_t slot_index(std::uint32_t s, PortNum p) const { return port_base[s] + p; }
  bool has_port(std::uint32_t s, PortNum p) const { return port_base[s] + p < port_base[s + 1]; }
  const PortSlot& slot(std::uint32_t s, PortNum p) const { return ports[port_base[s] + p]; }
  bool down_ok_bit(std::uint32_t s, std::uint32_t t) const {
    return (down_ok[std::size_t{s} * words + t / 64] >> (t % 64)) & 1U;
  }
  bool implicit_orphan(std::uint32_t s, std::uint32_t d) const {
    const std::uint32_t t0 = lid0[d].sw;
    return t0 != kNoSwitch && ((legal0[std::size_t{s} * words + t0 / 64] >> (t0 % 64)) & 1U) == 0;
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
    if (undo) orphan_undo.emplace_back(key_of(s, d), !on);
    if (orphan_slot[s] == kNone) {
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
      orphan_slot[s] = kNone;
    }
  }
};

Rerouter::Rerouter(const Topology& topo, const LidMap& lids, std::shared_ptr<const Routes> routes)
    : topo_(topo), lids_(lids), base_(std::move(routes)), impl_(std::make_unique<Impl>()) {}

Rerouter::~Rerouter() = default;

Result<std::unique_ptr<Rerouter>> Rerouter::build(const Topology& topo, const LidMap& lids,
                                                  std::shared_ptr<const Routes> routes,
                                                  WorkerPool& pool, std::stop_token stop) {
  const auto t0 = Clock::now();
  if (!routes) return Error{Errc::kInvalidArgument, "rerouter: no routes"};
  const auto n = static_cast<std::uint32_t>(topo.num_switches());
  if (routes->updown_rank.empty()) {
    return Error{Errc::kUnsupported,
                 fmt::format("engine {} gives no up/down order; link failures are repaired by a "
                             "full recompute",
                             routes->engine)};
  }
  if (routes->updown_rank.size() != n || routes->lfts.size() != n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("routes cover {} switches ({} ranks), the fabric has {}",
                             routes->lfts.size(), routes->updown_rank.size(), n)};
  }
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));

  std::unique_ptr<Rerouter> r(new Rerouter(topo, lids, std::move(routes)));
  const Routes& base = *r->base_;
  Impl& m = *r->impl_;
  r->n_ = n;
  std::uint32_t entries = (g.max_lid().value / kLftBlockSize + 1) * kLftBlockSize;
  for (const Lft& l : base.lfts) entries = std::max(entries, l.size());
  r->stride_ = entries;
  m.blocks_per_switch = entries / kLftBlockSize;
  m.words = (n + 63) / 64;

  // Port slots: classes from the rank, liveness from the cabling.
  const auto& rank = base.updown_rank;
  auto guid = [&](std::uint32_t s) { return topo.node(topo.switch_node(s)).guid.value; };
  auto before = [&](std::uint32_t a, std::uint32_t b) {
    return std::pair(rank[a], guid(a)) < std::pair(rank[b], guid(b));
  };
  m.port_base.assign(n + 1, 0);
  for (std::uint32_t s = 0; s < n; ++s)
    m.port_base[s + 1] = m.port_base[s] + topo.node(topo.switch_node(s)).num_ports + 1U;
  m.ports.assign(m.port_base[n], PortSlot{});
  m.up_first.assign(n + 1, 0);
  m.down_first.assign(n + 1, 0);
  m.has_endpoints.assign(n, 0);
  m.live_links.assign(n, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    const NodeId node = topo.switch_node(s);
    m.has_endpoints[s] = g.has_endpoints(s) ? 1 : 0;
    for (unsigned p = 1; p <= topo.node(node).num_ports; ++p) {
      const Port& port = topo.port(node, static_cast<PortNum>(p));
      if (!port.connected() || p == kDropPort) continue;
      if (topo.node(port.remote_node).type != NodeType::kSwitch) {
        m.ports[m.port_base[s] + p].flags = kCaLink | kLive;
      }
    }
    for (const SwitchArc& a : g.arcs(s)) {
      PortSlot& sl = m.ports[m.port_base[s] + a.local_port];
      sl.peer = a.to;
      sl.peer_port = a.remote_port;
      sl.flags = kSwitchLink | kLive | (before(a.to, s) ? kUp : 0);
      ++m.live_links[s];
      if (sl.up()) {
        m.up_list.push_back(a.local_port);
      } else {
        m.down_list.push_back(a.local_port);
      }
    }
    m.up_first[s + 1] = static_cast<std::uint32_t>(m.up_list.size());
    m.down_first[s + 1] = static_cast<std::uint32_t>(m.down_list.size());
  }
  m.live_links0 = m.live_links;

  m.lid.assign(entries, LidInfo{});
  const auto att = g.attachments();
  for (std::size_t d = 1; d < att.size() && d < entries; ++d) {
    if (!att[d].routable()) continue;
    m.lid[d] = LidInfo{att[d].sw, att[d].port, static_cast<std::uint8_t>(att[d].port != 0)};
  }
  m.lid0 = m.lid;

  // Working tables: one contiguous copy, rows filled in parallel.
  auto t = Clock::now();
  r->table_ = HugeBuffer(std::size_t{n} * entries);
  m.load.assign(m.ports.size(), 0);
  const std::size_t grain = std::max<std::size_t>(1, n / (std::size_t{pool.size()} * 16));
  pool.parallel_for(n, grain, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t s = b; s < e; ++s) {
      std::uint8_t* row = r->table_.get() + s * entries;
      const Lft& l = base.lfts[s];
      std::memcpy(row, l.data(), l.size());
      std::memset(row + l.size(), kDropPort, entries - l.size());
    }
  });
  r->stats_.t_tables = Clock::now() - t;
  if (stop.stop_requested()) return Error{Errc::kCancelled, "rerouter build cancelled"};

  // Per-port counts of data LIDs (the balance the repair keeps).
  t = Clock::now();
  pool.parallel_for(n, grain, [&](std::size_t b, std::size_t e, unsigned) {
    std::array<std::uint32_t, 256> count{};
    for (std::size_t si = b; si < e; ++si) {
      const auto s = static_cast<std::uint32_t>(si);
      count.fill(0);
      const std::uint8_t* row = r->table_.get() + si * entries;
      const LidInfo* info = m.lid.data();
      for (std::uint32_t d = 1; d < entries; ++d) {
        count[row[d]] += (info[d].data != 0 && info[d].sw != s) ? 1U : 0U;
      }
      for (unsigned p = 1; p < m.port_base[s + 1] - m.port_base[s]; ++p) {
        if (m.ports[m.port_base[s] + p].flags & kSwitchLink) m.load[m.port_base[s] + p] = count[p];
      }
    }
  });
  m.load0 = m.load;
  r->stats_.t_loads = Clock::now() - t;
  if (stop.stop_requested()) return Error{Errc::kCancelled, "rerouter build cancelled"};

  // down_ok: the closure of the down-links, switches from the bottom of the
  // order up; independent per word of the rows, so word ranges run in
  // parallel.
  t = Clock::now();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0U);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return before(b, a);  // last in the order first
  });
  m.down_ok.assign(std::size_t{n} * m.words, 0);
  const std::uint32_t words = m.words;
  const std::size_t chunks = std::min<std::size_t>(words, std::size_t{pool.size()} * 4);
  pool.parallel_for(chunks, 1, [&](std::size_t cb, std::size_t ce, unsigned) {
    for (std::size_t c = cb; c < ce; ++c) {
      const std::uint32_t w0 = static_cast<std::uint32_t>(c * words / chunks);
      const std::uint32_t w1 = static_cast<std::uint32_t>((c + 1) * words / chunks);
      for (std::uint32_t s : order) {
        std::uint64_t* row = &m.down_ok[std::size_t{s} * words];
        if (s / 64 >= w0 && s / 64 < w1) row[s / 64] |= std::uint64_t{1} << (s % 64);
        for (std::uint32_t i = m.down_first[s]; i < m.down_first[s + 1]; ++i) {
          const std::uint32_t v = m.ports[m.port_base[s] + m.down_list[i]].peer;
          const std::uint64_t* src = &m.down_ok[std::size_t{v} * words];
          for (std::uint32_t w = w0; w < w1; ++w) row[w] |= src[w];
        }
      }
    }
  });
  m.down_ok0 = m.down_ok;

  // Switches with no up*/down* route at all to a destination switch (a core
  // that lost its only link into a pod): an engine may still give them
  // entries (ftree routes them down and then up), which no CA traffic can
  // enter — a route into them could not be up*down* either. They are
  // orphans from the start. legal[s] = down_ok[s] | legal of every switch
  // above s, closed from the top of the order down.
  m.orphan_count.assign(n, 0);
  m.orphan_slot.assign(n, kNone);
  m.lid_words = (entries + 63) / 64;
  // Room for 64 switches with orphans before the pool has to grow.
  m.orphan_pool.assign(std::size_t{64} * m.lid_words, 0);
  for (std::uint32_t i = 64; i-- > 0;) m.free_slots.push_back(i);
  {
    std::vector<std::uint64_t> legal(m.down_ok.size(), 0);
    std::vector<std::uint32_t> top_down(order.rbegin(), order.rend());
    pool.parallel_for(chunks, 1, [&](std::size_t cb, std::size_t ce, unsigned) {
      for (std::size_t c = cb; c < ce; ++c) {
        const std::uint32_t w0 = static_cast<std::uint32_t>(c * words / chunks);
        const std::uint32_t w1 = static_cast<std::uint32_t>((c + 1) * words / chunks);
        for (std::uint32_t s : top_down) {
          std::uint64_t* row = &legal[std::size_t{s} * words];
          const std::uint64_t* own = &m.down_ok[std::size_t{s} * words];
          for (std::uint32_t w = w0; w < w1; ++w) row[w] = own[w];
          for (std::uint32_t i = m.up_first[s]; i < m.up_first[s + 1]; ++i) {
            const std::uint32_t u = m.ports[m.port_base[s] + m.up_list[i]].peer;
            const std::uint64_t* src = &legal[std::size_t{u} * words];
            for (std::uint32_t w = w0; w < w1; ++w) row[w] |= src[w];
          }
        }
      }
    });
    // A switch that carries CAs must have an up*/down* route to every
    // switch with CA/router LIDs in its part (the promise of lft.hpp);
    // otherwise its data would have to take an orphan route.
    std::vector<std::uint64_t> has_data(words, 0);
    for (std::uint32_t d = 1; d < entries; ++d) {
      if (m.lid[d].data != 0) has_data[m.lid[d].sw / 64] |= std::uint64_t{1} << (m.lid[d].sw % 64);
    }
    for (std::uint32_t s = 0; s < n; ++s) {
      const std::uint64_t* row = &legal[std::size_t{s} * words];
      for (std::uint32_t w = 0; w < words; ++w) {
        r->stats_.initial_orphan_pairs +=
            static_cast<std::uint64_t>(std::popcount(~row[w] & has_data[w]));
        if (m.has_endpoints[s] == 0) continue;
        for (std::uint64_t missing = ~row[w] & has_data[w]; missing != 0; missing &= missing - 1) {
          const std::uint32_t tt = w * 64 + static_cast<std::uint32_t>(std::countr_zero(missing));
          if (g.component(tt) != g.component(s)) continue;
          const Node& a = topo.node(topo.switch_node(s));
          const Node& b = topo.node(topo.switch_node(tt));
          return Error{
              Errc::kInvalidArgument,
              fmt::format("routes of engine {} send CA traffic from \"{}\" ({:#018x}) to "
                          "\"{}\" ({:#018x}), which has no up*/down* route under their "
                          "order",
                          base.engine, a.description, a.guid.value, b.description, b.guid.value)};
        }
      }
    }
    m.legal0 = std::move(legal);
  }
  r->stats_.t_down_ok = Clock::now() - t;

  m.dirty_since.assign((std::size_t{n} * m.blocks_per_switch + 63) / 64, 0);
  m.dirty_now.assign(m.dirty_since.size(), 0);
  m.seed_range.assign(n, {});
  m.touched.assign(n, 0);
  m.pick_state.assign(n, {});
  m.in_work.assign(n, 0);
  m.check_mark.assign(n, 0);
  m.blocked_mark.assign(n, 0);
  m.down_mark.assign(n, 0);
  m.orphan_hint.assign(n, 0);

  const auto t_warm = Clock::now();
  r->warm_up();
  r->stats_.t_warmup = Clock::now() - t_warm;

  r->stats_.switches = n;
  r->stats_.lft_entries = entries;
  r->stats_.table_bytes = std::uint64_t{n} * entries;
  std::uint64_t bytes = r->stats_.table_bytes;
  bytes += (m.port_base.size() + m.up_first.size() + m.down_first.size()) * 4;
  bytes += m.ports.size() * sizeof(PortSlot) + m.up_list.size() + m.down_list.size();
  bytes += (m.lid.size() + m.lid0.size()) * sizeof(LidInfo);
  bytes += (m.load.size() + m.load0.size()) * 4 + (m.live_links.size() * 2) * 4;
  bytes += (m.down_ok.size() + m.down_ok0.size()) * 8;
  bytes += (m.dirty_since.size() + m.dirty_now.size()) * 8;
  bytes += n * (sizeof(Impl::SeedRange) + sizeof(Impl::PickState) + 4 + 4 + 1 + 1);
  bytes += m.legal0.size() * 8 + m.orphan_pool.size() * 8 + m.rec_index.bytes() + n * 8;
  r->stats_.memory_bytes = bytes;
  r->stats_.t_build = Clock::now() - t0;
  return r;
}

void Rerouter::warm_up() {
  const Impl& m = *impl_;
  std::optional<FailedLink> pick, fallback;
  for (std::uint32_t s = 0; s < n_ && !pick; ++s) {
    PortNum p = 0;
    if (m.up_first[s] < m.up_first[s + 1]) {
      p = m.up_list[m.up_first[s]];
    } else if (m.down_first[s] < m.down_first[s + 1]) {
      p = m.down_list[m.down_first[s]];
    }
    if (p == 0) continue;
    if (m.has_endpoints[s] != 0) {
      pick = FailedLink{s, p};
    } else if (!fallback) {
      fallback = FailedLink{s, p};
    }
  }
  if (!pick) pick = fallback;
  if (!pick) return;  // no switch-to-switch link to fail
  const FailedLink cut[] = {*pick};
  if (auto rep = repair(cut); rep.ok()) {
    stats_.warmup_changes = rep->changes.size();
    stats_.warmup_blocks = rep->blocks.size();
  }
  reset();
}

bool Rerouter::link_live(std::uint32_t sw, PortNum port) const {
  if (sw >= n_ || !impl_->has_port(sw, port)) return false;
  const std::uint8_t f = impl_->slot(sw, port).flags;
  return (f & kLive) != 0 && (f & (kSwitchLink | kCaLink)) != 0;
}

bool Rerouter::link_known(std::uint32_t sw, PortNum port) const {
  if (sw >= n_ || !impl_->has_port(sw, port)) return false;
  return (impl_->slot(sw, port).flags & (kSwitchLink | kCaLink)) != 0;
}

// ---------------------------------------------------------------- repair

namespace {

// Everything one repair (or apply_for_test) does, over the Rerouter's state.
// A short-lived object on the caller's stack; all buffers live in Impl.
class Repair {
 public:
  enum class Choice { kChosen, kDeadEnd, kBlocked, kUnreachable };

  Repair(Rerouter::Impl& m, std::uint8_t* table, std::uint32_t stride, std::uint32_t n,
         const Topology& topo, const LidMap& lids)
      : m_(m), table_(table), stride_(stride), n_(n), topo_(topo), lids_(lids) {}

  std::uint8_t* row(std::uint32_t s) const { return table_ + std::size_t{s} * stride_; }

  std::string where(std::uint32_t s) const { return topo_.switch_label(s); }

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
      if (f.sw >= n_) {
        return Error{Errc::kNotFound,
                     fmt::format("failed link: no switch with index {} ({} switches)", f.sw, n_)};
      }
      if (f.port == 0 || !m_.has_port(f.sw, f.port)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("failed link: switch {} has no port {}", where(f.sw), f.port)};
      }
      if ((m_.slot(f.sw, f.port).flags & (kSwitchLink | kCaLink)) == 0) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("failed link: port {} of switch {} was not cabled when the "
                                 "routes were computed",
                                 f.port, where(f.sw))};
      }
    }
    for (const FailedLink& f : failed) {
      PortSlot& sl = m_.ports[m_.slot_index(f.sw, f.port)];
      if ((sl.flags & kLive) == 0) continue;  // known already (e.g. both ends reported)
      sl.flags &= static_cast<std::uint8_t>(~kLive);
      m_.new_dead.push_back(m_.slot_index(f.sw, f.port));
      m_.new_failed.push_back(f);
      if (sl.flags & kCaLink) {
        ++rep.ca_links_failed;
        continue;
      }
      ++rep.switch_links_failed;
      PortSlot& far = m_.ports[m_.slot_index(sl.peer, sl.peer_port)];
      far.flags &= static_cast<std::uint8_t>(~kLive);
      m_.new_dead.push_back(m_.slot_index(sl.peer, sl.peer_port));
      m_.new_failed.push_back(FailedLink{sl.peer, sl.peer_port});
      --m_.live_links[f.sw];
      --m_.live_links[sl.peer];
    }
    return {};
  }

  // LIDs behind failed CA links can no longer be reached.
  void mark_unreachable_lids() {
    for (const FailedLink& f : m_.new_failed) {
      if ((m_.slot(f.sw, f.port).flags & kCaLink) == 0) continue;
      // The CA/router port at the far end and its 2^LMC LIDs.
      const Port& p = topo_.port(topo_.switch_node(f.sw), f.port);
      const std::uint32_t idx = topo_.port_index(p.remote_node, p.remote_port);
      const std::uint32_t base =
          idx < lids_.base_by_port.size() ? lids_.base_by_port[idx].value : 0;
      if (base == 0) continue;
      const std::uint32_t count = lids_.lids_per_port(topo_, p.remote_node);
      for (std::uint32_t d = base; d < base + count && d < stride_; ++d) {
        if (m_.lid[d].sw != f.sw || m_.lid[d].port != f.port) continue;
        m_.lid_undo.emplace_back(d, m_.lid[d]);
        m_.lid[d].sw = kNoSwitch;
      }
    }
  }

  // Removes down_ok bits that needed a failed down-link: a decremental
  // closure from the upper ends, word-parallel over the destinations that
  // could be affected (those below the failed links).
  void update_down_ok(RepairReport& rep) {
    auto& work = m_.work;
    work.clear();
    auto& tw = m_.target_words;
    tw.clear();
    const std::uint32_t words = m_.words;
    std::vector<std::uint64_t>& bits = m_.down_ok;
    // Target words: the union of the lower ends' rows.
    std::vector<std::uint64_t>& acc = scratch_words_;
    acc.assign(words, 0);
    bool any = false;
    for (const FailedLink& f : m_.new_failed) {
      const PortSlot& sl = m_.slot(f.sw, f.port);
      if (!(sl.flags & kSwitchLink) || !sl.down()) continue;  // take each link from its upper end
      const std::uint64_t* low = &bits[std::size_t{sl.peer} * words];
      for (std::uint32_t w = 0; w < words; ++w) acc[w] |= low[w];
      if (!m_.in_work[f.sw]) {
        m_.in_work[f.sw] = 1;
        work.push_back(f.sw);
      }
      any = true;
    }
    if (!any) return;
    for (std::uint32_t w = 0; w < words; ++w) {
      if (acc[w] != 0) tw.emplace_back(w, acc[w]);
    }
    for (std::size_t i = 0; i < work.size(); ++i) {
      const std::uint32_t x = work[i];
      m_.in_work[x] = 0;
      std::uint64_t* row_x = &bits[std::size_t{x} * words];
      bool lost = false;
      for (const auto& [w, mask] : tw) {
        std::uint64_t v = (x / 64 == w) ? std::uint64_t{1} << (x % 64) : 0;
        for (std::uint32_t k = m_.down_first[x]; k < m_.down_first[x + 1]; ++k) {
          const PortSlot& sl = m_.slot(x, m_.down_list[k]);
          if (sl.flags & kLive) v |= bits[std::size_t{sl.peer} * words + w];
        }
        const std::uint64_t next = (row_x[w] & ~mask) | (v & mask & row_x[w]);
        if (next != row_x[w]) {
          m_.down_ok_undo.emplace_back(std::size_t{x} * words + w, row_x[w]);
          row_x[w] = next;
          ++rep.down_ok_updates;
          lost = true;
        }
      }
      if (!lost) continue;
      for (std::uint32_t k = m_.up_first[x]; k < m_.up_first[x + 1]; ++k) {
        const PortSlot& sl = m_.slot(x, m_.up_list[k]);
        if ((sl.flags & kLive) && !m_.in_work[sl.peer]) {
          m_.in_work[sl.peer] = 1;
          work.push_back(sl.peer);
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
      const std::uint32_t s = ends[i].sw;
      std::size_t j = i;
      const auto begin = static_cast<std::uint32_t>(m_.recs.size());
      for (; j < ends.size() && ends[j].sw == s; ++j) {
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
      Rerouter::Impl::PickState& ps = m_.pick_state[s];
      if (ps.epoch == m_.epoch) {
        std::uint32_t& level = m_.slot(s, prev).up() ? ps.level_up : ps.level_down;
        level = std::min(level, m_.load[i]);
      }
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

  Rerouter::Impl::PickState& pick_state(std::uint32_t s) {
    Rerouter::Impl::PickState& ps = m_.pick_state[s];
    if (ps.epoch != m_.epoch) {
      ps.epoch = m_.epoch;
      ps.cursor_up = ps.cursor_down = 0;
      ps.level_up = ps.level_down = UINT32_MAX;
      for (std::uint32_t i = m_.up_first[s]; i < m_.up_first[s + 1]; ++i) {
        const std::uint32_t si = m_.slot_index(s, m_.up_list[i]);
        if (m_.ports[si].flags & kLive) ps.level_up = std::min(ps.level_up, m_.load[si]);
      }
      for (std::uint32_t i = m_.down_first[s]; i < m_.down_first[s + 1]; ++i) {
        const std::uint32_t si = m_.slot_index(s, m_.down_list[i]);
        if (m_.ports[si].flags & kLive) ps.level_down = std::min(ps.level_down, m_.load[si]);
      }
    }
    return ps;
  }

  // The least-loaded legal port of one class (rotating among equals), or
  // kDropPort. `probe` looks without moving the rotation.
  PortNum pick(std::uint32_t s, std::uint32_t d, std::uint32_t t, bool up, bool probe) {
    const PortNum* list = up ? &m_.up_list[m_.up_first[s]] : &m_.down_list[m_.down_first[s]];
    const std::uint32_t k =
        up ? m_.up_first[s + 1] - m_.up_first[s] : m_.down_first[s + 1] - m_.down_first[s];
    if (k == 0) return kDropPort;
    Rerouter::Impl::PickState& ps = pick_state(s);
    std::uint32_t& level = up ? ps.level_up : ps.level_down;
    std::uint32_t& cursor = up ? ps.cursor_up : ps.cursor_down;
    PortNum best = kDropPort, stale = kDropPort;
    std::uint32_t best_load = UINT32_MAX, stale_load = UINT32_MAX;
    std::uint32_t best_at = 0, stale_at = 0;
    std::uint32_t min_live = UINT32_MAX;
    std::uint32_t j = 0;
    for (std::uint32_t at = cursor; j < k; ++j, at = at + 1 == k ? 0 : at + 1) {
      const PortNum q = list[at];
      const std::uint32_t si = m_.slot_index(s, q);
      const PortSlot& sl = m_.ports[si];
      if ((sl.flags & kLive) == 0) continue;
      const std::uint32_t l = m_.load[si];
      min_live = std::min(min_live, l);
      if (l >= best_load) continue;
      const Validity v = candidate(sl, d, t);
      if (v == Validity::kGood) {
        best = q;
        best_load = l;
        best_at = at;
        if (l <= level) break;  // a minimum: nothing can beat it
      } else if (v == Validity::kStale && l < stale_load) {
        stale = q;
        stale_load = l;
        stale_at = at;
      }
    }
    if (j == k && min_live != UINT32_MAX) level = min_live;
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
    if (t == kNoSwitch || m_.live_links[t] == 0 || m_.live_links[s] == 0) {
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
  void push_pointers(std::uint32_t s, std::span<const std::uint32_t> run, bool above_only) {
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

  void push_runs(const std::vector<std::uint32_t>& list, bool above_only) {
    for (std::size_t i = 0; i < list.size();) {
      const std::uint32_t s = m_.recs[list[i]].sw;
      std::size_t j = i + 1;
      while (j < list.size() && m_.recs[list[j]].sw == s) ++j;
      push_pointers(s, std::span<const std::uint32_t>(list).subspan(i, j - i), above_only);
      i = j;
    }
  }

  // Worklist rounds until every entry on it is settled.
  void route(RepairReport& rep) {
    while (!m_.pending.empty()) {
      ++rep.rounds;
      m_.dead.clear();
      m_.blocked.clear();
      m_.next_pending.clear();
      for (std::uint32_t r : m_.pending) {
        const auto& rec = m_.recs[r];
        switch (choose(rec.sw, rec.lid)) {
          case Choice::kChosen:
          case Choice::kUnreachable:
            break;
          case Choice::kDeadEnd:
            m_.dead.push_back(r);
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
      push_runs(m_.dead, false);
      push_runs(m_.blocked, true);
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
      m_.changes.push_back({rec.sw, rec.lid, rec.old, now});
    }
    for (const LftChange& c : m_.changes) {
      const std::size_t bit = std::size_t{c.sw} * blocks_per_switch + c.lid / kLftBlockSize;
      const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
      if (m_.dirty_now[bit / 64] & mask) continue;
      m_.dirty_now[bit / 64] |= mask;
      dirty_since[bit / 64] |= mask;
      m_.blocks.push_back({c.sw, c.lid / kLftBlockSize});
    }
    for (const DirtyBlock& b : m_.blocks) {
      const std::size_t bit = std::size_t{b.sw} * blocks_per_switch + b.block;
      m_.dirty_now[bit / 64] = 0;
    }
  }

  // Undoes everything since begin() (refusal).
  void rollback() {
    for (auto it = m_.recs.rbegin(); it != m_.recs.rend(); ++it)
      set_entry(it->sw, it->lid, it->old);
    for (auto it = m_.down_ok_undo.rbegin(); it != m_.down_ok_undo.rend(); ++it)
      m_.down_ok[it->first] = it->second;
    for (auto it = m_.lid_undo.rbegin(); it != m_.lid_undo.rend(); ++it)
      m_.lid[it->first] = it->second;
    for (auto it = m_.orphan_undo.rbegin(); it != m_.orphan_undo.rend(); ++it) {
      m_.set_orphan(static_cast<std::uint32_t>(it->first >> 32),
                    static_cast<std::uint32_t>(it->first), it->second, false);
    }
    for (std::uint32_t si : m_.new_dead) m_.ports[si].flags |= kLive;
    for (const FailedLink& f : m_.new_failed) {
      if (m_.slot(f.sw, f.port).flags & kSwitchLink) ++m_.live_links[f.sw];
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
  std::vector<std::uint64_t> scratch_words_;
  bool maybe_later_ = false;  // set by candidate(): see Impl::second_chance
};

}  // namespace

Result<void> Rerouter::check_changes() const {
  Impl& m = *impl_;  // check_mark is scratch
  auto where = [this](std::uint32_t s) { return topo_.switch_label(s); };
  auto entry_of = [this](std::uint32_t s, std::uint32_t d) { return row(s)[d]; };
  // Every failed port is gone from its switch's table (cut-off switches
  // aside: nothing reaches them).
  for (const FailedLink& f : m.new_failed) {
    if ((m.slot(f.sw, f.port).flags & kSwitchLink) && m.live_links[f.sw] == 0) continue;
    const std::uint8_t* r = row(f.sw);
    const void* hit = std::memchr(r, f.port, stride_);
    if (hit != nullptr) {
      const auto d = static_cast<std::uint32_t>(static_cast<const std::uint8_t*>(hit) - r);
      return Error{Errc::kIncomplete, fmt::format("switch {} still sends LID {} to failed port {}",
                                                  where(f.sw), d, f.port)};
    }
  }
  if (++m.check_epoch == 0) {
    std::fill(m.check_mark.begin(), m.check_mark.end(), 0);
    m.check_epoch = 1;
  }
  for (const LftChange& c : m.changes) m.check_mark[c.sw] = m.check_epoch;
  for (const LftChange& c : m.changes) {
    const std::uint32_t s = c.sw, d = c.lid;
    const std::uint32_t t = m.lid[d].sw;
    if (t == kNoSwitch || c.new_port == kDropPort) continue;  // nothing left to route
    if (s == t) {
      if (c.new_port != m.lid[d].port) {
        return Error{
            Errc::kIncomplete,
            fmt::format("switch {} delivers LID {} on port {}, its owner hangs off port {}",
                        where(s), d, c.new_port, m.lid[d].port)};
      }
      continue;
    }
    if (!m.has_port(s, c.new_port) || !m.slot(s, c.new_port).live_switch()) {
      return Error{Errc::kIncomplete,
                   fmt::format("switch {} sends LID {} to port {}, which is no live switch link",
                               where(s), d, c.new_port)};
    }
    const PortSlot& sl = m.slot(s, c.new_port);
    const std::uint32_t nb = sl.peer;
    if (m.is_orphan(s, d)) {
      if (m.has_endpoints[s] != 0 && m.lid0[d].data != 0) {
        return Error{Errc::kCdgCycle,
                     fmt::format("switch {} carries CAs, and its orphan route to LID {} may turn "
                                 "down->up",
                                 where(s), d)};
      }
      for (std::uint32_t si = m.port_base[s] + 1; si < m.port_base[s + 1]; ++si) {
        const PortSlot& in = m.ports[si];
        if (!in.live_switch() || entry_of(in.peer, d) != in.peer_port) continue;
        if (!m.is_orphan(in.peer, d)) {
          return Error{Errc::kCdgCycle,
                       fmt::format("switch {} routes LID {} into orphan switch {}, whose route "
                                   "may turn down->up",
                                   where(in.peer), d, where(s))};
        }
      }
      std::uint32_t x = nb;
      for (std::uint32_t steps = 0; m.is_orphan(x, d); ++steps) {
        const std::uint8_t e = entry_of(x, d);
        if (steps == kMaxOrphanWalk || !m.has_port(x, e) || !m.slot(x, e).live_switch()) {
          return Error{Errc::kForwardingLoop,
                       fmt::format("orphan route of switch {} to LID {} does not reach a legal "
                                   "route (stuck at {})",
                                   where(s), d, where(x))};
        }
        x = m.slot(x, e).peer;
      }
      continue;
    }
    if (sl.down()) {
      if (nb == t) continue;
      const std::uint8_t e = entry_of(nb, d);
      if (!m.has_port(nb, e) || !m.slot(nb, e).live_switch() || !m.slot(nb, e).down() ||
          m.is_orphan(nb, d)) {
        return Error{Errc::kCdgCycle,
                     fmt::format("LID {}: switch {} sends down to {}, whose entry (port {}) does "
                                 "not continue down: a down->up turn",
                                 d, where(s), where(nb), e)};
      }
      continue;
    }
    // Up-link: the neighbour must route on, not straight back, and not as an
    // orphan. A neighbour with no change and no orphan holds its entry from
    // before, which was legal, names no failed port (checked above) and does
    // not lead down into s unless s went down before (then the scan below
    // finds it): no need to read it.
    if (nb != t && m.is_orphan(nb, d)) {
      return Error{Errc::kCdgCycle, fmt::format("LID {}: switch {} sends up into orphan switch {}",
                                                d, where(s), where(nb))};
    }
    const bool read = nb != t && (m.check_mark[nb] == m.check_epoch || m.orphan_count[nb] != 0);
    const std::uint8_t e = read ? entry_of(nb, d) : std::uint8_t{0};
    if (read && (e == kDropPort || e == sl.peer_port || m.is_orphan(nb, d) || !m.has_port(nb, e) ||
                 !m.slot(nb, e).live_switch())) {
      return Error{Errc::kForwardingLoop,
                   fmt::format("LID {}: switch {} sends up to {}, whose entry (port {}) leads "
                               "nowhere or straight back",
                               d, where(s), where(nb), e)};
    }
    // s used to go down: neighbours above may still send d down into it.
    const bool old_down =
        c.old_port != kDropPort && m.has_port(s, c.old_port) && m.slot(s, c.old_port).down();
    if (!old_down) continue;
    for (std::uint32_t i = m.up_first[s]; i < m.up_first[s + 1]; ++i) {
      const PortSlot& in = m.slot(s, m.up_list[i]);
      if ((in.flags & kLive) == 0) continue;
      if (entry_of(in.peer, d) == in.peer_port && !m.is_orphan(in.peer, d)) {
        return Error{Errc::kCdgCycle,
                     fmt::format("LID {}: {} sends down into {}, which now turns up (port {}): a "
                                 "down->up turn",
                                 d, where(in.peer), where(s), c.new_port)};
      }
    }
  }
  return {};
}

Result<RepairReport> Rerouter::repair(std::span<const FailedLink> failed) {
  return run(failed, nullptr);
}

Result<RepairReport> Rerouter::apply_for_test(std::span<const FailedLink> failed,
                                              std::span<const LftChange> changes) {
  for (const LftChange& c : changes) {
    if (c.sw >= n_ || c.lid >= stride_) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("change of switch {} LID {} is outside the tables", c.sw, c.lid)};
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
  r.update_down_ok(rep);
  Result<void> made;
  if (given == nullptr) {
    r.seed(rep);
    rep.t_seed = Clock::now() - t0;
    const auto t = Clock::now();
    r.route(rep);
    made = r.fill(rep);
    rep.t_route = Clock::now() - t;
  } else {
    for (const LftChange& c : *given) {
      r.record_for(c.sw, c.lid);
      r.set_entry(c.sw, c.lid, c.new_port);
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

void Rerouter::reset() {
  Impl& m = *impl_;
  const Routes& base = *base_;
  for (std::size_t w = 0; w < m.dirty_since.size(); ++w) {
    for (std::uint64_t bits = m.dirty_since[w]; bits != 0; bits &= bits - 1) {
      const std::size_t bit = w * 64 + static_cast<unsigned>(std::countr_zero(bits));
      const auto s = static_cast<std::uint32_t>(bit / m.blocks_per_switch);
      const auto b = static_cast<std::uint32_t>(bit % m.blocks_per_switch);
      std::uint8_t* dst = table_.get() + std::size_t{s} * stride_ + std::size_t{b} * kLftBlockSize;
      const Lft& l = base.lfts[s];
      for (std::uint32_t i = 0; i < kLftBlockSize; ++i) dst[i] = l.get(Lid{b * kLftBlockSize + i});
    }
    m.dirty_since[w] = 0;
  }
  for (PortSlot& sl : m.ports) {
    if (sl.flags & (kSwitchLink | kCaLink)) sl.flags |= kLive;
  }
  m.live_links = m.live_links0;
  m.load = m.load0;
  m.down_ok = m.down_ok0;
  m.lid = m.lid0;
  for (std::uint32_t s = 0; s < n_; ++s) {
    if (m.orphan_slot[s] == kNone) continue;
    std::fill_n(m.orphan_pool.begin() + std::size_t{m.orphan_slot[s]} * m.lid_words, m.lid_words,
                0);
    m.free_slots.push_back(m.orphan_slot[s]);
    m.orphan_slot[s] = kNone;
    m.orphan_count[s] = 0;
  }
  m.changes.clear();
  m.blocks.clear();
  m.new_failed.clear();
  m.new_dead.clear();
  stale_ = false;
}

std::vector<DirtyBlock> Rerouter::changed_blocks() const {
  const Impl& m = *impl_;
  std::vector<DirtyBlock> out;
  for (std::size_t w = 0; w < m.dirty_since.size(); ++w) {
    for (std::uint64_t bits = m.dirty_since[w]; bits != 0; bits &= bits - 1) {
      const std::size_t bit = w * 64 + static_cast<unsigned>(std::countr_zero(bits));
      out.push_back({static_cast<std::uint32_t>(bit / m.blocks_per_switch),
                     static_cast<std::uint32_t>(bit % m.blocks_per_switch)});
    }
  }
  return out;
}

Routes Rerouter::export_routes(WorkerPool& pool) const {
  const Impl& m = *impl_;
  Routes out;
  out.engine = base_->engine;
  out.max_lid = base_->max_lid;
  out.num_vls = base_->num_vls;
  out.updown_rank = base_->updown_rank;
  out.notes = base_->notes;
  out.lfts.resize(n_);
  const std::size_t grain = std::max<std::size_t>(1, n_ / (std::size_t{pool.size()} * 16));
  pool.parallel_for(n_, grain, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t s = b; s < e; ++s) {
      Lft& l = out.lfts[s];
      const std::uint32_t size = base_->lfts[s].size();
      l.resize(Lid{size == 0 ? 0 : size - 1});
      std::memcpy(l.data(), row(static_cast<std::uint32_t>(s)), std::min(size, stride_));
    }
  });
  std::uint64_t total = 0, links = 0, max_routes = 0;
  for (std::size_t i = 0; i < m.ports.size(); ++i) {
    if (!m.ports[i].live_switch()) continue;
    ++links;
    total += m.load[i];
    max_routes = std::max<std::uint64_t>(max_routes, m.load[i]);
  }
  out.load.links = links;
  out.load.max_routes = max_routes;
  out.load.mean_routes = links == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(links);
  return out;
}

}  // namespace subnetd::routing

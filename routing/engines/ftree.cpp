// ftree's second half (routing/engines/ftree.hpp): the fill of every LFT
// from the layout (D-mod-K per level, in parallel), the routes, and the
// engine. Shape, order and layout: ftree_shape.cpp.

#include "routing/engines/ftree.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <bitset>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <tuple>

#include "routing/bitops.hpp"
#include "routing/parallel_fill.hpp"

namespace subnetd::routing {
namespace {

constexpr std::uint32_t kNoClass = UINT32_MAX;

// ---------------------------------------------------------------------------
// Fill

__extension__ using Uint128 = unsigned __int128;

// x mod d without a division (Lemire, Kaser & Kurz 2019): m = 2^64 / d + 1.
inline std::uint32_t fast_mod(std::uint32_t x, std::uint64_t m, std::uint32_t d) {
  const std::uint64_t low = m * x;
  return static_cast<std::uint32_t>((static_cast<Uint128>(low) * d) >> 64);
}

// Destinations grouped by switch, switches in rank order.
struct Destinations {
  std::vector<std::uint32_t> order;       // switches with LIDs, by rank
  std::vector<std::uint32_t> first;       // by switch: offset into lids
  std::vector<std::uint32_t> count;       // by switch: CA/router LIDs
  std::vector<std::uint32_t> lids;        // data LIDs, ascending within a switch
  std::vector<std::uint8_t> contiguous;   // by switch: its data LIDs are one range
  std::vector<std::uint32_t> switch_lid;  // by switch (0 = none)
  // By level * S + switch: quotient and remainder of the first data index by
  // P_l, and the quotient of the switch LID's index.
  std::vector<std::uint32_t> q, r, q_switch;
};

Destinations group_destinations(const SwitchGraph& g, const FtreeLayout& layout) {
  const std::uint32_t n = g.num_switches();
  const auto att = g.attachments();
  Destinations d;
  d.first.assign(n + 1, 0);
  d.count.assign(n, 0);
  d.switch_lid.assign(n, 0);
  d.contiguous.assign(n, 1);
  for (std::size_t l = 1; l < att.size(); ++l) {
    if (!att[l].routable()) continue;
    if (att[l].port == 0) {
      d.switch_lid[att[l].sw.value] = static_cast<std::uint32_t>(l);
    } else {
      ++d.count[att[l].sw.value];
    }
  }
  std::vector<std::uint32_t> by_rank(n);
  for (std::uint32_t s = 0; s < n; ++s) by_rank[layout.shape.rank[s]] = s;
  std::uint32_t at = 0;
  for (std::uint32_t s : by_rank) {
    d.first[s] = at;
    at += d.count[s];
    if (d.count[s] != 0 || d.switch_lid[s] != 0) d.order.push_back(s);
  }
  d.lids.resize(at);
  std::vector<std::uint32_t> fill(d.first.begin(), d.first.end() - 1);
  for (std::size_t l = 1; l < att.size(); ++l) {
    if (att[l].routable() && att[l].port != 0)
      d.lids[fill[att[l].sw.value]++] = static_cast<std::uint32_t>(l);
  }
  const std::uint32_t levels = layout.shape.num_levels;
  d.q.assign(std::size_t{levels} * n, 0);
  d.r.assign(std::size_t{levels} * n, 0);
  d.q_switch.assign(std::size_t{levels} * n, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    if (d.count[s] > 1) {
      const std::uint32_t* l0 = &d.lids[d.first[s]];
      d.contiguous[s] = l0[d.count[s] - 1] - l0[0] == d.count[s] - 1 ? 1 : 0;
    }
    const std::uint32_t j0 = d.count[s] != 0 ? layout.dest_index[d.lids[d.first[s]]] : 0;
    const std::uint32_t js = d.switch_lid[s] != 0 ? layout.dest_index[d.switch_lid[s]] : 0;
    for (std::uint32_t l = 0; l < levels; ++l) {
      const std::uint32_t p = layout.divisor[l];
      d.q[std::size_t{l} * n + s] = j0 / p;
      d.r[std::size_t{l} * n + s] = j0 % p;
      d.q_switch[std::size_t{l} * n + s] = js / p;
    }
  }
  return d;
}

// The links a set of destinations may take from one switch, in rank order.
struct CandidateClass {
  std::uint32_t first = 0;  // into SourceFiller::class_ports_
  std::uint32_t count = 0;
  std::uint64_t mod_m = 0;  // fast_mod constant for count
  bool up = false;          // up-links (divisor P_level) or down-links (divisor 1)
  // Picked by index (D-mod-K): every up-link, every down-link, or one link.
  // Other sets (a degraded switch's partial ones) take the least-loaded link.
  bool indexed = false;
  std::uint32_t cursor = 0;  // least-loaded picks: rotation among equals
  std::uint32_t level = 0;   // least-loaded picks: every member carries >= level
  std::uint64_t data = 0;    // CA/router LIDs routed through this class
};

struct SwitchLoad {
  std::uint64_t sum = 0;
  std::uint32_t max = 0;
  double ideal = 0;
};

// Fills the LFT of one source switch at a time. One instance per worker
// thread, reused across sources.
class SourceFiller {
 public:
  SourceFiller(const Topology& topo, const SwitchGraph& g, const FtreeLayout& layout,
               const FtreeTables& tables, const Destinations& dest,
               std::span<const std::uint32_t> sorted_arcs)
      : topo_(topo),
        g_(g),
        layout_(layout),
        tables_(tables),
        dest_(dest),
        sorted_arcs_(sorted_arcs) {}

  std::optional<Error> fill(SwitchIndex s, Lft& lft, SwitchLoad& out) {
    if (auto err = classify(s)) return err;
    load_.fill(0);
    std::uint8_t* const table = lft.data();
    const std::uint32_t n = g_.num_switches();
    const std::uint32_t level = layout_.shape.level[s.value];
    const std::uint32_t* q_up = &dest_.q[std::size_t{level} * n];
    const std::uint32_t* r_up = &dest_.r[std::size_t{level} * n];
    const std::uint32_t* qs_up = &dest_.q_switch[std::size_t{level} * n];
    const std::uint32_t* q_down = &dest_.q[0];  // P_0 = 1: the index itself
    const std::uint32_t* qs_down = &dest_.q_switch[0];
    const std::uint32_t p_up = layout_.divisor[level];

    // Indexed classes first, so the least-loaded picks of partial classes
    // see the load the D-mod-K spread has put on every link.
    bool partial = false;
    for (std::uint32_t t : dest_.order) {
      const std::uint32_t k = dest_.count[t];
      const std::uint32_t* lids = &dest_.lids[dest_.first[t]];
      if (t == s.value) {
        for (std::uint32_t i = 0; i < k; ++i) table[lids[i]] = g_.attachment(Lid{lids[i]}).port;
        if (dest_.switch_lid[t] != 0) table[dest_.switch_lid[t]] = 0;
        continue;
      }
      const std::uint32_t c = class_of_[t];
      if (c == kNoClass) continue;  // t is in another part of the fabric
      CandidateClass& cls = classes_[c];
      if (!cls.indexed) {
        partial = true;
        continue;
      }
      const PortNum* ports = &class_ports_[cls.first];
      const std::uint32_t cnt = cls.count;
      if (dest_.switch_lid[t] != 0) {
        const std::uint32_t q = cls.up ? qs_up[t] : qs_down[t];
        table[dest_.switch_lid[t]] = ports[cnt == 1 ? 0 : fast_mod(q, cls.mod_m, cnt)];
      }
      if (k == 0) continue;
      cls.data += k;
      const bool contiguous = dest_.contiguous[t] != 0;
      if (cnt == 1) {
        write_run(table, lids, k, contiguous, ports[0]);
        load_[ports[0]] += k;
        continue;
      }
      const std::uint32_t p = cls.up ? p_up : 1;
      std::uint32_t at = fast_mod(cls.up ? q_up[t] : q_down[t], cls.mod_m, cnt);
      if (p == 1) {
        // Consecutive LIDs to consecutive candidates.
        std::uint8_t* row = table + lids[0];
        for (std::uint32_t i = 0; i < k; ++i) {
          const PortNum port = ports[at];
          (contiguous ? row[i] : table[lids[i]]) = port;
          ++load_[port];
          if (++at == cnt) at = 0;
        }
        continue;
      }
      // Runs of P LIDs (fewer at the ends) per candidate, cycling.
      std::uint32_t left = k;
      std::uint32_t take = std::min(left, p - (cls.up ? r_up[t] : 0));
      while (left != 0) {
        write_run(table, lids, take, contiguous, ports[at]);
        load_[ports[at]] += take;
        lids += take;
        left -= take;
        take = std::min(left, p);
        if (++at == cnt) at = 0;
      }
    }
    if (partial) {
      // Climbing over part of the up-links: the LID keeps its D-mod-K
      // up-link where that one is a candidate (its route still converges);
      // the others, and partial down-going sets, take the least-loaded one.
      const bool dmodk = all_up_class_ != kNoClass;
      const CandidateClass* all_up = dmodk ? &classes_[all_up_class_] : nullptr;
      for (std::uint32_t t : dest_.order) {
        if (t == s.value || class_of_[t] == kNoClass) continue;
        CandidateClass& cls = classes_[class_of_[t]];
        if (cls.indexed) continue;
        const std::uint32_t k = dest_.count[t];
        const std::uint32_t* lids = &dest_.lids[dest_.first[t]];
        cls.data += k;
        if (!cls.up || !dmodk) {
          for (std::uint32_t i = 0; i < k; ++i) table[lids[i]] = least_loaded(cls, true);
          if (dest_.switch_lid[t] != 0) table[dest_.switch_lid[t]] = least_loaded(cls, false);
          continue;
        }
        const std::uint64_t* mask = &class_masks_[std::size_t{class_of_[t]} * words_];
        auto member = [&](std::uint32_t arc) { return ((mask[arc / 64] >> (arc % 64)) & 1U) != 0; };
        const std::uint32_t w = all_up->count;
        std::uint32_t at = fast_mod(q_up[t], all_up->mod_m, w);
        std::uint32_t r = r_up[t];
        for (std::uint32_t i = 0; i < k; ++i) {
          const std::uint32_t arc = up_arcs_[at];
          if (member(arc)) {
            table[lids[i]] = port_[arc];
            ++load_[port_[arc]];
          } else {
            table[lids[i]] = least_loaded(cls, true);
          }
          if (++r == p_up) {
            r = 0;
            if (++at == w) at = 0;
          }
        }
        if (dest_.switch_lid[t] != 0) {
          const std::uint32_t arc = up_arcs_[fast_mod(qs_up[t], all_up->mod_m, w)];
          table[dest_.switch_lid[t]] = member(arc) ? port_[arc] : least_loaded(cls, false);
        }
      }
    }

    SwitchLoad load;
    for (const SwitchArc& a : g_.arcs(s)) {
      load.sum += load_[a.local_port];
      load.max = std::max(load.max, load_[a.local_port]);
    }
    // Lower bounds: each candidate set's LIDs over its links, and all
    // up-going (down-going) LIDs over every link some up (down) set uses.
    std::array<std::uint64_t, 2> data_by_dir{};
    std::array<std::bitset<256>, 2> links_by_dir;
    for (const CandidateClass& cls : classes_) {
      if (cls.data == 0) continue;
      load.ideal = std::max(load.ideal, static_cast<double>(cls.data) / cls.count);
      data_by_dir[cls.up ? 1 : 0] += cls.data;
      for (std::uint32_t i = 0; i < cls.count; ++i) {
        links_by_dir[cls.up ? 1 : 0].set(class_ports_[cls.first + i]);
      }
    }
    for (int dir = 0; dir < 2; ++dir) {
      if (data_by_dir[dir] == 0) continue;
      load.ideal = std::max(load.ideal, static_cast<double>(data_by_dir[dir]) /
                                            static_cast<double>(links_by_dir[dir].count()));
    }
    out = load;
    return std::nullopt;
  }

 private:
  // The least-loaded member of c, the first such from the cursor on; the
  // cursor then moves past it (rotation among equals). Only data LIDs add
  // load. Loads only grow, so `level` stays a lower bound of the members'
  // loads and a member at that level is a minimum: the scan nearly always
  // stops at the cursor.
  PortNum least_loaded(CandidateClass& c, bool data) {
    const PortNum* ports = &class_ports_[c.first];
    std::uint32_t at = c.cursor;
    if (load_[ports[at]] > c.level) {
      std::uint32_t best = load_[ports[at]];
      for (std::uint32_t j = 1, i = at + 1; j < c.count; ++j, ++i) {
        if (i == c.count) i = 0;
        if (load_[ports[i]] < best) {
          at = i;
          best = load_[ports[i]];
          if (best <= c.level) break;
        }
      }
      c.level = best;
    }
    c.cursor = at + 1 == c.count ? 0 : at + 1;
    if (data) ++load_[ports[at]];
    return ports[at];
  }

  static void write_run(std::uint8_t* table, const std::uint32_t* lids, std::uint32_t k,
                        bool contiguous, PortNum port) {
    if (contiguous) {
      std::memset(table + lids[0], port, k);
    } else {
      for (std::uint32_t i = 0; i < k; ++i) table[lids[i]] = port;
    }
  }

  // class_of_[t] for every destination switch t != s that s reaches.
  //
  // Candidate masks are built per arc along the neighbour's whole hop row
  // (sequential reads the prefetcher follows), then read per chunk of 64
  // destinations. The common sets are recognised without a transpose: "every
  // up-link" (a switch of an intact tree climbing), "one link" (a switch above
  // t descending) and "every down-link" (a spine reaching another spine);
  // what remains (degraded parts) goes through the general path.
  std::optional<Error> classify(SwitchIndex s) {
    const std::uint32_t n = g_.num_switches();
    const std::uint32_t chunks = (n + 63) / 64;
    const std::uint32_t base_arc = g_.first_arc(s);
    const auto deg = static_cast<std::uint32_t>(g_.arcs(s).size());
    words_ = std::max<std::uint32_t>(1, (deg + 63) / 64);
    class_of_.assign(n, kNoClass);
    classes_.clear();
    class_ports_.clear();
    class_masks_.clear();
    slots_.assign(64, kNoClass);
    nb_.resize(deg);
    port_.resize(deg);
    up_.resize(deg);
    tmask_.resize(std::size_t{64} * words_);
    all_up_.assign(words_, 0);
    all_down_.assign(words_, 0);
    std::uint32_t num_up = 0;
    for (std::uint32_t i = 0; i < deg; ++i) {
      const SwitchArc& a = g_.arc(sorted_arcs_[base_arc + i]);
      nb_[i] = a.to;
      port_[i] = a.local_port;
      up_[i] = layout_.up(s, a.to) ? 1 : 0;
      if (up_[i] != 0) {
        all_up_[i / 64] |= std::uint64_t{1} << (i % 64);
        ++num_up;
      } else {
        all_down_[i / 64] |= std::uint64_t{1} << (i % 64);
      }
    }
    const HopTable& ud = tables_.updown;
    const HopTable& sp = tables_.shortest;
    const bool have_sp = sp.num_switches() == n;
    const bool level_order = layout_.level_order;

    // s's own row: which destinations it reaches and how.
    const std::uint8_t* row_s = ud.row(s);
    const std::uint64_t* down_s = ud.down_row(s);
    const std::uint32_t stride = ud.stride();
    closer_.resize(stride);
    farther_.resize(stride);
    for (std::uint32_t t = 0; t < stride; ++t) {
      closer_[t] = static_cast<std::uint8_t>(row_s[t] - 1);
      farther_[t] = static_cast<std::uint8_t>(row_s[t] + 1);
    }
    up_mode_.assign(chunks, 0);
    down_mode_.assign(chunks, 0);
    stranded_.assign(chunks, 0);
    relied_.assign(chunks, 0);
    for (std::uint32_t c = 0; c < chunks; ++c) {
      std::uint64_t valid = 0;
      for (unsigned i = 0; i < 64; ++i) {
        const std::uint8_t h = row_s[64 * c + i];  // padding past n reads 255
        valid |= std::uint64_t{h != 0 && h != HopTable::kUnreachable} << i;
      }
      down_mode_[c] = valid & down_s[c];
      up_mode_[c] = valid & ~down_s[c];
    }
    // Switch pairs without an up/down path (only switch LIDs, see the
    // header): shortest paths.
    if (have_sp) {
      const std::uint8_t* sp_s = sp.row(s);
      closer_sp_.resize(stride);
      for (std::uint32_t t = 0; t < stride; ++t) {
        closer_sp_[t] = static_cast<std::uint8_t>(sp_s[t] - 1);
      }
      for (std::uint32_t c = 0; c < chunks; ++c) {
        std::uint64_t m = 0;
        for (unsigned i = 0; i < 64; ++i) {
          const std::uint8_t h = sp_s[64 * c + i];
          m |= std::uint64_t{row_s[64 * c + i] == HopTable::kUnreachable && h != 0 &&
                             h != HopTable::kUnreachable}
               << i;
        }
        stranded_[c] = m;
      }
    }

    // Per arc, along the neighbour's row: the destinations it serves.
    // cand_[c * deg + i]: arc i for chunk c. An up-link serves the
    // destinations it is one hop closer to (where s's route starts upward,
    // or, in the connected order, where s may climb); a down-link those it is
    // one hop closer to going down only, where s itself is all-down.
    cand_.assign(std::size_t{chunks} * deg, 0);
    for (std::uint32_t i = 0; i < deg; ++i) {
      const std::uint8_t* row_n = ud.row(nb_[i]);
      const std::uint64_t* down_n = ud.down_row(nb_[i]);
      std::uint64_t* out = &cand_[i];
      for (std::uint32_t c = 0; c < chunks; ++c) {
        if (up_[i] != 0) {
          const std::uint64_t modes = level_order ? up_mode_[c] : up_mode_[c] | down_mode_[c];
          if (modes == 0) continue;
          out[std::size_t{c} * deg] = equal_mask64(row_n + 64 * c, closer_.data() + 64 * c) & modes;
          // An all-down neighbour above s, one hop farther, may send t down
          // into s; then s must keep going down.
          if (!level_order && down_mode_[c] != 0) {
            relied_[c] |=
                equal_mask64(row_n + 64 * c, farther_.data() + 64 * c) & down_n[c] & down_mode_[c];
          }
        } else if (level_order) {
          // Under fat-tree levels every down path to t has the same length, so
          // an all-down neighbour is always one hop closer.
          out[std::size_t{c} * deg] = down_n[c] & down_mode_[c];
        } else if (down_mode_[c] != 0) {
          out[std::size_t{c} * deg] =
              equal_mask64(row_n + 64 * c, closer_.data() + 64 * c) & down_mode_[c] & down_n[c];
        }
      }
      if (have_sp) {
        const std::uint8_t* sp_n = sp.row(nb_[i]);
        for (std::uint32_t c = 0; c < chunks; ++c) {
          if (stranded_[c] != 0) {
            out[std::size_t{c} * deg] |=
                equal_mask64(sp_n + 64 * c, closer_sp_.data() + 64 * c) & stranded_[c];
          }
        }
      }
    }
    if (!level_order) {
      // An all-down s climbs only where nothing may enter it from above.
      for (std::uint32_t i = 0; i < deg; ++i) {
        if (up_[i] == 0) continue;
        for (std::uint32_t c = 0; c < chunks; ++c) cand_[std::size_t{c} * deg + i] &= ~relied_[c];
      }
    }

    const std::uint32_t all_up_class = num_up != 0 ? intern(all_up_.data(), true) : kNoClass;
    all_up_class_ = all_up_class;
    up_arcs_.clear();
    for (std::uint32_t i = 0; i < deg; ++i) {
      if (up_[i] != 0) up_arcs_.push_back(i);
    }
    const std::uint32_t all_down_class = num_up != deg ? intern(all_down_.data(), false) : kNoClass;
    if (all_up_class != kNoClass) classes_[all_up_class].indexed = true;
    if (all_down_class != kNoClass) classes_[all_down_class].indexed = true;
    single_class_.assign(deg, kNoClass);
    for (std::uint32_t c = 0, base = 0; c < chunks; ++c, base += 64) {
      const std::uint64_t todo = up_mode_[c] | down_mode_[c] | stranded_[c];
      if (todo == 0) continue;
      const std::uint64_t* cand = &cand_[std::size_t{c} * deg];
      // Over every up-link, every down-link, or exactly one link.
      std::uint64_t every_up = num_up != 0 ? todo : 0;
      std::uint64_t every_down = num_up != deg ? todo : 0;
      std::uint64_t any_up = 0;
      std::uint64_t any_down = 0;
      std::uint64_t seen = 0;
      std::uint64_t multi = 0;
      for (std::uint32_t i = 0; i < deg; ++i) {
        const std::uint64_t m = cand[i];
        if (up_[i] != 0) {
          every_up &= m;
          any_up |= m;
        } else {
          every_down &= m;
          any_down |= m;
        }
        multi |= seen & m;
        seen |= m;
      }
      every_up &= ~any_down;
      every_down &= ~any_up;
      const std::uint64_t single = seen & ~multi;
      for (std::uint64_t m = every_up & ~single; m != 0; m &= m - 1) {
        class_of_[base + static_cast<unsigned>(std::countr_zero(m))] = all_up_class;
      }
      for (std::uint64_t m = every_down & ~single; m != 0; m &= m - 1) {
        class_of_[base + static_cast<unsigned>(std::countr_zero(m))] = all_down_class;
      }
      if (single != 0) {
        for (std::uint32_t i = 0; i < deg; ++i) {
          for (std::uint64_t m = cand[i] & single; m != 0; m &= m - 1) {
            class_of_[base + static_cast<unsigned>(std::countr_zero(m))] = single_arc_class(i);
          }
        }
      }
      const std::uint64_t rest = todo & ~every_up & ~every_down & ~single;
      if (rest == 0) continue;
      transpose_candidates(cand, deg);
      // Neighbouring destinations (one pod's leaves) usually share a set:
      // compare with the previous one before hashing.
      const std::uint64_t* prev_mask = nullptr;
      std::uint32_t prev_class = kNoClass;
      for (std::uint64_t m = rest; m != 0; m &= m - 1) {
        const auto b = static_cast<unsigned>(std::countr_zero(m));
        const std::uint64_t* mask = &tmask_[std::size_t{b} * words_];
        if (std::all_of(mask, mask + words_, [](std::uint64_t w) { return w == 0; })) {
          return no_candidate_error(s, SwitchIndex{base + b});
        }
        if (((stranded_[c] >> b) & 1U) != 0 && dest_.count[base + b] == 0) {
          // Only t's switch LID (management traffic) and no up/down path: the
          // first candidate will do; no set to intern.
          std::uint32_t w = 0;
          while (mask[w] == 0) ++w;
          class_of_[base + b] =
              single_arc_class(64 * w + static_cast<std::uint32_t>(std::countr_zero(mask[w])));
          continue;
        }
        const bool up = ((up_mode_[c] >> b) & 1U) != 0;
        if (prev_mask == nullptr || !std::equal(mask, mask + words_, prev_mask) ||
            classes_[prev_class].up != up) {
          prev_class = intern(mask, up);
          prev_mask = mask;
        }
        class_of_[base + b] = prev_class;
      }
    }
    return std::nullopt;
  }

  std::uint32_t single_arc_class(std::uint32_t i) {
    if (single_class_[i] == kNoClass) {
      one_.assign(words_, 0);
      one_[i / 64] = std::uint64_t{1} << (i % 64);
      single_class_[i] = intern(one_.data(), up_[i] != 0);
    }
    return single_class_[i];
  }

  // tmask_[t * words_ + w]: the transpose of one chunk's candidate masks
  // (bit i of word w = arc 64w + i serves destination t of the chunk).
  void transpose_candidates(const std::uint64_t* cand, std::uint32_t deg) {
    std::array<std::uint64_t, 64> block;
    for (std::uint32_t w = 0; w < words_; ++w) {
      for (std::uint32_t i = 0; i < 64; ++i) block[i] = 64 * w + i < deg ? cand[64 * w + i] : 0;
      transpose64(block);
      for (std::uint32_t t = 0; t < 64; ++t) tmask_[std::size_t{t} * words_ + w] = block[t];
    }
  }

  std::uint32_t intern(const std::uint64_t* mask, bool up) {
    std::size_t slot = hash(mask) & (slots_.size() - 1);
    while (slots_[slot] != kNoClass) {
      if (std::equal(mask, mask + words_, &class_masks_[std::size_t{slots_[slot]} * words_])) {
        return slots_[slot];
      }
      slot = (slot + 1) & (slots_.size() - 1);
    }
    const auto id = static_cast<std::uint32_t>(classes_.size());
    CandidateClass c;
    c.first = static_cast<std::uint32_t>(class_ports_.size());
    for (std::uint32_t w = 0; w < words_; ++w) {
      for (std::uint64_t m = mask[w]; m != 0; m &= m - 1) {
        class_ports_.push_back(port_[w * 64 + static_cast<unsigned>(std::countr_zero(m))]);
      }
    }
    c.count = static_cast<std::uint32_t>(class_ports_.size()) - c.first;
    c.mod_m = ~std::uint64_t{0} / c.count + 1;
    c.up = up;
    c.indexed = c.count == 1;
    classes_.push_back(c);
    class_masks_.insert(class_masks_.end(), mask, mask + words_);
    slots_[slot] = id;
    if (classes_.size() * 2 > slots_.size()) {
      slots_.assign(slots_.size() * 2, kNoClass);
      for (std::uint32_t i = 0; i < classes_.size(); ++i) {
        std::size_t at = hash(&class_masks_[std::size_t{i} * words_]) & (slots_.size() - 1);
        while (slots_[at] != kNoClass) at = (at + 1) & (slots_.size() - 1);
        slots_[at] = i;
      }
    }
    return id;
  }

  std::uint64_t hash(const std::uint64_t* mask) const {
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (std::uint32_t w = 0; w < words_; ++w) {
      h = (h ^ mask[w]) * 0xBF58476D1CE4E5B9ULL;
      h ^= h >> 29;
    }
    return h;
  }

  Error no_candidate_error(SwitchIndex s, SwitchIndex t) const {
    return Error{
        Errc::kInternal,
        fmt::format("ftree: switch {} is {} up/down hops from {} but has no neighbour "
                    "one hop closer",
                    topo_.switch_label(s), tables_.updown.hops(s, t), topo_.switch_label(t))};
  }

  const Topology& topo_;
  const SwitchGraph& g_;
  const FtreeLayout& layout_;
  const FtreeTables& tables_;
  const Destinations& dest_;
  std::span<const std::uint32_t> sorted_arcs_;

  std::uint32_t words_ = 1;
  std::vector<std::uint64_t> cand_;  // by chunk, then arc (rank order): destinations it serves
  std::vector<std::uint8_t> closer_, farther_, closer_sp_;  // s's hop rows minus/plus one
  std::vector<std::uint64_t> up_mode_, down_mode_, stranded_, relied_;  // by chunk
  std::vector<std::uint64_t> all_up_, all_down_, one_;                  // arc masks
  std::vector<std::uint32_t> single_class_;                             // by arc
  std::vector<std::uint32_t> up_arcs_;  // the up arcs, in candidate order (= all_up_class_'s ports)
  std::uint32_t all_up_class_ = kNoClass;
  std::vector<SwitchIndex> nb_;       // by arc: neighbour
  std::vector<PortNum> port_;         // by arc: local port
  std::vector<std::uint8_t> up_;      // by arc: an up-link
  std::vector<std::uint64_t> tmask_;  // by destination of the chunk: arc mask
  std::vector<std::uint32_t> class_of_;
  std::vector<CandidateClass> classes_;
  std::vector<PortNum> class_ports_;
  std::vector<std::uint64_t> class_masks_;
  std::vector<std::uint32_t> slots_;
  std::array<std::uint32_t, 256> load_{};
};

}  // namespace

Result<Routes> ftree_routes(const Topology& topo, const SwitchGraph& g, FatTreeShape shape,
                            WorkerPool& pool, std::stop_token stop) {
  FtreeTables tables;
  FtreeLayout layout;
  SUBNETD_TRY_ASSIGN(layout, ftree_layout(topo, g, std::move(shape), pool, stop, tables));
  const std::uint32_t n = g.num_switches();
  const Destinations dest = group_destinations(g, layout);

  // Each switch's arcs in the order candidates are numbered: first link to
  // each neighbour by the neighbour's rank, then the second parallel link to
  // each, and so on (so consecutive indices spread over neighbours first),
  // then by port.
  std::vector<std::uint32_t> sorted_arcs(g.num_arcs());
  std::vector<std::uint32_t> copy(g.num_arcs(), 0);  // parallel-link index of each arc
  std::vector<std::uint32_t> seen(n, 0);             // links to a neighbour so far
  for (std::uint32_t s = 0; s < n; ++s) {
    const std::uint32_t first = g.first_arc(SwitchIndex{s});
    const auto deg = static_cast<std::uint32_t>(g.arcs(SwitchIndex{s}).size());
    for (std::uint32_t i = 0; i < deg; ++i) {
      sorted_arcs[first + i] = first + i;
      copy[first + i] = seen[g.arc(first + i).to.value]++;
    }
    for (std::uint32_t i = 0; i < deg; ++i) seen[g.arc(first + i).to.value] = 0;
    auto key = [&](std::uint32_t a) {
      return std::make_tuple(copy[a], layout.shape.rank[g.arc(a).to.value], g.arc(a).local_port);
    };
    std::sort(sorted_arcs.begin() + first, sorted_arcs.begin() + first + deg,
              [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  }

  Routes routes;
  routes.engine = "ftree";
  routes.max_lid = g.max_lid();
  routes.lfts.resize(n);
  routes.num_vls = 1;
  routes.updown_rank = layout.pos;
  routes.notes = layout.notes;

  std::vector<SwitchLoad> loads(n);
  SUBNETD_TRY(fill_switch_tables(
      pool, routes.lfts, routes.max_lid, stop, "ftree: routing cancelled",
      [&] { return std::make_unique<SourceFiller>(topo, g, layout, tables, dest, sorted_arcs); },
      [&](std::unique_ptr<SourceFiller>& filler, SwitchIndex s, Lft& lft, unsigned /*slot*/) {
        return filler->fill(s, lft, loads[s.value]);
      }));

  std::uint64_t total = 0;
  for (const SwitchLoad& l : loads) {
    total += l.sum;
    routes.load.max_routes = std::max<std::uint64_t>(routes.load.max_routes, l.max);
    routes.load.ideal_max_routes = std::max(routes.load.ideal_max_routes, l.ideal);
  }
  routes.load.links = g.num_arcs();
  routes.load.mean_routes =
      g.num_arcs() == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(g.num_arcs());
  return routes;
}

Result<Routes> FtreeEngine::compute(const Topology& topo, const LidMap& lids,
                                    const EngineOptions& /*opts*/, WorkerPool& pool,
                                    std::stop_token stop) const {
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  FatTreeShape shape = fat_tree_shape(topo, g);
  return ftree_routes(topo, g, std::move(shape), pool, stop);
}

}  // namespace subnetd::routing

#include "routing/lft_fill.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "routing/bitops.hpp"
#include "routing/parallel_fill.hpp"

namespace subnetd::routing {
namespace {

constexpr std::uint32_t kNoClass = UINT32_MAX;

// LIDs grouped by the switch that delivers them, ascending within a switch;
// kDataBit marks CA/router LIDs (the ones that load ports).
struct LidsBySwitch {
  static constexpr std::uint32_t kDataBit = 1U << 31;
  std::vector<std::uint32_t> first;  // S+1 offsets into lids
  std::vector<std::uint32_t> lids;
  std::vector<std::uint32_t> data;  // per switch: how many of its LIDs are data LIDs

  explicit LidsBySwitch(const SwitchGraph& g)
      : first(g.num_switches() + 1, 0), data(g.num_switches(), 0) {
    const auto att = g.attachments();
    for (std::size_t d = 1; d < att.size(); ++d) {
      if (att[d].routable()) ++first[att[d].sw.value + 1];
    }
    for (std::size_t t = 0; t < g.num_switches(); ++t) first[t + 1] += first[t];
    lids.resize(first.back());
    std::vector<std::uint32_t> at(first.begin(), first.end() - 1);
    for (std::size_t d = 1; d < att.size(); ++d) {
      if (!att[d].routable()) continue;
      lids[at[att[d].sw.value]++] =
          static_cast<std::uint32_t>(d) | (att[d].port != 0 ? kDataBit : 0);
      if (att[d].port != 0) ++data[att[d].sw.value];
    }
  }
};

// A set of candidate ports shared by destination switches, with the state of
// its least-loaded pick: every member has carried >= `level` LIDs, and the scan
// for the next pick starts at `cursor` (rotation among equally loaded ports).
struct CandidateClass {
  std::uint32_t first = 0;  // into SourceFiller::class_ports_
  std::uint32_t count = 0;
  std::uint32_t cursor = 0;
  std::uint32_t level = 0;
  bool has_data = false;  // some destination switch of the class has CA/router LIDs
  // No other class with data shares a port: then only this class's picks
  // load its ports, the cursor always rests on a least-loaded one, and a
  // pick needs no scan (the plain round robin of a fat-tree up-class).
  bool exclusive = false;
};

// Fills the LFT of one source switch at a time. One instance per worker
// thread; reused across sources so its buffers are allocated once.
class SourceFiller {
 public:
  SourceFiller(const Topology& topo, const SwitchGraph& g, const LidsBySwitch& by_switch,
               const HopTable& hops, CandidateRule rule, std::span<const std::uint32_t> pos)
      : topo_(topo), g_(g), by_switch_(by_switch), hops_(hops), rule_(rule), pos_(pos) {}

  // Writes s's row into `lft` (already sized, all drop); returns the routes
  // carried per switch-to-switch arc of s via arc_load (indexed like g.arcs(s)).
  std::optional<Error> fill(SwitchIndex s, Lft& lft, std::vector<std::uint32_t>& arc_load) {
    if (auto err = classify_destinations(s)) return err;
    mark_exclusive_classes();
    load_.fill(0);
    std::uint8_t* out = lft.data();
    const std::uint32_t n = g_.num_switches();
    const std::uint32_t limit = lft.size();
    for (std::uint32_t t = 0; t < n; ++t) {
      const std::uint32_t* lid = by_switch_.lids.data() + by_switch_.first[t];
      const std::uint32_t* const end = by_switch_.lids.data() + by_switch_.first[t + 1];
      if (lid == end) continue;
      if (t == s.value) {
        for (; lid != end; ++lid) {
          const std::uint32_t d = *lid & ~LidsBySwitch::kDataBit;
          if (d < limit) out[d] = g_.attachment(Lid{d}).port;
        }
        continue;
      }
      const std::uint32_t c = class_of_[t];
      if (c == kNoClass) continue;  // t is in another component
      CandidateClass& cls = classes_[c];
      for (; lid != end; ++lid) {
        const std::uint32_t d = *lid & ~LidsBySwitch::kDataBit;
        if (d >= limit) continue;
        out[d] = pick(cls, (*lid & LidsBySwitch::kDataBit) != 0);
      }
    }
    const auto arcs = g_.arcs(s);
    arc_load.resize(arcs.size());
    for (std::size_t i = 0; i < arcs.size(); ++i) arc_load[i] = load_[arcs[i].local_port];
    return std::nullopt;
  }

 private:
  // Computes class_of_[t] for every destination switch t != s that s reaches.
  std::optional<Error> classify_destinations(SwitchIndex s) {
    const std::uint32_t n = g_.num_switches();
    const auto arcs = g_.arcs(s);
    const auto deg = static_cast<std::uint32_t>(arcs.size());
    words_ = std::max<std::uint32_t>(1, (deg + 63) / 64);
    class_of_.assign(n, kNoClass);
    classes_.clear();
    class_ports_.clear();
    class_masks_.clear();
    slots_.assign(64, kNoClass);
    cand_.resize(deg);
    up_.resize(deg);
    tmask_.resize(std::size_t{64} * words_);
    for (std::uint32_t a = 0; a < deg; ++a) {
      up_[a] = rule_ == CandidateRule::kUpDown && pos_[arcs[a].to.value] < pos_[s.value];
    }

    const std::uint8_t* row_s = hops_.row(s);
    const std::uint64_t* down_s = hops_.down_row(s);
    std::array<std::uint8_t, 64> closer_hops{};
    std::array<std::uint8_t, 64> farther_hops{};
    for (std::uint32_t base = 0, chunk = 0; base < n; base += 64, ++chunk) {
      std::uint64_t valid = 0;
      for (unsigned i = 0; i < 64; ++i) {
        const std::uint8_t h = row_s[base + i];  // padding past n reads 255
        closer_hops[i] = static_cast<std::uint8_t>(h - 1);
        farther_hops[i] = static_cast<std::uint8_t>(h + 1);
        valid |= std::uint64_t{h != 0 && h != HopTable::kUnreachable} << i;
      }
      if (valid == 0) continue;
      std::uint64_t relied = 0;  // s is entered over a down-link by a D neighbour
      for (std::uint32_t a = 0; a < deg; ++a) {
        const SwitchIndex nb = arcs[a].to;
        const std::uint8_t* row_n = hops_.row(nb) + base;
        const std::uint64_t closer = equal_mask64(row_n, closer_hops.data()) & valid;
        if (rule_ == CandidateRule::kShortest) {
          cand_[a] = closer;
        } else if (up_[a]) {
          cand_[a] = closer;
          relied |= equal_mask64(row_n, farther_hops.data()) & hops_.down_row(nb)[chunk] & valid;
        } else {
          cand_[a] = closer & hops_.down_row(nb)[chunk];
        }
      }
      if (rule_ == CandidateRule::kUpDown) {
        // A D-mode switch that a D neighbour may enter over a down-link must
        // keep that packet going down: no up-links for those destinations.
        const std::uint64_t down_only = down_s[chunk] & relied;
        for (std::uint32_t a = 0; a < deg; ++a) {
          if (up_[a]) cand_[a] &= ~down_only;
        }
      }
      transpose_candidates(deg);
      const std::uint64_t* prev_mask = nullptr;
      std::uint32_t prev_class = kNoClass;
      for (std::uint64_t m = valid; m != 0; m &= m - 1) {
        const auto b = static_cast<unsigned>(std::countr_zero(m));
        const std::uint64_t* mask = &tmask_[std::size_t{b} * words_];
        if (std::all_of(mask, mask + words_, [](std::uint64_t w) { return w == 0; })) {
          return no_candidate_error(s, SwitchIndex{base + b});
        }
        // Neighbouring destinations usually share a class (all remote leaves
        // of a fat tree do): compare with the previous one before hashing.
        if (prev_mask == nullptr || !std::equal(mask, mask + words_, prev_mask)) {
          prev_class = intern(mask, arcs);
          prev_mask = mask;
        }
        class_of_[base + b] = prev_class;
      }
    }
    return std::nullopt;
  }

  // tmask_[t * words_ + w] = bits of arcs 64w.. that serve destination t of
  // the chunk: the transpose of cand_. Sparse chunks (few candidates, as in
  // tori and random graphs) set bit by bit; dense ones (fat trees: every
  // up-link serves most destinations) go through 64x64 block transposes.
  void transpose_candidates(std::uint32_t deg) {
    std::uint32_t bits = 0;
    for (std::uint32_t a = 0; a < deg; ++a)
      bits += static_cast<std::uint32_t>(std::popcount(cand_[a]));
    if (bits < 256) {
      std::fill(tmask_.begin(), tmask_.end(), 0);
      for (std::uint32_t a = 0; a < deg; ++a) {
        const std::uint64_t bit = std::uint64_t{1} << (a % 64);
        for (std::uint64_t m = cand_[a]; m != 0; m &= m - 1) {
          tmask_[std::size_t{static_cast<unsigned>(std::countr_zero(m))} * words_ + a / 64] |= bit;
        }
      }
      return;
    }
    std::array<std::uint64_t, 64> block;
    for (std::uint32_t w = 0; w < words_; ++w) {
      for (std::uint32_t i = 0; i < 64; ++i) {
        block[i] = 64 * w + i < deg ? cand_[64 * w + i] : 0;
      }
      transpose64(block);
      for (std::uint32_t t = 0; t < 64; ++t) tmask_[std::size_t{t} * words_ + w] = block[t];
    }
  }

  std::uint32_t intern(const std::uint64_t* mask, std::span<const SwitchArc> arcs) {
    const std::uint64_t h = hash(mask);
    std::size_t slot = h & (slots_.size() - 1);
    while (slots_[slot] != kNoClass) {
      const std::uint64_t* other = &class_masks_[std::size_t{slots_[slot]} * words_];
      if (std::equal(mask, mask + words_, other)) return slots_[slot];
      slot = (slot + 1) & (slots_.size() - 1);
    }
    const auto id = static_cast<std::uint32_t>(classes_.size());
    CandidateClass c;
    c.first = static_cast<std::uint32_t>(class_ports_.size());
    for (std::uint32_t w = 0; w < words_; ++w) {
      for (std::uint64_t m = mask[w]; m != 0; m &= m - 1) {
        class_ports_.push_back(
            arcs[w * 64 + static_cast<unsigned>(std::countr_zero(m))].local_port);
      }
    }
    c.count = static_cast<std::uint32_t>(class_ports_.size()) - c.first;
    classes_.push_back(c);
    class_masks_.insert(class_masks_.end(), mask, mask + words_);
    slots_[slot] = id;
    if (classes_.size() * 2 > slots_.size()) rehash();
    return id;
  }

  void rehash() {
    slots_.assign(slots_.size() * 2, kNoClass);
    for (std::uint32_t id = 0; id < classes_.size(); ++id) {
      std::size_t slot = hash(&class_masks_[std::size_t{id} * words_]) & (slots_.size() - 1);
      while (slots_[slot] != kNoClass) slot = (slot + 1) & (slots_.size() - 1);
      slots_[slot] = id;
    }
  }

  std::uint64_t hash(const std::uint64_t* mask) const {
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (std::uint32_t w = 0; w < words_; ++w) {
      h ^= mask[w] + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
      h *= 0xBF58476D1CE4E5B9ULL;
    }
    return h ^ (h >> 31);
  }

  // Least-loaded member of c, the first such from the cursor on. A data LID
  // loads it and moves the cursor past it (rotation among equally loaded
  // ports); a switch LID takes it and leaves both alone. Loads only grow, so `level` stays a lower
  // bound of the members' loads and a member at that level is a minimum: the scan nearly always
  // stops at the cursor.
  PortNum pick(CandidateClass& c, bool data) {
    const PortNum* ports = &class_ports_[c.first];
    std::uint32_t at = c.cursor;
    if (!c.exclusive && load_[ports[at]] > c.level) {
      std::uint32_t best_load = load_[ports[at]];
      for (std::uint32_t j = 1, i = at + 1; j < c.count; ++j, ++i) {
        if (i == c.count) i = 0;
        const std::uint32_t l = load_[ports[i]];
        if (l < best_load) {
          at = i;
          best_load = l;
          if (l <= c.level) break;
        }
      }
      c.level = best_load;
    }
    const PortNum p = ports[at];
    if (data) {
      ++load_[p];
      c.cursor = at + 1 == c.count ? 0 : at + 1;
    }
    return p;
  }

  void mark_exclusive_classes() {
    const std::uint32_t n = g_.num_switches();
    for (std::uint32_t t = 0; t < n; ++t) {
      if (class_of_[t] != kNoClass && by_switch_.data[t] != 0)
        classes_[class_of_[t]].has_data = true;
    }
    std::array<std::uint32_t, 256> loaders{};
    for (const CandidateClass& c : classes_) {
      if (!c.has_data) continue;
      for (std::uint32_t i = 0; i < c.count; ++i) ++loaders[class_ports_[c.first + i]];
    }
    for (CandidateClass& c : classes_) {
      c.exclusive = true;
      for (std::uint32_t i = 0; i < c.count; ++i)
        c.exclusive &= loaders[class_ports_[c.first + i]] <= 1;
    }
  }

  Error no_candidate_error(SwitchIndex s, SwitchIndex t) const {
    const Node& a = topo_.node(topo_.switch_node(s));
    const Node& b = topo_.node(topo_.switch_node(t));
    return Error{
        Errc::kInternal,
        fmt::format("switch \"{}\" ({:#018x}) is {} hops from \"{}\" ({:#018x}) but no "
                    "neighbour is one hop closer under the {} rule",
                    a.description, a.guid.value, hops_.hops(s, t), b.description, b.guid.value,
                    rule_ == CandidateRule::kShortest ? "shortest-path" : "up/down")};
  }

  const Topology& topo_;
  const SwitchGraph& g_;
  const LidsBySwitch& by_switch_;
  const HopTable& hops_;
  CandidateRule rule_;
  std::span<const std::uint32_t> pos_;

  std::uint32_t words_ = 1;              // 64-bit words per arc mask
  std::vector<std::uint64_t> cand_;      // per arc: destinations of the chunk it serves
  std::vector<std::uint8_t> up_;         // per arc: s->n is an up-link
  std::vector<std::uint64_t> tmask_;     // per destination of the chunk: arc mask
  std::vector<std::uint32_t> class_of_;  // per destination switch
  std::vector<CandidateClass> classes_;
  std::vector<PortNum> class_ports_;
  std::vector<std::uint64_t> class_masks_;  // words_ per class
  std::vector<std::uint32_t> slots_;        // open-addressing index into classes_
  std::array<std::uint32_t, 256> load_{};   // LIDs routed per port of s
};

}  // namespace

Result<Routes> fill_balanced_lfts(const Topology& topo, const SwitchGraph& g, const HopTable& hops,
                                  CandidateRule rule, std::span<const std::uint32_t> order_pos,
                                  WorkerPool& pool, std::stop_token stop) {
  const std::uint32_t n = g.num_switches();
  if (hops.num_switches() != n) {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("hop table covers {} switches, the fabric has {}", hops.num_switches(), n)};
  }
  if (rule == CandidateRule::kUpDown && order_pos.size() != n) {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("up/down order covers {} switches, the fabric has {}", order_pos.size(), n)};
  }
  Routes routes;
  routes.max_lid = g.max_lid();
  routes.lfts.resize(n);
  routes.num_vls = 1;

  const LidsBySwitch by_switch(g);
  std::vector<std::vector<std::uint32_t>> arc_load(pool.size());
  std::vector<std::uint64_t> sum_by_switch(n, 0);
  std::vector<std::uint32_t> max_by_switch(n, 0);
  SUBNETD_TRY(fill_switch_tables(
      pool, routes.lfts, routes.max_lid, stop, "LFT computation cancelled",
      [&] { return std::make_unique<SourceFiller>(topo, g, by_switch, hops, rule, order_pos); },
      [&](std::unique_ptr<SourceFiller>& filler, SwitchIndex s, Lft& lft,
          unsigned slot) -> std::optional<Error> {
        if (auto err = filler->fill(s, lft, arc_load[slot])) return err;
        for (std::uint32_t l : arc_load[slot]) {
          sum_by_switch[s.value] += l;
          max_by_switch[s.value] = std::max(max_by_switch[s.value], l);
        }
        return std::nullopt;
      }));

  std::uint64_t total = 0;
  for (std::uint32_t s = 0; s < n; ++s) {
    total += sum_by_switch[s];
    routes.load.max_routes = std::max<std::uint64_t>(routes.load.max_routes, max_by_switch[s]);
  }
  routes.load.links = g.num_arcs();
  routes.load.mean_routes =
      g.num_arcs() == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(g.num_arcs());
  return routes;
}

}  // namespace subnetd::routing

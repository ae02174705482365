#include "routing/engines/dor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

namespace subnetd::routing {
namespace {

// Rings whose routes could close a dependency cycle within the ring.
bool splits(const GridShape& shape, std::uint32_t d) {
  return shape.wrap[d] != 0 && shape.size[d] >= 5;
}

// Looks for `m` boxes that hold every grid point: a seeded annealing that
// slides one box's window a step at a time, counting the points no box
// holds; the same shape gives the same boxes. Nothing when it finds none
// within its budget.
class CoverSearch {
 public:
  CoverSearch(const GridShape& shape, const DorCover& c) : shape_(shape), c_(c) {
    std::size_t points = 1;
    for (std::uint32_t d = 0; d < c.dims; ++d) {
      stride_.push_back(points);
      points *= shape.size[d];
      if (c.width[d] < shape.size[d]) rings_.push_back(d);
    }
    count_.assign(points, 0);
  }

  std::optional<std::vector<std::uint32_t>> find(std::uint32_t m) {
    constexpr std::uint32_t kRestarts = 40, kSteps = 5000;
    std::mt19937 rng(0x5EED + m);
    const std::uint32_t nd = c_.dims;
    for (std::uint32_t restart = 0; restart < kRestarts; ++restart) {
      start_.assign(std::size_t{m} * nd, 0);
      for (std::uint32_t b = 0; b < m; ++b) {
        for (const std::uint32_t d : rings_) {
          start_[std::size_t{b} * nd + d] = rng() % shape_.size[d];
        }
      }
      std::fill(count_.begin(), count_.end(), 0);
      uncovered_ = count_.size();
      for (std::uint32_t b = 0; b < m; ++b) slab(b, nd, 0, +1);
      double heat = 2.0;
      for (std::uint32_t step = 0; step < kSteps && uncovered_ != 0; ++step, heat *= 0.998) {
        const std::uint32_t b = rng() % m;
        const std::uint32_t d = rings_[rng() % rings_.size()];
        const bool up = (rng() & 1) != 0;
        const std::size_t before = uncovered_;
        shift(b, d, up);
        const double u = static_cast<double>(rng() >> 8) / 16777216.0;
        if (uncovered_ > before &&
            u >= std::exp((static_cast<double>(before) - static_cast<double>(uncovered_)) / heat)) {
          shift(b, d, !up);  // rejected
        }
      }
      if (uncovered_ == 0) return start_;
    }
    return std::nullopt;
  }

 private:
  // Box b's window in dimension d moves a step up (or down): the slab it
  // leaves loses the box, the slab it enters gains it.
  void shift(std::uint32_t b, std::uint32_t d, bool up) {
    const std::uint32_t k = shape_.size[d], w = c_.width[d];
    std::uint32_t& first = start_[std::size_t{b} * c_.dims + d];
    if (up) {
      slab(b, d, first, -1);
      slab(b, d, (first + w) % k, +1);
      first = (first + 1) % k;
    } else {
      slab(b, d, (first + w - 1) % k, -1);
      first = (first + k - 1) % k;
      slab(b, d, first, +1);
    }
  }

  // Adds `delta` to the count of every point of box b whose coordinate in
  // dimension d is `at` (every point of the box when d == dims).
  void slab(std::uint32_t b, std::uint32_t d, std::uint32_t at, int delta) {
    const std::uint32_t nd = c_.dims;
    std::vector<std::uint32_t>& off = odometer_;
    off.assign(nd, 0);
    for (;;) {
      std::size_t idx = 0;
      for (std::uint32_t e = 0; e < nd; ++e) {
        const std::uint32_t x =
            e == d ? at : (start_[std::size_t{b} * nd + e] + off[e]) % shape_.size[e];
        idx += x * stride_[e];
      }
      if (delta > 0) {
        if (count_[idx]++ == 0) --uncovered_;
      } else if (--count_[idx] == 0) {
        ++uncovered_;
      }
      std::uint32_t e = 0;
      for (; e < nd; ++e) {
        if (e == d) continue;
        if (++off[e] < c_.width[e]) break;
        off[e] = 0;
      }
      if (e == nd) return;
    }
  }

  const GridShape& shape_;
  const DorCover& c_;
  std::vector<std::size_t> stride_;
  std::vector<std::uint32_t> rings_;  // dimensions whose windows slide
  std::vector<std::uint16_t> count_;  // boxes holding each point
  std::size_t uncovered_ = 0;
  std::vector<std::uint32_t> start_, odometer_;
};

}  // namespace

DorCover dor_cover(const GridShape& shape) {
  DorCover c;
  c.dims = shape.dims();
  std::uint32_t rings = 0;
  double points = 1;
  for (std::uint32_t d = 0; d < c.dims; ++d) {
    const std::uint32_t k = shape.size[d];
    c.width.push_back(splits(shape, d) ? (k + 1) / 2 + 1 : k);
    rings += splits(shape, d) ? 1 : 0;
    points *= k;
  }
  // The product of halves: per ring a window from 0 and one from k/2,
  // which between them hold the ring (2 * width >= k + 2).
  const std::uint32_t product = rings >= 31 ? UINT32_MAX / 2 : std::uint32_t{1} << rings;
  c.count = product;
  if (rings < 8) {
    for (std::uint32_t b = 0; b < product; ++b) {
      std::uint32_t bit = 0;
      for (std::uint32_t d = 0; d < c.dims; ++d) {
        bool upper = false;
        if (splits(shape, d)) upper = (b >> bit++ & 1) != 0;
        c.start.push_back(upper ? shape.size[d] / 2 : 0);
      }
    }
  }
  // Fewer boxes, where a search finds them (an 8x8x8 torus: 7, not 8),
  // down to a bound no cover beats: the boxes holding one coordinate of a
  // ring must cover the rest of the grid, and a box holds `width` of the
  // ring's coordinates, so m >= k * (the rest's bound) / width, in any
  // order of the rings (8x8x8: 2, then 16/5 -> 4, then 32/5 -> 7).
  if (rings >= 2 && rings <= 4 && points <= double{1 << 20}) {
    std::vector<std::uint32_t> order;
    for (std::uint32_t d = 0; d < c.dims; ++d) {
      if (splits(shape, d)) order.push_back(d);
    }
    std::uint32_t least = 1;
    do {
      std::uint32_t bound = 1;
      for (const std::uint32_t d : order) {
        bound = (shape.size[d] * bound + c.width[d] - 1) / c.width[d];
      }
      least = std::max(least, bound);
    } while (std::next_permutation(order.begin(), order.end()));
    CoverSearch search(shape, c);
    for (std::uint32_t m = product - 1; m >= least; --m) {
      std::optional<std::vector<std::uint32_t>> found = search.find(m);
      if (!found) break;
      c.start = std::move(*found);
      c.count = m;
    }
  }
  return c;
}

bool DorCover::holds(const GridShape& shape, std::uint32_t box, SwitchIndex s) const {
  for (std::uint32_t d = 0; d < dims; ++d) {
    const std::uint32_t k = shape.size[d];
    if ((shape.at(s, d) + k - start[std::size_t{box} * dims + d]) % k >= width[d]) return false;
  }
  return true;
}

std::uint32_t DorCover::box_of(const GridShape& shape, SwitchIndex s) const {
  for (std::uint32_t b = 0; b < count; ++b) {
    if (holds(shape, b, s)) return b;
  }
  return count;
}

std::uint32_t dor_layers(const GridShape& shape) {
  return dor_cover(shape).vls();
}

namespace {

// Dimension-order tables over g's switches, which form `shape`, with each
// data LID's layer (its SL) `layer_of` its switch; the channels' entry
// counts in Routes::load. Switch LIDs stay on layer 0.
template <class LayerOf>
Result<Routes> dor_tables(const SwitchGraph& g, const GridShape& shape, std::stop_token stop,
                          LayerOf&& layer_of) {
  const std::uint32_t n = g.num_switches();
  const std::uint32_t nd = shape.dims();
  if (shape.coord.size() != std::size_t{n} * nd) {
    return Error{Errc::kInternal, "dor: the grid shape does not fit the switch graph"};
  }
  // Channels per (switch, dimension, direction: 0 = +, 1 = -); parallel
  // links are several channels of one direction.
  auto slot = [&](std::uint32_t s, std::uint32_t d, std::uint32_t dir) {
    return (std::size_t{s} * nd + d) * 2 + dir;
  };
  std::vector<std::uint32_t> first(std::size_t{n} * nd * 2 + 1, 0);
  std::vector<std::size_t> arc_slot(g.num_arcs(), 0);
  for (std::uint32_t a = 0; a < g.num_arcs(); ++a) {
    const std::optional<GridStep> step = grid_step(shape, g.arc_source(a), g.arc(a).to);
    if (!step) return Error{Errc::kInternal, "dor: a link joins one grid point to itself"};
    arc_slot[a] = slot(g.arc_source(a).value, step->dim, step->plus ? 0 : 1);
    ++first[arc_slot[a] + 1];
  }
  for (std::size_t i = 1; i < first.size(); ++i) first[i] += first[i - 1];
  std::vector<std::uint32_t> channel(g.num_arcs());
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::uint32_t a = 0; a < g.num_arcs(); ++a) channel[fill[arc_slot[a]]++] = a;
  }

  const std::uint32_t max_lid = g.max_lid().value;
  Routes routes;
  routes.max_lid = g.max_lid();
  routes.lfts.resize(n);
  for (Lft& lft : routes.lfts) lft.resize(routes.max_lid);
  routes.lid_layer.assign(std::size_t{max_lid} + 1, 0);
  std::vector<std::uint32_t> rank(n, 0);  // data LIDs seen per switch
  std::vector<std::uint64_t> entries(g.num_arcs(), 0);

  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    if (lid % 64 == 0 && stop.stop_requested()) return Error{Errc::kCancelled, "dor: cancelled"};
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable()) continue;
    const SwitchIndex t = att.sw;
    const bool data = att.port != 0;
    // Ties half-way round a ring alternate with the destination's
    // coordinates and the LID's rank on its switch.
    std::uint32_t parity = data ? rank[t.value]++ : 0;
    for (std::uint32_t d = 0; d < nd; ++d) parity += shape.at(t, d);
    for (std::uint32_t s = 0; s < n; ++s) {
      if (s == t.value) {
        routes.lfts[s].data()[lid] = att.port;
        continue;
      }
      std::uint32_t d = 0;
      while (shape.at(SwitchIndex{s}, d) == shape.at(t, d)) ++d;
      const std::uint32_t k = shape.size[d];
      const std::uint32_t from = shape.at(SwitchIndex{s}, d), to = shape.at(t, d);
      bool plus = to > from;
      if (shape.wrap[d] != 0) {
        const std::uint32_t ahead = (to + k - from) % k;  // hops going +
        plus = 2 * ahead < k || (2 * ahead == k && parity % 2 == 0);
      }
      const std::size_t i = slot(s, d, plus ? 0 : 1);
      const std::uint32_t count = first[i + 1] - first[i];
      if (count == 0 && shape.missing_links != 0) continue;  // uncabled: left to the repair
      if (count == 0) return Error{Errc::kInternal, "dor: a grid point lacks a neighbour"};
      const std::uint32_t a = channel[first[i] + lid % count];
      routes.lfts[s].data()[lid] = g.arc(a).local_port;
      if (data) ++entries[a];
    }
    if (data) routes.lid_layer[lid] = static_cast<std::uint8_t>(layer_of(t));
  }

  std::uint64_t total = 0;
  for (const std::uint64_t e : entries) {
    total += e;
    routes.load.max_routes = std::max(routes.load.max_routes, e);
  }
  routes.load.links = g.num_arcs();
  routes.load.mean_routes =
      g.num_arcs() == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(g.num_arcs());
  return routes;
}

// Rings whose routes take two hops or more within the ring (four
// switches or more): their channels can close a cycle.
bool dateline_ring(const GridShape& shape, std::uint32_t d) {
  return shape.wrap[d] != 0 && shape.size[d] >= 4;
}

}  // namespace

std::optional<GridStep> grid_step(const GridShape& shape, SwitchIndex s, SwitchIndex w) {
  const std::uint32_t nd = shape.dims();
  std::uint32_t d = 0;
  while (d < nd && shape.at(s, d) == shape.at(w, d)) ++d;
  if (d == nd) return std::nullopt;
  const std::uint32_t k = shape.size[d];
  const bool plus = shape.wrap[d] != 0 ? (shape.at(s, d) + 1) % k == shape.at(w, d)
                                       : shape.at(s, d) + 1 == shape.at(w, d);
  return GridStep{d, plus};
}

Result<Routes> dor_routes(const SwitchGraph& g, const GridShape& shape, const DorCover& cover,
                          std::stop_token stop) {
  const std::uint32_t n = g.num_switches();
  const std::uint32_t nd = shape.dims();
  if (cover.vls() > 15) {
    return Error{
        Errc::kOutOfRange,
        fmt::format("dor: the {} needs more VLs (its layers and multicast's) than the 15 data VLs",
                    shape.describe())};
  }
  if (cover.dims != nd || cover.width.size() != nd ||
      cover.start.size() != std::size_t{cover.count} * nd ||
      shape.coord.size() != std::size_t{n} * nd) {
    return Error{Errc::kInternal, "dor: the layers do not fit the grid shape"};
  }
  std::vector<std::uint32_t> box(n);
  for (std::uint32_t s = 0; s < n; ++s) {
    box[s] = cover.box_of(shape, SwitchIndex{s});
    if (box[s] == cover.count)
      return Error{Errc::kInternal, "dor: a grid point outside the layers"};
  }
  Routes routes;
  SUBNETD_TRY_ASSIGN(routes,
                     dor_tables(g, shape, stop, [&](SwitchIndex t) { return box[t.value]; }));
  // Layers in use, numbered from 1 without gaps (VL 0: multicast).
  std::vector<std::uint8_t> used(cover.count, 0);
  const std::uint32_t max_lid = g.max_lid().value;
  auto data = [&](std::uint32_t lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    return att.routable() && att.port != 0;
  };
  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    if (data(lid)) used[routes.lid_layer[lid]] = 1;
  }
  std::vector<std::uint8_t> renum(used.size(), 0);
  std::uint32_t num = 1;
  for (std::size_t k = 0; k < used.size(); ++k) {
    if (used[k] != 0) renum[k] = static_cast<std::uint8_t>(num++);
  }
  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    if (data(lid)) routes.lid_layer[lid] = renum[routes.lid_layer[lid]];
  }
  routes.num_vls = static_cast<std::uint8_t>(std::max<std::uint32_t>(2, num));
  return routes;
}

namespace {

// The rings that take a bit of the SL, and the data VLs their datelines
// use (VL 0 for multicast, VL 1, and VL 2 where some ring wraps).
std::uint32_t dateline_rings(const GridShape& shape) {
  std::uint32_t rings = 0;
  for (std::uint32_t d = 0; d < shape.dims(); ++d) rings += dateline_ring(shape, d) ? 1 : 0;
  return rings;
}
std::uint32_t dateline_vls(const GridShape& shape) {
  return dateline_rings(shape) != 0 ? 3 : 2;
}

}  // namespace

std::uint32_t dor_dateline_sls(const GridShape& shape) {
  const std::uint32_t rings = dateline_rings(shape);
  return rings >= 31 ? UINT32_MAX : 1 + (std::uint32_t{1} << rings);
}

bool dor_dateline_fits(const GridShape& shape, std::uint32_t max_vls) {
  return max_vls >= dateline_vls(shape) && dor_dateline_sls(shape) <= kNumSls;
}

Result<Routes> dor_dateline_routes(const SwitchGraph& g, const GridShape& shape,
                                   std::stop_token stop, std::uint32_t max_vls) {
  const std::uint32_t n = g.num_switches();
  const std::uint32_t nd = shape.dims();
  if (dor_dateline_sls(shape) > kNumSls) {
    return Error{Errc::kOutOfRange,
                 fmt::format("dor: datelines on the {} need {} SLs (one for multicast, one per "
                             "half of each ring of four or more), more than {}",
                             shape.describe(), dor_dateline_sls(shape), kNumSls)};
  }
  if (shape.coord.size() != std::size_t{n} * nd) {
    return Error{Errc::kInternal, "dor: the grid shape does not fit the switch graph"};
  }
  // A ring's bit of the SL: set when the destination's coordinate is in
  // the upper half, at floor(k/2) or more.
  std::vector<std::int32_t> bit(nd, -1);
  for (std::uint32_t d = 0, b = 0; d < nd; ++d) {
    if (dateline_ring(shape, d)) bit[d] = static_cast<std::int32_t>(b++);
  }
  const std::uint32_t sls = dor_dateline_sls(shape);
  auto sl_of = [&](SwitchIndex t) {
    std::uint32_t code = 0;
    for (std::uint32_t d = 0; d < nd; ++d) {
      if (bit[d] >= 0 && shape.at(t, d) >= shape.size[d] / 2) code |= 1U << bit[d];
    }
    return 1 + code;
  };
  Routes routes;
  SUBNETD_TRY_ASSIGN(routes, dor_tables(g, shape, stop, sl_of));
  // Switch LIDs too: management traffic (GMPs) a host sends on the SL
  // its PathRecord gives keeps to the same VLs, where the layers leave
  // it on VL 0.
  for (std::uint32_t lid = 1; lid <= g.max_lid().value; ++lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    if (att.routable() && att.port == 0)
      routes.lid_layer[lid] = static_cast<std::uint8_t>(sl_of(att.sw));
  }
  // Each switch's SL2VL, the same from every input port: on a ring of four
  // or more, a hop going + takes VL 2 where the destination is in the
  // lower half and the switch at floor(k/2) or beyond (the route wraps
  // ahead of it: it goes + from c to t < c only when c - t >= ceil(k/2)),
  // and a hop going - takes VL 2 where the destination is in the upper
  // half and the switch below ceil(k/2) (mirrored); every other hop of a
  // data SL takes VL 1, SL 0 (multicast) VL 0, and SLs no route uses are
  // dropped.
  // The free SLs after them: SL sls + j on VL base + j on every port.
  const std::uint32_t base = dateline_vls(shape);
  const std::uint32_t free =
      std::min(std::min(max_vls, 15U) > base ? std::min(max_vls, 15U) - base : 0U, kNumSls - sls);
  routes.hop_vls.resize(n);
  for (std::uint32_t s = 0; s < n; ++s) {
    const SwitchIndex sw{s};
    std::vector<std::uint8_t>& table = routes.hop_vls[s];
    table.assign((std::size_t{g.num_ports(sw)} + 1) * kNumSls, kDropVl);
    for (std::uint32_t p = 0; p <= g.num_ports(sw); ++p) {
      std::uint8_t* vl = &table[std::size_t{p} * kNumSls];
      vl[0] = 0;
      const std::uint32_t a = g.arc_at_port(sw, static_cast<PortNum>(p));
      std::fill(vl + 1, vl + sls, std::uint8_t{1});
      for (std::uint32_t j = 0; j < free; ++j) vl[sls + j] = static_cast<std::uint8_t>(base + j);
      if (a == kNoArc) continue;  // to a CA or router: delivered
      const GridStep step = grid_step(shape, sw, g.arc(a).to).value_or(GridStep{});
      if (bit[step.dim] < 0) continue;
      const std::uint32_t k = shape.size[step.dim], c = shape.at(sw, step.dim);
      for (std::uint32_t sl = 1; sl < sls; ++sl) {
        const bool upper = ((sl - 1) >> bit[step.dim] & 1U) != 0;
        if (step.plus ? !upper && c >= k / 2 : upper && c < (k + 1) / 2) vl[sl] = 2;
      }
    }
  }
  routes.num_vls = static_cast<std::uint8_t>(base + free);
  return routes;
}

}  // namespace subnetd::routing

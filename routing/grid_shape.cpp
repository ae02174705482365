#include "routing/grid_shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "routing/grid_placement.hpp"
#include "routing/grid_points.hpp"

namespace subnetd::routing {
namespace {

using Neighbours = std::vector<std::vector<std::uint32_t>>;

// Sorted distinct neighbours of every switch (parallel links once).
Neighbours neighbours(const SwitchGraph& g) {
  Neighbours nb(g.num_switches());
  for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
    for (const SwitchArc& a : g.arcs(SwitchIndex{s})) nb[s].push_back(a.to.value);
    std::sort(nb[s].begin(), nb[s].end());
    nb[s].erase(std::unique(nb[s].begin(), nb[s].end()), nb[s].end());
  }
  return nb;
}

// Switches next to both u and v.
std::uint32_t shared(const Neighbours& nb, std::uint32_t u, std::uint32_t v) {
  std::uint32_t count = 0;
  auto a = nb[u].begin();
  auto b = nb[v].begin();
  while (a != nb[u].end() && b != nb[v].end()) {
    if (*a < *b) {
      ++a;
    } else if (*b < *a) {
      ++b;
    } else {
      ++count;
      ++a;
      ++b;
    }
  }
  return count;
}

Error none(std::string why) {
  return Error{Errc::kNotFound, "no torus or mesh: " + why};
}

constexpr std::uint32_t kNone = UINT32_MAX;
constexpr std::uint32_t kTwoWays = UINT32_MAX - 1;

// The neighbour of `cur` straight on from `prev`: one that shares no
// neighbour with prev but cur. kNone at a path's end, kTwoWays when two
// qualify alike. A missing link can break the square that tells a turn
// cur+f from straight on; but a turn still shares no neighbour but cur
// with cur-f, its own opposite, where straight on shares two with every
// other neighbour of cur unless a square at it is broken too. So of the
// neighbours that share none with prev, the one that does so with the
// fewest other neighbours of cur is straight on.
std::uint32_t straight_on(const Neighbours& nb, std::uint32_t prev, std::uint32_t cur) {
  std::uint32_t next = kNone, least = kNone;
  bool tie = false;
  for (const std::uint32_t w : nb[cur]) {
    if (w == prev || shared(nb, w, prev) != 1) continue;
    const auto opposites = static_cast<std::uint32_t>(std::count_if(
        nb[cur].begin(), nb[cur].end(),
        [&](std::uint32_t x) { return x != prev && x != w && shared(nb, w, x) == 1; }));
    if (opposites > least) continue;
    tie = opposites == least;
    least = opposites;
    next = w;
  }
  return tie ? kTwoWays : next;
}

// The seed's neighbours by dimension: those sharing no neighbour but the
// seed are the two directions of one dimension. Empty when they do not
// pair so.
std::vector<std::vector<std::uint32_t>> pair_dimensions(const Neighbours& nb, std::uint32_t seed) {
  const std::vector<std::uint32_t>& around = nb[seed];
  std::vector<std::vector<std::uint32_t>> dims;
  std::vector<std::uint32_t> dim_of(around.size(), kNone);
  for (std::size_t i = 0; i < around.size(); ++i) {
    if (dim_of[i] != kNone) continue;
    dim_of[i] = static_cast<std::uint32_t>(dims.size());
    dims.push_back({around[i]});
    for (std::size_t j = i + 1; j < around.size(); ++j) {
      if (shared(nb, around[i], around[j]) != 1) continue;
      if (dim_of[j] != kNone || dims.back().size() == 2) return {};
      dim_of[j] = dim_of[i];
      dims.back().push_back(around[j]);
    }
  }
  return dims;
}

// Whether coordinates a and b (one per dimension) are grid neighbours.
template <class CoordA, class CoordB>
bool grid_step(const GridShape& shape, CoordA a_of, CoordB b_of) {
  std::uint32_t differ = 0;
  bool step = false;
  for (std::uint32_t d = 0; d < shape.dims(); ++d) {
    const std::uint32_t a = a_of(d), b = b_of(d);
    if (a == b) continue;
    ++differ;
    const std::uint32_t k = shape.size[d];
    step = (a + 1 == b || b + 1 == a) ||
           (shape.wrap[d] != 0 && ((a + 1) % k == b || (b + 1) % k == a));
  }
  return differ == 1 && step;
}

// The links cabled (parallel ones once), each of which must join grid
// neighbours.
Result<std::uint64_t> grid_links_cabled(const Topology& topo, const Neighbours& nb,
                                        const GridShape& shape) {
  std::uint64_t links = 0;
  for (std::uint32_t s = 0; s < nb.size(); ++s) {
    for (const std::uint32_t w : nb[s]) {
      if (!grid_step(
              shape, [&](std::uint32_t d) { return shape.at(SwitchIndex{s}, d); },
              [&](std::uint32_t d) { return shape.at(SwitchIndex{w}, d); })) {
        return none(fmt::format("the link between switches {} and {} is no grid link",
                                topo.switch_label(SwitchIndex{s}),
                                topo.switch_label(SwitchIndex{w})));
      }
      ++links;
    }
  }
  return links / 2;
}

// Gives the grid coordinates that depend on its switches' GUIDs only, not
// on the origin a search started from nor on the switches' index order:
// the switch of least GUID sits at 0 on every ring and in the lower half
// of every path; each dimension runs towards the lower-GUID of its two
// neighbours; rings come before paths, larger before smaller, and
// dimensions alike in both are ordered by the GUID of its next switch
// along them. So the same fabric, found whole or with a gap, sweep after
// sweep, gets the same coordinates, and dimension-order routing the same
// layers (SLs). Only the least-GUID switch's own death, or a dead
// neighbour of it, moves them.
void canonicalise(const Topology& topo, GridShape& shape) {
  const std::uint32_t nd = shape.dims();
  const auto n = static_cast<std::uint32_t>(shape.coord.size() / nd);
  auto guid = [&](std::uint32_t s) {
    return s == kNone ? UINT64_MAX : topo.node(topo.switch_node(SwitchIndex{s})).guid.value;
  };
  std::uint32_t a = 0;
  for (std::uint32_t s = 1; s < n; ++s) {
    if (guid(s) < guid(a)) a = s;
  }
  const Points pts(shape);
  const std::vector<std::uint32_t> at = pts.switches();
  // The switch one step from `a` along d, either way (kNone past a path's end).
  auto step = [&](std::uint32_t d, bool up) { return pts.step(at, a, d, up); };
  std::vector<std::uint8_t> flip(nd, 0);
  std::vector<std::uint32_t> shift(nd, 0);
  for (std::uint32_t d = 0; d < nd; ++d) {
    const std::uint32_t k = shape.size[d];
    const std::uint32_t c = shape.at(SwitchIndex{a}, d);
    if (shape.wrap[d] != 0) shift[d] = c;
    const bool middle = shape.wrap[d] != 0 || c == k - 1 - c;
    flip[d] = middle ? guid(step(d, false)) < guid(step(d, true)) : c > k - 1 - c;
  }
  auto moved = [&](std::uint32_t s, std::uint32_t d) {
    const std::uint32_t k = shape.size[d];
    const std::uint32_t c = (shape.at(SwitchIndex{s}, d) + k - shift[d]) % k;
    if (flip[d] == 0) return c;
    return shape.wrap[d] != 0 ? (k - c) % k : k - 1 - c;
  };
  std::vector<std::uint32_t> order(nd);
  std::vector<std::uint64_t> next(nd);
  for (std::uint32_t d = 0; d < nd; ++d) {
    order[d] = d;
    next[d] = guid(step(d, flip[d] == 0));
  }
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    if (shape.wrap[x] != shape.wrap[y]) return shape.wrap[x] > shape.wrap[y];
    if (shape.size[x] != shape.size[y]) return shape.size[x] > shape.size[y];
    const std::uint32_t cx = moved(a, x), cy = moved(a, y);
    if (cx != cy) return cx < cy;
    return next[x] < next[y];
  });
  GridShape out;
  out.missing_links = shape.missing_links;
  out.missing_switches = shape.missing_switches;
  out.coord.resize(shape.coord.size());
  for (const std::uint32_t d : order) {
    out.size.push_back(shape.size[d]);
    out.wrap.push_back(shape.wrap[d]);
  }
  for (std::uint32_t s = 0; s < n; ++s) {
    for (std::uint32_t i = 0; i < nd; ++i) out.coord[std::size_t{s} * nd + i] = moved(s, order[i]);
  }
  shape = std::move(out);
}

// One try of grid_shape_with_gaps, from `seed`: the shape, or why not.
// `placings` counts the tries whose lines held every switch (the costly
// part follows them).
Result<GridShape> gapped_from(const Topology& topo, const Neighbours& nb, std::uint32_t seed,
                              std::uint64_t max_missing, std::uint32_t& placings) {
  const auto n = static_cast<std::uint32_t>(nb.size());
  auto name = [&](std::uint32_t s) { return topo.switch_label(SwitchIndex{s}); };
  const std::vector<std::vector<std::uint32_t>> dims = pair_dimensions(nb, seed);
  if (dims.empty()) {
    return none(fmt::format("the neighbours of switch {} do not pair into dimensions", name(seed)));
  }
  // Each dimension's line through the seed, walked straight on both ways.
  GridShape shape;
  std::vector<std::vector<std::uint32_t>> lines;
  std::vector<std::uint32_t> origin;  // the seed's coordinates
  std::vector<std::uint32_t> on_line(n, kNone);
  std::uint64_t product = 1;
  // From the seed through `first`, appending to `out`: 1 when it comes
  // back to the seed, 0 at a path's end.
  auto walk = [&](std::uint32_t first, std::uint32_t dim,
                  std::vector<std::uint32_t>& out) -> Result<int> {
    out.assign(1, first);
    if (on_line[first] == dim) return none("a line closes on itself");
    on_line[first] = dim;
    std::uint32_t prev = seed;
    for (;;) {
      const std::uint32_t next = straight_on(nb, prev, out.back());
      if (next == kTwoWays) {
        return none(fmt::format("switch {} has two straight ways on from switch {}",
                                name(out.back()), name(prev)));
      }
      if (next == kNone) return 0;
      if (next == seed) return 1;
      if (on_line[next] == dim) return none("a line closes on itself");
      on_line[next] = dim;
      prev = out.back();
      out.push_back(next);
    }
  };
  for (const std::vector<std::uint32_t>& dir : dims) {
    const auto dim = static_cast<std::uint32_t>(lines.size());
    std::vector<std::uint32_t> plus, minus, line;
    int closed = 0;
    SUBNETD_TRY_ASSIGN(closed, walk(dir[0], dim, plus));
    if (closed != 0 && (dir.size() != 2 || plus.back() != dir[1])) {
      return none(fmt::format("switch {}'s dimension through switch {} is neither ring nor path",
                              name(seed), name(dir[0])));
    }
    if (closed == 0 && dir.size() == 2) {
      int back = 0;
      SUBNETD_TRY_ASSIGN(back, walk(dir[1], dim, minus));
      if (back != 0) return none("a line is a ring one way and a path the other");
    }
    line.assign(minus.rbegin(), minus.rend());
    origin.push_back(static_cast<std::uint32_t>(line.size()));
    line.push_back(seed);
    line.insert(line.end(), plus.begin(), plus.end());
    product *= line.size();
    if (product > n + max_missing) {
      return none("the dimensions hold more switches than the fabric");
    }
    shape.size.push_back(static_cast<std::uint32_t>(line.size()));
    shape.wrap.push_back(closed != 0 ? 1 : 0);
    lines.push_back(std::move(line));
  }
  // Grid points without a switch (dead or removed ones) count against
  // the links missing: each takes its grid links with it.
  if (product < n || product - n > max_missing) {
    return none(fmt::format("the dimensions hold {} switches, the fabric {}", product, n));
  }
  ++placings;
  const std::uint32_t nd = shape.dims();
  const Points pts(shape);
  constexpr std::uint64_t kNoPoint = UINT64_MAX;
  std::vector<std::uint32_t> at(product, kNone);
  std::vector<std::uint64_t> pos(n, kNoPoint);
  std::uint64_t seed_point = 0;
  for (std::uint32_t d = 0; d < nd; ++d) seed_point += origin[d] * pts.stride(d);
  std::uint32_t placed = 0;
  auto put = [&](std::uint64_t i, std::uint32_t s) {
    at[i] = s;
    pos[s] = i;
    ++placed;
  };
  put(seed_point, seed);
  for (std::uint32_t d = 0; d < nd; ++d) {
    for (std::uint32_t c = 0; c < shape.size[d]; ++c) {
      if (c == origin[d]) continue;
      const std::uint64_t i = seed_point - origin[d] * pts.stride(d) + c * pts.stride(d);
      const std::uint32_t s = lines[d][c];
      if (pos[s] != kNoPoint) {
        return none(fmt::format("switch {} falls on two grid points", name(s)));
      }
      put(i, s);
    }
  }

  // The rest, in rounds. Each point next to placed ones names its best
  // candidate: of the unplaced switches cabled to its placed neighbours,
  // the one cabled to most, with no placed neighbour that is not one of
  // the point's. A point whose best is tied waits; so does a switch two
  // points name alike (a point without a switch would otherwise take the
  // switch of the point diagonally across the two placed neighbours they
  // share). `least` is the placed neighbours a candidate must be cabled
  // to: two while any point can be placed so, one only when none can.
  struct Claim {
    std::uint64_t point;
    std::uint32_t sw, score;
  };
  std::vector<Claim> claims;
  std::vector<std::uint32_t> score(n, 0), top(n, 0), at_top(n, 0), candidates;
  auto claim = [&](std::uint64_t i) -> Claim {
    candidates.clear();
    pts.for_each_neighbour(i, [&](std::uint64_t j) {
      if (at[j] == kNone) return;
      for (const std::uint32_t w : nb[at[j]]) {
        if (pos[w] == kNoPoint && score[w]++ == 0) candidates.push_back(w);
      }
    });
    std::uint32_t best = kNone, best_score = 0;
    bool tie = false;
    for (const std::uint32_t w : candidates) {
      const bool fits = std::all_of(nb[w].begin(), nb[w].end(), [&](std::uint32_t q) {
        return pos[q] == kNoPoint ||
               grid_step(
                   shape, [&](std::uint32_t d) { return pts.coord(pos[q], d); },
                   [&](std::uint32_t d) { return pts.coord(i, d); });
      });
      if (!fits || score[w] < best_score) continue;
      tie = score[w] == best_score;
      if (!tie) best = w;
      best_score = score[w];
    }
    for (const std::uint32_t w : candidates) score[w] = 0;
    return {i, tie ? kNone : best, best_score};
  };
  std::vector<std::uint64_t> queue, next;
  std::vector<std::uint8_t> queued(product, 0);
  auto enqueue_around = [&](std::uint64_t i, std::vector<std::uint64_t>& into) {
    pts.for_each_neighbour(i, [&](std::uint64_t j) {
      if (at[j] == kNone && queued[j] == 0) {
        queued[j] = 1;
        into.push_back(j);
      }
    });
  };
  for (std::uint64_t i = 0; i < product; ++i) {
    if (at[i] != kNone) enqueue_around(i, queue);
  }
  for (std::uint32_t least = 2; placed < n && least > 0;) {
    claims.clear();
    for (const std::uint64_t i : queue) {
      const Claim c = claim(i);
      if (c.sw != kNone && c.score >= least) claims.push_back(c);
    }
    for (const Claim& c : claims) {
      if (c.score > top[c.sw]) {
        top[c.sw] = c.score;
        at_top[c.sw] = 1;
      } else if (c.score == top[c.sw]) {
        ++at_top[c.sw];
      }
    }
    bool progress = false;
    for (const Claim& c : claims) {
      if (c.score != top[c.sw] || at_top[c.sw] != 1) continue;
      put(c.point, c.sw);
      progress = true;
    }
    for (const Claim& c : claims) top[c.sw] = at_top[c.sw] = 0;
    next.clear();
    for (const std::uint64_t i : queue) {
      if (at[i] == kNone) next.push_back(i);
    }
    for (const std::uint64_t i : queue) {
      if (at[i] != kNone) enqueue_around(i, next);
    }
    queue.swap(next);
    least = progress ? 2 : least - 1;
  }
  if (placed < n) {
    const auto left =
        static_cast<std::uint32_t>(std::find(pos.begin(), pos.end(), kNoPoint) - pos.begin());
    return none(fmt::format("switch {} fits no grid point next to its neighbours", name(left)));
  }
  shape.missing_switches = static_cast<std::uint32_t>(product - n);
  shape.coord.assign(std::size_t{n} * nd, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    for (std::uint32_t d = 0; d < nd; ++d)
      shape.coord[std::size_t{s} * nd + d] = pts.coord(pos[s], d);
  }
  std::uint64_t links = 0;
  SUBNETD_TRY_ASSIGN(links, grid_links_cabled(topo, nb, shape));
  const std::uint64_t expected = shape.grid_links();
  if (links > expected) return none("more links than the grid has");
  shape.missing_links = expected - links;
  if (shape.missing_links > max_missing) {
    return Error{Errc::kOutOfRange,
                 fmt::format("no torus or mesh: the switches form a {}, but {} missing, more than "
                             "the {} links it may lack",
                             shape.describe(), shape.gaps(), max_missing)};
  }
  canonicalise(topo, shape);
  return shape;
}

}  // namespace

std::string GridShape::describe() const {
  std::string dims_text;
  std::string kinds;
  bool rings = false, paths = false;
  for (std::uint32_t d = 0; d < dims(); ++d) {
    // fmt::format_to, not `"x" + to_string(...)`: GCC 12 at -O3 reports a
    // false -Wrestrict on operator+(const char*, string&&).
    fmt::format_to(std::back_inserter(dims_text), "{}{}", d == 0 ? "" : "x", size[d]);
    fmt::format_to(std::back_inserter(kinds), "{}{}", d == 0 ? "" : " x ",
                   wrap[d] != 0 ? "ring" : "path");
    (wrap[d] != 0 ? rings : paths) = true;
  }
  if (dims() == 1) return fmt::format("{} of {}", rings ? "ring" : "line", size[0]);
  if (rings && paths) return fmt::format("{} grid ({})", dims_text, kinds);
  return fmt::format("{} {}", dims_text, rings ? "torus" : "mesh");
}

std::string GridShape::gaps() const {
  if (missing_switches == 0) return fmt::format("{} of its {} links", missing_links, grid_links());
  return fmt::format("{} of its {} switches and {} of its {} links", missing_switches, points(),
                     missing_links, grid_links());
}

std::uint64_t GridShape::points() const {
  std::uint64_t all = 1;
  for (const std::uint32_t k : size) all *= k;
  return all;
}

std::uint64_t GridShape::grid_links() const {
  const std::uint64_t all = points();
  std::uint64_t links = 0;
  for (std::uint32_t d = 0; d < dims(); ++d) {
    links += all / size[d] * (wrap[d] != 0 ? size[d] : size[d] - 1);
  }
  return links;
}

namespace {

Result<GridShape> whole_grid(const Topology& topo, const SwitchGraph& g) {
  const std::uint32_t n = g.num_switches();
  auto name = [&](std::uint32_t s) { return topo.switch_label(SwitchIndex{s}); };
  if (n < 2) return none("fewer than two switches");
  if (g.num_components() != 1) return none("the switches form more than one part");
  const Neighbours nb = neighbours(g);
  std::uint32_t seed = 0;
  for (std::uint32_t s = 1; s < n; ++s) {
    if (nb[s].size() < nb[seed].size()) seed = s;
  }

  // Dimensions at the seed: neighbours sharing no neighbour but the seed
  // are the two directions of one dimension.
  const std::vector<std::vector<std::uint32_t>> dims = pair_dimensions(nb, seed);
  if (dims.empty()) {
    return none(fmt::format("the neighbours of switch {} do not pair into dimensions", name(seed)));
  }

  // Each dimension's line through the seed, walked straight on.
  GridShape shape;
  std::vector<std::vector<std::uint32_t>> lines;
  std::uint64_t product = 1;
  std::vector<std::uint32_t> on_line(n, UINT32_MAX);  // the dimension whose line holds it
  for (const std::vector<std::uint32_t>& dir : dims) {
    const auto dim = static_cast<std::uint32_t>(lines.size());
    std::vector<std::uint32_t> line{seed, dir[0]};
    on_line[dir[0]] = dim;
    bool closed = false;
    while (!closed) {
      const std::uint32_t prev = line[line.size() - 2];
      const std::uint32_t cur = line.back();
      const std::uint32_t next = straight_on(nb, prev, cur);
      if (next == kTwoWays) {
        return none(fmt::format("switch {} has two straight ways on from switch {}", name(cur),
                                name(prev)));
      }
      if (next == kNone) break;  // the end of a path
      if (next == seed) {
        closed = true;
      } else if (on_line[next] == dim) {
        return none(fmt::format("the line from switch {} through switch {} closes on itself",
                                name(seed), name(dir[0])));
      } else {
        line.push_back(next);
        on_line[next] = dim;
      }
    }
    // Two directions make a ring ending next to the seed; one, a path.
    if (closed != (dir.size() == 2) || (closed && line.back() != dir[1])) {
      return none(fmt::format("switch {}'s dimension through switch {} is neither ring nor path",
                              name(seed), name(dir[0])));
    }
    product *= line.size();
    if (product > n) return none("the dimensions hold more switches than the fabric");
    shape.size.push_back(static_cast<std::uint32_t>(line.size()));
    shape.wrap.push_back(closed ? 1 : 0);
    lines.push_back(std::move(line));
  }
  if (product != n) {
    return none(fmt::format("the dimensions hold {} switches, the fabric {}", product, n));
  }

  // Every switch, coordinates in mixed radix (dimension 0 most significant):
  // on a line through the seed, or the corner closing the square of the
  // switches one step back in its first two non-zero coordinates.
  const std::uint32_t nd = shape.dims();
  std::vector<std::uint64_t> stride(nd, 1);
  for (std::uint32_t d = nd; d-- > 1;) stride[d - 1] = stride[d] * shape.size[d];
  std::vector<std::uint32_t> at(n, UINT32_MAX);
  std::vector<std::uint8_t> placed(n, 0);
  std::vector<std::uint32_t> nonzero;
  for (std::uint64_t i = 0; i < n; ++i) {
    nonzero.clear();
    for (std::uint32_t d = 0; d < nd && nonzero.size() < 2; ++d) {
      if (i / stride[d] % shape.size[d] != 0) nonzero.push_back(d);
    }
    std::uint32_t s = UINT32_MAX;
    if (nonzero.empty()) {
      s = seed;
    } else if (nonzero.size() == 1) {
      s = lines[nonzero[0]][i / stride[nonzero[0]] % shape.size[nonzero[0]]];
    } else {
      const std::uint32_t u = at[i - stride[nonzero[0]]];
      const std::uint32_t v = at[i - stride[nonzero[1]]];
      const std::uint32_t x = at[i - stride[nonzero[0]] - stride[nonzero[1]]];
      for (const std::uint32_t w : nb[u]) {
        if (w == x || !std::binary_search(nb[v].begin(), nb[v].end(), w)) continue;
        if (s != UINT32_MAX) {
          return none(
              fmt::format("switches {} and {} close more than one square", name(u), name(v)));
        }
        s = w;
      }
      if (s == UINT32_MAX) {
        return none(fmt::format("switches {} and {} close no square", name(u), name(v)));
      }
    }
    if (placed[s] != 0) return none(fmt::format("switch {} falls on two grid points", name(s)));
    placed[s] = 1;
    at[i] = s;
  }
  shape.coord.assign(std::size_t{n} * nd, 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    for (std::uint32_t d = 0; d < nd; ++d) {
      shape.coord[std::size_t{at[i]} * nd + d] =
          static_cast<std::uint32_t>(i / stride[d] % shape.size[d]);
    }
  }

  // Every link joins grid neighbours, and the grid's links are all there.
  std::uint64_t links = 0;
  SUBNETD_TRY_ASSIGN(links, grid_links_cabled(topo, nb, shape));
  if (links != shape.grid_links()) {
    return none(fmt::format("{} of the grid's {} links are cabled", links, shape.grid_links()));
  }
  canonicalise(topo, shape);
  return shape;
}

// Places a grid found: by the seed if it applies, else as `previous`
// placed its switches, else canonically (as found).
void place(const Topology& topo, GridShape& shape, const GridPlacement* previous,
           std::span<const Guid> seed) {
  if (seed.empty()) {
    if (previous != nullptr) place_as_before(topo, shape, *previous);
    return;
  }
  const Result<void> seeded = place_by_seed(topo, shape, seed);
  if (seeded.ok()) {
    shape.placement = fmt::format("the grid placed by its seed (switch {:#018x} at the origin)",
                                  seed.front().value);
    return;
  }
  const bool before = previous != nullptr && place_as_before(topo, shape, *previous);
  shape.placement =
      fmt::format("the grid seed was not applied ({}): the grid placed {}", seeded.error().message,
                  before ? "as the routes before" : "canonically");
}

}  // namespace

Result<GridShape> grid_shape(const Topology& topo, const SwitchGraph& g,
                             const GridPlacement* previous, std::span<const Guid> seed) {
  Result<GridShape> shape = whole_grid(topo, g);
  if (shape.ok()) place(topo, *shape, previous, seed);
  return shape;
}

Result<GridShape> grid_shape_with_gaps(const Topology& topo, const SwitchGraph& g,
                                       std::uint64_t max_missing, const GridPlacement* previous,
                                       std::span<const Guid> seed) {
  // Origins whose lines hold every switch, placed from: past this many
  // the fabric is taken for no grid. Walking an origin's lines is cheap,
  // so any origin may be walked.
  constexpr std::uint32_t kPlacings = 32;
  const std::uint32_t n = g.num_switches();
  if (n < 2) return none("fewer than two switches");
  if (g.num_components() != 1) return none("the switches form more than one part");
  const Neighbours nb = neighbours(g);
  // Origins: switches whose neighbours pair into dimensions and close
  // squares (share one or two neighbours each), the most cabled first,
  // and spread over the fabric (a scrambled order), so that one gap near
  // the first origin's lines does not spoil the next ones' too.
  std::vector<std::uint32_t> origins;
  for (std::uint32_t s = 0; s < n; ++s) {
    bool clean = !pair_dimensions(nb, s).empty();
    for (std::size_t i = 0; clean && i < nb[s].size(); ++i) {
      for (std::size_t j = i + 1; clean && j < nb[s].size(); ++j) {
        clean = shared(nb, nb[s][i], nb[s][j]) != 0;
      }
    }
    if (clean) origins.push_back(s);
  }
  auto scrambled = [](std::uint32_t s) { return s * 2654435761U; };
  std::sort(origins.begin(), origins.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (nb[a].size() != nb[b].size()) return nb[a].size() > nb[b].size();
    return scrambled(a) < scrambled(b);
  });
  if (origins.empty()) return none("no switch's neighbours pair into dimensions");
  std::string first;
  std::uint32_t placings = 0;
  std::size_t tried = 0;
  for (; tried < origins.size() && placings < kPlacings; ++tried) {
    Result<GridShape> shape = gapped_from(topo, nb, origins[tried], max_missing, placings);
    if (shape.ok()) place(topo, *shape, previous, seed);
    // Too many links missing: the grid is found, and so it would be from
    // any other origin.
    if (shape.ok() || shape.error().code == Errc::kOutOfRange) return shape;
    if (tried == 0) first = shape.error().message;
  }
  return Error{Errc::kNotFound,
               fmt::format("{} (and from {} more switches as the origin)", first, tried - 1)};
}

}  // namespace subnetd::routing

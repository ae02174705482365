#include "routing/grid_shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

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

Result<GridShape> grid_shape(const Topology& topo, const SwitchGraph& g) {
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
  const std::vector<std::uint32_t>& around = nb[seed];
  std::vector<std::vector<std::uint32_t>> dims;
  std::vector<std::uint32_t> dim_of(around.size(), UINT32_MAX);
  for (std::size_t i = 0; i < around.size(); ++i) {
    if (dim_of[i] != UINT32_MAX) continue;
    dim_of[i] = static_cast<std::uint32_t>(dims.size());
    dims.push_back({around[i]});
    for (std::size_t j = i + 1; j < around.size(); ++j) {
      if (shared(nb, around[i], around[j]) != 1) continue;
      if (dim_of[j] != UINT32_MAX || dims.back().size() == 2) {
        return none(
            fmt::format("the neighbours of switch {} do not pair into dimensions", name(seed)));
      }
      dim_of[j] = dim_of[i];
      dims.back().push_back(around[j]);
    }
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
      std::uint32_t next = UINT32_MAX;
      for (const std::uint32_t w : nb[cur]) {
        if (w == prev || shared(nb, w, prev) != 1) continue;
        if (next != UINT32_MAX) {
          return none(fmt::format("switch {} has two straight ways on from switch {}", name(cur),
                                  name(prev)));
        }
        next = w;
      }
      if (next == UINT32_MAX) break;  // the end of a path
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
  std::uint64_t links = 0, expected = 0;
  for (std::uint32_t d = 0; d < nd; ++d) {
    expected += n / shape.size[d] * (shape.wrap[d] != 0 ? shape.size[d] : shape.size[d] - 1);
  }
  for (std::uint32_t s = 0; s < n; ++s) {
    for (const std::uint32_t w : nb[s]) {
      std::uint32_t differ = 0;
      bool step = false;
      for (std::uint32_t d = 0; d < nd; ++d) {
        const std::uint32_t a = shape.at(SwitchIndex{s}, d), b = shape.at(SwitchIndex{w}, d);
        if (a == b) continue;
        ++differ;
        const std::uint32_t k = shape.size[d];
        step = (a + 1 == b || b + 1 == a) ||
               (shape.wrap[d] != 0 && ((a + 1) % k == b || (b + 1) % k == a));
      }
      if (differ != 1 || !step) {
        return none(
            fmt::format("the link between switches {} and {} is no grid link", name(s), name(w)));
      }
      ++links;
    }
  }
  if (links / 2 != expected) {
    return none(fmt::format("{} of the grid's {} links are cabled", links / 2, expected));
  }
  return shape;
}

}  // namespace subnetd::routing

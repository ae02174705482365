#include "routing/grid_placement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "routing/grid_points.hpp"

namespace subnetd::routing {

const std::uint32_t* GridPlacement::find(std::uint64_t guid) const {
  const auto it = std::lower_bound(guids.begin(), guids.end(), guid);
  if (it == guids.end() || *it != guid) return nullptr;
  return &coord[static_cast<std::size_t>(it - guids.begin()) * dims()];
}

bool same_placement(const std::shared_ptr<const GridPlacement>& a,
                    const std::shared_ptr<const GridPlacement>& b) {
  return a == b || (a != nullptr && b != nullptr && *a == *b);
}

std::string placement_problem(const GridPlacement& p) {
  const std::uint32_t nd = p.dims();
  if (p.wrap.size() != nd) {
    return fmt::format("{} wrap flags for {} dimensions", p.wrap.size(), nd);
  }
  for (std::uint32_t d = 0; d < nd; ++d) {
    if (p.size[d] < (p.wrap[d] != 0 ? 3U : 2U)) {
      return fmt::format("dimension {} is a {} of {}", d, p.wrap[d] != 0 ? "ring" : "path",
                         p.size[d]);
    }
  }
  if (p.coord.size() != p.guids.size() * nd) {
    return fmt::format("{} coordinates for {} switches on {} dimensions", p.coord.size(),
                       p.guids.size(), nd);
  }
  if (nd == 0 && !p.guids.empty())
    return fmt::format("{} switches on no dimension", p.guids.size());
  std::vector<std::pair<std::vector<std::uint32_t>, std::uint64_t>> points;
  points.reserve(p.guids.size());
  for (std::size_t i = 0; i < p.guids.size(); ++i) {
    if (i > 0 && p.guids[i] <= p.guids[i - 1]) {
      return fmt::format("switch {:#018x} follows {:#018x} (GUIDs must ascend)", p.guids[i],
                         p.guids[i - 1]);
    }
    const auto* c = &p.coord[i * nd];
    for (std::uint32_t d = 0; d < nd; ++d) {
      if (c[d] >= p.size[d]) {
        return fmt::format("switch {:#018x} at {} on dimension {} of size {}", p.guids[i], c[d], d,
                           p.size[d]);
      }
    }
    points.emplace_back(std::vector<std::uint32_t>(c, c + nd), p.guids[i]);
  }
  std::sort(points.begin(), points.end());
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (points[i].first == points[i - 1].first) {
      return fmt::format("switches {:#018x} and {:#018x} both at ({})", points[i - 1].second,
                         points[i].second, fmt::join(points[i].first, ","));
    }
  }
  return {};
}

namespace {

constexpr std::uint32_t kNone = Points::kNoSwitch;

// Reference switches tried, least GUID first: each gives the symmetry
// that keeps it and its grid neighbours where they were; one that moved,
// or whose neighbours did, gives a wrong one that the count rejects.
constexpr std::size_t kReferences = 16;

std::uint64_t guid_of(const Topology& topo, std::uint32_t s) {
  return topo.node(topo.switch_node(SwitchIndex{s})).guid.value;
}

// Where coordinates b are one grid step from a: the one dimension they
// differ on (kNone when none, or more than one, or not by a step) and
// the step's direction (+1: b is a + 1, on a ring modulo its size).
struct Step {
  std::uint32_t dim = kNone;
  std::int64_t dir = 0;
};
Step step_between(const std::uint32_t* a, const std::uint32_t* b,
                  const std::vector<std::uint32_t>& size, const std::vector<std::uint8_t>& wrap) {
  Step out;
  for (std::uint32_t e = 0; e < size.size(); ++e) {
    if (a[e] == b[e]) continue;
    if (out.dim != kNone) return {};
    const std::uint32_t k = size[e];
    const bool ring = wrap[e] != 0;
    if (ring ? (a[e] + 1) % k == b[e] : a[e] + 1 == b[e]) {
      out.dir = 1;
    } else if (ring ? (b[e] + 1) % k == a[e] : b[e] + 1 == a[e]) {
      out.dir = -1;
    } else {
      return {};
    }
    out.dim = e;
  }
  return out;
}

// A symmetry of the grid: the shape's dimension j becomes previous's
// dimension dim[j], its coordinate c going to base[j] + sign[j] * c
// (modulo the size on a ring; a path maps onto itself).
struct Symmetry {
  std::vector<std::uint32_t> dim;
  std::vector<std::int64_t> sign, base;
};

}  // namespace

GridPlacement placement_of(const Topology& topo, const GridShape& shape) {
  GridPlacement p;
  p.size = shape.size;
  p.wrap = shape.wrap;
  const std::uint32_t nd = shape.dims();
  if (nd == 0) return p;
  const auto n = static_cast<std::uint32_t>(shape.coord.size() / nd);
  std::vector<std::uint32_t> by_guid(n);
  std::iota(by_guid.begin(), by_guid.end(), 0U);
  std::sort(by_guid.begin(), by_guid.end(),
            [&](std::uint32_t a, std::uint32_t b) { return guid_of(topo, a) < guid_of(topo, b); });
  p.guids.reserve(n);
  p.coord.reserve(shape.coord.size());
  for (const std::uint32_t s : by_guid) {
    p.guids.push_back(guid_of(topo, s));
    for (std::uint32_t d = 0; d < nd; ++d) p.coord.push_back(shape.at(SwitchIndex{s}, d));
  }
  return p;
}

bool place_as_before(const Topology& topo, GridShape& shape, const GridPlacement& previous) {
  const std::uint32_t nd = shape.dims();
  if (nd == 0 || previous.dims() != nd || !placement_problem(previous).empty()) return false;
  const auto n = static_cast<std::uint32_t>(shape.coord.size() / nd);
  // Each switch's previous coordinates (nullptr: not in that grid).
  std::vector<const std::uint32_t*> old(n, nullptr);
  std::vector<std::uint32_t> refs;
  for (std::uint32_t s = 0; s < n; ++s) {
    old[s] = previous.find(guid_of(topo, s));
    if (old[s] != nullptr) refs.push_back(s);
  }
  const auto common = static_cast<std::uint32_t>(refs.size());
  if (common == 0) return false;
  std::sort(refs.begin(), refs.end(),
            [&](std::uint32_t a, std::uint32_t b) { return guid_of(topo, a) < guid_of(topo, b); });
  const Points pts(shape);
  const std::vector<std::uint32_t> at = pts.switches();
  // The switch one step from s along d (kNone: past a path's end, or a
  // point no switch holds).
  auto neighbour = [&](std::uint32_t s, std::uint32_t d, bool up) {
    return pts.step(at, s, d, up);
  };
  auto mapped = [&](const Symmetry& t, std::uint32_t s, std::uint32_t j) {
    const auto k = static_cast<std::int64_t>(shape.size[j]);
    const std::int64_t v = t.base[j] + t.sign[j] * shape.at(SwitchIndex{s}, j);
    return static_cast<std::uint32_t>(((v % k) + k) % k);
  };
  auto agreement = [&](const Symmetry& t) {
    std::uint32_t count = 0;
    for (const std::uint32_t s : refs) {
      bool same = true;
      for (std::uint32_t j = 0; same && j < nd; ++j) same = old[s][t.dim[j]] == mapped(t, s, j);
      count += same ? 1 : 0;
    }
    return count;
  };
  // The symmetry that keeps reference switch r and a neighbour of it along
  // each dimension where previous had them; false when none does.
  auto symmetry_at = [&](std::uint32_t r, Symmetry& t) {
    t.dim.assign(nd, kNone);
    t.sign.assign(nd, 0);
    t.base.assign(nd, 0);
    std::vector<std::uint8_t> taken(nd, 0);
    for (std::uint32_t j = 0; j < nd; ++j) {
      std::uint32_t m = kNone;
      std::int64_t step = 0;
      for (const bool up : {true, false}) {
        const std::uint32_t x = neighbour(r, j, up);
        if (x != kNone && old[x] != nullptr) {
          m = x;
          step = up ? 1 : -1;
          break;
        }
      }
      if (m == kNone) return false;
      // The one dimension of previous where m is a step from r.
      const auto [dim, dir] = step_between(old[r], old[m], previous.size, previous.wrap);
      if (dim == kNone || taken[dim] != 0 || previous.size[dim] != shape.size[j] ||
          previous.wrap[dim] != shape.wrap[j]) {
        return false;
      }
      taken[dim] = 1;
      t.dim[j] = dim;
      t.sign[j] = dir * step;
      t.base[j] = static_cast<std::int64_t>(old[r][dim]) -
                  t.sign[j] * static_cast<std::int64_t>(shape.at(SwitchIndex{r}, j));
      if (shape.wrap[j] == 0) {  // a path onto itself: its ends to its ends
        const std::int64_t ends[2] = {
            t.base[j], t.base[j] + t.sign[j] * static_cast<std::int64_t>(shape.size[j] - 1)};
        if (std::min(ends[0], ends[1]) != 0 ||
            std::max(ends[0], ends[1]) != static_cast<std::int64_t>(shape.size[j] - 1)) {
          return false;
        }
      }
    }
    return true;
  };
  Symmetry best, t;
  std::uint32_t best_count = 0;
  for (std::size_t i = 0; i < refs.size() && i < kReferences && best_count < common; ++i) {
    if (!symmetry_at(refs[i], t)) continue;
    if (const std::uint32_t c = agreement(t); c > best_count) {
      best_count = c;
      best = t;
    }
  }
  if (best_count * 2 <= common) return false;
  GridShape out;
  out.size = previous.size;
  out.wrap = previous.wrap;
  out.missing_links = shape.missing_links;
  out.missing_switches = shape.missing_switches;
  out.coord.resize(shape.coord.size());
  for (std::uint32_t s = 0; s < n; ++s) {
    for (std::uint32_t j = 0; j < nd; ++j) {
      out.coord[std::size_t{s} * nd + best.dim[j]] = mapped(best, s, j);
    }
  }
  shape = std::move(out);
  return true;
}

Result<void> place_by_seed(const Topology& topo, GridShape& shape, std::span<const Guid> seed) {
  const std::uint32_t nd = shape.dims();
  if (nd == 0 || seed.size() != std::size_t{nd} + 1) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("{} switches named; the {} needs {}: the origin and its neighbour "
                             "along each dimension",
                             seed.size(), shape.describe(), nd + 1)};
  }
  const auto n = static_cast<std::uint32_t>(shape.coord.size() / nd);
  std::vector<std::uint32_t> at(seed.size(), kNone);
  for (std::uint32_t s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < seed.size(); ++i) {
      if (seed[i].value == guid_of(topo, s)) at[i] = s;
    }
  }
  for (std::size_t i = 0; i < seed.size(); ++i) {
    if (at[i] == kNone) {
      return Error{Errc::kNotFound,
                   fmt::format("switch {:#018x} is not in the grid", seed[i].value)};
    }
  }
  // The placement the seed gives: the origin at 0, neighbour j at 1 along
  // dimension j, which is the dimension of the shape where it is a step
  // from the origin.
  GridPlacement p;
  p.size.resize(nd);
  p.wrap.resize(nd);
  std::vector<std::uint8_t> taken(nd, 0);
  std::vector<std::pair<std::uint64_t, std::vector<std::uint32_t>>> points;
  points.emplace_back(seed[0].value, std::vector<std::uint32_t>(nd, 0));
  for (std::uint32_t j = 0; j < nd; ++j) {
    const std::uint32_t dim =
        step_between(&shape.coord[std::size_t{at[0]} * nd],
                     &shape.coord[std::size_t{at[j + 1]} * nd], shape.size, shape.wrap)
            .dim;
    if (dim == kNone) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("switch {:#018x} is not a grid neighbour of the origin {:#018x}",
                               seed[j + 1].value, seed[0].value)};
    }
    if (taken[dim] != 0) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("switch {:#018x} is the origin's neighbour along a dimension "
                               "named before",
                               seed[j + 1].value)};
    }
    taken[dim] = 1;
    p.size[j] = shape.size[dim];
    p.wrap[j] = shape.wrap[dim];
    std::vector<std::uint32_t> c(nd, 0);
    c[j] = 1;
    points.emplace_back(seed[j + 1].value, std::move(c));
  }
  std::sort(points.begin(), points.end());
  for (const auto& [guid, c] : points) {
    p.guids.push_back(guid);
    p.coord.insert(p.coord.end(), c.begin(), c.end());
  }
  if (!place_as_before(topo, shape, p)) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("no placement of the {} puts switch {:#018x} at the origin (on a "
                             "path it must be at an end)",
                             shape.describe(), seed[0].value)};
  }
  return ok_result();
}

}  // namespace subnetd::routing

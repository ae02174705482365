#include "routing/engines/dor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace subnetd::routing {
namespace {

// Rings whose routes could close a dependency cycle within the ring.
bool splits(const GridShape& shape, std::uint32_t d) {
  return shape.wrap[d] != 0 && shape.size[d] >= 5;
}

// Unicast layers: one per combination of halves.
std::uint32_t unicast_layers(const GridShape& shape) {
  std::uint32_t bits = 0;
  for (std::uint32_t d = 0; d < shape.dims(); ++d) bits += splits(shape, d) ? 1 : 0;
  return bits >= 31 ? UINT32_MAX / 2 : std::uint32_t{1} << bits;
}

}  // namespace

std::uint32_t dor_layers(const GridShape& shape) {
  return 1 + unicast_layers(shape);
}

Result<Routes> dor_routes(const SwitchGraph& g, const GridShape& shape, std::stop_token stop) {
  const std::uint32_t n = g.num_switches();
  const std::uint32_t nd = shape.dims();
  if (shape.coord.size() != std::size_t{n} * nd) {
    return Error{Errc::kInternal, "dor: the grid shape does not fit the switch graph"};
  }
  if (dor_layers(shape) > 15) {
    return Error{
        Errc::kOutOfRange,
        fmt::format("dor: the {} needs more VLs (its layers and multicast's) than the 15 data VLs",
                    shape.describe())};
  }
  // Channels per (switch, dimension, direction: 0 = +, 1 = -); parallel
  // links are several channels of one direction.
  auto slot = [&](std::uint32_t s, std::uint32_t d, std::uint32_t dir) {
    return (std::size_t{s} * nd + d) * 2 + dir;
  };
  std::vector<std::uint32_t> first(std::size_t{n} * nd * 2 + 1, 0);
  std::vector<std::size_t> arc_slot(g.num_arcs(), 0);
  for (std::uint32_t a = 0; a < g.num_arcs(); ++a) {
    const SwitchIndex s = g.arc_source(a), w = g.arc(a).to;
    std::uint32_t d = 0;
    while (d < nd && shape.at(s, d) == shape.at(w, d)) ++d;
    if (d == nd) return Error{Errc::kInternal, "dor: a link joins one grid point to itself"};
    const std::uint32_t k = shape.size[d];
    const bool plus = shape.wrap[d] != 0 ? (shape.at(s, d) + 1) % k == shape.at(w, d)
                                         : shape.at(s, d) + 1 == shape.at(w, d);
    arc_slot[a] = slot(s.value, d, plus ? 0 : 1);
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
  std::vector<std::uint8_t> lid_layer(std::size_t{max_lid} + 1, 0);
  std::vector<std::uint8_t> used(unicast_layers(shape), 0);
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
    std::uint32_t layer = 0, bit = 0;
    for (std::uint32_t d = 0; d < nd; ++d) {
      parity += shape.at(t, d);
      if (!splits(shape, d)) continue;
      if (shape.at(t, d) >= (shape.size[d] + 1) / 2) layer |= std::uint32_t{1} << bit;
      ++bit;
    }
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
      if (count == 0) return Error{Errc::kInternal, "dor: a grid point lacks a neighbour"};
      const std::uint32_t a = channel[first[i] + lid % count];
      routes.lfts[s].data()[lid] = g.arc(a).local_port;
      if (data) ++entries[a];
    }
    if (data) {
      lid_layer[lid] = static_cast<std::uint8_t>(layer);
      used[layer] = 1;
    }
  }

  // Layers in use, numbered from 1 without gaps (VL 0: multicast).
  std::vector<std::uint8_t> renum(used.size(), 0);
  std::uint32_t num = 1;
  for (std::size_t k = 0; k < used.size(); ++k) {
    if (used[k] != 0) renum[k] = static_cast<std::uint8_t>(num++);
  }
  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    const LidAttachment att = g.attachment(Lid{lid});
    if (att.routable() && att.port != 0) lid_layer[lid] = renum[lid_layer[lid]];
  }
  routes.num_vls = static_cast<std::uint8_t>(std::max<std::uint32_t>(2, num));
  routes.lid_layer = std::move(lid_layer);

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

}  // namespace subnetd::routing

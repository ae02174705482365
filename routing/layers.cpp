#include "routing/layers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <utility>

#include "routing/ordered_dag.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

Result<LayerAssignment> assign_layers(const Topology& topo, const LidMap& lids,
                                      const Routes& routes, const LayerOptions& opts,
                                      std::stop_token stop) {
  if (opts.max_layers < 1 || opts.max_layers > 15) {
    return Error{Errc::kOutOfRange,
                 fmt::format("layers: a budget of {} VLs (1-15)", opts.max_layers)};
  }
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  const std::uint32_t n = g.num_switches();
  if (routes.lfts.size() != n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("layers: routes hold {} LFTs, the fabric has {} switches",
                             routes.lfts.size(), n)};
  }
  auto name = [&](std::uint32_t s) { return topo.label(topo.switch_node(SwitchIndex{s})); };
  std::vector<std::uint32_t> sources;
  for (std::uint32_t s = 0; s < n; ++s) {
    if (g.has_endpoints(SwitchIndex{s})) sources.push_back(s);
  }

  LayerAssignment out;
  const std::uint32_t max_lid = g.max_lid().value;
  out.lid_layer.assign(std::size_t{max_lid} + 1, 0);
  const std::shared_ptr<const DagFrame> frame = cdg_frame(g);
  std::vector<OrderedDag> layers;
  layers.emplace_back(frame);
  // 2e: on this LID's walk now; 2e + 1: its onward hops are recorded.
  std::vector<std::uint32_t> stamp(n, 0);
  std::uint32_t epoch = 0;
  std::vector<std::uint32_t> path;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> deps, added;

  for (std::uint32_t lid = 1; lid <= max_lid; ++lid) {
    if ((lid & 0xFF) == 0 && stop.stop_requested()) {
      return Error{Errc::kCancelled, "layers: cancelled"};
    }
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable() || att.port == 0) continue;  // unused, or management traffic
    // The dependencies of the traffic to it: every hop from a switch with
    // CAs/routers of its part, each switch's onward hop once.
    deps.clear();
    ++epoch;
    for (const std::uint32_t s0 : sources) {
      if (g.component(SwitchIndex{s0}) != g.component(att.sw)) continue;
      path.clear();
      std::uint32_t cur = s0;
      while (stamp[cur] != 2 * epoch + 1) {
        if (stamp[cur] == 2 * epoch) {
          return Error{Errc::kForwardingLoop,
                       fmt::format("layers: LID {} loops through {}", lid, name(cur))};
        }
        stamp[cur] = 2 * epoch;
        path.push_back(cur);
        const std::uint8_t p = routes.lfts[cur].get(Lid{lid});
        if (cur == att.sw.value && p == att.port) break;  // delivered here
        const SwitchIndex nb = g.peer_at_port(SwitchIndex{cur}, p);
        if (!nb.valid()) {
          return Error{Errc::kIncomplete,
                       fmt::format("layers: {} forwards LID {} to port {}, no switch link",
                                   name(cur), lid, p)};
        }
        const std::uint8_t p2 = routes.lfts[nb.value].get(Lid{lid});
        if (nb != att.sw || p2 != att.port) {
          const std::uint32_t next_arc = g.arc_at_port(nb, p2);
          if (next_arc == kNoArc) {
            return Error{Errc::kIncomplete,
                         fmt::format("layers: {} forwards LID {} to port {}, no switch link",
                                     name(nb.value), lid, p2)};
          }
          deps.emplace_back(g.arc_at_port(SwitchIndex{cur}, p), next_arc);
        }
        cur = nb.value;
      }
      for (const std::uint32_t s : path) stamp[s] = 2 * epoch + 1;
    }
    // The first layer that stays acyclic with them.
    for (std::uint32_t layer = 0;; ++layer) {
      if (layer == layers.size()) {
        if (layer == opts.max_layers) {
          return Error{Errc::kCdgCycle,
                       fmt::format("layers: the routes need more than {} VL(s): the traffic to "
                                   "LID {} closes a credit loop on every one of them",
                                   opts.max_layers, lid)};
        }
        layers.emplace_back(frame);
      }
      OrderedDag& dag = layers[layer];
      const bool was_empty = dag.empty();
      added.clear();
      bool fits = true;
      for (const auto& [a, b] : deps) {
        const OrderedDag::Add r = dag.add(a, b);
        if (r == OrderedDag::Add::kCycle) {
          fits = false;
          break;
        }
        if (r == OrderedDag::Add::kNew) added.emplace_back(a, b);
      }
      if (fits) {
        out.lid_layer[lid] = static_cast<std::uint8_t>(layer);
        break;
      }
      dag.undo(added);
      if (was_empty) {
        // One destination's loop-free routes form an in-tree: acyclic alone.
        return Error{Errc::kInternal,
                     fmt::format("layers: LID {} alone closes a credit loop", lid)};
      }
    }
  }
  out.layers = static_cast<std::uint8_t>(layers.size());
  for (const OrderedDag& d : layers) out.dependencies += d.edges();
  return out;
}

}  // namespace subnetd::routing

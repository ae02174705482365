#pragma once
// Arrival layers: where one destination LID's traffic is on several layers
// (branch layers, Routes::path_layers: the SL depends on the source), the
// layers it is on at each switch. A switch carries its own CAs' layer and
// every layer that arrives from the switches whose entries lead into it.
//
// Fast failover (failover_plan.cpp) and the in-layer repair
// (engines/layered_repair.cpp) both need it: a LID's dependency from
// channel x->y into y's entry lies on every layer x carries, and a group
// or a detour is only sound where the traffic it takes is on one layer
// that the next switch carries too. The engine's branch trees carry one
// layer everywhere but at the neighbours of the LID's switch, where the
// branches meet (their channels lead into the LID's switch, which
// delivers).
//
// Pure computation on the caller's thread.

#include <cstdint>
#include <vector>

#include "routing/ids.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

// Bit k: layer k (data VLs are at most 15).
using LayerSet = std::uint16_t;

inline LayerSet layer_bit(unsigned k) {
  return static_cast<LayerSet>(1U << k);
}

// For the LID delivered by switch t: `next(x)` is the arc switch x
// forwards it by (kNoArc: x drops it), `start(x)` the layer x's own CAs
// send on. Fills out[x] (by switch) with the layers the LID's traffic is
// on at x: start(x) and, hop by hop, every layer arriving there; 0 at t
// and outside t's part. `depth` is scratch. False when the entries loop
// (then `out` is meaningless).
template <class Next, class Start>
bool arrival_layers(const SwitchGraph& g, std::uint32_t t, Next&& next, Start&& start,
                    std::vector<LayerSet>& out, std::vector<std::uint32_t>& depth) {
  constexpr std::uint32_t kUnknown = ~0U, kOnPath = ~0U - 1;
  const std::uint32_t n = g.num_switches();
  const std::uint32_t part = g.component(SwitchIndex{t});
  out.assign(n, 0);
  depth.assign(n, kUnknown);
  depth[t] = 0;
  std::vector<std::uint32_t> path;
  std::uint32_t deepest = 0;
  // Hops to t (or to a switch that drops it) along the entries: a switch
  // is passed on after every switch whose entries lead into it.
  for (std::uint32_t s = 0; s < n; ++s) {
    if (depth[s] != kUnknown || g.component(SwitchIndex{s}) != part) continue;
    path.clear();
    std::uint32_t cur = s;
    std::uint32_t base = 0;
    while (true) {
      if (depth[cur] == kOnPath) return false;
      if (depth[cur] != kUnknown) {
        base = depth[cur];
        break;
      }
      depth[cur] = kOnPath;
      path.push_back(cur);
      const std::uint32_t a = next(cur);
      if (a == kNoArc) {
        base = 0;  // a dead end: counted from the last switch of the path
        break;
      }
      cur = g.arc(a).to.value;
    }
    const bool dead_end = depth[cur] == kOnPath;
    for (std::size_t i = path.size(); i-- > 0;) {
      depth[path[i]] = base + static_cast<std::uint32_t>(path.size() - i) - (dead_end ? 1 : 0);
      deepest = std::max(deepest, depth[path[i]]);
    }
  }
  std::vector<std::uint32_t> first(std::size_t{deepest} + 2, 0), order;
  for (std::uint32_t s = 0; s < n; ++s) {
    if (s == t || depth[s] == kUnknown) continue;
    ++first[deepest - depth[s] + 1];
    out[s] = layer_bit(start(s));
  }
  for (std::size_t i = 1; i < first.size(); ++i) first[i] += first[i - 1];
  order.resize(first.back());
  for (std::uint32_t s = 0; s < n; ++s) {
    if (s != t && depth[s] != kUnknown) order[first[deepest - depth[s]]++] = s;
  }
  // Deepest first: a switch has every arriving layer when it passes them on.
  for (const std::uint32_t s : order) {
    const std::uint32_t a = next(s);
    if (a != kNoArc && g.arc(a).to.value != t) out[g.arc(a).to.value] |= out[s];
  }
  return true;
}

}  // namespace subnetd::routing

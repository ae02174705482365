#include "routing/layers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <span>
#include <unordered_set>
#include <utility>

#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

// One layer's dependency graph on the channels (SwitchGraph arcs), with a
// topological order kept as dependencies are added: Pearce and Kelly, "A
// dynamic topological sort algorithm for directed acyclic graphs" (JEA
// 2006). An edge u->v with ord(u) < ord(v) agrees with the order; one that
// does not is a cycle iff v reaches u through nodes ordered before u, and
// otherwise only the nodes between the two are reordered.
class OrderedDag {
 public:
  enum class Add { kNew, kKnown, kCycle };

  explicit OrderedDag(std::uint32_t nodes) : ord_(nodes), out_(nodes), in_(nodes), mark_(nodes, 0) {
    std::iota(ord_.begin(), ord_.end(), 0U);
  }

  Add add(std::uint32_t u, std::uint32_t v) {
    if (u == v) return Add::kCycle;
    const std::uint64_t key = (std::uint64_t{u} << 32) | v;
    if (edges_.contains(key)) return Add::kKnown;
    if (ord_[u] > ord_[v] && !reorder(u, v)) return Add::kCycle;
    edges_.insert(key);
    out_[u].push_back(v);
    in_[v].push_back(u);
    return Add::kNew;
  }
  // Takes back edges add() returned kNew for, the last one first (the
  // order is still topological for fewer edges).
  void undo(std::span<const std::pair<std::uint32_t, std::uint32_t>> added) {
    for (auto it = added.rbegin(); it != added.rend(); ++it) {
      out_[it->first].pop_back();
      in_[it->second].pop_back();
      edges_.erase((std::uint64_t{it->first} << 32) | it->second);
    }
  }
  std::size_t edges() const { return edges_.size(); }
  bool empty() const { return edges_.empty(); }

 private:
  // ord(v) < ord(u): false when v reaches u (the edge would close a cycle),
  // else moves what u is reached from before what v reaches.
  bool reorder(std::uint32_t u, std::uint32_t v) {
    const std::uint32_t ub = ord_[u], lb = ord_[v];
    ++epoch_;
    fwd_.clear();
    stack_.assign(1, v);
    mark_[v] = epoch_;
    while (!stack_.empty()) {
      const std::uint32_t x = stack_.back();
      stack_.pop_back();
      fwd_.push_back(x);
      for (const std::uint32_t y : out_[x]) {
        if (y == u) return false;
        if (mark_[y] != epoch_ && ord_[y] < ub) {
          mark_[y] = epoch_;
          stack_.push_back(y);
        }
      }
    }
    bwd_.clear();
    stack_.assign(1, u);
    mark_[u] = epoch_;
    while (!stack_.empty()) {
      const std::uint32_t x = stack_.back();
      stack_.pop_back();
      bwd_.push_back(x);
      for (const std::uint32_t y : in_[x]) {
        if (mark_[y] != epoch_ && ord_[y] > lb) {
          mark_[y] = epoch_;
          stack_.push_back(y);
        }
      }
    }
    auto by_ord = [this](std::uint32_t a, std::uint32_t b) { return ord_[a] < ord_[b]; };
    std::sort(fwd_.begin(), fwd_.end(), by_ord);
    std::sort(bwd_.begin(), bwd_.end(), by_ord);
    slots_.clear();
    for (const std::uint32_t x : bwd_) slots_.push_back(ord_[x]);
    for (const std::uint32_t x : fwd_) slots_.push_back(ord_[x]);
    std::sort(slots_.begin(), slots_.end());
    std::size_t i = 0;
    for (const std::uint32_t x : bwd_) ord_[x] = slots_[i++];
    for (const std::uint32_t x : fwd_) ord_[x] = slots_[i++];
    return true;
  }

  std::vector<std::uint32_t> ord_;  // node -> position in the order
  std::vector<std::vector<std::uint32_t>> out_, in_;
  std::unordered_set<std::uint64_t> edges_;
  std::vector<std::uint32_t> mark_;
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> fwd_, bwd_, stack_, slots_;
};

}  // namespace

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
  std::vector<OrderedDag> layers;
  layers.emplace_back(g.num_arcs());
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
        layers.emplace_back(g.num_arcs());
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

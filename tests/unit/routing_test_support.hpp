#pragma once
// Shared fixtures for the routing engine and verifier tests: fabrics from
// generator specs with LIDs assigned, seeded link cuts, and an oracle that
// traces every (switch, LID) route hop by hop through the LFTs and compares
// the outcome with plain graph connectivity computed straight from the
// Topology (nothing shared with routing/switch_graph).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/engines/tree_grower.hpp"
#include "routing/failover_plan.hpp"
#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/lid_map.hpp"
#include "routing/switch_graph.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd {

// How gtest prints the strong ids in assertion failures (by value, not as
// raw bytes).
inline void PrintTo(SwitchIndex s, std::ostream* os) {
  *os << "switch " << s.value;
}
inline void PrintTo(Lid l, std::ostream* os) {
  *os << "LID " << l.value;
}

}  // namespace subnetd

namespace subnetd::routing::testing {

struct Fabric {
  std::string spec;
  Topology topo;
  LidMap lids;
};

inline LidMap lids_for(const Topology& topo, int lid_bits = 16) {
  LidAssignOptions opts;
  opts.space = *LidSpace::from_bits(lid_bits);
  auto r = assign_lids(topo, opts);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value().map : LidMap{};
}

// Generates `spec` and assigns LIDs; fails the current test on a bad spec.
inline Fabric make_fabric(std::string_view spec) {
  Fabric f;
  f.spec = std::string(spec);
  auto t = discovery::topo::generate(spec);
  EXPECT_TRUE(t.ok()) << spec << ": " << (t.ok() ? "" : t.error().message);
  if (!t.ok()) return f;
  f.topo = std::move(t).value();
  f.lids = lids_for(f.topo);
  return f;
}

// An engine name, or "NAME@V": that engine given V data VLs
// (EngineOptions::max_vls; "layered@1" is balanced up*/down*).
// `engine` is a make_engine name, then optionally "@" and the VLs it may
// use, then optionally "/one-layer-per-lid" (EngineOptions::branch_layers
// off).
inline Result<Routes> route_engine(const Topology& topo, const LidMap& lids,
                                   std::string_view engine, WorkerPool& pool) {
  EngineOptions opts;
  constexpr std::string_view kOneLayer = "/one-layer-per-lid";
  std::string name(engine);
  if (const auto at = name.find(kOneLayer); at != std::string::npos) {
    opts.branch_layers = false;
    name.erase(at, kOneLayer.size());
  }
  if (const auto at = name.find('@'); at != std::string::npos) {
    opts.max_vls = static_cast<std::uint8_t>(std::stoi(name.substr(at + 1)));
    name.resize(at);
  }
  auto e = make_engine(name);
  if (!e.ok()) return e.error();
  return (*e)->compute(topo, lids, opts, pool, {});
}

// The tables `engine` (a route_engine name) computes for `f`; fails the
// current test (and returns empty Routes) when it cannot.
inline Routes route_fabric(const Fabric& f, std::string_view engine) {
  WorkerPool pool(2);
  auto r = route_engine(f.topo, f.lids, engine, pool);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : Routes{};
}

// Every cabled CA/router port of `t`, in node order.
inline std::vector<PortRef> cabled_ca_ports(const Topology& t) {
  std::vector<PortRef> out;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    if (t.node(NodeId{i}).type == NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(NodeId{i}).num_ports; ++p) {
      if (t.port(NodeId{i}, static_cast<PortNum>(p)).connected()) {
        out.push_back({NodeId{i}, static_cast<PortNum>(p)});
      }
    }
  }
  return out;
}

// The switch_index of the switch named `name`.
inline SwitchIndex sw_index(const Fabric& f, std::string_view name) {
  return f.topo.node(*f.topo.find_by_name(name)).switch_index;
}

// The port of switch `from` cabled to switch `to` (first one).
inline PortNum port_to(const Fabric& f, std::string_view from, std::string_view to) {
  const NodeId a = *f.topo.find_by_name(from);
  const NodeId b = *f.topo.find_by_name(to);
  for (unsigned p = 1; p <= f.topo.node(a).num_ports; ++p) {
    if (f.topo.port(a, static_cast<PortNum>(p)).remote_node == b) return static_cast<PortNum>(p);
  }
  ADD_FAILURE() << from << " is not cabled to " << to;
  return 0;
}

// All switch-to-switch links as (switch node, port) of one end, in port order.
inline std::vector<PortRef> switch_links(const Topology& topo) {
  std::vector<PortRef> out;
  for (NodeId sw : topo.switches()) {
    for (unsigned p = 1; p <= topo.node(sw).num_ports; ++p) {
      const Port& port = topo.port(sw, static_cast<PortNum>(p));
      if (!port.connected() || topo.node(port.remote_node).type != NodeType::kSwitch) continue;
      const PortRef here{sw, static_cast<PortNum>(p)};
      const PortRef there{port.remote_node, port.remote_port};
      if (here < there) out.push_back(here);
    }
  }
  return out;
}

// Cuts `count` switch-to-switch links chosen with mt19937_64(seed) (the
// choice depends only on the seed and the topology). Returns the cut links
// in the order cut, for failure messages.
inline std::vector<std::string> cut_links(Topology& topo, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<PortRef> links = switch_links(topo);
  std::vector<std::string> cut;
  for (std::size_t i = 0; i < count && !links.empty(); ++i) {
    const std::size_t at = static_cast<std::size_t>(rng() % links.size());
    const PortRef r = links[at];
    const Port& p = topo.port(r);
    cut.push_back(topo.node(r.node).description + "[" + std::to_string(r.port) + "]-" +
                  topo.node(p.remote_node).description + "[" + std::to_string(p.remote_port) + "]");
    topo.disconnect(r);
    links.erase(links.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return cut;
}

struct TraceOutcome {
  std::uint64_t reachable_pairs = 0;  // (switch, LID) pairs connected in the graph
  std::uint64_t delivered = 0;        // of those, traced to the LID's own port
  std::uint64_t misrouted = 0;        // delivered although not reachable (must be 0)
  std::string first_failure;
};

// For every switch and every assigned LID: the oracle says whether the LID's
// port is connected to the switch through switches (BFS over Topology ports);
// the trace follows the LFTs from the switch until the packet leaves the
// switch fabric (must be the LID's own port, or port 0 of the LID's switch)
// or gives up (drop, dark port, more hops than switches).
inline TraceOutcome trace_all(const Topology& topo, const LidMap& lids, const Routes& routes) {
  const std::size_t num_sw = topo.num_switches();
  // Component label per switch, straight from the Topology's ports.
  std::vector<std::size_t> comp(num_sw, SIZE_MAX);
  std::size_t labels = 0;
  for (std::size_t s = 0; s < num_sw; ++s) {
    if (comp[s] != SIZE_MAX) continue;
    std::vector<std::size_t> stack{s};
    comp[s] = labels;
    while (!stack.empty()) {
      const NodeId v = topo.switch_node(SwitchIndex{static_cast<std::uint32_t>(stack.back())});
      stack.pop_back();
      for (unsigned p = 1; p <= topo.node(v).num_ports; ++p) {
        const Port& port = topo.port(v, static_cast<PortNum>(p));
        if (!port.connected() || topo.node(port.remote_node).type != NodeType::kSwitch) continue;
        const std::size_t w = topo.node(port.remote_node).switch_index.value;
        if (comp[w] == SIZE_MAX) {
          comp[w] = labels;
          stack.push_back(w);
        }
      }
    }
    ++labels;
  }
  TraceOutcome out;
  for (std::uint32_t d = 1; d <= lids.max_lid.value; ++d) {
    const PortRef owner = lids.owner_of(Lid{d});
    if (!owner.node.valid()) continue;
    // The switch that must deliver d, if any.
    std::size_t home = SIZE_MAX;
    if (topo.node(owner.node).type == NodeType::kSwitch) {
      home = topo.node(owner.node).switch_index.value;
    } else {
      const Port& p = topo.port(owner);
      if (p.connected() && topo.node(p.remote_node).type == NodeType::kSwitch) {
        home = topo.node(p.remote_node).switch_index.value;
      }
    }
    for (std::size_t s = 0; s < num_sw; ++s) {
      const bool reachable = home != SIZE_MAX && comp[s] == comp[home];
      NodeId cur = topo.switch_node(SwitchIndex{static_cast<std::uint32_t>(s)});
      bool delivered = false;
      std::string failure;
      for (std::size_t hops = 0; hops <= num_sw; ++hops) {
        const std::uint8_t port = routes.lfts[topo.node(cur).switch_index.value].get(Lid{d});
        if (port == 0) {
          delivered = owner.node == cur && owner.port == 0;
          if (!delivered) failure = "consumed by the wrong switch";
          break;
        }
        if (port == kDropPort || port > topo.node(cur).num_ports) {
          failure = "dropped at " + topo.node(cur).description;
          break;
        }
        const Port& link = topo.port(cur, port);
        if (!link.connected()) {
          failure = "sent to a dark port at " + topo.node(cur).description;
          break;
        }
        if (topo.node(link.remote_node).type != NodeType::kSwitch) {
          delivered = link.remote_node == owner.node && link.remote_port == owner.port;
          if (!delivered) failure = "delivered to the wrong port";
          break;
        }
        cur = link.remote_node;
      }
      if (!delivered && failure.empty()) failure = "more hops than switches (a loop)";
      if (reachable) {
        ++out.reachable_pairs;
        if (delivered) {
          ++out.delivered;
        } else if (out.first_failure.empty()) {
          out.first_failure =
              "from " +
              topo.node(topo.switch_node(SwitchIndex{static_cast<std::uint32_t>(s)})).description +
              " to LID " + std::to_string(d) + ": " + failure;
        }
      } else if (delivered) {
        ++out.misrouted;
      }
    }
  }
  return out;
}

// CA-to-CA paths per directed switch link (by SwitchGraph arc), following
// the tables: every switch with CAs, weighted by its CA LIDs, to every CA LID.
inline std::vector<std::uint64_t> path_loads(const Fabric& f, const Routes& r) {
  auto g = SwitchGraph::build(f.topo, f.lids);
  EXPECT_TRUE(g.ok());
  if (!g.ok()) return {};
  std::vector<std::uint64_t> src(g->num_switches(), 0), load(g->num_arcs(), 0);
  for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
    const LidAttachment a = g->attachment(Lid{l});
    if (a.routable() && a.port != 0) ++src[a.sw.value];
  }
  for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
    const LidAttachment a = g->attachment(Lid{l});
    if (!a.routable() || a.port == 0) continue;
    for (std::uint32_t s = 0; s < g->num_switches(); ++s) {
      for (std::uint32_t cur = s, hops = 0; src[s] != 0 && cur != a.sw.value && hops < 64; ++hops) {
        const std::uint32_t arc = g->arc_at_port(SwitchIndex{cur}, r.lfts[cur].get(Lid{l}));
        if (arc == kNoArc) break;
        load[arc] += src[s];
        cur = g->arc(arc).to.value;
      }
    }
  }
  return load;
}

// Sorts and dedups each layer's (channel, channel) dependencies and looks
// for a cycle in each by Kahn's algorithm: the distinct dependencies, or
// kCdgCycle naming `what` and the layer.
inline Result<std::uint64_t> acyclic_layers(
    std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>>& deps, std::uint32_t arcs,
    const char* what) {
  std::uint64_t total = 0;
  std::vector<std::uint32_t> indeg, first, ready;
  for (std::uint32_t k = 0; k < deps.size(); ++k) {
    auto& d = deps[k];
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    total += d.size();
    indeg.assign(arcs, 0);
    first.assign(std::size_t{arcs} + 1, 0);
    for (const auto& [from, to] : d) {
      ++indeg[to];
      ++first[from + 1];
    }
    for (std::uint32_t a = 0; a < arcs; ++a) first[a + 1] += first[a];
    ready.clear();
    for (std::uint32_t a = 0; a < arcs; ++a) {
      if (indeg[a] == 0) ready.push_back(a);
    }
    std::uint32_t placed = 0;
    while (!ready.empty()) {
      const std::uint32_t a = ready.back();
      ready.pop_back();
      ++placed;
      for (std::uint32_t i = first[a]; i < first[a + 1]; ++i) {
        if (--indeg[d[i].second] == 0) ready.push_back(d[i].second);
      }
    }
    if (placed != arcs) {
      return Error{Errc::kCdgCycle,
                   fmt::format("{}: layer {}: {} of {} channels on or behind a dependency cycle",
                               what, k, arcs - placed, arcs)};
    }
  }
  return total;
}

// An oracle for routes whose SL depends on the source (Routes::
// path_layers), apart from the verifier's tiles: walks the route from
// every switch with CAs/routers to every CA/router LID, putting each
// dependency on the layer Routes::path_layer gives that source, and looks
// for a cycle in each layer's CDG by Kahn's algorithm. The distinct
// dependencies; kCdgCycle naming the layer; kInvalidArgument naming the
// switch and LID of a route that drops or loops, or of a layer past the
// routes' VLs.
inline Result<std::uint64_t> check_path_layers(const Topology& topo, const LidMap& lids,
                                               const Routes& routes) {
  if (routes.per_hop_vls()) {
    return Error{Errc::kInvalidArgument, "path layers: routes on per-hop VLs (use the verifier)"};
  }
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  const std::uint32_t n = g.num_switches();
  if (routes.lfts.size() != n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("path layers: routes hold {} LFTs, the fabric has {} switches",
                             routes.lfts.size(), n)};
  }
  auto name = [&](std::uint32_t s) { return topo.label(topo.switch_node(SwitchIndex{s})); };
  const std::uint32_t layers = std::max<std::uint32_t>(1, routes.num_vls);
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> deps(layers);
  for (std::uint32_t l = 1; l <= g.max_lid().value; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (!att.routable() || att.port == 0) continue;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (!g.has_endpoints(SwitchIndex{s}) || g.component(SwitchIndex{s}) != g.component(att.sw)) {
        continue;
      }
      const std::uint32_t k = routes.path_layer(s, Lid{l});
      if (k >= layers) {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("path layers: {} to LID {} on layer {} of {}", name(s), l, k, layers)};
      }
      std::uint32_t cur = s, prev = kNoArc;
      for (std::uint32_t hops = 0;; ++hops) {
        const std::uint8_t port = routes.lfts[cur].get(Lid{l});
        if (cur == att.sw.value && port == att.port) break;  // delivered
        const std::uint32_t a = g.arc_at_port(SwitchIndex{cur}, port);
        if (a == kNoArc || hops >= n) {
          return Error{Errc::kInvalidArgument,
                       fmt::format("path layers: the route from {} to LID {} {} at {}", name(s), l,
                                   a == kNoArc ? "drops" : "loops", name(cur))};
        }
        if (prev != kNoArc) deps[k].emplace_back(prev, a);
        prev = a;
        cur = g.arc(a).to.value;
      }
    }
  }
  return acyclic_layers(deps, g.num_arcs(), "path layers");
}

// An oracle for fast failover on routes with several layers, apart from
// the failover verifier: traffic from every switch with CAs/routers to
// every CA/router LID, on its source's layer (Routes::path_layer), may
// leave each switch it reaches by the LID's entry or by any port of the
// LID's group there (FailoverPlan::lid_group_ports: what the switches
// hold). The dependencies between those channels, with multicast's
// up*/down* ones on layer 0, must be acyclic per layer (acyclic_layers).
inline Result<std::uint64_t> check_failover_layers(const Topology& topo, const LidMap& lids,
                                                   const Routes& routes, const FailoverPlan& plan) {
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  const std::uint32_t n = g.num_switches();
  const std::uint32_t layers = std::max<std::uint32_t>(1, routes.num_vls);
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> deps(layers);
  auto ports = [&](std::uint32_t x, Lid l) {
    PortMask m = plan.lid_group_ports(SwitchIndex{x}, l);
    m.set(routes.lfts[x].get(l));
    return m;
  };
  std::vector<std::uint32_t> seen(g.num_arcs(), 0), queue;
  std::uint32_t epoch = 0;
  for (std::uint32_t l = 1; l <= g.max_lid().value; ++l) {
    const LidAttachment att = g.attachment(Lid{l});
    if (!att.routable() || att.port == 0) continue;
    for (std::uint32_t k = 0; k < layers; ++k) {
      ++epoch;
      queue.clear();
      for (std::uint32_t s = 0; s < n; ++s) {  // the sources on layer k
        if (s == att.sw.value || !g.has_endpoints(SwitchIndex{s}) ||
            g.component(SwitchIndex{s}) != g.component(att.sw) ||
            routes.path_layer(s, Lid{l}) != k) {
          continue;
        }
        ports(s, Lid{l}).for_each([&](PortNum p) {
          const std::uint32_t a = g.arc_at_port(SwitchIndex{s}, p);
          if (a != kNoArc && seen[a] != epoch) {
            seen[a] = epoch;
            queue.push_back(a);
          }
        });
      }
      for (std::size_t i = 0; i < queue.size(); ++i) {
        const std::uint32_t a = queue[i];
        const std::uint32_t y = g.arc(a).to.value;
        if (y == att.sw.value) continue;  // delivered
        ports(y, Lid{l}).for_each([&](PortNum p) {
          const std::uint32_t b = g.arc_at_port(SwitchIndex{y}, p);
          if (b == kNoArc) return;
          deps[k].emplace_back(a, b);
          if (seen[b] != epoch) {
            seen[b] = epoch;
            queue.push_back(b);
          }
        });
      }
    }
  }
  if (routes.vl0_rank.size() == n) {
    for_each_updown_dep(
        g, routes.vl0_rank, reverse_arcs(g),
        [&](std::uint32_t in, std::uint32_t out) { deps[0].emplace_back(in, out); });
  }
  return acyclic_layers(deps, g.num_arcs(), "failover layers");
}

}  // namespace subnetd::routing::testing

#include "routing/verifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "routing/cdg.hpp"
#include "routing/mcast.hpp"
#include "routing/switch_graph.hpp"
#include "routing/text.hpp"

namespace subnetd::routing {
namespace {

using Clock = std::chrono::steady_clock;

// LIDs per tile: four LFT blocks. A tile visits every switch's table row
// and the dependency words of every marked channel once (cache and TLB
// misses), so four blocks at a time amortise those visits; next hops are
// built and walked in strips of 64 LIDs, which keeps that buffer small.
constexpr std::uint32_t kTile = 4 * kLftBlockSize;
constexpr std::uint32_t kStrip = 64;
constexpr std::uint32_t kStrips = kTile / kStrip;
constexpr std::uint32_t kDepWords = kCdgDepWords;
constexpr std::uint32_t kDeliver = UINT32_MAX - 1;
constexpr std::uint32_t kBad = kNoSwitch.value;
constexpr std::uint32_t kNoPart = UINT32_MAX;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Per-thread buffers for one tile.
struct TileScratch {
  std::vector<std::uint8_t> buf;     // S x kTile LFT entries, switch-major
  std::vector<std::uint32_t> next;   // kStrip x S, column-major: next switch, kDeliver, kBad
  std::vector<std::uint32_t> stamp;  // per switch: 2e = on the current walk, 2e+1 = reaches
  std::uint32_t epoch = 0;           // one per column walked
  std::vector<std::uint32_t> path;
  // per switch, one word per strip: bit l = on a counted route to LID l
  std::vector<std::uint64_t> active;
  // The dependencies one switch's channels make in this tile (arc of the
  // switch x kDepWords), gathered here in L1 and merged into the shared
  // table once per switch instead of once per (switch, LID).
  std::vector<std::uint64_t> local;
};

// Everything the checks read, and the wording of their errors.
class Checker {
 public:
  Checker(const Topology& topo, const LidMap& lids, const Routes& routes, const SwitchGraph& g)
      : topo_(topo), lids_(lids), routes_(routes), g_(g) {}

  // "sw-a" (0x0002c90000000001)
  std::string sw(std::uint32_t s) const { return topo_.switch_label(SwitchIndex{s}); }
  // sw-a, or the GUID when the switch has no description
  std::string label(std::uint32_t s) const {
    const Node& n = topo_.node(topo_.switch_node(SwitchIndex{s}));
    return n.description.empty() ? fmt::format("{:#018x}", n.guid.value) : printable(n.description);
  }
  // LID 0x12 ("h-3" port 1) / LID 0x5 (switch "sw-1")
  std::string lid(std::uint32_t d) const {
    const PortRef o = lids_.owner_of(Lid{d});
    if (!o.node.valid()) return fmt::format("LID {:#x}", d);
    const Node& n = topo_.node(o.node);
    if (n.type == NodeType::kSwitch)
      return fmt::format("LID {:#x} (switch \"{}\")", d, printable(n.description));
    return fmt::format("LID {:#x} (\"{}\" port {})", d, printable(n.description), o.port);
  }
  std::uint8_t entry(std::uint32_t s, std::uint32_t d) const { return routes_.lfts[s].get(Lid{d}); }

  // Why the entry of switch s for LID d does not lead on (kIncomplete).
  Error entry_error(std::uint32_t s, std::uint32_t d) const {
    const LidAttachment att = g_.attachment(Lid{d});
    const std::uint8_t p = entry(s, d);
    const NodeId sn = topo_.switch_node(SwitchIndex{s});
    const Node& node = topo_.node(sn);
    std::string why;
    if (p == kDropPort) {
      return Error{Errc::kIncomplete,
                   fmt::format("switch {} has no route to {}, reachable via port {}", sw(s), lid(d),
                               first_hop(s, att))};
    }
    if (p == 0) {
      why = "its management port 0";
    } else if (p > node.num_ports) {
      why = fmt::format("port {}, but it has {} ports", p, node.num_ports);
    } else {
      const Port& port = topo_.port(sn, p);
      if (!port.connected()) {
        why = fmt::format("port {}, which is not cabled", p);
      } else {
        const Node& peer = topo_.node(port.remote_node);
        why = fmt::format("port {}, which leads to {} \"{}\" port {}", p, node_type_name(peer.type),
                          printable(peer.description), port.remote_port);
      }
    }
    return Error{Errc::kIncomplete,
                 fmt::format("switch {} routes {} to {}; the LID is delivered by {} port {} "
                             "(reachable via port {})",
                             sw(s), lid(d), why, sw(att.sw.value), att.port, first_hop(s, att))};
  }

  // The walk for LID d came back to switch path[from]: a forwarding loop.
  Error loop_error(std::uint32_t d, const std::vector<std::uint32_t>& path,
                   std::size_t from) const {
    std::string text;
    std::string guids;
    for (std::size_t i = from; i < path.size(); ++i) {
      text += fmt::format("{}[{}] -> ", label(path[i]), entry(path[i], d));
      guids += fmt::format("{}{} {:#018x}", i == from ? "" : ", ", label(path[i]),
                           topo_.node(topo_.switch_node(SwitchIndex{path[i]})).guid.value);
    }
    text += fmt::format("{}[{}]", label(path[from]), entry(path[from], d));
    return Error{Errc::kForwardingLoop,
                 fmt::format("{}: forwarding loop {} (switches: {})", lid(d), text, guids)};
  }

  // A cycle of channels (arc indices) in the dependency graph of VL vl;
  // with per-hop VLs (`hop_vls`: each channel's VL) of the VLs together.
  Error cycle_error(std::uint32_t vl, const std::vector<std::uint32_t>& cycle, bool switch_traffic,
                    const std::vector<std::uint32_t>* hop_vls = nullptr) const {
    std::string text;
    std::string guids;
    std::vector<std::uint32_t> named;
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      const std::uint32_t c = cycle[i];
      const std::uint32_t s = g_.arc_source(c).value;
      text += hop_vls != nullptr
                  ? fmt::format("{}[{}] (VL {}) -> ", label(s), g_.arc(c).local_port, (*hop_vls)[i])
                  : fmt::format("{}[{}] -> ", label(s), g_.arc(c).local_port);
      if (std::find(named.begin(), named.end(), s) == named.end()) {
        guids += fmt::format("{}{} {:#018x}", named.empty() ? "" : ", ", label(s),
                             topo_.node(topo_.switch_node(SwitchIndex{s})).guid.value);
        named.push_back(s);
      }
    }
    const std::uint32_t first = g_.arc_source(cycle.front()).value;
    text += fmt::format("{}[{}]", label(first), g_.arc(cycle.front()).local_port);
    std::string example;
    if (cycle.size() >= 2) {
      // One counted LID whose route makes the first dependency of the cycle.
      const std::uint32_t s1 = first;
      const std::uint32_t s2 = g_.arc_source(cycle[1]).value;
      const PortNum p1 = g_.arc(cycle[0]).local_port;
      const PortNum p2 = g_.arc(cycle[1]).local_port;
      for (std::uint32_t d = 1; d <= g_.max_lid().value; ++d) {
        const LidAttachment at = g_.attachment(Lid{d});
        if (!at.routable() || (at.port == 0 && !switch_traffic)) continue;
        if (entry(s1, d) == p1 && entry(s2, d) == p2) {
          example =
              fmt::format("; e.g. {} goes {}[{}] -> {}[{}]", lid(d), label(s1), p1, label(s2), p2);
          break;
        }
      }
    }
    return Error{
        Errc::kCdgCycle,
        hop_vls != nullptr
            ? fmt::format("per-hop VLs: credit loop {} (switches: {}){}", text, guids, example)
            : fmt::format("VL {}: credit loop {} (switches: {}){}", vl, text, guids, example)};
  }

  // Switch s sends counted traffic to LID d out of port p on VL vl (its
  // SL2VL for the LID's SL), which the routes do not use or that drops it.
  Error vl_error(std::uint32_t s, std::uint8_t p, std::uint32_t d, std::uint32_t vl) const {
    return Error{
        Errc::kIncomplete,
        fmt::format("switch {} sends {} (SL {}) out of port {} on VL {}{}", sw(s), lid(d),
                    routes_.lid_layer[d], p, vl,
                    vl == kDropVl ? ", which drops it"
                                  : fmt::format(", beyond the routes' {} VLs", routes_.num_vls))};
  }

 private:
  // Lowest port of s on a shortest path toward the LID's switch (for messages).
  std::uint32_t first_hop(std::uint32_t s, LidAttachment att) const {
    if (s == att.sw.value) return att.port;
    std::vector<std::uint32_t> dist(g_.num_switches(), UINT32_MAX);
    std::vector<SwitchIndex> queue{att.sw};
    dist[att.sw.value] = 0;
    for (std::size_t i = 0; i < queue.size() && dist[s] == UINT32_MAX; ++i) {
      for (const SwitchArc& a : g_.arcs(queue[i])) {
        if (dist[a.to.value] == UINT32_MAX) {
          dist[a.to.value] = dist[queue[i].value] + 1;
          queue.push_back(a.to);
        }
      }
    }
    for (const SwitchArc& a : g_.arcs(SwitchIndex{s})) {
      if (dist[a.to.value] + 1 == dist[s]) return a.local_port;
    }
    return 0;
  }

  const Topology& topo_;
  const LidMap& lids_;
  const Routes& routes_;
  const SwitchGraph& g_;
};

}  // namespace

Result<VerifyReport> verify(const Topology& topo, const LidMap& lids, const Routes& routes,
                            WorkerPool& pool, std::stop_token stop) {
  return verify(topo, lids, routes, VerifyOptions{}, pool, stop);
}

Result<VerifyReport> verify(const Topology& topo, const LidMap& lids, const Routes& routes,
                            const VerifyOptions& opts, WorkerPool& pool, std::stop_token stop) {
  const auto t_start = Clock::now();
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));
  const std::uint32_t n = g.num_switches();
  if (routes.lfts.size() != n) {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("routes hold {} LFTs, the fabric has {} switches", routes.lfts.size(), n)};
  }
  const std::uint32_t num_vls = routes.num_vls == 0 ? 1 : routes.num_vls;
  // Per-hop VLs (Routes::hop_vls): lid_layer holds SLs, and a dependency
  // may change VL, so the graphs of the VLs are one, kept as num_vls x
  // num_vls blocks (VL in, VL out) of the channels' out-port sets; else a
  // block per VL.
  const bool per_hop = routes.per_hop_vls();
  // Layers per source (Routes::path_layers): those LIDs' routes are
  // proven loop-free with the others, and their dependencies walked from
  // each source apart, on its own layer.
  if (!routes.path_layers.empty()) {
    if (per_hop) {
      return Error{Errc::kInvalidArgument, "routes give both per-hop VLs and layers per source"};
    }
    for (std::uint32_t l = 0; l < routes.path_layers.size(); ++l) {
      const std::vector<std::uint8_t>& by_switch = routes.path_layers[l];
      if (by_switch.empty()) continue;
      if (by_switch.size() != n) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("LID {}: layers for {} of {} switches", l, by_switch.size(), n)};
      }
      for (std::uint32_t s = 0; s < n; ++s) {
        if (by_switch[s] >= num_vls) {
          return Error{Errc::kInvalidArgument,
                       fmt::format("LID {}: the traffic from switch {} on layer {} of {} VLs", l, s,
                                   by_switch[s], num_vls)};
        }
      }
    }
  }
  auto per_source = [&](std::uint32_t lid) {
    return lid < routes.path_layers.size() && !routes.path_layers[lid].empty();
  };
  if (num_vls > 1) {
    // Each destination's traffic on its layer's VL (routing/layers.hpp).
    if (routes.lid_layer.size() <= g.max_lid().value) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("routes use {} VLs but give a layer for {} of LIDs 0..{}", num_vls,
                               routes.lid_layer.size(), g.max_lid().value)};
    }
    for (std::uint32_t l = 0; l <= g.max_lid().value; ++l) {
      if (per_hop && routes.lid_layer[l] >= kNumSls) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("LID {} is on SL {} of {}", l, routes.lid_layer[l], kNumSls)};
      }
      if (!per_hop && routes.lid_layer[l] >= num_vls) {
        return Error{Errc::kInvalidArgument, fmt::format("LID {} is on layer {} of {} VLs", l,
                                                         routes.lid_layer[l], num_vls)};
      }
    }
  }
  if (per_hop && (num_vls < 2 || routes.hop_vls.size() != n)) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("routes give per-hop VLs for {} of {} switches on {} VLs",
                             routes.hop_vls.size(), n, num_vls)};
  }
  const std::uint32_t blocks = per_hop ? num_vls * num_vls : num_vls;
  auto vl_of = [&](std::uint32_t lid) -> std::uint32_t {
    return num_vls > 1 ? routes.lid_layer[lid] : 0;
  };
  const Checker check(topo, lids, routes, g);

  VerifyReport report;
  report.switches = n;
  report.num_vls = num_vls;
  report.channels = std::uint64_t{g.num_arcs()} * num_vls;

  std::vector<std::uint32_t> part_size(g.num_components(), 0);
  for (std::uint32_t s = 0; s < n; ++s) ++part_size[g.component(SwitchIndex{s})];
  // Where counted traffic enters the switch fabric.
  std::vector<std::uint32_t> sources;
  for (std::uint32_t s = 0; s < n; ++s) {
    if (opts.switch_traffic || g.has_endpoints(SwitchIndex{s})) sources.push_back(s);
  }

  // Order of the column walks: farthest from the endpoints first. Their
  // routes climb highest and run through the lower switches' next hops, so
  // later walks mostly stop after one step at a switch already proven (on a
  // fat tree with 5% of its links cut this is 4x fewer walks than index
  // order). Multi-source BFS from the switches with CAs/routers.
  std::vector<std::uint32_t> walk_order;
  {
    std::vector<SwitchIndex> ca_switches;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (g.has_endpoints(SwitchIndex{s})) ca_switches.push_back(SwitchIndex{s});
    }
    const std::vector<std::uint32_t> depth = hops_to_nearest(g, ca_switches);
    walk_order.resize(n);
    std::iota(walk_order.begin(), walk_order.end(), 0U);
    // Unreached switches (no endpoints in their component) count as deepest.
    std::stable_sort(walk_order.begin(), walk_order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return depth[a] > depth[b]; });
  }

  // One connected switch fabric (the usual case): every routable LID's part
  // is every switch's part, and the hot loops skip the lookup.
  const bool one_part = g.num_components() == 1;
  const std::uint32_t max_lid = g.max_lid().value;
  const std::uint32_t tiles = max_lid / kTile + 1;
  // deps[(vl * arcs + a) * kDepWords + w]: bit p = channel a feeds out-port p
  // of the switch it leads to. Written through atomic_ref while tiles run.
  std::vector<std::uint64_t> deps(std::size_t{g.num_arcs()} * blocks * kDepWords, 0);

  std::vector<TileScratch> scratch(pool.size());
  std::atomic<std::uint32_t> error_tile{UINT32_MAX};
  std::mutex err_mu;
  std::optional<std::pair<std::uint32_t, Error>> first_error;
  std::atomic<std::uint64_t> pairs{0};
  std::atomic<std::uint32_t> lid_count{0};

  auto run_tile = [&](std::uint32_t tile, TileScratch& w) -> std::optional<Error> {
    const std::uint32_t lid0 = tile * kTile;
    const std::uint32_t width = std::min(kTile, max_lid + 1 - lid0);
    std::array<LidAttachment, kTile> att{};
    std::array<std::uint32_t, kTile> part{};
    for (std::uint32_t l = 0; l < width; ++l) {
      att[l] = lid0 + l == 0 ? LidAttachment{} : g.attachment(Lid{lid0 + l});
      part[l] = att[l].routable() ? g.component(att[l].sw) : kNoPart;
    }
    w.buf.resize(std::size_t{n} * kTile);
    w.next.resize(std::size_t{n} * kStrip);
    if (w.stamp.size() != n) w.stamp.assign(n, 0);
    w.active.assign(std::size_t{n} * kStrips, 0);
    // Copy each switch's part of the tile: one visit per row (a cache and TLB
    // miss each), four blocks at a time.
    for (std::uint32_t s = 0; s < n; ++s) {
      if (s + 8 < n && routes.lfts[s + 8].size() >= lid0 + kTile) {
        __builtin_prefetch(routes.lfts[s + 8].data() + lid0);
        __builtin_prefetch(routes.lfts[s + 8].data() + lid0 + 64);
        __builtin_prefetch(routes.lfts[s + 8].data() + lid0 + 128);
        __builtin_prefetch(routes.lfts[s + 8].data() + lid0 + 192);
      }
      const Lft& lft = routes.lfts[s];
      std::uint8_t* row = &w.buf[std::size_t{s} * kTile];
      if (lft.size() >= lid0 + kTile) {
        std::memcpy(row, lft.data() + lid0, kTile);
      } else {
        for (std::uint32_t l = 0; l < kTile; ++l) row[l] = lft.get(Lid{lid0 + l});
      }
    }
    std::uint64_t tile_pairs = 0;
    std::uint32_t tile_lids = 0;
    // Strips of 64 LIDs: next hops column by column, so each LID's walk reads
    // one contiguous column.
    for (std::uint32_t strip = 0; strip * kStrip < width; ++strip) {
      const std::uint32_t l0 = strip * kStrip;
      const std::uint32_t l1 = std::min(width, l0 + kStrip);
      for (std::uint32_t s = 0; s < n; ++s) {
        const std::uint8_t* row = &w.buf[std::size_t{s} * kTile];
        const SwitchIndex sw{s};
        const std::uint32_t ps = g.component(sw);
        for (std::uint32_t l = l0; l < l1; ++l) {
          if (part[l] != ps) continue;
          const std::uint8_t p = row[l];
          // peer_at_port is kNoSwitch (== kBad) for port 0, drop, CAs, dark ports.
          w.next[std::size_t{l - l0} * n + s] =
              sw == att[l].sw && p == att[l].port ? kDeliver : g.peer_at_port(sw, p).value;
        }
      }
      // Column walks: from every switch of the LID's part, next hops must end
      // in delivery. Stamps make each walk stop at switches already proven.
      // Then, for LIDs whose traffic counts, mark the switches on the routes
      // from the traffic's sources (safe now: every walk is known to end).
      for (std::uint32_t l = l0; l < l1; ++l) {
        if (!att[l].routable()) continue;
        ++tile_lids;
        tile_pairs += part_size[part[l]];
        const std::uint32_t e = ++w.epoch;
        const std::uint32_t* next = &w.next[std::size_t{l - l0} * n];
        for (const std::uint32_t s0 : walk_order) {
          if ((!one_part && g.component(SwitchIndex{s0}) != part[l]) || w.stamp[s0] == 2 * e + 1)
            continue;
          // Most switches lead straight to one already proven.
          const std::uint32_t first = next[s0];
          if (first == kDeliver || (first != kBad && w.stamp[first] == 2 * e + 1)) {
            w.stamp[s0] = 2 * e + 1;
            continue;
          }
          w.path.clear();
          std::uint32_t cur = s0;
          for (;;) {
            if (w.stamp[cur] == 2 * e + 1) break;
            if (w.stamp[cur] == 2 * e) {
              const auto at = std::find(w.path.begin(), w.path.end(), cur) - w.path.begin();
              return check.loop_error(lid0 + l, w.path, static_cast<std::size_t>(at));
            }
            w.stamp[cur] = 2 * e;
            w.path.push_back(cur);
            const std::uint32_t nx = next[cur];
            if (nx == kDeliver) break;
            if (nx == kBad) return check.entry_error(cur, lid0 + l);
            cur = nx;
          }
          for (std::uint32_t v : w.path) w.stamp[v] = 2 * e + 1;
        }
        if (!opts.switch_traffic && att[l].port == 0) continue;  // management traffic only
        if (per_source(lid0 + l)) continue;                      // walked apart, below
        const std::uint64_t bit = std::uint64_t{1} << (l - l0);
        std::uint64_t* const active = &w.active[strip];
        for (std::uint32_t s0 : sources) {
          if (!one_part && g.component(SwitchIndex{s0}) != part[l]) continue;
          for (std::uint32_t cur = s0; (active[std::size_t{cur} * kStrips] & bit) == 0;) {
            active[std::size_t{cur} * kStrips] |= bit;
            if (next[cur] == kDeliver) break;
            cur = next[cur];
          }
        }
      }
    }
    // Switch-major again, once for the whole tile: the dependency each
    // marked hop makes (the next switch and its port come from the copied
    // rows; a hop into the LID's own switch, which delivers it, makes none).
    // By (VL, arc of the switch): the tile's LIDs on each VL.
    const std::size_t local_vl = std::size_t{g.max_degree()} * kDepWords;
    w.local.assign(local_vl * blocks, 0);
    for (std::uint32_t s = 0; s < n; ++s) {
      const SwitchIndex sw{s};
      const std::uint8_t* row = &w.buf[std::size_t{s} * kTile];
      const std::uint32_t arc0 = g.first_arc(sw);
      bool any = false;
      for (std::uint32_t strip = 0; strip < kStrips; ++strip) {
        for (std::uint64_t m = w.active[std::size_t{s} * kStrips + strip]; m != 0; m &= m - 1) {
          const std::uint32_t l = strip * kStrip + static_cast<std::uint32_t>(std::countr_zero(m));
          const std::uint8_t p = row[l];
          if (sw == att[l].sw && p == att[l].port) continue;  // delivered here
          const SwitchIndex nb = g.peer_at_port(sw, p);
          const std::uint8_t p2 = w.buf[std::size_t{nb.value} * kTile + l];
          const bool last = nb == att[l].sw && p2 == att[l].port;  // leaves the fabric there
          std::uint32_t block = 0;
          if (per_hop) {
            const std::uint8_t sl = routes.lid_layer[lid0 + l];
            const std::uint32_t v1 = routes.hop_vl(s, p, sl);
            if (v1 >= num_vls) return check.vl_error(s, p, lid0 + l, v1);
            const std::uint32_t v2 = last ? 0 : routes.hop_vl(nb.value, p2, sl);
            if (v2 >= num_vls) return check.vl_error(nb.value, p2, lid0 + l, v2);
            block = v1 * num_vls + v2;
          } else {
            block = vl_of(lid0 + l);
          }
          if (last) continue;
          const std::uint32_t a = g.arc_at_port(sw, p) - arc0;
          w.local[block * local_vl + std::size_t{a} * kDepWords + p2 / 64] |= std::uint64_t{1}
                                                                              << (p2 % 64);
          any = true;
        }
      }
      if (!any) continue;
      const std::uint32_t degree = g.first_arc(SwitchIndex{s + 1}) - arc0;
      for (std::uint32_t vl = 0; vl < blocks; ++vl) {
        std::uint64_t* const local = &w.local[vl * local_vl];
        std::uint64_t* const global = &deps[(std::size_t{vl} * g.num_arcs() + arc0) * kDepWords];
        for (std::size_t i = 0; i < std::size_t{degree} * kDepWords; ++i) {
          const std::uint64_t bits = local[i];
          if (bits == 0) continue;
          local[i] = 0;
          std::atomic_ref<std::uint64_t> word(global[i]);
          if ((word.load(std::memory_order_relaxed) & bits) != bits) {
            word.fetch_or(bits, std::memory_order_relaxed);
          }
        }
      }
    }
    pairs.fetch_add(tile_pairs, std::memory_order_relaxed);
    lid_count.fetch_add(tile_lids, std::memory_order_relaxed);
    return std::nullopt;
  };

  const auto t_tables = Clock::now();
  pool.parallel_for(tiles, 1, [&](std::size_t begin, std::size_t end, unsigned slot) {
    for (std::size_t t = begin; t < end; ++t) {
      const auto tile = static_cast<std::uint32_t>(t);
      if (stop.stop_requested() || tile > error_tile.load(std::memory_order_relaxed)) return;
      if (auto err = run_tile(tile, scratch[slot])) {
        std::lock_guard lock(err_mu);
        if (!first_error || first_error->first > tile) {
          first_error.emplace(tile, std::move(*err));
          error_tile.store(tile, std::memory_order_relaxed);
        }
        return;
      }
    }
  });
  if (first_error) return first_error->second;
  if (stop.stop_requested()) return Error{Errc::kCancelled, "verification cancelled"};
  report.tables_seconds = seconds_since(t_tables);
  report.pairs_checked = pairs.load();
  report.lids = lid_count.load();

  // LIDs whose layer depends on the source: each source's route, every
  // hop proven to lead on by the walks above.
  const std::uint32_t num_arcs = g.num_arcs();
  for (std::uint32_t lid = 1; lid < routes.path_layers.size() && lid <= max_lid; ++lid) {
    if (!per_source(lid)) continue;
    const LidAttachment att = g.attachment(Lid{lid});
    if (!att.routable() || (!opts.switch_traffic && att.port == 0)) continue;
    for (const std::uint32_t s0 : sources) {
      if (g.component(SwitchIndex{s0}) != g.component(att.sw)) continue;
      const std::size_t block = std::size_t{routes.path_layers[lid][s0]} * num_arcs;
      for (std::uint32_t s = s0;;) {
        const std::uint8_t p = routes.lfts[s].get(Lid{lid});
        if (s == att.sw.value && p == att.port) break;  // delivered
        const std::uint32_t a = g.arc_at_port(SwitchIndex{s}, p);
        const std::uint32_t nb = g.arc(a).to.value;
        const std::uint8_t p2 = routes.lfts[nb].get(Lid{lid});
        if (nb == att.sw.value && p2 == att.port) break;  // leaves the fabric there
        deps[(block + a) * kDepWords + p2 / 64] |= std::uint64_t{1} << (p2 % 64);
        s = nb;
      }
    }
  }

  // Multicast trees on VL 0.
  if (opts.multicast != nullptr && opts.multicast->num_switches() == g.num_switches()) {
    for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
      for (const McastTables::Entry& e : opts.multicast->entries(SwitchIndex{s})) {
        e.ports.for_each([&](PortNum q) {
          const std::uint32_t out = g.arc_at_port(SwitchIndex{s}, q);
          if (out == kNoArc) return;  // port 0 or a CA: nothing enters by it
          const SwitchArc& arc = g.arc(out);
          const std::uint32_t in = g.arc_at_port(arc.to, arc.remote_port);
          if (in == kNoArc) return;
          PortMask rest = e.ports;
          rest.reset(q);
          for (std::uint32_t w = 0; w < kDepWords; ++w) {
            deps[std::size_t{in} * kDepWords + w] |= rest.words()[w];
          }
        });
      }
    }
  }

  // Cycle search: iterative DFS over the channels of each VL.
  const auto t_cdg = Clock::now();
  for (std::uint64_t word : deps)
    report.dependencies += static_cast<std::uint64_t>(std::popcount(word));
  const std::uint32_t arcs = g.num_arcs();
  if (per_hop) {
    auto cycle = find_cdg_cycle_across(g, deps, num_vls, stop);
    if (!cycle.ok()) return Error{Errc::kCancelled, "verification cancelled"};
    if (!cycle->empty()) {
      std::vector<std::uint32_t> vls;
      for (std::uint32_t& c : *cycle) {
        vls.push_back(c / arcs);
        c %= arcs;
      }
      return check.cycle_error(0, *cycle, opts.switch_traffic, &vls);
    }
  }
  for (std::uint32_t vl = 0; vl < (per_hop ? 0 : num_vls); ++vl) {
    auto cycle =
        find_cdg_cycle(g,
                       std::span<const std::uint64_t>(deps).subspan(
                           std::size_t{vl} * arcs * kDepWords, std::size_t{arcs} * kDepWords),
                       stop);
    if (!cycle.ok()) return Error{Errc::kCancelled, "verification cancelled"};
    if (!cycle->empty()) return check.cycle_error(vl, *cycle, opts.switch_traffic);
  }
  report.cdg_seconds = seconds_since(t_cdg);
  report.total_seconds = seconds_since(t_start);
  return report;
}

}  // namespace subnetd::routing

#include "routing/failover_verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "routing/cdg.hpp"
#include "routing/engines/tree_grower.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class Checker {
 public:
  Checker(const Topology& topo, const Routes& routes, const FailoverPlan& plan,
          const SwitchGraph& g)
      : topo_(topo), routes_(routes), plan_(plan), g_(g), n_(g.num_switches()) {
    // Data (CA/router) LIDs per destination class, and classes per switch.
    const auto attach = g.attachments();
    const std::uint32_t classes = plan.num_classes();
    // LIDs under failover whose traffic takes layers per source (the
    // routes say so, or the plan groups them switch by switch) are walked
    // LID by LID, each source on its own layer; the others by class.
    alone_first_.assign(std::size_t{n_} + 1, 0);
    auto alone = [&](std::size_t l) {
      const Lid lid{static_cast<std::uint32_t>(l)};
      if (!attach[l].routable() || attach[l].port == 0) return false;
      if (plan.lid_class(lid) == FailoverPlan::kNoClass && !plan.per_switch(lid)) return false;
      return plan.per_switch(lid) ||
             (l < routes.path_layers.size() && !routes.path_layers[l].empty());
    };
    for (std::size_t l = 1; l < attach.size(); ++l) {
      if (alone(l)) ++alone_first_[attach[l].sw.value + 1];
    }
    for (std::uint32_t t = 0; t < n_; ++t) alone_first_[t + 1] += alone_first_[t];
    alone_list_.resize(alone_first_[n_]);
    std::vector<std::uint32_t> afill(alone_first_.begin(), alone_first_.end() - 1);
    for (std::size_t l = 1; l < attach.size(); ++l) {
      if (alone(l)) alone_list_[afill[attach[l].sw.value]++] = static_cast<std::uint32_t>(l);
    }
    auto class_of = [&](std::size_t l) {
      if (!attach[l].routable() || attach[l].port == 0 || alone(l)) return FailoverPlan::kNoClass;
      return plan.lid_class(Lid{static_cast<std::uint32_t>(l)});
    };
    lid_first_.assign(std::size_t{classes} + 1, 0);
    for (std::size_t l = 1; l < attach.size(); ++l) {
      if (const std::uint32_t c = class_of(l); c < classes) ++lid_first_[c + 1];
    }
    for (std::uint32_t c = 0; c < classes; ++c) lid_first_[c + 1] += lid_first_[c];
    lid_list_.resize(lid_first_[classes]);
    std::vector<std::uint32_t> fill(lid_first_.begin(), lid_first_.end() - 1);
    for (std::size_t l = 1; l < attach.size(); ++l) {
      if (const std::uint32_t c = class_of(l); c < classes) {
        lid_list_[fill[c]++] = static_cast<std::uint32_t>(l);
      }
    }
    class_first_.assign(std::size_t{n_} + 1, 0);
    for (std::uint32_t c = 0; c < classes; ++c) {
      if (has_data(c)) ++class_first_[plan.class_switch(c).value + 1];
    }
    for (std::uint32_t t = 0; t < n_; ++t) class_first_[t + 1] += class_first_[t];
    class_list_.resize(class_first_[n_]);
    std::vector<std::uint32_t> cfill(class_first_.begin(), class_first_.end() - 1);
    for (std::uint32_t c = 0; c < classes; ++c) {
      if (has_data(c)) class_list_[cfill[plan.class_switch(c).value]++] = c;
    }
  }

  std::span<const std::uint32_t> lids_of(std::uint32_t c) const {
    return std::span<const std::uint32_t>(lid_list_).subspan(lid_first_[c],
                                                             lid_first_[c + 1] - lid_first_[c]);
  }
  bool has_data(std::uint32_t c) const { return lid_first_[c + 1] > lid_first_[c]; }
  // The classes of destination switch t that carry data.
  std::span<const std::uint32_t> classes_of(std::uint32_t t) const {
    return std::span<const std::uint32_t>(class_list_)
        .subspan(class_first_[t], class_first_[t + 1] - class_first_[t]);
  }

  std::uint8_t entry(std::uint32_t s, std::uint32_t lid) const {
    return routes_.lfts[s].get(Lid{lid});
  }
  // The ports of s's entries for class c's LIDs that lead to a switch.
  PortMask lft_ports(std::uint32_t s, std::uint32_t c) const {
    PortMask m;
    for (const std::uint32_t l : lids_of(c)) {
      const std::uint8_t p = entry(s, l);
      if (g_.arc_at_port(SwitchIndex{s}, p) != kNoArc) m.set(p);
    }
    return m;
  }
  // Every port s may send class c's traffic on.
  PortMask hset(std::uint32_t s, std::uint32_t c) const {
    PortMask m = lft_ports(s, c);
    m |= plan_.class_group(SwitchIndex{s}, c);
    return m;
  }
  // Destination switch t's LIDs walked one by one (above).
  std::span<const std::uint32_t> alone_of(std::uint32_t t) const {
    return std::span<const std::uint32_t>(alone_list_)
        .subspan(alone_first_[t], alone_first_[t + 1] - alone_first_[t]);
  }
  // Every port s may send LID l's traffic on: its entry (to a switch)
  // and its group at s.
  PortMask hset_lid(std::uint32_t s, std::uint32_t l) const {
    PortMask m = plan_.lid_group_ports(SwitchIndex{s}, Lid{l});
    const std::uint8_t p = entry(s, l);
    if (g_.arc_at_port(SwitchIndex{s}, p) != kNoArc) m.set(p);
    return m;
  }
  // ... and every class and LID of destination switch t's.
  PortMask hset_switch(std::uint32_t s, std::uint32_t t) const {
    PortMask m;
    for (const std::uint32_t c : classes_of(t)) m |= hset(s, c);
    for (const std::uint32_t l : alone_of(t)) m |= hset_lid(s, l);
    return m;
  }

  std::string label(std::uint32_t s) const { return topo_.switch_label(SwitchIndex{s}); }

  const Topology& topo_;
  const Routes& routes_;
  const FailoverPlan& plan_;
  const SwitchGraph& g_;
  const std::uint32_t n_;
  std::vector<std::uint32_t> lid_first_;
  std::vector<std::uint32_t> lid_list_;
  std::vector<std::uint32_t> class_first_;
  std::vector<std::uint32_t> class_list_;
  std::vector<std::uint32_t> alone_first_;  // by destination switch
  std::vector<std::uint32_t> alone_list_;
};

// Per-thread state of the single-failure walk for one destination.
struct FailureScratch {
  std::vector<PortMask> removed;
  std::vector<std::uint8_t> dead;
  std::vector<std::uint32_t> depth;
  std::vector<std::uint32_t> touched;
  std::vector<std::uint32_t> queue;
  std::vector<std::uint32_t> reach;  // BFS marks without the failed link
  std::vector<std::uint32_t> bfs;
  std::uint32_t reach_epoch = 0;
  void init(std::uint32_t n) {
    if (removed.size() == n) return;
    removed.assign(n, PortMask{});
    dead.assign(n, 0);
    depth.assign(n, 0);
    reach.assign(n, 0);
  }
};

// By arc: whether its link is a bridge (its failure splits its part), both
// directions marked. Tarjan's low links, iteratively; a link with a
// parallel twin is never one.
std::vector<std::uint8_t> bridge_arcs(const SwitchGraph& g) {
  const std::uint32_t n = g.num_switches();
  std::vector<std::uint8_t> bridge(g.num_arcs(), 0);
  const std::vector<std::uint32_t> rev = reverse_arcs(g);
  std::vector<std::uint32_t> disc(n, 0), low(n, 0), enter(n, kNoArc), next(n, 0), stack;
  std::uint32_t timer = 0;
  for (std::uint32_t r = 0; r < n; ++r) {
    if (disc[r] != 0) continue;
    disc[r] = low[r] = ++timer;
    next[r] = g.first_arc(SwitchIndex{r});
    stack.assign(1, r);
    while (!stack.empty()) {
      const std::uint32_t x = stack.back();
      if (next[x] < g.first_arc(SwitchIndex{x + 1})) {
        const std::uint32_t c = next[x]++;
        if (enter[x] != kNoArc && c == rev[enter[x]]) continue;  // the link it came by
        const std::uint32_t m = g.arc(c).to.value;
        if (disc[m] == 0) {
          enter[m] = c;
          disc[m] = low[m] = ++timer;
          next[m] = g.first_arc(SwitchIndex{m});
          stack.push_back(m);
        } else {
          low[x] = std::min(low[x], disc[m]);
        }
        continue;
      }
      stack.pop_back();
      if (enter[x] == kNoArc) continue;
      const std::uint32_t up = g.arc_source(enter[x]).value;
      low[up] = std::min(low[up], low[x]);
      if (low[x] > disc[up]) {
        bridge[enter[x]] = 1;
        if (rev[enter[x]] != kNoArc) bridge[rev[enter[x]]] = 1;
      }
    }
  }
  return bridge;
}

}  // namespace

Result<FailoverVerifyReport> verify_failover(const Topology& topo, const LidMap& lids,
                                             const Routes& routes, const FailoverPlan& plan,
                                             const FailoverVerifyOptions& opts, WorkerPool& pool,
                                             std::stop_token stop) {
  const auto t_start = Clock::now();
  FailoverVerifyReport report;
  auto built = SwitchGraph::build(topo, lids);
  if (!built.ok()) return built.error();
  const SwitchGraph& g = *built;
  const std::uint32_t n = g.num_switches();
  if (plan.num_switches() != n || routes.lfts.size() != n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("failover plan for {} switches and routes for {}; the fabric has {}",
                             plan.num_switches(), routes.lfts.size(), n)};
  }
  // Every data LID's class is on the LID's switch (the walks below take
  // the class's switch as the destination).
  const auto attach = g.attachments();
  for (std::size_t l = 1; l < attach.size(); ++l) {
    if (!attach[l].routable() || attach[l].port == 0) continue;
    const std::uint32_t c = plan.lid_class(Lid{static_cast<std::uint32_t>(l)});
    if (c == FailoverPlan::kNoClass) continue;
    if (c >= plan.num_classes() || plan.class_switch(c) != attach[l].sw) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("failover plan puts LID {:#x} in class {} of {}, not with its "
                               "switch {}",
                               l, c,
                               c < plan.num_classes() ? topo.switch_label(plan.class_switch(c))
                                                      : std::string("no switch"),
                               topo.switch_label(attach[l].sw))};
    }
  }
  const Checker check(topo, routes, plan, g);

  // (a) Groups name switch links only.
  for (std::uint32_t s = 0; s < n; ++s) {
    const auto groups = plan.groups(SwitchIndex{s});
    for (std::size_t id = 1; id < groups.size(); ++id) {
      std::optional<PortNum> bad;
      groups[id].for_each([&](PortNum p) {
        if (!bad && g.arc_at_port(SwitchIndex{s}, p) == kNoArc) bad = p;
      });
      if (bad) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("failover group {} of {} names port {}, which is not cabled to "
                                 "another switch",
                                 id, check.label(s), *bad)};
      }
    }
  }

  // (b) The dependency graph over every port of H, per destination class.
  // On several VLs, LID by LID (a LID leaves by its own entry or its
  // class's group, not by another LID's entry) into the LID's layer; on
  // one, over the class's entries and group together.
  const auto t_cdg = Clock::now();
  const std::uint32_t arcs = g.num_arcs();
  const std::uint32_t layers = std::max<std::uint32_t>(1, routes.num_vls);
  const std::size_t layer_words = std::size_t{arcs} * kCdgDepWords;
  // Per-hop VLs (Routes::hop_vls): a LID's layer is its SL, a channel's VL
  // the SL2VL of the port it leaves by, and the VLs' graphs are one, kept
  // as (VL in, VL out) blocks as the plain verifier keeps them.
  const bool per_hop = routes.per_hop_vls();
  if (per_hop && (routes.hop_vls.size() != n || layers < 2)) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("routes give per-hop VLs for {} of {} switches on {} VLs",
                             routes.hop_vls.size(), n, layers)};
  }
  if (per_hop && !routes.path_layers.empty()) {
    return Error{Errc::kUnsupported,
                 "routes give per-hop VLs and layers per source; fast failover takes one or the "
                 "other"};
  }
  const std::uint32_t blocks = per_hop ? layers * layers : layers;
  std::atomic<std::uint32_t> dropped{kNoArc};  // a channel of H on a VL none takes
  std::vector<std::uint32_t> dests;            // classes, then LIDs walked alone
  for (std::uint32_t c = 0; c < plan.num_classes(); ++c) {
    if (check.has_data(c)) dests.push_back(c);
  }
  const std::size_t num_class_items = dests.size();
  for (std::uint32_t t = 0; t < n; ++t) {
    for (const std::uint32_t l : check.alone_of(t)) {
      for (std::uint32_t s = 0; s < n; ++s) {
        if (routes.path_layer(s, Lid{l}) >= layers) {
          return Error{Errc::kInvalidArgument,
                       fmt::format("routes send LID {:#x} from {} on layer {} of {}", l,
                                   check.label(s), routes.path_layer(s, Lid{l}), layers)};
        }
      }
      dests.push_back(l);
    }
  }
  std::vector<std::vector<std::uint64_t>> deps(pool.size());
  std::atomic<std::uint64_t> pairs{0};
  pool.parallel_for(dests.size(), 1, [&](std::size_t b, std::size_t e, unsigned slot) {
    std::vector<std::uint64_t>& dep = deps[slot];
    if (dep.empty()) dep.assign(layer_words * blocks, 0);
    std::vector<PortMask> h(n), group(n);
    std::vector<std::uint32_t> active(n, 0), counted(n, 0);
    std::uint32_t epoch = 0, class_epoch = 0;
    std::vector<std::uint32_t> queue;
    std::uint64_t my_pairs = 0;
    // The switches with CAs/routers, those they reach over h, and the
    // dependencies between h's channels there.
    // (Only the sources whose traffic is on `layer`, for a LID whose
    // layer depends on the source: `alone`.)
    auto walk = [&](std::uint32_t t, std::uint32_t layer, std::uint32_t alone = 0) {
      const std::uint32_t part = g.component(SwitchIndex{t});
      ++epoch;
      queue.clear();
      for (std::uint32_t s = 0; s < n; ++s) {
        if (alone != 0 && routes.path_layer(s, Lid{alone}) != layer) continue;
        if (s != t && g.component(SwitchIndex{s}) == part && g.has_endpoints(SwitchIndex{s})) {
          active[s] = epoch;
          queue.push_back(s);
        }
      }
      for (std::size_t q = 0; q < queue.size(); ++q) {
        const std::uint32_t s = queue[q];
        h[s].for_each([&](PortNum p) {
          const std::uint32_t m = g.peer_at_port(SwitchIndex{s}, p).value;
          if (m != t && active[m] != epoch) {
            active[m] = epoch;
            queue.push_back(m);
          }
        });
      }
      for (const std::uint32_t s : queue) {
        if (counted[s] != class_epoch) {
          counted[s] = class_epoch;
          ++my_pairs;
        }
        h[s].for_each([&](PortNum p) {
          const std::uint32_t a = g.arc_at_port(SwitchIndex{s}, p);
          const std::uint32_t m = g.arc(a).to.value;
          if (m == t) return;
          if (!per_hop) {
            const auto& w = h[m].words();
            std::uint64_t* d = &dep[layer_words * layer + std::size_t{a} * kCdgDepWords];
            for (std::uint32_t k = 0; k < kCdgDepWords; ++k) d[k] |= w[k];
            return;
          }
          const auto sl = static_cast<std::uint8_t>(layer);
          const std::uint32_t v1 = routes.hop_vl(s, p, sl);
          if (v1 >= layers) {
            dropped = a;
            return;
          }
          h[m].for_each([&](PortNum p2) {
            const std::uint32_t v2 = routes.hop_vl(m, p2, sl);
            if (v2 >= layers) {
              dropped = g.arc_at_port(SwitchIndex{m}, p2);
              return;
            }
            dep[layer_words * (v1 * layers + v2) + std::size_t{a} * kCdgDepWords + p2 / 64] |=
                std::uint64_t{1} << (p2 % 64);
          });
        });
      }
    };
    for (std::size_t i = b; i < e && !stop.stop_requested(); ++i) {
      if (i >= num_class_items) {
        // A LID walked alone: from each layer's sources, over its entries
        // and its groups switch by switch.
        const std::uint32_t l = dests[i];
        const std::uint32_t t = attach[l].sw.value;
        const std::uint32_t part = g.component(SwitchIndex{t});
        std::uint32_t used = 0;  // layers some source sends it on
        for (std::uint32_t s = 0; s < n; ++s) {
          const bool in = s != t && g.component(SwitchIndex{s}) == part;
          h[s] = in ? check.hset_lid(s, l) : PortMask{};
          if (in && g.has_endpoints(SwitchIndex{s})) used |= 1U << routes.path_layer(s, Lid{l});
        }
        ++class_epoch;
        for (std::uint32_t k = 0; k < layers; ++k) {
          if ((used >> k & 1U) != 0) walk(t, k, l);
        }
        continue;
      }
      const std::uint32_t c = dests[i];
      const std::uint32_t t = plan.class_switch(c).value;
      const std::uint32_t part = g.component(SwitchIndex{t});
      auto in_part = [&](std::uint32_t s) { return s != t && g.component(SwitchIndex{s}) == part; };
      ++class_epoch;
      if (layers == 1) {
        for (std::uint32_t s = 0; s < n; ++s) h[s] = in_part(s) ? check.hset(s, c) : PortMask{};
        walk(t, 0);
        continue;
      }
      for (std::uint32_t s = 0; s < n; ++s) {
        group[s] = in_part(s) ? plan.class_group(SwitchIndex{s}, c) : PortMask{};
      }
      for (const std::uint32_t l : check.lids_of(c)) {
        for (std::uint32_t s = 0; s < n; ++s) {
          h[s] = group[s];
          const std::uint8_t p = check.entry(s, l);
          if (in_part(s) && g.arc_at_port(SwitchIndex{s}, p) != kNoArc) h[s].set(p);
        }
        walk(t, per_hop ? routes.layer(Lid{l})
                        : std::min<std::uint32_t>(routes.layer(Lid{l}), layers - 1));
      }
    }
    pairs += my_pairs;
  });
  if (stop.stop_requested()) return Error{Errc::kCancelled, "failover verification cancelled"};
  if (const std::uint32_t a = dropped.load(); a != kNoArc) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("fast failover groups send traffic out of {}[{}] on a VL its SL2VL "
                             "drops or the routes do not use",
                             check.label(g.arc_source(a).value), g.arc(a).local_port)};
  }
  std::vector<std::uint64_t> all(layer_words * blocks, 0);
  for (const auto& d : deps) {
    for (std::size_t i = 0; i < d.size(); ++i) all[i] |= d[i];
  }
  deps.clear();
  if (layers > 1 && routes.vl0_rank.size() == n) {  // multicast on VL 0 may use any of these
    const std::vector<std::uint32_t> rev = reverse_arcs(g);
    for_each_updown_dep(g, routes.vl0_rank, rev, [&](std::uint32_t in, std::uint32_t out) {
      const PortNum p = g.arc(out).local_port;
      all[std::size_t{in} * kCdgDepWords + p / 64] |= std::uint64_t{1} << (p % 64);
    });
  }
  for (const std::uint64_t w : all)
    report.dependencies += static_cast<std::uint64_t>(std::popcount(w));
  report.pairs = pairs.load();
  report.channels = std::uint64_t{arcs} * layers;
  if (per_hop) {
    auto cycle = find_cdg_cycle_across(g, all, layers, stop);
    if (!cycle.ok()) return Error{Errc::kCancelled, "failover verification cancelled"};
    if (!cycle->empty()) {
      std::string text;
      for (const std::uint32_t node : *cycle) {
        const std::uint32_t c = node % arcs;
        text += fmt::format("{}[{}] VL {} -> ", check.label(g.arc_source(c).value),
                            g.arc(c).local_port, node / arcs);
      }
      const std::uint32_t c0 = cycle->front() % arcs;
      text += fmt::format("{}[{}]", check.label(g.arc_source(c0).value), g.arc(c0).local_port);
      return Error{Errc::kCdgCycle,
                   fmt::format("fast failover groups allow a credit loop across VLs: {}", text)};
    }
  }
  for (std::uint32_t k = 0; k < (per_hop ? 0 : layers); ++k) {
    auto cycle = find_cdg_cycle(
        g, std::span<const std::uint64_t>(all).subspan(layer_words * k, layer_words), stop);
    if (!cycle.ok()) return Error{Errc::kCancelled, "failover verification cancelled"};
    if (cycle->empty()) continue;
    std::string text;
    for (const std::uint32_t c : *cycle) {
      text += fmt::format("{}[{}] -> ", check.label(g.arc_source(c).value), g.arc(c).local_port);
    }
    const std::uint32_t c0 = cycle->front();
    text += fmt::format("{}[{}]", check.label(g.arc_source(c0).value), g.arc(c0).local_port);
    return Error{Errc::kCdgCycle,
                 fmt::format("fast failover groups allow a credit loop on VL {}: {}", k, text)};
  }
  report.cdg_seconds = seconds_since(t_cdg);
  if (!opts.check_failures) {
    report.total_seconds = seconds_since(t_start);
    return report;
  }

  // (c) Every single switch-to-switch link failure. First, per switch, the
  // (port, destination) pairs a dead port strands directly: an entry for the
  // destination uses the port and the group holds no other port.
  const auto t_fail = Clock::now();
  std::vector<std::vector<std::uint64_t>> fragile(n);
  pool.parallel_for(n, 8, [&](std::size_t b, std::size_t e, unsigned) {
    std::vector<PortMask> lm(plan.num_classes());  // by class
    std::vector<std::uint32_t> touched;
    for (std::size_t si = b; si < e && !stop.stop_requested(); ++si) {
      const auto s = static_cast<std::uint32_t>(si);
      const Lft& lft = routes.lfts[si];
      const auto end = static_cast<std::uint32_t>(std::min<std::size_t>(attach.size(), lft.size()));
      for (std::uint32_t l = 1; l < end; ++l) {
        const LidAttachment& at = attach[l];
        if (!at.routable() || at.port == 0 || at.sw.value == s) continue;
        const std::uint32_t c = plan.lid_class(Lid{l});
        const std::uint8_t p = lft.get(Lid{l});
        if (g.arc_at_port(SwitchIndex{s}, p) == kNoArc) continue;
        if (plan.per_switch(Lid{l})) {  // its own group here
          const PortMask& grp = plan.lid_group_ports(SwitchIndex{s}, Lid{l});
          PortMask only;
          only.set(p);
          if (grp.subset_of(only)) fragile[si].push_back((std::uint64_t{p} << 32) | at.sw.value);
          continue;
        }
        if (c >= lm.size()) continue;
        if (lm[c].none()) touched.push_back(c);
        lm[c].set(p);
      }
      for (const std::uint32_t c : touched) {
        const PortMask& grp = plan.class_group(SwitchIndex{s}, c);
        const std::uint32_t t = plan.class_switch(c).value;
        if (grp.count() <= 1) {
          lm[c].for_each([&](PortNum p) {
            PortMask only;
            only.set(p);
            if (grp.subset_of(only)) fragile[si].push_back((std::uint64_t{p} << 32) | t);
          });
        }
        lm[c] = PortMask{};
      }
      touched.clear();
      std::sort(fragile[si].begin(), fragile[si].end());
      fragile[si].erase(std::unique(fragile[si].begin(), fragile[si].end()), fragile[si].end());
    }
  });
  if (stop.stop_requested()) return Error{Errc::kCancelled, "failover verification cancelled"};

  std::vector<std::uint32_t> links;
  for (std::uint32_t a = 0; a < arcs; ++a) {
    const SwitchArc& arc = g.arc(a);
    if (a < g.arc_at_port(arc.to, arc.remote_port)) links.push_back(a);
  }
  report.links_checked = static_cast<std::uint32_t>(links.size());
  // Only across a bridge does a failure cut a pair's physical path, so
  // only then is a side searched, once per failure (a search per
  // destination was most of a torus's check: 12x12x12 on dateline VLs,
  // 5,184 failures in 35.7 s).
  const std::vector<std::uint8_t> bridge = bridge_arcs(g);
  std::vector<FailureScratch> scratch(pool.size());
  std::atomic<std::uint32_t> links_with_gaps{0}, max_depth{0};
  std::atomic<std::uint64_t> gap_pairs{0}, stranded{0};
  std::mutex first_mu;
  std::size_t first_index = SIZE_MAX;
  pool.parallel_for(links.size(), 64, [&](std::size_t b, std::size_t e, unsigned slot) {
    FailureScratch& sc = scratch[slot];
    sc.init(n);
    std::vector<std::uint64_t> seeds;  // (destination << 32) | switch
    for (std::size_t li = b; li < e && !stop.stop_requested(); ++li) {
      const std::uint32_t a = links[li];
      const std::uint32_t sa = g.arc_source(a).value;
      const PortNum pa = g.arc(a).local_port;
      const std::uint32_t sb = g.arc(a).to.value;
      const PortNum pb = g.arc(a).remote_port;
      auto failed = [&](std::uint32_t s, PortNum p) {
        return (s == sa && p == pa) || (s == sb && p == pb);
      };
      seeds.clear();
      for (const auto& [s, p] : {std::pair{sa, pa}, std::pair{sb, pb}}) {
        const auto& fr = fragile[s];
        auto it = std::lower_bound(fr.begin(), fr.end(), std::uint64_t{p} << 32);
        for (; it != fr.end() && (*it >> 32) == p; ++it) {
          seeds.push_back(((*it & 0xFFFFFFFFULL) << 32) | s);
        }
      }
      std::sort(seeds.begin(), seeds.end());
      std::uint64_t my_gaps = 0;
      std::string gap_text;
      bool reach_ready = false;
      for (std::size_t i = 0; i < seeds.size();) {
        const auto t = static_cast<std::uint32_t>(seeds[i] >> 32);
        sc.queue.clear();
        // What a switch does for t now: forwards, is stranded and notifies
        // (it has a group for t), or drops t silently (no group: not under
        // failover, so nobody is told).
        enum : std::uint8_t { kAlive = 0, kNotifies = 1, kSilent = 2 };
        // Per class of t: a LID whose entry is unusable leaves by a live
        // port of the class's group; with none left the switch notifies
        // (with no group, drops it silently). One notifying class is
        // enough for the switch to tell its neighbours about t.
        auto fate = [&](std::uint32_t m) -> std::uint8_t {
          auto usable = [&](PortNum p) { return !sc.removed[m].test(p) && !failed(m, p); };
          bool silent = false;
          for (const std::uint32_t c : check.classes_of(t)) {
            const PortMask& grp = plan.class_group(SwitchIndex{m}, c);
            PortMask left = grp.minus(sc.removed[m]);
            if (m == sa) left.reset(pa);
            if (m == sb) left.reset(pb);
            if (!left.none()) continue;
            for (const std::uint32_t l : check.lids_of(c)) {
              const std::uint8_t p = check.entry(m, l);
              if (p == 0 || p == kDropPort || usable(p)) continue;
              if (!grp.none()) return kNotifies;
              silent = true;
              break;
            }
          }
          for (const std::uint32_t l : check.alone_of(t)) {  // each its own group here
            const std::uint8_t p = check.entry(m, l);
            if (p == 0 || p == kDropPort || usable(p)) continue;
            const PortMask& grp = plan.lid_group_ports(SwitchIndex{m}, Lid{l});
            PortMask left = grp.minus(sc.removed[m]);
            if (m == sa) left.reset(pa);
            if (m == sb) left.reset(pb);
            if (!left.none()) continue;
            if (!grp.none()) return kNotifies;
            silent = true;
          }
          return silent ? kSilent : kAlive;
        };
        for (; i < seeds.size() && (seeds[i] >> 32) == t; ++i) {
          const auto s = static_cast<std::uint32_t>(seeds[i] & 0xFFFFFFFFULL);
          if (sc.dead[s] != 0) continue;
          sc.dead[s] = fate(s);
          if (sc.dead[s] == kAlive) continue;
          sc.depth[s] = 0;
          sc.touched.push_back(s);
          sc.queue.push_back(s);
        }
        for (std::size_t q = 0; q < sc.queue.size(); ++q) {
          const std::uint32_t x = sc.queue[q];
          if (sc.dead[x] != kNotifies) continue;
          for (std::uint32_t c = g.first_arc(SwitchIndex{x}); c < g.first_arc(SwitchIndex{x + 1});
               ++c) {
            const SwitchArc& arc = g.arc(c);
            if (failed(x, arc.local_port)) continue;  // the notification cannot cross it
            const std::uint32_t m = arc.to.value;
            if (m == t || !plan.notify(SwitchIndex{x}).test(arc.local_port)) continue;
            if (sc.removed[m].none() && sc.dead[m] == 0) sc.touched.push_back(m);
            sc.removed[m].set(arc.remote_port);
            if (sc.dead[m] != 0) continue;
            sc.dead[m] = fate(m);
            if (sc.dead[m] == kAlive) continue;
            sc.depth[m] = sc.depth[x] + 1;
            sc.queue.push_back(m);
          }
        }
        // Switches still physically connected to t whose traffic for t is
        // lost are gaps: a stranded or silent switch with CAs, and a live
        // switch that still sends t into one (not notified: no notify port
        // towards it, or a silent one never notifies).
        // Whether y is still connected to t without the failed link: in
        // t's part unless the link is a bridge, then on t's side of it.
        auto connected = [&](std::uint32_t y) {
          if (g.component(SwitchIndex{y}) != g.component(SwitchIndex{t})) return false;
          if (bridge[a] == 0) return true;
          if (!reach_ready) {
            // The switches on sa's side of the bridge.
            ++sc.reach_epoch;
            sc.bfs.assign(1, sa);
            sc.reach[sa] = sc.reach_epoch;
            for (std::size_t k = 0; k < sc.bfs.size(); ++k) {
              const std::uint32_t w = sc.bfs[k];
              for (std::uint32_t c = g.first_arc(SwitchIndex{w});
                   c < g.first_arc(SwitchIndex{w + 1}); ++c) {
                if (failed(w, g.arc(c).local_port)) continue;
                const std::uint32_t z = g.arc(c).to.value;
                if (sc.reach[z] != sc.reach_epoch) {
                  sc.reach[z] = sc.reach_epoch;
                  sc.bfs.push_back(z);
                }
              }
            }
            reach_ready = true;
          }
          return (sc.reach[y] == sc.reach_epoch) == (sc.reach[t] == sc.reach_epoch);
        };
        for (const std::uint32_t x : sc.queue) {
          std::uint32_t d = sc.depth[x];
          std::uint32_t cur = max_depth.load();
          while (d > cur && !max_depth.compare_exchange_weak(cur, d)) {
          }
          if (g.has_endpoints(SwitchIndex{x}) && connected(x)) {
            ++my_gaps;
            if (gap_text.empty()) {
              gap_text = fmt::format("{} has no path left to {}", check.label(x), check.label(t));
            }
          }
          const bool tells = sc.dead[x] == kNotifies;
          for (std::uint32_t c = g.first_arc(SwitchIndex{x}); c < g.first_arc(SwitchIndex{x + 1});
               ++c) {
            const SwitchArc& arc = g.arc(c);
            const std::uint32_t m = arc.to.value;
            if (m == t || sc.dead[m] != 0 || failed(x, arc.local_port)) continue;
            if (tells && plan.notify(SwitchIndex{x}).test(arc.local_port)) continue;
            if (!check.hset_switch(m, t).test(arc.remote_port) || !connected(m)) continue;
            ++my_gaps;
            if (gap_text.empty()) {
              gap_text = fmt::format("{} keeps sending traffic for {} to {}, which {}",
                                     check.label(m), check.label(t), check.label(x),
                                     tells ? "does not notify it" : "drops it (no group)");
            }
          }
        }
        stranded += sc.queue.size();
        for (const std::uint32_t x : sc.touched) {
          sc.removed[x] = PortMask{};
          sc.dead[x] = 0;
        }
        sc.touched.clear();
      }
      if (my_gaps != 0) {
        ++links_with_gaps;
        gap_pairs += my_gaps;
        std::lock_guard lock(first_mu);
        if (li < first_index) {
          first_index = li;
          report.first_gap = fmt::format("link {}[{}] -- {}[{}] failing: {}", check.label(sa), pa,
                                         check.label(sb), pb, gap_text);
        }
      }
    }
  });
  if (stop.stop_requested()) return Error{Errc::kCancelled, "failover verification cancelled"};
  report.links_with_gaps = links_with_gaps.load();
  report.gap_pairs = gap_pairs.load();
  report.stranded_pairs = stranded.load();
  report.max_notify_depth = max_depth.load();
  report.failures_seconds = seconds_since(t_fail);
  report.total_seconds = seconds_since(t_start);
  if (opts.require_coverage && report.links_with_gaps != 0) {
    return Error{Errc::kUnreachable,
                 fmt::format("fast failover would leave {} single link failures to the SM "
                             "({} pairs); first: {}",
                             report.links_with_gaps, report.gap_pairs, report.first_gap)};
  }
  return report;
}

}  // namespace subnetd::routing

// layers_bench: the VL-layered engine (routing/engines/layered.hpp) next to
// up*/down*, and minhop split into layers after the fact
// (routing/layers.hpp), on one fabric (issue 18). Per engine:
//   entries  LFT entries per switch port (Routes::load: the routes a link
//            carries, as OpenSM's minhop balances them), max and mean;
//   paths    CA-to-CA paths per directed link (every CA LID as a
//            destination from every CA), max and mean, next to two lower
//            bounds no routing's busiest link beats: lb.mean, the mean over
//            links when every path is a shortest one, and lb.cut, the
//            paths out of a switch, a clique around it or a grid's slab
//            over the links leaving it (cut_bound); max/lb divides by the
//            larger;
//   VLs used, time to route and to verify (every VL's CDG), peak RSS.
//
//   layers_bench [SPEC|NETFILE] [engines=updn,layered,minhop] [vls=8]
//                [cut=PERCENT] [seed=1] [threads=2] [lid_bits=16|17|24]
//                [lfts=DUMP] [label=NAME] [save=NET] [branches=0|1]
//
// branches=1 (the default, as the daemon's) lets the layered engine give
// a hot-spot tree's branches layers of their own (EngineOptions::
// branch_layers): routes whose SL depends on the source too, each
// source's traffic verified on its layer. branches=0: one layer per LID.
//
// engines= takes any engine name, and layered-general (shown as
// "lay.general"): the layered engine without its grid specialisation
// (dimension-order routes on tori, meshes and hypercubes), to compare.
// SPEC defaults to random:switches=200,degree=8,hosts=8,seed=1; cut removes
// that share of the switch-to-switch links first (a degraded fabric).
// save= writes the fabric (after cut) as an ibsim net file first, so that
// another SM can route the same degraded fabric (layers_opensm.py --cut).
// lfts= measures another SM's tables on the same fabric instead of running
// engines: OpenSM's opensm-lfts.dump (or ibroute's output) of a NETFILE
// that ibsim ran, matched by node and port GUIDs (tests/bench/
// layers_opensm.py runs OpenSM's nue, dfsssp and lash that way).

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bench_util.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"
#include "routing/engine.hpp"
#include "routing/engines/layered.hpp"
#include "routing/grid_shape.hpp"
#include "routing/layers.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::routing;
using namespace subnetd::bench;

struct Args {
  std::string spec = "random:switches=200,degree=8,hosts=8,seed=1";
  std::vector<std::string> engines = {"updn", "layered", "minhop"};
  unsigned threads = 2;
  unsigned vls = 8;
  double cut = 0;
  std::uint64_t seed = 1;
  int lid_bits = 16;
  std::string lfts;   // another SM's LFT dump
  std::string label;  // its name in the table
  std::string save;   // net file to write the fabric to
  bool branches = true;
};

// Routes in our LID space from an LFT dump ("Unicast lids [..] of switch
// .. guid 0x..", then "0xLID PORT : (type portguid 0x..: ..)" or "0xLID
// PORT # type portguid 0x..: .." lines): each
// of the dump's LIDs is mapped to ours through the port GUID it names (a
// CA port's LMC range by offset from the lowest LID the dump gives it).
Result<Routes> read_lft_dump(const std::string& path, const Topology& topo, const LidMap& lids) {
  std::ifstream in(path);
  if (!in) return Error{Errc::kNotFound, fmt::format("{}: cannot open", path)};
  const std::regex header(R"(^Unicast lids .* guid (0x[0-9a-fA-F]+))");
  // ibroute: "0x0003 013 : (Switch portguid 0x..: 'rsw1')"; OpenSM's
  // opensm-lfts.dump: "0x0003 013 # Switch portguid 0x..: 'rsw1'".
  const std::regex entry(R"(^(0x[0-9a-fA-F]+)\s+(\d+)\s*[:#].*portguid (0x[0-9a-fA-F]+))");
  struct Line {
    std::uint32_t sw;
    std::uint32_t lid;
    std::uint8_t port;
    std::uint64_t port_guid;
  };
  std::vector<Line> lines;
  std::unordered_map<std::uint64_t, std::uint32_t> base;  // port GUID -> lowest dump LID
  std::uint32_t sw = UINT32_MAX;
  std::string text;
  std::smatch m;
  while (std::getline(in, text)) {
    if (std::regex_search(text, m, header)) {
      const auto node = topo.find_by_guid(Guid{std::stoull(m[1].str(), nullptr, 16)});
      sw = node && topo.node(*node).type == NodeType::kSwitch ? topo.node(*node).switch_index.value
                                                              : UINT32_MAX;
      continue;
    }
    if (sw == UINT32_MAX || !std::regex_search(text, m, entry)) continue;
    Line l{sw, static_cast<std::uint32_t>(std::stoul(m[1].str(), nullptr, 16)),
           static_cast<std::uint8_t>(std::stoul(m[2].str())), std::stoull(m[3].str(), nullptr, 16)};
    auto [it, fresh] = base.emplace(l.port_guid, l.lid);
    if (!fresh) it->second = std::min(it->second, l.lid);
    lines.push_back(l);
  }
  Routes r;
  r.engine = path;
  r.max_lid = lids.max_lid;
  r.lfts.resize(topo.num_switches());
  for (Lft& lft : r.lfts) lft.resize(lids.max_lid);
  std::size_t mapped = 0;
  for (const Line& l : lines) {
    const auto port = topo.find_by_port_guid(Guid{l.port_guid});
    if (!port) continue;
    const Lid ours = lids.base_lid(topo, port->node, port->port);
    if (ours.value == 0) continue;
    const std::uint32_t lid = ours.value + (l.lid - base[l.port_guid]);
    if (lid > lids.max_lid.value) continue;
    r.lfts[l.sw].set(Lid{lid}, l.port);
    ++mapped;
  }
  if (mapped == 0) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("{}: no entry matches this fabric's switches and ports", path)};
  }
  return r;
}

struct PathLoad {
  std::uint64_t entries_max = 0;  // LFT entries of CA LIDs per switch link
  double entries_mean = 0;
  std::uint64_t max = 0;
  double mean = 0;
  double bound = 0;  // mean with shortest paths only
  double cut = 0;    // cut_bound
};

// Every path from a CA in a set of switches to a CA outside it leaves the
// set over one of the links out of it, so some link carries at least their
// share, whatever the routing. The sets: each switch, and a clique grown
// greedily around it (its neighbours sharing the most neighbours with it
// first): a dragonfly's group, whose global links are its bottleneck. On a
// grid (`grid`, when the switches form one, with gaps or not), its slabs
// too: the switches whose coordinate in one dimension lies in an interval
// (a path's prefixes, a ring's arcs), whose faces are what binds on a mesh
// (the middle links carry every path across, whatever the routing) and on
// a torus or mesh that lost links.
double cut_bound(const SwitchGraph& g, std::span<const std::uint64_t> src, const GridShape* grid) {
  const std::uint32_t n = g.num_switches();
  std::vector<std::uint64_t> part_lids(g.num_components(), 0);
  for (std::uint32_t s = 0; s < n; ++s) part_lids[g.component(SwitchIndex{s})] += src[s];
  std::vector<std::uint32_t> mark(n, 0), common(n, 0);
  std::uint32_t epoch = 0;
  double best = 0;
  std::vector<std::uint32_t> set, cand;
  auto share = [&] {
    std::uint64_t lids = 0, links = 0;
    for (const std::uint32_t v : set) lids += src[v];
    for (const std::uint32_t v : set) {
      for (const SwitchArc& a : g.arcs(SwitchIndex{v})) links += mark[a.to.value] != epoch;
    }
    if (links == 0 || lids == 0) return;
    const std::uint64_t through = lids * (part_lids[g.component(SwitchIndex{set[0]})] - lids);
    best = std::max(best, static_cast<double>(through) / static_cast<double>(links));
  };
  auto adjacent = [&](std::uint32_t v, std::uint32_t w) {
    const auto arcs = g.arcs(SwitchIndex{v});
    return std::any_of(arcs.begin(), arcs.end(),
                       [&](const SwitchArc& a) { return a.to.value == w; });
  };
  for (std::uint32_t s = 0; s < n; ++s) {
    ++epoch;
    set.assign(1, s);
    mark[s] = epoch;
    share();
    // Neighbours by common neighbours with s, most first.
    cand.clear();
    for (const SwitchArc& a : g.arcs(SwitchIndex{s})) {
      const std::uint32_t w = a.to.value;
      if (w == s || std::find(cand.begin(), cand.end(), w) != cand.end()) continue;
      common[w] = 0;
      for (const SwitchArc& b : g.arcs(SwitchIndex{w})) common[w] += adjacent(s, b.to.value);
      cand.push_back(w);
    }
    std::stable_sort(cand.begin(), cand.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return common[a] > common[b]; });
    for (const std::uint32_t w : cand) {
      if (!std::all_of(set.begin(), set.end(), [&](std::uint32_t v) { return adjacent(v, w); })) {
        continue;
      }
      set.push_back(w);
      mark[w] = epoch;
    }
    if (set.size() > 1) share();
  }
  if (grid == nullptr) return best;
  for (std::uint32_t d = 0; d < grid->dims(); ++d) {
    const std::uint32_t size = grid->size[d];
    // [first, first + len) along d, modulo size on a ring.
    for (std::uint32_t len = 1; len < size; ++len) {
      for (std::uint32_t first = 0; first < (grid->wrap[d] != 0 ? size : 1); ++first) {
        ++epoch;
        set.clear();
        for (std::uint32_t s = 0; s < n; ++s) {
          if ((grid->at(SwitchIndex{s}, d) + size - first) % size < len) {
            set.push_back(s);
            mark[s] = epoch;
          }
        }
        // One component: a grid with gaps may not be, and then a slab's
        // paths out are not all across its faces.
        if (!set.empty() && g.num_components() == 1) share();
      }
    }
  }
  return best;
}

// Paths per directed switch link: from every switch, weighted by its CA
// LIDs (`src`), to every CA LID of its part, following the LFTs; `cut`
// is cut_bound's, the same for every engine run.
PathLoad path_load(const SwitchGraph& g, const Routes& routes, std::span<const std::uint64_t> src,
                   double cut) {
  const std::uint32_t n = g.num_switches();
  std::vector<std::uint64_t> per_arc(g.num_arcs(), 0), entries(g.num_arcs(), 0);
  std::uint64_t shortest_total = 0;
  std::vector<std::uint32_t> dist_cache;
  std::uint32_t cached_for = UINT32_MAX;
  for (std::uint32_t l = 1; l <= g.max_lid().value; ++l) {
    const LidAttachment a = g.attachment(Lid{l});
    if (!a.routable() || a.port == 0) continue;
    if (cached_for != a.sw.value) {
      const SwitchIndex t = a.sw;
      dist_cache = hops_to_nearest(g, std::span<const SwitchIndex>(&t, 1));
      cached_for = a.sw.value;
    }
    for (std::uint32_t s = 0; s < n; ++s) {
      const std::uint32_t first = g.arc_at_port(SwitchIndex{s}, routes.lfts[s].get(Lid{l}));
      if (first != kNoArc) ++entries[first];
      if (src[s] == 0 || dist_cache[s] == kUnreached) continue;
      shortest_total += src[s] * dist_cache[s];
      std::uint32_t cur = s;
      for (std::uint32_t hops = 0; cur != a.sw.value && hops <= n; ++hops) {
        const std::uint32_t arc = g.arc_at_port(SwitchIndex{cur}, routes.lfts[cur].get(Lid{l}));
        if (arc == kNoArc) break;
        per_arc[arc] += src[s];
        cur = g.arc(arc).to.value;
      }
    }
  }
  PathLoad p;
  p.cut = cut;
  std::uint64_t total = 0;
  for (const std::uint64_t x : per_arc) {
    p.max = std::max(p.max, x);
    total += x;
  }
  std::uint64_t entries_total = 0;
  for (const std::uint64_t x : entries) {
    p.entries_max = std::max(p.entries_max, x);
    entries_total += x;
  }
  if (g.num_arcs() != 0) {
    p.entries_mean = static_cast<double>(entries_total) / g.num_arcs();
    p.mean = static_cast<double>(total) / g.num_arcs();
    p.bound = static_cast<double>(shortest_total) / g.num_arcs();
  }
  return p;
}

int run(const Args& a) {
  auto topo = load_fabric(a.spec);
  if (!topo.ok()) return fail("topology", topo.error());
  const std::size_t cut = a.cut > 0 ? cut_switch_links(*topo, a.cut, a.seed) : 0;
  if (!a.save.empty()) {
    if (auto saved = discovery::topo::save_netfile(*topo, a.save); !saved.ok()) {
      return fail("save", saved.error());
    }
  }
  LidAssignOptions lopts;
  lopts.space = *LidSpace::from_bits(a.lid_bits);
  auto lids = assign_lids(*topo, lopts);
  if (!lids.ok()) return fail("LIDs", lids.error());
  auto g = SwitchGraph::build(*topo, lids->map);
  if (!g.ok()) return fail("switch graph", g.error());
  WorkerPool pool(a.threads);
  std::vector<std::uint64_t> src(g->num_switches(), 0);
  for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
    const LidAttachment att = g->attachment(Lid{l});
    if (att.routable() && att.port != 0) ++src[att.sw.value];
  }
  Result<GridShape> grid = grid_shape_with_gaps(*topo, *g, g->num_arcs());
  const double cut_lb = cut_bound(*g, src, grid.ok() ? &*grid : nullptr);
  std::printf("layers_bench %s: %zu switches, %zu CAs, %zu links cut, vls=%u\n", a.spec.c_str(),
              topo->num_switches(), topo->num_cas(), cut, a.vls);
  std::printf("%-11s %8s %8s %9s %9s %9s %9s %6s %4s %8s %8s  %s\n", "engine", "entr.max",
              "entr.mean", "paths.max", "paths.mean", "lb.mean", "lb.cut", "max/lb", "VLs",
              "route s", "verify s", "verdict");
  const std::vector<std::string> runs =
      a.lfts.empty() ? a.engines : std::vector<std::string>{a.label.empty() ? "dump" : a.label};
  for (const std::string& name : runs) {
    reset_peak_rss();
    auto t0 = Clock::now();
    Result<Routes> routes = Error{Errc::kInternal, "not routed"};
    if (!a.lfts.empty()) {
      routes = read_lft_dump(a.lfts, *topo, lids->map);
    } else {
      EngineOptions eopts;
      eopts.max_vls = static_cast<std::uint8_t>(a.vls);
      eopts.branch_layers = a.branches;
      if (name == "layered-general") {
        routes = layered_general_routes(*topo, lids->map, eopts, pool, {});
      } else {
        auto engine = make_engine(name);
        if (!engine.ok()) return fail(name, engine.error());
        routes = (*engine)->compute(*topo, lids->map, eopts, pool, {});
      }
    }
    if (!routes.ok()) return fail(name, routes.error());
    const double t_route = a.lfts.empty() ? seconds_since(t0) : 0.0;
    const double rss = peak_rss_mib();
    std::string label = name == "layered-general" ? "lay.general" : name;
    std::string verdict;
    if (!a.lfts.empty()) {
      // Its SLs are not in the dump: no layers, no CDG verdict here.
      verdict = "balance only (the SM's SLs are not in the dump)";
    } else if (name == "minhop") {
      // Shortest paths, split into layers afterwards (first fit).
      label = "minhop+VLs";
      auto layers = assign_layers(*topo, lids->map, *routes,
                                  LayerOptions{static_cast<std::uint8_t>(a.vls)}, {});
      if (layers.ok()) {
        routes->num_vls = layers->layers;
        routes->lid_layer = std::move(layers->lid_layer);
      } else {
        verdict = layers.error().message;
      }
    }
    t0 = Clock::now();
    if (verdict.empty()) {
      auto v = verify(*topo, lids->map, *routes, pool, {});
      verdict = v.ok() ? "deadlock-free" : v.error().message;
    }
    const double t_verify = seconds_since(t0);
    const PathLoad p = path_load(*g, *routes, src, cut_lb);
    const double lb = std::max(p.bound, p.cut);
    std::printf("%-11s %8llu %8.1f %9llu %9.1f %9.1f %9.1f %6.2f %4u %8.3f %8.3f  %s\n",
                label.c_str(), static_cast<unsigned long long>(p.entries_max), p.entries_mean,
                static_cast<unsigned long long>(p.max), p.mean, p.bound, p.cut,
                lb > 0 ? static_cast<double>(p.max) / lb : 0.0, unsigned{routes->num_vls}, t_route,
                t_verify, verdict.c_str());
    for (const std::string& note : routes->notes) std::printf("    %s\n", note.c_str());
    std::printf("    peak RSS while routing %.0f MiB\n", rss);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Args a;
  for (int i = 1; i < argc; ++i) {
    const Arg arg = split_arg(argv[i]);
    bool ok = true;
    if (arg.key.empty()) {
      a.spec = arg.value;
    } else if (arg.key == "engines") {
      a.engines = split_list(arg.value);
      ok = !a.engines.empty();
    } else if (arg.key == "threads") {
      ok = parse_value(arg.value, a.threads) && a.threads > 0;
    } else if (arg.key == "vls") {
      ok = parse_value(arg.value, a.vls) && a.vls >= 1 && a.vls <= 15;
    } else if (arg.key == "cut") {
      ok = parse_value(arg.value, a.cut) && a.cut >= 0 && a.cut < 100;
    } else if (arg.key == "seed") {
      ok = parse_value(arg.value, a.seed);
    } else if (arg.key == "lfts") {
      a.lfts = arg.value;
    } else if (arg.key == "label") {
      a.label = arg.value;
    } else if (arg.key == "save") {
      a.save = arg.value;
    } else if (arg.key == "branches") {
      unsigned on = 0;
      ok = parse_value(arg.value, on) && on <= 1;
      a.branches = on == 1;
    } else if (arg.key == "lid_bits") {
      ok = parse_value(arg.value, a.lid_bits);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", argv[i]);
      return 2;
    }
  }
  return run(a);
}

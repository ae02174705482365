// Fat-tree routing at scale: route a fabric with ftree and updn, verify the
// tables, and print route time, verify time, peak RSS and routes per link
// (max, mean, ideal) — on the intact fabric and with a share of its
// switch-to-switch links removed; or the cost curve over k.
//
//   ftree_scale_bench [FABRIC] [threads=2] [lid_bits=16|17|24] [engines=ftree,updn]
//                     [cuts=0,1,5] [seed=1] [verify=1] [phases=0]
//   ftree_scale_bench curve [ks=16,24,36,48,64,80] [threads=2] [engines=ftree]
//
// FABRIC is a generator spec or an ibnetdiscover net file (default
// fat-tree:levels=3,k=80). cuts= lists percentages of the switch-to-switch
// links to remove, chosen with mt19937_64(seed) over the links in switch
// order (the same links for every engine). lid_bits defaults to the smallest
// space that holds the fabric. Peak RSS is the process's high-water mark
// during that engine's route + verify (reset before each run through
// /proc/self/clear_refs), so it includes the fabric itself. phases=1 also
// times ftree's graph, shape and hop-table phases on their own.
// tests/bench/README.md has the commands behind the published figures.

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"
#include "routing/engine.hpp"
#include "routing/engines/ftree.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/verifier.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::routing;
using namespace subnetd::bench;

int lid_bits_for(const Topology& topo, int requested) {
  if (requested != 0) return requested;
  std::size_t ports = 0;
  for (const Node& n : topo.nodes()) ports += n.type == NodeType::kSwitch ? 1 : n.num_ports;
  return ports <= 0xBFFF ? 16 : ports <= 0x1BFFF ? 17 : 24;
}

struct RunFigures {
  double route_s = 0, verify_s = 0, rss_mib = 0;
  bool verified = false;
  std::string verdict;
  LinkLoad load;
  std::string engine;
  std::vector<std::string> notes;
};

RunFigures run(std::string_view engine_name, const Topology& topo, const LidMap& lids,
               WorkerPool& pool, bool do_verify) {
  RunFigures f;
  reset_peak_rss();
  auto engine = make_engine(engine_name);
  if (!engine.ok()) {
    f.verdict = engine.error().message;
    return f;
  }
  const auto t0 = Clock::now();
  auto routes = (*engine)->compute(topo, lids, {}, pool, {});
  f.route_s = seconds_since(t0);
  if (!routes.ok()) {
    f.verdict = fmt::format("route failed: {}: {}", errc_name(routes.error().code),
                            routes.error().message.substr(0, 300));
    f.rss_mib = peak_rss_mib();
    return f;
  }
  f.load = routes->load;
  f.engine = routes->engine;
  f.notes = routes->notes;
  if (do_verify) {
    const auto t1 = Clock::now();
    auto v = verify(topo, lids, *routes, pool, {});
    f.verify_s = seconds_since(t1);
    f.verified = v.ok();
    f.verdict =
        v.ok() ? "ok"
               : fmt::format("{}: {}", errc_name(v.error().code), v.error().message.substr(0, 300));
  }
  f.rss_mib = peak_rss_mib();
  return f;
}

// ftree's phases on their own: graph, shape, layout (hop tables), the rest
// (destination grouping and the LFT fill) is route time minus these.
void print_ftree_phases(const Topology& topo, const LidMap& lids, WorkerPool& pool) {
  const auto t0 = Clock::now();
  auto g = SwitchGraph::build(topo, lids);
  if (!g.ok()) return;
  const double t_graph = seconds_since(t0);
  const auto t1 = Clock::now();
  FatTreeShape shape = fat_tree_shape(topo, *g);
  const double t_shape = seconds_since(t1);
  const auto t2 = Clock::now();
  FtreeTables tables;
  auto layout = ftree_layout(topo, *g, shape, pool, {}, tables);
  const double t_layout = seconds_since(t2);
  if (!layout.ok()) return;
  fmt::print(
      "  ftree phases: graph {:.3f} s, shape {:.3f} s ({} levels), hop tables {:.3f} s ({}, {} "
      "switch pairs on shortest paths)\n",
      t_graph, t_shape, shape.num_levels, t_layout,
      layout->level_order ? "level order" : "connected order", layout->switch_pairs_off_updown);
}

void print_run(std::string_view label, const RunFigures& f) {
  fmt::print(
      "  {:<14} route {:7.3f} s  verify {:7.3f} s  peak RSS {:6.0f} MiB  routes/link max {} "
      "mean {:.1f} ideal {:.1f}  {}\n",
      label, f.route_s, f.verify_s, f.rss_mib, f.load.max_routes, f.load.mean_routes,
      f.load.ideal_max_routes, f.verdict);
  for (const std::string& n : f.notes) fmt::print("    note: {}\n", n);
  std::fflush(stdout);
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [FABRIC] [threads=N] [lid_bits=16|17|24] [engines=ftree,updn] "
               "[cuts=0,1,5] [seed=S] [verify=0|1] [phases=0|1]\n"
               "       %s curve [ks=16,24,36,48,64,80] [threads=N] [engines=ftree]\n",
               argv0, argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string fabric = "fat-tree:levels=3,k=80";
  bool curve = false;
  unsigned threads = 2;
  int lid_bits = 0;
  std::vector<std::string> engines;
  std::vector<std::string> cuts = {"0", "1", "5"};
  std::vector<std::string> ks = {"16", "24", "36", "48", "64", "80"};
  std::uint64_t seed = 1;
  bool do_verify = true;
  bool phases = false;
  for (int i = 1; i < argc; ++i) {
    const auto [key, val] = split_arg(argv[i]);
    bool ok = true;
    if (key.empty()) {
      if (val == "curve") {
        curve = true;
      } else {
        fabric = val;
      }
    } else if (key == "threads") {
      ok = parse_value(val, threads);
    } else if (key == "lid_bits") {
      ok = parse_value(val, lid_bits);
    } else if (key == "engines") {
      engines = split_list(val);
    } else if (key == "cuts") {
      cuts = split_list(val);
    } else if (key == "ks") {
      ks = split_list(val);
    } else if (key == "seed") {
      ok = parse_value(val, seed);
    } else if (key == "verify") {
      ok = parse_value(val, do_verify);
    } else if (key == "phases") {
      ok = parse_value(val, phases);
    } else {
      ok = false;
    }
    if (!ok) return usage(argv[0]);
  }
  if (lid_bits != 0 && !LidSpace::from_bits(lid_bits)) return usage(argv[0]);
  WorkerPool pool(threads);

  if (curve) {
    if (engines.empty()) engines = {"ftree"};
    fmt::print("cost curve, fat-tree:levels=3,k=K, {} threads\n", threads);
    fmt::print("{:>4} {:>8} {:>8} {:>7}  {:<7} {:>9} {:>9} {:>9}  {}\n", "k", "switches", "CAs",
               "LIDs", "engine", "route s", "verify s", "RSS MiB", "routes/link max/ideal");
    for (const std::string& k : ks) {
      const std::string spec = "fat-tree:levels=3,k=" + k;
      auto topo = discovery::topo::generate(spec);
      if (!topo.ok()) {
        fmt::print(stderr, "{}: {}\n", spec, topo.error().message);
        return 1;
      }
      LidAssignOptions lopts;
      lopts.space = LidSpace{lid_bits_for(*topo, lid_bits)};
      auto lids = assign_lids(*topo, lopts);
      if (!lids.ok()) {
        fmt::print(stderr, "{}: {}\n", spec, lids.error().message);
        return 1;
      }
      for (const std::string& e : engines) {
        const RunFigures f = run(e, *topo, lids->map, pool, do_verify);
        fmt::print("{:>4} {:>8} {:>8} {:>7}  {:<7} {:>9.3f} {:>9.3f} {:>9.0f}  {}/{:.1f} {}\n", k,
                   topo->num_switches(), topo->num_cas(), lids->lids_used, e, f.route_s, f.verify_s,
                   f.rss_mib, f.load.max_routes, f.load.ideal_max_routes, f.verdict);
        std::fflush(stdout);
      }
    }
    return 0;
  }

  if (engines.empty()) engines = {"ftree", "updn"};
  for (const std::string& cut : cuts) {
    const auto t0 = Clock::now();
    auto topo = load_fabric(fabric);
    if (!topo.ok()) {
      fmt::print(stderr, "{}: {}\n", fabric, topo.error().message);
      return 1;
    }
    const double t_load = seconds_since(t0);
    double percent = 0;
    if (!parse_value(cut, percent)) return usage(argv[0]);
    const std::size_t removed = percent > 0 ? cut_switch_links(*topo, percent, seed) : 0;
    LidAssignOptions lopts;
    lopts.space = LidSpace{lid_bits_for(*topo, lid_bits)};
    const auto t1 = Clock::now();
    auto lids = assign_lids(*topo, lopts);
    if (!lids.ok()) {
      fmt::print(stderr, "{}: {}\n", fabric, lids.error().message);
      return 1;
    }
    fmt::print(
        "{}: {} switches, {} CAs, {} LIDs ({}-bit), {} links, {} switch links removed ({}% , "
        "seed {}); load {:.3f} s, LIDs {:.3f} s, {} threads\n",
        fabric, topo->num_switches(), topo->num_cas(), lids->lids_used, lopts.space.bits,
        topo->num_links(), removed, cut, seed, t_load, seconds_since(t1), threads);
    for (const std::string& e : engines) {
      const RunFigures f = run(e, *topo, lids->map, pool, do_verify);
      print_run(f.engine.empty() || f.engine == e ? e : e + "->" + f.engine, f);
      if (e == "ftree" && phases) print_ftree_phases(*topo, lids->map, pool);
    }
  }
  return 0;
}

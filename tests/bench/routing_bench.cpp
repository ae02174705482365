// Routing benchmark: route a generated fabric with minhop and updn, verify the
// tables, and print the time of each phase, peak RSS and routes per link.
//
//   routing_bench [SPEC] [THREADS] [engines=minhop,updn] [cut=PERCENT] [seed=S]
//                 [lid_bits=16|17|24] [switch_traffic=0|1]
//
// SPEC defaults to fat-tree:levels=3,k=24, THREADS to 2. cut= removes that
// percentage of the switch-to-switch links, chosen with mt19937_64(seed).
// lid_bits defaults to the smallest space that holds the fabric.
// Example: routing_bench fat-tree:levels=3,k=36 2

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engines/updn.hpp"
#include "routing/hop_table.hpp"
#include "routing/lft_fill.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::routing;
using namespace subnetd::bench;

// Runs one engine through its phases (the same sequence as its compute()),
// timing each, then verifies.
int run_engine(std::string_view engine, const Topology& topo, const LidMap& lids, WorkerPool& pool,
               bool switch_traffic) {
  const auto t0 = Clock::now();
  auto g = SwitchGraph::build(topo, lids);
  if (!g.ok()) return fail("switch graph", g.error());
  const double t_graph = seconds_since(t0);

  auto t1 = Clock::now();
  UpDownOrder order;
  double t_order = 0;
  Result<HopTable> hops = Error{Errc::kInternal, "unset"};
  if (engine == "updn") {
    auto o = updn_order(topo, *g, {}, pool, {});
    if (!o.ok()) return fail("updn order", o.error());
    order = std::move(o).value();
    t_order = seconds_since(t1);
    t1 = Clock::now();
    hops = updown_hops(*g, order.pos, pool, {});
  } else {
    hops = shortest_hops(*g, pool, {});
  }
  if (!hops.ok()) return fail("hop table", hops.error());
  const double t_hops = seconds_since(t1);

  const auto t2 = Clock::now();
  auto routes = fill_balanced_lfts(
      topo, *g, *hops, engine == "updn" ? CandidateRule::kUpDown : CandidateRule::kShortest,
      order.pos, pool, {});
  if (!routes.ok()) return fail("lft fill", routes.error());
  routes->engine = std::string(engine);
  const double t_fill = seconds_since(t2);
  const double t_route = seconds_since(t0);
  const double rss_route = peak_rss_mib();

  const auto t3 = Clock::now();
  VerifyOptions vopts;
  vopts.switch_traffic = switch_traffic;
  auto v = verify(topo, lids, *routes, vopts, pool, {});
  const double t_verify = seconds_since(t3);
  fmt::print(
      "{:<7} route {:7.3f} s (graph {:.3f}, order {:.3f}, hops {:.3f}, fill {:.3f})  "
      "routes/link max {} mean {:.1f}  peak RSS {:.0f} MiB\n",
      engine, t_route, t_graph, t_order, t_hops, t_fill, routes->load.max_routes,
      routes->load.mean_routes, rss_route);
  if (v.ok()) {
    fmt::print(
        "{:<7} verify {:6.3f} s (tables {:.3f}, cdg {:.3f}): ok, {} pairs, {} channels, "
        "{} dependencies  peak RSS {:.0f} MiB\n",
        engine, t_verify, v->tables_seconds, v->cdg_seconds, v->pairs_checked, v->channels,
        v->dependencies, peak_rss_mib());
  } else {
    std::string msg = v.error().message;
    if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
    fmt::print("{:<7} verify {:6.3f} s: {}: {}\n", engine, t_verify, errc_name(v.error().code),
               msg);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec = "fat-tree:levels=3,k=24";
  unsigned threads = 2;
  std::vector<std::string> engines = {"minhop", "updn"};
  double cut_percent = 0;
  std::uint64_t seed = 1;
  int lid_bits = 0;
  bool switch_traffic = false;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const auto [key, val] = split_arg(argv[i]);
    bool ok = true;
    if (key == "engines") {
      engines = split_list(val);
    } else if (key == "cut") {
      ok = parse_value(val, cut_percent);
    } else if (key == "seed") {
      ok = parse_value(val, seed);
    } else if (key == "lid_bits") {
      ok = parse_value(val, lid_bits);
    } else if (key == "switch_traffic") {
      ok = parse_value(val, switch_traffic);
    } else if (!key.empty()) {
      ok = false;
    } else if (positional == 0 && val.find(':') != std::string::npos) {
      spec = val;
      positional = 1;
    } else {
      ok = positional <= 1 && parse_value(val, threads);
      positional = 2;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "usage: %s [SPEC] [THREADS] [engines=minhop,updn] [cut=PERCENT] [seed=S] "
                   "[lid_bits=16|17|24] [switch_traffic=0|1]\n",
                   argv[0]);
      return 2;
    }
  }

  const auto t0 = Clock::now();
  auto topo = discovery::topo::generate(spec);
  if (!topo.ok()) return fail("generate", topo.error());
  const double t_gen = seconds_since(t0);

  const std::size_t cut = cut_percent > 0 ? cut_switch_links(*topo, cut_percent, seed) : 0;

  const std::size_t endpoints = topo->num_cas();
  if (lid_bits == 0) {
    const std::size_t need = topo->num_switches() + endpoints * 2;  // CA ports: upper bound
    lid_bits = need <= 0xBFFF ? 16 : need <= 0x1BFFF ? 17 : 24;
  }
  const auto t1 = Clock::now();
  LidAssignOptions lopts;
  lopts.space = LidSpace{lid_bits};
  auto lids = assign_lids(*topo, lopts);
  if (!lids.ok()) return fail("assign_lids", lids.error());
  const double t_lids = seconds_since(t1);

  fmt::print("{}: {} switches, {} CAs, {} LIDs ({}-bit), {} links{}; {} threads\n", spec,
             topo->num_switches(), endpoints, lids->map.max_lid.value, lid_bits, topo->num_links(),
             cut ? fmt::format(" after cutting {} (seed {})", cut, seed) : "", threads);
  fmt::print("generate {:.3f} s, assign LIDs {:.3f} s\n", t_gen, t_lids);

  WorkerPool pool(threads);
  for (const std::string& e : engines) {
    if (e != "minhop" && e != "updn") {
      std::fprintf(stderr, "unknown engine %s (minhop, updn)\n", e.c_str());
      return 2;
    }
    if (int rc = run_engine(e, *topo, lids->map, pool, switch_traffic); rc != 0) return rc;
  }
  return 0;
}

// layered_repair_bench: a link failure under layered routes, repaired in
// the layers (routing/engines/layered_repair.hpp) next to routing afresh
// (issue 18, item 5). Per failure: the time to repair and to verify it,
// the LIDs kept / re-attached / on a new tree / moved to another layer
// (SL), the busiest link's LFT entries; then the full recompute's time,
// its busiest link, and how many LIDs it moves to another layer under the
// hosts' feet.
//
//   layered_repair_bench [SPEC] [vls=8] [fail=3] [rounds=3] [seed=1]
//                        [threads=2]
//
// Each round cuts `fail` more switch links (seeded) from the fabric the
// last round left, and repairs the last round's routes.

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "bench_util.hpp"
#include "routing/engines/layered.hpp"
#include "routing/engines/layered_repair.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/verifier.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::routing;
using namespace subnetd::bench;

struct Args {
  std::string spec = "random:switches=200,degree=8,hosts=8,seed=1";
  unsigned vls = 8;
  unsigned fail = 3;
  unsigned rounds = 3;
  std::uint64_t seed = 1;
  unsigned threads = 2;
};

int run(const Args& a) {
  auto topo = load_fabric(a.spec);
  if (!topo.ok()) return fail("topology", topo.error());
  auto lids = assign_lids(*topo, LidAssignOptions{});
  if (!lids.ok()) return fail("LIDs", lids.error());
  WorkerPool pool(a.threads);
  EngineOptions opts;
  opts.max_vls = static_cast<std::uint8_t>(a.vls);
  auto t0 = Clock::now();
  auto first = LayeredEngine{}.compute(*topo, lids->map, opts, pool, {});
  if (!first.ok()) return fail("layered", first.error());
  std::printf("layered_repair_bench %s: %zu switches, %zu CAs, vls=%u: routed in %.3f s, %u VLs\n",
              a.spec.c_str(), topo->num_switches(), topo->num_cas(), a.vls, seconds_since(t0),
              first->num_vls);
  std::printf("%-6s %6s %9s %8s %8s %6s %6s %9s %9s %9s %9s %9s %8s\n", "round", "links",
              "repair s", "kept", "reatt.", "trees", "moved", "verify s", "entr.max", "afresh s",
              "afr.entr", "afr.moved", "verdict");
  Topology before = *topo;
  Routes prev = std::move(first).value();
  std::mt19937_64 rng(a.seed);
  for (unsigned round = 1; round <= a.rounds; ++round) {
    Topology now = before;
    std::vector<PortRef> links = switch_links(now);
    std::shuffle(links.begin(), links.end(), rng);
    for (unsigned i = 0; i < a.fail && i < links.size(); ++i) now.disconnect(links[i]);
    LayeredRepairStats st;
    t0 = Clock::now();
    auto repaired = repair_layered(now, lids->map, before, prev, opts, {}, &st);
    const double repair_s = seconds_since(t0);
    t0 = Clock::now();
    auto fresh = LayeredEngine{}.compute(now, lids->map, opts, pool, {});
    const double fresh_s = seconds_since(t0);
    if (!fresh.ok()) return fail("layered afresh", fresh.error());
    std::uint64_t moved = 0;
    for (std::uint32_t l = 1; l <= lids->map.max_lid.value; ++l) {
      if (fresh->layer(Lid{l}) != prev.layer(Lid{l})) ++moved;
    }
    if (!repaired.ok()) {
      std::printf("%-6u %6u %9.4f  refused: %s (afresh %.3f s, moves %llu LIDs)\n", round, a.fail,
                  repair_s, repaired.error().message.c_str(), fresh_s,
                  static_cast<unsigned long long>(moved));
      prev = std::move(fresh).value();
      before = std::move(now);
      continue;
    }
    t0 = Clock::now();
    auto verdict = verify(now, lids->map, *repaired, pool, {});
    const double verify_s = seconds_since(t0);
    std::printf("%-6u %6u %9.4f %8llu %8llu %6llu %6llu %9.4f %9llu %9.3f %9llu %9llu %8s\n", round,
                a.fail, repair_s, static_cast<unsigned long long>(st.lids_kept),
                static_cast<unsigned long long>(st.lids_regrown),
                static_cast<unsigned long long>(st.trees_regrown),
                static_cast<unsigned long long>(st.lids_moved), verify_s,
                static_cast<unsigned long long>(repaired->load.max_routes), fresh_s,
                static_cast<unsigned long long>(fresh->load.max_routes),
                static_cast<unsigned long long>(moved),
                verdict.ok() ? "ok" : verdict.error().message.c_str());
    if (!verdict.ok()) return 1;
    prev = std::move(repaired).value();
    before = std::move(now);
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
    } else if (arg.key == "vls") {
      ok = parse_value(arg.value, a.vls) && a.vls >= 2 && a.vls <= 15;
    } else if (arg.key == "fail") {
      ok = parse_value(arg.value, a.fail) && a.fail > 0;
    } else if (arg.key == "rounds") {
      ok = parse_value(arg.value, a.rounds) && a.rounds > 0;
    } else if (arg.key == "seed") {
      ok = parse_value(arg.value, a.seed);
    } else if (arg.key == "threads") {
      ok = parse_value(arg.value, a.threads) && a.threads > 0;
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

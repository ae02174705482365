// layered_repair_bench: a link failure under layered routes, repaired in
// the layers (routing/engines/layered_repair.hpp) next to routing afresh
// (issue 18, item 5). Per failure: the time to repair and to verify it,
// the LIDs kept / re-attached / on a new tree / moved to another layer
// (SL), the hot-spot moves, the searches for a cycle its new trees gave
// up at the grower's cap ("capped"), the LFT blocks whose entries changed
// (what diff-only programming writes), the CA-to-CA paths on the busiest
// link; then the full recompute's time, its busiest link, and how many
// LIDs it moves to another layer under the hosts' feet.
//
//   layered_repair_bench [SPEC] [vls=8] [fail=3] [rounds=3] [seed=1]
//                        [threads=2] [balance=layer|broken]
//
// balance= is the repair's RepairBalance: layer (the daemon's: hot spots
// spread in each LID's layer) or broken (the broken routes only).
//
// Each round cuts `fail` more switch links (seeded) from the fabric the
// last round left, and repairs the last round's routes.

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "bench_util.hpp"
#include "routing/engines/layered.hpp"
#include "routing/engines/layered_repair.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/switch_graph.hpp"
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
  RepairBalance balance = RepairBalance::kHotSpotsInLayer;
};

// CA-to-CA paths on the busiest switch-to-switch link (every CA/router
// LID a destination from every other, each route walked).
std::uint64_t busiest_paths(const Topology& topo, const LidMap& lids, const Routes& r) {
  auto g = SwitchGraph::build(topo, lids);
  if (!g.ok()) return 0;
  const std::uint32_t n = g->num_switches();
  std::vector<std::uint64_t> src(n, 0), load(g->num_arcs(), 0);
  for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
    const LidAttachment att = g->attachment(Lid{l});
    if (att.routable() && att.port != 0) ++src[att.sw.value];
  }
  for (std::uint32_t l = 1; l <= g->max_lid().value; ++l) {
    const LidAttachment att = g->attachment(Lid{l});
    if (!att.routable() || att.port == 0) continue;
    for (std::uint32_t s = 0; s < n; ++s) {
      std::uint32_t cur = s;
      for (std::uint32_t hops = 0; src[s] != 0 && cur != att.sw.value && hops <= n; ++hops) {
        const std::uint32_t a = g->arc_at_port(SwitchIndex{cur}, r.lfts[cur].get(Lid{l}));
        if (a == kNoArc) break;
        load[a] += src[s];
        cur = g->arc(a).to.value;
      }
    }
  }
  return load.empty() ? 0 : *std::max_element(load.begin(), load.end());
}

// LFT blocks (64 LIDs) of any switch in which `a` and `b` differ: the
// blocks diff-only programming writes (switch indices alike: the bench
// only removes links).
std::uint64_t blocks_changed(const Routes& a, const Routes& b) {
  std::uint64_t blocks = 0;
  const std::uint32_t top = std::max(a.max_lid.value, b.max_lid.value);
  for (std::size_t s = 0; s < a.lfts.size() && s < b.lfts.size(); ++s) {
    for (std::uint32_t first = 0; first <= top; first += kLftBlockSize) {
      for (std::uint32_t lid = first; lid < first + kLftBlockSize && lid <= top; ++lid) {
        if (a.lfts[s].get(Lid{lid}) != b.lfts[s].get(Lid{lid})) {
          ++blocks;
          break;
        }
      }
    }
  }
  return blocks;
}

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
  std::printf("%-6s %6s %9s %8s %8s %6s %6s %6s %7s %8s %9s %9s %9s %9s %9s %8s\n", "round",
              "links", "repair s", "kept", "reatt.", "trees", "moved", "hot", "capped", "blocks",
              "verify s", "paths.max", "afresh s", "afr.paths", "afr.moved", "verdict");
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
    auto repaired = repair_layered(now, lids->map, before, prev, opts, {}, &st, a.balance);
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
    std::printf(
        "%-6u %6u %9.4f %8llu %8llu %6llu %6llu %6llu %7llu %8llu %9.4f %9llu %9.3f %9llu "
        "%9llu %8s\n",
        round, a.fail, repair_s, static_cast<unsigned long long>(st.lids_kept),
        static_cast<unsigned long long>(st.lids_regrown),
        static_cast<unsigned long long>(st.trees_regrown),
        static_cast<unsigned long long>(st.lids_moved),
        static_cast<unsigned long long>(st.hot_spot_moves),
        static_cast<unsigned long long>(st.searches_given_up),
        static_cast<unsigned long long>(blocks_changed(prev, *repaired)), verify_s,
        static_cast<unsigned long long>(busiest_paths(now, lids->map, *repaired)), fresh_s,
        static_cast<unsigned long long>(busiest_paths(now, lids->map, *fresh)),
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
    } else if (arg.key == "balance") {
      ok = arg.value == "layer" || arg.value == "broken";
      a.balance =
          arg.value == "broken" ? RepairBalance::kBrokenOnly : RepairBalance::kHotSpotsInLayer;
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

// Fast failover benchmark (issue 14): how long the switches take to route
// around a failure by themselves, before any SM acts, and what the SM's
// stage 2 then costs.
//
//   failover_bench [SPEC] [engine=ftree|updn|auto|layered] [lid_bits=24]
//                  [links=1000] [switches=100] [seed=1] [threads=2] [stage2=1]
//                  [vls=8] [branches=1] [cut=PERCENT]
//
// SPEC defaults to fat-tree:levels=3,k=80 (8,000 switches, 128,000 CAs).
// vls: the data VLs the engine may use (EngineOptions::max_vls, 1-15): a
// torus routed by `layered` takes dateline VLs when its dimension-order
// layers need more (a 6x6x6 torus on vls=3, where 8 fit its layers).
// branches: EngineOptions::branch_layers (layered: a layer per branch of
// a hot-spot tree, the SL per source; 0 = one layer per LID).
// cut: that share of the switch links disconnected before routing
// (cut_switch_links with `seed`, as layers_bench's cut=): a torus with
// gaps is routed as one, repaired in boxes or on datelines.
//  1. The fabric is generated, given LIDs, routed by `engine` and programmed
//     into the simulator (with its latency model) by SMP, ports ACTIVE.
//  2. The SM's failover plan (routing/failover_plan.hpp) is computed and
//     checked by the failover verifier (routing/failover_verify.hpp): CDG
//     over every group port, and every single link failure settled.
//  3. The plan is armed on every simulated switch (directly: the tests show
//     the vendor SMPs arm the same tables).
//  4. `links` random switch-to-switch link failures (uniform over the links;
//     reported by link class, "L<a>-L<b>" = the two ends' levels, a level
//     being hops from the nearest switch with CAs) and `switches` random
//     switch failures (every link of the switch at once; its CAs are cut
//     off). Per failure: data-plane recovery = from the link going down to
//     the last detection or notification that changed some switch's
//     forwarding (simulated time); switches that changed; notifications
//     sent. Then the effective forwarding state is checked where it
//     differs from the LFTs (SimFabric::check_failover_forwarding): dead ends
//     and loops, and source switches that cannot reach a LID although a live
//     path exists. CDG: every state is a subset of the verified union (2).
//     The link is restored and the notification state cleared.
//  5. stage2=1: the SM's repair of the LFTs for the same failures
//     (Rerouter::repair): compute time and blocks to push, p50/p99/max.
// Prints peak RSS after each phase.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/failover_plan.hpp"
#include "routing/failover_verify.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/rerouter.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::bench;

struct Args {
  std::string spec = "fat-tree:levels=3,k=80";
  std::string engine = "ftree";
  int lid_bits = 24;
  int links = 1000;
  int switches = 100;
  std::uint64_t seed = 1;
  unsigned threads = 2;
  bool stage2 = true;
  int vls = 8;
  bool branches = true;
  double cut = 0;
};

struct Sample {
  std::string cls;
  double recovery_us = 0;
  std::uint64_t switches_changed = 0;
  std::uint64_t notifications = 0;
  std::uint64_t changed_pairs = 0;
  std::uint64_t unreachable = 0, loops = 0, dead_ends = 0, cut_off = 0;
  double stage2_ms = 0;
  std::uint64_t stage2_blocks = 0;
  bool stage2_refused = false;
};

template <class F>
void row(const char* what, const std::vector<Sample>& s, F f, const char* unit) {
  std::vector<double> x;
  for (const Sample& v : s) x.push_back(static_cast<double>(f(v)));
  std::printf("    %-30s p50 %10.3f  p99 %10.3f  max %10.3f %s\n", what, percentile(x, 0.5),
              percentile(x, 0.99), percentile(x, 1.0), unit);
}

void print_group(const std::string& name, const std::vector<Sample>& s, bool stage2) {
  std::uint64_t unreachable = 0, loops = 0, cut = 0, dead = 0;
  for (const Sample& v : s) {
    unreachable += v.unreachable;
    loops += v.loops;
    cut += v.cut_off;
    dead += v.dead_ends;
  }
  std::printf("  %s: %zu failures\n", name.c_str(), s.size());
  row(
      "data-plane recovery", s, [](const Sample& v) { return v.recovery_us; }, "us");
  row(
      "switches that changed", s, [](const Sample& v) { return v.switches_changed; }, "");
  row(
      "notifications sent", s, [](const Sample& v) { return v.notifications; }, "");
  row(
      "(switch, LID) pairs changed", s, [](const Sample& v) { return v.changed_pairs; }, "");
  std::printf(
      "    unreachable connected (source switch, LID): %llu; loops: %llu; cut-off sources: %llu; "
      "dead-end walks: %llu\n",
      static_cast<unsigned long long>(unreachable), static_cast<unsigned long long>(loops),
      static_cast<unsigned long long>(cut), static_cast<unsigned long long>(dead));
  if (stage2) {
    int refused = 0;
    for (const Sample& v : s) refused += v.stage2_refused ? 1 : 0;
    row(
        "stage 2 compute (repair)", s, [](const Sample& v) { return v.stage2_ms; }, "ms");
    row(
        "stage 2 LFT blocks to push", s, [](const Sample& v) { return v.stage2_blocks; }, "");
    std::printf("    stage 2 refused (full recompute): %d\n", refused);
  }
}

void print_rss(const char* phase) {
  std::printf("  [peak RSS after %s: %.0f MiB]\n", phase, peak_rss_mib());
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows when redirected too
  Args a;
  for (int i = 1; i < argc; ++i) {
    const Arg arg = split_arg(argv[i]);
    bool ok = true;
    if (arg.key.empty()) {
      a.spec = arg.value;
    } else if (arg.key == "engine") {
      a.engine = arg.value;
    } else if (arg.key == "lid_bits") {
      ok = parse_value(arg.value, a.lid_bits);
    } else if (arg.key == "links") {
      ok = parse_value(arg.value, a.links);
    } else if (arg.key == "switches") {
      ok = parse_value(arg.value, a.switches);
    } else if (arg.key == "seed") {
      ok = parse_value(arg.value, a.seed);
    } else if (arg.key == "threads") {
      ok = parse_value(arg.value, a.threads) && a.threads > 0;
    } else if (arg.key == "vls") {
      ok = parse_value(arg.value, a.vls) && a.vls >= 1 && a.vls <= 15;
    } else if (arg.key == "branches") {
      ok = parse_value(arg.value, a.branches);
    } else if (arg.key == "cut") {
      ok = parse_value(arg.value, a.cut) && a.cut >= 0 && a.cut < 100;
    } else if (arg.key == "stage2") {
      ok = parse_value(arg.value, a.stage2);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", argv[i]);
      return 2;
    }
  }
  std::printf(
      "failover_bench %s engine=%s lid_bits=%d links=%d switches=%d seed=%llu threads=%u "
      "vls=%d branches=%d cut=%g\n",
      a.spec.c_str(), a.engine.c_str(), a.lid_bits, a.links, a.switches,
      static_cast<unsigned long long>(a.seed), a.threads, a.vls, a.branches ? 1 : 0, a.cut);

  routing::WorkerPool pool(a.threads);
  routing::EngineOptions eo;
  eo.max_vls = static_cast<std::uint8_t>(a.vls);
  eo.branch_layers = a.branches;
  auto fabric = routed_fabric(a.spec, a.lid_bits, a.engine, pool, eo, a.cut, a.seed);
  if (!fabric.ok()) return fail("fabric", fabric.error());
  const routing::Topology& topo = fabric->topo;
  const routing::LidMap& lids = fabric->lids;
  const std::shared_ptr<const routing::Routes> routes = fabric->routes;
  print_rss("routing");
  auto t0 = Clock::now();

  // The failover plan and its verification: what the SM does before arming.
  t0 = Clock::now();
  auto plan = routing::FailoverPlan::build(topo, lids, *routes, pool);
  if (!plan.ok()) return fail("failover plan", plan.error());
  const routing::FailoverPlanStats& ps = plan->stats();
  std::printf(
      "failover plan: %.2f s; %u destination switches, %u classes, %u LIDs grouped per switch "
      "(layers per source), %llu (switch, destination) "
      "groups, %llu with an alternative, %llu narrowed; %u groups in all, at most %u on a switch; "
      "%.1f MiB\n",
      seconds_since(t0), ps.destinations, ps.classes, ps.lids_per_switch,
      static_cast<unsigned long long>(ps.pairs_grouped),
      static_cast<unsigned long long>(ps.pairs_with_alternative),
      static_cast<unsigned long long>(ps.pairs_narrowed), ps.groups, ps.max_groups,
      static_cast<double>(ps.memory_bytes) / (1 << 20));
  print_rss("the plan");
  auto verdict = routing::verify_failover(topo, lids, *routes, *plan, {}, pool);
  if (!verdict.ok()) return fail("failover verifier", verdict.error());
  const routing::FailoverVerifyReport& vr = *verdict;
  std::printf(
      "failover verifier: %.2f s (CDG %.2f s over %llu channels, %llu dependencies: acyclic; "
      "single failures %.2f s): %u links, %u leave pairs to the SM (%llu (switch, destination) "
      "pairs), %llu stranded pairs notified, deepest notification chain %u%s%s\n",
      vr.total_seconds, vr.cdg_seconds, static_cast<unsigned long long>(vr.channels),
      static_cast<unsigned long long>(vr.dependencies), vr.failures_seconds, vr.links_checked,
      vr.links_with_gaps, static_cast<unsigned long long>(vr.gap_pairs),
      static_cast<unsigned long long>(vr.stranded_pairs), vr.max_notify_depth,
      vr.first_gap.empty() ? "" : "; first: ", vr.first_gap.c_str());
  print_rss("the verifier");

  std::unique_ptr<routing::Rerouter> rerouter;
  if (a.stage2) {
    t0 = Clock::now();
    auto rb = routing::Rerouter::build(topo, lids, routes, pool);
    if (!rb.ok()) return fail("rerouter", rb.error());
    rerouter = std::move(rb).value();
    std::printf("stage 2 precompute (Rerouter::build): %.2f s, %.1f MiB\n", seconds_since(t0),
                static_cast<double>(rerouter->stats().memory_bytes) / (1 << 20));
    print_rss("the stage 2 precompute (the SM's whole state: before the simulator)");
  }

  // The simulator, programmed by SMP as a bring-up would, ports ACTIVE.
  discovery::sim::SimOptions so;
  so.lid_bits = a.lid_bits;
  so.latency = discovery::sim::LatencyModel{};
  t0 = Clock::now();
  auto programmed = programmed_sim(*fabric, so, true);
  if (!programmed.ok()) return fail("simulator", programmed.error());
  discovery::sim::SimFabric& sim = *programmed->sim;
  std::printf("simulator: built and programmed in %.1f s\n", seconds_since(t0));
  t0 = Clock::now();
  if (auto armed = sim.arm_failover(topo, *plan); !armed.ok()) return fail("arm", armed.error());
  std::printf("armed every switch in %.1f s\n", seconds_since(t0));
  const discovery::sim::LatencyModel lm{};
  std::printf(
      "latency model: detection %.1f us, notification %.1f us a hop (link %.1f + processing "
      "%.1f)\n",
      static_cast<double>(lm.failover_detect.count()) / 1e3,
      static_cast<double>((lm.hop_delay + lm.notify_processing).count()) / 1e3,
      static_cast<double>(lm.hop_delay.count()) / 1e3,
      static_cast<double>(lm.notify_processing.count()) / 1e3);
  print_rss("programming and arming");

  auto leveled = leveled_links(topo, lids);
  if (!leveled.ok()) return fail("levels", leveled.error());
  const std::vector<PortRef>& links = leveled->links;
  auto class_of = [&](const PortRef& l) { return leveled->class_of(topo, l); };

  std::mt19937_64 rng(a.seed);
  int status = 0;
  // One failure: cut every link of `cut`, let the switches settle, check,
  // time stage 2, restore.
  auto fail_once = [&](const std::vector<PortRef>& cut, Sample& s) {
    const discovery::sim::SimStats before = sim.stats();
    const auto t_down = sim.now();
    for (const PortRef& r : cut) {
      if (auto d = sim.link_down(r); !d.ok()) {
        std::fprintf(stderr, "link down: %s\n", d.error().message.c_str());
        status = 1;
      }
    }
    sim.run_for(std::chrono::microseconds{500});
    const discovery::sim::SimStats after = sim.stats();
    s.recovery_us = after.failover_last_change > t_down
                        ? static_cast<double>((after.failover_last_change - t_down).count()) / 1e3
                        : 0.0;
    s.notifications = after.notifications_sent - before.notifications_sent;
    const discovery::sim::FailoverCheck fc = sim.check_failover_forwarding();
    s.switches_changed = fc.switches_changed;
    s.changed_pairs = fc.changed;
    s.unreachable = fc.unreachable_sources;
    s.loops = fc.loops;
    s.dead_ends = fc.dead_ends;
    s.cut_off = fc.cut_off_sources;
    if ((fc.unreachable_sources != 0 || fc.loops != 0) && status == 0) {
      std::printf("  first problem: %s\n", fc.first_problem.c_str());
    }
    if (rerouter) {
      std::vector<routing::FailedLink> failed;
      for (const PortRef& r : cut) {
        const routing::Port& p = topo.port(r);
        for (const PortRef& end : {r, PortRef{p.remote_node, p.remote_port}}) {
          if (topo.node(end.node).type == routing::NodeType::kSwitch) {
            failed.push_back({topo.node(end.node).switch_index, end.port});
          }
        }
      }
      auto rep = rerouter->repair(failed);
      if (rep.ok()) {
        s.stage2_ms = std::chrono::duration<double, std::milli>(rep->t_total).count();
        s.stage2_blocks = rep->blocks.size();
        s.stage2_refused = rep->verdict != routing::RepairReport::Verdict::kRepaired;
      } else {
        s.stage2_refused = true;
      }
      rerouter->reset();
    }
    for (const PortRef& r : cut) (void)sim.restore_link(r);
    sim.clear_all_failover_state();
  };

  std::printf("\n== %d random single link failures\n", a.links);
  std::map<std::string, std::vector<Sample>> by_class;
  std::vector<Sample> all_links;
  const auto t_links = Clock::now();
  for (int i = 0; i < a.links && !links.empty(); ++i) {
    const PortRef l = links[rng() % links.size()];
    Sample s;
    s.cls = class_of(l);
    fail_once({l}, s);
    by_class[s.cls].push_back(s);
    all_links.push_back(s);
    if ((i + 1) % 100 == 0)
      std::printf("  ... %d failures, %.1f s\n", i + 1, seconds_since(t_links));
  }
  for (const auto& [cls, v] : by_class) print_group(cls, v, a.stage2);
  print_group("all links", all_links, a.stage2);
  std::printf("  (%.1f s for the runs)\n", seconds_since(t_links));

  std::printf("\n== %d random switch failures (every link of the switch)\n", a.switches);
  std::map<std::string, std::vector<Sample>> by_level;
  std::vector<Sample> all_switches;
  for (int i = 0; i < a.switches && topo.num_switches() > 0; ++i) {
    const NodeId sw =
        topo.switch_node(SwitchIndex{static_cast<std::uint32_t>(rng() % topo.num_switches())});
    std::vector<PortRef> cut;
    for (unsigned p = 1; p <= topo.node(sw).num_ports; ++p) {
      if (topo.port(sw, static_cast<PortNum>(p)).connected()) {
        cut.push_back({sw, static_cast<PortNum>(p)});
      }
    }
    Sample s;
    s.cls = fmt::format("L{} switch", leveled->level_of(topo, sw));
    fail_once(cut, s);
    by_level[s.cls].push_back(s);
    all_switches.push_back(s);
  }
  for (const auto& [cls, v] : by_level) print_group(cls, v, a.stage2);
  print_group("all switches", all_switches, a.stage2);
  print_rss("the failures");
  return status;
}

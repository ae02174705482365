// Stage-2 benchmark: the SM's repair compute alone (Rerouter::repair), with
// no simulator, by link class and for switch failures. failover_bench and
// reroute_bench time the same call inside a whole fabric; this one builds
// only the routes and the Rerouter, so that it runs in seconds at k=80 and
// a profile of it is a profile of the repair.
//
//   stage2_bench [SPEC] [engine=ftree] [lid_bits=24] [links=1000]
//                [switches=100] [seed=1] [threads=2] [repeat=1]
//
// SPEC defaults to fat-tree:levels=3,k=80. Each failure is repaired, timed,
// and undone (Rerouter::reset) before the next; `repeat` repairs each
// failure that many times (for profiles; the figures are of the last one).
// Link classes name the levels of their ends: hops from the nearest switch
// with CAs (L0 = edge). Prints p50/p99/max of the compute and its phases,
// entries changed, blocks to push, orphans, seeds and dead ends; refusals
// (full recompute) are counted.

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
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
  int repeat = 1;
};

struct Sample {
  double total_ms = 0, reach_ms = 0, seed_ms = 0, route_ms = 0, check_ms = 0;
  double changes = 0, blocks = 0, orphans = 0, seeds = 0, dead_ends = 0;
  double routes_lost = 0, moved_off = 0;
  bool refused = false;
};

template <class F>
void row(const char* what, const std::vector<Sample>& s, F f) {
  std::vector<double> x;
  for (const Sample& v : s) x.push_back(f(v));
  std::printf("    %-24s p50 %10.3f  p99 %10.3f  max %10.3f\n", what, percentile(x, 0.5),
              percentile(x, 0.99), percentile(x, 1.0));
}

void print_group(const std::string& name, const std::vector<Sample>& s) {
  int refused = 0;
  for (const Sample& v : s) refused += v.refused ? 1 : 0;
  std::printf("  %s: %zu failures, %d refused (full recompute)\n", name.c_str(), s.size(), refused);
  row("compute (ms)", s, [](const Sample& v) { return v.total_ms; });
  row("  reach (ms)", s, [](const Sample& v) { return v.reach_ms; });
  row("  seed (ms)", s, [](const Sample& v) { return v.seed_ms; });
  row("  route + fill (ms)", s, [](const Sample& v) { return v.route_ms; });
  row("  check (ms)", s, [](const Sample& v) { return v.check_ms; });
  row("entries changed", s, [](const Sample& v) { return v.changes; });
  row("blocks to push", s, [](const Sample& v) { return v.blocks; });
  row("orphan entries", s, [](const Sample& v) { return v.orphans; });
  row("seeds", s, [](const Sample& v) { return v.seeds; });
  row("dead ends", s, [](const Sample& v) { return v.dead_ends; });
  row("up*/down* routes lost", s, [](const Sample& v) { return v.routes_lost; });
  row("entries moved off them", s, [](const Sample& v) { return v.moved_off; });
}

double ms(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
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
    } else if (arg.key == "repeat") {
      ok = parse_value(arg.value, a.repeat) && a.repeat > 0;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", argv[i]);
      return 2;
    }
  }
  std::printf("stage2_bench %s engine=%s lid_bits=%d links=%d switches=%d seed=%llu repeat=%d\n",
              a.spec.c_str(), a.engine.c_str(), a.lid_bits, a.links, a.switches,
              static_cast<unsigned long long>(a.seed), a.repeat);

  routing::WorkerPool pool(a.threads);
  auto fabric = routed_fabric(a.spec, a.lid_bits, a.engine, pool);
  if (!fabric.ok()) return fail("fabric", fabric.error());
  const routing::Topology& topo = fabric->topo;
  auto t0 = Clock::now();
  auto rb = routing::Rerouter::build(topo, fabric->lids, fabric->routes, pool);
  if (!rb.ok()) return fail("rerouter", rb.error());
  routing::Rerouter& rerouter = **rb;
  std::printf(
      "Rerouter::build %.2f s, %.1f MiB; its warm-up repair (the first up-link of the "
      "first switch with CAs) %.1f ms, %llu entries\n",
      seconds_since(t0), static_cast<double>(rerouter.stats().memory_bytes) / (1 << 20),
      ms(rerouter.stats().t_warmup),
      static_cast<unsigned long long>(rerouter.stats().warmup_changes));

  auto leveled = leveled_links(topo, fabric->lids);
  if (!leveled.ok()) return fail("levels", leveled.error());
  const std::vector<PortRef>& links = leveled->links;

  auto repair = [&](const std::vector<routing::FailedLink>& failed, Sample& s) {
    for (int r = 0; r < a.repeat; ++r) {
      auto rep = rerouter.repair(failed);
      if (!rep.ok()) {
        s.refused = true;
      } else {
        s.total_ms = ms(rep->t_total);
        s.reach_ms = ms(rep->t_reach);
        s.seed_ms = ms(rep->t_seed);
        s.route_ms = ms(rep->t_route);
        s.check_ms = ms(rep->t_check);
        s.changes = static_cast<double>(rep->changes.size());
        s.blocks = static_cast<double>(rep->blocks.size());
        s.orphans = static_cast<double>(rep->orphans);
        s.seeds = static_cast<double>(rep->seeds);
        s.dead_ends = static_cast<double>(rep->dead_ends);
        s.routes_lost = static_cast<double>(rep->legal_routes_lost);
        s.moved_off = static_cast<double>(rep->moved_off_lost);
        s.refused = rep->verdict != routing::RepairReport::Verdict::kRepaired;
      }
      rerouter.reset();
    }
  };
  auto ends_of = [&](const PortRef& r, std::vector<routing::FailedLink>& out) {
    const routing::Port& p = topo.port(r);
    for (const PortRef& end : {r, PortRef{p.remote_node, p.remote_port}}) {
      if (topo.node(end.node).type == routing::NodeType::kSwitch) {
        out.push_back({topo.node(end.node).switch_index, end.port});
      }
    }
  };

  std::mt19937_64 rng(a.seed);
  std::map<std::string, std::vector<Sample>> by_class;
  std::vector<Sample> all;
  t0 = Clock::now();
  for (int i = 0; i < a.links && !links.empty(); ++i) {
    const PortRef l = links[rng() % links.size()];
    std::vector<routing::FailedLink> failed;
    ends_of(l, failed);
    Sample s;
    repair(failed, s);
    by_class["links " + leveled->class_of(topo, l)].push_back(s);
    all.push_back(s);
  }
  std::printf("\n== %d random single link failures (%.1f s)\n", a.links, seconds_since(t0));
  for (const auto& [cls, v] : by_class) print_group(cls, v);
  print_group("all links", all);

  by_class.clear();
  t0 = Clock::now();
  for (int i = 0; i < a.switches && topo.num_switches() > 0; ++i) {
    const NodeId sw =
        topo.switch_node(SwitchIndex{static_cast<std::uint32_t>(rng() % topo.num_switches())});
    std::vector<routing::FailedLink> failed;
    for (unsigned p = 1; p <= topo.node(sw).num_ports; ++p) {
      const routing::Port& port = topo.port(sw, static_cast<PortNum>(p));
      if (port.connected() && topo.node(port.remote_node).type == routing::NodeType::kSwitch) {
        ends_of(PortRef{sw, static_cast<PortNum>(p)}, failed);
      }
    }
    Sample s;
    repair(failed, s);
    by_class[fmt::format("switches L{}", leveled->level_of(topo, sw))].push_back(s);
  }
  std::printf("\n== %d random switch failures (%.1f s)\n", a.switches, seconds_since(t0));
  for (const auto& [cls, v] : by_class) print_group(cls, v);
  std::printf("\npeak RSS %.0f MiB\n", peak_rss_mib());
  return 0;
}

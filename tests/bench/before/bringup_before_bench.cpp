// Not committed: bring-up at 6cb5d95 (before the MAD engine) on the
// simulator with its latency model, printing what sm_core_bench prints.
//   bringup_before_bench SPEC [lid_bits=24] [window=64] [threads=2] [engine=auto] [repeat=1]
#include <fmt/format.h>

#include <string>

#include "bench_util.hpp"
#include "daemon/bringup.hpp"
#include "daemon/config.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"

using namespace subnetd;
using namespace subnetd::bench;

static double ms(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

int main(int argc, char** argv) {
  std::string spec = "fat-tree:levels=3,k=36", engine = "auto";
  int lid_bits = 24, repeat = 1;
  unsigned window = 64, threads = 2;
  for (int i = 1; i < argc; ++i) {
    const auto [key, val] = split_arg(argv[i]);
    bool ok = false;
    if (key.empty()) {
      spec = val;
      ok = true;
    }
    if (key == "lid_bits") ok = parse_value(val, lid_bits);
    if (key == "window") ok = parse_value(val, window);
    if (key == "threads") ok = parse_value(val, threads);
    if (key == "repeat") ok = parse_value(val, repeat);
    if (key == "engine") {
      engine = val;
      ok = true;
    }
    if (!ok) {
      fmt::print(stderr, "bad argument {}\n", argv[i]);
      return 2;
    }
  }
  routing::WorkerPool pool(threads);
  for (int r = 0; r < repeat; ++r) {
    auto topo = discovery::topo::generate(spec);
    if (!topo.ok()) return fail("fabric", topo.error());
    discovery::sim::SimOptions so;
    so.lid_bits = lid_bits;
    so.latency = discovery::sim::LatencyModel{};
    auto sim = discovery::sim::SimFabric::create(std::move(topo).value(), so);
    if (!sim.ok()) return fail("simulator", sim.error());
    daemon::Config cfg;
    cfg.addressing.lid_bits = lid_bits;
    cfg.sweep.smp_window = window;
    auto opts = daemon::bring_up_options(cfg);
    opts.engine = engine;
    const auto t0 = Clock::now();
    daemon::BringUp bu(**sim, pool);
    auto res = bu.run(opts, nullptr);
    const double wall = seconds_since(t0);
    if (!res.ok()) return fail("bring-up", res.error());
    const auto& b = *res;
    fmt::print("before (6cb5d95) {} lid_bits={} window={} engine {}: total wall {:.3f} s\n", spec,
               lid_bits, window, b.routes->engine, wall);
    fmt::print("  {:<8} {:>10} {:>12} {:>12}\n", "phase", "wall ms", "sim ms", "SMPs sent");
    fmt::print("  {:<8} {:>10.1f} {:>12.3f} {:>12}\n", "sweep", ms(b.times.sweep),
               ms(b.sweep.duration), b.sweep.smps.sent);
    fmt::print("  {:<8} {:>10.1f}\n", "lids", ms(b.times.lids));
    fmt::print("  {:<8} {:>10.1f}\n", "route", ms(b.times.route));
    fmt::print("  {:<8} {:>10.1f}\n", "verify", ms(b.times.verify));
    fmt::print("  {:<8} {:>10.1f} {:>12.3f} {:>12}  (LFT blocks {})\n", "program",
               ms(b.times.program), ms(b.program.duration), b.program.smps.sent,
               b.program.lft_blocks_sent);
    fmt::print("  retries sweep {} program {}, timeouts {} / {}; sim SMA-queue drops {}\n",
               b.sweep.smps.retries, b.program.smps.retries, b.sweep.smps.timeouts,
               b.program.smps.timeouts,
               (*sim)->stats().drops_of(discovery::sim::DropReason::kSmaQueueFull));
    fmt::print("  peak RSS {:.0f} MiB\n", peak_rss_mib());
  }
  return 0;
}

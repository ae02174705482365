// sm_core_bench: the event-driven SM core of issue 13 ("Measure"), a real
// SubnetManager in process on the simulator with its latency model.
//
//   sm_core_bench [SPEC] [lid_bits=24] [engine=auto] [threads=2] [window=64]
//                 [parts=bringup,status,phases] [samples=10] [seed=1]
//                 [sweeps=5] [status_gap_us=1000] [windows=W:D,...] [verbose=0]
//                 [perfmgr=0] [traffic=-1] [failover=1]
//
// SPEC defaults to fat-tree:levels=3,k=36. The SM runs as in the daemon and
// the unit tests: an io_context on one thread, the simulator (default
// LatencyModel: 200 ns a link, 2 us per SMA, 64-deep SMA queues) as its
// transport, a WorkerPool of `threads`, `window` SMPs in flight
// (sweep.smp_window), no light sweeps, its timers on a ManualClock the
// program advances (so nothing happens "later" unless asked for). Parts:
//  bringup  the first heavy sweep: each phase's wall time, the simulated
//           (transport) time of the I/O phases and the SMPs sent. `windows`
//           repeats a bring-up alone (BringUp::run_blocking, fresh simulator)
//           with other flow windows: W overall, D per destination (0 = none).
//  status   GetStatus over the API's unix socket (api::Server in process)
//           from a client thread, one call every `status_gap_us`, while
//           `sweeps` heavy sweeps run back to back: p50/p99/max of the calls
//           that began while a sweep ran (goal p99 < 5 ms), by phase, and of
//           those that began while the SM was idle.
//  phases   `samples` random switch-to-switch cables (mt19937_64(seed)), each
//           cut in turn on an idle SM, and in each phase of an operator's heavy sweep
//           (the SubnetManager's phase hook cuts it as the phase begins), and
//           in a phase (rotating) of the re-balancing sweep that follows a
//           repair. Prints the latency_us of the kReroute events (trap
//           receipt -> last changed block handed to the transport; goal: as
//           on an idle SM, < 2 ms at k=36), how each failure was handled (the
//           fast path on the published tables, a repair in the new tables
//           during programming, or only folded into the sweep), and checks
//           the published tables end without the cable. Between samples the
//           cable is restored and the SM settles (its follow-up sweeps run).
//           perfmgr=1 turns the performance manager on and adds a case: the
//           cable cut just after a counter sweep began (every port's
//           PortCounters and PortCountersExtended in flight beside the
//           reroute's probes and blocks); it first times two counter sweeps
//           alone. traffic=0 turns the simulator's traffic model off (it
//           runs in this process: a PMA read of a switch whose LFT changed
//           recounts its routes, CPU the SM's thread shares). failover=0
//           leaves switch-local failover unarmed: the simulator then does
//           not emulate the switches' own recovery on the SM's thread
//           (with it, an idle SM's probe waits for that CPU; beside a
//           counter sweep it was mostly spent before the trap arrived).
//
// With a latency model the simulator delivers a trap only as its virtual
// clock moves, and the clock moves only while the SM has SMPs in flight: a
// trap raised while the SM is idle or computing would wait on the wire
// forever. SimWire (below) models time passing on a real fabric: after each
// injected fault it lets the clock run far enough for its traps to arrive.
//
// Run (k=80 needs ~4 GB and several minutes per part):
//   build/release/bin/sm_core_bench fat-tree:levels=3,k=36 lid_bits=24
//   build/release/bin/sm_core_bench fat-tree:levels=3,k=80 lid_bits=24 samples=3 sweeps=2

#include "bench_util.hpp"
#include "sm_core_rig.hpp"

namespace subnetd::bench {
namespace {

using namespace sm_core;

void print_phase_table(
    const std::vector<std::tuple<std::string, double, double, std::uint64_t>>& rows) {
  fmt::print("  {:<13} {:>10} {:>12} {:>11}\n", "phase", "wall ms", "sim ms", "SMPs sent");
  for (const auto& [name, wall, sim, smps] : rows) {
    if (sim < 0) {
      fmt::print("  {:<13} {:>10.1f}\n", name, wall);
    } else {
      fmt::print("  {:<13} {:>10.1f} {:>12.3f} {:>11}\n", name, wall, sim, smps);
    }
  }
}

// Each step's wall time, simulated time (I/O steps) and SMPs, from the marks
// of one or more heavy sweeps (the mean over them).
void print_sweep_steps(const std::vector<Mark>& marks) {
  std::map<int, std::tuple<double, double, std::uint64_t>> sum;
  int sweeps = 0;
  for (std::size_t i = 0; i < marks.size(); ++i) {
    if (marks[i].phase == kEnd) {
      ++sweeps;
      continue;
    }
    if (i + 1 == marks.size()) break;
    auto& [wall, sim, smps] = sum[marks[i].phase];
    wall += ms_of(marks[i + 1].wall - marks[i].wall);
    sim += ms_of(marks[i + 1].sim - marks[i].sim);
    smps += marks[i + 1].smps - marks[i].smps;
  }
  if (sweeps == 0) return;
  std::vector<std::tuple<std::string, double, double, std::uint64_t>> rows;
  double total = 0, total_sim = 0;
  for (const auto& [phase, v] : sum) {
    const auto& [wall, sim, smps] = v;
    const bool io =
        phase == static_cast<int>(Phase::kSweep) || phase == static_cast<int>(Phase::kProgram);
    rows.emplace_back(kPhaseNames[phase], wall / sweeps, io ? sim / sweeps : -1.0,
                      smps / static_cast<std::uint64_t>(sweeps));
    total += wall / sweeps;
    total_sim += sim / sweeps;
  }
  print_phase_table(rows);
  fmt::print("  {:<13} {:>10.1f} {:>12.3f}{}\n", "total", total, total_sim,
             sweeps > 1 ? fmt::format("   (mean of {} sweeps)", sweeps) : "");
}

// A bring-up alone with other flow windows (no SM around it).
int bring_up_windows(const Args& args) {
  routing::WorkerPool pool(args.threads);
  for (const auto& [window, per_dest] : args.windows) {
    auto sim = make_sim(args);
    if (!sim.ok()) return fail("simulator", sim.error());
    daemon::Config cfg;
    cfg.addressing.lid_bits = args.lid_bits;
    cfg.sweep.smp_window = window;
    daemon::BringUpOptions opts = daemon::bring_up_options(cfg);
    opts.engine = args.engine;
    opts.sweep.pipeline.per_destination = per_dest;
    opts.program.pipeline.per_destination = per_dest;
    const auto t0 = Clock::now();
    auto r = daemon::BringUp::run_blocking(**sim, pool, opts);
    const double wall = seconds_since(t0);
    if (!r.ok()) return fail(fmt::format("bring-up, window {}:{}", window, per_dest), r.error());
    fmt::print(
        "\n== bring-up alone (BringUp::run_blocking), window {} per destination {} "
        "(load {}): {:.3f} s wall\n",
        window, per_dest, load_average(), wall);
    print_phase_table(
        {{"discovery", ms_of(r->times.sweep), ms_of(r->sweep.duration), r->sweep.smps.sent},
         {"lids", ms_of(r->times.lids), -1, 0},
         {"routing", ms_of(r->times.route), -1, 0},
         {"verification", ms_of(r->times.verify), -1, 0},
         {"programming", ms_of(r->times.program), ms_of(r->program.duration),
          r->program.smps.sent}});
    fmt::print("  retries {} + {}, SMA queue drops {}, LFT blocks {}\n", r->sweep.smps.retries,
               r->program.smps.retries,
               (*sim)->stats().drops_of(discovery::sim::DropReason::kSmaQueueFull),
               r->program.lft_blocks_sent);
  }
  return 0;
}

// ---------------------------------------------------------------- status

struct Call {
  Clock::time_point t0;
  double ms = 0;
  bool ok = false;
};

int status_part(const Args& args, Rig& rig) {
  std::string dir = (std::filesystem::temp_directory_path() / "smcoreXXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    fmt::print(stderr, "status: mkdtemp failed\n");
    return 1;
  }
  api::ListenOptions listen;
  listen.socket = dir + "/api.sock";
  api::ServiceDeps deps;
  deps.state = &rig.publisher();
  deps.sm = &rig.sm();
  deps.events = &rig.events();
  auto server = api::Server::start(listen, deps);
  if (!server.ok()) {
    std::filesystem::remove_all(dir);
    return fail("status: api server", server.error());
  }
  auto stub = v1::SubnetManager::NewStub(
      grpc::CreateChannel((*server)->unix_target(), grpc::InsecureChannelCredentials()));

  // The client: a call every status_gap_us (or back to back), until told.
  std::vector<Call> calls;
  calls.reserve(1 << 20);
  std::atomic<bool> stop = false;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t done_calls = 0;
  std::thread client([&] {
    auto next = Clock::now();
    while (!stop) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 10s);
      v1::GetStatusRequest req;
      v1::GetStatusResponse resp;
      const auto t0 = Clock::now();
      const grpc::Status st = stub->GetStatus(&ctx, req, &resp);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      {
        std::lock_guard lock(mu);
        calls.push_back({t0, ms, st.ok()});
        ++done_calls;
      }
      cv.notify_all();
      // Pacing a load generator, not waiting for the SM.
      next += std::chrono::microseconds{args.status_gap_us};
      if (args.status_gap_us > 0) std::this_thread::sleep_until(next);
    }
  });
  // 100 calls to warm up (the connection, the first FabricView), then an
  // idle baseline of 500 with nothing running.
  Clock::time_point warm;
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done_calls >= 100; });
    warm = Clock::now();
    cv.wait(lock, [&] { return done_calls >= 600; });
  }
  int failed_sweeps = 0;
  bool stuck = false;
  rig.start_marking();
  for (int i = 0; i < args.sweeps && !stuck; ++i) {
    auto reply = rig.sweep();
    stuck = reply.wait_for(kLimit) != std::future_status::ready || !rig.wait_idle();
    if (stuck) {
      fmt::print(stderr, "status: heavy sweep {} did not finish\n", i + 1);
    } else if (!reply.get().ok) {
      ++failed_sweeps;
    }
  }
  const std::vector<Mark> marks = rig.take_marks();
  stop = true;
  client.join();
  (*server)->stop(1s);
  std::filesystem::remove_all(dir);
  if (stuck) return 1;

  // A call belongs to the step it began in: a sweep's discovery step begins
  // it, its publish ends it; before the first sweep is the idle baseline,
  // between sweeps (after a publish, whose FabricView the first call builds)
  // is counted apart.
  std::vector<std::pair<Clock::time_point, int>> steps;  // (begins, phase), sorted
  for (const Mark& m : marks) steps.emplace_back(m.wall, m.phase);
  std::vector<double> idle, between, busy;
  std::map<int, std::vector<double>> by_phase;
  int failed = 0;
  for (const Call& c : calls) {
    failed += c.ok ? 0 : 1;
    if (c.t0 < warm) continue;
    auto it = std::upper_bound(steps.begin(), steps.end(), std::pair{c.t0, 99});
    if (it == steps.begin()) {
      idle.push_back(c.ms);
    } else if (const int phase = std::prev(it)->second; phase == kEnd) {
      between.push_back(c.ms);
    } else {
      busy.push_back(c.ms);
      by_phase[phase].push_back(c.ms);
    }
  }
  fmt::print(
      "\n== GetStatus over the unix socket, one call every {} us, during {} heavy sweeps "
      "back to back (load {})\n",
      args.status_gap_us, args.sweeps, load_average());
  fmt::print("  {:<22} {}\n", "SM idle, before", quantiles(idle, "ms"));
  fmt::print("  {:<22} {}\n", "between sweeps", quantiles(between, "ms"));
  fmt::print("  {:<22} {}   (goal p99 < 5 ms)\n", "while a sweep runs", quantiles(busy, "ms"));
  for (const auto& [phase, v] : by_phase) {
    fmt::print("    {:<20} {}\n", kPhaseNames[phase], quantiles(v, "ms"));
  }
  fmt::print("  failed calls {}, failed sweeps {}; the heavy sweeps' steps:\n", failed,
             failed_sweeps);
  print_sweep_steps(marks);
  return failed == 0 && failed_sweeps == 0 ? 0 : 1;
}

// ---------------------------------------------------------------- phases

std::vector<Cable> switch_cables(const routing::Topology& t) {
  std::vector<Cable> out;
  for (NodeId sw : t.switches()) {
    for (unsigned p = 1; p <= t.node(sw).num_ports; ++p) {
      const routing::Port& port = t.port(sw, static_cast<PortNum>(p));
      const PortRef here{sw, static_cast<PortNum>(p)};
      const PortRef far{port.remote_node, port.remote_port};
      if (port.connected() && t.node(far.node).type == routing::NodeType::kSwitch && here < far) {
        out.push_back({here, far, t.node(sw).guid, t.node(far.node).guid});
      }
    }
  }
  return out;
}

// What happened to the failures of one case.
struct CaseStats {
  std::string name;
  std::vector<double> published_ms, new_tables_ms;
  int fast_path = 0, new_tables = 0, both = 0, folded = 0, lost = 0;
  std::uint64_t sma_drops = 0;
  void add(const Outcome& o) {
    sma_drops += o.sma_drops;
    published_ms.insert(published_ms.end(), o.published_ms.begin(), o.published_ms.end());
    new_tables_ms.insert(new_tables_ms.end(), o.new_tables_ms.begin(), o.new_tables_ms.end());
    const bool pub = !o.published_ms.empty(), fresh = !o.new_tables_ms.empty();
    (pub && fresh ? both : pub ? fast_path : fresh ? new_tables : folded) += 1;
    lost += o.lost.empty() ? 0 : 1;
  }
};

int phases_part(const Args& args, Rig& rig) {
  const std::vector<Cable> cables = switch_cables(rig.sim().topology());
  if (cables.empty()) {
    fmt::print(stderr, "phases: the fabric has no switch-to-switch cable\n");
    return 1;
  }
  auto sma_drops = [&rig] {
    return rig.sim().stats().drops_of(discovery::sim::DropReason::kSmaQueueFull);
  };
  std::mt19937_64 rng(args.seed);
  auto pick = [&] { return cables[rng() % cables.size()]; };
  const auto name = [&rig](const Cable& c) {
    const routing::Topology& t = rig.sim().topology();
    return fmt::format("{}[{}]-{}[{}]", t.label(c.a.node), c.a.port, t.label(c.b.node), c.b.port);
  };
  // Cases: 0 idle, 1..5 a phase of an operator's sweep, 6 re-balancing,
  // 7 (perfmgr=1) a counter sweep.
  const int cases = args.perfmgr ? 8 : 7;
  std::vector<CaseStats> stats(static_cast<std::size_t>(cases));
  stats[0].name = "idle SM";
  for (int p = 0; p < 5; ++p) stats[p + 1].name = kPhaseNames[p];
  stats[6].name = "re-balancing sweep";
  int counter_cuts_during = 0;
  // Same cable, same sample: the counter sweep's reroute over the idle one.
  std::vector<double> idle_ms_of_sample(static_cast<std::size_t>(args.samples), 0.0);
  std::vector<double> counter_over_idle;
  if (args.perfmgr) {
    stats[7].name = "counter sweep";
    const auto t0 = std::chrono::steady_clock::now();
    if (auto r = rig.counter_sweep(); !r.ok()) return fail("first counter sweep", r.error());
    const auto t1 = std::chrono::steady_clock::now();
    if (auto r = rig.counter_sweep(); !r.ok()) return fail("counter sweep", r.error());
    const auto t2 = std::chrono::steady_clock::now();
    fmt::print("counter sweeps alone: first {:.3f} s, next {:.3f} s ({} ports)\n",
               std::chrono::duration<double>(t1 - t0).count(),
               std::chrono::duration<double>(t2 - t1).count(),
               rig.counters().current()->ports_read);
  }
  fmt::print(
      "\n== a switch-to-switch cable cut per sample, {} samples a case, seed {} ({} "
      "cables; load {})\n",
      args.samples, args.seed, cables.size(), load_average());

  auto restore_all = [&](const std::vector<Cable>& cut) -> int {
    for (const Cable& c : cut) {
      if (auto r = rig.restore(c); !r.ok()) return fail("restore " + name(c), r.error());
    }
    if (!rig.settle()) {
      fmt::print(stderr, "phases: the SM did not settle after restoring {}\n", name(cut.front()));
      return 1;
    }
    for (const Cable& c : cut) {
      if (!rig.has_cable(c)) {
        fmt::print(stderr, "phases: {} is up again but not in the published topology\n", name(c));
        return 1;
      }
    }
    return 0;
  };
  int rebalance_phase = 0;
  for (int sample = 0; sample < args.samples; ++sample) {
    // The same cable in every case of a sample, so that the cases differ
    // only in when it is cut (an edge-aggregation cable rewrites ~10x the
    // blocks an aggregation-core one does).
    const Cable cable = pick();
    Cable first = pick();  // the re-balancing case's earlier repair
    while (first.ga == cable.ga && first.a.port == cable.a.port) first = pick();
    for (int kase = 0; kase < cases; ++kase) {
      std::vector<Cable> cut{cable};
      std::int64_t before = rig.events().last_id();
      const std::uint64_t drops0 = sma_drops();
      std::string what;
      if (kase == 0) {
        what = "idle";
        if (auto r = rig.cut_and_reroute(cable); !r.ok())
          return fail("cut " + name(cable), r.error());
      } else if (kase <= 5) {
        const Phase phase = static_cast<Phase>(kase - 1);
        what = kPhaseNames[kase - 1];
        rig.cut_at(phase, cable);
        auto reply = rig.sweep();
        if (reply.wait_for(kLimit) != std::future_status::ready || !rig.wait_idle()) {
          fmt::print(stderr, "phases: the sweep with {} cut in {} did not end\n", name(cable),
                     what);
          return 1;
        }
        if (const auto r = reply.get(); !r.ok) {
          fmt::print(stderr, "phases: the sweep with {} cut in {} failed: {}\n", name(cable), what,
                     r.message);
        }
      } else if (kase == 7) {
        what = "counter sweep";
        bool during = false;
        if (auto r = rig.counter_sweep_and_cut(cable, &during); !r.ok())
          return fail("cut " + name(cable) + " in a counter sweep", r.error());
        counter_cuts_during += during ? 1 : 0;
      } else {
        // A repair first (on an idle SM), then the cut in a step of the
        // re-balancing sweep it schedules.
        cut.insert(cut.begin(), first);
        if (auto r = rig.cut_and_reroute(first); !r.ok())
          return fail("cut " + name(first), r.error());
        before = rig.events().last_id();  // the second cut's events only
        const Phase phase = static_cast<Phase>(rebalance_phase++ % 5);
        what = fmt::format("re-balancing, {}", kPhaseNames[static_cast<int>(phase)]);
        rig.cut_at(phase, cable);
        const std::int64_t sweeps = static_cast<std::int64_t>(rig.publisher().current()->sweeps);
        rig.clock().advance(daemon::FastPathOptions{}.rebalance_delay);
        if (rig.publisher().wait_for(
                [sweeps](const state::FabricState& s) {
                  return static_cast<std::int64_t>(s.sweeps) > sweeps && Rig::master(s);
                },
                kLimit) == nullptr ||
            !rig.wait_idle()) {
          fmt::print(stderr, "phases: the re-balancing sweep with {} cut did not end\n",
                     name(cable));
          return 1;
        }
      }
      if (kase != 0 && kase != 7 && !rig.injected()) {
        fmt::print(stderr, "phases: the sweep never entered {} ({} not cut)\n", what, name(cable));
        return 1;
      }
      Outcome o = rig.outcome(before, cable);
      o.sma_drops = sma_drops() - drops0;
      if (!o.published_ms.empty()) {
        const double worst = *std::max_element(o.published_ms.begin(), o.published_ms.end());
        if (kase == 0) idle_ms_of_sample[static_cast<std::size_t>(sample)] = worst;
        const double idle = idle_ms_of_sample[static_cast<std::size_t>(sample)];
        if (kase == 7 && idle > 0) counter_over_idle.push_back(worst / idle);
      }
      stats[static_cast<std::size_t>(kase)].add(o);
      if (args.verbose || !o.lost.empty()) {
        fmt::print("  sample {} {}: {} published [{:.3f}] new tables [{:.3f}] ms{}\n", sample, what,
                   name(cable), fmt::join(o.published_ms, " "), fmt::join(o.new_tables_ms, " "),
                   o.lost.empty() ? "" : " LOST: " + o.lost);
        if (args.verbose) {
          for (const std::string& m : o.messages) fmt::print("      {}\n", m);
        }
      }
      if (const int rc = restore_all(cut); rc != 0) return rc;
    }
  }

  fmt::print("  {:<20} {:>5} {:>6} {:>5} {:>6} {:>5} {:>6}   latency_us of the reroute events\n",
             "cut in", "fast", "new", "both", "fold", "lost", "drops");
  int lost = 0;
  for (const CaseStats& s : stats) {
    fmt::print("  {:<20} {:>5} {:>6} {:>5} {:>6} {:>5} {:>6}   published:  {}\n", s.name,
               s.fast_path, s.new_tables, s.both, s.folded, s.lost, s.sma_drops,
               quantiles(s.published_ms, "ms"));
    if (!s.new_tables_ms.empty()) {
      fmt::print("  {:<57} new tables: {}\n", "", quantiles(s.new_tables_ms, "ms"));
    }
    lost += s.lost;
  }
  if (args.perfmgr) {
    fmt::print("  counter sweep: {} of {} reroutes came while the counter sweep still ran\n",
               counter_cuts_during, args.samples);
    if (!counter_over_idle.empty()) {
      std::sort(counter_over_idle.begin(), counter_over_idle.end());
      fmt::print("  counter sweep / idle SM, same cable: median {:.2f}, min {:.2f}, max {:.2f}\n",
                 counter_over_idle[counter_over_idle.size() / 2], counter_over_idle.front(),
                 counter_over_idle.back());
    }
  }
  fmt::print(
      "  fast = repaired by the fast path in the published tables only; new = in the new "
      "tables during programming only; both; fold = no reroute event, the sweep left the "
      "cable out; lost = the published tables still use it\n");
  return lost == 0 ? 0 : 1;
}

// ---------------------------------------------------------------- main

int usage() {
  fmt::print(stderr,
             "usage: sm_core_bench [SPEC] [lid_bits=16|17|24] [engine=auto|ftree|updn] "
             "[threads=N] [window=N] [parts=bringup,status,phases] [samples=N] [seed=N] "
             "[sweeps=N] [status_gap_us=N] [windows=W:D,...] [verbose=0|1] [perfmgr=0|1] "
             "[traffic=B] [failover=0|1]\n");
  return 2;
}

int run(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const auto [key, val] = split_arg(argv[i]);
    bool ok = false;
    if (key.empty()) {
      args.spec = val;
      ok = true;
    } else if (key == "lid_bits") {
      ok = parse_value(val, args.lid_bits) &&
           (args.lid_bits == 16 || args.lid_bits == 17 || args.lid_bits == 24);
    } else if (key == "engine") {
      args.engine = val;
      ok = val == "auto" || val == "ftree" || val == "updn";
    } else if (key == "threads") {
      ok = parse_value(val, args.threads) && args.threads >= 1;
    } else if (key == "window") {
      ok = parse_value(val, args.window) && args.window >= 1 && args.window <= 4096;
    } else if (key == "parts") {
      args.parts = split_list(val);
      ok = !args.parts.empty();
      for (const std::string& p : args.parts) {
        ok = ok && (p == "bringup" || p == "status" || p == "phases");
      }
    } else if (key == "samples") {
      ok = parse_value(val, args.samples) && args.samples >= 1;
    } else if (key == "seed") {
      ok = parse_value(val, args.seed);
    } else if (key == "sweeps") {
      ok = parse_value(val, args.sweeps) && args.sweeps >= 1;
    } else if (key == "status_gap_us") {
      ok = parse_value(val, args.status_gap_us) && args.status_gap_us >= 0;
    } else if (key == "verbose") {
      ok = parse_value(val, args.verbose);
    } else if (key == "perfmgr") {
      ok = parse_value(val, args.perfmgr);
    } else if (key == "traffic") {
      ok = parse_value(val, args.traffic);
    } else if (key == "failover") {
      ok = parse_value(val, args.failover);
    } else if (key == "windows") {
      ok = true;
      for (const std::string& w : split_list(val)) {
        const auto colon = w.find(':');
        unsigned overall = 0, per_dest = 0;
        ok = ok && parse_value(std::string_view(w).substr(0, colon), overall) && overall >= 1 &&
             (colon == std::string::npos ||
              parse_value(std::string_view(w).substr(colon + 1), per_dest));
        args.windows.emplace_back(overall, per_dest);
      }
    }
    if (!ok) {
      fmt::print(stderr, "sm_core_bench: bad argument \"{}\"\n", argv[i]);
      return usage();
    }
  }
  spdlog::set_level(spdlog::level::warn);  // a line per sweep and reroute otherwise

  fmt::print(
      "sm_core_bench {} lid_bits={} engine={} threads={} window={} (latency model: {} "
      "ns a link, {} ns an SMA, SMA queue {}); load {}\n",
      args.spec, args.lid_bits, args.engine, args.threads, args.window,
      discovery::sim::LatencyModel{}.hop_delay.count(),
      discovery::sim::LatencyModel{}.sma_processing.count(),
      discovery::sim::LatencyModel{}.sma_queue_depth, load_average());
  int rc = 0;
  {
    auto sim = make_sim(args);
    if (!sim.ok()) return fail("simulator", sim.error());
    const auto t0 = Clock::now();
    Rig rig(args, std::move(sim).value());
    if (auto r = rig.start(); !r.ok()) return fail("bring-up", r.error());
    const double wall = seconds_since(t0);
    const std::vector<Mark> marks = rig.take_marks();
    if (args.wants("bringup")) {
      fmt::print(
          "\n== bring-up: the SM's first heavy sweep, window {} ({:.3f} s from start(); "
          "load {})\n",
          args.window, wall, load_average());
      print_sweep_steps(marks);
    }
    if (args.wants("status")) rc |= status_part(args, rig);
    if (args.wants("phases")) rc |= phases_part(args, rig);
  }
  if (args.wants("bringup") && !args.windows.empty()) rc |= bring_up_windows(args);
  fmt::print("\npeak RSS {:.0f} MiB, load {}\n", peak_rss_mib(), load_average());
  return rc;
}

}  // namespace
}  // namespace subnetd::bench

int main(int argc, char** argv) {
  return subnetd::bench::run(argc, argv);
}

// Performance manager and screening benchmark (issue 16): the SM in process
// on the simulator, brought up, then full counter sweeps of every connected
// port (PMA ClassPortInfo once per node, PortCounters and
// PortCountersExtended per port) timed with their MAD rate, the process's
// CPU and memory, and the store rows they write; then bring-up screening of
// the whole fabric against its own plan and against one with two cables
// swapped.
//
//   perfmgr_bench [SPEC] [lid_bits=24] [sweeps=2] [errors=100] [threads=2]
//
// SPEC defaults to fat-tree:levels=3,k=80 (128,000 CAs, 768,000 ports with a
// cable). `errors` random ports get injected errors before each sweep (so the
// store gets per-sweep rows). The SM's timers run on a manual clock: a
// counter sweep starts when the bench advances it, and is timed from there
// until the SM is idle again.

#include <fmt/format.h>
#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <filesystem>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "bench_util.hpp"
#include "daemon/screening/cabling.hpp"
#include "daemon/store.hpp"
#include "daemon/subnet_manager.hpp"
#include "discovery/sim/sim_borrowed.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "state/event_log.hpp"

namespace {

using namespace subnetd;
using namespace std::chrono_literals;

struct Args {
  std::string spec = "fat-tree:levels=3,k=80";
  int lid_bits = 24;
  int sweeps = 2;
  int errors = 100;
  unsigned threads = 2;
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

bool wait_idle(daemon::SubnetManager& sm) {
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  sm.notify_when_idle_for_test([done] { done->set_value(); });
  return fut.wait_for(std::chrono::minutes{20}) == std::future_status::ready;
}

int run(const Args& a) {
  std::printf("perfmgr_bench %s lid_bits=%d sweeps=%d errors=%d threads=%u\n", a.spec.c_str(),
              a.lid_bits, a.sweeps, a.errors, a.threads);
  auto topo = discovery::topo::generate(a.spec);
  if (!topo.ok()) {
    std::fprintf(stderr, "%s\n", topo.error().message.c_str());
    return 2;
  }
  const routing::Topology truth = *topo;
  discovery::sim::SimOptions so;
  so.lid_bits = a.lid_bits;
  auto sim = discovery::sim::SimFabric::create(std::move(topo).value(), so);
  if (!sim.ok()) {
    std::fprintf(stderr, "%s\n", sim.error().message.c_str());
    return 2;
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("perfmgr-bench-{}", ::getpid()))
          .string();
  std::filesystem::create_directories(dir);
  auto store = daemon::Store::open(dir + "/subnetd.db");
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 2;
  }
  daemon::StoreWriter writer(std::move(store).value(), [](const Error& e) {
    std::fprintf(stderr, "store: %s\n", e.message.c_str());
  });

  daemon::Config cfg;
  cfg.fabric.topology = a.spec;
  cfg.addressing.lid_bits = a.lid_bits;
  cfg.sweep.interval = 0ms;
  cfg.perfmgr.interval = 60s;
  cfg.routing.threads = a.threads;
  daemon::ManualClock clock;
  state::StatePublisher publisher;
  state::EventLog events(0, {}, {});
  routing::WorkerPool pool(a.threads);
  state::CounterBoard board;
  boost::asio::io_context io;
  daemon::TransportBundle bundle;
  bundle.transport = std::make_unique<discovery::sim::BorrowedSim>(**sim);
  daemon::FastPathOptions fast;
  fast.rebalance_delay = std::chrono::hours{1};
  daemon::SubnetManager sm(io, cfg, std::move(bundle), &writer, {}, publisher, events, pool, {},
                           fast, &clock);
  sm.attach_counters(&board);
  const auto t_up = std::chrono::steady_clock::now();
  sm.start();
  std::thread thread([&io] { io.run(); });
  auto master = publisher.wait_for(
      [](const state::FabricState& s) {
        return s.state == state::SmState::kMaster && s.routes != nullptr;
      },
      std::chrono::minutes{30});
  if (!master || !wait_idle(sm)) {
    std::fprintf(stderr, "no bring-up\n");
    sm.stop();
    thread.join();
    return 1;
  }
  std::printf("bring-up %.1f s: %zu nodes, %zu switches\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_up).count(),
              truth.num_nodes(), truth.num_switches());
  bench::reset_peak_rss();
  const double rss_before = bench::peak_rss_mib();

  std::mt19937_64 rng(1);
  std::vector<PortRef> cabled;
  for (std::uint32_t i = 0; i < truth.num_nodes(); ++i) {
    for (PortNum p = 1; p <= truth.node(NodeId{i}).num_ports; ++p) {
      if (truth.port(NodeId{i}, p).connected()) cabled.push_back({NodeId{i}, p});
    }
  }
  std::printf("\n%-6s %10s %10s %12s %10s %10s %8s %8s %11s\n", "sweep", "ports", "failed",
              "wall (s)", "MADs", "MADs/s", "CPU (s)", "events", "ingest (s)");
  for (int s = 0; s < a.sweeps; ++s) {
    for (int e = 0; e < a.errors; ++e) {
      discovery::sim::PortErrors err;
      err.symbol_errors = 1 + static_cast<std::uint32_t>(e % 7);
      (void)(*sim)->inject_port_errors(cabled[rng() % cabled.size()], err);
    }
    const auto mads0 = sm.mad_counters().sent;
    const std::int64_t ev0 = events.last_id();
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    clock.advance(cfg.perfmgr.interval);
    if (!wait_idle(sm)) {
      std::fprintf(stderr, "the counter sweep did not end\n");
      break;
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto snap = board.current();
    const auto mads = sm.mad_counters().sent - mads0;
    std::printf("%-6d %10u %10u %12.2f %10llu %10.0f %8.2f %8lld %11.3f\n", s + 1, snap->ports_read,
                snap->ports_failed, wall, static_cast<unsigned long long>(mads),
                static_cast<double>(mads) / wall, cpu_seconds() - cpu0,
                static_cast<long long>(events.last_id() - ev0),
                static_cast<double>(snap->ingest_took.count()) / 1e6);
  }
  std::printf("peak RSS during counter sweeps: %.0f MiB (before: %.0f MiB)\n",
              bench::peak_rss_mib(), rss_before);
  writer.flush();
  auto rows0 = writer.call([](daemon::Store& st) { return st.counter_rows(0); }).get();
  auto rows1 = writer.call([](daemon::Store& st) { return st.counter_rows(1); }).get();
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(dir + "/subnetd.db", ec) +
                     std::filesystem::file_size(dir + "/subnetd.db-wal", ec);
  if (rows0.ok() && rows1.ok()) {
    const double per_sweep0 = static_cast<double>(*rows0) / a.sweeps;
    const double per_hour1 = static_cast<double>(*rows1);  // one hour bucket
    // At the default period (60 s) and retentions (168 h raw, 720 h hourly):
    // a day adds 1440 sweeps' raw rows and 24 hours' sums.
    const double rows_day = per_sweep0 * 1440 + per_hour1 * 24;
    std::printf(
        "store: %lld per-sweep rows, %lld hourly rows after %d sweeps; at a 60 s period "
        "with %d erring ports a sweep: %.0f rows/day\n",
        static_cast<long long>(*rows0), static_cast<long long>(*rows1), a.sweeps, a.errors,
        rows_day);
    std::printf("store file %.1f MiB (with its WAL)\n", static_cast<double>(bytes) / 1048576.0);
  }

  // Screening: the fabric against its own plan, and with two cables swapped.
  const auto plan = daemon::screening::plan_of(truth, "bench");
  auto t1 = std::chrono::steady_clock::now();
  const auto clean = daemon::screening::check_cabling(plan, truth);
  const double clean_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  routing::Topology swapped = truth;
  const NodeId sw = truth.switch_node(SwitchIndex{0});
  const PortRef x{truth.port(sw, 1).remote_node, truth.port(sw, 1).remote_port};
  const PortRef y{truth.port(sw, 2).remote_node, truth.port(sw, 2).remote_port};
  swapped.disconnect({sw, 1});
  swapped.disconnect({sw, 2});
  (void)swapped.connect({sw, 1}, y);
  (void)swapped.connect({sw, 2}, x);
  t1 = std::chrono::steady_clock::now();
  const auto found = daemon::screening::check_cabling(plan, swapped);
  const double swapped_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf(
      "\nscreening a plan of %u nodes and %u cables: %.2f s (%zu findings); with two "
      "cables swapped: %.2f s (%zu finding(s), first: %s)\n",
      clean.plan_nodes, clean.plan_cables, clean_s, clean.findings.size(), swapped_s,
      found.findings.size(),
      found.findings.empty() ? "-" : state::cabling_finding_name(found.findings[0].kind));

  sm.stop();
  thread.join();
  writer.close();
  std::filesystem::remove_all(dir, ec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    const std::string key = arg.substr(0, eq),
                      val = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (eq == std::string::npos || arg.rfind("fat-tree", 0) == 0 || arg.rfind("torus", 0) == 0 ||
        arg.rfind("random", 0) == 0) {
      a.spec = arg;
    } else if (key == "lid_bits") {
      a.lid_bits = std::stoi(val);
    } else if (key == "sweeps") {
      a.sweeps = std::stoi(val);
    } else if (key == "errors") {
      a.errors = std::stoi(val);
    } else if (key == "threads") {
      a.threads = static_cast<unsigned>(std::stoul(val));
    } else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  return run(a);
}

// Reroute benchmark: link failures on a simulated fabric, repaired by the SM's
// fast path (daemon/fast_path.hpp: trap -> port probes -> Rerouter::repair ->
// changed LFT blocks pushed), timed from the trap's receipt to the last
// changed block handed to the transport.
//
//   reroute_bench [SPEC] [engine=auto|updn|ftree] [lid_bits=24] [failures=1000]
//                 [accumulate=5] [switches=20] [seed=1] [latency=0|1] [threads=2]
//                 [links=all|ca|upper]
//
// SPEC defaults to fat-tree:levels=3,k=80 (8,000 switches, 128,000 CAs).
// Runs, in order:
//  1. `failures` random single switch-to-switch link failures (`links`: any,
//     only links at a switch with CAs, or only links above them), each restored
//     before the next (link up in the simulator, the rerouter reset to the
//     tables it was built with, the changed blocks programmed back);
//  2. failures accumulating until `accumulate` percent of the links are down
//     (0 skips it), then everything restored; a refused repair is followed,
//     as in the SM, by a full recompute on the fabric as it is (the blocks
//     that differ programmed) and a new fast path;
//  3. `switches` random switch failures (every switch-to-switch link of the
//     switch at once; its CAs are cut off with it).
// Prints, per run, p50/p99/max of: latency (trap receipt -> last block handed
// to the transport), the repair alone, the port probes, entries changed,
// blocks pushed; and refusals (which fall back to the full recompute).
// latency=1 builds the simulator with its latency model (200 ns a link, 2 us
// per SMA, 64-deep SMA queues) and also prints when the last changed block
// was answered in simulated time: an estimate of when the last switch holds
// its new table on a real fabric.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "daemon/fast_path.hpp"
#include "discovery/mad_engine.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/trap_repress.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::bench;
using routing::FailedLink;
namespace mad = discovery::mad;

double ms(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

struct Args {
  std::string spec = "fat-tree:levels=3,k=80";
  std::string engine = "auto";
  int lid_bits = 24;
  int failures = 1000;
  double accumulate = 5.0;
  int switch_failures = 20;
  std::uint64_t seed = 1;
  bool latency = false;
  unsigned threads = 2;
  std::string links = "all";  // single failures: all, ca (at a switch with CAs), upper
};

// Directed-route paths from the SM's CA to every node (BFS), for the
// Programmer's initial programming of the simulator.
using discovery::bfs_paths;

struct Sample {
  double latency_ms = 0, repair_ms = 0, probe_ms = 0, confirmed_ms = 0, transport_ms = 0;
  double route_ms = 0, check_ms = 0;
  double probe_sim_ms = 0;
  std::uint64_t entries = 0, blocks = 0, orphans = 0, probe_smps = 0, targeted = 0, explained = 0;
  bool leaf = false;  // the link touches a switch with CAs
};

struct Run {
  std::string name;
  std::vector<Sample> samples;
  int refused = 0;
  int missed = 0;   // the probes found nothing down
  int no_trap = 0;  // of which: no trap reached the SM (both lost or still outstanding)
};

template <class F>
double pct(const std::vector<Sample>& v, double p, F f) {
  std::vector<double> x;
  x.reserve(v.size());
  for (const Sample& s : v) x.push_back(static_cast<double>(f(s)));
  return percentile(std::move(x), p);
}

void print_run(const Run& r, bool latency_model) {
  std::printf(
      "\n== %s: %zu repairs, %d refused (full recompute), %d not found (%d: no trap reached the "
      "SM)\n",
      r.name.c_str(), r.samples.size(), r.refused, r.missed, r.no_trap);
  if (r.samples.empty()) return;
  auto row = [&](const char* what, auto f, const char* unit) {
    std::printf("  %-34s p50 %9.3f  p99 %9.3f  max %9.3f %s\n", what, pct(r.samples, 0.5, f),
                pct(r.samples, 0.99, f), pct(r.samples, 1.0, f), unit);
  };
  row(
      "latency (trap -> last block sent)", [](const Sample& s) { return s.latency_ms; }, "ms");
  row(
      "  port probes", [](const Sample& s) { return s.probe_ms; }, "ms");
  row(
      "  repair (Rerouter::repair)", [](const Sample& s) { return s.repair_ms; }, "ms");
  row(
      "    worklist and orphan fill", [](const Sample& s) { return s.route_ms; }, "ms");
  row(
      "    check_changes", [](const Sample& s) { return s.check_ms; }, "ms");
  row(
      "  push (after the repair)",
      [](const Sample& s) { return s.latency_ms - s.repair_ms - s.probe_ms; }, "ms");
  row(
      "all blocks answered", [](const Sample& s) { return s.confirmed_ms; }, "ms");
  if (latency_model) {
    row(
        "last table held (simulated time)", [](const Sample& s) { return s.transport_ms; }, "ms");
  }
  row(
      "entries changed", [](const Sample& s) { return s.entries; }, "");
  row(
      "LFT blocks pushed", [](const Sample& s) { return s.blocks; }, "");
  row(
      "orphan entries", [](const Sample& s) { return s.orphans; }, "");
  row(
      "probe SMPs", [](const Sample& s) { return s.probe_smps; }, "");
  row(
      "  of which targeted", [](const Sample& s) { return s.targeted; }, "");
  row(
      "trapping switches explained by them", [](const Sample& s) { return s.explained; }, "");
  std::vector<Sample> leaf, upper;
  for (const Sample& s : r.samples) (s.leaf ? leaf : upper).push_back(s);
  if (!leaf.empty() && !upper.empty()) {
    auto lat = [](const Sample& s) { return s.latency_ms; };
    std::printf(
        "  latency by link: at a CA switch p50 %.3f p99 %.3f (%zu); above p50 %.3f "
        "p99 %.3f (%zu) ms\n",
        pct(leaf, 0.5, lat), pct(leaf, 0.99, lat), leaf.size(), pct(upper, 0.5, lat),
        pct(upper, 0.99, lat), upper.size());
  }
}

// What the switches hold: the fast path's working tables (every repair was pushed).
discovery::HeldTables held_of(const daemon::FastPath& fast) {
  discovery::HeldTables held;
  held.row = [&fast](Guid g) -> std::span<const std::uint8_t> {
    const routing::Topology& t = fast.rerouter().topology();
    auto n = t.find_by_guid(g);
    if (!n) return {};
    const routing::Rerouter& rr = fast.rerouter();
    return {rr.row(t.node(*n).switch_index), rr.lft_entries()};
  };
  return held;
}

class Bench {
 public:
  Bench(discovery::sim::SimFabric& sim, daemon::FastPath& fast, bool extended)
      : sim_(sim), fast_(&fast), extended_(extended), engine_(strand_, sim) {
    // Traps that come while the fast path probes or pushes (repeats of lost
    // ones) are repressed, as the SM does.
    engine_.set_unsolicited_handler(
        [this](const mad::Smp&, const discovery::Mad& m) { (void)take_trap(m); });
  }

  // Runs one coroutine on the engine's event loop to its end. The engine is
  // not started (nothing watches the simulator between calls: collect_traps
  // reads it directly, to time the traps' arrival).
  template <class T, class Make>
  T on_engine(Make make) {
    std::optional<T> out;
    boost::asio::co_spawn(
        strand_, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await make()); },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io_.restart();
    io_.run();
    return std::move(*out);
  }

  // The fast path in use (a full recompute brings a new one).
  daemon::FastPath& fast() { return *fast_; }
  void use(daemon::FastPath& f) {
    fast_ = &f;
    refused_ = false;
  }

  // Receives the traps the last fault caused (waiting for the first one),
  // represses them, returns their issuers and when the first arrived.
  struct Traps {
    std::vector<std::uint32_t> lids;
    Clock::time_point t0;
    std::chrono::nanoseconds tt0{};
  };
  Result<Traps> collect_traps(std::chrono::microseconds first_wait) {
    Traps out;
    for (std::chrono::microseconds wait = first_wait;; wait = std::chrono::microseconds{0}) {
      auto got = sim_.receive(wait);
      if (!got.ok()) return got.error();
      if (!got->has_value()) break;
      if (out.lids.empty()) {
        out.t0 = Clock::now();
        out.tt0 = sim_.now();
      }
      if (auto lid = take_trap(**got)) out.lids.push_back(*lid);
    }
    return out;
  }

  // Represses a trap; returns its trap-128 issuer.
  std::optional<std::uint32_t> take_trap(const discovery::Mad& m) {
    auto smp = mad::decode_smp(m.data);
    if (!smp.ok() || smp->method != mad::Method::kTrap) return std::nullopt;
    (void)sim_.send(discovery::trap_repress(*smp, m));
    const mad::Notice n = mad::Notice::decode(mad::data_of(*smp));
    if (n.trap_number != 128) return std::nullopt;
    return n.trap128_lid(extended_);
  }

  // One failure: `cut` goes down in the simulator, the fast path repairs.
  Result<void> fail_links(const std::vector<PortRef>& cut, Run& run, bool leaf) {
    for (const PortRef& r : cut) SUBNETD_TRY(sim_.link_down(r));
    Traps traps;
    SUBNETD_TRY_ASSIGN(traps, collect_traps(std::chrono::microseconds{1000}));
    if (traps.lids.empty()) {
      ++run.missed;  // no trap arrived (both ends' traps lost or still outstanding)
      ++run.no_trap;
      return {};
    }
    daemon::Identified found;
    SUBNETD_TRY_ASSIGN(found, on_engine<Result<daemon::Identified>>(
                                  [&] { return fast_->identify(engine_, traps.lids); }));
    if (found.failed.empty()) {
      ++run.missed;
      return {};
    }
    const auto t_probed = sim_.now();
    daemon::PushOutcome o;
    SUBNETD_TRY_ASSIGN(o, on_engine<Result<daemon::PushOutcome>>(
                              [&]() -> boost::asio::awaitable<Result<daemon::PushOutcome>> {
                                auto pushed = co_await fast_->repair_and_push(engine_, found.failed,
                                                                              traps.t0);
                                // Off the latency path: the answers (the SM awaits them
                                // in the background).
                                if (pushed.ok() && pushed->in_flight)
                                  co_await pushed->in_flight->confirmed();
                                co_return pushed;
                              }));
    // Off the latency path, as the SM does after every reroute: directed
    // routes over the links believed up now.
    fast_->refresh_paths();
    if (o.verdict != routing::RepairReport::Verdict::kRepaired) {
      ++run.refused;
      refused_ = true;
      last_refusal_ = o.reason;
      return {};
    }
    Sample s;
    s.latency_ms = ms(o.latency);
    s.repair_ms = ms(o.compute);
    s.route_ms = ms(o.compute_route);
    s.check_ms = ms(o.compute_check);
    s.probe_ms = ms(found.duration);
    if (o.in_flight) {
      s.confirmed_ms = ms(o.in_flight->confirmed_at - traps.t0);
      s.transport_ms = ms(o.in_flight->transport_confirmed_at - traps.tt0);
    } else {
      s.confirmed_ms = s.latency_ms;
    }
    s.probe_sim_ms = ms(t_probed - traps.tt0);
    s.entries = o.changed_entries;
    s.blocks = o.blocks;
    s.orphans = o.orphans;
    s.probe_smps = found.smps;
    s.targeted = found.targeted_smps;
    s.explained = found.explained;
    s.leaf = leaf;
    run.samples.push_back(s);
    return {};
  }

  // Brings `cut` back up and puts the built tables back on the switches.
  Result<void> restore(const std::vector<PortRef>& cut) {
    for (const PortRef& r : cut) SUBNETD_TRY(sim_.link_up(r));
    // A switch keeps one trap outstanding; one lost on the failed link is
    // repeated 100 ms (simulated) later, and until it is repressed that
    // switch raises no new trap. Let the repeats come and repress them.
    for (int i = 0; i < 3; ++i) {
      Traps ignored;
      SUBNETD_TRY_ASSIGN(ignored, collect_traps(std::chrono::milliseconds{110}));
    }
    // Blocks that differ from the built tables, before the reset forgets them.
    const std::vector<routing::DirtyBlock> dirty = fast_->rerouter().changed_blocks();
    const routing::Routes& base = *fast_->rerouter().base_routes();
    fast_->reset();
    discovery::FlowOptions po;
    po.window = 64;
    discovery::Flow pipe(engine_, po);
    const mad::AttrId attr =
        extended_ ? mad::AttrId::kExtLinearForwardingTable : mad::AttrId::kLinearForwardingTable;
    std::uint64_t failed = 0;
    // In slices: after thousands of accumulated failures most of the fabric's
    // 17 million blocks are dirty, and queueing them all at once would hold
    // gigabytes of pending SMPs.
    constexpr std::size_t kSlice = 65536;
    std::vector<std::uint8_t> path;
    for (std::size_t from = 0; from < dirty.size(); from += kSlice) {
      const std::size_t to = std::min(dirty.size(), from + kSlice);
      for (std::size_t i = from; i < to; ++i) {
        const SwitchIndex s = dirty[i].sw;
        const std::uint32_t b = dirty[i].block;
        // Dirty blocks come by switch: one path per switch.
        if (i == 0 || dirty[i - 1].sw != s) path = fast_->path_to(s);
        mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, attr, b, path, 0);
        mad::LinearForwardingTable t;
        const auto blk = base.lfts[s.value].block(b);
        std::copy(blk.begin(), blk.end(), t.ports.begin());
        t.encode(mad::data_of(smp));
        pipe.submit(smp, 0, [&failed](Result<mad::Smp> r) { failed += r.ok() ? 0 : 1; });
      }
      on_engine<int>([&]() -> boost::asio::awaitable<int> {
        co_await pipe.drained();
        co_return 0;
      });
    }
    if (failed != 0) {
      return Error{Errc::kTimeout, fmt::format("{} blocks not restored", failed)};
    }
    refused_ = false;
    return {};
  }

  bool refused() const { return refused_; }
  const std::string& last_refusal() const { return last_refusal_; }

 private:
  discovery::sim::SimFabric& sim_;
  daemon::FastPath* fast_;
  bool extended_;
  boost::asio::io_context io_;
  discovery::Strand strand_ = boost::asio::make_strand(io_);
  discovery::MadEngine engine_;
  bool refused_ = false;
  std::string last_refusal_;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const auto [key, val] = split_arg(argv[i]);
    bool ok = true;
    if (key.empty()) {
      a.spec = val;
    } else if (key == "engine") {
      a.engine = val;
    } else if (key == "lid_bits") {
      ok = parse_value(val, a.lid_bits);
    } else if (key == "failures") {
      ok = parse_value(val, a.failures);
    } else if (key == "accumulate") {
      ok = parse_value(val, a.accumulate);
    } else if (key == "switches") {
      ok = parse_value(val, a.switch_failures);
    } else if (key == "seed") {
      ok = parse_value(val, a.seed);
    } else if (key == "latency") {
      ok = parse_value(val, a.latency);
    } else if (key == "threads") {
      ok = parse_value(val, a.threads);
    } else if (key == "links") {
      a.links = val;
      ok = val == "all" || val == "ca" || val == "upper";
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", argv[i]);
      return 2;
    }
  }
  std::printf(
      "reroute_bench %s engine=%s lid_bits=%d failures=%d accumulate=%.1f%% switches=%d "
      "seed=%llu latency=%d threads=%u links=%s\n",
      a.spec.c_str(), a.engine.c_str(), a.lid_bits, a.failures, a.accumulate, a.switch_failures,
      static_cast<unsigned long long>(a.seed), a.latency ? 1 : 0, a.threads, a.links.c_str());

  routing::WorkerPool pool(a.threads);
  auto fabric = routed_fabric(a.spec, a.lid_bits, a.engine, pool);
  if (!fabric.ok()) return fail("fabric", fabric.error());
  const routing::Topology& topo = fabric->topo;
  const routing::LidMap& lids = fabric->lids;
  const std::shared_ptr<const routing::Routes> routes = fabric->routes;
  auto engine = routing::make_engine(a.engine);  // for the full recomputes below
  if (!engine.ok()) return fail("engine", engine.error());
  auto t0 = Clock::now();

  // The simulator with the SM on the first CA, programmed as a bring-up
  // would: LIDs, SwitchInfo, every LFT block; ports stay in INIT.
  discovery::sim::SimOptions so;
  so.lid_bits = a.lid_bits;
  if (a.latency) so.latency = discovery::sim::LatencyModel{};
  t0 = Clock::now();
  auto made = programmed_sim(*fabric, so, false);
  if (!made.ok()) return fail("simulator", made.error());
  discovery::sim::SimFabric& sim = *made->sim;
  const discovery::SweepResult& sweep = made->sweep;
  const NodeId sm_node = sweep.sm_node;
  const PortNum sm_port = sweep.sm_port;
  discovery::Programmer programmer(sim, program_options(false));
  std::printf(
      "simulator built and programmed: %llu LFT blocks, %llu port LIDs in %.1f s "
      "(simulated %.1f s)\n",
      static_cast<unsigned long long>(made->report.lft_blocks_sent),
      static_cast<unsigned long long>(made->report.port_lid_sets), seconds_since(t0),
      std::chrono::duration<double>(made->report.duration).count());

  daemon::FastPathConfig fc;
  fc.extended_lids = lids.space.extended();
  fc.sm_lid = lids.base_lid(topo, sm_node, sm_port).value;
  fc.timeout = std::chrono::milliseconds{20};
  t0 = Clock::now();
  auto built = daemon::FastPath::build(topo, lids, routes, sm_node, sm_port, fc, pool);
  if (!built.ok()) return fail("fast path", built.error());
  daemon::FastPath& fast = **built;
  const routing::RerouterStats& st = fast.rerouter().stats();
  std::printf(
      "rerouter precompute: %.2f s (tables %.2f, loads %.2f, down_ok %.2f, warm-up repair "
      "%.1f ms: %llu entries, %llu blocks); memory %.1f MiB (working tables %.1f MiB)\n",
      seconds_since(t0), std::chrono::duration<double>(st.t_tables).count(),
      std::chrono::duration<double>(st.t_loads).count(),
      std::chrono::duration<double>(st.t_down_ok).count(),
      std::chrono::duration<double, std::milli>(st.t_warmup).count(),
      static_cast<unsigned long long>(st.warmup_changes),
      static_cast<unsigned long long>(st.warmup_blocks),
      static_cast<double>(st.memory_bytes) / (1 << 20),
      static_cast<double>(st.table_bytes) / (1 << 20));

  // Switch-to-switch links, once each.
  std::vector<PortRef> links;
  std::vector<std::uint8_t> has_ca(topo.num_switches(), 0);
  for (NodeId sw : topo.switches()) {
    for (unsigned p = 1; p <= topo.node(sw).num_ports; ++p) {
      const routing::Port& port = topo.port(sw, static_cast<PortNum>(p));
      if (!port.connected()) continue;
      if (topo.node(port.remote_node).type != routing::NodeType::kSwitch) {
        has_ca[topo.node(sw).switch_index.value] = 1;
        continue;
      }
      if (std::pair(sw.value, p) < std::pair(port.remote_node.value, unsigned{port.remote_port}))
        links.push_back({sw, static_cast<PortNum>(p)});
    }
  }
  auto touches_ca = [&](const PortRef& l) {
    const routing::Port& p = topo.port(l);
    return has_ca[topo.node(l.node).switch_index.value] != 0 ||
           has_ca[topo.node(p.remote_node).switch_index.value] != 0;
  };
  Bench bench(sim, fast, lids.space.extended());
  std::mt19937_64 rng(a.seed);
  int status = 0;
  auto check = [&](Result<void> r, const char* what) {
    if (!r.ok()) {
      std::fprintf(stderr, "%s: %s\n", what, r.error().message.c_str());
      status = 1;
    }
    return r.ok();
  };

  // 1. Single failures, each restored.
  Run single{fmt::format("{} single link failures, each restored", a.failures), {}, 0, 0};
  t0 = Clock::now();
  std::vector<PortRef> singles;
  for (const PortRef& l : links) {
    if (a.links == "all" || (a.links == "ca") == touches_ca(l)) singles.push_back(l);
  }
  for (int i = 0; i < a.failures && !singles.empty(); ++i) {
    const PortRef l = singles[rng() % singles.size()];
    if (!check(bench.fail_links({l}, single, touches_ca(l)), "failure")) break;
    if (!check(bench.restore({l}), "restore")) break;
  }
  print_run(single, a.latency);
  std::printf("  (%.1f s)\n", seconds_since(t0));

  // 2. Accumulating failures.
  if (a.accumulate > 0 && status == 0) {
    Run acc{fmt::format("failures accumulating to {:.1f}% of {} links", a.accumulate, links.size()),
            {},
            0,
            0};
    std::vector<PortRef> down;
    std::vector<PortRef> pool_links = links;
    std::vector<std::unique_ptr<daemon::FastPath>> fallbacks;
    std::vector<std::unique_ptr<routing::Topology>> fallback_topos;
    const auto target =
        static_cast<std::size_t>(static_cast<double>(links.size()) * a.accumulate / 100.0);
    t0 = Clock::now();
    while (down.size() < target && !pool_links.empty()) {
      const std::size_t at = rng() % pool_links.size();
      const PortRef l = pool_links[at];
      pool_links.erase(pool_links.begin() + static_cast<std::ptrdiff_t>(at));
      down.push_back(l);
      if (!check(bench.fail_links({l}, acc, touches_ca(l)), "failure")) break;
      if (bench.refused()) {
        // As the SM does: a full recompute on the fabric as it is now, the
        // blocks that differ programmed, a new fast path on it.
        const auto tr = Clock::now();
        // The refused repair was rolled back, links included: cut this one here.
        auto live = std::make_unique<routing::Topology>(bench.fast().live_topology());
        live->disconnect(l);
        auto rerouted = (*engine)->compute(*live, lids, {}, pool, {});
        if (!rerouted.ok()) return fail("full recompute", rerouted.error());
        const auto new_routes = std::make_shared<const routing::Routes>(std::move(*rerouted));
        const discovery::HeldTables held = held_of(bench.fast());
        discovery::SweepResult now;
        now.topology = *live;
        now.paths = bfs_paths(*live, sm_node, sm_port);
        now.sm_node = sm_node;
        now.sm_port = sm_port;
        auto reprogrammed = programmer.program(now, lids, *new_routes, &held);
        if (!reprogrammed.ok()) return fail("reprogram", reprogrammed.error());
        auto rebuilt = daemon::FastPath::build(*live, lids, new_routes, sm_node, sm_port, fc, pool);
        if (!rebuilt.ok()) return fail("fast path", rebuilt.error());
        bench.use(**rebuilt);
        std::printf(
            "  refused after %zu links down (%s): full recompute + %llu LFT blocks in "
            "%.2f s\n",
            down.size(), bench.last_refusal().c_str(),
            static_cast<unsigned long long>(reprogrammed->lft_blocks_sent), seconds_since(tr));
        fallbacks.push_back(std::move(*rebuilt));
        fallback_topos.push_back(std::move(live));
      }
    }
    print_run(acc, a.latency);
    std::printf("  (%.1f s, %zu links down, %zu full recomputes)\n", seconds_since(t0), down.size(),
                fallbacks.size());
    if (fallbacks.empty()) {
      check(bench.restore(down), "restore");
    } else {
      // Back to the built fabric and tables.
      for (const PortRef& r : down) check(sim.link_up(r), "link up");
      for (int i = 0; i < 3; ++i) (void)bench.collect_traps(std::chrono::milliseconds{110});
      const discovery::HeldTables held = held_of(bench.fast());
      auto back = programmer.program(sweep, lids, *routes, &held);
      if (!back.ok()) return fail("reprogram", back.error());
      fast.reset();
      bench.use(fast);
    }
  }

  // 3. Switch failures: every switch-to-switch link of a switch at once.
  if (a.switch_failures > 0 && status == 0) {
    Run sw{fmt::format("{} switch failures (all links of the switch at once)", a.switch_failures),
           {},
           0,
           0};
    for (int i = 0; i < a.switch_failures && status == 0; ++i) {
      const NodeId victim =
          topo.switch_node(SwitchIndex{static_cast<std::uint32_t>(rng() % topo.num_switches())});
      if (victim == topo.port(sm_node, sm_port).remote_node) continue;  // the SM's own switch
      std::vector<PortRef> cut;
      for (unsigned p = 1; p <= topo.node(victim).num_ports; ++p) {
        const routing::Port& port = topo.port(victim, static_cast<PortNum>(p));
        if (port.connected() && topo.node(port.remote_node).type == routing::NodeType::kSwitch)
          cut.push_back({victim, static_cast<PortNum>(p)});
      }
      if (!check(bench.fail_links(cut, sw, has_ca[topo.node(victim).switch_index.value] != 0),
                 "switch failure"))
        break;
      check(bench.restore(cut), "restore");
    }
    print_run(sw, a.latency);
  }
  const discovery::sim::SimStats ss = sim.stats();
  std::printf("\nsimulator: %llu SMPs handled, %llu traps sent; dropped:",
              static_cast<unsigned long long>(ss.smps_handled),
              static_cast<unsigned long long>(ss.traps_sent));
  for (std::size_t r = 0; r < discovery::sim::kNumDropReasons; ++r) {
    if (ss.drops[r] != 0) {
      std::printf(" %s %llu",
                  discovery::sim::drop_reason_name(static_cast<discovery::sim::DropReason>(r)),
                  static_cast<unsigned long long>(ss.drops[r]));
    }
  }
  std::printf("\npeak RSS %.0f MiB\n", peak_rss_mib());
  return status;
}

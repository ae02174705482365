// SA benchmark: Get PathRecord answered by the SA core (SaAgent::answer on
// encoded MADs, from a published FabricState), as an MPI job start asks for
// them: random pairs of CA ports, by LIDs (SLID + DLID) and by GIDs (SGID +
// DGID + P_Key + NumbPath + Reversible, what librdmacm and ibacm send).
//
//   sa_bench [SPEC] [engine=ftree] [lid_bits=16] [queries=1000000]
//            [threads=1,2] [batch=1,64] [seed=1] [beside=none|route|perfmgr]
//
// SPEC defaults to fat-tree:levels=3,k=80,hosts=41000: k=80's 8,000 switches
// and 5-switch paths, with as many CAs as IBA's 16-bit LIDs address (the
// SA's PathRecord carries 16-bit LIDs; the full 128k-CA k=80 needs
// subnetd's extended LIDs, which have no PathRecord). Every answer is
// checked: status OK, one record, the DLID asked. `beside=route` recomputes
// the whole routing on another thread while the SA answers (what a heavy
// sweep costs the machine; the SA reads its snapshot and never waits for
// it). `beside=perfmgr` runs, again and again on another thread, what a
// counter sweep computes: the performance manager's bookkeeping of every
// port's PortCounters and PortCountersExtended readings (the MADs
// themselves go through the transport, not the SA's thread). `batch`: requests handed to
// SaAgent::answer_many at a time, as the umad transport drains its queue (1 = one by one). Prints
// answers/s and the latency p50/p99/max of one call (a batch's answers are all sent when the call
// returns).

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "daemon/perfmgr/perf_manager.hpp"
#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::bench;
namespace mad = discovery::mad::sa;

struct Args {
  std::string spec = "fat-tree:levels=3,k=80,hosts=41000";
  std::string engine = "ftree";
  int lid_bits = 16;
  std::size_t queries = 1'000'000;
  std::vector<unsigned> threads{1, 2};
  std::vector<unsigned> batches{1, 64};
  std::uint64_t seed = 1;
  std::string beside = "none";
};

struct Query {
  daemon::sa::MadBytes bytes;
  Lid requester;
  Lid dlid;
};

// PathRecord component bits (IBA 15.2.5.16).
constexpr unsigned kDgid = 2, kSgid = 3, kDlid = 4, kSlid = 5, kReversible = 11, kNumbPath = 12,
                   kPKey = 13;

void set(mad::SaMad& q, const char* name, std::uint64_t v) {
  mad::set_field(q.data, mad::component(*mad::layout_of(q.attr_id), name), v);
}

void set_gid(mad::SaMad& q, const char* name, std::uint64_t guid) {
  const std::size_t at = mad::component(*mad::layout_of(q.attr_id), name).offset / 8;
  mad::set_field(std::span(q.data).subspan(at, 8), {"p", 0, 64}, 0xFE80'0000'0000'0000ULL);
  mad::set_field(std::span(q.data).subspan(at + 8, 8), {"g", 0, 64}, guid);
}

std::vector<Query> make_queries(const state::FabricState& st, std::size_t n, bool by_gid,
                                std::uint64_t seed) {
  const routing::Topology& t = *st.topology;
  std::vector<PortRef> cas;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId node{i};
    if (t.node(node).type == routing::NodeType::kSwitch) continue;
    for (PortNum p = 1; p <= t.node(node).num_ports; ++p) {
      if (st.lids->base_lid(t, node, p).value != 0) cas.push_back({node, p});
    }
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, cas.size() - 1);
  std::vector<Query> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const PortRef a = cas[pick(rng)], b = cas[pick(rng)];
    const Lid la = st.lids->base_lid(t, a.node, a.port), lb = st.lids->base_lid(t, b.node, b.port);
    mad::SaMad q;
    q.method = static_cast<std::uint8_t>(mad::Method::kGet);
    q.attr_id = static_cast<std::uint16_t>(mad::Attr::kPathRecord);
    q.tid = i;
    if (by_gid) {
      q.comp_mask = (1ULL << kDgid) | (1ULL << kSgid) | (1ULL << kReversible) |
                    (1ULL << kNumbPath) | (1ULL << kPKey);
      set_gid(q, "SGID", t.port(a.node, a.port).guid.value);
      set_gid(q, "DGID", t.port(b.node, b.port).guid.value);
      set(q, "Reversible", 1);
      set(q, "NumbPath", 1);
      set(q, "P_Key", 0xFFFF);
    } else {
      q.comp_mask = (1ULL << kSlid) | (1ULL << kDlid);
      set(q, "SLID", la.value);
      set(q, "DLID", lb.value);
    }
    out.push_back({mad::encode_sa(q), la, lb});
  }
  return out;
}

struct RunResult {
  double seconds = 0;
  std::vector<double> latency_us;
  std::size_t bad = 0;
  std::string first_bad;
};

// Answers queries [from, to), `batch` at a time, and checks each answer.
void answer_range(daemon::sa::SaAgent& agent, const state::FabricState& st,
                  const std::vector<Query>& qs, std::size_t from, std::size_t to, unsigned batch,
                  RunResult& r) {
  const mad::Component& dlid_c =
      mad::component(*mad::layout_of(static_cast<std::uint16_t>(mad::Attr::kPathRecord)), "DLID");
  r.latency_us.reserve((to - from) / batch + 1);
  std::vector<daemon::sa::SaAgent::SaRequest> reqs;
  for (std::size_t at = from; at < to; at += batch) {
    const std::size_t end = std::min<std::size_t>(to, at + batch);
    reqs.clear();
    for (std::size_t i = at; i < end; ++i) reqs.push_back({qs[i].bytes, qs[i].requester});
    const auto t0 = Clock::now();
    const auto answers = agent.answer_many(reqs, st);
    r.latency_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    for (std::size_t i = at; i < end; ++i) {
      const auto& answer = answers[i - at];
      std::string why;
      if (answer.size() != 1) {
        why = fmt::format("{} MADs", answer.size());
      } else {
        auto d = mad::decode_sa(answer.front());
        if (!d.ok() || d->status != 0) {
          why = d.ok() ? fmt::format("status {:#x}", d->status) : d.error().message;
        } else if (mad::get_field(d->data, dlid_c) != qs[i].dlid.value) {
          why = "wrong DLID";
        }
      }
      if (!why.empty() && r.bad++ == 0) r.first_bad = fmt::format("query {}: {}", i, why);
    }
  }
}

RunResult run(daemon::sa::SaAgent& agent, const state::FabricState& st,
              const std::vector<Query>& qs, unsigned threads, unsigned batch) {
  std::vector<RunResult> parts(threads);
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < threads; ++k) {
    const std::size_t from = qs.size() * k / threads, to = qs.size() * (k + 1) / threads;
    pool.emplace_back([&, k, from, to] { answer_range(agent, st, qs, from, to, batch, parts[k]); });
  }
  for (std::thread& th : pool) th.join();
  RunResult all;
  all.seconds = seconds_since(t0);
  for (RunResult& p : parts) {
    all.latency_us.insert(all.latency_us.end(), p.latency_us.begin(), p.latency_us.end());
    if (all.bad == 0 && p.bad != 0) all.first_bad = p.first_bad;
    all.bad += p.bad;
  }
  return all;
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
    } else if (arg.key == "queries") {
      ok = parse_value(arg.value, a.queries) && a.queries > 0;
    } else if (arg.key == "threads") {
      ok = parse_positive_list(arg.value, a.threads);
    } else if (arg.key == "batch") {
      ok = parse_positive_list(arg.value, a.batches);
    } else if (arg.key == "seed") {
      ok = parse_value(arg.value, a.seed);
    } else if (arg.key == "beside") {
      a.beside = arg.value;
      ok = a.beside == "none" || a.beside == "route" || a.beside == "perfmgr";
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", argv[i]);
      return 2;
    }
  }
  std::printf("sa_bench %s engine=%s lid_bits=%d queries=%zu seed=%llu beside=%s\n", a.spec.c_str(),
              a.engine.c_str(), a.lid_bits, a.queries, static_cast<unsigned long long>(a.seed),
              a.beside.c_str());

  routing::WorkerPool pool(1);
  auto fabric = routed_fabric(a.spec, a.lid_bits, a.engine, pool);
  if (!fabric.ok()) return fail("fabric", fabric.error());
  state::FabricState st;
  auto topo = std::make_shared<const routing::Topology>(fabric->topo);
  st.topology = topo;
  st.lids = std::make_shared<const routing::LidMap>(fabric->lids);
  st.routes = fabric->routes;

  // Beside the SA: the routing recomputed again and again (a heavy sweep's
  // compute), on its own thread.
  std::atomic<bool> stop{false};
  std::atomic<int> recomputes{0};
  std::thread beside;
  if (a.beside == "route") {
    beside = std::thread([&] {
      routing::WorkerPool bp(1);
      auto engine = routing::make_engine(a.engine);
      while (!stop.load() && engine.ok()) {
        auto r = (*engine)->compute(*topo, *st.lids, {}, bp, {});
        if (!r.ok()) break;
        recomputes.fetch_add(1);
      }
    });
  }

  std::atomic<int> ingests{0};
  double ingest_s = 0;  // the beside thread's, read after it is joined
  if (a.beside == "perfmgr") {
    beside = std::thread([&] {
      namespace pma = discovery::mad::pma;
      const auto targets = daemon::perfmgr::targets_of(*topo, *st.lids);
      std::vector<daemon::perfmgr::Reading> readings(targets.size());
      daemon::perfmgr::PerfManager pm;
      std::mt19937_64 rng(a.seed);
      for (std::uint64_t round = 1; !stop.load(); ++round) {
        for (auto& r : readings) {
          pma::PortCounters c;
          c.xmit_words = static_cast<std::uint32_t>(round * 1000 + rng() % 1000);
          c.rcv_words = c.xmit_words;
          c.symbol_errors = static_cast<std::uint32_t>(rng() % 10000 == 0 ? round : 0);
          r.counters = c;
          pma::PortCountersExtended e;
          e.xmit_words = round * 100000;
          e.rcv_words = round * 100000;
          r.extended = e;
        }
        const auto t0 = std::chrono::steady_clock::now();
        auto snap = pm.ingest(targets, readings, std::chrono::system_clock::now(), {}, "");
        ingest_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (snap->ports.empty()) break;
        ingests.fetch_add(1);
      }
    });
  }

  daemon::sa::SaAgent agent;
  int status = 0;
  for (const bool by_gid : {false, true}) {
    const auto qs = make_queries(st, a.queries, by_gid, a.seed);
    std::printf("Get PathRecord by %s (%zu random CA pairs):\n", by_gid ? "GIDs" : "LIDs",
                qs.size());
    for (const unsigned batch : a.batches) {
      for (const unsigned threads : a.threads) {
        const RunResult r = run(agent, st, qs, threads, batch);
        std::printf(
            "  batch %3u, %u thread%s: %10.0f answers/s  call p50 %.2f us  p99 %.2f us  max %.1f "
            "us  (%.2f s)\n",
            batch, threads, threads == 1 ? " " : "s", static_cast<double>(qs.size()) / r.seconds,
            percentile(r.latency_us, 0.5), percentile(r.latency_us, 0.99),
            percentile(r.latency_us, 1.0), r.seconds);
        if (r.bad != 0) {
          std::printf("  %zu wrong answers; first: %s\n", r.bad, r.first_bad.c_str());
          status = 1;
        }
      }
    }
  }
  if (beside.joinable()) {
    stop.store(true);
    beside.join();
    if (a.beside == "route") {
      std::printf("routing recomputed %d times beside the SA\n", recomputes.load());
    } else {
      std::printf("counter sweeps ingested %d times beside the SA (%.0f ms each)\n", ingests.load(),
                  ingests.load() == 0 ? 0.0 : 1000.0 * ingest_s / ingests.load());
    }
  }
  const auto s = agent.stats();
  std::printf("SA stats: %llu requests, %llu errors, %llu records\n",
              static_cast<unsigned long long>(s.requests),
              static_cast<unsigned long long>(s.errors),
              static_cast<unsigned long long>(s.records));
  return status;
}

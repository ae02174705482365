// MadEngine flows against the simulator: windows, and urgent flows (the
// fast path's) holding back the others while they work.

#include "discovery/mad_engine.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"

namespace subnetd::discovery {
namespace {

std::unique_ptr<sim::SimFabric> fabric() {
  auto topo = topo::generate("fat-tree:levels=2,radix=4");
  if (!topo.ok()) return nullptr;
  sim::SimOptions so;
  so.latency = sim::LatencyModel{};  // answers take (virtual) time
  auto s = sim::SimFabric::create(std::move(topo).value(), so);
  return s.ok() ? std::move(s).value() : nullptr;
}

// NodeInfo of the SM's own port: an empty directed route.
mad::Smp own_node_info() {
  return mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kNodeInfo, 0,
                          std::span<const std::uint8_t>{}, 0);
}

constexpr int kBulk = 5000;

struct Trace {
  int bulk_done = 0;
  int urgent_done = 0;
  int bulk_done_while_urgent = 0;  // bulk answers between the urgent submit and its end
  int bulk_sent_at_urgent_submit = 0;
  bool all_ok = true;
};

// A bulk flow of kBulk requests (window 4), then, once it runs, an urgent or
// ordinary flow of 10 requests one at a time (window 1).
Trace run(bool urgent) {
  auto sim = fabric();
  EXPECT_NE(sim, nullptr);
  if (sim == nullptr) return {};
  auto body = [urgent](MadEngine& engine) -> boost::asio::awaitable<Trace> {
    Trace t;
    FlowOptions bulk_opts;
    bulk_opts.window = 4;
    Flow bulk(engine, bulk_opts);
    bool urgent_running = false;
    for (int i = 0; i < kBulk; ++i) {
      bulk.submit(own_node_info(), 0, [&t, &urgent_running](Result<mad::Smp> r) {
        t.all_ok = t.all_ok && r.ok();
        ++t.bulk_done;
        if (urgent_running) ++t.bulk_done_while_urgent;
      });
    }
    co_await bulk.drained(kBulk - 100);  // it is under way (a pump turn takes up to 1024)
    FlowOptions fast_opts;
    fast_opts.window = 1;
    fast_opts.urgent = urgent;
    Flow fast(engine, fast_opts);
    urgent_running = true;
    t.bulk_sent_at_urgent_submit = static_cast<int>(bulk.in_flight());
    for (int i = 0; i < 10; ++i) {
      fast.submit(own_node_info(), 0, [&t, &urgent_running](Result<mad::Smp> r) {
        t.all_ok = t.all_ok && r.ok();
        if (++t.urgent_done == 10) urgent_running = false;
      });
    }
    co_await fast.drained();
    co_await bulk.drained();
    co_return t;
  };
  return run_blocking<Trace>(*sim, body);
}

TEST(MadEngineUrgent, OtherFlowsSendNothingNewWhileAnUrgentFlowWorks) {
  const Trace t = run(/*urgent=*/true);
  EXPECT_TRUE(t.all_ok);
  EXPECT_EQ(t.urgent_done, 10);
  EXPECT_EQ(t.bulk_done, kBulk);  // held back, then resumed
  // Only what the bulk flow had in flight when the urgent one began.
  EXPECT_LE(t.bulk_done_while_urgent, t.bulk_sent_at_urgent_submit);
}

TEST(MadEngineUrgent, OrdinaryFlowsShareTheTransport) {
  // The same without `urgent`: the bulk flow keeps its window full, so its
  // answers interleave with the other flow's (what the test above rules out).
  const Trace t = run(/*urgent=*/false);
  EXPECT_TRUE(t.all_ok);
  EXPECT_EQ(t.urgent_done, 10);
  EXPECT_EQ(t.bulk_done, kBulk);
  EXPECT_GT(t.bulk_done_while_urgent, t.bulk_sent_at_urgent_submit);
}

}  // namespace
}  // namespace subnetd::discovery

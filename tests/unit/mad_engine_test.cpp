// MadEngine flows against the simulator: windows (overall and per
// destination), timeouts of flows with different timeouts, the checked
// (outcome only) callback, and urgent flows (the fast path's) holding back
// the others while they work.

#include "discovery/mad_engine.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"

namespace subnetd::discovery {
namespace {

std::unique_ptr<sim::SimFabric> fabric(std::uint32_t sma_queue_depth = 64) {
  auto topo = topo::generate("fat-tree:levels=2,radix=4");
  if (!topo.ok()) return nullptr;
  sim::SimOptions so;
  so.latency = sim::LatencyModel{};  // answers take (virtual) time
  so.latency->sma_queue_depth = sma_queue_depth;
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

// NodeInfo of the node `path` leads to: {} the SM's own CA, {1} the switch
// it is cabled to, {1, p} whatever that switch's port p leads to.
mad::Smp node_info(std::vector<std::uint8_t> path) {
  return mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kNodeInfo, 0, path, 0);
}

struct WindowTrace {
  int answered = 0;
  int failed = 0;
  FlowStats stats;
  std::uint64_t sma_drops = 0;
};

// 100 requests each to two SMAs whose queues hold 2, 16 in flight overall;
// per_destination 2 or none.
WindowTrace two_destinations(unsigned per_destination) {
  auto sim = fabric(/*sma_queue_depth=*/2);
  EXPECT_NE(sim, nullptr);
  if (sim == nullptr) return {};
  auto body = [per_destination](MadEngine& engine) -> boost::asio::awaitable<WindowTrace> {
    WindowTrace t;
    FlowOptions o;
    o.window = 16;
    o.per_destination = per_destination;
    o.retries = 0;
    Flow flow(engine, o);
    for (int i = 0; i < 100; ++i) {
      for (std::uint64_t d : {1U, 2U}) {
        flow.submit(
            node_info(d == 1 ? std::vector<std::uint8_t>{} : std::vector<std::uint8_t>{1}), 0,
            [&t](Result<mad::Smp> r) { ++(r.ok() ? t.answered : t.failed); }, DestKey{d});
      }
    }
    co_await flow.drained();
    t.stats = flow.stats();
    co_return t;
  };
  WindowTrace t = run_blocking<WindowTrace>(*sim, body);
  t.sma_drops = sim->stats().drops_of(sim::DropReason::kSmaQueueFull);
  return t;
}

TEST(MadEngineWindow, PerDestinationWindowKeepsEachSmaQueueWithinItsDepth) {
  const WindowTrace t = two_destinations(/*per_destination=*/2);
  EXPECT_EQ(t.answered, 200);
  EXPECT_EQ(t.failed, 0);
  EXPECT_EQ(t.sma_drops, 0U);
  EXPECT_EQ(t.stats.sent, 200U);  // no retries needed
}

TEST(MadEngineWindow, WithoutItTheSameRequestsOverflowTheSmaQueues) {
  // The check above can fail: 16 in flight to two SMAs of depth 2.
  const WindowTrace t = two_destinations(/*per_destination=*/0);
  EXPECT_GT(t.sma_drops, 0U);
  EXPECT_GT(t.failed, 0);
  EXPECT_EQ(t.answered + t.failed, 200);
}

TEST(MadEngineTimeouts, EachFlowTimesOutAfterItsOwnTimeout) {
  // Two flows to a port with no cable (the SMP is dropped): a long timeout
  // submitted first, a short one after it. The short one fails first, at its
  // own deadline, though its deadline was added later.
  auto sim = fabric();
  ASSERT_NE(sim, nullptr);
  struct Out {
    std::vector<std::string> order;
    std::vector<std::chrono::nanoseconds> at;
    std::chrono::nanoseconds start{};
    std::vector<std::string> errors;
  };
  auto body = [&sim](MadEngine& engine) -> boost::asio::awaitable<Out> {
    Out out;
    out.start = sim->now();
    FlowOptions slow_opts;
    slow_opts.timeout = std::chrono::milliseconds{50};
    slow_opts.retries = 1;
    FlowOptions quick_opts;
    quick_opts.timeout = std::chrono::milliseconds{5};
    quick_opts.retries = 2;
    Flow slow(engine, slow_opts);
    Flow quick(engine, quick_opts);
    // A leaf switch of this fat tree has 4 ports, 2 of them to hosts: port
    // 4 of the host's switch leads up, port 200 does not exist at all.
    const std::vector<std::uint8_t> nowhere{1, 200};
    auto note = [&out, &sim](std::string who) {
      return [&out, &sim, who](Result<mad::Smp> r) {
        out.order.push_back(who);
        out.at.push_back(sim->now() - out.start);
        out.errors.push_back(r.ok() ? "answered" : r.error().message);
      };
    };
    auto slow_done = note("slow");
    auto quick_done = note("quick");
    slow.submit(node_info(nowhere), 0, slow_done);
    quick.submit(node_info(nowhere), 0, quick_done);
    co_await quick.drained();
    co_await slow.drained();
    co_return out;
  };
  const Out out = run_blocking<Out>(*sim, body);
  ASSERT_EQ(out.order, (std::vector<std::string>{"quick", "slow"}));
  // 3 tries of 5 ms; 2 of 50 ms.
  EXPECT_GE(out.at[0], std::chrono::milliseconds{15});
  EXPECT_LT(out.at[0], std::chrono::milliseconds{20});
  EXPECT_GE(out.at[1], std::chrono::milliseconds{100});
  EXPECT_LT(out.at[1], std::chrono::milliseconds{110});
  for (const std::string& e : out.errors)
    EXPECT_NE(e.find("no answer after"), std::string::npos) << e;
}

TEST(MadEngineChecked, GivesTheOutcomeWithoutTheAnswer) {
  auto sim = fabric();
  ASSERT_NE(sim, nullptr);
  struct Out {
    int ok = 0;
    std::vector<std::string> errors;
  };
  auto body = [](MadEngine& engine) -> boost::asio::awaitable<Out> {
    Out out;
    Flow flow(engine, FlowOptions{});
    auto done = [&out](Result<void> r) {
      if (r.ok()) {
        ++out.ok;
      } else {
        out.errors.push_back(r.error().message);
      }
    };
    flow.submit_checked(own_node_info(), 0, done);
    // An attribute no SMA knows: answered, with a MAD status.
    mad::Smp bad = mad::make_dr_smp(mad::Method::kGet, static_cast<mad::AttrId>(0x7F7F), 0,
                                    std::span<const std::uint8_t>{}, 0);
    flow.submit_checked(bad, 0, done);
    co_await flow.drained();
    co_return out;
  };
  const Out out = run_blocking<Out>(*sim, body);
  EXPECT_EQ(out.ok, 1);
  ASSERT_EQ(out.errors.size(), 1U);
  EXPECT_NE(out.errors[0].find("MAD status"), std::string::npos) << out.errors[0];
}

}  // namespace
}  // namespace subnetd::discovery

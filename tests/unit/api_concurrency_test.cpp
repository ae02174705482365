// The gRPC API end to end, in process (fixture and fakes:
// api_test_support.hpp): calls that wait on the SM are finished from its
// completion and hold no thread — many at once, late completions after
// cancel, deadline and shutdown, and an anonymous verify flood that leaves
// root its sweeps. The rest of the API: api_service_test.cpp,
// api_operations_test.cpp.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <future>
#include <thread>

#include "api/server.hpp"
#include "api_test_support.hpp"
#include "subnet/v1/subnet.grpc.pb.h"

namespace subnetd::api {
namespace {

using namespace std::chrono_literals;
using grpc::StatusCode;

// ---------------------------------------------------------------------------
// Waiting calls: finished from the SM's completion, never holding a thread

// Unary calls issued at once through the callback stub: a context each and
// their outcomes. `poke` runs after each outcome is recorded (to wake a
// waiter that also watches something else).
class Concurrent {
 public:
  explicit Concurrent(int n, std::function<void()> poke = {})
      : ctxs_(static_cast<std::size_t>(n)), poke_(std::move(poke)) {
    for (auto& c : ctxs_) {
      c = std::make_unique<grpc::ClientContext>();
      c->set_deadline(std::chrono::system_clock::now() + 60s);
    }
  }
  grpc::ClientContext* ctx(int i) { return ctxs_[static_cast<std::size_t>(i)].get(); }
  std::function<void(grpc::Status)> done() {
    return [this](grpc::Status s) {
      {
        std::lock_guard lock(mu_);
        codes_.push_back(s.error_code());
        messages_.push_back(s.error_message());
      }
      if (poke_) poke_();
      // Last: once wait_finished() has seen every callback here, the test
      // may destroy this object.
      std::lock_guard lock(mu_);
      ++returned_;
      cv_.notify_all();
    };
  }
  // Waits until `n` calls have finished; false after 60 s.
  bool wait_finished(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 60s, [&] { return returned_ >= n; });
  }
  std::size_t count(StatusCode code) const {
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(std::count(codes_.begin(), codes_.end(), code));
  }
  std::size_t finished() const {
    std::lock_guard lock(mu_);
    return codes_.size();
  }
  std::string first_message(StatusCode code) const {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < codes_.size(); ++i) {
      if (codes_[i] == code) return messages_[i];
    }
    return {};
  }

 private:
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs_;
  std::function<void()> poke_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<StatusCode> codes_;
  std::vector<std::string> messages_;
  std::size_t returned_ = 0;  // callbacks that are done with this object
};

TEST_F(Api, WaitingCallsHoldNoThread) {
  // One blocking thread and one queue slot: were a waiting call parked on
  // a thread, the second one could not even reach the SM.
  {
    std::lock_guard lock(sm_.mu);
    sm_.hold_sweeps = true;
  }
  ServiceOptions o;
  o.blocking_threads = 1;
  o.max_blocking_queue = 1;
  auto s = Server::start(cfg_, deps(), o);
  ASSERT_TRUE(s.ok()) << s.error().message;
  server_ = std::move(s).value();
  auto stub = unix_stub();
  constexpr int kCalls = 20;
  Concurrent calls(kCalls);
  std::vector<v1::TriggerSweepRequest> reqs(kCalls);
  std::vector<v1::TriggerSweepResponse> resps(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    reqs[static_cast<std::size_t>(i)].set_wait(true);
    stub->async()->TriggerSweep(calls.ctx(i), &reqs[static_cast<std::size_t>(i)],
                                &resps[static_cast<std::size_t>(i)], calls.done());
  }
  ASSERT_TRUE(sm_.wait_until([&] { return sm_.held.size() == kCalls; }))
      << "the SM was asked " << sm_.held.size() << " times; " << calls.finished()
      << " calls ended first: " << calls.first_message(StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(calls.finished(), 0u);
  std::vector<state::Completion<state::SweepReply>> held;
  {
    std::lock_guard lock(sm_.mu);
    held.swap(sm_.held);
  }
  for (auto& done : held) done(state::SweepReply{true, 8, "", {}});
  ASSERT_TRUE(calls.wait_finished(kCalls));
  EXPECT_EQ(calls.count(StatusCode::OK), static_cast<std::size_t>(kCalls));
  for (const auto& r : resps) EXPECT_EQ(r.generation(), 8u);
}

TEST_F(Api, LateCompletionsAfterCancelDeadlineAndShutdown) {
  {
    std::lock_guard lock(sm_.mu);
    sm_.hold_sweeps = true;
    sm_.hold_verifications = true;
  }
  ServiceOptions o;
  o.control_wait_limit = 200ms;
  auto started = Server::start(cfg_, deps(), o);
  ASSERT_TRUE(started.ok()) << started.error().message;
  server_ = std::move(started).value();
  auto stub = unix_stub();

  // 1. The client cancels while the SM works.
  {
    grpc::ClientContext ctx;
    set_deadline(ctx, 60s);
    v1::TriggerSweepRequest req;
    req.set_wait(true);
    v1::TriggerSweepResponse r;
    std::promise<grpc::Status> done;
    stub->async()->TriggerSweep(&ctx, &req, &r, [&](grpc::Status st) { done.set_value(st); });
    ASSERT_TRUE(sm_.wait_until([&] { return sm_.held.size() == 1; }));
    ctx.TryCancel();
    EXPECT_EQ(done.get_future().get().error_code(), StatusCode::CANCELLED);
  }
  // 2. The wait limit passes: DEADLINE_EXCEEDED, the verification goes on.
  {
    grpc::ClientContext ctx;
    set_deadline(ctx, 60s);
    v1::VerifyRoutingResponse r;
    auto st = stub->VerifyRouting(&ctx, {}, &r);
    EXPECT_EQ(st.error_code(), StatusCode::DEADLINE_EXCEEDED);
    EXPECT_NE(st.error_message().find("verification still running after"), std::string::npos)
        << st.error_message();
    EXPECT_NE(st.error_message().find("it continues in the background"), std::string::npos)
        << st.error_message();
  }
  // 3. The server stops while a sweep is awaited: UNAVAILABLE.
  {
    grpc::ClientContext ctx;
    set_deadline(ctx, 60s);
    v1::TriggerSweepRequest req;
    req.set_wait(true);
    v1::TriggerSweepResponse r;
    std::promise<grpc::Status> done;
    stub->async()->TriggerSweep(&ctx, &req, &r, [&](grpc::Status st) { done.set_value(st); });
    ASSERT_TRUE(sm_.wait_until([&] { return sm_.held.size() == 2; }));
    server_->stop(1s);
    auto st = done.get_future().get();
    EXPECT_EQ(st.error_code(), StatusCode::UNAVAILABLE);
    EXPECT_NE(st.error_message().find("stopping"), std::string::npos) << st.error_message();
  }
  server_.reset();
  // The SM answers all of them after the calls ended and the server is
  // gone: nothing may touch a finished call (ASan watches).
  std::vector<state::Completion<state::SweepReply>> held;
  {
    std::lock_guard lock(sm_.mu);
    held.swap(sm_.held);
  }
  for (auto& done : held) done(state::SweepReply{true, 8, "", {}});
  sm_.release_verifications();
}

TEST_F(Api, AnonymousVerifyFloodLeavesRootItsSweeps) {
  // Issue 12.2: anonymous TCP clients flood VerifyRouting (the SM holds
  // every verification until released) while root sweeps over the unix
  // socket. Root's 40 light sweeps all succeed; the flood's excess is
  // refused at once, naming the limit.
  {
    std::lock_guard lock(sm_.mu);
    sm_.hold_verifications = true;
  }
  start();
  constexpr int kFlood = 300;
  auto tcp = v1::SubnetManager::NewStub(tcp_channel());
  Concurrent flood(kFlood, [this] {
    std::lock_guard lock(sm_.mu);
    sm_.changed.notify_all();
  });
  std::vector<v1::VerifyRoutingRequest> reqs(kFlood);
  std::vector<v1::VerifyRoutingResponse> resps(kFlood);
  for (int i = 0; i < kFlood; ++i) {
    tcp->async()->VerifyRouting(flood.ctx(i), &reqs[static_cast<std::size_t>(i)],
                                &resps[static_cast<std::size_t>(i)], flood.done());
  }

  constexpr int kThreads = 4, kSweepsEach = 10;
  std::vector<std::vector<double>> latency_ms(kThreads);
  std::vector<std::string> failures[kThreads];
  std::vector<std::thread> roots;
  for (int t = 0; t < kThreads; ++t) {
    roots.emplace_back([&, t] {
      auto stub = unix_stub();
      for (int i = 0; i < kSweepsEach; ++i) {
        v1::TriggerSweepResponse r;
        const auto t0 = std::chrono::steady_clock::now();
        auto st = light_sweep(*stub, /*wait=*/true, &r);
        latency_ms[static_cast<std::size_t>(t)].push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        if (!st.ok()) failures[t].push_back(st.error_message());
      }
    });
  }
  for (auto& th : roots) th.join();
  std::size_t failed = 0;
  for (const auto& f : failures) {
    failed += f.size();
    for (const auto& m : f) ADD_FAILURE() << "root light sweep failed: " << m;
  }
  EXPECT_EQ(failed, 0u) << "of " << kThreads * kSweepsEach;
  std::vector<double> all;
  for (const auto& v : latency_ms) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  std::printf("root light sweeps under the flood: %zu, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
              all.size(), all[all.size() / 2], all[(all.size() * 99) / 100], all.back());

  // Every flood call is either with the SM or refused, and the refusals
  // came while the admitted ones still wait: nothing queued behind them.
  ASSERT_TRUE(sm_.wait_until([&] {
    return sm_.held_verifies.size() + flood.count(StatusCode::RESOURCE_EXHAUSTED) ==
           static_cast<std::size_t>(kFlood);
  })) << sm_.held_verifies.size()
      << " held, " << flood.count(StatusCode::RESOURCE_EXHAUSTED) << " refused";
  std::size_t admitted = 0;
  {
    std::lock_guard lock(sm_.mu);
    admitted = sm_.held_verifies.size();
  }
  EXPECT_EQ(flood.finished(), static_cast<std::size_t>(kFlood) - admitted);
  EXPECT_GE(admitted, 1u);
  EXPECT_LE(admitted, 16u);
  const std::string refusal = flood.first_message(StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refusal.find("VerifyRouting"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("ipv4:127.0.0.1"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("retry"), std::string::npos) << refusal;
  std::printf("flood: %zu admitted, %zu refused: %s\n", admitted,
              flood.count(StatusCode::RESOURCE_EXHAUSTED), refusal.c_str());

  sm_.release_verifications();
  ASSERT_TRUE(flood.wait_finished(kFlood));
  EXPECT_EQ(flood.count(StatusCode::OK), admitted);
}

}  // namespace
}  // namespace subnetd::api

// api_flood_bench: how long root's `subnetctl sweep --light` takes while
// anonymous TCP clients flood VerifyRouting (issue 12.2).
//
//   api_flood_bench [flooders=4] [in_flight=300] [sweeps=400] [verify_ms=20] [sweep_us=300]
//
// An api::Server on a unix socket and TCP port 0 serves a generated
// fat-tree:levels=2,radix=8 snapshot. A fake SM answers on its own thread,
// as SubnetManager does from its strand: a light sweep after `sweep_us` of
// work (no change found), a verification `verify_ms` after it was asked
// (the SM runs the verifier on its worker pool, off the strand). `flooders`
// anonymous TCP channels each keep `in_flight` VerifyRouting calls going
// (a call that ends is issued again at once). Root runs `sweeps` light
// sweeps with wait over the unix socket, one after the other, first with no
// flood, then under it, and the program prints p50/p99/max latency of each
// run, how many failed, and what the flood got (answers, refusals).
//
// Run: build/release/bin/api_flood_bench (a few seconds).

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "api/server.hpp"
#include "bench_util.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/worker_pool.hpp"
#include "subnet/v1/subnet.grpc.pb.h"

namespace subnetd::bench {
namespace {

namespace v1 = ::subnet::v1;
using namespace std::chrono_literals;

Result<std::shared_ptr<const state::FabricState>> make_state() {
  auto topo = discovery::topo::generate("fat-tree:levels=2,radix=8");
  if (!topo.ok()) return topo.error();
  auto t = std::make_shared<routing::Topology>(std::move(topo).value());
  routing::LidAssignOptions lo;
  lo.space = *routing::LidSpace::from_bits(16);
  auto lids = routing::assign_lids(*t, lo);
  if (!lids.ok()) return lids.error();
  auto map = std::make_shared<routing::LidMap>(std::move(lids).value().map);
  auto engine = routing::make_engine("updn");
  if (!engine.ok()) return engine.error();
  routing::WorkerPool pool(1);
  auto routes = (*engine)->compute(*t, *map, {}, pool, {});
  if (!routes.ok()) return routes.error();
  auto s = std::make_shared<state::FabricState>();
  s->generation = 7;
  s->state = state::SmState::kMaster;
  s->engine = "updn";
  s->topology = std::move(t);
  s->lids = std::move(map);
  s->routes = std::make_shared<routing::Routes>(std::move(routes).value());
  return std::shared_ptr<const state::FabricState>(std::move(s));
}

// The SM's strand: one thread running posted work in order, and work posted
// for later (a verification finishing on the worker pool).
class Strand {
 public:
  Strand() : thread_([this] { run(); }) {}
  ~Strand() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void post(std::function<void()> f, Clock::duration after = {}) {
    {
      std::lock_guard lock(mu_);
      work_.emplace(std::pair{Clock::now() + after, seq_++}, std::move(f));
    }
    cv_.notify_all();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (stopping_) return;
      if (work_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto first = work_.begin();
      const Clock::time_point due = first->first.first;
      if (Clock::now() < due) {
        cv_.wait_until(lock, due);
        continue;
      }
      auto f = std::move(first->second);
      work_.erase(first);
      lock.unlock();
      f();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<Clock::time_point, std::uint64_t>, std::function<void()>> work_;
  std::uint64_t seq_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

class FakeSm final : public state::SmControl {
 public:
  FakeSm(Clock::duration verify_cost, std::chrono::microseconds sweep_cost)
      : verify_cost_(verify_cost), sweep_cost_(sweep_cost) {}
  state::MadCounters mad_counters() const override { return {}; }
  void trigger_sweep(std::string, state::Completion<state::SweepReply> done) override {
    strand_.post([done = std::move(done)] { done(state::SweepReply{true, 7, "", {}}); });
  }
  void trigger_rebalance(std::string reason, state::Completion<state::SweepReply> done) override {
    trigger_sweep(std::move(reason), std::move(done));
  }
  void trigger_light_sweep(std::string,
                           state::Completion<Result<state::SweepReply>> done) override {
    strand_.post([this, done = std::move(done)] {
      const auto until = Clock::now() + sweep_cost_;
      while (Clock::now() < until) {
      }  // the SwitchInfo round trips, as CPU on the strand
      state::LightSweepReport l;
      l.switches = l.answered = 12;
      l.took = sweep_cost_;
      done(state::SweepReply{true, 7, "light sweep: no change", l});
    });
  }
  void verify_routing(state::VerifyRequest,
                      state::Completion<Result<state::VerifyReply>> done) override {
    strand_.post(
        [done = std::move(done)] {
          state::VerifyReply r;
          r.generation = 7;
          r.message = "complete, loop-free, deadlock-free";
          done(std::move(r));
        },
        verify_cost_);
  }
  void set_port_enabled(Guid, PortNum, bool, std::string,
                        state::Completion<Result<void>> done) override {
    strand_.post([done = std::move(done)] { done(ok_result()); });
  }

 private:
  const Clock::duration verify_cost_;
  const std::chrono::microseconds sweep_cost_;
  Strand strand_;  // last: its thread stops before the rest goes
};

// One anonymous client keeping `in_flight` VerifyRouting calls going until
// stop(); counts what they got.
class Flooder {
 public:
  Flooder(std::shared_ptr<grpc::Channel> ch, int in_flight)
      : stub_(v1::SubnetManager::NewStub(std::move(ch))),
        slots_(static_cast<std::size_t>(in_flight)) {}
  void start() {
    {
      std::lock_guard lock(mu_);
      active_ = static_cast<int>(slots_.size());
    }
    for (auto& s : slots_) issue(s);
  }
  // Stops issuing and waits until every call has ended.
  void stop() {
    std::unique_lock lock(mu_);
    stopping_ = true;
    for (auto& s : slots_) {
      if (s.ctx) s.ctx->TryCancel();
    }
    cv_.wait(lock, [this] { return active_ == 0; });
  }
  std::uint64_t ok() const { return ok_; }
  std::uint64_t exhausted() const { return exhausted_; }
  std::uint64_t other() const { return other_; }

 private:
  struct Slot {
    std::unique_ptr<grpc::ClientContext> ctx;
    v1::VerifyRoutingRequest req;
    v1::VerifyRoutingResponse resp;
  };
  // A slot counts in active_ from start() until it finds the flood stopping.
  void issue(Slot& s) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        --active_;
        cv_.notify_all();
        return;
      }
      s.ctx = std::make_unique<grpc::ClientContext>();
      s.ctx->set_deadline(std::chrono::system_clock::now() + 30s);
    }
    stub_->async()->VerifyRouting(s.ctx.get(), &s.req, &s.resp, [this, &s](grpc::Status st) {
      if (st.ok()) {
        ++ok_;
      } else if (st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++exhausted_;
      } else {
        ++other_;
      }
      issue(s);
    });
  }

  std::unique_ptr<v1::SubnetManager::Stub> stub_;
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int active_ = 0;
  std::atomic<std::uint64_t> ok_ = 0, exhausted_ = 0, other_ = 0;
};

struct Run {
  std::vector<double> ms;
  int failed = 0;
  std::string first_failure;
};

Run root_sweeps(v1::SubnetManager::Stub& stub, int n) {
  Run r;
  for (int i = 0; i < n; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    v1::TriggerSweepRequest req;
    req.set_kind(v1::SWEEP_KIND_LIGHT);
    req.set_wait(true);
    v1::TriggerSweepResponse resp;
    const auto t0 = Clock::now();
    const grpc::Status st = stub.TriggerSweep(&ctx, req, &resp);
    r.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!st.ok() && r.failed++ == 0) r.first_failure = st.error_message();
  }
  std::sort(r.ms.begin(), r.ms.end());
  return r;
}

void print(const char* what, const Run& r) {
  const auto at = [&](double q) {
    return r.ms[std::min(r.ms.size() - 1, static_cast<std::size_t>(q * r.ms.size()))];
  };
  fmt::print("{:<24} {:>5} sweeps  p50 {:7.3f} ms  p99 {:7.3f} ms  max {:7.3f} ms  failed {}{}\n",
             what, r.ms.size(), at(0.50), at(0.99), r.ms.back(), r.failed,
             r.failed ? " (" + r.first_failure + ")" : std::string{});
}

int run(int argc, char** argv) {
  int flooders = 4, in_flight = 300, sweeps = 400, verify_ms = 20, sweep_us = 300;
  for (int i = 1; i < argc; ++i) {
    const auto [key, val] = split_arg(argv[i]);
    bool ok = false;
    if (key == "flooders") ok = parse_value(val, flooders);
    if (key == "in_flight") ok = parse_value(val, in_flight);
    if (key == "sweeps") ok = parse_value(val, sweeps);
    if (key == "verify_ms") ok = parse_value(val, verify_ms);
    if (key == "sweep_us") ok = parse_value(val, sweep_us);
    if (!ok || flooders < 0 || in_flight < 1 || sweeps < 1 || verify_ms < 0 || sweep_us < 0) {
      fmt::print(stderr,
                 "usage: api_flood_bench [flooders=4] [in_flight=300] [sweeps=400] "
                 "[verify_ms=20] [sweep_us=300]\n");
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);  // one info line per sweep otherwise
  auto snapshot = make_state();
  if (!snapshot.ok()) return fail("fabric", snapshot.error());
  state::StatePublisher publisher;
  publisher.publish(*snapshot);
  state::EventLog log(0, {}, {});
  FakeSm sm{std::chrono::milliseconds{verify_ms}, std::chrono::microseconds{sweep_us}};

  std::string dir = (std::filesystem::temp_directory_path() / "floodXXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    fmt::print(stderr, "mkdtemp failed\n");
    return 1;
  }
  api::ListenOptions listen;
  listen.socket = dir + "/api.sock";
  listen.tcp = "127.0.0.1:0";
  api::ServiceDeps deps;
  deps.state = &publisher;
  deps.sm = &sm;
  deps.events = &log;
  auto server = api::Server::start(listen, deps);
  if (!server.ok()) return fail("server", server.error());

  auto root = v1::SubnetManager::NewStub(
      grpc::CreateChannel((*server)->unix_target(), grpc::InsecureChannelCredentials()));
  fmt::print(
      "fat-tree:levels=2,radix=8; light sweep {} us on the SM strand, verification {} ms; "
      "{} anonymous TCP clients x {} VerifyRouting in flight\n",
      sweep_us, verify_ms, flooders, in_flight);
  root_sweeps(*root, std::min(sweeps, 20));  // warm up the channel
  print("root, idle", root_sweeps(*root, sweeps));

  std::vector<std::unique_ptr<Flooder>> flood;
  for (int i = 0; i < flooders; ++i) {
    // A channel each (its own connection), all from 127.0.0.1: one client
    // to the per-client limits, as in the issue's test.
    grpc::ChannelArguments args;
    args.SetInt("flood_channel", i);
    flood.push_back(std::make_unique<Flooder>(
        grpc::CreateCustomChannel(fmt::format("127.0.0.1:{}", (*server)->tcp_port()),
                                  grpc::InsecureChannelCredentials(), args),
        in_flight));
  }
  const auto t0 = Clock::now();
  for (auto& f : flood) f->start();
  const Run loaded = root_sweeps(*root, sweeps);
  const double secs = seconds_since(t0);
  for (auto& f : flood) f->stop();
  print("root, under the flood", loaded);
  std::uint64_t ok = 0, exhausted = 0, other = 0;
  for (auto& f : flood) {
    ok += f->ok();
    exhausted += f->exhausted();
    other += f->other();
  }
  fmt::print(
      "flood over {:.2f} s: {} answered, {} RESOURCE_EXHAUSTED ({:.0f}/s), {} other (cancelled "
      "at the end)\n",
      secs, ok, exhausted, static_cast<double>(exhausted) / secs, other);
  (*server)->stop(1s);
  std::filesystem::remove_all(dir);
  return loaded.failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace subnetd::bench

int main(int argc, char** argv) {
  return subnetd::bench::run(argc, argv);
}

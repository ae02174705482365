#pragma once
// What the gRPC API tests share (api_service_test, api_path_record_test):
// a FabricState built from a generated fabric, fakes of the SM's and the
// simulator's control interfaces and of the event store, and the `Api`
// fixture that runs an api::Server on a unix socket and on TCP port 0.

#include <fcntl.h>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/server.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/worker_pool.hpp"
#include "subnet/v1/subnet.grpc.pb.h"

namespace subnetd::api {
namespace {

using namespace std::chrono_literals;
using grpc::StatusCode;

// ---------------------------------------------------------------------------
// Fakes and fixtures

// Null (with the reason as a test failure) if any step fails.
inline std::shared_ptr<const state::FabricState> make_state(std::string_view spec) {
  auto s = std::make_shared<state::FabricState>();
  auto topo = discovery::topo::generate(spec);
  if (!topo.ok()) {
    ADD_FAILURE() << spec << ": " << topo.error().message;
    return nullptr;
  }
  auto t = std::make_shared<routing::Topology>(std::move(topo).value());
  routing::LidAssignOptions lo;
  lo.space = *routing::LidSpace::from_bits(16);
  auto lids = routing::assign_lids(*t, lo);
  if (!lids.ok()) {
    ADD_FAILURE() << "assign_lids: " << lids.error().message;
    return nullptr;
  }
  auto map = std::make_shared<routing::LidMap>(std::move(lids).value().map);
  auto engine = routing::make_engine("updn");
  if (!engine.ok()) {
    ADD_FAILURE() << engine.error().message;
    return nullptr;
  }
  routing::WorkerPool pool(1);
  auto routes = (*engine)->compute(*t, *map, {}, pool, {});
  if (!routes.ok()) {
    ADD_FAILURE() << "updn: " << routes.error().message;
    return nullptr;
  }
  s->generation = 7;
  s->state = state::SmState::kMaster;
  s->transport = "sim";
  s->engine = "updn";
  s->sm_node = t->port(*t->find_by_name("leaf0"), 1).remote_node;
  s->sm_port = 1;
  s->sm_lid = map->base_lid(*t, s->sm_node, 1);
  s->last_bringup.route = 1500us;
  s->last_bringup.total = 9ms;
  s->last_sweep_at = std::chrono::system_clock::now();
  s->sweeps = 1;
  s->verification.ok = true;
  s->verification.message = "complete, loop-free, deadlock-free";
  s->verification.pairs_checked = 528;
  s->verification.channels = 64;
  s->verification.dependencies = 96;
  s->topology = std::move(t);
  s->lids = std::move(map);
  s->routes = std::make_shared<routing::Routes>(std::move(routes).value());
  return s;
}

class FakeSim final : public state::SimControl {
 public:
  Result<void> set_link_state(Guid node, PortNum port, bool up) override {
    std::lock_guard lock(mu);
    if (node.value == 0xdead) return Error{Errc::kNotFound, "simulator: no node 0xdead"};
    links.push_back({node, port, up});
    return ok_result();
  }
  Result<void> set_switch_state(Guid node, bool up) override {
    std::lock_guard lock(mu);
    switches.push_back({node, up});
    return ok_result();
  }
  state::SimCounters counters() const override { return {1234, 5, 6, 2}; }
  Result<void> inject_port_errors(Guid node, PortNum port,
                                  const state::PortErrorInjection& e) override {
    std::lock_guard lock(mu);
    injected.push_back({node, port, e.symbol_errors});
    return ok_result();
  }

  // How many changes the fabric has seen, and the node of the last one.
  std::pair<std::size_t, Guid> changes() const {
    std::lock_guard lock(mu);
    Guid last;
    if (!links.empty()) last = links.back().node;
    if (!switches.empty()) last = switches.back().first;
    return {links.size() + switches.size(), last};
  }

  struct LinkCall {
    Guid node;
    PortNum port;
    bool up;
  };
  mutable std::mutex mu;
  std::vector<LinkCall> links;
  std::vector<std::pair<Guid, bool>> switches;
  struct Injected {
    Guid node;
    PortNum port;
    std::uint32_t symbol_errors;
  };
  std::vector<Injected> injected;
};

// The SM side of the fake: heavy sweeps answer as configured; a light sweep
// looks at the FakeSim's fabric and sees every change made since the last
// sweep (whose traps, in this fake, never reach the SM), and then runs a
// heavy sweep, like SubnetManager.
class FakeSm final : public state::SmControl {
 public:
  state::MadCounters mad;  // what mad_counters() answers
  state::MadCounters mad_counters() const override { return mad; }
  void trigger_sweep(std::string reason, state::Completion<state::SweepReply> done) override {
    std::lock_guard lock(mu);
    if (hold_sweeps) {
      sweeps.push_back(std::move(reason));
      held.push_back(std::move(done));
      changed.notify_all();
      return;
    }
    done(heavy_locked(std::move(reason)));
  }
  void trigger_rebalance(std::string reason, state::Completion<state::SweepReply> done) override {
    {
      std::lock_guard lock(mu);
      rebalances.push_back(reason);
    }
    trigger_sweep(std::move(reason), std::move(done));
  }
  void trigger_light_sweep(std::string reason,
                           state::Completion<Result<state::SweepReply>> done) override {
    std::lock_guard lock(mu);
    light_sweeps.push_back(reason);
    if (!ready) {
      done(Error{Errc::kUnreachable, "no routing yet: the first heavy sweep has not finished"});
      return;
    }
    state::LightSweepReport l;
    l.started_at = std::chrono::system_clock::now();
    l.switches = switch_count;
    l.answered = switch_count;
    l.took = 850us;
    const auto [changes, last] = sim != nullptr ? sim->changes() : std::pair<std::size_t, Guid>{};
    if (changes == changes_seen) {
      done(state::SweepReply{true, generation, "light sweep: no change", l});
      return;
    }
    l.changed = 1;
    l.change = fmt::format("port state change on switch {:#018x}", last.value);
    state::SweepReply r = heavy_locked("light sweep (" + reason + "): " + l.change);
    r.light = std::move(l);
    done(std::move(r));
  }
  void verify_routing(state::VerifyRequest request,
                      state::Completion<Result<state::VerifyReply>> done) override {
    std::lock_guard lock(mu);
    verify_requests.push_back(request);
    if (hold_verifications) {
      held_verifies.push_back(std::move(done));
      changed.notify_all();
      return;
    }
    done(verify_answer);
  }
  void set_port_enabled(Guid node, PortNum port, bool enabled, std::string who,
                        state::Completion<Result<void>> done) override {
    std::lock_guard lock(mu);
    port_calls.push_back({node, port, enabled, std::move(who)});
    done(ok_result());
  }

  // Waits until `pred` holds (checked under `mu` whenever a call is held);
  // false after `limit`, which only a broken server reaches.
  template <class Pred>
  bool wait_until(Pred pred, std::chrono::seconds limit = 30s) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, limit, pred);
  }
  // Answers every held verification with `verify_answer`.
  void release_verifications() {
    std::vector<state::Completion<Result<state::VerifyReply>>> waiting;
    {
      std::lock_guard lock(mu);
      hold_verifications = false;
      waiting.swap(held_verifies);
    }
    for (auto& done : waiting) done(verify_answer);
  }

  // The answer verify_routing gives: the published tables' counts.
  static state::VerifyReply ok_reply() {
    state::VerifyReply r;
    r.generation = 7;
    r.message = "complete, loop-free, deadlock-free";
    r.pairs_checked = 528;
    r.num_vls = 1;
    r.channels = 64;
    r.dependencies = 96;
    r.took = 1250us;
    return r;
  }

  struct PortCall {
    Guid node;
    PortNum port;
    bool enabled;
    std::string who;
  };
  std::mutex mu;
  std::condition_variable changed;  // a call was held
  const FakeSim* sim = nullptr;     // the fabric light sweeps look at
  std::uint32_t switch_count = 0;   // of that fabric
  bool ready = true;                // false: as before the first heavy sweep
  bool sweep_ok = true;
  bool hold_sweeps = false;      // never answer (deadline tests)
  std::uint64_t generation = 7;  // as published by the fixture
  std::size_t changes_seen = 0;  // FakeSim changes the last heavy sweep saw
  std::vector<state::Completion<state::SweepReply>> held;
  std::vector<std::string> sweeps;      // heavy sweeps' reasons
  std::vector<std::string> rebalances;  // ... of those asked to re-balance
  std::vector<std::string> light_sweeps;
  bool hold_verifications = false;  // keep them until release_verifications()
  std::vector<state::Completion<Result<state::VerifyReply>>> held_verifies;
  std::vector<state::VerifyRequest> verify_requests;
  Result<state::VerifyReply> verify_answer = ok_reply();
  std::vector<PortCall> port_calls;

 private:
  // A heavy sweep sees the whole fabric and publishes (also when it fails).
  state::SweepReply heavy_locked(std::string reason) {
    sweeps.push_back(std::move(reason));
    if (sim != nullptr) changes_seen = sim->changes().first;
    ++generation;
    return state::SweepReply{sweep_ok, generation, sweep_ok ? "" : "sweep: timeout", {}};
  }
};

// An in-memory "store" behind the EventLog: what the persist hook wrote,
// served back by the history reader.
struct FakeStore {
  std::mutex mu;
  std::vector<state::Event> rows;
  std::atomic<int> reads = 0;
  state::EventLog::PersistHook hook() {
    return [this](const state::Event& e) {
      std::lock_guard lock(mu);
      rows.push_back(e);
    };
  }
  state::EventLog::HistoryReader reader() {
    return [this](std::int64_t after, std::size_t limit) -> Result<std::vector<state::Event>> {
      ++reads;
      std::lock_guard lock(mu);
      std::vector<state::Event> out;
      for (const auto& e : rows) {
        if (e.id > after && out.size() < limit) out.push_back(e);
      }
      return out;
    };
  }
};

inline std::filesystem::path make_temp_dir() {
  // Short: a unix socket path has at most 107 bytes.
  std::string tmpl = (std::filesystem::temp_directory_path() / "apiXXXXXX").string();
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  ::chmod(tmpl.c_str(), 0755);
  return tmpl;
}

inline void write_file(const std::filesystem::path& p, const std::string& text, mode_t mode) {
  std::ofstream(p) << text;
  ::chmod(p.c_str(), mode);
}

// Runs TriggerSweep LIGHT over the unix socket.
inline grpc::Status light_sweep(v1::SubnetManager::Stub& stub, bool wait,
                                v1::TriggerSweepResponse* r) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  v1::TriggerSweepRequest req;
  req.set_kind(v1::SWEEP_KIND_LIGHT);
  req.set_wait(wait);
  return stub.TriggerSweep(&ctx, req, r);
}

constexpr const char* kToken = "s3cr3t-t0ken-for-the-api-test";

class Api : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir();
    state_ = make_state("fat-tree:levels=2,radix=8");
    ASSERT_NE(state_, nullptr);
    publisher_.publish(state_);
    sm_.sim = &sim_;
    sm_.switch_count = static_cast<std::uint32_t>(state_->topology->num_switches());
    log_ = std::make_unique<state::EventLog>(0, store_.hook(), store_.reader(), log_opts());
    cfg_.socket = (dir_ / "api.sock").string();
    cfg_.tcp = "127.0.0.1:0";
    cfg_.token_file = (dir_ / "token").string();
    write_file(cfg_.token_file, std::string(kToken) + "\n", 0600);
  }
  void TearDown() override {
    if (server_) server_->stop(1s);
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  static state::EventLogOptions log_opts() {
    state::EventLogOptions o;
    o.ring_capacity = 8;  // small, so WatchEvents replays go to the store
    return o;
  }

  ServiceDeps deps(bool with_sim = true) {
    ServiceDeps d;
    d.state = &publisher_;
    d.sm = &sm_;
    d.sim = with_sim ? &sim_ : nullptr;
    d.events = log_.get();
    d.sa = sa_;
    d.version = "9.9.9-test";
    d.started_at = std::chrono::system_clock::now() - 1h;
    return d;
  }

  void start(bool with_sim = true) {
    auto s = Server::start(cfg_, deps(with_sim));
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(s).value();
  }

  std::unique_ptr<v1::SubnetManager::Stub> unix_stub() {
    return v1::SubnetManager::NewStub(unix_channel());
  }
  std::shared_ptr<grpc::Channel> unix_channel() {
    return grpc::CreateChannel(server_->unix_target(), grpc::InsecureChannelCredentials());
  }
  std::shared_ptr<grpc::Channel> tcp_channel() {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->tcp_port()),
                               grpc::InsecureChannelCredentials());
  }

  const routing::Topology& topo() const { return *state_->topology; }
  NodeId node(std::string_view name) const { return *topo().find_by_name(name); }
  Guid guid(std::string_view name) const { return topo().node(node(name)).guid; }
  Lid lid_of(std::string_view name, PortNum port = 1) const {
    return state_->lids->base_lid(topo(), node(name), port);
  }

  static void set_deadline(grpc::ClientContext& ctx, std::chrono::milliseconds d = 10s) {
    ctx.set_deadline(std::chrono::system_clock::now() + d);
  }

  std::filesystem::path dir_;
  std::shared_ptr<const state::FabricState> state_;
  state::StatePublisher publisher_;
  FakeStore store_;
  std::unique_ptr<state::EventLog> log_;
  FakeSm sm_;
  FakeSim sim_;
  ListenOptions cfg_;
  std::unique_ptr<Server> server_;
  const state::SaInfo* sa_ = nullptr;  // the SA the service sees; none by default
};

}  // namespace
}  // namespace subnetd::api

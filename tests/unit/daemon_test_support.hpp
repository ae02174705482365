#pragma once
// Helpers for tests that run a SubnetManager on its own io thread, as the
// daemon does (light_sweep_test, reroute_daemon_test, trap_phases_test, ...).

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "daemon/subnet_manager.hpp"
#include "discovery/sim/sim_borrowed.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "state/event_log.hpp"
#include "state/fabric_state.hpp"

namespace subnetd::daemon::testing {

// Waits for a published state for which `pred` holds (true), woken by each
// publish; false when none came within `limit` (a failure bound, not a
// delay: a passing test never waits for it).
inline bool wait_for_state(const state::StatePublisher& publisher,
                           const std::function<bool(const state::FabricState&)>& pred,
                           std::chrono::milliseconds limit = std::chrono::seconds{20}) {
  return publisher.wait_for(pred, limit) != nullptr;
}

// The outcome of an SmControl call as a future: `call` receives the
// completion to pass on, e.g. [&](auto done) { sm.verify_routing({}, done); }.
template <class T, class Call>
std::future<T> sm_call(Call call) {
  auto promise = std::make_shared<std::promise<T>>();
  auto fut = promise->get_future();
  call([promise](T value) { promise->set_value(std::move(value)); });
  return fut;
}

// Waits until the SM has nothing left to do (traps handled, no MAD in
// flight, no sweep running); false after `limit` (a failure bound).
inline bool wait_idle(SubnetManager& sm,
                      std::chrono::milliseconds limit = std::chrono::seconds{20}) {
  auto idle = std::make_shared<std::promise<void>>();
  auto fut = idle->get_future();
  sm.notify_when_idle_for_test([idle] { idle->set_value(); });
  if (fut.wait_for(limit) == std::future_status::ready) return true;
  // Say what the SM is still doing (or that its strand does not answer).
  auto what = std::make_shared<std::promise<std::string>>();
  auto said = what->get_future();
  sm.describe_busy_for_test([what](std::string s) { what->set_value(std::move(s)); });
  ADD_FAILURE() << "the SM is not idle after " << limit.count() << " ms: "
                << (said.wait_for(std::chrono::seconds{5}) == std::future_status::ready
                        ? said.get()
                        : std::string{"its strand does not answer"});
  return false;
}

// Stops the SM and joins the thread running its io loop, which returns once
// the SM has wound down (nothing left waiting). Does nothing when the thread
// is not running.
inline void stop_on_thread(SubnetManager& sm, boost::asio::io_context& io, std::thread& thread) {
  if (!thread.joinable()) return;
  sm.stop();
  thread.join();
  io.restart();  // the owner may run it again (probes after the SM stopped)
}

using discovery::sim::BorrowedSim;  // the SM owns its transport; a test keeps the simulator

inline bool master(const state::FabricState& s) {
  return s.state == state::SmState::kMaster && s.routes != nullptr;
}

// A SubnetManager on a simulated fabric, on its own io thread, with its
// timers on a ManualClock (nothing happens "later" unless the test
// advances it). `hooks.phase` may be set before start().
struct SimSm {
  std::unique_ptr<discovery::sim::SimFabric> sim;
  ManualClock clock;
  state::StatePublisher publisher;
  state::EventLog events{0, {}, {}};
  routing::WorkerPool pool{2};
  boost::asio::io_context io;
  std::unique_ptr<SubnetManager> sm;
  std::thread thread;

  // `configure` may adjust the Config (engine, lid bits, intervals).
  // `simulate` may adjust the simulator's options (its traffic clock ...).
  // `store` (null: none) must outlive the SM.
  explicit SimSm(const std::string& spec, const std::function<void(Config&)>& configure = {},
                 SubnetManager::Hooks hooks = {}, FastPathOptions fast = {},
                 const std::function<void(discovery::sim::SimOptions&)>& simulate = {},
                 StoreWriter* store = nullptr) {
    auto topo = discovery::topo::generate(spec);
    EXPECT_TRUE(topo.ok()) << (topo.ok() ? "" : topo.error().message);
    Config cfg;
    cfg.fabric.transport = TransportKind::kSim;
    cfg.fabric.topology = spec;
    cfg.sweep.interval = std::chrono::milliseconds{0};  // no light sweeps unless asked for
    if (configure) configure(cfg);
    discovery::sim::SimOptions so;
    so.lid_bits = cfg.addressing.lid_bits;
    if (simulate) simulate(so);
    auto s = discovery::sim::SimFabric::create(std::move(topo).value(), so);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    sim = std::move(s).value();
    TransportBundle bundle;
    bundle.transport = std::make_unique<BorrowedSim>(*sim);
    sm = std::make_unique<SubnetManager>(io, cfg, std::move(bundle), store,
                                         std::vector<routing::LidRecord>{}, publisher, events, pool,
                                         std::move(hooks), fast, &clock);
  }
  ~SimSm() { stop(); }

  void start() {
    sm->start();
    thread = std::thread([this] { io.run(); });
  }
  void stop() {
    if (sm) stop_on_thread(*sm, io, thread);
  }

  PortNum port_to(std::string_view from, std::string_view to) const {
    const routing::Topology& t = sim->topology();
    const NodeId a = *t.find_by_name(from), b = *t.find_by_name(to);
    for (unsigned p = 1; p <= t.node(a).num_ports; ++p) {
      if (t.port(a, static_cast<PortNum>(p)).remote_node == b) return static_cast<PortNum>(p);
    }
    ADD_FAILURE() << from << " is not cabled to " << to;
    return 0;
  }

  // Runs the SM's timers (retries, follow-up sweeps) in virtual time until
  // it is idle and master with nothing due within `horizon` (below a
  // light-sweep period, if the test set one): the state it settles on.
  // False if it does not settle within `rounds` timer firings.
  bool settle(std::chrono::milliseconds horizon = std::chrono::minutes{1}, int rounds = 50) {
    for (int i = 0; i < rounds; ++i) {
      if (!wait_idle(*sm)) return false;
      const auto next = clock.next_due();
      const bool quiet = next == Clock::time_point::max() || next - clock.now() > horizon;
      if (quiet && master(*publisher.current())) return true;
      if (next == Clock::time_point::max()) return false;
      clock.advance(next - clock.now());
    }
    return false;
  }

  state::SweepReply sweep_now() {
    auto fut =
        sm_call<state::SweepReply>([&](auto done) { sm->trigger_sweep("test", std::move(done)); });
    EXPECT_EQ(fut.wait_for(std::chrono::seconds{20}), std::future_status::ready);
    return fut.get();
  }
  state::SweepReply rebalance_now() {
    auto fut = sm_call<state::SweepReply>(
        [&](auto done) { sm->trigger_rebalance("test", std::move(done)); });
    EXPECT_EQ(fut.wait_for(std::chrono::seconds{20}), std::future_status::ready);
    return fut.get();
  }
  Result<state::SweepReply> light_sweep_now() {
    auto fut = sm_call<Result<state::SweepReply>>(
        [&](auto done) { sm->trigger_light_sweep("test", std::move(done)); });
    EXPECT_EQ(fut.wait_for(std::chrono::seconds{20}), std::future_status::ready);
    return fut.get();
  }
  Result<state::VerifyReply> verify(bool read_back = false) {
    auto fut = sm_call<Result<state::VerifyReply>>(
        [&](auto done) { sm->verify_routing(state::VerifyRequest{read_back}, std::move(done)); });
    EXPECT_EQ(fut.wait_for(std::chrono::seconds{20}), std::future_status::ready);
    return fut.get();
  }
  std::size_t events_of(state::EventKind kind) {
    std::size_t n = 0;
    for (const state::Event& e :
         events.recent_since(0, 100000).value_or(std::vector<state::Event>{})) {
      n += e.kind == kind ? 1 : 0;
    }
    return n;
  }
};

}  // namespace subnetd::daemon::testing

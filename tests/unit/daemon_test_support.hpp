#pragma once
// Helpers for tests that run a SubnetManager on its own io thread, as the
// daemon does (light_sweep_test, reroute_daemon_test).

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "daemon/subnet_manager.hpp"
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
  return fut.wait_for(limit) == std::future_status::ready;
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

}  // namespace subnetd::daemon::testing

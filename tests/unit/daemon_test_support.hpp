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

// Polls the published state until `pred` holds (true) or `limit` passes.
inline bool wait_for_state(const state::StatePublisher& publisher,
                           const std::function<bool(const state::FabricState&)>& pred,
                           std::chrono::milliseconds limit = std::chrono::seconds{20}) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(*publisher.current())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }
  return false;
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

// Stops the SM, lets its strand run the stop, then ends the io loop and
// joins the thread that ran it. Does nothing when the thread is not running.
inline void stop_on_thread(SubnetManager& sm, boost::asio::io_context& io, std::thread& thread) {
  if (!thread.joinable()) return;
  sm.stop();
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  io.stop();
  thread.join();
}

}  // namespace subnetd::daemon::testing

#pragma once
// ComputeRunner: where the SM's compute steps run (routing, verification,
// rerouter build, LID assignment on big fabrics), so that its strand keeps
// hearing traps and answering commands meanwhile.
//
// One thread of its own: compute steps run one at a time, in order, and
// each uses the shared routing::WorkerPool for its parallel loops (the pool
// runs one loop at a time; the strand never uses it while a step runs).
// `co_await compute.run(fn)` runs fn there and resumes the caller on its own
// executor (the SM strand) with fn's result.
//
// Owner: the daemon (or `subnetd --once`, a test); it must outlive every
// coroutine that awaits it. Thread-safe.

#include <boost/asio/thread_pool.hpp>
#include <optional>
#include <type_traits>
#include <utility>

#include "discovery/coro.hpp"

namespace subnetd::daemon {

class ComputeRunner {
 public:
  ComputeRunner() : pool_(1) {}
  ~ComputeRunner() { pool_.join(); }
  ComputeRunner(const ComputeRunner&) = delete;
  ComputeRunner& operator=(const ComputeRunner&) = delete;

  template <class F>
  boost::asio::awaitable<std::invoke_result_t<F>> run(F fn) {
    using T = std::invoke_result_t<F>;
    // Through an optional: co_spawn's completion needs a default-constructible
    // value. The step is named before the co_await (discovery/coro.hpp: GCC
    // 12 would destroy a lambda temporary there twice, and with it `fn`).
    auto step = [fn = std::move(fn)]() mutable -> boost::asio::awaitable<std::optional<T>> {
      co_return std::optional<T>(fn());
    };
    auto spawned =
        boost::asio::co_spawn(pool_.get_executor(), std::move(step), boost::asio::use_awaitable);
    std::optional<T> out = co_await std::move(spawned);
    co_return std::move(*out);
  }

  // Stops taking work; steps already queued still run. Idempotent.
  void stop() { pool_.stop(); }

 private:
  boost::asio::thread_pool pool_;
};

}  // namespace subnetd::daemon

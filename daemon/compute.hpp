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
#include "routing/worker_pool.hpp"

namespace subnetd::daemon {

// How much less CPU priority compute threads get than the io thread (nice
// +10: a CFS weight ~9x lower, so a thread woken by a trap preempts them at
// once rather than after their time slice, on a machine with as many busy
// compute threads as cores). For the SM's ComputeRunner and the daemon's
// WorkerPool.
inline constexpr int kComputeNice = 10;

class ComputeRunner {
 public:
  explicit ComputeRunner(int nice = kComputeNice) : pool_(1) {
    boost::asio::post(pool_, [nice] { routing::lower_thread_priority(nice); });
  }
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

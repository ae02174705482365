#pragma once
// BlockingPool: a few threads for the API work that has to block — reading
// old events from the store for WatchEvents — so that it never runs on
// gRPC's callback threads (which must not block). Calls that wait for the
// SM do not use it: their completions finish them (waiting_call.hpp).
//
// Owner: ServiceCore (one pool for trusted callers, one for anonymous ones).
// Any thread may post(); the queue is bounded and a full queue (or a stopped
// pool) refuses work, which the caller turns into RESOURCE_EXHAUSTED /
// UNAVAILABLE. stop() lets queued and running tasks finish and joins.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace subnetd::api {

class BlockingPool {
 public:
  BlockingPool(unsigned threads, std::size_t max_queued);
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  // False when the queue is full or the pool is stopping; the task is dropped.
  [[nodiscard]] bool post(std::function<void()> task);
  bool stopping() const;
  void stop();

 private:
  void run();

  const std::size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace subnetd::api

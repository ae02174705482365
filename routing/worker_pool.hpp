#pragma once
// WorkerPool: a fixed set of threads that run parallel_for loops.
// Owner: the daemon (or a test/benchmark); handed by reference to routing
// engines and the verifier, which never create threads of their own.
// The calling thread takes part in each loop, so a pool of 0 workers is a
// valid single-threaded pool. One loop at a time (calls are serialised).

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace subnetd::routing {

// Raises the calling thread's nice value by `increment` (Linux: per
// thread), so that a latency-critical thread of the same process preempts
// it as soon as it wakes. Needs no privilege; best effort (a failure
// leaves the priority as it was).
void lower_thread_priority(int increment);

class WorkerPool {
 public:
  // `threads` = total threads used by a loop, including the caller (>= 1).
  // `nice` > 0 lowers the workers' scheduling priority by that much (see
  // lower_thread_priority): the daemon's pool computes in the background
  // while its io thread must wake at once for a trap.
  explicit WorkerPool(unsigned threads, int nice = 0);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Calls fn(begin, end, thread_slot) over [0, n) in chunks of `grain`;
  // thread_slot is in [0, size()) and unique among concurrent calls.
  void parallel_for(std::size_t n, std::size_t grain,
                    const std::function<void(std::size_t, std::size_t, unsigned)>& fn);

 private:
  void worker_loop(unsigned slot);
  void run_chunks(unsigned slot);

  std::mutex loop_mutex_;  // serialises parallel_for calls
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  std::uint64_t generation_ = 0;
  unsigned active_ = 0;
  // Current loop.
  const std::function<void(std::size_t, std::size_t, unsigned)>* fn_ = nullptr;
  std::size_t n_ = 0;
  std::size_t grain_ = 1;
  std::size_t next_ = 0;
};

}  // namespace subnetd::routing

#include "routing/worker_pool.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace subnetd::routing {

void lower_thread_priority(int increment) {
  if (increment <= 0) return;
  const auto tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (now == -1 && errno != 0) return;
  (void)::setpriority(PRIO_PROCESS, tid, std::min(19, now + increment));
}

WorkerPool::WorkerPool(unsigned threads, int nice) {
  const unsigned extra = threads > 1 ? threads - 1 : 0;
  for (unsigned i = 0; i < extra; ++i) {
    workers_.emplace_back([this, nice, slot = i + 1] {
      lower_thread_priority(nice);
      worker_loop(slot);
    });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::run_chunks(unsigned slot) {
  for (;;) {
    std::size_t begin;
    std::size_t end;
    const std::function<void(std::size_t, std::size_t, unsigned)>* fn;
    {
      std::lock_guard lock(mutex_);
      if (fn_ == nullptr || next_ >= n_) return;
      begin = next_;
      end = std::min(n_, next_ + grain_);
      next_ = end;
      fn = fn_;
    }
    (*fn)(begin, end, slot);
  }
}

void WorkerPool::worker_loop(unsigned slot) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      ++active_;
    }
    run_chunks(slot);
    {
      std::lock_guard lock(mutex_);
      --active_;
    }
    done_.notify_all();
  }
}

void WorkerPool::parallel_for(std::size_t n, std::size_t grain,
                              const std::function<void(std::size_t, std::size_t, unsigned)>& fn) {
  if (n == 0) return;
  std::lock_guard loop_lock(loop_mutex_);
  if (workers_.empty() || n <= grain) {
    for (std::size_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain), 0);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    grain_ = std::max<std::size_t>(1, grain);
    next_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return active_ == 0 && next_ >= n_; });
  fn_ = nullptr;
}

}  // namespace subnetd::routing

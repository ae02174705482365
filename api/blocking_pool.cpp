#include "api/blocking_pool.hpp"

#include <utility>

namespace subnetd::api {

BlockingPool::BlockingPool(unsigned threads, std::size_t max_queued) : max_queued_(max_queued) {
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

BlockingPool::~BlockingPool() {
  stop();
}

bool BlockingPool::post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

bool BlockingPool::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

void BlockingPool::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void BlockingPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Queued work still runs after stop(): each task finishes its gRPC call.
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace subnetd::api

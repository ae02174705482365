#include "api/call_timer.hpp"

namespace subnetd::api {

CallTimer::CallTimer() : thread_([this] { run(); }) {}

CallTimer::~CallTimer() {
  stop();
}

CallTimer::Handle CallTimer::schedule(TimePoint when, std::function<void()> fire) {
  Handle h;
  bool earliest = false;
  {
    std::lock_guard lock(mu_);
    h = Handle{when, next_seq_++};
    if (stopping_) return h;
    earliest = pending_.empty() || h < pending_.begin()->first;
    pending_.emplace(h, std::move(fire));
  }
  if (earliest) cv_.notify_one();
  return h;
}

void CallTimer::cancel(const Handle& h) {
  std::function<void()> dropped;  // destroyed outside the lock
  std::lock_guard lock(mu_);
  auto it = pending_.find(h);
  if (it == pending_.end()) return;
  dropped = std::move(it->second);
  pending_.erase(it);
  // The thread may sleep until this entry's time; waking it early is
  // harmless, and leaving it asleep is too (it finds nothing due).
}

void CallTimer::stop() {
  std::map<Handle, std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(pending_);
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void CallTimer::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = pending_.begin();
    // A copy: cancel() may erase the entry while we wait, and wait_until
    // reads its deadline again on waking.
    const TimePoint due = first->first.first;
    if (std::chrono::steady_clock::now() < due) {
      cv_.wait_until(lock, due);
      continue;
    }
    std::function<void()> fire = std::move(first->second);
    pending_.erase(first);
    lock.unlock();
    fire();
    fire = nullptr;  // its captures go before the lock is taken again
    lock.lock();
  }
}

}  // namespace subnetd::api

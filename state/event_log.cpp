#include "state/event_log.hpp"

#include <algorithm>
#include <utility>

namespace subnetd::state {

EventLog::EventLog(std::int64_t last_id, PersistHook persist, HistoryReader history,
                   EventLogOptions opts)
    : persist_(std::move(persist)),
      history_(std::move(history)),
      opts_(std::move(opts)),
      last_id_(std::max<std::int64_t>(last_id, 0)) {}

EventLog::~EventLog() {
  close();
}

std::int64_t EventLog::append(EventKind kind, std::optional<Guid> node_guid,
                              std::optional<PortNum> port, std::string message,
                              std::string details_json) {
  Event ev;
  ev.ts = opts_.clock ? opts_.clock()
                      : std::chrono::time_point_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now());
  ev.kind = kind;
  ev.node_guid = node_guid;
  ev.port = port;
  ev.message = std::move(message);
  ev.details_json = std::move(details_json);
  std::int64_t id = 0;
  {
    std::lock_guard lock(mu_);
    id = ev.id = ++last_id_;
    // Under the lock: the hook sees events in id order whatever thread appends.
    if (persist_) persist_(ev);
    ring_.push_back(std::move(ev));
    while (ring_.size() > std::max<std::size_t>(opts_.ring_capacity, 1)) ring_.pop_front();
  }
  cv_.notify_all();
  return id;
}

std::int64_t EventLog::last_id() const {
  std::lock_guard lock(mu_);
  return last_id_;
}

std::int64_t EventLog::oldest_in_memory() const {
  std::lock_guard lock(mu_);
  return ring_.empty() ? last_id_ + 1 : ring_.front().id;
}

std::vector<Event> EventLog::copy_from_locked(std::int64_t after_id, std::size_t limit) const {
  std::vector<Event> out;
  if (ring_.empty() || after_id >= last_id_) return out;
  const std::int64_t first = std::max(after_id + 1, ring_.front().id);
  const auto begin = ring_.begin() + (first - ring_.front().id);
  const std::size_t n = std::min<std::size_t>(limit, static_cast<std::size_t>(ring_.end() - begin));
  out.assign(begin, begin + static_cast<std::ptrdiff_t>(n));
  return out;
}

std::optional<std::vector<Event>> EventLog::recent_since(std::int64_t after_id,
                                                         std::size_t limit) const {
  std::lock_guard lock(mu_);
  const std::int64_t oldest = ring_.empty() ? last_id_ + 1 : ring_.front().id;
  if (after_id + 1 < oldest) return std::nullopt;
  return copy_from_locked(after_id, limit);
}

Result<std::vector<Event>> EventLog::since(std::int64_t after_id, std::size_t limit) const {
  if (auto recent = recent_since(after_id, limit)) return std::move(*recent);
  if (history_) {
    auto older = history_(after_id, limit);
    if (!older.ok()) return older.error();
    // The store may lag memory by the writes still queued, and may have
    // pruned or lost rows; whatever it has past after_id is the answer, and
    // only when it has nothing do we jump the gap to memory.
    if (!older->empty()) return older;
  }
  std::lock_guard lock(mu_);
  return copy_from_locked(after_id, limit);
}

bool EventLog::wait_for(std::int64_t after_id, std::chrono::milliseconds timeout) const {
  return wait_for(after_id, timeout, wake_count());
}

bool EventLog::wait_for(std::int64_t after_id, std::chrono::milliseconds timeout,
                        std::uint64_t wakes_seen) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout,
               [&] { return closed_ || last_id_ > after_id || wakes_ != wakes_seen; });
  return last_id_ > after_id;
}

std::uint64_t EventLog::wake_count() const {
  std::lock_guard lock(mu_);
  return wakes_;
}

void EventLog::wake_waiters() const {
  {
    std::lock_guard lock(mu_);
    ++wakes_;
  }
  cv_.notify_all();
}

void EventLog::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool EventLog::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace subnetd::state

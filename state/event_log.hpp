#pragma once
// EventLog: the daemon's event stream (link down/up, reroute, sweep, config
// reload, port disable, ...), in memory for readers and handed on for
// persistence.
//
// Owner: the daemon. append() is called from the SM strand (and the few other
// places that report events, e.g. the SIGHUP handler); readers are gRPC
// threads (WatchEvents) and tests. Thread-safe throughout; one mutex guards
// the ring, held only for O(1) work per append and O(batch) per read.
//
// Ids. append() assigns strictly increasing ids, continuing from the
// `last_id` the owner passes at construction (the store's last_event_id(),
// so ids continue across restarts and WatchEvents resumes across them).
// The store keeps every event under the id given here (Store::append_event
// inserts it), so memory, the store and WatchEvents agree on each id: a write
// that fails leaves a gap in the store, not a shift of the ids after it. One
// limit remains: when the newest events of a run were never stored, the next
// run continues after the last stored id and hands those ids out again.
//
// Persistence. Every event goes to the `persist` hook, called under the
// mutex so the hook sees events in id order. The daemon wires it to
// StoreWriter::append_event, which only queues: SQLite writes happen on the
// writer thread, never on the SM strand. The hook must be quick and must not
// call back into the EventLog.
//
// Memory. The newest `ring_capacity` events stay in memory. Readers asking
// for older ids are served by the `history` callback (the daemon wires it to
// a StoreWriter::call that runs Store::events_since on the writer thread);
// such reads block, so asynchronous readers use recent_since() and go to
// history on a thread of their own. When neither memory nor history has the
// ids asked for (pruned from the store, or a failed write), reading jumps
// ahead to the oldest event memory holds: the id gap shows what was lost.
//
// close() wakes every waiter and makes further waits return at once; the
// daemon calls it at shutdown so streams end cleanly.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/result.hpp"
#include "state/event.hpp"

namespace subnetd::state {

struct EventLogOptions {
  std::size_t ring_capacity = 10'000;  // >= 1
  // Timestamps of appended events; system_clock when empty. Injected by tests.
  std::function<WallTime()> clock;
};

class EventLog {
 public:
  using PersistHook = std::function<void(const Event&)>;
  // Events with id > after_id, oldest first, at most `limit` (Store::events_since).
  using HistoryReader =
      std::function<Result<std::vector<Event>>(std::int64_t after_id, std::size_t limit)>;

  // `persist` and `history` may be empty (tests; a daemon without a store).
  EventLog(std::int64_t last_id, PersistHook persist, HistoryReader history,
           EventLogOptions opts = {});
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Records an event now and returns its id. `details_json` is empty or a
  // JSON object (the store rejects anything else).
  std::int64_t append(EventKind kind, std::optional<Guid> node_guid, std::optional<PortNum> port,
                      std::string message, std::string details_json = {});

  // The highest id assigned so far (the constructor's last_id before any append).
  std::int64_t last_id() const;
  // The oldest id held in memory; last_id() + 1 when memory is empty.
  std::int64_t oldest_in_memory() const;

  // Non-blocking read from memory: events with id > after_id, oldest first,
  // at most `limit` (empty when there is nothing newer). nullopt when memory
  // no longer holds id after_id + 1, i.e. the caller must go to since().
  std::optional<std::vector<Event>> recent_since(std::int64_t after_id, std::size_t limit) const;

  // Events with id > after_id, oldest first, at most `limit`, from memory or
  // else the history callback (may block on it). Jumps a gap as described
  // above; an error comes only from the history callback.
  Result<std::vector<Event>> since(std::int64_t after_id, std::size_t limit) const;

  // Blocks until an event with id > after_id exists, `timeout` passes or the
  // log is closed. True when there is something newer than after_id.
  bool wait_for(std::int64_t after_id, std::chrono::milliseconds timeout) const;
  // The same, also returning once wake_waiters() has been called since the
  // caller read wake_count() == `wakes_seen`. Reading the count before
  // checking one's own stop flag closes the window in which a wake-up
  // would be missed.
  bool wait_for(std::int64_t after_id, std::chrono::milliseconds timeout,
                std::uint64_t wakes_seen) const;
  std::uint64_t wake_count() const;

  void close();
  bool closed() const;
  // Wakes every wait_for() in progress and every later one given an older
  // wake_count() (it returns whether there is something newer, as on a
  // timeout): for a waiter whose owner is stopping, so that it need not
  // wake up periodically to look.
  void wake_waiters() const;

 private:
  // Caller holds mu_.
  std::vector<Event> copy_from_locked(std::int64_t after_id, std::size_t limit) const;

  const PersistHook persist_;
  const HistoryReader history_;
  const EventLogOptions opts_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<Event> ring_;  // consecutive ids, oldest first
  std::int64_t last_id_;
  bool closed_ = false;
  mutable std::uint64_t wakes_ = 0;  // wake_waiters() calls
};

}  // namespace subnetd::state

#pragma once
// Reporter: delivers the SA's Reports (daemon/sa/inform.hpp) to InformInfo
// subscribers. The SM wakes it after every publish, which queues the
// snapshot just published; on its own thread it compares each queued
// snapshot with the one before it (an O(ports) comparison, never on the
// SM strand, and none at all without subscribers) and sends what
// SaAgent::reports() makes. Each publish is compared with its predecessor
// even when they come faster than Reports go out: a port that went down
// and up in between is reported twice, and a subscriber hears of what
// changed after the snapshot its subscription was answered against, not
// of a change made before it that the Reporter had not yet looked at.
// Past kMaxBacklog waiting snapshots the oldest waiting one is dropped
// (a warning says so) and its change is reported with the next one.
//
// Traps the SM received (forward()) join the same queue, so that they
// are forwarded in order with the changes around them, each judged on the
// last snapshot compared before it (SaAgent::forward). Past kMaxBacklog
// waiting traps new ones are dropped, with a warning.
//
// Threading: wake() from the thread that publishes, right after the
// publish (it queues the publisher's current snapshot); forward() from
// any thread; the destructor
// stops the thread and must run before the agent, the publisher and what
// `send` uses go.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/sa/sa_agent.hpp"
#include "routing/result.hpp"
#include "state/fabric_state.hpp"

namespace subnetd::daemon::sa {

class Reporter {
 public:
  using Send = std::function<Result<void>(const Report&)>;
  Reporter(SaAgent& agent, const state::StatePublisher& publisher, Send send);
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  // Snapshots waiting beyond this are coalesced. Each waiting snapshot
  // holds its topology (shared with the snapshots that did not change it):
  // a Reporter stuck in sends must not hold a sweep's worth of them.
  static constexpr std::size_t kMaxBacklog = 32;

  // A new snapshot was published (called on the publishing thread).
  void wake();
  // A trap an SMA sent the SM, to forward to the subscribers that want it.
  void forward(const discovery::mad::Notice& trap);
  // Reports sent, and sends that failed (a transport error).
  std::uint64_t sent() const;
  std::uint64_t failed() const;

 private:
  void loop(std::shared_ptr<const state::FabricState> last);

  SaAgent& agent_;
  const state::StatePublisher& publisher_;
  Send send_;
  mutable std::mutex mu_;  // guards what follows, but thread_
  std::condition_variable cv_;
  // A published snapshot, or a trap received (snapshot null).
  struct Item {
    std::shared_ptr<const state::FabricState> snapshot;
    discovery::mad::Notice trap;
  };
  std::deque<Item> waiting_;               // oldest first
  std::size_t snapshots_ = 0, traps_ = 0;  // of each in waiting_
  std::uint64_t dropped_ = 0;              // snapshots coalesced since the last warning
  std::uint64_t dropped_traps_ = 0;        // traps dropped since the last warning
  bool stop_ = false;
  std::uint64_t sent_ = 0, failed_ = 0;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace subnetd::daemon::sa

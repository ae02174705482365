#pragma once
// Reporter: delivers the SA's Reports (daemon/sa/inform.hpp) to InformInfo
// subscribers. The SM wakes it after every publish; on its own thread it
// compares the current snapshot with the last one it saw (an O(ports)
// comparison, never on the SM strand, and none at all without
// subscribers) and sends what SaAgent::reports() makes. Publishes that
// come faster than it works are coalesced: it compares the newest
// snapshot with the one before its last comparison, so a port that went
// down and up in between is not reported (the state it ends in is).
//
// Threading: wake() from any thread; the destructor stops the thread and
// must run before the agent, the publisher and what `send` uses go.

#include <condition_variable>
#include <cstdint>
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

  // A new snapshot was published.
  void wake();
  // Reports sent, and sends that failed (a transport error).
  std::uint64_t sent() const;
  std::uint64_t failed() const;

 private:
  void loop();

  SaAgent& agent_;
  const state::StatePublisher& publisher_;
  Send send_;
  mutable std::mutex mu_;  // guards woken_, stop_, sent_, failed_
  std::condition_variable cv_;
  bool woken_ = false;
  bool stop_ = false;
  std::uint64_t sent_ = 0, failed_ = 0;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace subnetd::daemon::sa

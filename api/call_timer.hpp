#pragma once
// CallTimer: one thread that runs callbacks at their time. Every waiting gRPC
// call arms one for its wait limit (api/waiting_call.hpp), so a thousand
// waiting calls cost a thousand map entries, not a thousand threads; and the
// SM's completions hand their answers on to it (due now), so that no
// response is filled on the SM's strand.
//
// Nothing polls: the thread sleeps until the earliest deadline or until an
// entry is added or removed. Callbacks run on that thread, one at a time, and
// must be quick (finish a gRPC call; never wait).
//
// Owner: ServiceCore. schedule() and cancel() from any thread. stop() drops
// what has not fired and joins; after it, schedule() does nothing.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace subnetd::api {

class CallTimer {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Names one scheduled callback (its time and a sequence number).
  using Handle = std::pair<TimePoint, std::uint64_t>;

  CallTimer();
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  Handle schedule(TimePoint when, std::function<void()> fire);
  // Forgets a callback that has not fired yet; does nothing once it has (or
  // while it runs: this does not wait for it).
  void cancel(const Handle& h);
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Handle, std::function<void()>> pending_;  // earliest first
  std::uint64_t next_seq_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace subnetd::api

#pragma once
// Time for the daemon's own timers (light-sweep period, trap debounce,
// re-balancing delay, retry backoff), injected so that tests run on a manual
// clock instead of sleeping.
//
// SteadyClock is the real one (a Boost.Asio steady_timer per timer).
// ManualClock moves only when a test calls advance(): every timer that falls
// due is then posted to its strand, in order (a timer due at once, delay
// zero, is posted when it is set). SMP timeouts are not these
// timers: they run on the transport's clock (the MAD engine), which for the
// simulator is virtual already.
//
// Timer: one restartable timer on a strand. Runs on: that strand; the
// callback runs there too, and never after cancel() or the Timer's
// destruction. A Clock must outlive its Timers; ManualClock is thread-safe.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "discovery/strand.hpp"

namespace subnetd::daemon {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  // What a clock hands a Timer: call `fire` on `strand` at `when`, until
  // cancelled.
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual void cancel() = 0;
  };

  virtual ~Clock() = default;
  virtual time_point now() const = 0;
  virtual std::unique_ptr<Pending> schedule(discovery::Strand strand, time_point when,
                                            std::function<void()> fire) = 0;
};

class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  std::unique_ptr<Pending> schedule(discovery::Strand strand, time_point when,
                                    std::function<void()> fire) override;
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(time_point start = time_point{std::chrono::hours{1}}) : now_(start) {}
  time_point now() const override;
  std::unique_ptr<Pending> schedule(discovery::Strand strand, time_point when,
                                    std::function<void()> fire) override;
  // Moves the clock forward and posts every timer now due to its strand.
  void advance(duration d);
  // Timers waiting (for tests that check something is scheduled).
  std::size_t pending() const;
  // When the earliest waiting timer falls due (time_point::max() if none).
  time_point next_due() const;

 private:
  struct Entry {
    discovery::Strand strand;
    std::function<void()> fire;
  };
  class Handle;
  mutable std::mutex mu_;
  time_point now_;
  std::uint64_t next_id_ = 0;
  // (when, id) -> timer; the id keeps equal times in scheduling order.
  std::map<std::pair<time_point, std::uint64_t>, Entry> timers_;
};

class Timer {
 public:
  Timer(Clock& clock, discovery::Strand strand) : clock_(clock), strand_(std::move(strand)) {}
  ~Timer() { cancel(); }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // (Re)starts the timer: `fn` runs on the strand after `delay`, replacing
  // whatever was pending.
  void start(Clock::duration delay, std::function<void()> fn);
  void cancel();
  bool pending() const { return pending_ != nullptr; }
  // When it fires; meaningful while pending().
  Clock::time_point expiry() const { return expiry_; }

 private:
  Clock& clock_;
  discovery::Strand strand_;
  std::unique_ptr<Clock::Pending> pending_;
  Clock::time_point expiry_{};
  std::uint64_t generation_ = 0;  // a callback of an earlier start() does nothing
  std::shared_ptr<int> life_ = std::make_shared<int>(0);
};

}  // namespace subnetd::daemon

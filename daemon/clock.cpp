#include "daemon/clock.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;

class SteadyPending final : public Clock::Pending {
 public:
  SteadyPending(discovery::Strand strand, Clock::time_point when, std::function<void()> fire)
      : timer_(std::move(strand)) {
    timer_.expires_at(when);
    timer_.async_wait([fire = std::move(fire)](boost::system::error_code ec) {
      if (!ec) fire();
    });
  }
  ~SteadyPending() override { timer_.cancel(); }
  void cancel() override { timer_.cancel(); }

 private:
  asio::steady_timer timer_;
};

}  // namespace

std::unique_ptr<Clock::Pending> SteadyClock::schedule(discovery::Strand strand, time_point when,
                                                      std::function<void()> fire) {
  return std::make_unique<SteadyPending>(std::move(strand), when, std::move(fire));
}

// ---------------------------------------------------------------- ManualClock

class ManualClock::Handle final : public Clock::Pending {
 public:
  Handle(ManualClock& clock, std::pair<time_point, std::uint64_t> key) : clock_(clock), key_(key) {}
  ~Handle() override { cancel(); }
  void cancel() override {
    std::lock_guard lock(clock_.mu_);
    clock_.timers_.erase(key_);
  }

 private:
  ManualClock& clock_;
  std::pair<time_point, std::uint64_t> key_;
};

Clock::time_point ManualClock::now() const {
  std::lock_guard lock(mu_);
  return now_;
}

std::unique_ptr<Clock::Pending> ManualClock::schedule(discovery::Strand strand, time_point when,
                                                      std::function<void()> fire) {
  std::lock_guard lock(mu_);
  const auto key = std::make_pair(when, next_id_++);
  if (when <= now_) {
    // Due already (a zero delay): no need to wait for advance().
    asio::post(strand, std::move(fire));
    return std::make_unique<Handle>(*this, key);
  }
  timers_.emplace(key, Entry{std::move(strand), std::move(fire)});
  return std::make_unique<Handle>(*this, key);
}

void ManualClock::advance(duration d) {
  std::vector<Entry> due;
  {
    std::lock_guard lock(mu_);
    now_ += d;
    while (!timers_.empty() && timers_.begin()->first.first <= now_) {
      due.push_back(std::move(timers_.begin()->second));
      timers_.erase(timers_.begin());
    }
  }
  for (Entry& e : due) asio::post(e.strand, std::move(e.fire));
}

std::size_t ManualClock::pending() const {
  std::lock_guard lock(mu_);
  return timers_.size();
}

Clock::time_point ManualClock::next_due() const {
  std::lock_guard lock(mu_);
  return timers_.empty() ? time_point::max() : timers_.begin()->first.first;
}

// ---------------------------------------------------------------- Timer

void Timer::start(Clock::duration delay, std::function<void()> fn) {
  SUBNETD_ASSERT_ON(strand_);
  cancel();
  expiry_ = clock_.now() + delay;
  const std::uint64_t gen = ++generation_;
  pending_ = clock_.schedule(strand_, expiry_,
                             [this, gen, alive = std::weak_ptr<int>(life_), fn = std::move(fn)] {
                               // Cancelled or restarted since: not ours to run.
                               if (alive.expired() || gen != generation_) return;
                               pending_.reset();
                               fn();
                             });
}

void Timer::cancel() {
  ++generation_;
  if (pending_) {
    pending_->cancel();
    pending_.reset();
  }
}

}  // namespace subnetd::daemon

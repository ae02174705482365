#pragma once
// Signal: a one-shot event that coroutines on a strand can wait for ("the
// rerouter for the new tables is built", "the LIDs are on disk"). set() is
// called on the strand (from another thread, post it there first); waiters
// resume on the strand after it. Runs on: the strand given at construction.

#include <boost/asio/steady_timer.hpp>

#include "discovery/coro.hpp"
#include "discovery/strand.hpp"

namespace subnetd::daemon {

class Signal {
 public:
  explicit Signal(discovery::Strand strand) : timer_(std::move(strand)) {}

  void set() {
    set_ = true;
    timer_.cancel();
  }
  bool is_set() const { return set_; }

  boost::asio::awaitable<void> wait() {
    while (!set_) {
      timer_.expires_at(boost::asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }
  }

 private:
  boost::asio::steady_timer timer_;
  bool set_ = false;
};

}  // namespace subnetd::daemon

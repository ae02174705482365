#pragma once
// ThreadAffinity: the debug-build check of a "Runs on: one thread" contract
// for classes that have no strand to ask (the Rerouter, the fast path's
// tables, a Transport's send/receive, the StatePublisher's writer).
//
// The first check() binds the object to the calling thread; a later check()
// from another thread fails an assert. Objects built on one thread and then
// handed to another (a Rerouter built on the compute thread, used on the SM
// strand) bind on their first checked use, or rebind after release(). In
// release builds (NDEBUG) it is empty and costs nothing.

#include <cassert>
#include <thread>

#ifndef NDEBUG
#include <atomic>
#endif

namespace subnetd {

class ThreadAffinity {
 public:
#ifdef NDEBUG
  void check() const {}
  void release() {}
#else
  void check() const {
    const std::thread::id me = std::this_thread::get_id();
    std::thread::id expected{};
    if (owner_.compare_exchange_strong(expected, me)) return;  // first use binds
    assert(expected == me && "called from a thread other than its owner's (see Runs on:)");
  }
  // Hands the object over: the next check() binds it anew.
  void release() {
    owner_.store(std::thread::id{});
  }

 private:
  mutable std::atomic<std::thread::id> owner_{};
#endif
};

}  // namespace subnetd

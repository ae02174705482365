#pragma once
// What the files of daemon::Store share (store.cpp, store_counters.cpp);
// not for use outside them.

#include <sqlite3.h>

#include <atomic>
#include <cassert>
#include <string>

namespace subnetd::daemon::store_detail {

// Resets a statement (and its bindings) when leaving scope, so a cached
// statement is never left mid-iteration after an early return.
struct ResetOnExit {
  sqlite3_stmt* s;
  ~ResetOnExit() {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
};

// Finalizes a statement prepared for one call when leaving scope.
struct Finalize {
  sqlite3_stmt* s = nullptr;
  ~Finalize() { sqlite3_finalize(s); }
};

// A text column as a string (empty for NULL).
inline std::string column_text(sqlite3_stmt* s, int col) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, col))) : std::string();
}

// Asserts the one-thread-at-a-time rule in debug builds.
class UseGuard {
 public:
  explicit UseGuard(std::atomic<bool>& flag) : flag_(flag) {
    [[maybe_unused]] const bool was = flag_.exchange(true, std::memory_order_acquire);
    assert(!was && "daemon::Store used from two threads at once");
  }
  ~UseGuard() { flag_.store(false, std::memory_order_release); }
  UseGuard(const UseGuard&) = delete;
  UseGuard& operator=(const UseGuard&) = delete;

 private:
  std::atomic<bool>& flag_;
};

}  // namespace subnetd::daemon::store_detail

#pragma once
// What the performance manager (daemon/perfmgr) knows of every port's
// counters, published as an immutable snapshot after each counter sweep.
// Readers (gRPC, /metrics) take the current snapshot and never block the SM.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "routing/ids.hpp"

namespace subnetd::state {

// Counters in 64 bits: totals since the performance manager first read the
// port, or the change over one interval. Data in bytes.
struct CounterSet {
  std::uint64_t symbol_errors = 0;
  std::uint64_t link_recovers = 0;
  std::uint64_t link_downed = 0;
  std::uint64_t rcv_errors = 0;
  std::uint64_t rcv_remote_phys = 0;
  std::uint64_t rcv_switch_relay = 0;
  std::uint64_t xmit_discards = 0;
  std::uint64_t xmit_constraint = 0;
  std::uint64_t rcv_constraint = 0;
  std::uint64_t link_integrity = 0;
  std::uint64_t buffer_overrun = 0;
  std::uint64_t vl15_dropped = 0;
  std::uint64_t xmit_wait = 0;  // congestion: ticks with data and no credits
  std::uint64_t xmit_bytes = 0;
  std::uint64_t rcv_bytes = 0;
  std::uint64_t xmit_pkts = 0;
  std::uint64_t rcv_pkts = 0;

  // Every error counter together (not xmit_wait, which is congestion, and
  // not the traffic counters).
  std::uint64_t errors() const {
    return symbol_errors + link_recovers + link_downed + rcv_errors + rcv_remote_phys +
           rcv_switch_relay + xmit_discards + xmit_constraint + rcv_constraint + link_integrity +
           buffer_overrun + vl15_dropped;
  }
  CounterSet& operator+=(const CounterSet& o);
  bool operator==(const CounterSet&) const = default;
};

struct PortCounterEntry {
  Guid node_guid;
  PortNum port = 0;
  CounterSet total;       // since first read
  CounterSet delta;       // over the last interval
  double interval_s = 0;  // length of that interval (0 after the first read)
  std::chrono::system_clock::time_point read_at{};
  bool extended = false;     // data from 64-bit PortCountersExtended
  std::uint32_t clears = 0;  // times the manager cleared the port near saturation
};

struct PortCounterSnapshot {
  std::uint64_t sweep = 0;  // counter sweeps finished
  std::chrono::system_clock::time_point at{};
  std::chrono::microseconds took{};         // reading every port (the MADs)
  std::chrono::microseconds ingest_took{};  // then the bookkeeping (off the SM strand)
  std::uint32_t ports_read = 0;
  std::uint32_t ports_failed = 0;       // unanswered or refused this sweep
  std::string last_error;               // the first failure, naming the port
  std::vector<PortCounterEntry> ports;  // by (node GUID, port)

  const PortCounterEntry* find(Guid node, PortNum port) const;
};

// Holds the current snapshot: publish() from the SM strand, current() from
// any thread, lock-free.
class CounterBoard {
 public:
  CounterBoard() : current_(std::make_shared<const PortCounterSnapshot>()) {}
  std::shared_ptr<const PortCounterSnapshot> current() const { return std::atomic_load(&current_); }
  void publish(std::shared_ptr<const PortCounterSnapshot> s) {
    std::atomic_store(&current_, std::move(s));
  }

 private:
  std::shared_ptr<const PortCounterSnapshot> current_;
};

}  // namespace subnetd::state

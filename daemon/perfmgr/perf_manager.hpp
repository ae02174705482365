#pragma once
// PerfManager: the performance manager's bookkeeping — which ports a
// counter sweep reads, and what their readings mean (issue 16).
//
// The SM runs the counter sweep itself (sm_perfmgr.cpp: PMA Gets through
// the MAD engine, a windowed Flow like the sweeps', never blocking the
// strand); this class is pure and is tested alone.
//
// Per port, a sweep reads PortCounters (errors, and data where the port has
// nothing better) and, where the node's PMA ClassPortInfo says it has them,
// PortCountersExtended (64-bit data). PortCounters stop at their maximum
// instead of wrapping, so:
//  - a port with a counter past `clear_fraction` of its maximum is cleared
//    after the reading (a PortCounters Set of every counter, as OpenSM's
//    perfmgr does); its next delta counts from zero;
//  - a counter that reads lower than last time was cleared (by us or by
//    someone else, e.g. perfquery -R): its delta is the new value;
//  - totals are 64-bit sums of the deltas since the port was first read.
// A port read for the first time has totals of what it shows and no delta.
//
// Threading: the owner's (the SM strand).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/mad/pma.hpp"
#include "routing/lid_map.hpp"
#include "routing/topology.hpp"
#include "state/port_counters.hpp"

namespace subnetd::daemon::perfmgr {

struct PerfOptions {
  // Clear a port's PortCounters once a counter passes this fraction of its
  // maximum.
  double clear_fraction = 0.75;
};

// A port a counter sweep reads: where its PMA answers (the switch's LID for
// every port of a switch; the CA port's own LID) and what PortSelect names.
struct Target {
  NodeId node;
  Guid node_guid;
  PortNum port = 0;
  std::uint32_t lid = 0;
};

// Every connected physical port of every node that has a LID to reach its
// PMA, by (node GUID, port): the snapshot's order, so that ingest() needs
// no sort.
std::vector<Target> targets_of(const routing::Topology& t, const routing::LidMap& lids);

// What a sweep got for one target.
struct Reading {
  std::optional<discovery::mad::pma::PortCounters> counters;  // absent: no answer
  std::optional<discovery::mad::pma::PortCountersExtended> extended;
  bool cleared = false;  // a clear Set followed the reading and was answered
};

class PerfManager {
 public:
  explicit PerfManager(PerfOptions opts = {}) : opts_(opts) {}

  // Whether the reading should be followed by a clear.
  bool wants_clear(const discovery::mad::pma::PortCounters& c) const {
    return c.near_saturation(opts_.clear_fraction);
  }
  // Folds one sweep's readings (readings[i] for targets[i]) into the totals
  // and makes the snapshot to publish. `failed`/`first_error` describe the
  // targets without an answer.
  std::shared_ptr<state::PortCounterSnapshot> ingest(const std::vector<Target>& targets,
                                                     const std::vector<Reading>& readings,
                                                     std::chrono::system_clock::time_point now,
                                                     std::chrono::microseconds took,
                                                     std::string first_error);

  // The errors a sweep newly saw on a port: its delta, or on its first
  // reading (read_at set, interval 0, no earlier reading) its totals.
  static std::uint64_t new_errors(const state::PortCounterEntry& e) {
    return e.interval_s == 0 && e.delta.errors() == 0 ? e.total.errors() : e.delta.errors();
  }
  // Ports with new errors in the last sweep, most first.
  const std::vector<const state::PortCounterEntry*>& erring() const { return erring_; }

 private:
  struct Key {
    std::uint64_t guid;
    PortNum port;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return static_cast<std::size_t>((k.guid * 0x9E3779B97F4A7C15ULL) ^ k.port);
    }
  };
  // What the next reading of a port is compared with.
  struct Last {
    discovery::mad::pma::PortCounters counters;  // as read (zeros after a clear)
    std::optional<discovery::mad::pma::PortCountersExtended> extended;
    state::CounterSet total;
    std::chrono::system_clock::time_point read_at{};
    std::uint32_t clears = 0;
    bool known = false;  // read at least once
  };
  // lasts_[i] belongs to keys_[i], the targets of the last sweep: a sweep
  // of the same targets (every sweep but those after a topology change)
  // finds its port's history by index, with no lookup. Ports that left the
  // targets keep their history in gone_ until they come back.
  void realign(const std::vector<Target>& targets);

  PerfOptions opts_;
  std::vector<Key> keys_;
  std::vector<Last> lasts_;
  std::unordered_map<Key, Last, KeyHash> gone_;
  std::shared_ptr<const state::PortCounterSnapshot> current_;
  std::vector<const state::PortCounterEntry*> erring_;
  std::uint64_t sweeps_ = 0;
};

}  // namespace subnetd::daemon::perfmgr

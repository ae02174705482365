#pragma once
// Commands that reach the SubnetManager from outside (gRPC, signals). Each is
// posted onto the SM strand; the returned future completes when the SM has
// acted. Implemented by SubnetManager; the gRPC service holds a reference.

#include <cstdint>
#include <future>
#include <string>

#include "routing/ids.hpp"
#include "routing/result.hpp"

namespace subnetd::daemon {

struct SweepReply {
  bool ok = false;
  std::uint64_t generation = 0;
  std::string message;
};

class SmControl {
 public:
  virtual ~SmControl() = default;
  // Runs a heavy sweep (bring-up) now.
  virtual std::future<SweepReply> trigger_sweep(std::string reason) = 0;
  // Runs the full verifier on the current tables.
  virtual std::future<Result<std::string>> verify_routing() = 0;
  // Disables (state DOWN) or re-enables a port of a node, then repairs routing.
  virtual std::future<Result<void>> set_port_enabled(Guid node_guid, PortNum port, bool enabled,
                                                     std::string who) = 0;
};

// Operator control of the embedded simulated fabric ("pull a cable"). Thread-
// safe; the events it causes (traps, port state changes) reach the SM through
// the transport like on a real fabric. Absent when the transport is umad.
struct SimCounters {
  std::uint64_t smps_handled = 0;
  std::uint64_t smps_dropped = 0;  // all reasons
  std::uint64_t traps_sent = 0;
  std::uint64_t lid_routed_dropped = 0;  // no LFT entry / inactive port
};

class SimControl {
 public:
  virtual ~SimControl() = default;
  virtual Result<void> set_link_state(Guid node_guid, PortNum port, bool up) = 0;
  virtual Result<void> set_switch_state(Guid node_guid, bool up) = 0;
  virtual SimCounters counters() const = 0;
};

}  // namespace subnetd::daemon

#pragma once
// Commands that reach the SubnetManager from outside (gRPC, signals). Each is
// posted onto the SM strand; the returned future completes when the SM has
// acted. Implemented by SubnetManager; the gRPC service holds a reference.

#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <string>

#include "routing/ids.hpp"
#include "routing/result.hpp"

namespace subnetd::state {

// What one light sweep saw: a SwitchInfo Get of every switch of the last
// heavy sweep, looking for PortStateChange (a port went up or down and no
// sweep has seen it yet) or a switch that no longer answers.
struct LightSweepReport {
  std::uint32_t switches = 0;  // switches asked (all of the last heavy sweep's)
  std::uint32_t answered = 0;
  std::uint32_t changed = 0;  // of those that answered, how many had PortStateChange set
  // The first finding ("port state change on switch \"leaf0\"", "switch
  // \"spine1\" does not answer", a transport error); empty = nothing changed.
  std::string change;
  std::chrono::system_clock::time_point started_at{};
  std::chrono::microseconds took{};

  bool found_change() const { return !change.empty(); }
};

struct SweepReply {
  bool ok = false;
  // The published generation after the sweep (unchanged when a light sweep
  // found nothing).
  std::uint64_t generation = 0;
  // Heavy sweep: its summary when ok, else why it failed. Light sweep that
  // found nothing: what it checked.
  std::string message;
  // Set when the answer comes from trigger_light_sweep. With a change found,
  // the heavy sweep it started answered (ok, generation and message are that
  // sweep's); without, no heavy sweep ran.
  std::optional<LightSweepReport> light;
};

class SmControl {
 public:
  virtual ~SmControl() = default;
  // Runs a heavy sweep (bring-up) now.
  virtual std::future<SweepReply> trigger_sweep(std::string reason) = 0;
  // Runs a light sweep now (and restarts the periodic light-sweep timer);
  // when it finds a change, runs the heavy sweep at once and answers with
  // that sweep's outcome. Errc::kUnreachable before the first heavy sweep
  // has finished (there is nothing to compare with); Errc::kCancelled once
  // subnetd is stopping.
  virtual std::future<Result<SweepReply>> trigger_light_sweep(std::string reason) = 0;
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

}  // namespace subnetd::state

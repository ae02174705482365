#pragma once
// Commands that reach the SubnetManager from outside (gRPC, signals). Each is
// posted onto the SM strand and answered through a Completion once the SM
// has acted: nobody waits or polls. Implemented by SubnetManager; the gRPC
// service holds a reference and finishes its call from the completion.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

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

// Called exactly once with the outcome, on the SM's thread (its strand).
// It must be quick: hand the result on (finish a gRPC call, fulfil a
// promise) and never block or call back into the SM synchronously. When
// subnetd stops first, it is called with Errc::kCancelled (or, for
// trigger_sweep, a reply saying so).
template <class T>
using Completion = std::function<void(T)>;

struct VerifyRequest {
  // Also read every LFT block back from the switches and compare it with the
  // published tables (what the switches actually hold, not what the SM
  // believes they hold).
  bool read_back = false;
};

enum class Verdict : std::uint8_t {
  kOk,
  kIncomplete,    // a reachable pair has no route
  kLoop,          // a forwarding loop
  kCreditLoop,    // a cycle in a VL's channel dependency graph
  kTablesDiffer,  // read back: a switch holds other entries than published
};

struct ReadBackReport {
  std::uint32_t switches = 0;         // switches asked
  std::uint32_t switches_silent = 0;  // of those, switches that did not answer every block
  std::uint64_t blocks_read = 0;
  std::uint64_t blocks_differ = 0;
  // The first differences, e.g. "switch \"leaf0\" (0x...) block 3: LID 0xc5
  // -> port 255, published 7"; at most kMaxDifferences.
  std::vector<std::string> differences;
  static constexpr std::size_t kMaxDifferences = 20;
};

struct VerifyReply {
  std::uint64_t generation = 0;  // the published snapshot that was verified
  Verdict verdict = Verdict::kOk;
  std::string message;  // the summary, or the failing pair / loop / cycle
  std::uint64_t pairs_checked = 0;
  std::uint32_t num_vls = 0;
  std::uint64_t channels = 0;
  std::uint64_t dependencies = 0;
  std::chrono::microseconds took{};
  // True when this answer came from a verification of the same generation
  // that another caller had already started or finished: concurrent and
  // repeated requests for unchanged tables share one run.
  bool shared = false;
  std::optional<ReadBackReport> read_back;  // set when asked for
};

// The SM's MAD traffic since the daemon started (its MAD engine's totals),
// for /metrics.
struct MadCounters {
  std::uint64_t sent = 0;  // requests, retries and unsolicited sends
  std::uint64_t retries = 0;
  std::uint64_t responses = 0;
  std::uint64_t error_status = 0;  // responses with a non-zero MAD status
  std::uint64_t timeouts = 0;      // requests unanswered after every retry
  std::uint64_t received = 0;
  std::uint64_t malformed = 0;
  std::uint64_t unsolicited = 0;  // traps and requests addressed to the SM
};

class SmControl {
 public:
  virtual ~SmControl() = default;
  // Any thread, immediately (relaxed counters; no call onto the strand).
  virtual MadCounters mad_counters() const = 0;
  // Runs a heavy sweep (bring-up). Requested while one runs, it is queued:
  // the next heavy sweep, which starts after this request, answers it (and
  // every other request queued meanwhile).
  virtual void trigger_sweep(std::string reason, Completion<SweepReply> done) = 0;
  // The same, and that heavy sweep routes afresh: layered routes on
  // several VLs, otherwise repaired in their layers after a failure (every
  // LID keeping its SL), are re-balanced across layers, and hosts must
  // resolve the SLs of the LIDs that moved again.
  virtual void trigger_rebalance(std::string reason, Completion<SweepReply> done) = 0;
  // Runs a light sweep now (and restarts the periodic light-sweep timer);
  // when it finds a change, runs the heavy sweep and answers with that
  // sweep's outcome. Errc::kUnreachable before the first heavy sweep has
  // finished (there is nothing to compare with).
  virtual void trigger_light_sweep(std::string reason, Completion<Result<SweepReply>> done) = 0;
  // Runs the full verifier on the published tables (off the SM's thread);
  // see VerifyReply::shared. Errc::kUnreachable without tables. A verdict
  // other than kOk is a reply, not an error.
  virtual void verify_routing(VerifyRequest request, Completion<Result<VerifyReply>> done) = 0;
  // Disables (state DOWN) or re-enables a port of a node, then repairs
  // routing; answers once the port has been set.
  virtual void set_port_enabled(Guid node_guid, PortNum port, bool enabled, std::string who,
                                Completion<Result<void>> done) = 0;
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

// Counter increments for a simulated port (Simulator.InjectPortErrors).
struct PortErrorInjection {
  std::uint32_t symbol_errors = 0;
  std::uint32_t link_recovers = 0;
  std::uint32_t link_downed = 0;
  std::uint32_t rcv_errors = 0;
  std::uint32_t xmit_discards = 0;
  std::uint32_t link_integrity = 0;
  std::uint32_t buffer_overrun = 0;
  std::uint64_t xmit_wait = 0;
};

class SimControl {
 public:
  virtual ~SimControl() = default;
  virtual Result<void> inject_port_errors(Guid node_guid, PortNum port,
                                          const PortErrorInjection& e) = 0;
  virtual Result<void> set_link_state(Guid node_guid, PortNum port, bool up) = 0;
  virtual Result<void> set_switch_state(Guid node_guid, bool up) = 0;
  virtual SimCounters counters() const = 0;
};

}  // namespace subnetd::state

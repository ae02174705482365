#pragma once
// FailoverArmer: arms switch-local fast failover (issue 14; discovery/README.md,
// "Fast failover") on the switches that have it, from a routing::FailoverPlan
// the failover verifier passed.
//
// Per switch of the sweep:
//  - Only a switch whose NodeInfo:VendorID is subnetd's (mad::kSubnetdVendorId)
//    is asked anything: the attribute IDs are vendor-specific, and on another
//    vendor's switch they name other attributes.
//  - FailoverInfo Get, once per daemon run: the armer remembers the answer
//    by node GUID. Capable (local failover and notifications), not capable,
//    or silent (no answer after the flow's retries: ibsim and other
//    simulators drop vendor SMPs). A silent switch costs one timeout per
//    daemon run and is never asked again; forget() (a reboot) asks again.
//  - On a capable switch, what differs from what it is known to hold (the
//    plan last armed on it, matched by GUID): group blocks (2 groups each),
//    LID group blocks (64 LIDs each), the notify ports. Everything when
//    nothing is known (first arming in this run, after a reboot or a failed
//    arming). FailoverInfo Set (enabled, group_top, lid_top) goes last, once
//    the tables are in place, and only when it differs.
// Switches without the feature keep the SM's repair path alone.
//
// clear_notifications(): NotifyConfig Set with clear_state on every armed
// switch, once the SM has repaired the LFTs (stage 2): the notification
// state left by a failure is forgotten and the groups are whole again.
//
// Runs on the MAD engine's strand (one Flow per call); not thread-safe. The
// plans it keeps are shared, immutable.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/mad_engine.hpp"
#include "discovery/sweeper.hpp"
#include "routing/failover_plan.hpp"

namespace subnetd::discovery {

struct ArmReport {
  std::uint32_t switches = 0;      // switches of the sweep
  std::uint32_t foreign = 0;       // another vendor's: never asked
  std::uint32_t capable = 0;       // have the feature
  std::uint32_t not_capable = 0;   // answered without it
  std::uint32_t silent = 0;        // never answered (this call or before)
  std::uint32_t newly_silent = 0;  // of which: timed out in this call
  std::uint32_t armed = 0;         // capable switches that hold the plan now
  std::uint64_t info_gets = 0;
  std::uint64_t info_sets = 0;
  std::uint64_t group_blocks_sent = 0;
  std::uint64_t lid_blocks_sent = 0;
  std::uint64_t blocks_unchanged = 0;
  std::uint64_t notify_sets = 0;
  std::vector<std::string> failures;  // SMPs that failed after retries, with the target
  FlowStats smps;
  std::chrono::nanoseconds duration{};  // transport time
};

class FailoverArmer {
 public:
  enum class Capability : std::uint8_t { kUnknown, kCapable, kNotCapable, kSilent };

  // `plan` must be for `sweep.topology` (switch indices) and verified.
  // Fails only when the engine stops; failed SMPs are in the report, and a
  // switch with one is held as unknown (all of it is sent next time).
  boost::asio::awaitable<Result<ArmReport>> arm(MadEngine& engine, const SweepResult& sweep,
                                                std::shared_ptr<const routing::FailoverPlan> plan,
                                                FlowOptions pipeline);
  // The same on a private event loop over `transport`.
  Result<ArmReport> arm_blocking(Transport& transport, const SweepResult& sweep,
                                 std::shared_ptr<const routing::FailoverPlan> plan,
                                 FlowOptions pipeline);

  boost::asio::awaitable<Result<ArmReport>> clear_notifications(MadEngine& engine,
                                                                const SweepResult& sweep,
                                                                FlowOptions pipeline);

  // A switch that rebooted or was replaced: its capability is asked again,
  // and it holds nothing.
  void forget(Guid switch_guid) { known_.erase(switch_guid); }
  Capability capability(Guid switch_guid) const {
    auto it = known_.find(switch_guid);
    return it == known_.end() ? Capability::kUnknown : it->second.cap;
  }
  // Capable switches that hold an armed plan.
  std::size_t armed_switches() const;

 private:
  struct Known {
    Capability cap = Capability::kUnknown;
    std::shared_ptr<const routing::FailoverPlan> plan;  // what it holds; null = unknown
    SwitchIndex index;                                  // the switch in `plan`
  };
  std::unordered_map<Guid, Known> known_;
};

}  // namespace subnetd::discovery

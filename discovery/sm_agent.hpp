#pragma once
// SmAgent: what subnetd's port answers when someone asks the SM itself.
//
// Switch and CA SMAs answer NodeInfo, PortInfo, ... for their own node; what
// reaches the SM's management agent (QP0 on the SM's port, IsSM set) are the
// requests addressed to the SM: SMInfo Get from `sminfo` or from another SM
// polling for the master (IBA 14.4), SMInfo Set (handover control), and
// traps. SmAgent builds the reply to the requests; traps are not its
// business (the SM core reacts to them and represses them).
//
// SMInfo is answered with the identity given at construction (our port GUID,
// priority, SM_Key 0), the current state (set_state) and an activity count
// the caller supplies — like OpenSM, the number of SMPs the SM has sent, which
// grows while the SM is alive and active. subnetd does not take part in SM
// election or handover (IBA 14.4.1): an SMInfo Set is answered with our
// SMInfo and status "method/attribute unsupported", so a peer SM sees we do
// not yield. Any other Get/Set reaching the SM gets the same status.
//
// Threading: answer() and the setters may be called from any thread (the umad
// transport's receiver thread answers while the SM strand routes).

#include <atomic>
#include <cstdint>
#include <optional>

#include "discovery/mad/smp.hpp"
#include "discovery/transport.hpp"
#include "routing/ids.hpp"

namespace subnetd::discovery {

enum class SmState : std::uint8_t { kNotActive = 0, kDiscovering = 1, kStandby = 2, kMaster = 3 };

struct SmAgentOptions {
  Guid port_guid;              // SMInfo.GUID: the SM's port GUID
  std::uint8_t priority = 15;  // 0..15, higher wins an election
  SmState state = SmState::kMaster;
};

struct SmAgentStats {
  std::uint64_t sminfo_get = 0;   // SMInfo Get answered
  std::uint64_t sminfo_set = 0;   // SMInfo Set refused (no handover)
  std::uint64_t unsupported = 0;  // other requests answered "unsupported"
};

class SmAgent {
 public:
  explicit SmAgent(SmAgentOptions opts);

  // The reply to `request` (decoded from `raw`), or nullopt when it is not a
  // request for the SM to answer (a response, a trap, a TrapRepress).
  // `act_count`: the SM's activity count for SMInfo.ActCount.
  std::optional<Mad> answer(const mad::Smp& request, const Mad& raw, std::uint32_t act_count);

  // The SMInfo we report now.
  mad::SmInfo sm_info(std::uint32_t act_count) const;

  void set_state(SmState s) { state_.store(s, std::memory_order_relaxed); }
  SmState state() const { return state_.load(std::memory_order_relaxed); }
  SmAgentStats stats() const;

 private:
  Guid port_guid_;
  std::uint8_t priority_;
  std::atomic<SmState> state_;
  std::atomic<std::uint64_t> sminfo_get_{0};
  std::atomic<std::uint64_t> sminfo_set_{0};
  std::atomic<std::uint64_t> unsupported_{0};
};

}  // namespace subnetd::discovery

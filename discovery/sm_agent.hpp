#pragma once
// SmAgent: what subnetd's port answers when someone asks the SM itself.
//
// Switch and CA SMAs answer NodeInfo, PortInfo, ... for their own node; what
// reaches the SM's management agent (QP0 on the SM's port, IsSM set) are the
// requests addressed to the SM: SMInfo Get from `sminfo` or from another SM
// polling for the master (IBA 14.4), SMInfo Set (election and handover
// control), and traps.
//
// SMInfo Get is answered here with the SM's identity (port GUID, priority,
// SM_Key) and its current state, which the SM core keeps up to date through
// the setters as the election moves it (discovery/sm_election.hpp), and an
// activity count the caller supplies — like OpenSM, the number of SMPs the SM
// has sent, which grows while the SM is alive and active. The SM_Key goes
// out with it, as OpenSM's does: IBA hides it only from a requester that
// fails the port's M_Key check, and subnetd protects no port with an M_Key
// (OpenSM ignores a peer whose answer carries another key than its own).
// Answering Gets here, on whatever thread receives them, lets a standby's
// poll be answered while the SM strand is busy routing.
//
// SMInfo Set is not answered here: its answer depends on the election (is
// the sender a master? do we accept a handover?), which lives on the SM
// strand. answer() returns nullopt and the transport hands the Set on like a
// trap; the SM answers it with reply() once the election decided. Any other
// Get/Set reaching the SM gets "method/attribute unsupported".
//
// Threading: answer(), sm_info() and the setters may be called from any
// thread (the umad transport's receiver thread answers while the SM strand
// sets the state).

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
  std::uint64_t sm_key = 0;
};

struct SmAgentStats {
  std::uint64_t sminfo_get = 0;   // SMInfo Get answered
  std::uint64_t sminfo_set = 0;   // SMInfo Set handed on to the SM
  std::uint64_t unsupported = 0;  // other requests answered "unsupported"
};

class SmAgent {
 public:
  explicit SmAgent(SmAgentOptions opts);

  // The reply to `request` (decoded from `raw`), or nullopt when it is not a
  // request for the agent to answer (a response, a trap, a TrapRepress, an
  // SMInfo Set). `act_count`: the SM's activity count for SMInfo.ActCount.
  std::optional<Mad> answer(const mad::Smp& request, const Mad& raw, std::uint32_t act_count);

  // The SMInfo we report now; the SM_Key only when `with_key`.
  mad::SmInfo sm_info(std::uint32_t act_count, bool with_key = false) const;

  // The GetResp to `request` (as OpenSM's osm_resp_send: the request with
  // method GetResp, `status`, `info` as data, directed-route replies
  // retracing the request's path).
  static Mad reply(const mad::Smp& request, const Mad& raw, std::uint16_t status,
                   const mad::SmInfo* info);

  void set_state(SmState s) { state_.store(s, std::memory_order_relaxed); }
  SmState state() const { return state_.load(std::memory_order_relaxed); }
  void set_priority(std::uint8_t p);
  std::uint8_t priority() const { return priority_.load(std::memory_order_relaxed); }
  void set_sm_key(std::uint64_t k) { sm_key_.store(k, std::memory_order_relaxed); }
  std::uint64_t sm_key() const { return sm_key_.load(std::memory_order_relaxed); }
  Guid port_guid() const { return port_guid_; }
  SmAgentStats stats() const;

 private:
  Guid port_guid_;
  std::atomic<std::uint8_t> priority_;
  std::atomic<SmState> state_;
  std::atomic<std::uint64_t> sm_key_;
  std::atomic<std::uint64_t> sminfo_get_{0};
  std::atomic<std::uint64_t> sminfo_set_{0};
  std::atomic<std::uint64_t> unsupported_{0};
};

}  // namespace subnetd::discovery

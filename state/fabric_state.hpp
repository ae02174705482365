#pragma once
// FabricState: the immutable snapshot the SubnetManager publishes after every
// bring-up or repair. Readers (the gRPC service, subnetctl via gRPC) take a
// std::shared_ptr<const FabricState> and never block the SM; the SM swaps in
// a new snapshot atomically (StatePublisher). Parts that did not change are
// shared between snapshots (shared_ptr members), so a reroute publishes in
// O(changed) plus a few pointer copies.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/mcast.hpp"
#include "routing/partitions.hpp"
#include "routing/thread_check.hpp"
#include "routing/topology.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::state {

enum class SmState : std::uint8_t {
  kStarting,     // no sweep finished yet
  kDiscovering,  // a heavy sweep is running
  kMaster,       // the subnet is up and programmed by us
  kFailed,       // the last bring-up failed; the previous programming stands
  kStandby,      // another SM is master: we poll it and program nothing
  kNotActive,    // a master disabled us (SMInfo DISABLE): we wait to be woken
};
const char* sm_state_name(SmState s);

struct PhaseTimings {
  std::chrono::nanoseconds sweep{}, lids{}, route{}, verify{}, program{}, total{};
};

struct VerificationSummary {
  bool ok = false;
  std::string message;  // "complete, loop-free, deadlock-free: ..." or the error
  std::uint64_t pairs_checked = 0;
  std::uint64_t channels = 0;
  std::uint64_t dependencies = 0;
};

// Another SM as the election last saw it (an answer to our SMInfo Get or
// the SMInfo of its Set).
struct SmPeerView {
  Guid guid;  // its port GUID
  Lid lid;    // its port's LID, as the sweep found it (0: none known)
  std::uint8_t priority = 0;
  std::uint8_t ib_state = 0;  // SMInfo.SMState: 0 not active, 1 discovering, 2 standby, 3 master
  std::chrono::system_clock::time_point last_contact;
  bool operator==(const SmPeerView&) const = default;
};

// The SM election (IBA 14.4) as this SM sees it.
struct SmRoleView {
  std::uint8_t priority = 0;
  std::uint8_t ib_state = 1;  // ours, as SMInfo reports it
  Guid master_guid;           // the master's port GUID (ours when we are); 0 = none known
  Lid master_lid;
  std::vector<SmPeerView> peers;  // by GUID
  bool operator==(const SmRoleView&) const = default;
};

struct FabricState {
  std::uint64_t generation = 0;  // increases with every publish
  SmState state = SmState::kStarting;
  std::string transport;  // "sim", "umad:mlx5_0:1"
  std::chrono::system_clock::time_point published_at;

  // Absent until the first successful sweep.
  std::shared_ptr<const routing::Topology> topology;
  std::shared_ptr<const routing::LidMap> lids;
  std::shared_ptr<const routing::Routes> routes;
  // By Topology port index: each port's PortInfo as the sweep read it (64
  // bytes, all zero when not read); the SA's PortInfoRecords. What the SM
  // set since (LIDs, state) is in the topology's ports.
  std::shared_ptr<const std::vector<std::array<std::uint8_t, 64>>> port_info;
  // By switch_index: each switch's SwitchInfo as the sweep read it.
  std::shared_ptr<const std::vector<std::array<std::uint8_t, 64>>> switch_info;
  // Node GUIDs two nodes answered with in the last sweep (a board flashed
  // with another's GUID): (GUID, what the sweep saw). Bring-up screening
  // reports each.
  std::shared_ptr<const std::vector<std::pair<Guid, std::string>>> duplicate_guids;
  // The partitions and every port's P_Key table as programmed (by port
  // index of `topology`).
  std::shared_ptr<const routing::PartitionPlan> partitions;
  // The multicast groups and the trees programmed for them (null without
  // multicast).
  std::shared_ptr<const std::vector<McastGroup>> mcast_groups;
  std::shared_ptr<const routing::McastTables> multicast;

  NodeId sm_node;
  PortNum sm_port = 0;
  Lid sm_lid;

  std::string engine;
  PhaseTimings last_bringup;
  std::chrono::system_clock::time_point last_sweep_at;
  std::uint64_t sweeps = 0;
  std::uint64_t reroutes = 0;
  std::chrono::nanoseconds last_reroute{};
  VerificationSummary verification;
  std::string last_error;  // why the last bring-up failed, if it did
  SmRoleView sm_role;
};

// Holds the current snapshot. publish() from the SM strand; current() from
// any thread, lock-free; wait_for() from any thread that must wait for the
// SM to publish something (tests, tools), woken by every publish.
class StatePublisher {
 public:
  StatePublisher() : current_(std::make_shared<const FabricState>()) {}
  std::shared_ptr<const FabricState> current() const { return std::atomic_load(&current_); }
  void publish(std::shared_ptr<const FabricState> s);
  // The first state (the current one included) for which `pred` holds, or
  // null when none did within `limit`.
  std::shared_ptr<const FabricState> wait_for(const std::function<bool(const FabricState&)>& pred,
                                              std::chrono::milliseconds limit) const;

 private:
  std::shared_ptr<const FabricState> current_;
  mutable std::mutex mu_;  // for wait_for only
  ThreadAffinity writer_;  // publish(): one thread (the SM strand's), debug-checked
  mutable std::condition_variable published_;
};

}  // namespace subnetd::state

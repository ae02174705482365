#pragma once
// Options and statistics of the embedded simulated fabric (discovery/sim).
// See sim_fabric.hpp for the fabric itself and discovery/README.md,
// "Simulator", for the behaviour it models.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/mad/failover.hpp"
#include "routing/ids.hpp"
#include "routing/port_mask.hpp"

namespace subnetd::discovery::sim {

// Optional timing model. Without it the fabric is zero-latency: a response
// is ready the moment its request is sent.
struct LatencyModel {
  // One link traversal: serialisation, cable and the switch crossbar.
  std::chrono::nanoseconds hop_delay{200};
  // Time a node's SMA spends on one SMP it answers. SMPs queue at the SMA and
  // are served in arrival order.
  std::chrono::nanoseconds sma_processing{2'000};
  // Extra time a switch spends relaying a directed-route SMP: real switches
  // hand every DR SMP to their management processor, LID-routed ones are
  // forwarded in hardware.
  std::chrono::nanoseconds dr_relay{0};
  // SMPs that may wait at one SMA (the one being served included); an SMP
  // arriving at a full queue is dropped, as by a real SMA's bounded queue.
  std::uint32_t sma_queue_depth = 64;
  // Switch-local fast failover (FailoverTables): time from a port's link
  // going down until its switch stops using it (forwards on another port of
  // the LID's group, or sends fault notifications); packets sent meanwhile
  // are lost on the dead link.
  std::chrono::nanoseconds failover_detect{1'000};
  // Time a switch spends on a fault notification it receives, beyond the
  // hop_delay of the link it crossed (update its groups, decide whether to
  // pass it on).
  std::chrono::nanoseconds notify_processing{500};
};

// Switch ports as a bit set (routing/port_mask.hpp).
using PortMask = routing::PortMask;

// What an SM arms on a switch for switch-local fast failover (issue 14;
// discovery/README.md, "Fast failover"): port groups, a group per LID
// beside its LFT port, and the ports fault notifications go out of. With
// `enabled` false (the default) the switch forwards by its LFT alone.
struct FailoverTables {
  bool enabled = false;
  // Group id -> its ports; id 0 means "no group" and is never used.
  std::vector<PortMask> groups;
  // LID-indexed group id (0 = none); LIDs beyond its size have none.
  std::vector<std::uint8_t> lid_group;
  // Ports a fault notification is sent out of (towards switches that may
  // route through this one); a receiver that does not route the named
  // destination through the sender ignores it.
  PortMask notify;
};

struct SimOptions {
  // LID addressing mode: 16 (IBA), 17 or 24 (vendor extended attributes).
  int lid_bits = 16;

  // Where the SM attaches: a CA port. Chosen by node description, else by
  // GUID (a node GUID, then `sm_port`; or a port GUID), else the first CA in
  // the topology, port `sm_port`.
  std::string sm_node;
  Guid sm_guid;
  PortNum sm_port = 1;

  // Seed of the drop-probability generator; a run is deterministic given
  // the seed and the sequence of calls.
  std::uint64_t seed = 1;
  // Probability that an SMP is lost on one link traversal (0..1).
  double drop_probability = 0.0;

  std::optional<LatencyModel> latency;

  // LinearFDBCap every switch reports; 0 = the mode's default (0xC000 in
  // 16-bit mode, the top of the unicast space + 1 in 17/24-bit modes).
  std::uint32_t linear_fdb_cap = 0;

  // IBA lets VL15 SMPs through ports in INIT and ARMED as well as ACTIVE
  // (that is how an SM configures a fabric before activating it), and that is
  // the default. ibsim forwards LID-routed SMPs only through ACTIVE ports;
  // true imitates it, to test an SM against the stricter peer.
  bool lid_routed_needs_active = false;

  // A switch repeats an unanswered trap this often (transport time) until
  // the SM sends TrapRepress with the trap's TID, at most trap_max_sends times.
  std::chrono::nanoseconds trap_resend_interval{std::chrono::milliseconds{100}};
  unsigned trap_max_sends = 10;

  // LID-routed packets carry no hop count; a routing loop would circulate a
  // packet until the switches' HOQ lifetime expires. The simulator drops it
  // after this many links.
  std::uint32_t lid_routed_hop_limit = 64;

  // Switches have switch-local fast failover (FailoverInfo's capability
  // bits); false imitates switches without it (FailoverInfo answers with no
  // capability, the tables with status 0x000C).
  bool failover_capable = true;

  // NodeInfo:VendorID of every node. Any other value than subnetd's
  // (mad::kSubnetdVendorId, 0xFA57F0) imitates another vendor's hardware:
  // it drops every vendor-specific SMP (0xFF00-0xFFFF) unanswered, as ibsim
  // does, counted as DropReason::kVendorAttribute.
  std::uint32_t vendor_id = mad::kSubnetdVendorId;

  // Port counters (PMA, sim_pma.cpp). The traffic model: a switch port
  // transmits `traffic_bytes_per_lid` bytes a second for every LID its
  // switch's LFT sends out of it, a CA port as much for every other LID of
  // the subnet; a port receives what its peer transmits; 2 KiB packets.
  // 0 = no traffic (error injection only).
  double traffic_bytes_per_lid = 10'000.0;
  // The time traffic accrues on; default: the steady clock (the SM's
  // virtual time does not pass between sweeps). Tests inject their own.
  std::function<std::chrono::nanoseconds()> traffic_clock;

  // Nodes whose NodeInfo answers with another GUID than the topology's
  // (node ID -> the GUID it claims): a board flashed with another's GUID,
  // for testing duplicate-GUID detection. The topology itself stays valid.
  std::unordered_map<std::uint32_t, Guid> node_guid_answers;
};

// Another SM in the simulated subnet (SimFabric::set_peer_sm; issue 17):
// a scripted peer at a CA port that holds IsSM, answers SMInfo Get with its
// SMInfo and takes SMInfo Sets as IBA 14.4.3 lets an SM take them. It
// sweeps, polls and programs nothing: a test moves it (its priority and
// state, a HANDOVER it sends) as the peer's own logic would, and kills it
// (its SMInfo goes unanswered, IsSM clears) as kill -9 would.
struct PeerSmOptions {
  std::uint8_t priority = 0;  // 0..15
  std::uint8_t state = 2;     // SMInfo SMState: 0 NOTACTIVE, 1 DISCOVERING, 2 STANDBY, 3 MASTER
  std::uint64_t sm_key = 1;   // OpenSM's default, as subnetd's
};

// What the peer SM is and what it was told.
struct PeerSmView {
  Guid guid;  // its port GUID
  PeerSmOptions now;
  bool alive = true;
  std::uint32_t act_count = 0;
  std::uint64_t gets = 0;     // SMInfo Gets answered
  std::uint64_t sets = 0;     // SMInfo Sets received (taken or refused)
  std::uint64_t refused = 0;  // Sets refused (wrong sender state, wrong own state, wrong key)
  std::uint64_t sent = 0;     // SMInfo Sets it sent (SimFabric::peer_sm_send, ACKNOWLEDGE)
  std::uint64_t answers = 0;  // answers to its Sets that reached it
  std::uint64_t traps = 0;    // traps that reached it (trap 144 from a standby)
  std::uint16_t last_answer_status = 0;  // MAD status of the last answer to its Sets
  std::uint32_t last_control = 0;        // attribute modifier of the last Set received
};

// Counter increments injected at a port (SimFabric::inject_port_errors).
struct PortErrors {
  std::uint32_t symbol_errors = 0;
  std::uint32_t link_recovers = 0;
  std::uint32_t link_downed = 0;
  std::uint32_t rcv_errors = 0;
  std::uint32_t xmit_discards = 0;
  std::uint32_t link_integrity = 0;
  std::uint32_t buffer_overrun = 0;
  std::uint64_t xmit_wait = 0;  // ticks the port had data and no credits (congestion)
};

// Why the simulator discarded an SMP. Every discard is counted under one.
enum class DropReason : std::uint8_t {
  kMalformed,        // bytes from the SM did not decode as an SMP
  kRandomLoss,       // drop_probability struck on a link
  kDrBadPath,        // DR: bad hop pointer, port number 0 or beyond the node's ports
  kDrThroughCa,      // DR: path continues through a CA (only switches forward)
  kUnconnectedPort,  // sent out of a port with no cable
  kLinkDown,         // sent out of a port whose link is not up (cut, disabled, peer off)
  kPortNotActive,    // LID-routed through a non-ACTIVE port (lid_routed_needs_active)
  kBadLid,           // LID-routed to LID 0, or a LID outside the mode's space
  kLftBeyondTop,     // switch: DLID above its LinearFDBTop
  kLftUnset,         // switch: LFT entry is 255 or was never written
  kLftBadPort,       // switch: LFT entry names a port the switch does not have
  kNoLidMatch,       // reached a node that does not own the DLID
  kHopLimit,         // LID-routed packet exceeded lid_routed_hop_limit (a loop)
  kSmaQueueFull,     // latency model: SMA queue full
  kNoSm,             // a response or trap reached a port where no SM listens
  kUnexpected,       // an SMA received a response or a trap
  kSilentNode,       // reached the SMA of a node made silent by fault injection
  kNoAlternative,    // failover: the LFT port is down and the LID's group has no live port
  kVendorAttribute,  // a vendor-specific SMP at a node of another vendor (SimOptions::vendor_id)
  kCount,
};
inline constexpr std::size_t kNumDropReasons = static_cast<std::size_t>(DropReason::kCount);
const char* drop_reason_name(DropReason r);

// What check_failover_forwarding() found. Units are (switch, LID) pairs:
// a switch whose forwarding of a LID differs from its LFT now (its LFT port
// is down or was named in a notification) is "changed".
struct FailoverCheck {
  std::uint64_t lids = 0;     // CA/router LIDs some switch forwards differently now
  std::uint64_t changed = 0;  // changed (switch, LID) pairs
  std::uint32_t switches_changed = 0;
  std::uint64_t delivered = 0;  // changed pairs from which the LID is delivered
  std::uint64_t dead_ends = 0;  // changed pairs from which it is dropped
  std::uint64_t loops = 0;      // changed pairs from which it circles
  // Source switches (with live CA/router ports) whose traffic to the LID now
  // reaches a dead end or a loop although a live path to the LID exists, and
  // those with no live path at all (cut off: not the failover's to save).
  std::uint64_t unreachable_sources = 0;
  std::uint64_t cut_off_sources = 0;
  std::string first_problem;  // the first unreachable source or loop, described
};

struct SimStats {
  std::array<std::uint64_t, kNumDropReasons> drops{};
  std::uint64_t sent_by_sm = 0;       // MADs handed to send()
  std::uint64_t smps_handled = 0;     // requests processed by SMAs (Get, Set, TrapRepress)
  std::uint64_t delivered_to_sm = 0;  // MADs queued for receive()
  std::uint64_t link_traversals = 0;  // SMP crossings of a link
  std::uint64_t traps_sent = 0;       // trap transmissions, repeats included
  std::uint64_t traps_repressed = 0;  // TrapRepress that matched an outstanding trap
  std::uint64_t link_state_changes = 0;
  // Fast failover: link-down detections by switches with failover enabled,
  // packets forwarded on a group port instead of their dead LFT port, fault
  // notifications sent (each one link crossing) and received.
  std::uint64_t failover_detections = 0;
  std::uint64_t failover_forwards = 0;
  std::uint64_t notifications_sent = 0;
  std::uint64_t notifications_received = 0;
  // Transport time of the latest detection or notification that changed
  // some switch's forwarding (data-plane recovery ends there).
  std::chrono::nanoseconds failover_last_change{0};
  // GMPs (SA queries, answers, Reports) between simulated CAs and the
  // SM's port: delivered to an inbox or a server, and lost on the way (or
  // at a port where nothing serves their class).
  std::uint64_t gmp_delivered = 0;
  std::uint64_t gmp_lost = 0;

  std::uint64_t drops_of(DropReason r) const { return drops[static_cast<std::size_t>(r)]; }
  std::uint64_t drops_total() const {
    std::uint64_t n = 0;
    for (std::uint64_t d : drops) n += d;
    return n;
  }
};

}  // namespace subnetd::discovery::sim

#pragma once
// SimCore: the state and packet machinery of the simulated fabric, without
// locking. SimFabric (sim_fabric.hpp) owns one and serialises every call to
// it with its mutex; nothing else should use this class.
//
// State layout (compact for 100k+ nodes): the physical wiring is the
// routing::Topology given at construction, never mutated afterwards. Dynamic
// state lives in flat vectors parallel to it: PortSim per topology port slot
// (same index, Topology::port_index), SwitchSim per switch_index, a powered
// flag per node. Tables that SMs may or may not write (LFT, SL-to-VL,
// VL arbitration) are allocated per node on first write only.
//
// Packets in flight are decoded mad::Smp plus LRH addressing, kept in a pool
// and moved by an event queue ordered by (time, sequence). The zero-latency
// mode is the same machinery with every delay zero. The clock is virtual:
// it moves only to the time of the event being processed, or forward by a
// receive() timeout.
//
// Invariants: a port's logical state is DOWN iff its link is not physically
// up; both ends of a link are DOWN together or at least INIT together; switch
// port 0 is always ACTIVE while its switch is powered.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "discovery/mad/pma.hpp"
#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_types.hpp"
#include "discovery/transport.hpp"
#include "routing/lft.hpp"
#include "routing/lid_space.hpp"
#include "routing/port_mask.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery::sim {

// IBA PortPhysicalState values the simulator reports.
inline constexpr std::uint8_t kPhysPolling = 2;
inline constexpr std::uint8_t kPhysDisabled = 3;
inline constexpr std::uint8_t kPhysLinkUp = 5;

// What a test or an operator can see of one port.
// P_Key table entries of every simulated port (NodeInfo:PartitionCap and
// SwitchInfo:PartitionEnforcementCap), as ibsim's CAs have.
inline constexpr std::uint16_t kPartitionCap = 64;
// Multicast forwarding table entries of every simulated switch
// (SwitchInfo:MulticastFDBCap: MLIDs 0xC000..0xC3FF), as ibsim's switches.
// They honour SwitchInfo:MulticastFDBTop as IBA 1.3 switches do: no MLID
// above it is forwarded (0xBFFF, none, after a reset).
inline constexpr std::uint16_t kMulticastFdbCap = 1024;

struct PortView {
  routing::PortState state = routing::PortState::kDown;
  std::uint8_t phys_state = kPhysPolling;
  Lid lid;
  std::uint8_t lmc = 0;
  Lid master_sm_lid;
  // The P_Key table, up to its last non-zero entry; PartitionEnforcement
  // Inbound and Outbound both set.
  std::vector<std::uint16_t> pkeys;
  bool pkey_enforced = false;
  std::uint32_t client_reregisters = 0;  // PortInfo Sets with ClientReregister (CA ports)
  std::uint8_t operational_vls = 1;      // PortInfo:OperationalVLs code the port runs
};

class SimCore {
 public:
  using Clock = std::chrono::nanoseconds;

  // `topo` must be valid (Topology::validate) and `sm` a CA port in it.
  SimCore(routing::Topology topo, const SimOptions& opts, PortRef sm);

  // ---- the SM side
  // Injects a MAD at the SM's port at the current time.
  void send_from_sm(const Mad& mad);
  // Processes events due up to `deadline`. With `stop_at_delivery` it stops
  // as soon as the inbox holds something (the clock then reads that
  // delivery's time); otherwise it runs every event due.
  void run_until(Clock deadline, bool stop_at_delivery);
  void advance_to(Clock t) {
    if (t > clock_) clock_ = t;
  }
  // First in, first out, without a heap allocation per MAD (a std::deque of
  // 264-byte MADs allocates one node each).
  class MadQueue {
   public:
    bool empty() const { return head_ == items_.size(); }
    std::size_t size() const { return items_.size() - head_; }
    const Mad& front() const { return items_[head_]; }
    void push_back(const Mad& m) { items_.push_back(m); }
    void pop_front() {
      if (++head_ == items_.size()) {
        items_.clear();
        head_ = 0;
      }
    }

   private:
    std::vector<Mad> items_;
    std::size_t head_ = 0;
  };
  MadQueue& inbox() { return inbox_; }
  Clock now() const { return clock_; }

  // ---- faults (all take effect at the current time)
  void set_link_failed(PortRef end, bool failed);
  void set_powered(NodeId node, bool powered);
  void set_drop_probability(double p) { drop_probability_ = p; }
  // A silent node's SMA drops every SMP that reaches it (a hung management
  // agent); its links stay up and switches keep forwarding.
  void set_silent(NodeId node, bool silent) { silent_[node.value] = silent ? 1 : 0; }
  // The SMA of `from` (a CA port, or a switch's port 0) sends `notice` to
  // its master SM once, LID-routed, as its own (IssuerLID: its LID), with
  // TID `tid` (0: a new one); the SM represses it, and it is not resent.
  // The TID sent, or nothing when the port has no LID or no master SM.
  std::optional<std::uint64_t> send_trap(PortRef from, mad::Notice notice, std::uint64_t tid);
  // Adds to a port's counters (sim_pma.cpp); `at` must be a physical port.
  void inject_port_errors(PortRef at, const PortErrors& e);
  // What a PortCounters / PortCountersExtended Get of the port answers now.
  mad::pma::PortCounters port_counters(PortRef at);
  mad::pma::PortCountersExtended port_counters_ext(PortRef at);

  // ---- peer SMs (sim_peer_sm.cpp; SimFabric::set_peer_sm). The caller
  // checked that `at` is a CA port other than the SM's.
  void set_peer_sm(PortRef at, const PeerSmOptions& o);
  void set_peer_sm_alive(PortRef at, bool alive);
  std::optional<PeerSmView> peer_sm(PortRef at) const;
  // The peer at `at` sends an SMInfo Set (`control` the modifier, its own
  // SMInfo the data) LID-routed to the SM's port; nothing if it is dead.
  void peer_sm_send(PortRef at, std::uint32_t control);
  // PortInfo:CapabilityMask.IsSM of a CA port: the SM's, or a live peer's.
  bool holds_is_sm(NodeId node, PortNum port) const;

  // ---- inspection
  const routing::Topology& topology() const { return topo_; }
  const SimStats& stats() const { return stats_; }
  PortView port_view(PortRef ref) const;
  // The LFT entry a switch holds for `lid` (255 when none).
  std::uint8_t lft_entry(NodeId sw, std::uint32_t lid) const;
  // The ports a switch's MFT holds for `mlid` (0xC000..), port 0 included.
  routing::PortMask mft_entry(NodeId sw, std::uint32_t mlid) const;
  // What a Get of SLtoVLMappingTable / VLArbitrationTable with `attr_mod`
  // answers at `node` (as if it entered by `in`), or the status.
  Result<mad::SlToVlMappingTable> sl2vl(NodeId node, PortNum in, std::uint32_t attr_mod);
  Result<mad::VlArbitrationTable> vlarb(NodeId node, PortNum in, std::uint32_t attr_mod);
  // Writes one entry as an SMP Set from someone else would; the caller
  // checked that `sw` is a switch and lid < lft_cap().
  void set_lft_entry(NodeId sw, std::uint32_t lid, PortNum port);
  std::uint32_t lft_cap() const { return lft_cap_; }
  std::uint32_t linear_fdb_top(NodeId sw) const;
  bool port_state_change(NodeId sw) const;
  bool powered(NodeId n) const { return powered_[n.value] != 0; }
  bool link_failed(PortRef end) const { return ports_[index(end)].failed; }
  PortRef sm_port() const { return sm_; }
  std::size_t pending_events() const { return events_.size() + (now_.size() - now_head_); }
  std::size_t lft_bytes() const;

  // ---- switch-local fast failover (sim_failover.cpp)
  // Arms (or, with !enabled, disarms) a switch's failover tables; clears the
  // state notifications left (what an SM does once it has repaired the
  // LFTs). The caller checked that `sw` is a switch.
  void set_failover(NodeId sw, FailoverTables tables);
  void clear_failover_state(NodeId sw);
  // The port a LID-routed packet for `lid` leaves `sw` by now: the LFT
  // port, or with failover a live port of the LID's group; routing::kDropPort
  // when it would be dropped (unset, no live port left), 0 when `sw` owns it.
  std::uint8_t effective_port(NodeId sw, std::uint32_t lid) const;
  // Where a LID-routed GMP (QP1, a data VL) sent from endport `from` to
  // `dlid` ends up now: the endport owning `dlid` (a CA port, or a
  // switch's port 0), or nullopt when it is lost on the way (a link not
  // ACTIVE at both ends, a switch that forwards nowhere, a loop). The
  // switches forward as for SMPs, failover included; instantly (GMPs are
  // not on the event queue).
  std::optional<PortRef> walk_gmp(PortRef from, std::uint32_t dlid) const;
  // The effective forwarding state after faults, checked where it differs
  // from the LFTs (sim_failover.cpp).
  FailoverCheck check_failover_forwarding() const;
  // A failed link back up and ACTIVE at once (a test/benchmark shortcut for
  // "an SM re-activated it"); no trap.
  void restore_link(PortRef end);

 private:
  // Dynamic state of one port slot. LID-related fields are meaningful on end
  // ports only (CA ports, switch port 0).
  struct PortSim {
    std::uint64_t m_key = 0;
    std::uint64_t gid_prefix = 0xfe80000000000000ULL;
    std::uint32_t lid = 0;
    std::uint32_t master_sm_lid = 0;
    std::uint16_t m_key_lease_period = 0;
    std::uint8_t lmc = 0;
    routing::PortState state = routing::PortState::kDown;
    std::uint8_t neighbor_mtu = 5;  // 4096
    std::uint8_t operational_vls = 1;
    std::uint8_t vl_high_limit = 0;
    std::uint8_t hoq_life = 0;
    std::uint8_t vl_stall_count = 0;
    std::uint8_t subnet_timeout = 0;
    std::uint8_t master_sm_sl = 0;
    std::uint8_t m_key_protect_bits = 0;
    // 16 until an ExtPortInfo Set puts the end port in a 17/24-bit mode
    // (discovery/README.md, "Extended LIDs").
    std::uint8_t lid_bits = 16;
    bool disabled = false;  // PortPhysicalState set to Disabled by an SM
    bool failed = false;    // link cut by fault injection (set on both ends)
    // PortInfo:PartitionEnforcementInbound/Outbound, as an SM set them.
    bool pkey_enforce_in = false;
    bool pkey_enforce_out = false;
    std::uint32_t client_reregisters = 0;  // PortInfo Sets with ClientReregister
  };

  struct SwitchSim {
    std::uint32_t linear_fdb_top = 0;
    // IBA 1.3: MLIDs above it have no valid MFT entry; 0xBFFF (none) after
    // a reset.
    std::uint16_t multicast_fdb_top = 0xBFFF;
    std::uint8_t life_time_value = 0;
    bool port_state_change = false;
    // The one outstanding trap 128 (real SMAs keep a single pending notice
    // per trap type): repeated until repressed or sent trap_max_sends times.
    bool trap_pending = false;
    std::uint16_t trap_sends = 0;
    std::uint64_t trap_tid = 0;
  };

  struct Packet {
    mad::Smp smp;
    std::uint32_t lrh_dlid = mad::kPermissiveLid;  // valid while lid_routed
    std::uint32_t lrh_slid = mad::kPermissiveLid;
    std::uint32_t lr_hops = 0;  // links crossed in the current LID-routed part
    bool lid_routed = false;
    // link_epoch_ when the packet went onto its current link: unchanged at
    // arrival means the link is still up (no second check of both ends).
    std::uint64_t link_epoch = 0;
  };

  // kDetect: a switch notices that its port went down (failover);
  // kNotify: a fault notification reaches a switch (`packet` names the
  // destination switch's node).
  enum class EventKind : std::uint8_t { kArrive, kSmaDone, kTrapTimer, kDetect, kNotify };
  struct Event {
    Clock t;
    std::uint64_t seq;
    std::uint32_t packet;  // pool slot; for kTrapTimer the trap TID's low bits
    std::uint32_t node;
    PortNum port;
    EventKind kind;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  // ---- helpers over the wiring
  std::uint32_t index(PortRef r) const { return topo_.port_index(r.node, r.port); }
  std::uint32_t index(NodeId n, PortNum p) const { return topo_.port_index(n, p); }
  bool is_switch(NodeId n) const { return topo_.node(n).type == routing::NodeType::kSwitch; }
  SwitchSim& sw(NodeId n) { return switches_[topo_.node(n).switch_index.value]; }
  const SwitchSim& sw(NodeId n) const { return switches_[topo_.node(n).switch_index.value]; }
  bool link_physically_up(NodeId n, PortNum p) const;
  std::uint8_t phys_state(NodeId n, PortNum p) const;
  // The end port a packet for this node's SMA is addressed through: port 0
  // of a switch, the given port of a CA.
  PortNum lid_port(NodeId n, PortNum in) const { return is_switch(n) ? 0 : in; }
  bool owns_lid(NodeId n, PortNum p, std::uint32_t dlid) const;
  std::uint32_t max_lid() const { return space_.max_unicast().value; }

  // ---- packets
  std::uint32_t alloc_packet();
  void free_packet(std::uint32_t pk) { free_.push_back(pk); }
  void drop(std::uint32_t pk, DropReason why);
  void schedule(Clock t, EventKind kind, std::uint32_t pk, NodeId node, PortNum port);

  // ---- forwarding (sim_core.cpp)
  void transmit(std::uint32_t pk, NodeId node, PortNum out, Clock extra = Clock{0});
  void on_arrive(std::uint32_t pk, NodeId node, PortNum in);
  void lr_start(std::uint32_t pk, NodeId node, PortNum in, std::uint32_t dlid);
  void lr_at_switch(std::uint32_t pk, NodeId node, PortNum in);
  void lr_from_ca(std::uint32_t pk, NodeId node, PortNum port);
  void lr_delivered(std::uint32_t pk, NodeId node, PortNum in);
  void dr_begin(std::uint32_t pk, NodeId node, PortNum in);
  void dr_outbound(std::uint32_t pk, NodeId node, PortNum in);
  void dr_return(std::uint32_t pk, NodeId node, PortNum in);
  void to_sma(std::uint32_t pk, NodeId node, PortNum in);
  void to_sm(std::uint32_t pk, NodeId node, PortNum in, bool lid_routed);
  // Sends an SMA's (or peer SM's) answer back the way its request came.
  void respond(std::uint32_t pk, NodeId node, PortNum in);
  void sma_done(std::uint32_t pk, NodeId node, PortNum in);

  // ---- link state machine and traps (sim_core.cpp)
  void reevaluate_link(NodeId n, PortNum p);
  void bounce_link(NodeId n, PortNum p);
  void raise_trap128(NodeId sw);
  void send_trap128(NodeId sw);
  // A packet holding a Trap(Notice) SMP with `tid`, for lr_start.
  std::uint32_t trap_packet(std::uint64_t tid, const mad::Notice& notice);
  void on_trap_timer(NodeId sw, std::uint32_t tid_low);
  void reset_node(NodeId n);

  // ---- fast failover (sim_failover.cpp)
  // A switch's failover tables and what faults left in them.
  struct FailoverSim {
    FailoverTables tables;
    // Ports whose link went down and that the switch has not noticed yet
    // (failover_detect): it still forwards into them.
    PortMask undetected;
    // Per destination switch (node value): ports notifications removed.
    std::unordered_map<std::uint32_t, PortMask> removed;
    // Destination switches this switch has sent notifications for.
    std::unordered_set<std::uint32_t> notified;
  };
  const FailoverSim* failover(NodeId sw) const;
  // Forwarding as the switch sees it (undetected failures count as live).
  bool port_live(NodeId sw, const FailoverSim& f, PortNum p) const;
  std::uint8_t choose_port(NodeId sw, std::uint32_t lid, std::uint8_t lft_port) const;
  // The switch a LID is delivered by (its own switch, or the switch a CA
  // port is cabled to); kNoNode for a LID no port holds.
  std::uint32_t home_of(std::uint32_t lid) const;
  const std::vector<std::uint32_t>& lids_homed_at(std::uint32_t home) const;
  void rebuild_homes() const;
  void on_link_down(NodeId sw, PortNum p);
  void on_detect(NodeId sw, PortNum p);
  void on_notify(NodeId sw, PortNum in, std::uint32_t dest);
  // True when some LID homed at `dest` has no way out of `sw`.
  bool stranded(NodeId sw, std::uint32_t dest) const;
  void send_notifications(NodeId sw, std::uint32_t dest, PortNum except);

  // ---- the PMA (sim_pma.cpp)
  // A port's counters since power-up, 64 bits each; PortCounters answers
  // them minus `base` (what a clear left), saturated at each field's width.
  struct PmaPort {
    mad::pma::PortCounters base;
    std::uint64_t symbol_errors = 0, link_recovers = 0, link_downed = 0, rcv_errors = 0,
                  xmit_discards = 0, link_integrity = 0, buffer_overrun = 0, xmit_wait = 0;
    double xmit_bytes = 0, rcv_bytes = 0;  // traffic accrued up to `updated`
    Clock updated{-1};
  };
  PmaPort& pma_port(PortRef at);
  void pma_accrue(PortRef at);
  double pma_xmit_rate(PortRef at);
  void pma_request(const Mad& mad);
  Clock traffic_now() const;

  // ---- the SMA (sim_sma.cpp)
  // ---- peer SMs (sim_peer_sm.cpp)
  struct PeerSmSim {
    PortRef at;
    PeerSmView v;
    bool handover_sent = false;  // a HANDOVER it sent, not yet acknowledged
  };
  PeerSmSim* peer_at(NodeId node, PortNum port);
  mad::SmInfo peer_info(const PeerSmSim& p, std::uint8_t state, bool show_key) const;
  void send_peer_set(PeerSmSim& p, std::uint32_t control, std::uint8_t as);
  // An SMInfo request reached the peer's port / anything else did (an
  // answer to its Set, a trap).
  void peer_request(std::uint32_t pk, PeerSmSim& p, NodeId node, PortNum in);
  void peer_received(std::uint32_t pk, PeerSmSim& p);

  enum class SmaOutcome : std::uint8_t { kRespond, kConsumed, kUnexpected, kForeignVendor };
  SmaOutcome sma_handle(Packet& p, NodeId node, PortNum in);
  std::uint16_t sma_node_info(mad::Smp& s, NodeId node, PortNum in);
  std::uint16_t sma_switch_info(mad::Smp& s, NodeId node);
  std::uint16_t sma_port_info(mad::Smp& s, NodeId node, PortNum in);
  std::uint16_t sma_lft(mad::Smp& s, NodeId node);
  std::uint16_t sma_sl2vl(mad::Smp& s, NodeId node, PortNum in);
  std::uint16_t sma_pkeys(mad::Smp& s, NodeId node, PortNum in);
  std::uint16_t sma_mft(mad::Smp& s, NodeId node);
  std::uint16_t sma_vlarb(mad::Smp& s, NodeId node, PortNum in);
  std::uint16_t sma_ext_port_info(mad::Smp& s, NodeId node, PortNum in);
  std::uint16_t sma_ext_switch_info(mad::Smp& s, NodeId node);
  std::uint16_t sma_failover(mad::Smp& s, NodeId node);  // sim_failover.cpp
  FailoverSim& failover_slot(NodeId sw);
  mad::PortInfo build_port_info(NodeId node, PortNum port, PortNum in) const;
  std::uint16_t apply_port_state(NodeId node, PortNum port, std::uint8_t state, std::uint8_t phys,
                                 bool dry_run);

  routing::Topology topo_;
  SimOptions opts_;
  routing::LidSpace space_;
  PortRef sm_;
  std::uint32_t lft_cap_;

  std::vector<PortSim> ports_;         // parallel to topo_.ports()
  std::vector<SwitchSim> switches_;    // by switch_index
  std::vector<std::uint8_t> powered_;  // by node
  std::vector<std::uint8_t> silent_;   // by node: SMA does not answer (fault injection)
  std::unordered_map<std::uint32_t, PeerSmSim> peers_;  // by port index
  // Allocated on first write (empty otherwise).
  std::vector<std::vector<std::uint8_t>> lfts_;   // by switch_index, LID-indexed
  std::vector<std::vector<std::uint8_t>> sl2vl_;  // by node: 8 bytes per (output) port
  // Switch tables set for one (input, output) pair: node << 16 | in << 8 | out.
  std::unordered_map<std::uint64_t, std::array<std::uint8_t, 8>> sl2vl_pairs_;
  std::vector<std::vector<std::uint8_t>> vlarb_;  // by node: blocks 1, 3 x 64 bytes a port
  // By node: kPartitionCap entries per port; until written, every port
  // holds 0xFFFF at index 0 and nothing else (as ibsim's ports do).
  std::vector<std::vector<std::uint16_t>> pkeys_;
  // By switch_index: kMulticastFdbCap entries x positions (16 ports each),
  // allocated on first write.
  std::vector<std::vector<std::uint16_t>> mfts_;
  std::vector<Clock> sma_busy_until_;  // by node; latency model only
  std::vector<PmaPort> pma_;           // by port index, allocated on first use
  // By switch_index: LFT entries per port, counted on first use after the
  // LFT last changed (empty = to count).
  std::vector<std::vector<std::uint32_t>> routes_out_;
  Clock traffic_epoch_{0};                              // traffic_clock() at construction
  std::vector<std::unique_ptr<FailoverSim>> failover_;  // by switch_index, null until armed
  // LID -> home switch (node value), and its inverse; rebuilt lazily after
  // a LID changes on any port.
  mutable std::vector<std::uint32_t> home_;
  mutable std::vector<std::vector<std::uint32_t>> homed_;  // by node
  mutable bool homes_dirty_ = true;

  std::deque<Packet> pool_;  // a deque: handlers keep references across allocations
  std::vector<std::uint32_t> free_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  // Events due at the current time (zero delay: every hop without a latency
  // model) skip the heap: they are in sequence order already, and the clock
  // cannot move on while any is left (run_until takes them before any later
  // event).
  std::vector<Event> now_;
  std::size_t now_head_ = 0;
  std::uint64_t next_seq_ = 0;
  // Bumped by every change to what link_physically_up reads (power, failed
  // and disabled ports); see Packet::link_epoch.
  std::uint64_t link_epoch_ = 0;
  std::uint64_t next_trap_tid_ = 0x5100000000000001ULL;
  Clock clock_{0};
  MadQueue inbox_;

  double drop_probability_;
  std::mt19937_64 rng_;
  SimStats stats_;
};

}  // namespace subnetd::discovery::sim

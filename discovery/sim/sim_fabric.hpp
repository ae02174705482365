#pragma once
// SimFabric: the embedded simulated fabric, a discovery::Transport.
//
// Built from a routing::Topology (the physical truth: nodes, ports, cables),
// it answers SMPs at the SMP level as IBA switches and HCAs do: every node
// runs an SMA (NodeInfo, NodeDescription, SwitchInfo, PortInfo, LFT blocks,
// SL-to-VL, VL arbitration, TrapRepress, and the vendor extended-LID
// attributes in 17/24-bit modes); directed-route SMPs follow the hop-pointer
// rules of IBA 14.2.2; LID-routed SMPs are forwarded by each switch through
// the LFT the SM programmed into *it*, so a wrong table shows up as a lost
// SMP and a drop counter, not as a passing test. Switches send trap 128 when
// a port changes state and repeat it until repressed. See
// discovery/README.md, "Simulator", for the details and the choices made.
//
// The SM attaches at one CA port (SimOptions). send() injects a MAD there;
// receive() hands out what arrives there: responses, traps, SMInfo requests.
//
// Time is virtual. Without a latency model a response is ready as soon as
// its request is sent; receive() with nothing ready moves the clock forward
// by its timeout and returns nullopt at once, so an SM's timeouts and trap
// repeats run without sleeping. With SimOptions::latency, packets take
// time per hop and per SMA, and receive() advances the clock to the next
// delivery, so now() estimates how long a sweep takes on a real fabric.
//
// Threads: send/receive/now/local_port are for the SM's thread (the
// Transport contract). The fault-injection and inspection calls are
// thread-safe and may come from any thread (a gRPC handler, a test); one
// mutex serialises everything. event_fd() is an eventfd that is readable
// while a MAD waits to be received; an event loop drains it by calling
// receive(0) until that returns nullopt. With a latency model, packets still
// on the wire become visible only as receive() moves the clock forward.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "discovery/sim/sim_core.hpp"
#include "discovery/sim/sim_types.hpp"
#include "discovery/transport.hpp"
#include "routing/failover_plan.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery::sim {

class SimFabric final : public Transport {
 public:
  // Fails on an invalid topology, bad options or an SM attachment point that
  // is not a CA port of the topology.
  static Result<std::unique_ptr<SimFabric>> create(routing::Topology topology,
                                                   const SimOptions& options);
  ~SimFabric() override;
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  // ---- Transport (the SM's thread)
  Result<void> send(const Mad& mad) override;
  Result<std::optional<Mad>> receive(std::chrono::microseconds timeout) override;
  std::chrono::nanoseconds now() const override;
  LocalPort local_port() const override;
  int event_fd() const override { return event_fd_; }
  bool virtual_time() const override { return true; }
  void watch_event_fd(bool watched) override;
  std::string name() const override { return "sim"; }

  // ---- GMPs: the SM's GMP servers and simulated CAs as their clients
  // (thread-safe). A GMP crosses the fabric at once, forwarded as the
  // switches forward now (SimCore::walk_gmp): no latency model, but a
  // broken path or a wrong table loses it. A request reaching the SM's
  // port is answered by the server of its class on the sender's thread,
  // without the fabric's lock (a server must not call back into this
  // fabric), and the answer travels back the same way.
  Result<void> serve_gmp_class(std::uint8_t mgmt_class, GmpServer server) override;
  Result<void> send_gmp(std::uint32_t dlid, std::uint32_t qpn,
                        std::span<const std::uint8_t> mad) override;
  // A GMP as a simulated CA port receives it: the sender's LID, the QP it
  // was sent to, the 256 bytes (each segment of a multi-packet answer is
  // one delivery).
  struct GmpDelivery {
    std::uint32_t slid = 0;
    std::uint32_t qpn = 1;
    std::array<std::uint8_t, kMadSize> mad{};
  };
  // Sends a GMP from CA port `from` (its LID the source) to `dlid`, QP1.
  // Errors: `from` is not a CA port of the fabric, or `mad` is not 256
  // bytes. A lost GMP is not an error (stats().gmp_lost counts it).
  Result<void> gmp_send(PortRef from, std::uint32_t dlid, std::span<const std::uint8_t> mad);
  // What arrived at CA port `at` since the last call, oldest first.
  std::vector<GmpDelivery> gmp_take(PortRef at);
  // The next GMP to arrive at `at`: waits for it (up to `limit` of real
  // time, for a Report that another thread's work sends), nullopt when none came.
  std::optional<GmpDelivery> gmp_wait(PortRef at, std::chrono::milliseconds limit);

  // ---- fault injection (thread-safe; effective at the current transport time)
  // Cuts / restores the cable at `end` (either end names the link): both
  // ports go DOWN / come back in INIT, and switches at either end send trap
  // 128. Errors: unknown node, port out of range, port without a cable.
  Result<void> link_down(PortRef end);
  Result<void> link_down(std::string_view node_description, PortNum port);
  Result<void> link_up(PortRef end);
  Result<void> link_up(std::string_view node_description, PortNum port);
  // Powers a switch off (all its links go down, its state is lost) or on
  // again (as after a power cycle: no LIDs, empty LFT, links in INIT).
  Result<void> switch_down(NodeId node);
  Result<void> switch_down(std::string_view node_description);
  Result<void> switch_up(NodeId node);
  Result<void> switch_up(std::string_view node_description);
  Result<void> set_drop_probability(double p);
  // Makes a node's SMA ignore every SMP addressed to it (a neighbour that
  // never answers), or answer again. Its links stay up and, for a switch,
  // forwarding continues. Error: unknown node.
  Result<void> set_node_silent(NodeId node, bool silent);
  // Changes one entry of a switch's LFT behind the SM's back (another SM,
  // a management tool, a bit flip): no trap, no state change. Errors:
  // unknown node, not a switch, LID beyond the switch's LFT capacity.
  Result<void> set_lft_entry(NodeId sw, Lid lid, PortNum port);
  // The SMA of `from` (a CA's port; a switch's sends as its port 0) sends a Trap of
  // `notice` to its master SM, once (SimCore::send_trap), with TID `tid`
  // (0: a new one; the same again: a resent copy). Returns the TID.
  // Errors: unknown node, port out of range, no LID or master SM yet.
  Result<std::uint64_t> send_trap(PortRef from, const mad::Notice& notice, std::uint64_t tid = 0);
  // Adds to a port's PMA counters (symbol errors, link downed, receive
  // errors, congestion as PortXmitWait ...): what a PortCounters Get then
  // answers. Errors: unknown node, port out of range.
  Result<void> inject_port_errors(PortRef at, const PortErrors& errors);
  // What a PortCounters Get of the port answers now (tests).
  Result<mad::pma::PortCounters> port_counters(PortRef at);

  // ---- peer SMs (thread-safe; sim_types.hpp PeerSmOptions, issue 17)
  // Places a peer SM at CA port `at`, or changes its priority, state and
  // key (a restart with another config, a SIGHUP). Errors: not a CA port,
  // the SM's own port.
  Result<void> set_peer_sm(PortRef at, const PeerSmOptions& options);
  // Kills the peer (as kill -9: its SMInfo goes unanswered and IsSM clears)
  // or brings it back. Error: no peer SM at `at`.
  Result<void> set_peer_sm_alive(PortRef at, bool alive);
  // The peer sends the SM an SMInfo Set: `control` 1 HANDOVER, 2
  // ACKNOWLEDGE, 3 DISABLE, 4 STANDBY, 5 DISCOVER, its SMInfo as it is now.
  // Errors: no live peer SM at `at`, `control` out of range.
  Result<void> peer_sm_send(PortRef at, std::uint32_t control);
  // The peer as it is now. Error: no peer SM at `at`.
  Result<PeerSmView> peer_sm(PortRef at) const;

  // ---- switch-local fast failover (thread-safe; discovery/README.md)
  // Arms a switch's failover tables (replacing any), or disarms them with
  // `enabled` false; either clears its notification state. Errors: unknown
  // node, not a switch, a group naming a port the switch does not have, a
  // LID naming a group that does not exist, more than 255 groups.
  Result<void> set_failover(NodeId sw, FailoverTables tables);
  // Arms every switch with what `plan` gives it (the plan's switches are
  // matched to the fabric's by node GUID; `topo` is the topology the plan
  // was computed for), as an SM's SMPs would: a test and benchmark
  // shortcut. Error: a switch of the plan the fabric does not have.
  Result<void> arm_failover(const routing::Topology& topo, const routing::FailoverPlan& plan);
  // Forgets what fault notifications removed (an SM that repaired the LFTs).
  Result<void> clear_failover_state(NodeId sw);
  // The same on every switch.
  void clear_all_failover_state();
  // Checks the effective forwarding state where it differs from the LFTs
  // (after link or switch failures): every switch that forwards some
  // CA/router LID differently now is walked from, and where that walk fails
  // the sources whose traffic reaches it are found and sorted into
  // unreachable (a live path exists) and cut off. Every other switch
  // forwards by its LFT, so if the LFTs delivered every pair before, a
  // source is lost exactly when its path meets a failing changed switch.
  FailoverCheck check_failover_forwarding() const;
  // A failed link back up and straight to ACTIVE, with no trap, as if an SM
  // had re-activated it (tests and benchmarks that cut and restore links).
  Result<void> restore_link(PortRef end);
  // The port a packet for `lid` leaves `sw` by now, failover included:
  // 0 = `sw` owns the LID, routing::kDropPort = dropped there.
  Result<std::uint8_t> effective_port(NodeId sw, Lid lid) const;
  // Lets `d` of transport time pass (events due run: detections,
  // notifications, trap repeats), as a receive() that gets nothing would.
  void run_for(std::chrono::nanoseconds d);

  // ---- inspection (thread-safe)
  // The node with this node GUID (the topology's GUID index is built on
  // first use, so it is looked up under the fabric's lock).
  Result<NodeId> node_by_guid(Guid guid) const;
  SimStats stats() const;
  // The physical wiring as built (immutable; safe to read without locking).
  const routing::Topology& topology() const { return core_.topology(); }
  Result<PortView> port_view(PortRef ref) const;
  // The port a switch's own LFT holds for `lid` (255 = none / never written).
  Result<std::uint8_t> lft_entry(NodeId sw, Lid lid) const;
  // The ports a switch's own MFT holds for a multicast LID.
  Result<routing::PortMask> mft_entry(NodeId sw, Lid mlid) const;
  // What a node's SLtoVLMappingTable / VLArbitrationTable Get with
  // `attr_mod` answers (a CA's for the port `in`).
  Result<mad::SlToVlMappingTable> sl2vl(NodeId node, PortNum in, std::uint32_t attr_mod);
  Result<mad::VlArbitrationTable> vlarb(NodeId node, PortNum in, std::uint32_t attr_mod);
  // SwitchInfo:PortStateChange of a switch.
  Result<bool> port_state_change(NodeId sw) const;
  // Bytes held by all switches' LFT copies.
  std::size_t lft_bytes() const;

 private:
  SimFabric(routing::Topology topology, const SimOptions& options, PortRef sm, int event_fd);
  // Re-arms or drains the eventfd to match the inbox. Caller holds mu_.
  void sync_event_fd();
  Result<PortRef> check_link_end(PortRef end) const;
  Result<void> check_port(PortRef at) const;
  Error no_peer_sm(PortRef at) const;  // caller holds mu_
  Result<NodeId> check_switch(NodeId node) const;
  Result<NodeId> find_node(std::string_view description) const;

  // Delivers a GMP from `from` to `dlid` as `qpn` receives it: into a CA
  // port's inbox, or to a server when it reaches the SM's port (returned
  // for the caller to run without mu_). Caller holds mu_.
  std::shared_ptr<const GmpServer> route_gmp(PortRef from, std::uint32_t dlid, std::uint32_t qpn,
                                             std::span<const std::uint8_t> mad);

  mutable std::mutex mu_;
  SimCore core_;  // guarded by mu_ (its topology() is immutable and is not)
  // GMPs, guarded by mu_: the servers by class, the CA ports' inboxes (by
  // port index), the counters; gmp_arrived_ wakes gmp_wait().
  std::vector<std::pair<std::uint8_t, std::shared_ptr<const GmpServer>>> gmp_servers_;
  std::unordered_map<std::uint32_t, std::deque<GmpDelivery>> gmp_inbox_;
  std::uint64_t gmp_delivered_ = 0, gmp_lost_ = 0;
  std::condition_variable gmp_arrived_;
  int event_fd_;
  bool event_fd_armed_ = false;   // guarded by mu_
  bool event_fd_watched_ = true;  // guarded by mu_
};

}  // namespace subnetd::discovery::sim

// SimCore: construction, the event loop, SMP forwarding (directed-route and
// LID-routed), the link state machine and trap 128. The SMA's attribute
// handling is in sim_sma.cpp.
//
// Directed-route handling follows IBA vol. 1 14.2.2.1-14.2.2.4 (the rules
// C14-9 outbound and C14-13 returning; Linux drivers/infiniband/core/smi.c
// implements the same rules for end nodes):
//  - outbound (D=0) the sender increments the hop pointer and sends out
//    InitialPath[hop pointer]; each node records the port it arrived on in
//    ReturnPath[hop pointer]; at hop pointer == hop count the directed part
//    ends: with a permissive DrDLID the SMP is for this node, otherwise the
//    switch there LID-routes it on to DrDLID;
//  - a non-permissive DrSLID means the SM first LID-routes the SMP (hop
//    pointer 0) to the switch where the directed part starts;
//  - the responder sets D=1 and the SMP retraces ReturnPath, each sender
//    decrementing the hop pointer first; at hop pointer 1 the directed part
//    is done: to the SM with a permissive DrSLID, else LID-routed to DrSLID.

#include "discovery/sim/sim_core.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "routing/mcast.hpp"

namespace subnetd::discovery::sim {

using routing::NodeType;
using routing::PortState;

const char* drop_reason_name(DropReason r) {
  switch (r) {
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kRandomLoss:
      return "random_loss";
    case DropReason::kDrBadPath:
      return "dr_bad_path";
    case DropReason::kDrThroughCa:
      return "dr_through_ca";
    case DropReason::kUnconnectedPort:
      return "unconnected_port";
    case DropReason::kLinkDown:
      return "link_down";
    case DropReason::kPortNotActive:
      return "port_not_active";
    case DropReason::kBadLid:
      return "bad_lid";
    case DropReason::kLftBeyondTop:
      return "lft_beyond_top";
    case DropReason::kLftUnset:
      return "lft_unset";
    case DropReason::kLftBadPort:
      return "lft_bad_port";
    case DropReason::kNoLidMatch:
      return "no_lid_match";
    case DropReason::kHopLimit:
      return "hop_limit";
    case DropReason::kSmaQueueFull:
      return "sma_queue_full";
    case DropReason::kNoSm:
      return "no_sm";
    case DropReason::kUnexpected:
      return "unexpected";
    case DropReason::kSilentNode:
      return "silent_node";
    case DropReason::kNoAlternative:
      return "no_alternative";
    case DropReason::kVendorAttribute:
      return "vendor_attribute";
    case DropReason::kCount:
      break;
  }
  return "?";
}

namespace {

bool permissive(std::uint16_t lid) {
  return lid == mad::kPermissiveLid;
}

std::uint32_t default_lft_cap(const routing::LidSpace& space) {
  // IBA switches hold the whole unicast range: 0xC000 entries for 16 bits.
  return space.max_unicast().value + 1;
}

}  // namespace

SimCore::SimCore(routing::Topology topo, const SimOptions& opts, PortRef sm)
    : topo_(std::move(topo)),
      opts_(opts),
      space_{opts.lid_bits},
      sm_(sm),
      lft_cap_(std::min(opts.linear_fdb_cap != 0 ? opts.linear_fdb_cap : default_lft_cap(space_),
                        default_lft_cap(space_))),
      drop_probability_(opts.drop_probability),
      rng_(opts.seed) {
  const std::size_t nodes = topo_.num_nodes();
  ports_.resize(topo_.num_ports_total());
  switches_.resize(topo_.num_switches());
  powered_.assign(nodes, 1);
  silent_.assign(nodes, 0);
  lfts_.resize(topo_.num_switches());
  failover_.resize(topo_.num_switches());
  sl2vl_.resize(nodes);
  vlarb_.resize(nodes);
  pkeys_.resize(nodes);
  mfts_.resize(topo_.num_switches());
  routes_out_.resize(topo_.num_switches());
  traffic_epoch_ =
      opts_.traffic_clock
          ? opts_.traffic_clock()
          : std::chrono::duration_cast<Clock>(std::chrono::steady_clock::now().time_since_epoch());
  if (opts_.latency) sma_busy_until_.assign(nodes, Clock{0});
  // Build the topology's lazy name and GUID indexes now: afterwards every
  // lookup only reads, so topology() may be shared across threads.
  (void)topo_.find_by_guid(Guid{});
  // Power-on state: every cabled link trains to INIT; nothing has a LID, so
  // no switch can send a trap yet.
  for (std::uint32_t i = 0; i < nodes; ++i) {
    const NodeId n{i};
    const routing::Node& node = topo_.node(n);
    if (node.type == NodeType::kSwitch) ports_[index(n, 0)].state = PortState::kActive;
    for (unsigned p = 1; p <= node.num_ports; ++p) {
      if (topo_.port(n, static_cast<PortNum>(p)).connected()) {
        ports_[index(n, static_cast<PortNum>(p))].state = PortState::kInit;
      }
    }
  }
}

// ------------------------------------------------------------------ helpers

bool SimCore::link_physically_up(NodeId n, PortNum p) const {
  if (p == 0) return powered(n);
  const routing::Port& tp = topo_.port(n, p);
  if (!tp.connected()) return false;
  const PortSim& a = ports_[index(n, p)];
  const PortSim& b = ports_[index(tp.remote_node, tp.remote_port)];
  return powered(n) && powered(tp.remote_node) && !a.failed && !b.failed && !a.disabled &&
         !b.disabled;
}

std::uint8_t SimCore::phys_state(NodeId n, PortNum p) const {
  if (p == 0) return kPhysLinkUp;  // switch port 0 has no physical link
  if (ports_[index(n, p)].disabled) return kPhysDisabled;
  return link_physically_up(n, p) ? kPhysLinkUp : kPhysPolling;
}

bool SimCore::owns_lid(NodeId n, PortNum p, std::uint32_t dlid) const {
  const PortSim& ps = ports_[index(n, p)];
  if (ps.lid == 0) return false;
  const std::uint32_t mask = (std::uint32_t{1} << ps.lmc) - 1;
  return (dlid & ~mask) == (ps.lid & ~mask);
}

PortView SimCore::port_view(PortRef ref) const {
  const PortSim& ps = ports_[index(ref)];
  PortView v;
  v.state = ps.state;
  v.phys_state = phys_state(ref.node, ref.port);
  if (!is_switch(ref.node) || ref.port == 0) {
    v.lid = Lid{ps.lid};
    v.lmc = ps.lmc;
    v.master_sm_lid = Lid{ps.master_sm_lid};
  }
  v.pkey_enforced = ps.pkey_enforce_in && ps.pkey_enforce_out;
  v.client_reregisters = ps.client_reregisters;
  v.operational_vls = ps.operational_vls;
  const std::vector<std::uint16_t>& t = pkeys_[ref.node.value];
  if (t.empty()) {
    v.pkeys = {0xFFFF};
  } else {
    const auto first =
        t.begin() + static_cast<std::ptrdiff_t>(std::size_t{ref.port} * kPartitionCap);
    v.pkeys.assign(first, first + kPartitionCap);
    while (!v.pkeys.empty() && v.pkeys.back() == 0) v.pkeys.pop_back();
  }
  return v;
}

routing::PortMask SimCore::mft_entry(NodeId n, std::uint32_t mlid) const {
  routing::PortMask out;
  if (!is_switch(n) || mlid < routing::kMlidBase) return out;
  if (mlid > sw(n).multicast_fdb_top) return out;
  const std::uint32_t index = mlid - routing::kMlidBase;
  const std::vector<std::uint16_t>& t = mfts_[topo_.node(n).switch_index.value];
  const std::uint32_t positions = (topo_.node(n).num_ports + 16U) / 16U;
  if (index >= kMulticastFdbCap || t.empty()) return out;
  for (std::uint32_t pos = 0; pos < positions; ++pos) {
    const std::uint16_t m = t[std::size_t{pos} * kMulticastFdbCap + index];
    for (unsigned b = 0; b < 16; ++b) {
      if ((m >> b) & 1U) out.set(static_cast<PortNum>(pos * 16 + b));
    }
  }
  return out;
}

std::uint8_t SimCore::lft_entry(NodeId n, std::uint32_t lid) const {
  const std::vector<std::uint8_t>& t = lfts_[topo_.node(n).switch_index.value];
  return lid < t.size() ? t[lid] : routing::kDropPort;
}

void SimCore::set_lft_entry(NodeId n, std::uint32_t lid, PortNum port) {
  std::vector<std::uint8_t>& t = lfts_[topo_.node(n).switch_index.value];
  if (lid >= t.size()) t.resize(std::size_t{lid} + 1, routing::kDropPort);
  t[lid] = port;
  routes_out_[topo_.node(n).switch_index.value].clear();
}

std::uint32_t SimCore::linear_fdb_top(NodeId n) const {
  return sw(n).linear_fdb_top;
}
bool SimCore::port_state_change(NodeId n) const {
  return sw(n).port_state_change;
}

std::size_t SimCore::lft_bytes() const {
  std::size_t b = 0;
  for (const auto& t : lfts_) b += t.capacity();
  return b;
}

// ------------------------------------------------------------------ packets

std::uint32_t SimCore::alloc_packet() {
  if (!free_.empty()) {
    std::uint32_t pk = free_.back();
    free_.pop_back();
    pool_[pk] = Packet{};
    return pk;
  }
  pool_.emplace_back();
  return static_cast<std::uint32_t>(pool_.size() - 1);
}

void SimCore::drop(std::uint32_t pk, DropReason why) {
  ++stats_.drops[static_cast<std::size_t>(why)];
  free_packet(pk);
}

void SimCore::schedule(Clock t, EventKind kind, std::uint32_t pk, NodeId node, PortNum port) {
  const Event ev{t, next_seq_++, pk, node.value, port, kind};
  if (t == clock_) {
    now_.push_back(ev);
  } else {
    events_.push(ev);
  }
}

void SimCore::run_until(Clock deadline, bool stop_at_delivery) {
  for (;;) {
    if (stop_at_delivery && !inbox_.empty()) break;
    // The earlier of the two queues' heads, by (time, sequence).
    const bool have_now = now_head_ < now_.size();
    Event ev;
    if (have_now && (events_.empty() || !(now_[now_head_] > events_.top()))) {
      ev = now_[now_head_];
      if (ev.t > deadline) break;
      if (++now_head_ == now_.size()) {
        now_.clear();
        now_head_ = 0;
      }
    } else if (!events_.empty()) {
      ev = events_.top();
      if (ev.t > deadline) break;
      events_.pop();
    } else {
      break;
    }
    advance_to(ev.t);
    const NodeId node{ev.node};
    switch (ev.kind) {
      case EventKind::kArrive:
        on_arrive(ev.packet, node, ev.port);
        break;
      case EventKind::kSmaDone:
        sma_done(ev.packet, node, ev.port);
        break;
      case EventKind::kTrapTimer:
        on_trap_timer(node, ev.packet);
        break;
      case EventKind::kDetect:
        on_detect(node, ev.port);
        break;
      case EventKind::kNotify:
        on_notify(node, ev.port, ev.packet);
        break;
    }
  }
}

// ------------------------------------------------------------------ the SM's port

void SimCore::send_from_sm(const Mad& mad) {
  ++stats_.sent_by_sm;
  if (mad.data[1] == mad::pma::kMgmtClass) return pma_request(mad);
  auto decoded = mad::decode_smp(mad.data, mad::DecodeOptions{.allow_unknown_attribute = true});
  if (!decoded.ok()) {
    ++stats_.drops[static_cast<std::size_t>(DropReason::kMalformed)];
    return;
  }
  const std::uint32_t pk = alloc_packet();
  Packet& p = pool_[pk];
  p.smp = std::move(decoded).value();
  const mad::Smp& s = p.smp;
  if (!powered(sm_.node)) return drop(pk, DropReason::kLinkDown);
  if (!s.directed()) return lr_start(pk, sm_.node, sm_.port, mad.dlid);
  // The SM originates outbound directed-route SMPs only (there is no other
  // SM in the simulated subnet whose requests it could be answering).
  if (s.direction || s.hop_pointer != 0) return drop(pk, DropReason::kDrBadPath);
  if (!permissive(s.dr_slid)) return lr_start(pk, sm_.node, sm_.port, mad.dlid);
  dr_begin(pk, sm_.node, sm_.port);
}

void SimCore::to_sm(std::uint32_t pk, NodeId node, PortNum in, bool lid_routed) {
  if (node != sm_.node || in != sm_.port) {
    if (PeerSmSim* peer = peer_at(node, in)) return peer_received(pk, *peer);
    return drop(pk, DropReason::kNoSm);
  }
  const Packet& p = pool_[pk];
  Mad m;
  mad::encode_smp(p.smp, std::span<std::uint8_t, kMadSize>(m.data));
  if (lid_routed) {
    m.dlid = p.lrh_dlid;
    m.slid = p.lrh_slid;
  }
  inbox_.push_back(m);
  ++stats_.delivered_to_sm;
  free_packet(pk);
}

// ------------------------------------------------------------------ links

void SimCore::transmit(std::uint32_t pk, NodeId node, PortNum out, Clock extra) {
  const routing::Port& tp = topo_.port(node, out);
  if (!tp.connected()) return drop(pk, DropReason::kUnconnectedPort);
  if (!link_physically_up(node, out)) return drop(pk, DropReason::kLinkDown);
  Packet& p = pool_[pk];
  if (p.lid_routed) {
    if (++p.lr_hops > opts_.lid_routed_hop_limit) return drop(pk, DropReason::kHopLimit);
    if (opts_.lid_routed_needs_active &&
        (ports_[index(node, out)].state != PortState::kActive ||
         ports_[index(tp.remote_node, tp.remote_port)].state != PortState::kActive)) {
      return drop(pk, DropReason::kPortNotActive);
    }
  }
  if (drop_probability_ > 0.0 &&
      std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < drop_probability_) {
    return drop(pk, DropReason::kRandomLoss);
  }
  ++stats_.link_traversals;
  p.link_epoch = link_epoch_;
  Clock delay = extra;
  if (opts_.latency) delay += opts_.latency->hop_delay;
  schedule(clock_ + delay, EventKind::kArrive, pk, tp.remote_node, tp.remote_port);
}

void SimCore::on_arrive(std::uint32_t pk, NodeId node, PortNum in) {
  // A packet still on the wire when its link went down is lost with it.
  const Packet& p = pool_[pk];
  if (p.link_epoch != link_epoch_ && !link_physically_up(node, in)) {
    return drop(pk, DropReason::kLinkDown);
  }
  if (p.lid_routed) {
    if (is_switch(node)) return lr_at_switch(pk, node, in);
    if (owns_lid(node, in, p.lrh_dlid)) return lr_delivered(pk, node, in);
    return drop(pk, DropReason::kNoLidMatch);
  }
  if (!p.smp.direction) return dr_outbound(pk, node, in);
  dr_return(pk, node, in);
}

// ------------------------------------------------------------------ LID routing

void SimCore::lr_start(std::uint32_t pk, NodeId node, PortNum in, std::uint32_t dlid) {
  Packet& p = pool_[pk];
  p.lid_routed = true;
  p.lrh_dlid = dlid;
  p.lrh_slid = ports_[index(node, lid_port(node, in))].lid;
  p.lr_hops = 0;
  if (dlid == 0 || dlid > max_lid()) return drop(pk, DropReason::kBadLid);
  if (is_switch(node)) return lr_at_switch(pk, node, in);
  lr_from_ca(pk, node, in);
}

void SimCore::lr_from_ca(std::uint32_t pk, NodeId node, PortNum port) {
  // A CA sends everything out of its port; a packet for its own LID loops
  // back inside the HCA.
  if (owns_lid(node, port, pool_[pk].lrh_dlid)) return lr_delivered(pk, node, port);
  transmit(pk, node, port);
}

void SimCore::lr_at_switch(std::uint32_t pk, NodeId node, PortNum in) {
  const std::uint32_t dlid = pool_[pk].lrh_dlid;
  if (owns_lid(node, 0, dlid)) return lr_delivered(pk, node, in);
  const std::uint32_t si = topo_.node(node).switch_index.value;
  // IBA 14.2.5.4: packets with a DLID above LinearFDBTop are discarded.
  if (dlid > switches_[si].linear_fdb_top) return drop(pk, DropReason::kLftBeyondTop);
  const std::vector<std::uint8_t>& lft = lfts_[si];
  if (dlid >= lft.size() || lft[dlid] == routing::kDropPort) {
    return drop(pk, DropReason::kLftUnset);
  }
  const PortNum out = failover_[si] ? choose_port(node, dlid, lft[dlid]) : lft[dlid];
  if (out == routing::kDropPort) return drop(pk, DropReason::kNoAlternative);
  if (out != lft[dlid]) ++stats_.failover_forwards;
  // Port 0 would be this switch's own SMA, but the DLID is not its LID.
  if (out == 0) return drop(pk, DropReason::kNoLidMatch);
  if (out > topo_.node(node).num_ports) return drop(pk, DropReason::kLftBadPort);
  transmit(pk, node, out);
}

std::optional<PortRef> SimCore::walk_gmp(PortRef from, std::uint32_t dlid) const {
  if (dlid == 0 || dlid > max_lid() || !powered(from.node)) return std::nullopt;
  if (owns_lid(from.node, lid_port(from.node, from.port), dlid)) {
    return PortRef{from.node, lid_port(from.node, from.port)};
  }
  NodeId node = from.node;
  PortNum out = from.port;
  if (is_switch(node)) {
    // A switch's own GMP (a PMA answer) leaves by its LFT.
    const std::uint32_t si = topo_.node(node).switch_index.value;
    const std::vector<std::uint8_t>& lft = lfts_[si];
    if (dlid > switches_[si].linear_fdb_top || dlid >= lft.size()) return std::nullopt;
    out = failover_[si] ? choose_port(node, dlid, lft[dlid]) : lft[dlid];
    if (out == routing::kDropPort || out == 0 || out > topo_.node(node).num_ports) {
      return std::nullopt;
    }
  }
  for (unsigned hops = 0; hops <= opts_.lid_routed_hop_limit; ++hops) {
    const routing::Port& tp = topo_.port(node, out);
    if (!tp.connected() || !link_physically_up(node, out) ||
        ports_[index(node, out)].state != PortState::kActive ||
        ports_[index(tp.remote_node, tp.remote_port)].state != PortState::kActive) {
      return std::nullopt;
    }
    node = tp.remote_node;
    if (!is_switch(node)) {
      if (!owns_lid(node, tp.remote_port, dlid)) return std::nullopt;
      return PortRef{node, tp.remote_port};
    }
    if (owns_lid(node, 0, dlid)) return PortRef{node, 0};
    const std::uint32_t si = topo_.node(node).switch_index.value;
    if (dlid > switches_[si].linear_fdb_top) return std::nullopt;
    const std::vector<std::uint8_t>& lft = lfts_[si];
    if (dlid >= lft.size() || lft[dlid] == routing::kDropPort) return std::nullopt;
    out = failover_[si] ? choose_port(node, dlid, lft[dlid]) : lft[dlid];
    if (out == routing::kDropPort || out == 0 || out > topo_.node(node).num_ports) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

void SimCore::lr_delivered(std::uint32_t pk, NodeId node, PortNum in) {
  Packet& p = pool_[pk];
  p.lid_routed = false;
  const mad::Smp& s = p.smp;
  if (!s.directed()) {
    if (s.is_response() || s.method == mad::Method::kTrap) return to_sm(pk, node, in, true);
    return to_sma(pk, node, in);
  }
  // The end of a LID-routed part of a directed-route SMP.
  const unsigned hp = s.hop_pointer;
  const unsigned cnt = s.hop_count;
  if (!s.direction) {
    if (hp == 0) {  // the directed part starts here
      if (!is_switch(node)) return drop(pk, DropReason::kDrBadPath);
      return dr_begin(pk, node, in);
    }
    if (hp == cnt + 1) return to_sma(pk, node, in);  // past the directed part: for us
    return drop(pk, DropReason::kDrBadPath);
  }
  if (hp == 0) return to_sm(pk, node, in, true);
  if (hp == cnt + 1 && is_switch(node)) return dr_return(pk, node, in);
  drop(pk, DropReason::kDrBadPath);
}

// ------------------------------------------------------------------ directed route

void SimCore::dr_begin(std::uint32_t pk, NodeId node, PortNum in) {
  mad::Smp& s = pool_[pk].smp;
  s.hop_pointer = 1;
  if (s.hop_count == 0) {  // C14-9:3 at the sender: the SMP is for this very node
    if (permissive(s.dr_dlid)) return to_sma(pk, node, in);
    if (!is_switch(node)) return drop(pk, DropReason::kDrBadPath);
    return lr_start(pk, node, in, s.dr_dlid);
  }
  const PortNum out = s.initial_path[1];
  if (!is_switch(node)) {
    // C14-9:1: a CA sends only out of the port the SM is bound to.
    if (out != in) return drop(pk, DropReason::kDrBadPath);
  } else if (out == 0 || out > topo_.node(node).num_ports) {
    return drop(pk, DropReason::kDrBadPath);
  }
  transmit(pk, node, out);
}

void SimCore::dr_outbound(std::uint32_t pk, NodeId node, PortNum in) {
  mad::Smp& s = pool_[pk].smp;
  const unsigned hp = s.hop_pointer;
  const unsigned cnt = s.hop_count;
  if (hp >= 1 && hp < cnt) {  // C14-9:2, an intermediate hop
    if (!is_switch(node)) return drop(pk, DropReason::kDrThroughCa);
    s.return_path[hp] = in;
    s.hop_pointer = static_cast<std::uint8_t>(hp + 1);
    const PortNum out = s.initial_path[hp + 1];
    if (out == 0 || out > topo_.node(node).num_ports) return drop(pk, DropReason::kDrBadPath);
    return transmit(pk, node, out, opts_.latency ? opts_.latency->dr_relay : Clock{0});
  }
  if (hp == cnt && cnt >= 1) {  // C14-9:3, the end of the directed part
    s.return_path[hp] = in;
    s.hop_pointer = static_cast<std::uint8_t>(hp + 1);
    if (permissive(s.dr_dlid)) return to_sma(pk, node, in);
    if (!is_switch(node)) return drop(pk, DropReason::kDrBadPath);
    return lr_start(pk, node, in, s.dr_dlid);
  }
  drop(pk, DropReason::kDrBadPath);  // C14-9:5
}

void SimCore::dr_return(std::uint32_t pk, NodeId node, PortNum in) {
  mad::Smp& s = pool_[pk].smp;
  const unsigned hp = s.hop_pointer;
  const unsigned cnt = s.hop_count;
  if (hp == 1) {  // C14-13:3, the start of the directed part
    s.hop_pointer = 0;
    if (permissive(s.dr_slid)) return to_sm(pk, node, in, false);
    if (!is_switch(node)) return drop(pk, DropReason::kDrBadPath);
    return lr_start(pk, node, in, s.dr_slid);
  }
  if (hp >= 2 && hp <= cnt + 1) {  // C14-13:1 (the responder's end) and C14-13:2
    const bool intermediate = hp <= cnt;
    if (intermediate && !is_switch(node)) return drop(pk, DropReason::kDrThroughCa);
    s.hop_pointer = static_cast<std::uint8_t>(hp - 1);
    const PortNum out = s.return_path[hp - 1];
    if (out == 0 || out > topo_.node(node).num_ports) return drop(pk, DropReason::kDrBadPath);
    return transmit(pk, node, out,
                    intermediate && opts_.latency ? opts_.latency->dr_relay : Clock{0});
  }
  drop(pk, DropReason::kDrBadPath);  // C14-13:5
}

// ------------------------------------------------------------------ the SMA

void SimCore::to_sma(std::uint32_t pk, NodeId node, PortNum in) {
  const mad::Smp& s = pool_[pk].smp;
  if (silent_[node.value] != 0) return drop(pk, DropReason::kSilentNode);
  // SMInfo at an SM's port is the SM's business, not the SMA's.
  if (s.attr_id == mad::AttrId::kSmInfo && !s.is_response()) {
    if (node == sm_.node && in == sm_.port) {
      const bool lid_routed = !s.directed() || !permissive(s.dr_dlid);
      return to_sm(pk, node, in, lid_routed);
    }
    if (PeerSmSim* peer = peer_at(node, in)) return peer_request(pk, *peer, node, in);
  }
  if (!opts_.latency || opts_.latency->sma_processing.count() == 0) {
    return sma_done(pk, node, in);
  }
  // FIFO service at a constant rate: the SMPs still queued at clock_ are
  // those finishing in (clock_, busy_until].
  const Clock service = opts_.latency->sma_processing;
  Clock& busy = sma_busy_until_[node.value];
  if (busy > clock_) {
    const auto queued = static_cast<std::uint64_t>((busy - clock_ + service - Clock{1}) / service);
    if (queued >= opts_.latency->sma_queue_depth) return drop(pk, DropReason::kSmaQueueFull);
  }
  busy = std::max(busy, clock_) + service;
  schedule(busy, EventKind::kSmaDone, pk, node, in);
}

void SimCore::sma_done(std::uint32_t pk, NodeId node, PortNum in) {
  if (!powered(node)) return drop(pk, DropReason::kLinkDown);
  Packet& p = pool_[pk];
  switch (sma_handle(p, node, in)) {
    case SmaOutcome::kRespond:
      break;
    case SmaOutcome::kConsumed:
      return free_packet(pk);
    case SmaOutcome::kUnexpected:
      return drop(pk, DropReason::kUnexpected);
    case SmaOutcome::kForeignVendor:
      return drop(pk, DropReason::kVendorAttribute);
  }
  respond(pk, node, in);
}

void SimCore::respond(std::uint32_t pk, NodeId node, PortNum in) {
  Packet& p = pool_[pk];
  mad::Smp& s = p.smp;
  // The response goes back the way the request came: LID-routed to the
  // request's source, or along the directed route (from the LID-routed end
  // first when the request came through one).
  if (!s.directed()) return lr_start(pk, node, in, p.lrh_slid);
  s.direction = true;
  if (!permissive(s.dr_dlid)) return lr_start(pk, node, in, p.lrh_slid);
  dr_return(pk, node, in);
}

// ------------------------------------------------------------------ link state

void SimCore::reevaluate_link(NodeId n, PortNum p) {
  ++link_epoch_;  // every change of power, failed or disabled ends here
  if (p == 0) return;
  const routing::Port& tp = topo_.port(n, p);
  if (!tp.connected()) return;
  PortSim& a = ports_[index(n, p)];
  PortSim& b = ports_[index(tp.remote_node, tp.remote_port)];
  const bool up = link_physically_up(n, p);
  if (up == (a.state != PortState::kDown)) return;
  a.state = b.state = up ? PortState::kInit : PortState::kDown;
  ++stats_.link_state_changes;
  if (!up) {
    for (const PortRef end : {PortRef{n, p}, PortRef{tp.remote_node, tp.remote_port}}) {
      if (is_switch(end.node)) on_link_down(end.node, end.port);
    }
  }
  // SwitchInfo:PortStateChange and trap 128 on each switch end that is on.
  for (const PortRef end : {PortRef{n, p}, PortRef{tp.remote_node, tp.remote_port}}) {
    if (is_switch(end.node) && powered(end.node)) raise_trap128(end.node);
  }
}

void SimCore::bounce_link(NodeId n, PortNum p) {
  // IBA 14.2.5.6: setting PortState to Down takes the link down, after which
  // it retrains (PortPhysicalState stays Polling) and comes back in INIT.
  const routing::Port& tp = topo_.port(n, p);
  if (!tp.connected()) return;
  PortSim& a = ports_[index(n, p)];
  if (a.state == PortState::kDown) return;
  a.state = ports_[index(tp.remote_node, tp.remote_port)].state = PortState::kDown;
  ++stats_.link_state_changes;
  reevaluate_link(n, p);
}

void SimCore::set_link_failed(PortRef end, bool failed) {
  const routing::Port& tp = topo_.port(end);
  if (!tp.connected()) return;
  if (failed && !ports_[index(end)].failed) {
    // Both ends count the link going down (PortCounters:LinkDownedCounter).
    inject_port_errors(end, PortErrors{.link_downed = 1});
    inject_port_errors({tp.remote_node, tp.remote_port}, PortErrors{.link_downed = 1});
  }
  ports_[index(end)].failed = failed;
  ports_[index(tp.remote_node, tp.remote_port)].failed = failed;
  reevaluate_link(end.node, end.port);
}

void SimCore::reset_node(NodeId n) {
  // A power cycle: LIDs, tables and port configuration are gone; the cable
  // state (failed links) is not the node's and stays.
  const routing::Node& node = topo_.node(n);
  for (unsigned p = 0; p <= node.num_ports; ++p) {
    PortSim& ps = ports_[index(n, static_cast<PortNum>(p))];
    const bool failed = ps.failed;
    ps = PortSim{};
    ps.failed = failed;
  }
  if (node.type == NodeType::kSwitch) {
    ports_[index(n, 0)].state = PortState::kActive;
    switches_[node.switch_index.value] = SwitchSim{};
    std::vector<std::uint8_t>().swap(lfts_[node.switch_index.value]);
    routes_out_[node.switch_index.value].clear();
    std::vector<std::uint16_t>().swap(mfts_[node.switch_index.value]);
    failover_[node.switch_index.value].reset();  // armed tables are volatile too
  }
  homes_dirty_ = true;
  std::vector<std::uint8_t>().swap(sl2vl_[n.value]);
  std::erase_if(sl2vl_pairs_, [n](const auto& kv) { return (kv.first >> 16) == n.value; });
  std::vector<std::uint8_t>().swap(vlarb_[n.value]);
  std::vector<std::uint16_t>().swap(pkeys_[n.value]);
  if (opts_.latency) sma_busy_until_[n.value] = Clock{0};
}

void SimCore::set_powered(NodeId n, bool on) {
  if (powered(n) == on) return;
  if (on) reset_node(n);
  powered_[n.value] = on ? 1 : 0;
  if (!on && is_switch(n)) sw(n).trap_pending = false;
  for (unsigned p = 1; p <= topo_.node(n).num_ports; ++p) {
    reevaluate_link(n, static_cast<PortNum>(p));
  }
}

// ------------------------------------------------------------------ trap 128

void SimCore::raise_trap128(NodeId n) {
  SwitchSim& w = sw(n);
  w.port_state_change = true;
  // One notice outstanding at a time: the SM learns the details from
  // PortStateChange and PortInfo, not from the count of traps.
  if (w.trap_pending) return;
  const PortSim& p0 = ports_[index(n, 0)];
  if (p0.lid == 0 || p0.master_sm_lid == 0) return;  // nowhere to send it yet
  w.trap_pending = true;
  w.trap_sends = 0;
  w.trap_tid = next_trap_tid_++;
  send_trap128(n);
}

void SimCore::send_trap128(NodeId n) {
  SwitchSim& w = sw(n);
  const PortSim& p0 = ports_[index(n, 0)];
  if (p0.lid == 0 || p0.master_sm_lid == 0) {
    w.trap_pending = false;
    return;
  }
  ++w.trap_sends;
  ++stats_.traps_sent;
  // The repeat timer runs even after the last send, so a TrapRepress that
  // answers the last copy still matches.
  schedule(clock_ + opts_.trap_resend_interval, EventKind::kTrapTimer,
           static_cast<std::uint32_t>(w.trap_tid), n, 0);
  lr_start(trap_packet(w.trap_tid, mad::Notice::trap128(p0.lid, space_.extended())), n, 0,
           p0.master_sm_lid);
}

std::uint32_t SimCore::trap_packet(std::uint64_t tid, const mad::Notice& notice) {
  const std::uint32_t pk = alloc_packet();
  mad::Smp& s = pool_[pk].smp;
  s = mad::Smp{};
  s.mgmt_class = mad::MgmtClass::kSubnLid;
  s.method = mad::Method::kTrap;
  s.attr_id = mad::AttrId::kNotice;
  s.attr_mod = 0;
  s.tid = tid;
  notice.encode(mad::data_of(s));
  return pk;
}

std::optional<std::uint64_t> SimCore::send_trap(PortRef from, mad::Notice notice,
                                                std::uint64_t tid) {
  const PortSim& p = ports_[index(from.node, lid_port(from.node, from.port))];
  if (p.lid == 0 || p.master_sm_lid == 0) return std::nullopt;
  if (tid == 0) tid = next_trap_tid_++;
  ++stats_.traps_sent;
  notice.issuer_lid = static_cast<std::uint16_t>(std::min<std::uint32_t>(p.lid, 0xFFFF));
  lr_start(trap_packet(tid, notice), from.node, from.port, p.master_sm_lid);
  return tid;
}

void SimCore::on_trap_timer(NodeId n, std::uint32_t tid_low) {
  SwitchSim& w = sw(n);
  if (!w.trap_pending || static_cast<std::uint32_t>(w.trap_tid) != tid_low) return;
  if (w.trap_sends >= opts_.trap_max_sends || !powered(n)) {
    w.trap_pending = false;
    return;
  }
  send_trap128(n);
}

}  // namespace subnetd::discovery::sim

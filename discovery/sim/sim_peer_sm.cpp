// SimCore: peer SMs (issue 17) — other SMs in the simulated subnet, at CA
// ports. A peer answers SMInfo Get, takes SMInfo Sets by IBA 14.4.3's
// rules (the sender's state and its own decide; OpenSM checks the same) and
// sends the Sets a test asks of it. It does nothing of its own accord
// beyond the ACKNOWLEDGE that completes a HANDOVER it took: no sweeps, no
// polls, no tables, so that a test decides when the peer "notices"
// something.

#include "discovery/sim/sim_core.hpp"

namespace subnetd::discovery::sim {
namespace {

namespace st = mad::status;

constexpr std::uint8_t kNotActive = 0;
constexpr std::uint8_t kDiscovering = 1;
constexpr std::uint8_t kStandby = 2;
constexpr std::uint8_t kMaster = 3;

constexpr std::uint32_t kHandover = 1;
constexpr std::uint32_t kAcknowledge = 2;
constexpr std::uint32_t kDisable = 3;
constexpr std::uint32_t kToStandby = 4;
constexpr std::uint32_t kDiscover = 5;

}  // namespace

SimCore::PeerSmSim* SimCore::peer_at(NodeId node, PortNum port) {
  if (peers_.empty() || port == 0 || is_switch(node)) return nullptr;
  auto it = peers_.find(index(node, port));
  return it == peers_.end() ? nullptr : &it->second;
}

void SimCore::set_peer_sm(PortRef at, const PeerSmOptions& o) {
  PeerSmSim& p = peers_[index(at)];
  p.v.guid = topo_.port(at.node, at.port).guid;
  p.v.now = o;
  p.v.now.priority &= 0x0F;
  p.v.now.state &= 0x03;
  p.at = at;
}

void SimCore::set_peer_sm_alive(PortRef at, bool alive) {
  if (PeerSmSim* p = peer_at(at.node, at.port)) {
    p->v.alive = alive;
    p->handover_sent = false;
  }
}

std::optional<PeerSmView> SimCore::peer_sm(PortRef at) const {
  auto it = peers_.find(index(at));
  if (it == peers_.end()) return std::nullopt;
  return it->second.v;
}

bool SimCore::holds_is_sm(NodeId node, PortNum port) const {
  if (node == sm_.node && port == sm_.port) return true;
  if (peers_.empty()) return false;
  auto it = peers_.find(index(node, port));
  return it != peers_.end() && it->second.v.alive;
}

mad::SmInfo SimCore::peer_info(const PeerSmSim& p, std::uint8_t state, bool show_key) const {
  mad::SmInfo i;
  i.guid = p.v.guid.value;
  // As OpenSM without M_Key protection: the key to a requester that knows it.
  i.sm_key = show_key ? p.v.now.sm_key : 0;
  i.act_count = p.v.act_count;
  i.priority = p.v.now.priority;
  i.sm_state = state;
  return i;
}

void SimCore::peer_sm_send(PortRef at, std::uint32_t control) {
  PeerSmSim* p = peer_at(at.node, at.port);
  if (p == nullptr || !p->v.alive) return;
  send_peer_set(*p, control, p->v.now.state);
  if (control == kHandover) p->handover_sent = true;
}

void SimCore::send_peer_set(PeerSmSim& p, std::uint32_t control, std::uint8_t as) {
  ++p.v.sent;
  const std::uint32_t pk = alloc_packet();
  mad::Smp& s = pool_[pk].smp;
  s = mad::Smp{};
  s.mgmt_class = mad::MgmtClass::kSubnLid;
  s.method = mad::Method::kSet;
  s.attr_id = mad::AttrId::kSmInfo;
  s.attr_mod = control;
  s.tid = next_trap_tid_++;
  peer_info(p, as, true).encode(mad::data_of(s));
  // To the SM's port by LID, as a peer that learned the master's LID from
  // its own PortInfo (MasterSMLID) would send it.
  lr_start(pk, p.at.node, p.at.port, ports_[index(sm_)].lid);
}

void SimCore::peer_request(std::uint32_t pk, PeerSmSim& p, NodeId node, PortNum in) {
  if (!p.v.alive) return drop(pk, DropReason::kNoSm);
  mad::Smp& s = pool_[pk].smp;
  if (s.method != mad::Method::kGet && s.method != mad::Method::kSet) {
    return drop(pk, DropReason::kUnexpected);
  }
  const mad::SmInfo from = mad::SmInfo::decode(mad::data_of(s));
  const bool key_ok = from.sm_key == p.v.now.sm_key;
  std::uint16_t status = st::kOk;
  bool acknowledge = false;
  if (s.method == mad::Method::kGet) {
    ++p.v.gets;
  } else {
    ++p.v.sets;
    p.v.last_control = s.attr_mod;
    const std::uint8_t was = p.v.now.state;
    const std::uint8_t sender = from.sm_state & 0x03;
    std::optional<std::uint8_t> next;
    switch (s.attr_mod) {
      case kHandover:
        if (sender == kMaster && was != kNotActive) next = kMaster;
        acknowledge = next.has_value();
        break;
      case kAcknowledge:
        // Ours to a HANDOVER we sent: we left MASTER when it was answered.
        if (sender == kStandby && (was == kStandby || p.handover_sent)) next = kStandby;
        break;
      case kDisable:
        if (sender == kMaster && was == kStandby) next = kNotActive;
        break;
      case kToStandby:
        if (sender == kMaster && was == kNotActive) next = kStandby;
        break;
      case kDiscover:
        if (sender == kMaster && was == kStandby) next = kDiscovering;
        break;
      default:
        break;
    }
    if (!key_ok || !next) {
      ++p.v.refused;
      status = st::kInvalidField;
      acknowledge = false;
    } else {
      p.v.now.state = *next;
      if (s.attr_mod == kAcknowledge) p.handover_sent = false;
    }
  }
  ++p.v.act_count;
  peer_info(p, p.v.now.state, key_ok).encode(mad::data_of(s));
  s.method = mad::Method::kGetResp;
  s.status = status;
  respond(pk, node, in);
  // The new master acknowledges from the state it took the HANDOVER in
  // (OpenSM refuses an ACKNOWLEDGE from a sender not in STANDBY).
  if (acknowledge) send_peer_set(p, kAcknowledge, kStandby);
}

void SimCore::peer_received(std::uint32_t pk, PeerSmSim& p) {
  if (!p.v.alive) return drop(pk, DropReason::kNoSm);
  const mad::Smp& s = pool_[pk].smp;
  if (s.method == mad::Method::kTrap) {
    ++p.v.traps;
  } else if (s.is_response() && s.attr_id == mad::AttrId::kSmInfo) {
    ++p.v.answers;
    p.v.last_answer_status = s.status;
    // A HANDOVER we sent, taken: we are STANDBY from now on, and wait for
    // the new master's ACKNOWLEDGE.
    if (s.attr_mod == kHandover && s.status == st::kOk && p.handover_sent) {
      p.v.now.state = kStandby;
    }
  }
  free_packet(pk);
}

}  // namespace subnetd::discovery::sim

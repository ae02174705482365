// Switch-local fast failover in the simulator (issue 14; discovery/README.md,
// "Fast failover"): what a switch does by itself when a port dies, before
// any SM acts.
//
// - Local failover: a LID whose LFT port is not ACTIVE (as the switch sees
//   it: a dead link counts as live until failover_detect has passed) leaves
//   by a live port of the LID's group, chosen by LID modulo the live ports
//   (the same LID always takes the same port, different LIDs spread).
// - Fault notification: when a switch notices a dead port and some LID of a
//   destination switch D that has a group has no way out any more (a LID
//   without a group is not under failover: nobody is told), it sends a notification
//   naming D out of its notify ports. A receiver removes the port towards the
//   sender from D's ports and, if it is then stranded for D too, passes the
//   notification on. Each switch does so once per D until an SM clears the
//   state, so a storm of notifications always ends.
//
// Notifications are data-plane events between switches, not MADs: they take
// hop_delay + notify_processing per link and do not touch any SMA.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "discovery/mad/failover.hpp"
#include "discovery/sim/sim_core.hpp"
#include "routing/text.hpp"

namespace subnetd::discovery::sim {
namespace {

using routing::NodeType;
using routing::PortState;

constexpr std::uint32_t kNoHome = UINT32_MAX;
namespace st = mad::status;

PortMask from_wire(const mad::WirePortMask& w) {
  PortMask m;
  for (unsigned p = 0; p < 256; ++p) {
    if (mad::mask_test(w, p)) m.set(static_cast<PortNum>(p));
  }
  return m;
}

mad::WirePortMask to_wire(const PortMask& m) {
  mad::WirePortMask w{};
  for (unsigned p = 0; p < 256; ++p) {
    if (m.test(static_cast<PortNum>(p))) mad::mask_set(w, p);
  }
  return w;
}

// A mask naming port 0 or a port beyond the switch's.
bool bad_ports(const mad::WirePortMask& w, unsigned num_ports) {
  if (mad::mask_test(w, 0)) return true;
  for (unsigned p = num_ports + 1; p < 256; ++p) {
    if (mad::mask_test(w, p)) return true;
  }
  return false;
}

}  // namespace

const SimCore::FailoverSim* SimCore::failover(NodeId sw) const {
  return failover_[topo_.node(sw).switch_index.value].get();
}

void SimCore::set_failover(NodeId sw, FailoverTables tables) {
  std::unique_ptr<FailoverSim>& slot = failover_[topo_.node(sw).switch_index.value];
  if (!tables.enabled) {
    slot.reset();
    return;
  }
  slot = std::make_unique<FailoverSim>();
  slot->tables = std::move(tables);
  // Links already down count as noticed.
}

void SimCore::clear_failover_state(NodeId sw) {
  FailoverSim* f = failover_[topo_.node(sw).switch_index.value].get();
  if (f == nullptr) return;
  f->removed.clear();
  f->notified.clear();
}

bool SimCore::port_live(NodeId sw, const FailoverSim& f, PortNum p) const {
  if (p == 0 || p > topo_.node(sw).num_ports) return false;
  return f.undetected.test(p) || ports_[index(sw, p)].state == PortState::kActive;
}

std::uint8_t SimCore::choose_port(NodeId sw, std::uint32_t lid, std::uint8_t lft_port) const {
  const FailoverSim& f = *failover_[topo_.node(sw).switch_index.value];
  if (!f.tables.enabled || lft_port == 0 || lft_port == routing::kDropPort) return lft_port;
  const PortMask* removed = nullptr;
  if (!f.removed.empty()) {
    auto it = f.removed.find(home_of(lid));
    if (it != f.removed.end()) removed = &it->second;
  }
  auto usable = [&](PortNum p) {
    return port_live(sw, f, p) && (removed == nullptr || !removed->test(p));
  };
  if (usable(lft_port)) return lft_port;
  const std::uint8_t g = lid < f.tables.lid_group.size() ? f.tables.lid_group[lid] : 0;
  if (g == 0 || g >= f.tables.groups.size()) return routing::kDropPort;
  const PortMask& group = f.tables.groups[g];
  std::array<std::uint8_t, 256> live{};
  unsigned n = 0;
  const unsigned ports = topo_.node(sw).num_ports;
  for (unsigned p = 1; p <= ports; ++p) {
    const auto pn = static_cast<PortNum>(p);
    if (group.test(pn) && usable(pn)) live[n++] = static_cast<std::uint8_t>(p);
  }
  if (n == 0) return routing::kDropPort;
  return live[lid % n];
}

std::uint8_t SimCore::effective_port(NodeId sw, std::uint32_t lid) const {
  if (owns_lid(sw, 0, lid)) return 0;
  const std::uint32_t si = topo_.node(sw).switch_index.value;
  if (lid > switches_[si].linear_fdb_top) return routing::kDropPort;
  const std::vector<std::uint8_t>& lft = lfts_[si];
  if (lid >= lft.size()) return routing::kDropPort;
  const std::uint8_t p = lft[lid];
  return failover_[si] ? choose_port(sw, lid, p) : p;
}

// ---------------------------------------------------------------- homes

void SimCore::rebuild_homes() const {
  std::uint32_t top = 0;
  for (std::uint32_t i = 0; i < topo_.num_nodes(); ++i) {
    const NodeId n{i};
    const routing::Node& node = topo_.node(n);
    const bool swn = node.type == NodeType::kSwitch;
    for (unsigned p = swn ? 0 : 1; p <= (swn ? 0U : node.num_ports); ++p) {
      const PortSim& ps = ports_[index(n, static_cast<PortNum>(p))];
      if (ps.lid != 0) top = std::max(top, ps.lid + (1U << ps.lmc) - 1);
    }
  }
  home_.assign(std::size_t{top} + 1, kNoHome);
  homed_.assign(topo_.num_nodes(), {});
  for (std::uint32_t i = 0; i < topo_.num_nodes(); ++i) {
    const NodeId n{i};
    const routing::Node& node = topo_.node(n);
    const bool swn = node.type == NodeType::kSwitch;
    for (unsigned p = swn ? 0 : 1; p <= (swn ? 0U : node.num_ports); ++p) {
      const auto pn = static_cast<PortNum>(p);
      const PortSim& ps = ports_[index(n, pn)];
      if (ps.lid == 0) continue;
      std::uint32_t home = n.value;
      if (!swn) {
        const routing::Port& tp = topo_.port(n, pn);
        if (!tp.connected() || !is_switch(tp.remote_node)) continue;
        home = tp.remote_node.value;
      }
      for (std::uint32_t l = ps.lid; l < ps.lid + (1U << ps.lmc) && l <= top; ++l) {
        home_[l] = home;
        homed_[home].push_back(l);
      }
    }
  }
  homes_dirty_ = false;
}

std::uint32_t SimCore::home_of(std::uint32_t lid) const {
  if (homes_dirty_) rebuild_homes();
  return lid < home_.size() ? home_[lid] : kNoHome;
}

const std::vector<std::uint32_t>& SimCore::lids_homed_at(std::uint32_t home) const {
  if (homes_dirty_) rebuild_homes();
  return homed_[home];
}

// ---------------------------------------------------------------- faults

void SimCore::on_link_down(NodeId sw, PortNum p) {
  FailoverSim* f = failover_[topo_.node(sw).switch_index.value].get();
  if (f == nullptr || !f->tables.enabled) return;
  f->undetected.set(p);
  const Clock delay = opts_.latency ? opts_.latency->failover_detect : Clock{0};
  schedule(clock_ + delay, EventKind::kDetect, 0, sw, p);
}

void SimCore::on_detect(NodeId sw, PortNum p) {
  FailoverSim* f = failover_[topo_.node(sw).switch_index.value].get();
  if (f == nullptr || !f->undetected.test(p)) return;  // disarmed or reset meanwhile
  f->undetected.reset(p);
  ++stats_.failover_detections;
  stats_.failover_last_change = clock_;
  if (!powered(sw)) return;
  // Destination switches some LID of which used this port and now has no
  // way out of this switch.
  const std::vector<std::uint8_t>& lft = lfts_[topo_.node(sw).switch_index.value];
  if (homes_dirty_) rebuild_homes();
  const std::size_t end = std::min(lft.size(), home_.size());
  for (std::uint32_t l = 1; l < end; ++l) {
    const std::uint8_t lp = lft[l];
    if (lp == routing::kDropPort || lp == 0) continue;
    // A LID without a group is not under failover: it is dropped on a
    // dead port until the SM repairs, and nobody is told.
    const std::uint8_t g = l < f->tables.lid_group.size() ? f->tables.lid_group[l] : 0;
    if (g == 0 || g >= f->tables.groups.size()) continue;
    if (lp != p && !f->tables.groups[g].test(p)) continue;
    const std::uint32_t home = home_[l];
    if (home == kNoHome || home == sw.value || f->notified.contains(home)) continue;
    if (choose_port(sw, l, lp) != routing::kDropPort) continue;
    f->notified.insert(home);
    send_notifications(sw, home, p);
  }
}

bool SimCore::stranded(NodeId sw, std::uint32_t dest) const {
  const std::uint32_t si = topo_.node(sw).switch_index.value;
  const std::vector<std::uint8_t>& lft = lfts_[si];
  const std::vector<std::uint8_t>& lid_group = failover_[si]->tables.lid_group;
  for (std::uint32_t l : lids_homed_at(dest)) {
    if (l >= lft.size() || l >= lid_group.size() || lid_group[l] == 0) continue;
    const std::uint8_t lp = lft[l];
    if (lp == routing::kDropPort || lp == 0) continue;
    if (choose_port(sw, l, lp) == routing::kDropPort) return true;
  }
  return false;
}

void SimCore::send_notifications(NodeId sw, std::uint32_t dest, PortNum except) {
  const FailoverSim& f = *failover_[topo_.node(sw).switch_index.value];
  const Clock delay =
      opts_.latency ? opts_.latency->hop_delay + opts_.latency->notify_processing : Clock{0};
  const unsigned ports = topo_.node(sw).num_ports;
  for (unsigned q = 1; q <= ports; ++q) {
    const auto pn = static_cast<PortNum>(q);
    if (pn == except || !f.tables.notify.test(pn)) continue;
    if (ports_[index(sw, pn)].state != PortState::kActive) continue;
    const routing::Port& tp = topo_.port(sw, pn);
    if (!tp.connected() || !is_switch(tp.remote_node)) continue;
    ++stats_.notifications_sent;
    schedule(clock_ + delay, EventKind::kNotify, dest, tp.remote_node, tp.remote_port);
  }
}

void SimCore::on_notify(NodeId sw, PortNum in, std::uint32_t dest) {
  // Lost with the link or the switch it was crossing to.
  if (!powered(sw) || !link_physically_up(sw, in)) return;
  ++stats_.notifications_received;
  FailoverSim* f = failover_[topo_.node(sw).switch_index.value].get();
  if (f == nullptr || !f->tables.enabled || dest == sw.value) return;  // not armed: ignored
  PortMask& removed = f->removed[dest];
  if (!removed.test(in)) {
    removed.set(in);
    stats_.failover_last_change = clock_;
  }
  if (f->notified.contains(dest) || !stranded(sw, dest)) return;
  f->notified.insert(dest);
  send_notifications(sw, dest, in);
}

// ---------------------------------------------------------------- checks

void SimCore::restore_link(PortRef end) {
  const routing::Port& tp = topo_.port(end);
  if (!tp.connected()) return;
  PortSim& a = ports_[index(end)];
  PortSim& b = ports_[index(tp.remote_node, tp.remote_port)];
  a.failed = b.failed = false;
  ++link_epoch_;
  if (link_physically_up(end.node, end.port)) a.state = b.state = PortState::kActive;
}

FailoverCheck SimCore::check_failover_forwarding() const {
  FailoverCheck out;
  if (homes_dirty_) rebuild_homes();
  auto is_data = [&](std::uint32_t l) {
    const std::uint32_t h = l < home_.size() ? home_[l] : kNoHome;
    return h != kNoHome && ports_[index(NodeId{h}, 0)].lid != l;
  };
  // Changed (LID, switch) pairs: the LFT port is down, or a notification
  // named it for the LID's switch.
  std::vector<std::uint64_t> changed;
  for (std::uint32_t si = 0; si < topo_.num_switches(); ++si) {
    const NodeId sw = topo_.switch_node(SwitchIndex{si});
    if (!powered(sw)) continue;
    const std::vector<std::uint8_t>& lft = lfts_[si];
    const std::size_t before = changed.size();
    PortMask dead;
    for (unsigned p = 1; p <= topo_.node(sw).num_ports; ++p) {
      const auto pn = static_cast<PortNum>(p);
      if (topo_.port(sw, pn).connected() && ports_[index(sw, pn)].state != PortState::kActive) {
        dead.set(pn);
      }
    }
    const std::size_t end = std::min(lft.size(), home_.size());
    if (!dead.none()) {
      for (std::uint32_t l = 1; l < end; ++l) {
        const std::uint8_t lp = lft[l];
        if (lp != 0 && lp != routing::kDropPort && dead.test(lp) && is_data(l)) {
          changed.push_back((std::uint64_t{l} << 32) | sw.value);
        }
      }
    }
    if (const FailoverSim* f = failover_[si].get(); f != nullptr) {
      for (const auto& [dest, mask] : f->removed) {
        for (const std::uint32_t l : lids_homed_at(dest)) {
          if (l >= end || !is_data(l)) continue;
          const std::uint8_t lp = lft[l];
          if (lp != 0 && lp != routing::kDropPort && mask.test(lp) && !dead.test(lp)) {
            changed.push_back((std::uint64_t{l} << 32) | sw.value);
          }
        }
      }
    }
    if (changed.size() != before) ++out.switches_changed;
  }
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  out.changed = changed.size();

  enum : std::uint8_t { kUnknown = 0, kDelivered, kDeadEnd, kLoop };
  std::unordered_map<std::uint32_t, std::uint8_t> memo;
  std::vector<std::uint32_t> path;
  std::unordered_set<std::uint32_t> sources, seen;
  std::vector<std::uint32_t> queue;
  std::vector<std::uint8_t> reach;
  auto describe = [&](std::uint32_t node) {
    return printable(topo_.node(NodeId{node}).description);
  };
  for (std::size_t i = 0; i < changed.size();) {
    const auto lid = static_cast<std::uint32_t>(changed[i] >> 32);
    const std::uint32_t home = home_[lid];
    ++out.lids;
    memo.clear();
    sources.clear();
    bool reach_ready = false;
    // Where a packet for `lid` entering switch x ends.
    auto walk = [&](std::uint32_t x) {
      path.clear();
      std::uint8_t result = kLoop;
      for (std::uint32_t hop = 0; hop <= opts_.lid_routed_hop_limit; ++hop) {
        if (auto it = memo.find(x); it != memo.end()) {
          result = it->second;
          break;
        }
        if (std::find(path.begin(), path.end(), x) != path.end()) break;  // a loop
        path.push_back(x);
        const NodeId xn{x};
        const std::uint8_t p = effective_port(xn, lid);
        if (p == 0) {
          result = kDelivered;
          break;
        }
        if (p == routing::kDropPort || p > topo_.node(xn).num_ports ||
            ports_[index(xn, p)].state != PortState::kActive) {
          result = kDeadEnd;
          break;
        }
        const routing::Port& tp = topo_.port(xn, p);
        if (!is_switch(tp.remote_node)) {
          const PortSim& ca = ports_[index(tp.remote_node, tp.remote_port)];
          const bool owns = ca.lid != 0 && lid >= ca.lid && lid < ca.lid + (1U << ca.lmc);
          result = owns ? kDelivered : kDeadEnd;
          break;
        }
        x = tp.remote_node.value;
      }
      for (const std::uint32_t y : path) memo[y] = result;
      return result;
    };
    for (; i < changed.size() && (changed[i] >> 32) == lid; ++i) {
      const auto c = static_cast<std::uint32_t>(changed[i] & 0xFFFFFFFFULL);
      const std::uint8_t r = walk(c);
      if (r == kDelivered) {
        ++out.delivered;
        continue;
      }
      ++(r == kLoop ? out.loops : out.dead_ends);
      if (r == kLoop && out.first_problem.empty()) {
        out.first_problem = fmt::format("LID {:#x} circles from \"{}\"", lid, describe(c));
      }
      // The switches whose traffic for the LID reaches c now.
      seen.clear();
      queue.assign(1, c);
      seen.insert(c);
      for (std::size_t q = 0; q < queue.size(); ++q) {
        const NodeId y{queue[q]};
        bool has_source = false;
        for (unsigned p = 1; p <= topo_.node(y).num_ports; ++p) {
          const auto pn = static_cast<PortNum>(p);
          const routing::Port& tp = topo_.port(y, pn);
          if (!tp.connected() || ports_[index(y, pn)].state != PortState::kActive) continue;
          if (!is_switch(tp.remote_node)) {
            has_source = true;
            continue;
          }
          const std::uint32_t z = tp.remote_node.value;
          if (seen.contains(z) || effective_port(tp.remote_node, lid) != tp.remote_port) continue;
          seen.insert(z);
          queue.push_back(z);
        }
        if (has_source && y.value != home) sources.insert(y.value);
      }
    }
    for (const std::uint32_t src : sources) {
      if (!reach_ready) {
        // Switches with a live path to the LID's switch.
        reach.assign(topo_.num_nodes(), 0);
        queue.assign(1, home);
        reach[home] = 1;
        for (std::size_t q = 0; q < queue.size(); ++q) {
          const NodeId y{queue[q]};
          for (unsigned p = 1; p <= topo_.node(y).num_ports; ++p) {
            const auto pn = static_cast<PortNum>(p);
            const routing::Port& tp = topo_.port(y, pn);
            if (!tp.connected() || !is_switch(tp.remote_node) ||
                ports_[index(y, pn)].state != PortState::kActive ||
                reach[tp.remote_node.value] != 0) {
              continue;
            }
            reach[tp.remote_node.value] = 1;
            queue.push_back(tp.remote_node.value);
          }
        }
        reach_ready = true;
      }
      if (reach[src] == 0) {
        ++out.cut_off_sources;
        continue;
      }
      ++out.unreachable_sources;
      if (out.first_problem.empty()) {
        out.first_problem = fmt::format("\"{}\" cannot reach LID {:#x} behind \"{}\"",
                                        describe(src), lid, describe(home));
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- the SMA

SimCore::FailoverSim& SimCore::failover_slot(NodeId sw) {
  std::unique_ptr<FailoverSim>& slot = failover_[topo_.node(sw).switch_index.value];
  if (!slot) slot = std::make_unique<FailoverSim>();
  return *slot;
}

std::uint16_t SimCore::sma_failover(mad::Smp& s, NodeId node) {
  if (!is_switch(node)) return st::kMethodAttrUnsupported;
  const bool capable = opts_.failover_capable;
  const bool set = s.method == mad::Method::kSet;
  const unsigned ports = topo_.node(node).num_ports;
  const FailoverSim* have = failover(node);
  switch (s.attr_id) {
    case mad::AttrId::kFailoverInfo: {
      if (s.attr_mod != 0) return st::kInvalidField;
      if (set) {
        const auto req = mad::FailoverInfo::decode(mad::data_of(s));
        if ((req.enabled && !capable) || req.group_top > mad::kFailoverMaxGroups ||
            req.lid_top >= lft_cap_) {
          return st::kInvalidField;
        }
        FailoverSim& f = failover_slot(node);
        f.tables.enabled = req.enabled;
        f.tables.groups.resize(std::size_t{req.group_top} + 1);
        f.tables.lid_group.resize(std::size_t{req.lid_top} + 1, 0);
        if (!req.enabled) {
          f.undetected = PortMask{};
          f.removed.clear();
          f.notified.clear();
        }
        have = &f;
      }
      mad::FailoverInfo out;
      out.cap_local = out.cap_notify = capable;
      out.group_cap = capable ? mad::kFailoverMaxGroups : 0;
      if (have != nullptr) {
        out.enabled = have->tables.enabled;
        out.group_top = static_cast<std::uint16_t>(
            have->tables.groups.empty() ? 0 : have->tables.groups.size() - 1);
        out.lid_top = static_cast<std::uint32_t>(
            have->tables.lid_group.empty() ? 0 : have->tables.lid_group.size() - 1);
      }
      if (opts_.latency) {
        out.detect_ns = static_cast<std::uint32_t>(opts_.latency->failover_detect.count());
        out.notify_hop_ns = static_cast<std::uint32_t>(
            (opts_.latency->hop_delay + opts_.latency->notify_processing).count());
      }
      out.encode(mad::data_of(s));
      return st::kOk;
    }
    case mad::AttrId::kFailoverGroupTable: {
      if (!capable) return st::kMethodAttrUnsupported;
      const std::uint32_t first = s.attr_mod * mad::kFailoverGroupsPerBlock;
      if (first + mad::kFailoverGroupsPerBlock - 1 > mad::kFailoverMaxGroups) {
        return st::kInvalidField;
      }
      if (set) {
        const auto req = mad::FailoverGroupBlock::decode(mad::data_of(s));
        for (unsigned i = 0; i < mad::kFailoverGroupsPerBlock; ++i) {
          const bool none_group = first + i == 0;
          const bool empty = req.groups[i] == mad::WirePortMask{};
          if (bad_ports(req.groups[i], ports) || (none_group && !empty)) return st::kInvalidField;
        }
        FailoverSim& f = failover_slot(node);
        if (f.tables.groups.size() < first + mad::kFailoverGroupsPerBlock) {
          f.tables.groups.resize(first + mad::kFailoverGroupsPerBlock);
        }
        for (unsigned i = 0; i < mad::kFailoverGroupsPerBlock; ++i) {
          f.tables.groups[first + i] = from_wire(req.groups[i]);
        }
        have = &f;
      }
      mad::FailoverGroupBlock out;
      for (unsigned i = 0; have != nullptr && i < mad::kFailoverGroupsPerBlock; ++i) {
        if (first + i < have->tables.groups.size()) {
          out.groups[i] = to_wire(have->tables.groups[first + i]);
        }
      }
      out.encode(mad::data_of(s));
      return st::kOk;
    }
    case mad::AttrId::kFailoverLidGroupTable: {
      if (!capable) return st::kMethodAttrUnsupported;
      const std::uint64_t first = std::uint64_t{s.attr_mod} * mad::kFailoverLidsPerBlock;
      if (first >= lft_cap_) return st::kInvalidField;
      const auto at = static_cast<std::size_t>(first);
      if (set) {
        const auto req = mad::FailoverLidGroupBlock::decode(mad::data_of(s));
        FailoverSim& f = failover_slot(node);
        std::vector<std::uint8_t>& lg = f.tables.lid_group;
        const std::size_t end = std::min<std::size_t>(at + mad::kFailoverLidsPerBlock, lft_cap_);
        if (lg.size() < end) lg.resize(end, 0);
        std::copy_n(req.groups.begin(), end - at, lg.begin() + static_cast<std::ptrdiff_t>(at));
        have = &f;
      }
      mad::FailoverLidGroupBlock out;
      if (have != nullptr) {
        const std::vector<std::uint8_t>& lg = have->tables.lid_group;
        for (std::size_t i = 0; i < mad::kFailoverLidsPerBlock && at + i < lg.size(); ++i) {
          out.groups[i] = lg[at + i];
        }
      }
      out.encode(mad::data_of(s));
      return st::kOk;
    }
    case mad::AttrId::kFailoverNotifyConfig: {
      if (!capable) return st::kMethodAttrUnsupported;
      if (s.attr_mod != 0) return st::kInvalidField;
      if (set) {
        const auto req = mad::FailoverNotifyConfig::decode(mad::data_of(s));
        if (bad_ports(req.notify, ports)) return st::kInvalidField;
        FailoverSim& f = failover_slot(node);
        f.tables.notify = from_wire(req.notify);
        if (req.clear_state) clear_failover_state(node);
        have = &f;
      }
      mad::FailoverNotifyConfig out;
      if (have != nullptr) out.notify = to_wire(have->tables.notify);
      out.encode(mad::data_of(s));
      return st::kOk;
    }
    default:
      return st::kMethodAttrUnsupported;
  }
}

}  // namespace subnetd::discovery::sim

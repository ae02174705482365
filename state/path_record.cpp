// Path properties from a published snapshot; see path_record.hpp.

#include "state/path_record.hpp"

#include <algorithm>

#include "routing/path_trace.hpp"

namespace subnetd::state {
namespace {

// Gb/s x 10 of each IBA rate code (PathRecord Rate): the codes are not in
// order of speed.
struct RateCode {
  std::uint8_t code;
  std::uint16_t gbps10;
};
constexpr RateCode kRates[] = {{2, 25},    {5, 50},   {3, 100},   {6, 200},   {4, 300},  {7, 400},
                               {8, 600},   {9, 800},  {10, 1200}, {11, 140},  {12, 560}, {13, 1120},
                               {14, 1680}, {15, 250}, {16, 1000}, {17, 2000}, {18, 3000}};

}  // namespace

std::uint16_t gbps10_of(std::uint8_t code) {
  for (const RateCode& r : kRates) {
    if (r.code == code) return r.gbps10;
  }
  return 0;
}

std::uint8_t rate_code(std::uint16_t gbps10) {
  std::uint8_t best = 2;
  std::uint16_t best_speed = 0;
  for (const RateCode& r : kRates) {
    if (r.gbps10 <= gbps10 && r.gbps10 > best_speed) {
      best = r.code;
      best_speed = r.gbps10;
    }
  }
  return best;
}

std::uint16_t link_gbps10(const routing::Port& p) {
  std::uint16_t lanes = 4;
  switch (p.width_active) {
    case 1:
      lanes = 1;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
    default:  // 2 = 4x, or not read
      break;
  }
  std::uint16_t lane10 = 25;
  switch (p.speed_active) {
    case 2:
      lane10 = 50;
      break;
    case 4:
      lane10 = 100;
      break;
    default:  // 1 = SDR, or not read
      break;
  }
  return static_cast<std::uint16_t>(lanes * lane10);
}

const char* mtu_name(std::uint8_t mtu_code) {
  switch (mtu_code) {
    case 1:
      return "256";
    case 2:
      return "512";
    case 3:
      return "1024";
    case 4:
      return "2048";
    case 5:
      return "4096";
    default:
      return "?";
  }
}

std::optional<PortRef> endport_of_lid(const FabricState& st, Lid lid) {
  if (st.lids == nullptr) return std::nullopt;
  const PortRef owner = st.lids->owner_of(lid);
  if (!owner.node.valid()) return std::nullopt;
  return owner;
}

std::optional<PortRef> endport_of_guid(const FabricState& st, Guid port_guid) {
  if (st.topology == nullptr || st.lids == nullptr) return std::nullopt;
  const routing::Topology& t = *st.topology;
  std::optional<PortRef> port = t.find_by_port_guid(port_guid);
  if (!port) return std::nullopt;
  if (t.node(port->node).type == routing::NodeType::kSwitch) port->port = 0;
  if (st.lids->base_lid(t, port->node, port->port).value == 0) return std::nullopt;
  return port;
}

Result<PathProperties> path_properties(const FabricState& st, PortRef source, PortRef destination,
                                       Lid dlid) {
  const routing::Topology& t = *st.topology;
  auto trace = routing::trace_path(t, *st.lids, *st.routes, source, dlid);
  if (!trace.ok()) return trace.error();
  if (!trace->complete()) return trace->status.error();
  PathProperties p;
  p.source = source;
  p.destination = destination;
  p.slid = st.lids->base_lid(t, source.node, source.port);
  p.dlid = dlid;
  std::uint8_t mtu = 0;
  std::uint16_t speed = 0;
  for (const routing::TraceHop& h : trace->hops) {
    if (t.node(h.node).type == routing::NodeType::kSwitch) ++p.switch_hops;
    if (h.out_port == 0) continue;
    const routing::Port& out = t.port(h.node, h.out_port);
    const routing::Port& in = t.port(out.remote_node, out.remote_port);
    for (const routing::Port* port : {&out, &in}) {
      if (port->mtu_cap != 0) mtu = mtu == 0 ? port->mtu_cap : std::min(mtu, port->mtu_cap);
    }
    const std::uint16_t g = std::min(link_gbps10(out), link_gbps10(in));
    speed = speed == 0 ? g : std::min(speed, g);
  }
  p.mtu = mtu == 0 ? kMtu2048 : mtu;
  // A path that crosses no cable (a switch to itself) runs at its port's rate.
  if (speed == 0) speed = link_gbps10(t.port(source.node, source.port));
  p.rate = rate_code(speed);
  p.gbps10 = gbps10_of(p.rate);
  return p;
}

PathIndex::PathIndex(std::shared_ptr<const routing::Topology> topo) : topo_(std::move(topo)) {
  const routing::Topology& t = *topo_;
  packed_ = t.num_switches() < kEndport;
  if (!packed_) return;
  first_.reserve(t.num_switches());
  ports_.reserve(t.num_switches());
  for (const NodeId sw : t.switches()) {
    const routing::Node& node = t.node(sw);
    first_.push_back(static_cast<std::uint32_t>(links_.size()));
    ports_.push_back(node.num_ports);
    for (PortNum p = 1; p <= node.num_ports; ++p) {
      const routing::Port& out = t.port(sw, p);
      std::uint32_t link = kDead;
      std::uint32_t far_port = 0;
      if (out.connected() && out.state != routing::PortState::kDown) {
        const routing::Node& far = t.node(out.remote_node);
        const routing::Port& in = t.port(out.remote_node, out.remote_port);
        std::uint8_t mtu = 0;
        for (const routing::Port* end : {&out, &in}) {
          // MTUCap is 4 bits on the wire; 1..5 are the MTUs IBA defines.
          const auto cap = static_cast<std::uint8_t>(std::min<unsigned>(end->mtu_cap, 7));
          if (cap != 0) mtu = mtu == 0 ? cap : std::min(mtu, cap);
        }
        link = pack(far.type == routing::NodeType::kSwitch ? far.switch_index.value : kEndport, mtu,
                    std::min(link_gbps10(out), link_gbps10(in)));
        far_port = t.port_index(out.remote_node, out.remote_port);
      }
      links_.push_back(link);
      far_port_.push_back(far_port);
    }
  }
}

std::optional<PathProperties> PathIndex::walk(const FabricState& st, PortRef source,
                                              PortRef destination, Lid dlid) const {
  const routing::Topology& t = *topo_;
  const routing::LidMap& lids = *st.lids;
  const std::vector<routing::Lft>& lfts = st.routes->lfts;
  const PortRef owner = lids.owner_of(dlid);
  if (!packed_) {
    auto general = path_properties(st, source, destination, dlid);
    return general.ok() ? std::optional<PathProperties>(*general) : std::nullopt;
  }
  if (!owner.node.valid() || source.node.value >= t.num_nodes() || lfts.size() != first_.size()) {
    return std::nullopt;
  }
  PathProperties p;
  p.source = source;
  p.destination = destination;
  p.slid = lids.base_lid(t, source.node, source.port);
  p.dlid = dlid;
  std::uint8_t mtu = 0;
  std::uint16_t speed = 0;
  const auto cross = [&](std::uint8_t link_mtu, std::uint16_t link_gbps10) {
    if (link_mtu != 0) mtu = mtu == 0 ? link_mtu : std::min(mtu, link_mtu);
    speed = speed == 0 ? link_gbps10 : std::min(speed, link_gbps10);
  };
  std::uint32_t sw = 0;
  const routing::Node& src = t.node(source.node);
  if (src.type == routing::NodeType::kSwitch) {
    if (source.port != 0) return std::nullopt;
    sw = src.switch_index.value;
  } else if (owner == source) {  // a CA port's path to itself: no cable crossed
  } else {
    if (source.port == 0 || source.port > src.num_ports) return std::nullopt;
    const routing::Port& out = t.port(source.node, source.port);
    if (!out.connected() || out.state == routing::PortState::kDown) return std::nullopt;
    const routing::Node& far = t.node(out.remote_node);
    // A CA cabled to a CA: the general trace handles it.
    if (far.type != routing::NodeType::kSwitch) {
      auto general = path_properties(st, source, destination, dlid);
      return general.ok() ? std::optional<PathProperties>(*general) : std::nullopt;
    }
    const routing::Port& in = t.port(out.remote_node, out.remote_port);
    std::uint8_t link_mtu = 0;
    for (const routing::Port* end : {&out, &in}) {
      if (end->mtu_cap != 0)
        link_mtu = link_mtu == 0 ? end->mtu_cap : std::min(link_mtu, end->mtu_cap);
    }
    cross(link_mtu, std::min(link_gbps10(out), link_gbps10(in)));
    sw = far.switch_index.value;
  }
  if (src.type == routing::NodeType::kSwitch || !(owner == source)) {
    // As trace_path: at most 64 switches (a forwarding loop reaches the
    // bound too); port 0 delivers at a switch that owns the LID; a CA or
    // router port delivers when it is the owner.
    for (;;) {
      if (p.switch_hops == 64) return std::nullopt;
      ++p.switch_hops;
      const std::uint8_t out = lfts[sw].get(dlid);
      if (out == 0) {
        if (!(owner == PortRef{t.switch_node(SwitchIndex{sw}), 0})) return std::nullopt;
        break;
      }
      if (out > ports_[sw]) return std::nullopt;  // the drop port (255) included
      const std::uint32_t at = first_[sw] + out - 1;
      const std::uint32_t link = links_[at];
      const std::uint32_t next = next_of(link);
      if (next == kDead) return std::nullopt;
      cross(mtu_of(link), gbps10_of_link(link));
      if (next == kEndport) {
        if (t.port_index(owner.node, owner.port) != far_port_[at]) return std::nullopt;
        break;
      }
      sw = next;
    }
  }
  p.mtu = mtu == 0 ? kMtu2048 : mtu;
  if (speed == 0) speed = link_gbps10(t.port(source.node, source.port));
  p.rate = rate_code(speed);
  p.gbps10 = gbps10_of(p.rate);
  return p;
}

std::shared_ptr<const PathIndex> PathIndexCache::get(const FabricState& st) {
  if (st.topology == nullptr) return nullptr;
  std::lock_guard lock(mu_);
  if (index_ == nullptr || index_->topology() != st.topology.get()) {
    index_ = std::make_shared<const PathIndex>(st.topology);
  }
  return index_;
}

}  // namespace subnetd::state

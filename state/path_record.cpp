// Path properties from a published snapshot; see path_record.hpp.

#include "state/path_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

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

std::optional<PortRef> endport_of_lid(const FabricState& st, Lid lid) {
  if (st.lids == nullptr) return std::nullopt;
  const PortRef owner = st.lids->owner_of(lid);
  if (!owner.node.valid()) return std::nullopt;
  return owner;
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
  // SL2VL maps SL i to VL i (vl_tables.hpp); the layer may depend on the
  // source's switch (Routes::path_layers).
  p.sl = st.routes->layer(dlid);
  for (const routing::TraceHop& h : trace->hops) {
    if (t.node(h.node).type != routing::NodeType::kSwitch) continue;
    p.sl = st.routes->path_layer(t.node(h.node).switch_index.value, dlid);
    break;
  }
  // A path that crosses no cable (a switch to itself) runs at its port's rate.
  if (speed == 0) speed = link_gbps10(t.port(source.node, source.port));
  p.rate = rate_code(speed);
  p.gbps10 = gbps10_of(p.rate);
  if (st.partitions != nullptr) {
    const auto key =
        routing::shared_pkey(st.partitions->table(t, source.node, source.port),
                             st.partitions->table(t, destination.node, destination.port));
    if (!key) {
      return Error{Errc::kUnreachable,
                   fmt::format("{} port {} and {} port {} share no partition (one must be a full "
                               "member of a P_Key both hold)",
                               t.label(source.node), source.port, t.label(destination.node),
                               destination.port)};
    }
    p.pkey = *key;
  }
  return p;
}

PathIndex::PathIndex(std::shared_ptr<const routing::Topology> topo) : topo_(std::move(topo)) {
  const routing::Topology& t = *topo_;
  by_port_guid_.reserve(t.num_nodes());
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    if (t.node(n).type == routing::NodeType::kSwitch) {
      by_port_guid_.emplace(t.port(n, 0).guid, PortRef{n, 0});
      continue;
    }
    for (PortNum p = 1; p <= t.node(n).num_ports; ++p) {
      by_port_guid_.emplace(t.port(n, p).guid, PortRef{n, p});
    }
  }
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

std::optional<PortRef> PathIndex::endport_of_guid(const FabricState& st, Guid port_guid) const {
  const auto it = by_port_guid_.find(port_guid);
  if (it == by_port_guid_.end() || st.lids == nullptr) return std::nullopt;
  const PortRef port = it->second;
  if (st.lids->base_lid(*topo_, port.node, port.port).value == 0) return std::nullopt;
  return port;
}

std::optional<PathProperties> PathIndex::walk(const FabricState& st, PortRef source,
                                              PortRef destination, Lid dlid) const {
  const PathQuery q{source, destination, dlid};
  std::optional<PathProperties> out;
  walk_many(st, std::span(&q, 1), std::span(&out, 1));
  return out;
}

void PathIndex::walk_many(const FabricState& st, std::span<const PathQuery> queries,
                          std::span<std::optional<PathProperties>> out) const {
  const routing::Topology& t = *topo_;
  const routing::LidMap& lids = *st.lids;
  const std::vector<routing::Lft>& lfts = st.routes->lfts;
  const auto general = [&](const PathQuery& q) {
    auto r = path_properties(st, q.source, q.destination, q.dlid);
    return r.ok() ? std::optional<PathProperties>(*r) : std::nullopt;
  };
  // A walk in flight. Its PathProperties is out[job]; mtu and speed are the
  // least seen so far (0 = none yet).
  struct Lane {
    std::size_t job;
    std::uint32_t sw;
    PortRef owner;
    std::uint8_t mtu;
    std::uint16_t speed;
    std::uint32_t first_sw = kNoSwitch.value;  // the source's switch
  };
  const auto cross = [](Lane& l, std::uint8_t link_mtu, std::uint16_t link_gbps10) {
    if (link_mtu != 0) l.mtu = l.mtu == 0 ? link_mtu : std::min(l.mtu, link_mtu);
    l.speed = l.speed == 0 ? link_gbps10 : std::min(l.speed, link_gbps10);
  };
  const auto finish = [&](const Lane& l) {
    PathProperties& p = *out[l.job];
    p.mtu = l.mtu == 0 ? kMtu2048 : l.mtu;
    const std::uint16_t speed =
        l.speed != 0 ? l.speed : link_gbps10(t.port(p.source.node, p.source.port));
    p.rate = rate_code(speed);
    p.gbps10 = gbps10_of(p.rate);
    p.sl = l.first_sw == kNoSwitch.value ? st.routes->layer(p.dlid)
                                         : st.routes->path_layer(l.first_sw, p.dlid);
  };
  // The walk's first step, up to the first switch: nullopt when the walk
  // ended there (out[job] holds its answer), else the lane to continue.
  const auto start = [&](std::size_t job) -> std::optional<Lane> {
    const PathQuery& q = queries[job];
    out[job].reset();
    const PortRef owner = lids.owner_of(q.dlid);
    if (!packed_) {
      out[job] = general(q);
      return std::nullopt;
    }
    if (!owner.node.valid() || q.source.node.value >= t.num_nodes() ||
        lfts.size() != first_.size()) {
      return std::nullopt;
    }
    Lane l{job, 0, owner, 0, 0, kNoSwitch.value};
    const routing::Node& src = t.node(q.source.node);
    if (src.type == routing::NodeType::kSwitch) {
      if (q.source.port != 0) return std::nullopt;
      l.sw = src.switch_index.value;
      l.first_sw = l.sw;
    } else {
      if (q.source.port == 0 || q.source.port > src.num_ports) return std::nullopt;
      if (owner == q.source) {  // a CA port's path to itself: no cable crossed
        out[job] = PathProperties{q.source, q.destination,
                                  lids.base_lid(t, q.source.node, q.source.port), q.dlid};
        finish(l);
        return std::nullopt;
      }
      const routing::Port& o = t.port(q.source.node, q.source.port);
      if (!o.connected() || o.state == routing::PortState::kDown) return std::nullopt;
      const routing::Node& far = t.node(o.remote_node);
      if (far.type != routing::NodeType::kSwitch) {  // a CA cabled to a CA
        out[job] = general(q);
        return std::nullopt;
      }
      const routing::Port& in = t.port(o.remote_node, o.remote_port);
      std::uint8_t link_mtu = 0;
      for (const routing::Port* end : {&o, &in}) {
        if (end->mtu_cap != 0) {
          link_mtu = link_mtu == 0 ? end->mtu_cap : std::min(link_mtu, end->mtu_cap);
        }
      }
      cross(l, link_mtu, std::min(link_gbps10(o), link_gbps10(in)));
      l.sw = far.switch_index.value;
      l.first_sw = l.sw;
    }
    out[job] = PathProperties{q.source, q.destination,
                              lids.base_lid(t, q.source.node, q.source.port), q.dlid};
    return l;
  };
  // One switch of a walk, as trace_path: at most 64 switches (a forwarding
  // loop reaches the bound too); port 0 delivers at a switch that owns the
  // LID; a CA or router port delivers when it is the owner. True when the
  // walk has ended (out[job] reset when it found no path).
  const auto step = [&](Lane& l) {
    PathProperties& p = *out[l.job];
    const Lid dlid = queries[l.job].dlid;
    const auto fail = [&] {
      out[l.job].reset();
      return true;
    };
    if (p.switch_hops == 64) return fail();
    ++p.switch_hops;
    const std::uint8_t port = lfts[l.sw].get(dlid);
    if (port == 0) {
      if (!(l.owner == PortRef{t.switch_node(SwitchIndex{l.sw}), 0})) return fail();
      finish(l);
      return true;
    }
    if (port > ports_[l.sw]) return fail();  // the drop port (255) included
    const std::uint32_t at = first_[l.sw] + port - 1;
    const std::uint32_t link = links_[at];
    const std::uint32_t next = next_of(link);
    if (next == kDead) return fail();
    cross(l, mtu_of(link), gbps10_of_link(link));
    if (next == kEndport) {
      if (t.port_index(l.owner.node, l.owner.port) != far_port_[at]) return fail();
      finish(l);
      return true;
    }
    l.sw = next;
    return false;
  };

  // Up to kLanes walks advance together, one switch each per round, and
  // every round first asks for all their LFT entries: the reads (one cache
  // miss each in a large fabric's tables) overlap instead of queueing.
  constexpr std::size_t kLanes = 16;
  std::array<Lane, kLanes> lanes{};
  std::size_t active = 0, next_job = 0;
  for (;;) {
    while (active < kLanes && next_job < queries.size()) {
      if (auto l = start(next_job++)) lanes[active++] = *l;
    }
    if (active == 0) return;
    for (std::size_t i = 0; i < active; ++i) {
      const routing::Lft& lft = lfts[lanes[i].sw];
      const std::uint32_t dlid = queries[lanes[i].job].dlid.value;
      if (dlid < lft.size()) __builtin_prefetch(lft.data() + dlid);
    }
    for (std::size_t i = active; i-- > 0;) {
      if (step(lanes[i])) lanes[i] = lanes[--active];
    }
  }
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

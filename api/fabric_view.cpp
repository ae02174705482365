#include "api/fabric_view.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "routing/text.hpp"

namespace subnetd::api {

using routing::NodeType;
using routing::PortState;

FabricView::FabricView(std::shared_ptr<const state::FabricState> state) : state_(std::move(state)) {
  if (!has_fabric()) return;
  const routing::Topology& t = topo();
  const auto n_nodes = static_cast<std::uint32_t>(t.num_nodes());
  by_guid_.reserve(n_nodes);
  node_guid_.reserve(n_nodes);
  for (std::uint32_t i = 0; i < n_nodes; ++i) {
    const NodeId id{i};
    const routing::Node& node = t.node(id);
    by_guid_.push_back(id);
    node_guid_.emplace(node.guid.value, id);
    names_[node.description].push_back(id);
    if (node.type != NodeType::kSwitch) {
      for (unsigned p = 1; p <= node.num_ports; ++p) {
        port_guid_.emplace(t.port(id, static_cast<PortNum>(p)).guid.value,
                           PortRef{id, static_cast<PortNum>(p)});
      }
    }
  }
  std::sort(by_guid_.begin(), by_guid_.end(),
            [&t](NodeId a, NodeId b) { return t.node(a).guid < t.node(b).guid; });

  for (NodeId id : by_guid_) {
    const routing::Node& node = t.node(id);
    for (unsigned p = 1; p <= node.num_ports; ++p) {
      const routing::Port& port = t.port(id, static_cast<PortNum>(p));
      if (!port.connected()) continue;
      const PortRef here{id, static_cast<PortNum>(p)};
      const PortRef there{port.remote_node, port.remote_port};
      const Guid gh = node.guid;
      const Guid gt = t.node(there.node).guid;
      if (gh < gt || (gh == gt && here.port < there.port)) links_.push_back({here, there});
    }
  }

  const routing::LidMap& l = lids();
  for (const PortRef& owner : l.owner) lids_in_use_ += owner.node.valid() ? 1U : 0U;
}

std::optional<NodeId> FabricView::node_by_guid(Guid g) const {
  auto it = node_guid_.find(g.value);
  if (it == node_guid_.end()) return std::nullopt;
  return it->second;
}

std::optional<PortRef> FabricView::port_by_guid(Guid g) const {
  auto it = port_guid_.find(g.value);
  if (it == port_guid_.end()) return std::nullopt;
  return it->second;
}

Result<FabricView::Target> FabricView::resolve(const v1::NodeRef& ref) const {
  switch (ref.ref_case()) {
    case v1::NodeRef::kGuid: {
      if (ref.guid() == 0) return Error{Errc::kInvalidArgument, "GUID 0 is not a GUID"};
      if (auto n = node_by_guid(Guid{ref.guid()})) return Target{*n, std::nullopt};
      if (auto p = port_by_guid(Guid{ref.guid()})) return Target{p->node, p->port};
      return Error{Errc::kNotFound, fmt::format("no node or port has GUID {:#018x}", ref.guid())};
    }
    case v1::NodeRef::kLid: {
      if (ref.lid() == 0) return Error{Errc::kInvalidArgument, "LID 0 is not a LID"};
      const PortRef owner = lids().owner_of(Lid{ref.lid()});
      if (!owner.node.valid()) {
        return Error{Errc::kNotFound, fmt::format("LID {} is not assigned", ref.lid())};
      }
      return Target{owner.node, owner.port};
    }
    case v1::NodeRef::kName: {
      if (ref.name().empty()) return Error{Errc::kInvalidArgument, "empty name"};
      auto it = names_.find(ref.name());
      if (it == names_.end()) {
        return Error{Errc::kNotFound,
                     fmt::format("no node is named \"{}\"", printable(ref.name()))};
      }
      if (it->second.size() > 1) {
        std::string guids;
        for (NodeId n : it->second) {
          guids += fmt::format("{}{:#018x}", guids.empty() ? "" : ", ", topo().node(n).guid.value);
        }
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} nodes are named \"{}\" ({}); name one by GUID",
                                 it->second.size(), printable(ref.name()), guids)};
      }
      return Target{it->second.front(), std::nullopt};
    }
    case v1::NodeRef::REF_NOT_SET:
      break;
  }
  return Error{Errc::kInvalidArgument, "empty selector: set guid, lid or name"};
}

std::optional<PortNum> FabricView::default_port(NodeId node) const {
  const routing::Node& n = topo().node(node);
  if (n.type == NodeType::kSwitch) return PortNum{0};
  for (unsigned p = 1; p <= n.num_ports; ++p) {
    if (topo().port(node, static_cast<PortNum>(p)).state == PortState::kActive) {
      return static_cast<PortNum>(p);
    }
  }
  for (unsigned p = 1; p <= n.num_ports; ++p) {
    const routing::Port& port = topo().port(node, static_cast<PortNum>(p));
    if (port.connected() && port.state != PortState::kDown) return static_cast<PortNum>(p);
  }
  return std::nullopt;
}

Lid FabricView::port_lid(NodeId node, PortNum port) const {
  const routing::Node& n = topo().node(node);
  if (n.type == NodeType::kSwitch) port = 0;
  if (port > n.num_ports) return Lid{};
  const std::uint32_t idx = topo().port_index(node, port);
  return idx < lids().base_by_port.size() ? lids().base_by_port[idx] : Lid{};
}

Lid FabricView::node_lid(NodeId node) const {
  const auto p = default_port(node);
  return p ? port_lid(node, *p) : Lid{};
}

std::string FabricView::name_of(Guid node_guid) const {
  if (!has_fabric()) return {};
  auto n = node_by_guid(node_guid);
  return n ? topo().node(*n).description : std::string{};
}

void FabricView::fill_node(NodeId id, v1::Node* out) const {
  const routing::Node& n = topo().node(id);
  out->set_guid(n.guid.value);
  out->set_type(to_proto(n.type));
  out->set_name(n.description);
  out->set_system_image_guid(n.system_guid.value);
  out->set_num_ports(n.num_ports);
  out->set_lid(node_lid(id).value);
}

void FabricView::fill_link_end(PortRef end, v1::LinkEnd* out) const {
  const routing::Node& n = topo().node(end.node);
  out->set_node_guid(n.guid.value);
  out->set_node_name(n.description);
  out->set_node_type(to_proto(n.type));
  out->set_port(end.port);
  out->set_port_guid(topo().port(end).guid.value);
}

void FabricView::fill_port(NodeId id, PortNum p, v1::Port* out) const {
  const routing::Node& n = topo().node(id);
  const routing::Port& port = topo().port(id, p);
  out->set_number(p);
  out->set_guid(port.guid.value);
  const bool has_lid = n.type == NodeType::kSwitch ? p == 0 : p != 0;
  if (has_lid) {
    out->set_lid(port_lid(id, p).value);
    out->set_lmc(n.type == NodeType::kSwitch ? 0 : lids().lmc);
  }
  out->set_state(to_proto(port.state));
  out->set_phys_state(port.phys_state);
  out->set_width_lanes(width_lanes(port.width_active));
  out->set_speed(link_speed(port.speed_active));
  // IBA PortPhysicalState 3 (Disabled) is what an SM's PortInfo Set leaves
  // on a port it disabled; the snapshot carries no separate admin flag.
  out->set_admin_disabled(port.phys_state == 3);
  out->set_connected(port.connected());
  if (port.connected()) fill_link_end({port.remote_node, port.remote_port}, out->mutable_remote());
}

void FabricView::fill_link(PortRef first, PortRef second, v1::Link* out) const {
  fill_link_end(first, out->mutable_a());
  fill_link_end(second, out->mutable_b());
  const routing::Port& a = topo().port(first);
  const routing::Port& b = topo().port(second);
  out->set_state(to_proto(std::min(a.state, b.state)));
  out->set_width_lanes(width_lanes(a.width_active));
  out->set_speed(link_speed(a.speed_active));
}

std::shared_ptr<const FabricView> ViewCache::current() {
  auto state = publisher_.current();
  {
    std::lock_guard lock(mu_);
    if (view_ && &view_->state() == state.get()) return view_;
  }
  // Built outside the lock: a large fabric takes a while and other readers of
  // the cached generation should not wait for it.
  auto fresh = std::make_shared<const FabricView>(std::move(state));
  std::lock_guard lock(mu_);
  if (!view_ || view_->state().generation <= fresh->state().generation) view_ = fresh;
  return fresh;
}

v1::NodeType to_proto(NodeType t) {
  switch (t) {
    case NodeType::kCa:
      return v1::NODE_TYPE_CA;
    case NodeType::kSwitch:
      return v1::NODE_TYPE_SWITCH;
    case NodeType::kRouter:
      return v1::NODE_TYPE_ROUTER;
  }
  return v1::NODE_TYPE_UNSPECIFIED;
}

v1::PortState to_proto(PortState s) {
  switch (s) {
    case PortState::kNoChange:
      return v1::PORT_STATE_UNSPECIFIED;
    case PortState::kDown:
      return v1::PORT_STATE_DOWN;
    case PortState::kInit:
      return v1::PORT_STATE_INIT;
    case PortState::kArmed:
      return v1::PORT_STATE_ARMED;
    case PortState::kActive:
      return v1::PORT_STATE_ACTIVE;
  }
  return v1::PORT_STATE_UNSPECIFIED;
}

v1::SmState to_proto(state::SmState s) {
  switch (s) {
    case state::SmState::kStarting:
    case state::SmState::kDiscovering:
      return v1::SM_STATE_DISCOVERING;
    case state::SmState::kMaster:
      return v1::SM_STATE_MASTER;
    case state::SmState::kFailed:
    case state::SmState::kNotActive:
      return v1::SM_STATE_NOT_ACTIVE;
    case state::SmState::kStandby:
      return v1::SM_STATE_STANDBY;
  }
  return v1::SM_STATE_UNSPECIFIED;
}

v1::SmState sm_state_to_proto(std::uint8_t ib_state) {
  switch (ib_state) {
    case 0:
      return v1::SM_STATE_NOT_ACTIVE;
    case 1:
      return v1::SM_STATE_DISCOVERING;
    case 2:
      return v1::SM_STATE_STANDBY;
    case 3:
      return v1::SM_STATE_MASTER;
    default:
      return v1::SM_STATE_UNSPECIFIED;
  }
}

v1::EventKind to_proto(state::EventKind k) {
  using K = state::EventKind;
  switch (k) {
    case K::kLinkDown:
      return v1::EVENT_KIND_LINK_DOWN;
    case K::kLinkUp:
      return v1::EVENT_KIND_LINK_UP;
    case K::kReroute:
      return v1::EVENT_KIND_REROUTE;
    case K::kSweep:
      return v1::EVENT_KIND_SWEEP;
    case K::kConfigReload:
      return v1::EVENT_KIND_CONFIG_RELOAD;
    case K::kError:
      return v1::EVENT_KIND_ERROR;
    case K::kPortDisable:
      return v1::EVENT_KIND_PORT_DISABLE;
    case K::kPortEnable:
      return v1::EVENT_KIND_PORT_ENABLE;
    case K::kSwitchDown:
      return v1::EVENT_KIND_SWITCH_DOWN;
    case K::kSwitchUp:
      return v1::EVENT_KIND_SWITCH_UP;
    case K::kSmState:
      return v1::EVENT_KIND_SM_STATE;
    case K::kFailover:
      return v1::EVENT_KIND_FAILOVER;
    case K::kMulticast:
      return v1::EVENT_KIND_MULTICAST;
    case K::kCabling:
      return v1::EVENT_KIND_CABLING;
    case K::kCounters:
      return v1::EVENT_KIND_COUNTERS;
    case K::kHealth:
      return v1::EVENT_KIND_PORT_HEALTH;
  }
  return v1::EVENT_KIND_UNSPECIFIED;
}

std::optional<state::EventKind> from_proto(v1::EventKind k) {
  using K = state::EventKind;
  switch (k) {
    case v1::EVENT_KIND_LINK_DOWN:
      return K::kLinkDown;
    case v1::EVENT_KIND_LINK_UP:
      return K::kLinkUp;
    case v1::EVENT_KIND_REROUTE:
      return K::kReroute;
    case v1::EVENT_KIND_SWEEP:
      return K::kSweep;
    case v1::EVENT_KIND_CONFIG_RELOAD:
      return K::kConfigReload;
    case v1::EVENT_KIND_ERROR:
      return K::kError;
    case v1::EVENT_KIND_PORT_DISABLE:
      return K::kPortDisable;
    case v1::EVENT_KIND_PORT_ENABLE:
      return K::kPortEnable;
    case v1::EVENT_KIND_SWITCH_DOWN:
      return K::kSwitchDown;
    case v1::EVENT_KIND_SWITCH_UP:
      return K::kSwitchUp;
    case v1::EVENT_KIND_SM_STATE:
      return K::kSmState;
    case v1::EVENT_KIND_MULTICAST:
      return K::kMulticast;
    case v1::EVENT_KIND_FAILOVER:
      return K::kFailover;
    case v1::EVENT_KIND_CABLING:
      return K::kCabling;
    case v1::EVENT_KIND_COUNTERS:
      return K::kCounters;
    case v1::EVENT_KIND_PORT_HEALTH:
      return K::kHealth;
    default:
      return std::nullopt;
  }
}

std::uint32_t width_lanes(std::uint8_t width_active) {
  switch (width_active) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

v1::LinkSpeed link_speed(std::uint8_t speed_active) {
  switch (speed_active) {
    case 1:
      return v1::LINK_SPEED_SDR;
    case 2:
      return v1::LINK_SPEED_DDR;
    case 4:
      return v1::LINK_SPEED_QDR;
    default:
      return v1::LINK_SPEED_UNSPECIFIED;
  }
}

}  // namespace subnetd::api

// subnet.v1.Simulator: operator control of the embedded simulated fabric.
// SimControl is thread-safe and quick (the simulator's mutex and its due
// events; it does not wait for the SM), so the calls run on gRPC's thread.
// What the answers say about the fabric before the change comes from the
// daemon's snapshots (see the proto): the current one, and for what the SM
// no longer sees, what earlier ones showed (ServiceCore::remember).

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/service_internal.hpp"
#include "routing/text.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

namespace {

Status no_simulator() {
  return Status(StatusCode::FAILED_PRECONDITION,
                "fabric.transport is not sim: there is no simulated fabric to control");
}

// A node for the simulator: by GUID directly (the simulator knows nodes the
// SM no longer sees), by LID through the snapshot, by name through the
// snapshot or any earlier one.
Result<Guid> sim_node_guid(ServiceCore& core, const FabricView& view, const v1::NodeRef& ref) {
  switch (ref.ref_case()) {
    case v1::NodeRef::kGuid: {
      if (ref.guid() == 0) return Error{Errc::kInvalidArgument, "node: GUID 0 is not a GUID"};
      if (view.has_fabric()) {
        if (auto p = view.port_by_guid(Guid{ref.guid()})) return view.topo().node(p->node).guid;
      }
      return Guid{ref.guid()};
    }
    case v1::NodeRef::kName:
      if (auto g = core.remembered_guid(ref.name())) return *g;
      return Error{Errc::kNotFound,
                   fmt::format("node: no node is named \"{}\"", printable(ref.name()))};
    case v1::NodeRef::kLid:
    case v1::NodeRef::REF_NOT_SET:
      break;
  }
  if (!view.has_fabric()) {
    return Error{Errc::kUnsupported, "node: no sweep has finished yet; name the node by GUID"};
  }
  auto t = view.resolve(ref);
  if (!t.ok()) {
    Error e = t.error();
    e.message = "node: " + e.message;
    return e;
  }
  return view.topo().node(t->node).guid;
}

}  // namespace

grpc::ServerUnaryReactor* SimulatorService::SetLinkState(grpc::CallbackServerContext* ctx,
                                                         const v1::SetLinkStateRequest* req,
                                                         v1::SetLinkStateResponse* resp) {
  const Caller caller = identify(ctx, trust_, core_, "Simulator.SetLinkState");
  if (!caller.trusted) return reply(ctx, caller.refusal);
  if (core_.deps().sim == nullptr) return reply(ctx, no_simulator());
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  if (req->port() == 0 || req->port() > 254) {
    return reply(ctx, invalid(fmt::format("port: {} is not an external port number", req->port())));
  }
  if (req->state() != v1::SIM_STATE_UP && req->state() != v1::SIM_STATE_DOWN) {
    return reply(ctx, invalid("state: required: SIM_STATE_UP or SIM_STATE_DOWN"));
  }
  auto view = core_.view();
  core_.remember(*view);
  auto guid = sim_node_guid(core_, *view, req->node());
  if (!guid.ok()) return reply(ctx, to_status(guid.error()));
  const auto port = static_cast<PortNum>(req->port());
  const bool up = req->state() == v1::SIM_STATE_UP;

  // What the SM's view showed before the change (see the proto comment).
  // The far end: from this snapshot when it shows the cable, else from the
  // last one that did (a failed cable is out of the published topology).
  bool was_up = false;
  bool peer_known = false;
  if (view->has_fabric()) {
    if (auto n = view->node_by_guid(*guid); n && port <= view->topo().node(*n).num_ports) {
      const routing::Port& p = view->topo().port(*n, port);
      was_up = p.connected() && p.state != routing::PortState::kDown;
      if (p.connected()) {
        view->fill_link_end({p.remote_node, p.remote_port}, resp->mutable_peer());
        peer_known = true;
      }
    }
  }
  if (!peer_known) {
    if (auto far = core_.remembered_peer(*guid, port)) *resp->mutable_peer() = std::move(*far);
  }
  spdlog::info("gRPC Simulator.SetLinkState {:#018x} port {} {} by {}", guid->value, port,
               up ? "up" : "down", caller.who());
  if (Result<void> r = core_.deps().sim->set_link_state(*guid, port, up); !r.ok()) {
    resp->clear_peer();
    return reply(ctx, to_status(r.error()));
  }
  resp->set_changed(was_up != up);
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SimulatorService::SetSwitchState(grpc::CallbackServerContext* ctx,
                                                           const v1::SetSwitchStateRequest* req,
                                                           v1::SetSwitchStateResponse* resp) {
  const Caller caller = identify(ctx, trust_, core_, "Simulator.SetSwitchState");
  if (!caller.trusted) return reply(ctx, caller.refusal);
  if (core_.deps().sim == nullptr) return reply(ctx, no_simulator());
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  if (req->state() != v1::SIM_STATE_UP && req->state() != v1::SIM_STATE_DOWN) {
    return reply(ctx, invalid("state: required: SIM_STATE_UP or SIM_STATE_DOWN"));
  }
  auto view = core_.view();
  core_.remember(*view);
  auto guid = sim_node_guid(core_, *view, req->node());
  if (!guid.ok()) return reply(ctx, to_status(guid.error()));
  const bool up = req->state() == v1::SIM_STATE_UP;
  bool in_view = false;
  std::uint32_t links = 0;
  if (view->has_fabric()) {
    if (auto n = view->node_by_guid(*guid)) {
      const routing::Node& node = view->topo().node(*n);
      if (node.type != routing::NodeType::kSwitch) {
        return reply(ctx, invalid(fmt::format("node: {} is not a switch", view->topo().label(*n))));
      }
      in_view = true;
      for (unsigned p = 1; p <= node.num_ports; ++p) {
        links += view->topo().port(*n, static_cast<PortNum>(p)).connected() ? 1U : 0U;
      }
    }
  }
  spdlog::info("gRPC Simulator.SetSwitchState {:#018x} {} by {}", guid->value, up ? "up" : "down",
               caller.who());
  if (Result<void> r = core_.deps().sim->set_switch_state(*guid, up); !r.ok()) {
    return reply(ctx, to_status(r.error()));
  }
  // A switch the SM sees is up; one it does not see is down (or unknown).
  resp->set_changed(in_view != up);
  resp->set_links_affected(links);
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SimulatorService::InjectPortErrors(
    grpc::CallbackServerContext* ctx, const v1::InjectPortErrorsRequest* req,
    v1::InjectPortErrorsResponse* /*resp*/) {
  const Caller caller = identify(ctx, trust_, core_, "Simulator.InjectPortErrors");
  if (!caller.trusted) return reply(ctx, caller.refusal);
  if (core_.deps().sim == nullptr) return reply(ctx, no_simulator());
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  if (req->port() == 0 || req->port() > 254) {
    return reply(ctx, invalid(fmt::format("port: {} is not an external port number", req->port())));
  }
  auto view = core_.view();
  core_.remember(*view);
  auto guid = sim_node_guid(core_, *view, req->node());
  if (!guid.ok()) return reply(ctx, to_status(guid.error()));
  state::PortErrorInjection e;
  e.symbol_errors = req->symbol_errors();
  e.link_recovers = req->link_error_recoveries();
  e.link_downed = req->link_downed();
  e.rcv_errors = req->rcv_errors();
  e.xmit_discards = req->xmit_discards();
  e.link_integrity = req->local_link_integrity_errors();
  e.buffer_overrun = req->excessive_buffer_overruns();
  e.xmit_wait = req->xmit_wait();
  spdlog::info("gRPC Simulator.InjectPortErrors {:#018x} port {} by {}", guid->value, req->port(),
               caller.who());
  if (Result<void> r =
          core_.deps().sim->inject_port_errors(*guid, static_cast<PortNum>(req->port()), e);
      !r.ok()) {
    return reply(ctx, to_status(r.error()));
  }
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SimulatorService::GetStats(grpc::CallbackServerContext* ctx,
                                                     const v1::GetStatsRequest*,
                                                     v1::GetStatsResponse* resp) {
  if (core_.deps().sim == nullptr) return reply(ctx, no_simulator());
  const state::SimCounters c = core_.deps().sim->counters();
  resp->set_smps_handled(c.smps_handled);
  resp->set_drops_total(c.smps_dropped);
  resp->set_traps_sent(c.traps_sent);
  resp->set_lid_routed_drops(c.lid_routed_dropped);
  return reply(ctx, Status::OK);
}

}  // namespace subnetd::api

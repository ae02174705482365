// subnet.v1.SubnetManager's reads: answered on gRPC's callback threads from
// the published snapshot's FabricView, never waiting for the SM.

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "api/service_internal.hpp"
#include "routing/path_trace.hpp"
#include "state/path_record.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

Result<std::uint32_t> page_size(std::uint32_t requested) {
  constexpr std::uint32_t kDefaultPageSize = 100;
  constexpr std::uint32_t kMaxPageSize = 1000;
  if (requested == 0) return kDefaultPageSize;
  if (requested > kMaxPageSize) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("page_size: {} is above the maximum {}", requested, kMaxPageSize)};
  }
  return requested;
}

namespace {

bool parse_hex(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

// Page tokens: "n1.<guid hex>" (ListNodes) and "l1.<guid hex>.<port hex>"
// (ListLinks). Opaque to clients; the version tag lets the format change.
std::string node_token(Guid g) {
  return fmt::format("n1.{:016x}", g.value);
}
std::string link_token(Guid g, PortNum p) {
  return fmt::format("l1.{:016x}.{:02x}", g.value, p);
}

Result<Guid> parse_node_token(std::string_view t) {
  std::uint64_t g = 0;
  if (t.size() != 19 || t.substr(0, 3) != "n1." || !parse_hex(t.substr(3), g)) {
    return Error{Errc::kInvalidArgument, "page_token: not a token ListNodes returned"};
  }
  return Guid{g};
}

Result<std::pair<Guid, PortNum>> parse_link_token(std::string_view t) {
  std::uint64_t g = 0, p = 0;
  if (t.size() != 22 || t.substr(0, 3) != "l1." || t[19] != '.' || !parse_hex(t.substr(3, 16), g) ||
      !parse_hex(t.substr(20), p)) {
    return Error{Errc::kInvalidArgument, "page_token: not a token ListLinks returned"};
  }
  return std::pair{Guid{g}, static_cast<PortNum>(p)};
}

// The port a reference names for a path: a switch's port 0; a CA's port the
// reference names, else NodeRef.port, else the node's default port.
Result<PortRef> pick_port(const FabricView& view, const v1::NodeRef& ref, std::string_view field) {
  const routing::Topology& t = view.topo();
  auto target = view.resolve(ref);
  if (!target.ok()) {
    Error e = target.error();
    e.message = fmt::format("{}: {}", field, e.message);
    return e;
  }
  const NodeId n = target->node;
  const routing::Node& node = t.node(n);
  if (node.type == routing::NodeType::kSwitch) return PortRef{n, 0};
  if (target->port) return PortRef{n, *target->port};
  if (ref.port() != 0) {
    if (ref.port() > node.num_ports) {
      return Error{Errc::kInvalidArgument, fmt::format("{}.port: {} has ports 1..{}, not {}", field,
                                                       t.label(n), node.num_ports, ref.port())};
    }
    return PortRef{n, static_cast<PortNum>(ref.port())};
  }
  auto p = view.default_port(n);
  if (!p) {
    return Error{Errc::kUnreachable,
                 fmt::format("{}: {} has no cabled port that is up", field, t.label(n))};
  }
  return PortRef{n, *p};
}

// The LID a path to `dst` follows: the one the reference names, else the
// port's base LID; invalid when the port has none.
Lid destination_lid(const FabricView& view, const v1::NodeRef& ref, PortRef dst) {
  return ref.ref_case() == v1::NodeRef::kLid ? Lid{ref.lid()} : view.port_lid(dst.node, dst.port);
}

// The two ends of a path question (TracePath, GetPathRecord): the ports
// the references name and the DLID to follow; not OK (the status to
// answer) when the question or the snapshot cannot give them.
struct PathEnds {
  PortRef src, dst;
  Lid dlid;
};
template <class Req>
Status path_ends(const Req& req, const FabricView& view, PathEnds& out) {
  if (!req.has_source()) return invalid("source: required");
  if (!req.has_destination()) return invalid("destination: required");
  if (!view.has_fabric()) return no_fabric(view);
  if (!view.has_routes()) return no_routes();
  auto src = pick_port(view, req.source(), "source");
  if (!src.ok()) return to_status(src.error());
  auto dst = pick_port(view, req.destination(), "destination");
  if (!dst.ok()) return to_status(dst.error());
  out = {*src, *dst, destination_lid(view, req.destination(), *dst)};
  if (!out.dlid.valid()) {
    return Status(
        StatusCode::FAILED_PRECONDITION,
        fmt::format("destination: {} port {} has no LID", view.topo().label(dst->node), dst->port));
  }
  return Status::OK;
}

}  // namespace

grpc::ServerUnaryReactor* SubnetManagerService::GetStatus(grpc::CallbackServerContext* ctx,
                                                          const v1::GetStatusRequest*,
                                                          v1::GetStatusResponse* resp) {
  auto view = core_.view();
  const state::FabricState& s = view->state();
  const auto us = [](std::chrono::nanoseconds d) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(d).count());
  };
  resp->set_state(to_proto(s.state));
  resp->set_generation(s.generation);
  resp->set_version(core_.deps().version);
  *resp->mutable_started_at() = to_timestamp(core_.deps().started_at);
  resp->set_message(s.last_error);
  if (view->has_fabric()) {
    const routing::Topology& t = view->topo();
    std::uint32_t routers = 0;
    for (const routing::Node& n : t.nodes()) routers += n.type == routing::NodeType::kRouter;
    resp->set_nodes(static_cast<std::uint32_t>(t.num_nodes()));
    resp->set_switches(static_cast<std::uint32_t>(t.num_switches()));
    resp->set_routers(routers);
    resp->set_cas(static_cast<std::uint32_t>(t.num_nodes() - t.num_switches()) - routers);
    std::uint32_t ports = 0;
    for (const routing::Node& n : t.nodes()) ports += n.num_ports;
    resp->set_ports(ports);
    resp->set_links(static_cast<std::uint32_t>(view->links().size()));
    resp->set_lids(view->lids_in_use());
    resp->set_lid_bits(static_cast<std::uint32_t>(view->lids().space.bits));
    resp->set_lmc(view->lids().lmc);
    if (s.sm_node.valid() && s.sm_node.value < t.num_nodes() &&
        s.sm_port <= t.node(s.sm_node).num_ports) {
      resp->set_sm_port_guid(t.port(s.sm_node, s.sm_port).guid.value);
    }
    fill_sweep_summary(*view, resp->mutable_last_sweep());
  }
  resp->set_routing_engine(s.engine);
  if (s.routes != nullptr) {
    resp->set_routing_vls(s.routes->num_vls);
    for (const std::string& note : s.routes->notes) resp->add_routing_notes(note);
  }
  resp->set_sm_lid(s.sm_lid.value);
  resp->set_last_routing_us(us(s.last_bringup.route));
  resp->set_last_reroute_us(us(s.last_reroute));
  if (s.verification.ok) {
    resp->set_verdict(v1::VERDICT_OK);
  } else if (!s.verification.message.empty()) {
    resp->set_verdict(v1::VERDICT_FAILED);
  }
  resp->set_verdict_message(s.verification.message);
  resp->set_last_event_id(core_.deps().events->last_id());
  resp->set_sweeps(s.sweeps);
  resp->set_reroutes(s.reroutes);
  resp->set_sm_priority(s.sm_role.priority);
  resp->set_master_guid(s.sm_role.master_guid.value);
  resp->set_master_lid(s.sm_role.master_lid.value);
  for (const state::SmPeerView& p : s.sm_role.peers) {
    v1::SmPeer* out = resp->add_sm_peers();
    out->set_guid(p.guid.value);
    out->set_lid(p.lid.value);
    out->set_priority(p.priority);
    out->set_state(sm_state_to_proto(p.ib_state));
    *out->mutable_last_contact() = to_timestamp(p.last_contact);
  }
  if (const state::SaInfo* sa = core_.deps().sa) {
    const state::SaStats st = sa->sa_stats();
    v1::SaStatus* out = resp->mutable_sa();
    out->set_requests(st.requests);
    out->set_errors(st.errors);
    out->set_records(st.records);
    out->set_malformed(st.malformed);
    out->set_ignored(st.ignored);
    out->set_subscriptions(st.subscriptions);
    out->set_reports(st.reports);
    out->set_report_acks(st.report_acks);
  }
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SubnetManagerService::ListNodes(grpc::CallbackServerContext* ctx,
                                                          const v1::ListNodesRequest* req,
                                                          v1::ListNodesResponse* resp) {
  auto size = page_size(req->page_size());
  if (!size.ok()) return reply(ctx, to_status(size.error()));
  if (!v1::NodeType_IsValid(req->type())) {
    return reply(ctx,
                 invalid(fmt::format("type: {} is not a NodeType", static_cast<int>(req->type()))));
  }
  std::optional<Guid> after;
  if (!req->page_token().empty()) {
    auto t = parse_node_token(req->page_token());
    if (!t.ok()) return reply(ctx, to_status(t.error()));
    after = *t;
  }
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  const routing::Topology& t = view->topo();
  std::uint32_t total = 0;
  bool more = false;
  for (NodeId id : view->nodes_by_guid()) {
    const routing::Node& n = t.node(id);
    if (req->type() != v1::NODE_TYPE_UNSPECIFIED && to_proto(n.type) != req->type()) continue;
    if (!req->name_contains().empty() &&
        n.description.find(req->name_contains()) == std::string::npos) {
      continue;
    }
    ++total;
    if (after && n.guid <= *after) continue;
    if (static_cast<std::uint32_t>(resp->nodes_size()) < *size) {
      view->fill_node(id, resp->add_nodes());
    } else {
      more = true;
    }
  }
  if (more) resp->set_next_page_token(node_token(Guid{resp->nodes().rbegin()->guid()}));
  resp->set_total_size(total);
  resp->set_generation(view->state().generation);
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SubnetManagerService::GetNode(grpc::CallbackServerContext* ctx,
                                                        const v1::GetNodeRequest* req,
                                                        v1::GetNodeResponse* resp) {
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  auto target = view->resolve(req->node());
  if (!target.ok()) return reply(ctx, to_status(target.error(), "node"));
  const NodeId id = target->node;
  const routing::Topology& t = view->topo();
  const routing::Node& n = t.node(id);
  view->fill_node(id, resp->mutable_node());
  const unsigned first = n.type == routing::NodeType::kSwitch ? 0 : 1;
  for (unsigned p = first; p <= n.num_ports; ++p) {
    view->fill_port(id, static_cast<PortNum>(p), resp->add_ports());
  }
  for (unsigned p = 1; p <= n.num_ports; ++p) {
    const routing::Port& port = t.port(id, static_cast<PortNum>(p));
    if (!port.connected()) continue;
    view->fill_link({id, static_cast<PortNum>(p)}, {port.remote_node, port.remote_port},
                    resp->add_links());
  }
  resp->set_generation(view->state().generation);
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SubnetManagerService::ListLinks(grpc::CallbackServerContext* ctx,
                                                          const v1::ListLinksRequest* req,
                                                          v1::ListLinksResponse* resp) {
  auto size = page_size(req->page_size());
  if (!size.ok()) return reply(ctx, to_status(size.error()));
  std::optional<std::pair<Guid, PortNum>> after;
  if (!req->page_token().empty()) {
    auto t = parse_link_token(req->page_token());
    if (!t.ok()) return reply(ctx, to_status(t.error()));
    after = *t;
  }
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  std::optional<NodeId> only;
  if (req->has_node()) {
    auto target = view->resolve(req->node());
    if (!target.ok()) return reply(ctx, to_status(target.error(), "node"));
    only = target->node;
  }
  const routing::Topology& t = view->topo();
  std::uint32_t total = 0;
  bool more = false;
  std::pair<Guid, PortNum> last{};
  for (const LinkRef& l : view->links()) {
    if (only && l.a.node != *only && l.b.node != *only) continue;
    ++total;
    const std::pair<Guid, PortNum> key{t.node(l.a.node).guid, l.a.port};
    if (after && key <= *after) continue;
    if (static_cast<std::uint32_t>(resp->links_size()) < *size) {
      view->fill_link(l.a, l.b, resp->add_links());
      last = key;
    } else {
      more = true;
    }
  }
  if (more) resp->set_next_page_token(link_token(last.first, last.second));
  resp->set_total_size(total);
  resp->set_generation(view->state().generation);
  return reply(ctx, Status::OK);
}

namespace {

// Streams one switch's LFT, a block per message, from the view taken when the
// call started (the whole table comes from one snapshot).
class LftWriter final : public grpc::ServerWriteReactor<v1::ForwardingTableBlock> {
 public:
  LftWriter(std::shared_ptr<const FabricView> view, NodeId sw) : view_(std::move(view)), sw_(sw) {
    const routing::Node& n = view_->topo().node(sw_);
    lft_ = &view_->state().routes->lfts[n.switch_index.value];
    top_ = view_->lids().max_lid.value;
    last_block_ = top_ / routing::kLftBlockSize;
    next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(StatusCode::CANCELLED, "the client went away"));
      return;
    }
    next();
  }
  void OnDone() override { delete this; }

 private:
  void next() {
    if (block_ > last_block_) {
      Finish(Status::OK);
      return;
    }
    msg_.Clear();
    msg_.set_switch_guid(view_->topo().node(sw_).guid.value);
    msg_.set_linear_fdb_top(top_);
    msg_.set_block(block_);
    std::string ports(routing::kLftBlockSize, static_cast<char>(routing::kDropPort));
    for (std::uint32_t i = 0; i < routing::kLftBlockSize; ++i) {
      ports[i] = static_cast<char>(lft_->get(Lid{block_ * routing::kLftBlockSize + i}));
    }
    msg_.set_ports(std::move(ports));
    msg_.set_generation(view_->state().generation);
    ++block_;
    StartWrite(&msg_);
  }

  std::shared_ptr<const FabricView> view_;
  NodeId sw_;
  const routing::Lft* lft_ = nullptr;
  std::uint32_t top_ = 0;
  std::uint32_t block_ = 0;
  std::uint32_t last_block_ = 0;
  v1::ForwardingTableBlock msg_;
};

}  // namespace

grpc::ServerWriteReactor<v1::ForwardingTableBlock>* SubnetManagerService::GetForwardingTable(
    grpc::CallbackServerContext*, const v1::GetForwardingTableRequest* req) {
  using W = FailedWrite<v1::ForwardingTableBlock>;
  if (!req->has_node()) return new W(invalid("node: required"));
  auto view = core_.view();
  if (!view->has_fabric()) return new W(no_fabric(*view));
  auto target = view->resolve(req->node());
  if (!target.ok()) return new W(to_status(target.error(), "node"));
  if (view->topo().node(target->node).type != routing::NodeType::kSwitch) {
    return new W(Status(StatusCode::NOT_FOUND,
                        fmt::format("node: {} is not a switch", view->topo().label(target->node))));
  }
  if (!view->has_routes()) return new W(no_routes());
  if (view->topo().node(target->node).switch_index.value >= view->state().routes->lfts.size()) {
    return new W(
        Status(StatusCode::INTERNAL, fmt::format("node: the published routes have no table for {}",
                                                 view->topo().label(target->node))));
  }
  return new LftWriter(std::move(view), target->node);
}

grpc::ServerUnaryReactor* SubnetManagerService::TracePath(grpc::CallbackServerContext* ctx,
                                                          const v1::TracePathRequest* req,
                                                          v1::TracePathResponse* resp) {
  auto view = core_.view();
  PathEnds ends;
  if (Status s = path_ends(*req, *view, ends); !s.ok()) return reply(ctx, s);
  const routing::Topology& t = view->topo();
  const PortRef src = ends.src;
  const Lid dlid = ends.dlid;
  auto trace = routing::trace_path(t, view->lids(), *view->state().routes, src, dlid);
  if (!trace.ok()) return reply(ctx, to_status(trace.error()));

  for (const routing::TraceHop& h : trace->hops) {
    const routing::Node& n = t.node(h.node);
    auto* hop = resp->add_hops();
    hop->set_node_guid(n.guid.value);
    hop->set_node_name(n.description);
    hop->set_node_type(to_proto(n.type));
    hop->set_in_port(h.in_port);
    hop->set_out_port(h.out_port);
    // A switch's LID is its port 0's; a CA's is that of the port the path uses.
    PortNum lid_port = 0;
    if (n.type != routing::NodeType::kSwitch) {
      lid_port = h.in_port != 0 ? h.in_port : h.out_port != 0 ? h.out_port : src.port;
    }
    hop->set_lid(view->port_lid(h.node, lid_port).value);
  }
  resp->set_source_lid(view->port_lid(src.node, src.port).value);
  resp->set_destination_lid(dlid.value);
  resp->set_complete(trace->complete());
  if (!trace->complete()) resp->set_message(trace->status.error().message);
  resp->set_generation(view->state().generation);
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SubnetManagerService::GetPathRecord(grpc::CallbackServerContext* ctx,
                                                              const v1::GetPathRecordRequest* req,
                                                              v1::GetPathRecordResponse* resp) {
  const state::SaInfo* sa = core_.deps().sa;
  if (sa == nullptr) {
    return reply(ctx, Status(StatusCode::UNAVAILABLE, "subnetd runs no Subnet Administration"));
  }
  auto view = core_.view();
  PathEnds ends;
  if (Status s = path_ends(*req, *view, ends); !s.ok()) return reply(ctx, s);
  const routing::Topology& t = view->topo();
  const PortRef src = ends.src;
  const PortRef dst = ends.dst;
  const Lid dlid = ends.dlid;
  if (!view->port_lid(src.node, src.port).valid()) {
    return reply(ctx,
                 Status(StatusCode::FAILED_PRECONDITION,
                        fmt::format("source: {} port {} has no LID", t.label(src.node), src.port)));
  }
  auto path = state::path_properties(view->state(), src, dst, dlid);
  if (!path.ok()) {
    // The tables do not deliver the pair: a fact about the fabric, not a
    // malformed question.
    const bool lost = path.error().code == Errc::kUnreachable ||
                      path.error().code == Errc::kForwardingLoop ||
                      path.error().code == Errc::kOutOfRange;
    if (!lost) return reply(ctx, to_status(path.error()));
    return reply(ctx, Status(StatusCode::FAILED_PRECONDITION,
                             fmt::format("no path from {} to LID {}: {}", t.label(src.node),
                                         dlid.value, path.error().message)));
  }
  v1::PathRecord* r = resp->mutable_path();
  r->set_subnet_prefix(sa->subnet_prefix());
  r->set_source_guid(t.port(src.node, src.port).guid.value);
  r->set_destination_guid(t.port(dst.node, dst.port).guid.value);
  r->set_slid(path->slid.value);
  r->set_dlid(path->dlid.value);
  r->set_sl(path->sl);
  r->set_pkey(path->pkey);
  r->set_mtu(128U << path->mtu);
  r->set_rate_code(path->rate);
  r->set_rate_gbps(path->gbps10 / 10.0);
  r->set_packet_life_time(sa->packet_life_time());
  r->set_reversible(true);
  r->set_switch_hops(path->switch_hops);
  r->set_source_name(t.node(src.node).description);
  r->set_destination_name(t.node(dst.node).description);
  resp->set_generation(view->state().generation);
  return reply(ctx, Status::OK);
}

}  // namespace subnetd::api

// subnet.v1.SubnetManager.GetPortCounters, ListPortErrors, TopPorts: the
// performance manager's published counters (state::CounterBoard). Each
// reads one snapshot; the sorts are O(ports log limit).

#include <fmt/format.h>

#include <algorithm>

#include "api/service_internal.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

namespace {

void fill(const state::CounterSet& c, v1::PortCounters* out) {
  out->set_symbol_errors(c.symbol_errors);
  out->set_link_error_recoveries(c.link_recovers);
  out->set_link_downed(c.link_downed);
  out->set_rcv_errors(c.rcv_errors);
  out->set_rcv_remote_physical_errors(c.rcv_remote_phys);
  out->set_rcv_switch_relay_errors(c.rcv_switch_relay);
  out->set_xmit_discards(c.xmit_discards);
  out->set_xmit_constraint_errors(c.xmit_constraint);
  out->set_rcv_constraint_errors(c.rcv_constraint);
  out->set_local_link_integrity_errors(c.link_integrity);
  out->set_excessive_buffer_overruns(c.buffer_overrun);
  out->set_vl15_dropped(c.vl15_dropped);
  out->set_xmit_wait(c.xmit_wait);
  out->set_xmit_bytes(c.xmit_bytes);
  out->set_rcv_bytes(c.rcv_bytes);
  out->set_xmit_packets(c.xmit_pkts);
  out->set_rcv_packets(c.rcv_pkts);
  out->set_errors(c.errors());
}

void fill(const FabricView& view, const state::PortCounterEntry& e, v1::PortCountersEntry* out) {
  out->set_node_guid(e.node_guid.value);
  out->set_node_name(view.name_of(e.node_guid));
  out->set_port(e.port);
  fill(e.total, out->mutable_total());
  fill(e.delta, out->mutable_delta());
  out->set_interval_s(e.interval_s);
  *out->mutable_read_at() = to_timestamp(e.read_at);
  out->set_extended(e.extended);
  out->set_clears(e.clears);
  if (e.interval_s > 0) {
    out->set_xmit_bytes_per_s(static_cast<double>(e.delta.xmit_bytes) / e.interval_s);
    out->set_rcv_bytes_per_s(static_cast<double>(e.delta.rcv_bytes) / e.interval_s);
  }
  if (view.has_fabric()) {
    if (auto n = view.node_by_guid(e.node_guid); n && e.port <= view.topo().node(*n).num_ports) {
      const routing::Port& p = view.topo().port(*n, e.port);
      if (p.connected()) {
        out->set_peer(
            fmt::format("{}/{}", view.topo().node(p.remote_node).description, p.remote_port));
      }
    }
  }
}

Status no_counters() {
  return Status(StatusCode::FAILED_PRECONDITION,
                "no port counters yet: the performance manager is off (perfmgr.interval 0) or "
                "its first counter sweep has not finished");
}

// The `limit` most by `key` (descending), among entries where key > 0.
template <class Key>
std::vector<const state::PortCounterEntry*> top(const state::PortCounterSnapshot& s,
                                                std::size_t limit, Key key,
                                                std::uint32_t* matching = nullptr) {
  std::vector<const state::PortCounterEntry*> v;
  for (const state::PortCounterEntry& e : s.ports) {
    if (key(e) > 0) v.push_back(&e);
  }
  if (matching != nullptr) *matching = static_cast<std::uint32_t>(v.size());
  const std::size_t n = std::min(limit, v.size());
  std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end(),
                    [&key](const auto* a, const auto* b) { return key(*a) > key(*b); });
  v.resize(n);
  return v;
}

}  // namespace

grpc::ServerUnaryReactor* SubnetManagerService::GetPortCounters(
    grpc::CallbackServerContext* ctx, const v1::GetPortCountersRequest* req,
    v1::GetPortCountersResponse* resp) {
  const state::CounterBoard* board = core_.deps().counters;
  if (board == nullptr) return reply(ctx, no_counters());
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  if (req->port() > 254) {
    return reply(ctx, invalid(fmt::format("port: {} is not a port number", req->port())));
  }
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  auto ref = view->resolve(req->node());
  if (!ref.ok()) return reply(ctx, to_status(ref.error(), "node"));
  const auto snap = board->current();
  if (snap->sweep == 0) return reply(ctx, no_counters());
  const Guid guid = view->topo().node(ref->node).guid;
  for (const state::PortCounterEntry& e : snap->ports) {
    if (e.node_guid != guid || (req->port() != 0 && e.port != req->port())) continue;
    fill(*view, e, resp->add_ports());
  }
  if (resp->ports_size() == 0) {
    return reply(
        ctx, Status(StatusCode::NOT_FOUND,
                    req->port() != 0 ? fmt::format("port: {} port {} has no counters (no link, or "
                                                   "it did not answer)",
                                                   view->topo().label(ref->node), req->port())
                                     : fmt::format("node: {} has no ports with counters",
                                                   view->topo().label(ref->node))));
  }
  resp->set_sweep(snap->sweep);
  *resp->mutable_sweep_at() = to_timestamp(snap->at);
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SubnetManagerService::ListPortErrors(grpc::CallbackServerContext* ctx,
                                                               const v1::ListPortErrorsRequest* req,
                                                               v1::ListPortErrorsResponse* resp) {
  const state::CounterBoard* board = core_.deps().counters;
  if (board == nullptr) return reply(ctx, no_counters());
  if (req->limit() > 10000) {
    return reply(ctx, invalid(fmt::format("limit: {} is above 10000", req->limit())));
  }
  const std::size_t limit = req->limit() == 0 ? 100 : req->limit();
  const auto snap = board->current();
  if (snap->sweep == 0) return reply(ctx, no_counters());
  auto view = core_.view();
  std::uint32_t matching = 0;
  const auto ports =
      req->since_start()
          ? top(
                *snap, limit, [](const state::PortCounterEntry& e) { return e.total.errors(); },
                &matching)
          : top(
                *snap, limit, [](const state::PortCounterEntry& e) { return e.delta.errors(); },
                &matching);
  for (const auto* e : ports) fill(*view, *e, resp->add_ports());
  resp->set_matching(matching);
  resp->set_sweep(snap->sweep);
  *resp->mutable_sweep_at() = to_timestamp(snap->at);
  resp->set_ports_read(snap->ports_read);
  resp->set_ports_failed(snap->ports_failed);
  resp->set_last_error(snap->last_error);
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SubnetManagerService::TopPorts(grpc::CallbackServerContext* ctx,
                                                         const v1::TopPortsRequest* req,
                                                         v1::TopPortsResponse* resp) {
  const state::CounterBoard* board = core_.deps().counters;
  if (board == nullptr) return reply(ctx, no_counters());
  if (req->limit() > 1000) {
    return reply(ctx, invalid(fmt::format("limit: {} is above 1000", req->limit())));
  }
  const std::size_t limit = req->limit() == 0 ? 10 : req->limit();
  const auto snap = board->current();
  if (snap->sweep == 0) return reply(ctx, no_counters());
  auto view = core_.view();
  for (const auto* e :
       top(*snap, limit, [](const state::PortCounterEntry& x) { return x.delta.xmit_bytes; })) {
    fill(*view, *e, resp->add_busiest());
  }
  for (const auto* e :
       top(*snap, limit, [](const state::PortCounterEntry& x) { return x.delta.errors(); })) {
    fill(*view, *e, resp->add_erring());
  }
  resp->set_sweep(snap->sweep);
  *resp->mutable_sweep_at() = to_timestamp(snap->at);
  return reply(ctx, Status::OK);
}

}  // namespace subnetd::api

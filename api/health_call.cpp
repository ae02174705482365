// subnet.v1.SubnetManager.ListUnhealthyPorts: the fault policy's published
// view (state::HealthBoard), one snapshot per call.

#include "api/service_internal.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

namespace {

google::protobuf::Timestamp wall_ts(state::WallTime t) {
  return to_timestamp(std::chrono::time_point_cast<std::chrono::system_clock::duration>(t));
}

v1::HealthStatus to_proto(state::HealthStatus s) {
  switch (s) {
    case state::HealthStatus::kIsolated:
      return v1::HEALTH_STATUS_ISOLATED;
    case state::HealthStatus::kRefused:
      return v1::HEALTH_STATUS_REFUSED;
  }
  return v1::HEALTH_STATUS_UNSPECIFIED;
}

v1::HealthCause to_proto(state::HealthCause c) {
  switch (c) {
    case state::HealthCause::kFlapping:
      return v1::HEALTH_CAUSE_FLAPPING;
    case state::HealthCause::kErrors:
      return v1::HEALTH_CAUSE_ERRORS;
  }
  return v1::HEALTH_CAUSE_UNSPECIFIED;
}

}  // namespace

grpc::ServerUnaryReactor* SubnetManagerService::ListUnhealthyPorts(
    grpc::CallbackServerContext* ctx, const v1::ListUnhealthyPortsRequest* /*req*/,
    v1::ListUnhealthyPortsResponse* resp) {
  const state::HealthBoard* board = core_.deps().health;
  if (board == nullptr) {
    return reply(ctx, Status(StatusCode::UNAVAILABLE, "this daemon runs no fault policy"));
  }
  const auto snap = board->current();
  for (const state::UnhealthyPort& u : snap->ports) {
    v1::UnhealthyPort* out = resp->add_ports();
    out->set_node_guid(u.node_guid.value);
    out->set_node_name(u.node_label);
    out->set_port(u.port);
    out->set_peer_guid(u.peer_guid.value);
    out->set_peer_name(u.peer_label);
    out->set_peer_port(u.peer_port);
    out->set_status(to_proto(u.status));
    out->set_cause(to_proto(u.cause));
    out->set_reason(u.reason);
    for (const state::WallTime t : u.downs) *out->add_link_downs() = wall_ts(t);
    out->set_errors_per_minute(u.errors_per_minute);
    *out->mutable_since() = wall_ts(u.since);
    if (u.until) *out->mutable_until() = wall_ts(*u.until);
    out->set_isolations(u.isolations);
  }
  resp->set_isolated_total(snap->isolated_total);
  resp->set_restored_total(snap->restored_total);
  resp->set_refused_total(snap->refused_total);
  resp->set_policy_enabled(snap->policy_enabled);
  return reply(ctx, Status::OK);
}

}  // namespace subnetd::api

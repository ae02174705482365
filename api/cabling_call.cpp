// subnet.v1.SubnetManager.CheckCabling: bring-up screening on demand. The
// comparison is O(ports) (and parsing a plan from the request more), so it
// runs on the caller's blocking pool, never on a gRPC callback thread; the
// pool finishes the call.

#include <fmt/format.h>

#include "api/service_internal.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

namespace {

v1::CablingFindingKind to_proto(state::CablingFindingKind k) {
  using K = state::CablingFindingKind;
  switch (k) {
    case K::kMissingNode:
      return v1::CABLING_FINDING_KIND_MISSING_NODE;
    case K::kUnexpectedNode:
      return v1::CABLING_FINDING_KIND_UNEXPECTED_NODE;
    case K::kNodeMismatch:
      return v1::CABLING_FINDING_KIND_NODE_MISMATCH;
    case K::kDescriptionMismatch:
      return v1::CABLING_FINDING_KIND_DESCRIPTION_MISMATCH;
    case K::kMissingCable:
      return v1::CABLING_FINDING_KIND_MISSING_CABLE;
    case K::kUnexpectedCable:
      return v1::CABLING_FINDING_KIND_UNEXPECTED_CABLE;
    case K::kMiswired:
      return v1::CABLING_FINDING_KIND_MISWIRED;
    case K::kSwapped:
      return v1::CABLING_FINDING_KIND_SWAPPED;
    case K::kWidthBelow:
      return v1::CABLING_FINDING_KIND_WIDTH_BELOW;
    case K::kSpeedBelow:
      return v1::CABLING_FINDING_KIND_SPEED_BELOW;
    case K::kDuplicateGuid:
      return v1::CABLING_FINDING_KIND_DUPLICATE_GUID;
  }
  return v1::CABLING_FINDING_KIND_UNSPECIFIED;
}

void fill(const state::CablingReport& r, v1::CheckCablingResponse* resp) {
  resp->set_plan(r.plan);
  resp->set_generation(r.generation);
  resp->set_plan_nodes(r.plan_nodes);
  resp->set_plan_cables(r.plan_cables);
  resp->set_found_nodes(r.found_nodes);
  resp->set_found_cables(r.found_cables);
  resp->set_duration_us(static_cast<std::uint64_t>(std::max<std::int64_t>(r.took.count(), 0)));
  for (const state::CablingFinding& f : r.findings) {
    v1::CablingFinding* out = resp->add_findings();
    out->set_kind(to_proto(f.kind));
    out->set_node_guid(f.node_guid.value);
    out->set_node_name(f.node_name);
    out->set_port(f.port);
    out->set_expected(f.expected);
    out->set_found(f.found);
    out->set_message(f.message);
  }
}

}  // namespace

grpc::ServerUnaryReactor* SubnetManagerService::CheckCabling(grpc::CallbackServerContext* ctx,
                                                             const v1::CheckCablingRequest* req,
                                                             v1::CheckCablingResponse* resp) {
  const state::CablingCheck* check = core_.deps().cabling;
  if (check == nullptr) {
    return reply(ctx, Status(StatusCode::UNAVAILABLE, "this daemon runs no screening"));
  }
  if (req->plan().empty() && !req->plan_name().empty()) {
    return reply(ctx, invalid("plan: empty (plan_name is given without the plan's text)"));
  }
  const Caller caller = identify(ctx, trust_, core_, "CheckCabling");
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const bool posted = core_.pool(caller.trusted).post([check, req, resp, reactor] {
    std::optional<state::CablingPlanText> text;
    if (!req->plan().empty()) {
      text = state::CablingPlanText{state::CablingPlanText::Format::kAuto,
                                    req->plan_name().empty() ? "request" : req->plan_name(),
                                    req->plan()};
    }
    auto report = check->check_cabling(text ? &*text : nullptr);
    if (!report.ok()) {
      // A plan from the request that does not parse is the request's fault,
      // whatever the reader's error class.
      const Error& e = report.error();
      if (text && e.code != Errc::kUnreachable) {
        reactor->Finish(Status(StatusCode::INVALID_ARGUMENT, "plan: " + e.message));
      } else {
        reactor->Finish(to_status(e));
      }
      return;
    }
    fill(*report, resp);
    reactor->Finish(Status::OK);
  });
  if (!posted) {
    reactor->Finish(Status(StatusCode::RESOURCE_EXHAUSTED,
                           "CheckCabling: too much blocking work queued; try again"));
  }
  return reactor;
}

}  // namespace subnetd::api

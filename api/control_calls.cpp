// subnet.v1.SubnetManager's calls that wait for the SM: TriggerSweep (with
// wait), VerifyRouting, SetPortState. Each is checked and admitted on the
// gRPC thread, handed to SmControl with a completion, and finished by that
// completion (or its wait limit, the client or shutdown: waiting_call.hpp).
// No thread waits.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/service_internal.hpp"
#include "api/waiting_call.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

namespace {

// The response to a sweep that the SM answered: the heavy sweep's summary
// (also when a light sweep found a change and started one), or the light
// sweep's own when it found nothing.
void fill_sweep_response(const FabricView& view, const state::SweepReply& r,
                         v1::TriggerSweepResponse* resp) {
  v1::SweepSummary* sw = resp->mutable_sweep();
  fill_sweep_summary(view, sw);
  resp->set_generation(r.generation);
  if (r.light && !r.light->found_change()) {
    const state::LightSweepReport& l = *r.light;
    sw->set_kind(v1::SWEEP_KIND_LIGHT);
    *sw->mutable_started_at() = to_timestamp(l.started_at);
    *sw->mutable_ended_at() =
        to_timestamp(l.started_at + std::chrono::duration_cast<Clock::duration>(l.took));
    sw->set_switches(l.answered);
    sw->clear_phases();
    auto* p = sw->add_phases();
    p->set_name("light");
    p->set_duration_us(static_cast<std::uint64_t>(l.took.count()));
    sw->set_outcome(v1::SWEEP_OUTCOME_OK);
    sw->set_message(r.message);
    return;
  }
  sw->set_outcome(r.ok ? v1::SWEEP_OUTCOME_OK : v1::SWEEP_OUTCOME_FAILED);
  if (!r.ok) {
    sw->set_message(r.message);
  } else if (r.light) {
    sw->set_message("started by a light sweep: " + r.light->change);
  } else {
    sw->clear_message();
  }
}

// Hands a sweep to the SM. Without `wait` the call is answered at once (the
// sweep is queued; its outcome goes to the event log); with it, the sweep's
// completion finishes the call.
template <class Reply, class Start>
grpc::ServerUnaryReactor* sweep(ServiceCore& core, grpc::CallbackServerContext* ctx,
                                const Caller& caller, bool wait, v1::TriggerSweepResponse* resp,
                                Start start) {
  if (!wait) {
    resp->set_generation(core.view()->state().generation);
    start([](Reply) {});
    return reply(ctx, Status::OK);
  }
  Ticket ticket;
  if (Status s = core.limits().admit(CallKind::kWaiting, caller.trusted, caller.peer.client,
                                     "TriggerSweep", ticket);
      !s.ok()) {
    return reply(ctx, std::move(s));
  }
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto call = WaitingCall::start(core, ctx, "the sweep", core.options().sweep_wait_limit,
                                 std::move(ticket), &reactor);
  if (call) {
    // `Reply` is SweepReply (heavy) or Result<SweepReply> (light, which the
    // SM may refuse).
    start(call->completion<Reply>([resp](ServiceCore& c, Reply outcome) {
      const Result<state::SweepReply> r = std::move(outcome);
      if (!r.ok()) return to_status(r.error());
      fill_sweep_response(*c.view(), *r, resp);
      return Status::OK;
    }));
  }
  return reactor;
}

v1::Verdict to_proto(state::Verdict v) {
  switch (v) {
    case state::Verdict::kOk:
      return v1::VERDICT_OK;
    case state::Verdict::kIncomplete:
      return v1::VERDICT_INCOMPLETE;
    case state::Verdict::kLoop:
      return v1::VERDICT_LOOP;
    case state::Verdict::kCreditLoop:
      return v1::VERDICT_CREDIT_LOOP;
    case state::Verdict::kTablesDiffer:
      return v1::VERDICT_TABLES_DIFFER;
  }
  return v1::VERDICT_FAILED;
}

void fill_verify_response(const FabricView& view, const state::VerifyReply& r,
                          v1::VerifyRoutingResponse* resp) {
  resp->set_verdict(to_proto(r.verdict));
  resp->set_message(r.message);
  if (view.has_fabric()) {
    resp->set_switches(static_cast<std::uint32_t>(view.topo().num_switches()));
  }
  resp->set_virtual_lanes(r.num_vls);
  resp->set_pairs_checked(r.pairs_checked);
  resp->set_cdg_channels(r.channels);
  resp->set_cdg_dependencies(r.dependencies);
  resp->set_duration_us(static_cast<std::uint64_t>(std::max<std::int64_t>(r.took.count(), 0)));
  resp->set_generation(r.generation);
  resp->set_shared(r.shared);
  if (r.read_back) {
    const state::ReadBackReport& rb = *r.read_back;
    v1::ReadBack* out = resp->mutable_read_back();
    out->set_switches(rb.switches);
    out->set_switches_silent(rb.switches_silent);
    out->set_blocks_read(rb.blocks_read);
    out->set_blocks_differ(rb.blocks_differ);
    for (const std::string& d : rb.differences) out->add_differences(d);
  }
}

}  // namespace

grpc::ServerUnaryReactor* SubnetManagerService::TriggerSweep(grpc::CallbackServerContext* ctx,
                                                             const v1::TriggerSweepRequest* req,
                                                             v1::TriggerSweepResponse* resp) {
  const Caller caller = identify(ctx, trust_, core_, "TriggerSweep");
  if (!caller.trusted) return reply(ctx, caller.refusal);
  if (Status s = not_master(*core_.view()); !s.ok()) return reply(ctx, std::move(s));
  if (!v1::SweepKind_IsValid(req->kind())) {
    return reply(
        ctx, invalid(fmt::format("kind: {} is not a SweepKind", static_cast<int>(req->kind()))));
  }
  const bool light = req->kind() == v1::SWEEP_KIND_LIGHT;
  const bool rebalance = req->rebalance();
  if (light && rebalance) {
    return reply(ctx, invalid("rebalance: only a heavy sweep routes afresh (kind is LIGHT)"));
  }
  if (light) {
    // A light sweep checks the switches the last heavy sweep found.
    auto view = core_.view();
    if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  }
  const std::string who = caller.who();
  const char* what = light ? "light" : rebalance ? "heavy, re-balancing" : "heavy";
  spdlog::info("gRPC TriggerSweep {} by {}", what, who);
  state::SmControl& sm = *core_.deps().sm;
  std::string reason = rebalance ? "TriggerSweep (re-balance) by " + who : "TriggerSweep by " + who;
  if (light) {
    return sweep<Result<state::SweepReply>>(core_, ctx, caller, req->wait(), resp,
                                            [&](state::Completion<Result<state::SweepReply>> done) {
                                              sm.trigger_light_sweep(std::move(reason),
                                                                     std::move(done));
                                            });
  }
  return sweep<state::SweepReply>(core_, ctx, caller, req->wait(), resp,
                                  [&](state::Completion<state::SweepReply> done) {
                                    if (rebalance) {
                                      sm.trigger_rebalance(std::move(reason), std::move(done));
                                    } else {
                                      sm.trigger_sweep(std::move(reason), std::move(done));
                                    }
                                  });
}

grpc::ServerUnaryReactor* SubnetManagerService::VerifyRouting(grpc::CallbackServerContext* ctx,
                                                              const v1::VerifyRoutingRequest* req,
                                                              v1::VerifyRoutingResponse* resp) {
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  if (!view->has_routes()) return reply(ctx, no_routes());
  // The whole verifier runs for this (and reads every LFT block back when
  // asked): limited per client, and anonymous callers share their capacity.
  const Caller caller = identify(ctx, trust_, core_, "VerifyRouting");
  Ticket ticket;
  if (Status s = core_.limits().admit(CallKind::kVerify, caller.trusted, caller.peer.client,
                                      "VerifyRouting", ticket);
      !s.ok()) {
    return reply(ctx, std::move(s));
  }
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto call = WaitingCall::start(core_, ctx, "verification", core_.options().control_wait_limit,
                                 std::move(ticket), &reactor);
  if (!call) return reactor;
  state::VerifyRequest request;
  request.read_back = req->read_back();
  core_.deps().sm->verify_routing(request,
                                  call->completion<Result<state::VerifyReply>>(
                                      [resp](ServiceCore& c, Result<state::VerifyReply> r) {
                                        // A verdict, good or bad, is an answer; an error means the
                                        // verifier could not run (no tables, cancelled, read-back
                                        // not available).
                                        if (!r.ok()) return to_status(r.error());
                                        fill_verify_response(*c.view(), *r, resp);
                                        return Status::OK;
                                      }));
  return reactor;
}

grpc::ServerUnaryReactor* SubnetManagerService::SetPortState(grpc::CallbackServerContext* ctx,
                                                             const v1::SetPortStateRequest* req,
                                                             v1::SetPortStateResponse* resp) {
  const Caller caller = identify(ctx, trust_, core_, "SetPortState");
  if (!caller.trusted) return reply(ctx, caller.refusal);
  if (Status s = not_master(*core_.view()); !s.ok()) return reply(ctx, std::move(s));
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  if (req->state() != v1::PORT_ADMIN_STATE_ENABLED &&
      req->state() != v1::PORT_ADMIN_STATE_DISABLED) {
    return reply(ctx,
                 invalid("state: required: PORT_ADMIN_STATE_ENABLED or PORT_ADMIN_STATE_DISABLED"));
  }
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  auto target = view->resolve(req->node());
  if (!target.ok()) return reply(ctx, to_status(target.error(), "node"));
  const routing::Topology& t = view->topo();
  const NodeId n = target->node;
  if (req->port() == 0 || req->port() > t.node(n).num_ports) {
    return reply(ctx, invalid(fmt::format("port: {} has ports 1..{}, not {}", t.label(n),
                                          t.node(n).num_ports, req->port())));
  }
  const Guid guid = t.node(n).guid;
  const auto port = static_cast<PortNum>(req->port());
  const bool enable = req->state() == v1::PORT_ADMIN_STATE_ENABLED;
  const bool was_disabled = t.port(n, port).phys_state == 3;
  Ticket ticket;
  if (Status s = core_.limits().admit(CallKind::kWaiting, caller.trusted, caller.peer.client,
                                      "SetPortState", ticket);
      !s.ok()) {
    return reply(ctx, std::move(s));
  }
  const std::string who = caller.who();
  spdlog::info("gRPC SetPortState {} port {} {} by {}", t.label(n), port,
               enable ? "enable" : "disable", who);
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto call = WaitingCall::start(core_, ctx, "the port change", core_.options().control_wait_limit,
                                 std::move(ticket), &reactor);
  if (!call) return reactor;
  core_.deps().sm->set_port_enabled(
      guid, port, enable, who,
      call->completion<Result<void>>(
          [resp, guid, port, enable, was_disabled](ServiceCore& c, Result<void> r) {
            if (!r.ok()) return to_status(r.error());
            auto after = c.view();
            if (after->has_fabric()) {
              if (auto node = after->node_by_guid(guid);
                  node && port <= after->topo().node(*node).num_ports) {
                after->fill_port(*node, port, resp->mutable_port());
              }
            }
            resp->set_changed(was_disabled == enable);
            return Status::OK;
          }));
  return reactor;
}

}  // namespace subnetd::api

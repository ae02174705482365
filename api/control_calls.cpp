// subnet.v1.SubnetManager's calls that wait for the SM: TriggerSweep (with
// wait), VerifyRouting, SetPortState. They wait on a BlockingPool thread for
// the SmControl completion (bridged to a future), bounded by the client's
// deadline and a cap.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>
#include <optional>

#include "api/service_internal.hpp"

namespace subnetd::api {

using namespace std::chrono_literals;
using grpc::Status;
using grpc::StatusCode;

namespace {

Clock::time_point wait_deadline(const grpc::CallbackServerContext* ctx,
                                std::chrono::milliseconds cap) {
  return std::min(ctx->deadline(), Clock::now() + cap);
}

enum class WaitEnd { kReady, kDeadline, kStopping };

// Waits on a future from a BlockingPool thread, giving up at the deadline or
// when the pool stops (daemon shutdown).
template <class T>
WaitEnd wait_on(std::future<T>& f, Clock::time_point deadline, const BlockingPool& pool) {
  for (;;) {
    if (f.wait_for(50ms) == std::future_status::ready) return WaitEnd::kReady;
    if (pool.stopping()) return WaitEnd::kStopping;
    if (Clock::now() >= deadline) return WaitEnd::kDeadline;
  }
}

Status wait_failure(WaitEnd end, std::string_view what, std::chrono::milliseconds waited) {
  if (end == WaitEnd::kStopping) {
    return Status(StatusCode::UNAVAILABLE,
                  fmt::format("subnetd is stopping; {} was not awaited", what));
  }
  return Status(StatusCode::DEADLINE_EXCEEDED,
                fmt::format("{} still running after {} ms; it continues in the background", what,
                            waited.count()));
}

// Bridges an SmControl completion to a future (transitional).
template <class T, class Call>
std::future<T> sm_future(Call call) {
  auto promise = std::make_shared<std::promise<T>>();
  auto fut = promise->get_future();
  call([promise](T value) { promise->set_value(std::move(value)); });
  return fut;
}

// Takes the result of an SmControl future; a broken promise means the SM
// went away without answering.
template <class T>
std::optional<T> take(std::future<T>& f, Status& failure) {
  try {
    return f.get();
  } catch (const std::future_error& e) {
    failure = Status(StatusCode::UNAVAILABLE,
                     fmt::format("the subnet manager stopped before answering ({})", e.what()));
    return std::nullopt;
  }
}

// Waits for an SmControl future on a BlockingPool thread and returns its
// value; or finishes `reactor` with why there is none (the deadline passed,
// subnetd is stopping, the SM went away) and returns nullopt.
template <class T>
std::optional<T> await_sm(std::future<T>& f, Clock::time_point deadline, const BlockingPool& pool,
                          std::string_view what, grpc::ServerUnaryReactor* reactor) {
  const auto started = Clock::now();
  const WaitEnd end = wait_on(f, deadline, pool);
  if (end != WaitEnd::kReady) {
    reactor->Finish(wait_failure(
        end, what, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started)));
    return std::nullopt;
  }
  Status failure;
  auto value = take(f, failure);
  if (!value) reactor->Finish(failure);
  return value;
}

}  // namespace

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

// Finishes TriggerSweep from the SM's future, on a BlockingPool thread: at
// once when the caller did not ask to wait, else with the outcome. `Reply` is
// SweepReply (heavy) or Result<SweepReply> (light, which the SM may refuse).
template <class Reply>
void finish_sweep(ServiceCore& core, grpc::ServerUnaryReactor* reactor,
                  v1::TriggerSweepResponse* resp, bool wait, Clock::time_point deadline,
                  std::future<Reply> fut) {
  if (!wait) {
    resp->set_generation(core.view()->state().generation);
    reactor->Finish(Status::OK);
    return;
  }
  auto outcome = await_sm(fut, deadline, core.pool(), "the sweep", reactor);
  if (!outcome) return;
  const Result<state::SweepReply> r = std::move(*outcome);
  if (!r.ok()) {
    reactor->Finish(to_status(r.error()));
    return;
  }
  fill_sweep_response(*core.view(), *r, resp);
  reactor->Finish(Status::OK);
}

}  // namespace

grpc::ServerUnaryReactor* SubnetManagerService::TriggerSweep(grpc::CallbackServerContext* ctx,
                                                             const v1::TriggerSweepRequest* req,
                                                             v1::TriggerSweepResponse* resp) {
  if (Status s = authorize(ctx, trust_, core_, "TriggerSweep"); !s.ok()) return reply(ctx, s);
  if (!v1::SweepKind_IsValid(req->kind())) {
    return reply(
        ctx, invalid(fmt::format("kind: {} is not a SweepKind", static_cast<int>(req->kind()))));
  }
  const bool light = req->kind() == v1::SWEEP_KIND_LIGHT;
  if (light) {
    // A light sweep checks the switches the last heavy sweep found.
    auto view = core_.view();
    if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  }
  auto* reactor = ctx->DefaultReactor();
  const bool wait = req->wait();
  const auto cap = core_.options().sweep_wait_limit;
  const auto deadline = wait_deadline(ctx, cap);
  std::string caller = who(ctx, trust_, core_);
  spdlog::info("gRPC TriggerSweep {} by {}", light ? "light" : "heavy", caller);
  ServiceCore& core = core_;
  const bool posted = core.pool().post([&core, reactor, resp, wait, deadline, caller, light] {
    state::SmControl& sm = *core.deps().sm;
    const std::string reason = "TriggerSweep by " + caller;
    if (light) {
      finish_sweep(core, reactor, resp, wait, deadline,
                   sm_future<Result<state::SweepReply>>(
                       [&](auto done) { sm.trigger_light_sweep(reason, std::move(done)); }));
    } else {
      finish_sweep(core, reactor, resp, wait, deadline,
                   sm_future<state::SweepReply>(
                       [&](auto done) { sm.trigger_sweep(reason, std::move(done)); }));
    }
  });
  if (!posted) {
    reactor->Finish(refused(core.pool()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SubnetManagerService::VerifyRouting(grpc::CallbackServerContext* ctx,
                                                              const v1::VerifyRoutingRequest*,
                                                              v1::VerifyRoutingResponse* resp) {
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  if (!view->has_routes()) {
    return reply(ctx, Status(StatusCode::FAILED_PRECONDITION, "no routing has been computed yet"));
  }
  auto* reactor = ctx->DefaultReactor();
  const auto deadline = wait_deadline(ctx, core_.options().control_wait_limit);
  ServiceCore& core = core_;
  const bool posted = core.pool().post([&core, reactor, resp, deadline, before = std::move(view)] {
    const auto started = Clock::now();
    auto fut = sm_future<Result<state::VerifyReply>>([&](auto done) {
      core.deps().sm->verify_routing(state::VerifyRequest{}, std::move(done));
    });
    auto reply = await_sm(fut, deadline, core.pool(), "verification", reactor);
    if (!reply) return;
    std::optional<Result<std::string>> result;
    if (!reply->ok()) {
      result = reply->error();
    } else if ((*reply)->verdict == state::Verdict::kOk) {
      result = Result<std::string>((*reply)->message);
    } else {
      const state::Verdict v = (*reply)->verdict;
      result = Error{v == state::Verdict::kIncomplete ? Errc::kIncomplete
                     : v == state::Verdict::kLoop     ? Errc::kForwardingLoop
                                                      : Errc::kCdgCycle,
                     (*reply)->message};
    }
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
    if (result->ok()) {
      resp->set_verdict(v1::VERDICT_OK);
      resp->set_message(result->value());
    } else {
      const Error& e = result->error();
      switch (e.code) {
        case Errc::kIncomplete:
          resp->set_verdict(v1::VERDICT_INCOMPLETE);
          break;
        case Errc::kForwardingLoop:
          resp->set_verdict(v1::VERDICT_LOOP);
          break;
        case Errc::kCdgCycle:
          resp->set_verdict(v1::VERDICT_CREDIT_LOOP);
          break;
        default:
          // The verifier could not run (cancelled, no tables): not a verdict.
          reactor->Finish(to_status(e));
          return;
      }
      resp->set_message(e.message);
    }
    auto after = core.view();
    const state::FabricState& s = after->state();
    if (after->has_routes()) {
      resp->set_switches(static_cast<std::uint32_t>(after->topo().num_switches()));
      resp->set_virtual_lanes(s.routes->num_vls);
    }
    // The counts come with the SM's verification of the published tables;
    // they describe what was just verified only if no new tables arrived.
    if (result->ok() && s.generation == before->state().generation && s.verification.ok) {
      resp->set_pairs_checked(s.verification.pairs_checked);
      resp->set_cdg_channels(s.verification.channels);
      resp->set_cdg_dependencies(s.verification.dependencies);
    }
    resp->set_duration_us(static_cast<std::uint64_t>(took.count()));
    resp->set_generation(s.generation);
    reactor->Finish(Status::OK);
  });
  if (!posted) {
    reactor->Finish(refused(core.pool()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SubnetManagerService::SetPortState(grpc::CallbackServerContext* ctx,
                                                             const v1::SetPortStateRequest* req,
                                                             v1::SetPortStateResponse* resp) {
  if (Status s = authorize(ctx, trust_, core_, "SetPortState"); !s.ok()) return reply(ctx, s);
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
  auto* reactor = ctx->DefaultReactor();
  const auto deadline = wait_deadline(ctx, core_.options().control_wait_limit);
  std::string caller = who(ctx, trust_, core_);
  spdlog::info("gRPC SetPortState {} port {} {} by {}", t.label(n), port,
               enable ? "enable" : "disable", caller);
  ServiceCore& core = core_;
  const bool posted =
      core.pool().post([&core, reactor, resp, deadline, caller, guid, port, enable, was_disabled] {
        auto fut = sm_future<Result<void>>([&](auto done) {
          core.deps().sm->set_port_enabled(guid, port, enable, caller, std::move(done));
        });
        auto result = await_sm(fut, deadline, core.pool(), "the port change", reactor);
        if (!result) return;
        if (!result->ok()) {
          reactor->Finish(to_status(result->error()));
          return;
        }
        auto after = core.view();
        if (after->has_fabric()) {
          if (auto node = after->node_by_guid(guid);
              node && port <= after->topo().node(*node).num_ports) {
            after->fill_port(*node, port, resp->mutable_port());
          }
        }
        resp->set_changed(was_disabled == enable);
        reactor->Finish(Status::OK);
      });
  if (!posted) {
    reactor->Finish(refused(core.pool()));
  }
  return reactor;
}

}  // namespace subnetd::api

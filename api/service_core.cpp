// ServiceCore (what every listener shares), the status helpers, and who a
// caller is.

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include "api/auth.hpp"
#include "api/service_internal.hpp"
#include "api/waiting_call.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

// ---------------------------------------------------------------------------
// Helpers

google::protobuf::Timestamp to_timestamp(Clock::time_point tp) {
  return google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(
      std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count());
}

grpc::ServerUnaryReactor* reply(grpc::CallbackServerContext* ctx, Status s) {
  auto* r = ctx->DefaultReactor();
  r->Finish(std::move(s));
  return r;
}

Status invalid(std::string msg) {
  return Status(StatusCode::INVALID_ARGUMENT, std::move(msg));
}

Status not_master(const FabricView& v) {
  const state::FabricState& s = v.state();
  if (s.state != state::SmState::kStandby && s.state != state::SmState::kNotActive) {
    return Status::OK;
  }
  const state::SmRoleView& r = s.sm_role;
  const std::string master = r.master_guid.value == 0
                                 ? std::string("no master is known")
                                 : fmt::format("the master is SM {:#018x} (LID {}); ask it",
                                               r.master_guid.value, r.master_lid.value);
  return Status(StatusCode::FAILED_PRECONDITION,
                fmt::format("this SM is {}: {}", state::sm_state_name(s.state), master));
}

Status no_fabric(const FabricView& v) {
  return Status(StatusCode::FAILED_PRECONDITION,
                fmt::format("no sweep has finished yet (SM state {}{}{})",
                            state::sm_state_name(v.state().state),
                            v.state().last_error.empty() ? "" : ": ", v.state().last_error));
}

Status no_routes() {
  return Status(StatusCode::FAILED_PRECONDITION, "no routing has been computed yet");
}

void fill_sweep_summary(const FabricView& view, v1::SweepSummary* out) {
  const state::FabricState& s = view.state();
  const auto us = [](std::chrono::nanoseconds d) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(d).count());
  };
  out->set_kind(v1::SWEEP_KIND_HEAVY);
  *out->mutable_ended_at() = to_timestamp(s.last_sweep_at);
  *out->mutable_started_at() = to_timestamp(
      s.last_sweep_at - std::chrono::duration_cast<Clock::duration>(s.last_bringup.total));
  if (view.has_fabric()) {
    out->set_nodes(static_cast<std::uint32_t>(view.topo().num_nodes()));
    out->set_switches(static_cast<std::uint32_t>(view.topo().num_switches()));
    out->set_cas(static_cast<std::uint32_t>(view.topo().num_cas()));
    out->set_lids(view.lids_in_use());
  }
  const std::pair<const char*, std::chrono::nanoseconds> phases[] = {
      {"discover", s.last_bringup.sweep},
      {"lids", s.last_bringup.lids},
      {"route", s.last_bringup.route},
      {"verify", s.last_bringup.verify},
      {"program", s.last_bringup.program}};
  for (const auto& [name, d] : phases) {
    auto* p = out->add_phases();
    p->set_name(name);
    p->set_duration_us(us(d));
  }
  const bool failed = s.state == state::SmState::kFailed || !s.last_error.empty();
  out->set_outcome(failed ? v1::SWEEP_OUTCOME_FAILED : v1::SWEEP_OUTCOME_OK);
  out->set_message(s.last_error);
}

Status to_status(const Error& e, std::string_view field) {
  StatusCode code = StatusCode::INTERNAL;
  switch (e.code) {
    case Errc::kInvalidArgument:
    case Errc::kParse:
    case Errc::kOutOfRange:
      code = StatusCode::INVALID_ARGUMENT;
      break;
    case Errc::kNotFound:
      code = StatusCode::NOT_FOUND;
      break;
    case Errc::kConflict:
    case Errc::kUnreachable:
    case Errc::kIncomplete:
    case Errc::kForwardingLoop:
    case Errc::kCdgCycle:
    case Errc::kUnsupported:
      code = StatusCode::FAILED_PRECONDITION;
      break;
    case Errc::kTimeout:
      code = StatusCode::DEADLINE_EXCEEDED;
      break;
    case Errc::kCancelled:
      code = StatusCode::ABORTED;
      break;
    case Errc::kIo:
      code = StatusCode::UNAVAILABLE;
      break;
    case Errc::kLidsExhausted:
      code = StatusCode::RESOURCE_EXHAUSTED;
      break;
    case Errc::kMalformedMad:
    case Errc::kInternal:
      code = StatusCode::INTERNAL;
      break;
  }
  return Status(code, field.empty() ? e.message : fmt::format("{}: {}", field, e.message));
}

// ---------------------------------------------------------------------------
// ServiceCore

ServiceCore::ServiceCore(ServiceDeps deps, ServiceOptions opts)
    : deps_(std::move(deps)),
      opts_(std::move(opts)),
      views_(*deps_.state),
      limits_(opts_),
      trusted_pool_(opts_.blocking_threads, opts_.max_blocking_queue),
      anonymous_pool_(opts_.blocking_threads, opts_.max_blocking_queue),
      hub_(std::make_unique<WatchHub>(*deps_.events)) {}

ServiceCore::~ServiceCore() {
  shutdown();
}

void ServiceCore::shutdown() {
  hub_->stop();
  std::vector<std::shared_ptr<WaitingCall>> calls;
  {
    std::lock_guard lock(waiting_mu_);
    stopping_ = true;
    for (const auto& [key, call] : waiting_) calls.push_back(call);
  }
  for (auto& call : calls) {
    call->finish(Status(StatusCode::UNAVAILABLE,
                        fmt::format("subnetd is stopping; {} was not awaited", call->what())));
  }
  calls.clear();
  {
    // A call another thread is finishing right now uses the core until it
    // has left the set.
    std::unique_lock lock(waiting_mu_);
    waiting_cv_.wait(lock, [this] { return waiting_.empty(); });
  }
  timer_.stop();
  trusted_pool_.stop();
  anonymous_pool_.stop();
}

bool ServiceCore::add_waiting(std::shared_ptr<WaitingCall> call) {
  std::lock_guard lock(waiting_mu_);
  if (stopping_) return false;
  const WaitingCall* key = call.get();
  waiting_.emplace(key, std::move(call));
  return true;
}

void ServiceCore::remove_waiting(const WaitingCall* call) {
  std::shared_ptr<WaitingCall> last;  // released after the lock
  std::lock_guard lock(waiting_mu_);
  if (auto it = waiting_.find(call); it != waiting_.end()) {
    last = std::move(it->second);
    waiting_.erase(it);
  }
  // Under the lock: once shutdown sees the set empty it may destroy the core.
  waiting_cv_.notify_all();
}

PeerId ServiceCore::identify_peer(const std::string& peer) const {
  if (opts_.identify_peer) return opts_.identify_peer(peer);
  return PeerId{peer, client_of_peer(peer)};
}

namespace {

std::uint64_t end_key(Guid node, PortNum port) {
  return (node.value << 8) | port;
}

}  // namespace

void ServiceCore::remember(const FabricView& v) {
  if (!v.has_fabric()) return;
  std::lock_guard lock(memory_mu_);
  if (memory_seeded_ && v.state().generation == memory_generation_) return;
  memory_seeded_ = true;
  memory_generation_ = v.state().generation;
  const routing::Topology& t = v.topo();
  for (const routing::Node& n : t.nodes()) {
    names_[n.description] = n.guid;
    nodes_[n.guid.value] = RememberedNode{n.description, n.type};
  }
  // Cables the snapshot shows replace what was remembered for their ends;
  // ends it shows without a cable keep their last peer.
  for (const LinkRef& l : v.links()) {
    const routing::Node& a = t.node(l.a.node);
    const routing::Node& b = t.node(l.b.node);
    peers_[end_key(a.guid, l.a.port)] = RememberedEnd{b.guid, l.b.port, t.port(l.b).guid};
    peers_[end_key(b.guid, l.b.port)] = RememberedEnd{a.guid, l.a.port, t.port(l.a).guid};
  }
}

std::optional<Guid> ServiceCore::remembered_guid(const std::string& name) {
  std::lock_guard lock(memory_mu_);
  auto it = names_.find(name);
  if (it == names_.end()) return std::nullopt;
  return it->second;
}

std::optional<v1::LinkEnd> ServiceCore::remembered_peer(Guid node, PortNum port) {
  std::lock_guard lock(memory_mu_);
  const auto it = peers_.find(end_key(node, port));
  if (it == peers_.end()) return std::nullopt;
  const RememberedEnd& far = it->second;
  v1::LinkEnd out;
  out.set_node_guid(far.node.value);
  out.set_port(far.port);
  out.set_port_guid(far.port_guid.value);
  if (const auto n = nodes_.find(far.node.value); n != nodes_.end()) {
    out.set_node_name(n->second.name);
    out.set_node_type(to_proto(n->second.type));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Callers

std::string client_of_peer(std::string_view peer) {
  if (peer.starts_with("ipv4:")) {
    const auto colon = peer.rfind(':');
    if (colon > 4) return std::string(peer.substr(0, colon));
  } else if (peer.starts_with("ipv6:[")) {
    const auto bracket = peer.find(']');
    if (bracket != std::string_view::npos) return std::string(peer.substr(0, bracket + 1));
  }
  return std::string(peer);
}

std::string Caller::who() const {
  return trust == Trust::kBearerToken ? peer.who + " (bearer token)" : peer.who;
}

Caller identify(grpc::CallbackServerContext* ctx, Trust trust, const ServiceCore& core,
                std::string_view method) {
  Caller c;
  c.trust = trust;
  c.peer = core.identify_peer(ctx->peer());
  if (trust == Trust::kUnixPeer) {
    // Vetted at accept.
    c.trusted = true;
    return c;
  }
  const std::string& token = core.options().token;
  const auto& md = ctx->client_metadata();
  const auto it = md.find("authorization");
  if (token.empty()) {
    c.refusal = Status(StatusCode::PERMISSION_DENIED,
                       fmt::format("{} changes the fabric; over TCP that needs a bearer token and "
                                   "this daemon has no api.token_file (use the unix socket)",
                                   method));
  } else if (it == md.end()) {
    c.refusal = Status(StatusCode::PERMISSION_DENIED,
                       fmt::format("{} changes the fabric: send \"authorization: Bearer <token>\" "
                                   "(subnetctl --token-file) or use the unix socket",
                                   method));
  } else if (const auto presented =
                 bearer_token(std::string_view(it->second.data(), it->second.size()));
             !presented) {
    c.refusal = Status(StatusCode::PERMISSION_DENIED, "authorization: expected \"Bearer <token>\"");
  } else if (!constant_time_equal(*presented, token)) {
    c.refusal = Status(StatusCode::PERMISSION_DENIED,
                       "authorization: the bearer token does not match api.token_file");
  } else {
    c.trusted = true;
  }
  return c;
}

}  // namespace subnetd::api

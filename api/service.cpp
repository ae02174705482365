#include "api/service.hpp"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <future>
#include <optional>
#include <thread>

#include "api/auth.hpp"
#include "routing/path_trace.hpp"
#include "routing/text.hpp"

namespace subnetd::api {

using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;
using grpc::Status;
using grpc::StatusCode;

// ---------------------------------------------------------------------------
// WatchEvents machinery

class EventStream;

// The state of one WatchEvents stream, shared by its reactor, the hub and
// any store read in flight (each holds a shared_ptr).
//
// drive() is the only place that starts a write or finishes the call, and
// only one thread drives at a time (`driving`). The driver releases the
// mutex only around StartWrite/Finish (gRPC may run OnWriteDone/OnDone inline
// on the calling thread) and re-examines the whole state after StartWrite,
// so a drive() that finds another driver can simply return: whatever it was
// told to look at, the driver will see. The reactor stays alive
// until Finish has been called (OnDone comes after it), and only the driver
// calls Finish, setting `finished` first, so `reactor` is valid whenever the
// driver reads it with finished == false.
struct StreamState : std::enable_shared_from_this<StreamState> {
  StreamState(ServiceCore& c, std::int64_t after_id, std::vector<bool> kinds)
      : core(c), after(after_id), wanted(std::move(kinds)) {}

  void drive();
  bool wants(state::EventKind k) const {
    return wanted.empty() || wanted[static_cast<std::size_t>(k)];
  }
  void take(std::vector<state::Event>& batch) {
    for (state::Event& e : batch) {
      after = std::max(after, e.id);
      if (wants(e.kind)) pending.push_back(std::move(e));
    }
  }

  ServiceCore& core;
  std::mutex mu;
  EventStream* reactor = nullptr;  // null once OnDone ran
  bool driving = false;
  bool writing = false;
  bool fetching = false;
  bool finished = false;
  bool cancelled = false;
  bool stopping = false;
  std::optional<Status> error;
  std::int64_t after;        // highest id taken from the log
  std::vector<bool> wanted;  // by state::EventKind; empty = all kinds
  std::deque<state::Event> pending;
  v1::Event msg;  // the message being written
};

// Wakes idle streams when the EventLog grows, and ends them all at shutdown.
// One thread, waiting on the EventLog; the SM strand never calls into gRPC.
class WatchHub {
 public:
  explicit WatchHub(const state::EventLog& log) : log_(log), thread_([this] { run(); }) {}
  ~WatchHub() { stop(); }

  // False when the hub is stopping (the stream should end at once).
  bool add(std::shared_ptr<StreamState> s) {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    streams_.push_back(std::move(s));
    return true;
  }
  void remove(const StreamState* s) {
    std::lock_guard lock(mu_);
    std::erase_if(streams_, [s](const auto& p) { return p.get() == s; });
  }
  void stop() {
    std::vector<std::shared_ptr<StreamState>> streams;
    {
      std::lock_guard lock(mu_);
      if (stopping_ && !thread_.joinable()) return;
      stopping_ = true;
      streams = streams_;
    }
    cv_.notify_all();
    for (auto& s : streams) {
      {
        std::lock_guard lock(s->mu);
        s->stopping = true;
      }
      s->drive();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::int64_t seen = log_.last_id();
    for (;;) {
      {
        std::unique_lock lock(mu_);
        if (stopping_) return;
        if (log_.closed()) {
          cv_.wait_for(lock, 100ms, [this] { return stopping_; });
          continue;
        }
      }
      if (!log_.wait_for(seen, 100ms)) continue;
      seen = log_.last_id();
      std::vector<std::shared_ptr<StreamState>> streams;
      {
        std::lock_guard lock(mu_);
        streams = streams_;
      }
      for (auto& s : streams) s->drive();
    }
  }

  const state::EventLog& log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<StreamState>> streams_;
  std::thread thread_;  // last: starts after the members above exist
};

class EventStream final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  explicit EventStream(std::shared_ptr<StreamState> st) : st_(std::move(st)) {
    st_->reactor = this;
    // Headers go out at once, so a client can wait for them to know it is
    // subscribed (events after this point reach it) before acting.
    StartSendInitialMetadata();
    if (!st_->core.hub().add(st_)) {
      std::lock_guard lock(st_->mu);
      st_->stopping = true;
    }
    st_->drive();
  }
  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(st_->mu);
      st_->writing = false;
      if (!ok) st_->cancelled = true;  // the stream is broken: the client left
    }
    st_->drive();
  }
  void OnCancel() override {
    {
      std::lock_guard lock(st_->mu);
      st_->cancelled = true;
    }
    st_->drive();
  }
  void OnDone() override {
    {
      std::lock_guard lock(st_->mu);
      st_->reactor = nullptr;
    }
    st_->core.hub().remove(st_.get());
    delete this;
  }

 private:
  std::shared_ptr<StreamState> st_;
};

namespace {

google::protobuf::Timestamp to_timestamp(Clock::time_point tp) {
  return google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(
      std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count());
}

void fill_event(const state::Event& e, const FabricView& view, v1::Event* out) {
  out->Clear();
  out->set_id(e.id);
  *out->mutable_time() =
      google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(e.ts.time_since_epoch().count());
  out->set_kind(to_proto(e.kind));
  if (e.node_guid) {
    out->set_node_guid(e.node_guid->value);
    out->set_node_name(view.name_of(*e.node_guid));
  }
  if (e.port) out->set_port(*e.port);
  out->set_message(e.message);
  out->set_details_json(e.details_json);
}

}  // namespace

void StreamState::drive() {
  const auto self = shared_from_this();  // the reactor may go away while we drive
  std::unique_lock lk(mu);
  if (driving) return;
  driving = true;
  for (;;) {
    if (finished) break;
    std::optional<Status> end;
    if (cancelled) {
      end = Status(StatusCode::CANCELLED, "the client cancelled the stream");
    } else if (error) {
      end = *error;
    } else if (stopping) {
      end = Status::OK;  // the daemon is stopping: the stream ends cleanly
    }
    if (end || writing || fetching) {
      if (end && !writing && !fetching) {
        finished = true;
        driving = false;
        EventStream* r = reactor;
        lk.unlock();
        r->Finish(*end);
        return;
      }
      // A write or a store read is in flight; its completion drives again.
      break;
    }
    if (pending.empty()) {
      auto batch = core.deps().events->recent_since(after, core.options().watch_batch);
      if (!batch) {
        // Older than memory: read the store on the blocking pool.
        fetching = true;
        const std::int64_t from = after;
        auto task = [self, from] {
          const state::EventLog& log = *self->core.deps().events;
          auto older = log.since(from, self->core.options().watch_batch);
          {
            std::lock_guard lock(self->mu);
            self->fetching = false;
            if (!older.ok()) {
              self->error =
                  Status(StatusCode::INTERNAL, fmt::format("reading stored events after id {}: {}",
                                                           from, older.error().message));
            } else if (older->empty()) {
              // Nothing stored past `from` and memory starts later: skip the gap.
              self->after = std::max(self->after, log.oldest_in_memory() - 1);
            } else {
              self->take(*older);
            }
          }
          self->drive();
        };
        if (!core.pool().post(std::move(task))) {
          fetching = false;
          error = Status(StatusCode::UNAVAILABLE,
                         "cannot read stored events now (the server is busy or stopping)");
        }
        continue;
      }
      if (batch->empty()) break;  // idle until the hub sees a new event
      take(*batch);
      continue;  // maybe all filtered out: look again
    }
    fill_event(pending.front(), *core.view(), &msg);
    pending.pop_front();
    writing = true;
    EventStream* r = reactor;
    lk.unlock();
    r->StartWrite(&msg);
    lk.lock();
  }
  driving = false;
}

// ---------------------------------------------------------------------------
// Helpers

namespace {

constexpr std::uint32_t kDefaultPageSize = 100;
constexpr std::uint32_t kMaxPageSize = 1000;

grpc::ServerUnaryReactor* reply(grpc::CallbackServerContext* ctx, Status s) {
  auto* r = ctx->DefaultReactor();
  r->Finish(std::move(s));
  return r;
}

Status invalid(std::string msg) {
  return Status(StatusCode::INVALID_ARGUMENT, std::move(msg));
}

// Why the BlockingPool refused a task.
Status refused(const BlockingPool& pool) {
  if (pool.stopping()) return Status(StatusCode::UNAVAILABLE, "subnetd is stopping");
  return Status(StatusCode::RESOURCE_EXHAUSTED,
                "too many calls are waiting on the subnet manager; retry later");
}

Status no_fabric(const FabricView& v) {
  return Status(StatusCode::FAILED_PRECONDITION,
                fmt::format("no sweep has finished yet (SM state {}{}{})",
                            state::sm_state_name(v.state().state),
                            v.state().last_error.empty() ? "" : ": ", v.state().last_error));
}

Result<std::uint32_t> page_size(std::uint32_t requested) {
  if (requested == 0) return kDefaultPageSize;
  if (requested > kMaxPageSize) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("page_size: {} is above the maximum {}", requested, kMaxPageSize)};
  }
  return requested;
}

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

}  // namespace

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
      pool_(opts_.blocking_threads, opts_.max_blocking_queue),
      hub_(std::make_unique<WatchHub>(*deps_.events)) {}

ServiceCore::~ServiceCore() {
  shutdown();
}

void ServiceCore::shutdown() {
  hub_->stop();
  pool_.stop();
}

std::string ServiceCore::describe_peer(const std::string& peer) const {
  return opts_.describe_peer ? opts_.describe_peer(peer) : peer;
}

std::optional<Guid> ServiceCore::remembered_guid(const std::string& name) {
  auto v = view();
  std::lock_guard lock(names_mu_);
  if (v->has_fabric() && (!names_seeded_ || v->state().generation != names_generation_)) {
    for (const routing::Node& n : v->topo().nodes()) names_[n.description] = n.guid;
    names_generation_ = v->state().generation;
    names_seeded_ = true;
  }
  auto it = names_.find(name);
  if (it == names_.end()) return std::nullopt;
  return it->second;
}

// Checks a mutating call. Unix-socket connections were vetted at accept.
static Status authorize(grpc::CallbackServerContext* ctx, Trust trust, const ServiceCore& core,
                        std::string_view method) {
  if (trust == Trust::kUnixPeer) return Status::OK;
  const std::string& token = core.options().token;
  if (token.empty()) {
    return Status(StatusCode::PERMISSION_DENIED,
                  fmt::format("{} changes the fabric; over TCP that needs a bearer token and this "
                              "daemon has no api.token_file (use the unix socket)",
                              method));
  }
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return Status(StatusCode::PERMISSION_DENIED,
                  fmt::format("{} changes the fabric: send \"authorization: Bearer <token>\" "
                              "(subnetctl --token-file) or use the unix socket",
                              method));
  }
  const auto presented = bearer_token(std::string_view(it->second.data(), it->second.size()));
  if (!presented) {
    return Status(StatusCode::PERMISSION_DENIED, "authorization: expected \"Bearer <token>\"");
  }
  if (!constant_time_equal(*presented, token)) {
    return Status(StatusCode::PERMISSION_DENIED,
                  "authorization: the bearer token does not match api.token_file");
  }
  return Status::OK;
}

static std::string who(grpc::CallbackServerContext* ctx, Trust trust, const ServiceCore& core) {
  return fmt::format("{}{}", core.describe_peer(ctx->peer()),
                     trust == Trust::kBearerToken ? " (bearer token)" : "");
}

// ---------------------------------------------------------------------------
// SubnetManager: reads

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

template <class T>
class FailedWrite final : public grpc::ServerWriteReactor<T> {
 public:
  explicit FailedWrite(Status s) { this->Finish(std::move(s)); }
  void OnDone() override { delete this; }
};

// Streams one switch's LFT, a block per message, from the view taken when the
// call started (the whole table comes from one snapshot).
class LftWriter final : public grpc::ServerWriteReactor<v1::ForwardingTableBlock> {
 public:
  LftWriter(std::shared_ptr<const FabricView> view, NodeId sw) : view_(std::move(view)), sw_(sw) {
    const routing::Node& n = view_->topo().node(sw_);
    lft_ = &view_->state().routes->lfts[n.switch_index];
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
  if (!view->has_routes()) {
    return new W(Status(StatusCode::FAILED_PRECONDITION, "no routing has been computed yet"));
  }
  if (view->topo().node(target->node).switch_index >= view->state().routes->lfts.size()) {
    return new W(
        Status(StatusCode::INTERNAL, fmt::format("node: the published routes have no table for {}",
                                                 view->topo().label(target->node))));
  }
  return new LftWriter(std::move(view), target->node);
}

grpc::ServerUnaryReactor* SubnetManagerService::TracePath(grpc::CallbackServerContext* ctx,
                                                          const v1::TracePathRequest* req,
                                                          v1::TracePathResponse* resp) {
  if (!req->has_source()) return reply(ctx, invalid("source: required"));
  if (!req->has_destination()) return reply(ctx, invalid("destination: required"));
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  if (!view->has_routes()) {
    return reply(ctx, Status(StatusCode::FAILED_PRECONDITION, "no routing has been computed yet"));
  }
  const routing::Topology& t = view->topo();

  // A port of a node: the one the reference names, else NodeRef.port, else
  // the node's default port.
  const auto pick_port = [&](const v1::NodeRef& ref, std::string_view field) -> Result<PortRef> {
    auto target = view->resolve(ref);
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
        return Error{Errc::kInvalidArgument,
                     fmt::format("{}.port: {} has ports 1..{}, not {}", field, t.label(n),
                                 node.num_ports, ref.port())};
      }
      return PortRef{n, static_cast<PortNum>(ref.port())};
    }
    auto p = view->default_port(n);
    if (!p) {
      return Error{Errc::kUnreachable,
                   fmt::format("{}: {} has no cabled port that is up", field, t.label(n))};
    }
    return PortRef{n, *p};
  };

  auto src = pick_port(req->source(), "source");
  if (!src.ok()) return reply(ctx, to_status(src.error()));
  auto dst = pick_port(req->destination(), "destination");
  if (!dst.ok()) return reply(ctx, to_status(dst.error()));
  const Lid dlid = req->destination().ref_case() == v1::NodeRef::kLid
                       ? Lid{req->destination().lid()}
                       : view->port_lid(dst->node, dst->port);
  if (!dlid.valid()) {
    return reply(ctx, Status(StatusCode::FAILED_PRECONDITION,
                             fmt::format("destination: {} port {} has no LID", t.label(dst->node),
                                         dst->port)));
  }
  auto trace = routing::trace_path(t, view->lids(), *view->state().routes, *src, dlid);
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
      lid_port = h.in_port != 0 ? h.in_port : h.out_port != 0 ? h.out_port : src->port;
    }
    hop->set_lid(view->port_lid(h.node, lid_port).value);
  }
  resp->set_source_lid(view->port_lid(src->node, src->port).value);
  resp->set_destination_lid(dlid.value);
  resp->set_complete(trace->complete());
  if (!trace->complete()) resp->set_message(trace->status.error().message);
  resp->set_generation(view->state().generation);
  return reply(ctx, Status::OK);
}

grpc::ServerWriteReactor<v1::Event>* SubnetManagerService::WatchEvents(
    grpc::CallbackServerContext*, const v1::WatchEventsRequest* req) {
  using W = FailedWrite<v1::Event>;
  if (req->from_event_id() < 0) {
    return new W(invalid(fmt::format("from_event_id: {} is negative", req->from_event_id())));
  }
  std::vector<bool> kinds;
  for (int k : req->kinds()) {
    auto kind = from_proto(static_cast<v1::EventKind>(k));
    if (!kind) return new W(invalid(fmt::format("kinds: {} is not an event kind", k)));
    if (kinds.empty())
      kinds.assign(static_cast<std::size_t>(state::EventKind::kSmState) + 1, false);
    kinds[static_cast<std::size_t>(*kind)] = true;
  }
  const std::int64_t after =
      req->from_event_id() == 0 ? core_.deps().events->last_id() : req->from_event_id() - 1;
  return new EventStream(std::make_shared<StreamState>(core_, after, std::move(kinds)));
}

// ---------------------------------------------------------------------------
// SubnetManager: calls that wait for the SM

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

// ---------------------------------------------------------------------------
// Simulator

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
  if (Status s = authorize(ctx, trust_, core_, "Simulator.SetLinkState"); !s.ok())
    return reply(ctx, s);
  if (core_.deps().sim == nullptr) return reply(ctx, no_simulator());
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  if (req->port() == 0 || req->port() > 254) {
    return reply(ctx, invalid(fmt::format("port: {} is not an external port number", req->port())));
  }
  if (req->state() != v1::SIM_STATE_UP && req->state() != v1::SIM_STATE_DOWN) {
    return reply(ctx, invalid("state: required: SIM_STATE_UP or SIM_STATE_DOWN"));
  }
  auto view = core_.view();
  auto guid = sim_node_guid(core_, *view, req->node());
  if (!guid.ok()) return reply(ctx, to_status(guid.error()));
  const auto port = static_cast<PortNum>(req->port());
  const bool up = req->state() == v1::SIM_STATE_UP;

  // What the SM's view showed before the change (see the proto comment).
  bool was_up = false;
  if (view->has_fabric()) {
    if (auto n = view->node_by_guid(*guid); n && port <= view->topo().node(*n).num_ports) {
      const routing::Port& p = view->topo().port(*n, port);
      was_up = p.connected() && p.state != routing::PortState::kDown;
      if (p.connected()) view->fill_link_end({p.remote_node, p.remote_port}, resp->mutable_peer());
    }
  }
  spdlog::info("gRPC Simulator.SetLinkState {:#018x} port {} {} by {}", guid->value, port,
               up ? "up" : "down", who(ctx, trust_, core_));
  auto* reactor = ctx->DefaultReactor();
  ServiceCore& core = core_;
  const Guid g = *guid;
  const bool posted = core.pool().post([&core, reactor, resp, g, port, up, was_up] {
    Result<void> r = core.deps().sim->set_link_state(g, port, up);
    if (!r.ok()) {
      reactor->Finish(to_status(r.error()));
      return;
    }
    resp->set_changed(was_up != up);
    reactor->Finish(Status::OK);
  });
  if (!posted) {
    reactor->Finish(refused(core.pool()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SimulatorService::SetSwitchState(grpc::CallbackServerContext* ctx,
                                                           const v1::SetSwitchStateRequest* req,
                                                           v1::SetSwitchStateResponse* resp) {
  if (Status s = authorize(ctx, trust_, core_, "Simulator.SetSwitchState"); !s.ok()) {
    return reply(ctx, s);
  }
  if (core_.deps().sim == nullptr) return reply(ctx, no_simulator());
  if (!req->has_node()) return reply(ctx, invalid("node: required"));
  if (req->state() != v1::SIM_STATE_UP && req->state() != v1::SIM_STATE_DOWN) {
    return reply(ctx, invalid("state: required: SIM_STATE_UP or SIM_STATE_DOWN"));
  }
  auto view = core_.view();
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
               who(ctx, trust_, core_));
  auto* reactor = ctx->DefaultReactor();
  ServiceCore& core = core_;
  const Guid g = *guid;
  const bool posted = core.pool().post([&core, reactor, resp, g, up, in_view, links] {
    Result<void> r = core.deps().sim->set_switch_state(g, up);
    if (!r.ok()) {
      reactor->Finish(to_status(r.error()));
      return;
    }
    // A switch the SM sees is up; one it does not see is down (or unknown).
    resp->set_changed(in_view != up);
    resp->set_links_affected(links);
    reactor->Finish(Status::OK);
  });
  if (!posted) {
    reactor->Finish(refused(core.pool()));
  }
  return reactor;
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

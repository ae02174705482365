// subnet.v1.SubnetManager.WatchEvents: replay from the EventLog's memory, or
// from the store on a BlockingPool when the id is older than memory, then
// follow; the WatchHub wakes idle streams when the log grows.

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <deque>
#include <optional>

#include "api/service_internal.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

class EventStream;

// The state of one WatchEvents stream, shared by its reactor, the hub and
// any store read in flight (each holds a shared_ptr). The stream's ticket
// (call_limits.hpp) is the reactor's; it is given back in OnDone.
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
  StreamState(ServiceCore& c, BlockingPool& p, std::int64_t after_id, std::vector<bool> kinds)
      : core(c), pool(p), after(after_id), wanted(std::move(kinds)) {}

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
  BlockingPool& pool;  // for store reads: the caller's class's pool
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

WatchHub::WatchHub(const state::EventLog& log) : log_(log), thread_([this] { run(); }) {}

WatchHub::~WatchHub() {
  stop();
}

bool WatchHub::add(std::shared_ptr<StreamState> s) {
  std::lock_guard lock(mu_);
  if (stopping_) return false;
  streams_.push_back(std::move(s));
  return true;
}

void WatchHub::remove(const StreamState* s) {
  std::lock_guard lock(mu_);
  std::erase_if(streams_, [s](const auto& p) { return p.get() == s; });
}

void WatchHub::stop() {
  std::vector<std::shared_ptr<StreamState>> streams;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    streams = streams_;
  }
  cv_.notify_all();
  log_.wake_waiters();  // the hub's own wait on the log
  for (auto& s : streams) {
    {
      std::lock_guard lock(s->mu);
      s->stopping = true;
    }
    s->drive();
  }
  if (thread_.joinable()) thread_.join();
}

// Waits for the log to grow; stop() wakes it (EventLog::wake_waiters), so it
// never wakes up just to look. Once the log is closed nothing more comes:
// it waits for stop() alone.
void WatchHub::run() {
  std::int64_t seen = log_.last_id();
  for (;;) {
    const std::uint64_t wakes = log_.wake_count();  // before stopping_: see wait_for
    {
      std::unique_lock lock(mu_);
      if (stopping_) return;
      if (log_.closed()) {
        cv_.wait(lock, [this] { return stopping_; });
        return;
      }
    }
    if (!log_.wait_for(seen, std::chrono::hours{1}, wakes)) continue;
    seen = log_.last_id();
    std::vector<std::shared_ptr<StreamState>> streams;
    {
      std::lock_guard lock(mu_);
      streams = streams_;
    }
    for (auto& s : streams) s->drive();
  }
}

class EventStream final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  EventStream(std::shared_ptr<StreamState> st, Ticket ticket)
      : st_(std::move(st)), ticket_(std::move(ticket)) {
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
    st_->core.limits().release(ticket_);
    delete this;
  }

 private:
  std::shared_ptr<StreamState> st_;
  Ticket ticket_;
};

namespace {

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
        if (!pool.post(std::move(task))) {
          fetching = false;
          if (pool.stopping()) {
            error = Status(StatusCode::UNAVAILABLE, "subnetd is stopping");
          } else {
            error = Status(
                StatusCode::RESOURCE_EXHAUSTED,
                fmt::format("reading stored events: {} reads are queued, the most allowed (limit "
                            "max_blocking_queue); resume later with from_event_id {}",
                            core.options().max_blocking_queue, from + 1));
          }
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

grpc::ServerWriteReactor<v1::Event>* SubnetManagerService::WatchEvents(
    grpc::CallbackServerContext* ctx, const v1::WatchEventsRequest* req) {
  using W = FailedWrite<v1::Event>;
  if (req->from_event_id() < 0) {
    return new W(invalid(fmt::format("from_event_id: {} is negative", req->from_event_id())));
  }
  std::vector<bool> kinds;
  for (int k : req->kinds()) {
    auto kind = from_proto(static_cast<v1::EventKind>(k));
    if (!kind) return new W(invalid(fmt::format("kinds: {} is not an event kind", k)));
    if (kinds.empty()) kinds.assign(state::kEventKinds, false);
    kinds[static_cast<std::size_t>(*kind)] = true;
  }
  const std::int64_t after =
      req->from_event_id() == 0 ? core_.deps().events->last_id() : req->from_event_id() - 1;
  // A stream is cheap while it follows, but its replay may read the store:
  // streams are limited per client (and anonymous ones together).
  const Caller caller = identify(ctx, trust_, core_, "WatchEvents");
  Ticket ticket;
  if (Status s = core_.limits().admit(CallKind::kWatch, caller.trusted, caller.peer.client,
                                      "WatchEvents", ticket);
      !s.ok()) {
    return new W(std::move(s));
  }
  return new EventStream(
      std::make_shared<StreamState>(core_, core_.pool(caller.trusted), after, std::move(kinds)),
      std::move(ticket));
}

}  // namespace subnetd::api

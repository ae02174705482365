#include "api/waiting_call.hpp"

#include <fmt/format.h>

#include "api/service.hpp"

namespace subnetd::api {

using grpc::Status;
using grpc::StatusCode;

// The reactor of a waiting call: it only hands gRPC's cancel to the call and
// goes away once gRPC is done with it.
class WaitingCall::Reactor final : public grpc::ServerUnaryReactor {
 public:
  explicit Reactor(std::shared_ptr<WaitingCall> call) : call_(std::move(call)) {}
  void OnCancel() override {
    call_->finish(Status(StatusCode::CANCELLED,
                         fmt::format("cancelled by the client; {} continues", call_->what())));
  }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<WaitingCall> call_;
};

WaitingCall::WaitingCall(ServiceCore& core, std::string what, Ticket ticket)
    : core_(core), what_(std::move(what)), ticket_(std::move(ticket)) {}

std::shared_ptr<WaitingCall> WaitingCall::start(ServiceCore& core, grpc::CallbackServerContext* ctx,
                                                std::string what, std::chrono::milliseconds limit,
                                                Ticket ticket, grpc::ServerUnaryReactor** reactor) {
  auto call = std::make_shared<WaitingCall>(core, std::move(what), std::move(ticket));
  auto* r = new Reactor(call);
  call->reactor_ = r;
  *reactor = r;
  if (!core.add_waiting(call)) {
    call->finish(Status(StatusCode::UNAVAILABLE,
                        fmt::format("subnetd is stopping; {} was not started", call->what_)));
    return nullptr;
  }
  // The wait limit: ours, or the client's deadline when that is earlier
  // (gRPC cancels the call then too; whichever comes first finishes it).
  const auto now = std::chrono::system_clock::now();
  const auto steady_now = std::chrono::steady_clock::now();
  const auto until = std::min(ctx->deadline(), now + limit);
  const auto wait = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(until - now),
                             std::chrono::milliseconds{0});
  std::weak_ptr<WaitingCall> weak = call;
  const auto handle = core.timer().schedule(steady_now + wait, [weak, wait] {
    if (auto c = weak.lock()) c->expire(wait);
  });
  {
    std::lock_guard lock(call->mu_);
    if (!call->finished_) {
      call->limit_ = handle;
      call->limit_armed_ = true;
      return call;
    }
  }
  // Finished meanwhile (shutdown): the entry would fire for nothing.
  core.timer().cancel(handle);
  return call;
}

void WaitingCall::hand_on(std::function<void()> task) {
  // Under the call's mutex: shutdown cannot claim the call (and go on to
  // destroy the core) until the task is queued; the timer drops it if it
  // stops first.
  std::lock_guard lock(mu_);
  if (finished_) return;
  core_.timer().schedule(std::chrono::steady_clock::now(), std::move(task));
}

void WaitingCall::expire(std::chrono::milliseconds waited) {
  finish(Status(StatusCode::DEADLINE_EXCEEDED,
                fmt::format("{} still running after {} ms; it continues in the background", what_,
                            waited.count())));
}

bool WaitingCall::finish(grpc::Status status) {
  return finish([&status](ServiceCore&) { return std::move(status); });
}

bool WaitingCall::finish(const Answer& answer) {
  const auto self = shared_from_this();  // leaving the core's set may drop the last other owner
  grpc::ServerUnaryReactor* reactor = nullptr;
  bool armed = false;
  {
    std::lock_guard lock(mu_);
    if (finished_) return false;
    finished_ = true;
    reactor = reactor_;
    reactor_ = nullptr;
    armed = limit_armed_;
  }
  // Ours alone from here: the others find finished_ set. The core is alive:
  // shutdown waits until this call has left its set (remove_waiting, last).
  if (armed) core_.timer().cancel(limit_);
  Status status = answer(core_);
  core_.limits().release(ticket_);
  reactor->Finish(std::move(status));  // neither the reactor nor the response after this
  core_.remove_waiting(this);
  return true;
}

}  // namespace subnetd::api

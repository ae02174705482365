#pragma once
// WaitingCall: a unary gRPC call that waits for a completion — the SM's,
// through SmControl — without holding a thread.
//
// Four things may end such a call: the completion, its wait limit (a
// CallTimer entry), the client (cancel, or its deadline: gRPC's OnCancel),
// and ServiceCore::shutdown(). Whichever comes first finishes it; the others
// find it finished and do nothing. So the call is finished exactly once, and
// the response object (gRPC's, valid until OnDone) is written only by the
// one that finishes it, before Finish, and never after.
//
// Ownership. A WaitingCall is shared (shared_ptr) by its reactor (until
// gRPC's OnDone), the completion handed to the SM (until the SM calls or
// drops it, possibly long after the call ended or the Server is gone), and
// the core's set of waiting calls (until it is finished). The timer holds a
// weak_ptr. The call uses the core only while finishing it, and shutdown
// waits for a finish in progress, so a late completion never touches a
// destroyed core: it finds the call finished.
//
// Threads: any. finish() takes the call's mutex only to claim the call; the
// answer and gRPC's Finish run outside it (gRPC may run OnDone inline). A
// completion from the SM only queues the answer for the timer thread
// (completion()), so the SM's strand never fills a response.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "api/call_limits.hpp"
#include "api/call_timer.hpp"

namespace subnetd::api {

class ServiceCore;

class WaitingCall : public std::enable_shared_from_this<WaitingCall> {
 public:
  // Fills the response and returns the call's status; runs only in the
  // finish that wins, with the core still alive.
  using Answer = std::function<grpc::Status(ServiceCore&)>;

  // Starts waiting: the call gets its reactor (returned in `reactor`, for the
  // gRPC method to return) and, holding `ticket`, joins the core's waiting
  // calls with its wait limit armed: `limit`, or the client's deadline when
  // that comes first. `what` names the awaited work in messages ("the
  // sweep"). Null when subnetd is stopping: the reactor is then already
  // finished with UNAVAILABLE and nothing is to be started.
  static std::shared_ptr<WaitingCall> start(ServiceCore& core, grpc::CallbackServerContext* ctx,
                                            std::string what, std::chrono::milliseconds limit,
                                            Ticket ticket, grpc::ServerUnaryReactor** reactor);

  // Finishes the call with `answer`, unless it is finished already. True
  // when this call finished it.
  bool finish(const Answer& answer);
  bool finish(grpc::Status status);

  // For the completion: a callable that finishes the call with
  // `answer(core, value)`. The SM calls it on its strand, where it only
  // hands the value on: the answer runs on the core's timer thread, because
  // filling a response may build the FabricView of a snapshot just
  // published, which takes a while on a large fabric.
  template <class T, class F>
  auto completion(F answer) {
    return [self = shared_from_this(), answer = std::move(answer)](T value) {
      self->hand_on([self, answer, value = std::move(value)]() mutable {
        self->finish([&](ServiceCore& core) { return answer(core, std::move(value)); });
      });
    };
  }

  const std::string& what() const { return what_; }

  // Use start().
  WaitingCall(ServiceCore& core, std::string what, Ticket ticket);

 private:
  class Reactor;
  void expire(std::chrono::milliseconds waited);
  // Runs `task` on the core's timer thread now, unless the call is finished
  // (then the core may be gone, and there is nothing to do).
  void hand_on(std::function<void()> task);

  ServiceCore& core_;
  const std::string what_;
  std::mutex mu_;
  bool finished_ = false;
  grpc::ServerUnaryReactor* reactor_ = nullptr;  // valid until finished_ (then gRPC's)
  Ticket ticket_;
  CallTimer::Handle limit_{};
  bool limit_armed_ = false;
};

}  // namespace subnetd::api

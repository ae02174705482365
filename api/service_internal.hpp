#pragma once
// What the files of api/'s services share; not for use outside api/.
//
//   service_core.cpp            ServiceCore, to_status, the helpers below
//   subnet_manager_service.cpp  GetStatus, ListNodes, GetNode, ListLinks,
//                               GetForwardingTable, TracePath
//   control_calls.cpp           TriggerSweep, VerifyRouting, SetPortState
//   simulator_service.cpp       Simulator
//   watch_events.cpp            WatchEvents and its hub
//   waiting_call.{hpp,cpp}      a unary call finished by a completion

#include <google/protobuf/timestamp.pb.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/service.hpp"

namespace subnetd::api {

using Clock = std::chrono::system_clock;

// Finishes a call at once with `s` (the default reactor).
grpc::ServerUnaryReactor* reply(grpc::CallbackServerContext* ctx, grpc::Status s);
grpc::Status invalid(std::string msg);
// FAILED_PRECONDITION before the first sweep / before the first routing.
grpc::Status no_fabric(const FabricView& v);
// FAILED_PRECONDITION naming the master when this SM is not master (a
// standby, or disabled): what changes the fabric is the master's to do.
// OK otherwise.
grpc::Status not_master(const FabricView& v);
grpc::Status no_routes();
// A list call's page size: 0 = 100; above 1000 is kInvalidArgument.
Result<std::uint32_t> page_size(std::uint32_t requested);

google::protobuf::Timestamp to_timestamp(Clock::time_point tp);
// The last heavy sweep of the view's snapshot.
void fill_sweep_summary(const FabricView& view, v1::SweepSummary* out);

// The caller of one call: who it is and what it may do.
struct Caller {
  PeerId peer;
  Trust trust = Trust::kUnixPeer;
  // Unix socket (vetted at accept), or TCP with the right bearer token: may
  // mutate, and has the trusted capacity (call_limits.hpp).
  bool trusted = false;
  // Why not trusted (PERMISSION_DENIED for a mutating call); OK when trusted.
  grpc::Status refusal;
  // Audit text for log lines and SmControl's `who`: the peer, plus "(bearer
  // token)" over TCP.
  std::string who() const;
};
// `method` names the call in a refusal ("TriggerSweep").
Caller identify(grpc::CallbackServerContext* ctx, Trust trust, const ServiceCore& core,
                std::string_view method);

// A WriteReactor that only reports an error.
template <class T>
class FailedWrite final : public grpc::ServerWriteReactor<T> {
 public:
  explicit FailedWrite(grpc::Status s) { this->Finish(std::move(s)); }
  void OnDone() override { delete this; }
};

// ---------------------------------------------------------------------------
// WatchEvents (watch_events.cpp)

struct StreamState;

// Wakes idle WatchEvents streams when the EventLog grows, and ends them all
// at shutdown. One thread, waiting on the EventLog; the SM strand never
// calls into gRPC.
class WatchHub {
 public:
  explicit WatchHub(const state::EventLog& log);
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // False when the hub is stopping (the stream should end at once).
  bool add(std::shared_ptr<StreamState> s);
  void remove(const StreamState* s);
  void stop();

 private:
  void run();

  const state::EventLog& log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<StreamState>> streams_;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace subnetd::api

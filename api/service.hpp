#pragma once
// The gRPC services of subnetd: subnet.v1.SubnetManager and subnet.v1.Simulator,
// on gRPC's callback API.
//
// Reads are answered from the StatePublisher's current snapshot (through a
// per-generation FabricView) on gRPC's threads; they never wait for the SM.
// Calls that wait for the SM — TriggerSweep(wait), VerifyRouting and
// SetPortState — hold no thread while they wait: each is a WaitingCall that
// the SmControl completion finishes (or its wait limit, the client's cancel
// or shutdown, whichever comes first). Simulator changes call SimControl
// directly (a mutex and the simulator's due events). Only WatchEvents'
// reads of events older than memory block (on the store), and they run on a
// BlockingPool.
//
// Threads and ownership. A ServiceCore holds what every listener shares (the
// view cache, the call limits, the wait-limit timer, the waiting calls, the
// blocking pools, the WatchEvents hub). The Server (server.hpp) owns one core
// and, per listener, a SubnetManagerService and a SimulatorService bound to
// it with that listener's Trust. Everything here is thread-safe. Shutdown
// order (Server::stop): ServiceCore::shutdown() ends every WatchEvents stream
// with OK and every waiting call with UNAVAILABLE, then the gRPC servers are
// shut down, then the core is destroyed. A completion the SM calls after
// that finds its call finished and touches nothing else.
//
// The files: service_core.cpp (ServiceCore, shared helpers, who a caller
// is), subnet_manager_service.cpp (reads), control_calls.cpp (the calls that
// wait for the SM), simulator_service.cpp, watch_events.cpp; waiting_call.hpp,
// call_limits.hpp, call_timer.hpp; the helpers they share are declared in
// service_internal.hpp.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/blocking_pool.hpp"
#include "api/call_limits.hpp"
#include "api/call_timer.hpp"
#include "api/fabric_view.hpp"
#include "state/cabling.hpp"
#include "state/control.hpp"
#include "state/event_log.hpp"
#include "state/fabric_state.hpp"
#include "state/port_counters.hpp"
#include "state/port_health.hpp"
#include "state/sa_info.hpp"
#include "subnet/v1/subnet.grpc.pb.h"

namespace grpc {
class Status;
}

namespace subnetd::api {

// What the daemon plugs in. The referenced objects must outlive the Server.
struct ServiceDeps {
  const state::StatePublisher* state = nullptr;  // required
  state::SmControl* sm = nullptr;                // required
  state::SimControl* sim = nullptr;              // null unless fabric.transport is sim
  const state::EventLog* events = nullptr;       // required
  const state::SaInfo* sa = nullptr;             // null when the daemon runs no SA
  const state::CablingCheck* cabling =
      nullptr;  // bring-up screening; null: CheckCabling UNAVAILABLE
  const state::CounterBoard* counters = nullptr;  // the performance manager's; null: none
  const state::HealthBoard* health = nullptr;     // the fault policy's; null: none
  std::string version;                            // reported by GetStatus
  std::chrono::system_clock::time_point started_at{};
};

// Who is at the other end of a call, from ServerContext::peer().
struct PeerId {
  std::string who;     // for audit lines: "unix peer uid 0 gid 0 pid 42", "ipv4:10.0.0.7:50712"
  std::string client;  // what per-client limits count: "uid 0", "ipv4:10.0.0.7"
};

// The client part of a gRPC peer string: "ipv4:10.0.0.7:50712" ->
// "ipv4:10.0.0.7", "ipv6:[::1]:50712" -> "ipv6:[::1]"; others unchanged.
std::string client_of_peer(std::string_view peer);

// The limits (CallLimitOptions, call_limits.hpp) and the rest.
struct ServiceOptions : CallLimitOptions {
  // The bearer token accepted for mutating calls over TCP; empty = none.
  std::string token;
  // Longest a TriggerSweep(wait=true) call waits (also bounded by the
  // client's deadline); the sweep itself continues past it.
  std::chrono::milliseconds sweep_wait_limit{std::chrono::minutes{10}};
  // Longest VerifyRouting and SetPortState wait.
  std::chrono::milliseconds control_wait_limit{std::chrono::minutes{2}};
  // WatchEvents' reads of stored events: threads and queue of each of the two
  // blocking pools (one for trusted callers, one for anonymous ones).
  unsigned blocking_threads = 2;
  std::size_t max_blocking_queue = 64;
  // Events a WatchEvents stream reads from memory or the store at a time.
  std::size_t watch_batch = 256;
  // Names a caller from ServerContext::peer(); the Server resolves unix
  // peers to uid/pid. Without it: the peer string and client_of_peer().
  std::function<PeerId(const std::string& peer)> identify_peer;
};

class WatchHub;
class WaitingCall;

class ServiceCore {
 public:
  ServiceCore(ServiceDeps deps, ServiceOptions opts);
  ~ServiceCore();
  ServiceCore(const ServiceCore&) = delete;
  ServiceCore& operator=(const ServiceCore&) = delete;

  // Ends WatchEvents streams cleanly, ends waiting calls with UNAVAILABLE
  // (and refuses new ones), waits until no call is being finished, stops the
  // timer and the blocking pools. Idempotent. Call before the gRPC servers'
  // Shutdown, from a thread that is not a gRPC thread.
  void shutdown();

  const ServiceDeps& deps() const { return deps_; }
  const ServiceOptions& options() const { return opts_; }
  std::shared_ptr<const FabricView> view() { return views_.current(); }
  // The pool for a caller's blocking work: trusted callers have their own.
  BlockingPool& pool(bool trusted) { return trusted ? trusted_pool_ : anonymous_pool_; }
  WatchHub& hub() { return *hub_; }
  CallLimits& limits() { return limits_; }
  CallTimer& timer() { return timer_; }
  PeerId identify_peer(const std::string& peer) const;

  // The waiting calls, so that shutdown can end them. add() is false once
  // shutdown has begun; remove() is the last thing a finishing call does
  // with the core.
  bool add_waiting(std::shared_ptr<WaitingCall> call);
  void remove_waiting(const WaitingCall* call);

  // What every snapshot seen by a Simulator call showed, so that the
  // Simulator can name what the SM no longer sees: a node by name (a switch
  // that is off), the far end of a cable (the fast path takes a failed cable
  // out of the topology it publishes; a cable plugged back in stays out
  // until the next heavy sweep). remember() takes in `view` once per
  // generation.
  void remember(const FabricView& view);
  std::optional<Guid> remembered_guid(const std::string& name);
  std::optional<v1::LinkEnd> remembered_peer(Guid node, PortNum port);

 private:
  ServiceDeps deps_;
  ServiceOptions opts_;
  ViewCache views_;
  CallLimits limits_;
  CallTimer timer_;
  BlockingPool trusted_pool_;
  BlockingPool anonymous_pool_;
  std::unique_ptr<WatchHub> hub_;

  std::mutex waiting_mu_;
  std::condition_variable waiting_cv_;  // a call left `waiting_`
  bool stopping_ = false;
  std::unordered_map<const WaitingCall*, std::shared_ptr<WaitingCall>> waiting_;

  // remember(): names, nodes and cables of the snapshots seen.
  struct RememberedNode {
    std::string name;
    routing::NodeType type = routing::NodeType::kCa;
  };
  struct RememberedEnd {
    Guid node;
    PortNum port = 0;
    Guid port_guid;
  };
  std::mutex memory_mu_;
  std::uint64_t memory_generation_ = 0;
  bool memory_seeded_ = false;
  std::unordered_map<std::string, Guid> names_;
  std::unordered_map<std::uint64_t, RememberedNode> nodes_;  // by node GUID
  std::unordered_map<std::uint64_t, RememberedEnd> peers_;   // by (node GUID, port) key
};

// How a listener's callers may make mutating calls.
enum class Trust {
  kUnixPeer,     // connection accepted over the unix socket after its peer check
  kBearerToken,  // TCP: each mutating call must carry the bearer token
};

class SubnetManagerService final : public v1::SubnetManager::CallbackService {
 public:
  SubnetManagerService(ServiceCore& core, Trust trust) : core_(core), trust_(trust) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const v1::GetStatusRequest* req,
                                      v1::GetStatusResponse* resp) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx,
                                      const v1::ListNodesRequest* req,
                                      v1::ListNodesResponse* resp) override;
  grpc::ServerUnaryReactor* GetNode(grpc::CallbackServerContext* ctx, const v1::GetNodeRequest* req,
                                    v1::GetNodeResponse* resp) override;
  grpc::ServerUnaryReactor* ListLinks(grpc::CallbackServerContext* ctx,
                                      const v1::ListLinksRequest* req,
                                      v1::ListLinksResponse* resp) override;
  grpc::ServerWriteReactor<v1::ForwardingTableBlock>* GetForwardingTable(
      grpc::CallbackServerContext* ctx, const v1::GetForwardingTableRequest* req) override;
  grpc::ServerUnaryReactor* TracePath(grpc::CallbackServerContext* ctx,
                                      const v1::TracePathRequest* req,
                                      v1::TracePathResponse* resp) override;
  grpc::ServerUnaryReactor* GetPathRecord(grpc::CallbackServerContext* ctx,
                                          const v1::GetPathRecordRequest* req,
                                          v1::GetPathRecordResponse* resp) override;
  grpc::ServerUnaryReactor* ListPartitions(grpc::CallbackServerContext* ctx,
                                           const v1::ListPartitionsRequest* req,
                                           v1::ListPartitionsResponse* resp) override;
  grpc::ServerUnaryReactor* ListMulticastGroups(grpc::CallbackServerContext* ctx,
                                                const v1::ListMulticastGroupsRequest* req,
                                                v1::ListMulticastGroupsResponse* resp) override;
  grpc::ServerUnaryReactor* CheckCabling(grpc::CallbackServerContext* ctx,
                                         const v1::CheckCablingRequest* req,
                                         v1::CheckCablingResponse* resp) override;
  grpc::ServerUnaryReactor* GetPortCounters(grpc::CallbackServerContext* ctx,
                                            const v1::GetPortCountersRequest* req,
                                            v1::GetPortCountersResponse* resp) override;
  grpc::ServerUnaryReactor* ListPortErrors(grpc::CallbackServerContext* ctx,
                                           const v1::ListPortErrorsRequest* req,
                                           v1::ListPortErrorsResponse* resp) override;
  grpc::ServerUnaryReactor* TopPorts(grpc::CallbackServerContext* ctx,
                                     const v1::TopPortsRequest* req,
                                     v1::TopPortsResponse* resp) override;
  grpc::ServerUnaryReactor* ListUnhealthyPorts(grpc::CallbackServerContext* ctx,
                                               const v1::ListUnhealthyPortsRequest* req,
                                               v1::ListUnhealthyPortsResponse* resp) override;
  grpc::ServerWriteReactor<v1::Event>* WatchEvents(grpc::CallbackServerContext* ctx,
                                                   const v1::WatchEventsRequest* req) override;
  grpc::ServerUnaryReactor* TriggerSweep(grpc::CallbackServerContext* ctx,
                                         const v1::TriggerSweepRequest* req,
                                         v1::TriggerSweepResponse* resp) override;
  grpc::ServerUnaryReactor* VerifyRouting(grpc::CallbackServerContext* ctx,
                                          const v1::VerifyRoutingRequest* req,
                                          v1::VerifyRoutingResponse* resp) override;
  grpc::ServerUnaryReactor* SetPortState(grpc::CallbackServerContext* ctx,
                                         const v1::SetPortStateRequest* req,
                                         v1::SetPortStateResponse* resp) override;

 private:
  ServiceCore& core_;
  Trust trust_;
};

class SimulatorService final : public v1::Simulator::CallbackService {
 public:
  SimulatorService(ServiceCore& core, Trust trust) : core_(core), trust_(trust) {}

  grpc::ServerUnaryReactor* SetLinkState(grpc::CallbackServerContext* ctx,
                                         const v1::SetLinkStateRequest* req,
                                         v1::SetLinkStateResponse* resp) override;
  grpc::ServerUnaryReactor* SetSwitchState(grpc::CallbackServerContext* ctx,
                                           const v1::SetSwitchStateRequest* req,
                                           v1::SetSwitchStateResponse* resp) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* ctx,
                                     const v1::GetStatsRequest* req,
                                     v1::GetStatsResponse* resp) override;
  grpc::ServerUnaryReactor* InjectPortErrors(grpc::CallbackServerContext* ctx,
                                             const v1::InjectPortErrorsRequest* req,
                                             v1::InjectPortErrorsResponse* resp) override;

 private:
  ServiceCore& core_;
  Trust trust_;
};

// Maps a subnetd Error to a gRPC status; `field` (e.g. "source") prefixes the
// message so a client sees which part of its request was at fault.
grpc::Status to_status(const Error& e, std::string_view field = {});

}  // namespace subnetd::api

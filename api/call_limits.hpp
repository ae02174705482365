#pragma once
// CallLimits: how much of the API one caller, or one class of callers, may
// hold at once, so that anonymous TCP clients cannot crowd out the operator
// (issue 12.2).
//
// Two classes of callers. Trusted: the unix socket (its peers were vetted at
// accept) and TCP calls that carry the bearer token. Anonymous: TCP without
// it (reads only). Each class has its own capacity for calls that wait on
// the subnet manager; a full anonymous class never refuses a trusted call.
// On top, expensive reads have per-client limits, a client being a TCP peer
// address (without its port) or a unix uid: VerifyRouting (the SM runs the
// whole verifier) and WatchEvents (a stream that may read the store).
//
// A refused call gets RESOURCE_EXHAUSTED with a message naming the limit,
// its ServiceOptions field and how to retry. Thread-safe; one mutex, held for
// O(1) work.

#include <grpcpp/support/status.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace subnetd::api {

struct CallLimitOptions {
  // Calls waiting on the SM at once (TriggerSweep with wait, VerifyRouting,
  // SetPortState), of trusted callers together ...
  std::size_t max_waiting_trusted = 1024;
  // ... and of anonymous callers together.
  std::size_t max_waiting_anonymous = 64;
  // VerifyRouting calls one client may have waiting at once.
  std::size_t max_verify_per_client = 4;
  // WatchEvents streams one client may have open at once ...
  std::size_t max_watch_per_client = 16;
  // ... and anonymous callers together.
  std::size_t max_watch_anonymous = 256;
  // Calls (streams) one TCP connection may have open at once: HTTP/2
  // MAX_CONCURRENT_STREAMS, so that the excess waits at the client instead
  // of queueing in the server ahead of other callers' calls.
  std::size_t max_streams_per_tcp_connection = 32;
};

// What a call is, for the limits.
enum class CallKind : std::uint8_t {
  kWaiting,  // waits on the SM: TriggerSweep(wait), SetPortState
  kVerify,   // VerifyRouting: waits on the SM, and per client
  kWatch,    // WatchEvents: per client (and anonymous together)
};

// What an admitted call holds; given back exactly once with release().
struct Ticket {
  bool held = false;
  CallKind kind = CallKind::kWaiting;
  bool trusted = false;
  std::string client;
};

class CallLimits {
 public:
  explicit CallLimits(CallLimitOptions opts) : opts_(opts) {}

  // Admits a call of `kind` from `client` (trusted or not) into `out`, or
  // answers RESOURCE_EXHAUSTED naming the limit that refuses it. `method`
  // names the call in that message ("VerifyRouting").
  grpc::Status admit(CallKind kind, bool trusted, const std::string& client,
                     std::string_view method, Ticket& out);
  // Gives back what `t` holds; does nothing the second time.
  void release(Ticket& t);

  const CallLimitOptions& options() const { return opts_; }

 private:
  const CallLimitOptions opts_;
  std::mutex mu_;
  std::size_t waiting_[2] = {0, 0};  // [trusted]
  std::size_t watching_anonymous_ = 0;
  std::unordered_map<std::string, std::size_t> verify_by_client_;
  std::unordered_map<std::string, std::size_t> watch_by_client_;
};

}  // namespace subnetd::api

#pragma once
// api::Server: subnetd's gRPC listeners, built from the `api` section of the
// config.
//
//  * Unix socket (api.socket): created by us with mode 0660 and group
//    api.socket_group, a stale socket file from an earlier run removed
//    first (a live one, or a file that is not a socket, is an error). We
//    accept connections ourselves, check each peer's SO_PEERCRED (root, the
//    daemon's user, or a member of api.socket_group) and hand accepted
//    connections to a gRPC server with AddInsecureChannelFromFd. Callers on
//    this listener may make mutating calls.
//  * TCP (api.tcp, optional), TLS when api.tls_cert/api.tls_key are set.
//    Mutating calls need the bearer token of api.token_file, which must be
//    mode 0600 (or stricter) or start() fails.
//
// Both listeners serve subnet.v1.SubnetManager, subnet.v1.Simulator,
// grpc.health.v1.Health and server reflection.
//
// Threads: start() and stop() from the daemon's main thread (never from a
// gRPC thread: stop() waits for gRPC's threads). The accept loop has its own
// thread; gRPC has its own; calls that wait for the SM hold no thread, and
// the little API work that blocks (stored events) runs on ServiceCore's pools.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "api/auth.hpp"
#include "api/service.hpp"
#include "routing/result.hpp"

namespace grpc {
class Server;
}

namespace subnetd::api {

// Where and how the API listens: the daemon fills it from its `api:` YAML
// section (the field names are those keys; errors name them as api.<key>).
struct ListenOptions {
  std::string socket;        // unix socket path; empty = none
  std::string socket_group;  // group allowed mutating calls on the socket
  std::string tcp;           // "host:port"; empty = no TCP listener
  std::string tls_cert;      // PEM files for TCP; both or neither
  std::string tls_key;
  std::string token_file;  // bearer token for mutating calls over TCP
};

class Server {
 public:
  // Everything in `cfg` is checked before anything listens: the token file
  // (mode), TLS files, the socket group, the socket path. Errors name the
  // config key and the file.
  static Result<std::unique_ptr<Server>> start(const ListenOptions& cfg, ServiceDeps deps,
                                               ServiceOptions opts = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Stops accepting, ends WatchEvents streams cleanly, gives in-flight calls
  // until `grace` to finish, then cancels the rest. Removes the socket file.
  // Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds{2});

  // "unix:/run/subnetd/subnetd.sock"; empty when there is no unix listener.
  std::string unix_target() const;
  // The TCP port bound (api.tcp may ask for port 0); 0 without TCP.
  int tcp_port() const { return tcp_port_; }

 private:
  Server() = default;
  Result<void> start_unix(const ListenOptions& cfg);
  Result<void> start_tcp(const ListenOptions& cfg);
  void accept_loop();
  PeerId identify_peer(const std::string& peer) const;

  std::unique_ptr<ServiceCore> core_;

  // Unix listener.
  std::string socket_path_;
  ino_t socket_inode_ = 0;
  std::optional<gid_t> socket_gid_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::unique_ptr<SubnetManagerService> unix_sm_;
  std::unique_ptr<SimulatorService> unix_sim_;
  std::unique_ptr<grpc::Server> unix_server_;
  std::thread accept_thread_;
  mutable std::mutex peers_mu_;
  // "fd:N" peer of an accepted connection -> its credentials, for audit
  // messages and per-uid limits (the fd number is reused once gRPC closes
  // it; the entry is overwritten by the next connection on that number
  // before any call).
  std::unordered_map<int, PeerCredentials> peers_;

  // TCP listener.
  int tcp_port_ = 0;
  std::unique_ptr<SubnetManagerService> tcp_sm_;
  std::unique_ptr<SimulatorService> tcp_sim_;
  std::unique_ptr<grpc::Server> tcp_server_;

  bool stopped_ = false;
};

}  // namespace subnetd::api

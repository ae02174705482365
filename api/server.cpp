#include "api/server.hpp"

#include <fmt/format.h>
#include <grp.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "api/auth.hpp"

namespace subnetd::api {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// Process-wide gRPC settings, applied before the first ServerBuilder.
void init_grpc_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  });
}

Result<std::string> read_file(const std::string& path, std::string_view key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{Errc::kIo, fmt::format("{} {}: cannot open: {}", key, path, errno_text())};
  std::ostringstream buf;
  buf << in.rdbuf();
  if (buf.str().empty())
    return Error{Errc::kInvalidArgument, fmt::format("{} {}: empty file", key, path)};
  return buf.str();
}

Result<gid_t> lookup_group(const std::string& name) {
  gid_t numeric = 0;
  const auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), numeric);
  if (ec == std::errc() && p == name.data() + name.size()) return numeric;
  struct group gr {};
  struct group* found = nullptr;
  std::vector<char> buf(16384);
  const int rc = ::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found);
  if (rc != 0) {
    return Error{Errc::kIo,
                 fmt::format("api.socket_group: looking up \"{}\": {}", name, std::strerror(rc))};
  }
  if (found == nullptr) {
    return Error{Errc::kNotFound, fmt::format("api.socket_group: no group named \"{}\"", name)};
  }
  return gr.gr_gid;
}

// Removes a socket file left by an earlier run, refusing to touch anything
// else: a file that is not a socket, or a socket someone still listens on.
Result<void> clear_stale_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ok_result();
    return Error{Errc::kIo, fmt::format("api.socket {}: {}", path, errno_text())};
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Error{
        Errc::kConflict,
        fmt::format("api.socket {}: exists and is not a socket; refusing to replace it", path)};
  }
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return Error{Errc::kIo, fmt::format("socket(AF_UNIX): {}", errno_text())};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  ::close(probe);
  if (rc == 0) {
    return Error{Errc::kConflict,
                 fmt::format("api.socket {}: another process is listening on it (is subnetd "
                             "already running?)",
                             path)};
  }
  if (err != ECONNREFUSED) {
    return Error{Errc::kIo, fmt::format("api.socket {}: probing the existing socket: {}", path,
                                        std::strerror(err))};
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error{Errc::kIo,
                 fmt::format("api.socket {}: removing the stale socket: {}", path, errno_text())};
  }
  spdlog::info("api.socket {}: removed a stale socket from an earlier run", path);
  return ok_result();
}

std::string describe(const PeerCredentials& c) {
  return fmt::format("uid {} gid {} pid {}", c.uid, c.gid, c.pid);
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(const ListenOptions& cfg, ServiceDeps deps,
                                              ServiceOptions opts) {
  if (deps.state == nullptr || deps.sm == nullptr || deps.events == nullptr) {
    return Error{Errc::kInvalidArgument,
                 "api: state publisher, SM control and event log are required"};
  }
  if (cfg.socket.empty() && cfg.tcp.empty()) {
    return Error{Errc::kInvalidArgument,
                 "api: neither api.socket nor api.tcp is set; nothing to serve"};
  }
  if (!cfg.token_file.empty()) {
    auto token = load_token_file(cfg.token_file);
    if (!token.ok()) return token.error();
    opts.token = std::move(token).value();
  }
  std::unique_ptr<Server> server(new Server());
  Server* self = server.get();
  opts.identify_peer = [self](const std::string& peer) { return self->identify_peer(peer); };
  server->core_ = std::make_unique<ServiceCore>(std::move(deps), std::move(opts));
  init_grpc_plugins();
  if (!cfg.socket.empty()) {
    if (auto r = server->start_unix(cfg); !r.ok()) {
      server->stop(std::chrono::milliseconds{0});
      return r.error();
    }
  }
  if (!cfg.tcp.empty()) {
    if (auto r = server->start_tcp(cfg); !r.ok()) {
      server->stop(std::chrono::milliseconds{0});
      return r.error();
    }
  }
  return server;
}

Result<void> Server::start_unix(const ListenOptions& cfg) {
  const std::string& path = cfg.socket;
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("api.socket {}: {} bytes; a unix socket path has at most {}", path,
                             path.size(), sizeof(sockaddr_un::sun_path) - 1)};
  }
  if (!cfg.socket_group.empty()) {
    auto gid = lookup_group(cfg.socket_group);
    if (!gid.ok()) return gid.error();
    socket_gid_ = *gid;
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return Error{Errc::kIo, fmt::format("api.socket {}: creating {}: {}", path, parent.string(),
                                          ec.message())};
    }
  }
  SUBNETD_TRY(clear_stale_socket(path));

  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return Error{Errc::kIo, fmt::format("socket(AF_UNIX): {}", errno_text())};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Error{Errc::kIo, fmt::format("api.socket {}: bind: {}", path, errno_text())};
  }
  socket_path_ = path;  // ours from here on: stop() removes it
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) socket_inode_ = st.st_ino;
  // Permissions are settled before listen(): until then a connect() is
  // refused, so no peer ever reaches the socket with the umask's mode.
  if (::chmod(path.c_str(), 0660) != 0) {
    return Error{Errc::kIo, fmt::format("api.socket {}: chmod 0660: {}", path, errno_text())};
  }
  if (socket_gid_ && ::chown(path.c_str(), static_cast<uid_t>(-1), *socket_gid_) != 0) {
    return Error{Errc::kIo, fmt::format("api.socket {}: giving it to group {} ({}): {}", path,
                                        cfg.socket_group, *socket_gid_, errno_text())};
  }
  if (::listen(listen_fd_, 128) != 0) {
    return Error{Errc::kIo, fmt::format("api.socket {}: listen: {}", path, errno_text())};
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Error{Errc::kIo, fmt::format("eventfd: {}", errno_text())};

  unix_sm_ = std::make_unique<SubnetManagerService>(*core_, Trust::kUnixPeer);
  unix_sim_ = std::make_unique<SimulatorService>(*core_, Trust::kUnixPeer);
  grpc::ServerBuilder builder;
  builder.RegisterService(unix_sm_.get());
  builder.RegisterService(unix_sim_.get());
  unix_server_ = builder.BuildAndStart();
  if (!unix_server_) return Error{Errc::kInternal, "api.socket: the gRPC server did not start"};
  accept_thread_ = std::thread([this] { accept_loop(); });
  spdlog::info("gRPC API on unix:{} (mode 0660{})", path,
               socket_gid_ ? fmt::format(", group {}", cfg.socket_group) : std::string{});
  return ok_result();
}

Result<void> Server::start_tcp(const ListenOptions& cfg) {
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (cfg.tls_cert.empty() != cfg.tls_key.empty()) {
    return Error{Errc::kInvalidArgument, "api.tls_cert and api.tls_key: set both or neither"};
  }
  if (!cfg.tls_cert.empty()) {
    auto cert = read_file(cfg.tls_cert, "api.tls_cert");
    if (!cert.ok()) return cert.error();
    auto key = read_file(cfg.tls_key, "api.tls_key");
    if (!key.ok()) return key.error();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({std::move(key).value(), std::move(cert).value()});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
    spdlog::warn("api.tcp {} without TLS: requests, replies{} cross the network unencrypted",
                 cfg.tcp, core_->options().token.empty() ? "" : " and the bearer token");
  }
  tcp_sm_ = std::make_unique<SubnetManagerService>(*core_, Trust::kBearerToken);
  tcp_sim_ = std::make_unique<SimulatorService>(*core_, Trust::kBearerToken);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(cfg.tcp, creds, &tcp_port_);
  // HTTP/2 MAX_CONCURRENT_STREAMS: a TCP connection's calls beyond it wait
  // at the client, costing the server nothing.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(core_->options().max_streams_per_tcp_connection));
  builder.RegisterService(tcp_sm_.get());
  builder.RegisterService(tcp_sim_.get());
  tcp_server_ = builder.BuildAndStart();
  if (!tcp_server_ || tcp_port_ == 0) {
    return Error{Errc::kIo, fmt::format("api.tcp {}: cannot listen there (bad address, or the port "
                                        "is in use)",
                                        cfg.tcp)};
  }
  spdlog::info("gRPC API on TCP {} (port {}, {})", cfg.tcp, tcp_port_,
               cfg.tls_cert.empty() ? "plaintext" : "TLS");
  return ok_result();
}

void Server::accept_loop() {
  const uid_t self_uid = ::geteuid();
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("api.socket {}: poll: {}; no longer accepting connections", socket_path_,
                    errno_text());
      return;
    }
    if (fds[1].revents != 0) return;  // stop()
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        spdlog::warn("api.socket {}: accept: {}", socket_path_, errno_text());
        ::poll(nullptr, 0, 100);  // let connections close before retrying
      }
      continue;  // EAGAIN, EINTR, ECONNABORTED, ...
    }
    auto cred = read_peer_credentials(fd);
    if (!cred.ok()) {
      spdlog::warn("api.socket {}: {}; connection closed", socket_path_, cred.error().message);
      ::close(fd);
      continue;
    }
    if (!peer_allowed(*cred, self_uid, socket_gid_)) {
      spdlog::warn("api.socket {}: refused {}: not root, not uid {}{}", socket_path_,
                   describe(*cred), self_uid,
                   socket_gid_ ? fmt::format(" and not in group {}", *socket_gid_) : std::string{});
      ::close(fd);
      continue;
    }
    {
      std::lock_guard lock(peers_mu_);
      peers_[fd] = *cred;
    }
    grpc::AddInsecureChannelFromFd(unix_server_.get(), fd);
  }
}

PeerId Server::identify_peer(const std::string& peer) const {
  // gRPC names a connection added from an fd "fd:<n>".
  if (peer.rfind("fd:", 0) == 0) {
    int fd = -1;
    const auto [p, ec] = std::from_chars(peer.data() + 3, peer.data() + peer.size(), fd);
    if (ec == std::errc() && p == peer.data() + peer.size()) {
      std::lock_guard lock(peers_mu_);
      if (auto it = peers_.find(fd); it != peers_.end()) {
        return PeerId{"unix peer " + describe(it->second), fmt::format("uid {}", it->second.uid)};
      }
    }
  }
  return PeerId{peer, client_of_peer(peer)};
}

std::string Server::unix_target() const {
  return socket_path_.empty() ? std::string{} : "unix:" + socket_path_;
}

void Server::stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  // 1. No new connections on the unix socket.
  if (accept_thread_.joinable()) {
    const std::uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
      spdlog::error("api: waking the accept loop failed: {}", errno_text());
    }
    accept_thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
  if (!socket_path_.empty()) {
    // Only if it is still ours (not replaced by another daemon meanwhile).
    struct stat st {};
    if (::lstat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_ino == socket_inode_) {
      ::unlink(socket_path_.c_str());
    }
  }
  for (grpc::Server* s : {unix_server_.get(), tcp_server_.get()}) {
    if (s != nullptr && s->GetHealthCheckService() != nullptr) {
      s->GetHealthCheckService()->SetServingStatus(false);
    }
  }
  // 2. Streams end, waiting calls give up: nothing holds gRPC past `grace`.
  if (core_) core_->shutdown();
  // 3. gRPC: in-flight calls get until the deadline, then are cancelled.
  const auto deadline = std::chrono::system_clock::now() + grace;
  if (unix_server_) unix_server_->Shutdown(deadline);
  if (tcp_server_) tcp_server_->Shutdown(deadline);
  unix_server_.reset();
  tcp_server_.reset();
}

Server::~Server() {
  stop();
}

}  // namespace subnetd::api

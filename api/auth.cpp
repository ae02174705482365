#include "api/auth.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace subnetd::api {
namespace {

constexpr std::size_t kMinTokenLength = 16;
constexpr std::size_t kMaxTokenLength = 4096;

std::string_view trim(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::string> parse_token(std::string_view content, std::string_view path) {
  const std::string_view token = trim(content);
  if (token.empty())
    return Error{Errc::kInvalidArgument, fmt::format("{}: the token file is empty", path)};
  if (token.size() < kMinTokenLength) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("{}: the token has {} characters; use at least {} (e.g. `openssl "
                             "rand -hex 32`)",
                             path, token.size(), kMinTokenLength)};
  }
  if (token.size() > kMaxTokenLength) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("{}: the token is longer than {} characters", path, kMaxTokenLength)};
  }
  for (std::size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c <= 0x20 || c >= 0x7f) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("{}: the token contains a space or a non-printable character at "
                               "offset {}; it must be one line of printable ASCII",
                               path, i)};
    }
  }
  return std::string(token);
}

Result<std::string> load_token_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Error{Errc::kIo, fmt::format("api.token_file {}: {}", path, std::strerror(errno))};
  }
  if (!S_ISREG(st.st_mode)) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("api.token_file {}: not a regular file", path)};
  }
  if ((st.st_mode & 077) != 0) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("api.token_file {}: mode {:04o} lets other users read the token; "
                             "refusing to start (chmod 600 {})",
                             path, st.st_mode & 07777, path)};
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("api.token_file {}: owned by uid {}, not by root or the daemon's "
                             "user (uid {}); refusing to start",
                             path, st.st_uid, ::geteuid())};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{Errc::kIo, fmt::format("api.token_file {}: cannot open", path)};
  std::ostringstream buf;
  buf << in.rdbuf();
  auto token = parse_token(buf.str(), "api.token_file " + path);
  if (!token.ok()) return token.error();
  return token;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer string in full so the time does not reveal a prefix.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0U : 1U;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  // Keep the compiler from turning the loop into an early-exit compare.
  volatile unsigned sink = diff;
  return sink == 0;
}

bool peer_allowed(const PeerCredentials& peer, uid_t daemon_uid, std::optional<gid_t> allowed_gid) {
  if (peer.uid == 0 || peer.uid == daemon_uid) return true;
  if (!allowed_gid) return false;
  if (peer.gid == *allowed_gid) return true;
  return std::find(peer.groups.begin(), peer.groups.end(), *allowed_gid) != peer.groups.end();
}

Result<PeerCredentials> read_peer_credentials(int fd) {
  struct ucred cred {};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return Error{Errc::kIo, fmt::format("SO_PEERCRED: {}", std::strerror(errno))};
  }
  PeerCredentials out;
  out.pid = cred.pid;
  out.uid = cred.uid;
  out.gid = cred.gid;
#ifdef SO_PEERGROUPS
  // Linux >= 4.13. ERANGE tells the size needed; older kernels lack the
  // option (ENOPROTOOPT) and then only the primary group counts.
  std::vector<gid_t> groups(16);
  for (int attempt = 0; attempt < 4; ++attempt) {
    socklen_t glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) == 0) {
      groups.resize(glen / sizeof(gid_t));
      out.groups = std::move(groups);
      break;
    }
    if (errno != ERANGE) break;
    groups.resize(glen / sizeof(gid_t) + 1);
  }
#endif
  return out;
}

std::optional<std::string_view> bearer_token(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = header[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != kScheme[i]) return std::nullopt;
  }
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

}  // namespace subnetd::api

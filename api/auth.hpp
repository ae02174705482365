#pragma once
// Authorisation of mutating gRPC calls (TriggerSweep, SetPortState,
// Simulator.*). See api/README.md, "Authorisation", for the model.
//
//  * Unix socket: the server accepts connections itself and checks the
//    peer's SO_PEERCRED (and SO_PEERGROUPS) before handing the connection to
//    gRPC; a connection that passes may call everything (peer_allowed()).
//  * TCP: a mutating call needs "authorization: Bearer <token>" metadata
//    equal to the token in api.token_file (compared in constant time).
//
// Pure helpers plus one small immutable class; thread-safe.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "routing/result.hpp"

namespace subnetd::api {

// Reads a bearer-token file. The server refuses a file that others could
// read: it must be a regular file, owned by root or the daemon's user, with
// no group/other permission bits (0600 or 0400). The token is the file's
// content without surrounding whitespace: 16..4096 printable ASCII characters
// without spaces (it travels in an HTTP/2 header).
Result<std::string> load_token_file(const std::string& path);

// The same checks on the content only (used by load_token_file and by
// subnetctl, which reads its copy of the token without the mode check).
Result<std::string> parse_token(std::string_view content, std::string_view path);

// Constant-time equality: the time taken depends on the lengths only, not on
// where the first difference is.
bool constant_time_equal(std::string_view a, std::string_view b);

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (SO_PEERGROUPS)
};

// Who may use the unix socket: root, the daemon's own effective uid, or any
// process whose primary or supplementary group is `allowed_gid` (when set).
bool peer_allowed(const PeerCredentials& peer, uid_t daemon_uid, std::optional<gid_t> allowed_gid);

// Reads SO_PEERCRED and SO_PEERGROUPS of a connected unix socket.
Result<PeerCredentials> read_peer_credentials(int fd);

// The value of an "authorization" header carrying a bearer token, or nullopt
// when the header is not of the form "Bearer <token>" (scheme case-insensitive).
std::optional<std::string_view> bearer_token(std::string_view authorization_header);

}  // namespace subnetd::api

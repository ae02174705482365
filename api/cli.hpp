#pragma once
// Pieces of subnetctl that are worth testing on their own: how a command-line
// word names a node, how gRPC status codes become exit codes, and the text
// formatting (aligned tables, GUIDs, durations). No I/O besides Table::print.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "routing/result.hpp"
#include "subnet/v1/subnet.pb.h"

namespace grpc {
class Status;
}

namespace subnetd::api::cli {

// Exit codes scripts can test.
enum ExitCode : int {
  kExitOk = 0,
  kExitRpcError = 1,     // any other failure; also a failed sweep/verify or an incomplete trace
  kExitUsage = 2,        // bad command line, or the daemon said INVALID_ARGUMENT
  kExitNotFound = 3,     // NOT_FOUND
  kExitPermission = 4,   // PERMISSION_DENIED / UNAUTHENTICATED
  kExitUnavailable = 5,  // cannot connect, or the daemon is stopping
};
int exit_code_for(const grpc::Status& s);

// A node named on the command line:
//   0x0002c90000000001   a node or port GUID (hex)
//   12                   a LID (decimal; ibtracert's default)
//   guid:N lid:N name:S  explicit, e.g. name:1234 for a node named "1234"
//   anything else        a node description ("leaf0", "h-l0-0")
Result<::subnet::v1::NodeRef> parse_node_ref(std::string_view word);

std::string format_guid(std::uint64_t guid);       // 0x0002c90000000001
std::string format_duration_us(std::uint64_t us);  // "850 us", "3.1 ms", "2.25 s"
std::string format_uptime(std::int64_t seconds);   // "45s", "3m12s", "2h05m", "3d04h"
std::string format_lid_range(std::uint32_t lid, std::uint32_t lmc);  // "12" or "12-15"
std::string_view node_type_word(::subnet::v1::NodeType t);           // "switch", "ca", "router"
std::string_view port_state_word(::subnet::v1::PortState s);         // "Active", "Down", ...
std::string_view speed_word(::subnet::v1::LinkSpeed s);              // "QDR", ...
std::string_view event_kind_word(::subnet::v1::EventKind k);         // "link_down", ...

// What `subnetctl sweep [--light]` prints for a waited-for TriggerSweep
// answer whose outcome is OK (a failure is the caller's error message):
//   light sweep OK: no change; 12 switches answered in 850 us; generation 7
// or, for a heavy sweep (preceded by what started it, when a light sweep did):
//   sweep OK: 20 nodes (12 switches, 8 CAs), 9 LIDs, 3.1 ms; generation 8
std::string format_sweep(const ::subnet::v1::TriggerSweepResponse& r);

// What `subnetctl verify [--read-back]` prints for a VerifyRoutingResponse:
//   OK: complete, loop-free, deadlock-free: ...
//   12 switches, 1 VLs, 528 pairs checked, generation 7, 1.2 ms
// then, when the switches' tables were read back,
//   read back: 12 switches, 24 LFT blocks read, 2 differ:
//     switch "leaf0" (0x...) block 0: LID 0x5 -> port 255, published 3
std::string format_verify(const ::subnet::v1::VerifyRoutingResponse& r);

// Columns separated by two spaces, a header line, numbers right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> headers, std::vector<bool> right_aligned = {});
  void add(std::vector<std::string> row);
  std::string render() const;
  void print(std::FILE* out) const;
  std::size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace subnetd::api::cli

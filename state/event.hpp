#pragma once
// An event of the daemon's event stream (link down/up, reroute, sweep, ...):
// what the SM reports, the EventLog keeps in memory, the store persists and
// WatchEvents streams. Shared by the daemon and the API (state/).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "routing/ids.hpp"

namespace subnetd::state {

using WallTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

enum class EventKind : std::uint8_t {
  kLinkDown,
  kLinkUp,
  kReroute,
  kSweep,
  kConfigReload,
  kError,
  kPortDisable,
  kPortEnable,
  kSwitchDown,
  kSwitchUp,
  kSmState,
  kFailover,   // fast failover armed (or refused), with what the verifier found
  kMulticast,  // multicast trees re-programmed after joins and leaves
  kCabling,    // bring-up screening: a finding against the cabling plan, or one cleared
  kCounters,   // the performance manager saw error counters rise on a port
  kHealth,     // the fault policy isolated a link, refused to, or returned one to service
};

// How many kinds there are (for tables indexed by kind).
inline constexpr std::size_t kEventKinds = static_cast<std::size_t>(EventKind::kHealth) + 1;

std::string_view to_string(EventKind k);
std::optional<EventKind> event_kind_from_string(std::string_view s);

struct Event {
  // Assigned by the daemon's EventLog (>= 1) and stored as given, so the
  // store and WatchEvents agree on every id; a failed write leaves a gap.
  std::int64_t id = 0;
  WallTime ts{};
  EventKind kind = EventKind::kError;
  std::optional<Guid> node_guid;
  std::optional<PortNum> port;
  std::string message;
  std::string details_json;  // empty = none; otherwise must be valid JSON
  bool operator==(const Event&) const = default;
};

}  // namespace subnetd::state

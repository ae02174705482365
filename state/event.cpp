#include "state/event.hpp"

#include <utility>

namespace subnetd::state {
namespace {

constexpr std::pair<EventKind, std::string_view> kKindNames[] = {
    {EventKind::kLinkDown, "link_down"},
    {EventKind::kLinkUp, "link_up"},
    {EventKind::kReroute, "reroute"},
    {EventKind::kSweep, "sweep"},
    {EventKind::kConfigReload, "config_reload"},
    {EventKind::kError, "error"},
    {EventKind::kPortDisable, "port_disable"},
    {EventKind::kPortEnable, "port_enable"},
    {EventKind::kSwitchDown, "switch_down"},
    {EventKind::kSwitchUp, "switch_up"},
    {EventKind::kSmState, "sm_state"},
    {EventKind::kFailover, "failover"},
    {EventKind::kMulticast, "multicast"},
    {EventKind::kCabling, "cabling"},
    {EventKind::kCounters, "counters"},
    {EventKind::kHealth, "health"},
};

}  // namespace

static_assert(std::size(kKindNames) == kEventKinds, "every event kind has a name");

std::string_view to_string(EventKind k) {
  for (const auto& [kind, name] : kKindNames) {
    if (kind == k) return name;
  }
  return "?";
}

std::optional<EventKind> event_kind_from_string(std::string_view s) {
  for (const auto& [kind, name] : kKindNames) {
    if (name == s) return kind;
  }
  return std::nullopt;
}

}  // namespace subnetd::state

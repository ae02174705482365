#pragma once
// What the fault-handling policy (daemon/health) holds against the fabric's
// links: those it isolated (their port disabled by SMP until a hold-down
// ends or an operator enables it again) and those it would have isolated
// but did not, as that would have cut endpoints off. Published as an
// immutable snapshot by the SM strand; readers (gRPC, /metrics) never block
// the SM.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "routing/ids.hpp"
#include "state/event.hpp"

namespace subnetd::state {

enum class HealthCause : std::uint8_t {
  kFlapping,  // too many link downs within the window
  kErrors,    // an error rate above the limit on one of its ports
};

enum class HealthStatus : std::uint8_t {
  kIsolated,  // the port is disabled; back after the hold-down
  kRefused,   // over a limit, left in service: isolating it would cut endpoints off
};

std::string_view to_string(HealthCause c);
std::string_view to_string(HealthStatus s);

struct UnhealthyPort {
  // The link: the port the policy acts on (disables), and its peer.
  Guid node_guid;
  PortNum port = 0;
  Guid peer_guid;
  PortNum peer_port = 0;
  std::string node_label;  // node description (or GUID) at the time
  std::string peer_label;
  HealthStatus status = HealthStatus::kIsolated;
  HealthCause cause = HealthCause::kFlapping;
  std::string reason;  // the evidence in words, e.g. "5 link downs in 42 s (limit 5 in 10 min)"
  // Evidence: the link downs within the flap window, oldest first, and the
  // last error rate the performance manager measured on the link's ports.
  std::vector<WallTime> downs;
  double errors_per_minute = 0;
  WallTime since{};               // when it was isolated (or refused)
  std::optional<WallTime> until;  // isolated: when the hold-down ends
  std::uint32_t isolations = 0;   // times isolated since the daemon started
  bool operator==(const UnhealthyPort&) const = default;
};

struct HealthSnapshot {
  std::vector<UnhealthyPort> ports;  // by (node GUID, port)
  std::uint64_t isolated_total = 0;  // automatic isolations since the daemon started
  std::uint64_t restored_total = 0;  // returned to service (hold-down over, or an operator)
  std::uint64_t refused_total = 0;   // isolations refused (would disconnect)
  bool policy_enabled = false;       // health.enabled
};

// Holds the current snapshot: publish() from the SM strand, current() from
// any thread, lock-free.
class HealthBoard {
 public:
  HealthBoard() : current_(std::make_shared<const HealthSnapshot>()) {}
  std::shared_ptr<const HealthSnapshot> current() const { return std::atomic_load(&current_); }
  void publish(std::shared_ptr<const HealthSnapshot> s) {
    std::atomic_store(&current_, std::move(s));
  }

 private:
  std::shared_ptr<const HealthSnapshot> current_;
};

}  // namespace subnetd::state

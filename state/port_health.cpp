#include "state/port_health.hpp"

namespace subnetd::state {

std::string_view to_string(HealthCause c) {
  switch (c) {
    case HealthCause::kFlapping:
      return "flapping";
    case HealthCause::kErrors:
      return "errors";
  }
  return "unknown";
}

std::string_view to_string(HealthStatus s) {
  switch (s) {
    case HealthStatus::kIsolated:
      return "isolated";
    case HealthStatus::kRefused:
      return "refused";
  }
  return "unknown";
}

}  // namespace subnetd::state

#include "state/fabric_state.hpp"

namespace subnetd::state {

const char* sm_state_name(SmState s) {
  switch (s) {
    case SmState::kStarting:
      return "STARTING";
    case SmState::kDiscovering:
      return "DISCOVERING";
    case SmState::kMaster:
      return "MASTER";
    case SmState::kFailed:
      return "FAILED";
  }
  return "?";
}

}  // namespace subnetd::state

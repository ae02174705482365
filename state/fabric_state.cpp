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
    case SmState::kStandby:
      return "STANDBY";
    case SmState::kNotActive:
      return "NOT_ACTIVE";
  }
  return "?";
}

void StatePublisher::publish(std::shared_ptr<const FabricState> s) {
  writer_.check();
  {
    std::lock_guard lock(mu_);
    std::atomic_store(&current_, std::move(s));
  }
  published_.notify_all();
}

std::shared_ptr<const FabricState> StatePublisher::wait_for(
    const std::function<bool(const FabricState&)>& pred, std::chrono::milliseconds limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::unique_lock lock(mu_);
  for (;;) {
    auto s = std::atomic_load(&current_);
    if (pred(*s)) return s;
    if (published_.wait_until(lock, deadline) == std::cv_status::timeout) {
      s = std::atomic_load(&current_);
      return pred(*s) ? s : nullptr;
    }
  }
}

}  // namespace subnetd::state

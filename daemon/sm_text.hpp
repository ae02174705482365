#pragma once
// How the SubnetManager's files (subnet_manager.cpp, sm_*.cpp) write a GUID
// in log lines and event messages: 0x0002c90000000001.

#include <fmt/format.h>

#include <string>

#include "routing/ids.hpp"

namespace subnetd::daemon {

inline std::string guid_str(Guid g) {
  return fmt::format("{:#018x}", g.value);
}

}  // namespace subnetd::daemon

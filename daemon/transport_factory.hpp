#pragma once
// Builds the Transport the config asks for: the embedded simulator (from a
// generator spec or a net file) or libibumad.

#include <memory>
#include <string>

#include "daemon/config.hpp"
#include "discovery/transport.hpp"
#include "routing/topology.hpp"
#include "state/control.hpp"

namespace subnetd::daemon {

// A generator spec ("fat-tree:levels=2,radix=36") or a net-file path; a
// string with a ':' before any '/' and no such file is taken as a spec.
Result<routing::Topology> load_topology(const std::string& spec_or_path);

struct TransportBundle {
  std::unique_ptr<discovery::Transport> transport;
  // Non-null for the simulator: the same object, seen as state::SimControl.
  std::unique_ptr<state::SimControl> sim_control;
};

Result<TransportBundle> make_transport(const Config& config);

}  // namespace subnetd::daemon

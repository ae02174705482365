#include "daemon/transport_factory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"
#include "discovery/umad/umad_transport.hpp"

namespace subnetd::daemon {
namespace {

class SimControlAdapter final : public state::SimControl {
 public:
  explicit SimControlAdapter(discovery::sim::SimFabric& sim) : sim_(sim) {}

  Result<void> set_link_state(Guid node_guid, PortNum port, bool up) override {
    NodeId node;
    SUBNETD_TRY_ASSIGN(node, sim_.node_by_guid(node_guid));
    return up ? sim_.link_up(PortRef{node, port}) : sim_.link_down(PortRef{node, port});
  }
  Result<void> set_switch_state(Guid node_guid, bool up) override {
    NodeId node;
    SUBNETD_TRY_ASSIGN(node, sim_.node_by_guid(node_guid));
    return up ? sim_.switch_up(node) : sim_.switch_down(node);
  }
  Result<void> inject_port_errors(Guid node_guid, PortNum port,
                                  const state::PortErrorInjection& e) override {
    NodeId node;
    SUBNETD_TRY_ASSIGN(node, sim_.node_by_guid(node_guid));
    discovery::sim::PortErrors x;
    x.symbol_errors = e.symbol_errors;
    x.link_recovers = e.link_recovers;
    x.link_downed = e.link_downed;
    x.rcv_errors = e.rcv_errors;
    x.xmit_discards = e.xmit_discards;
    x.link_integrity = e.link_integrity;
    x.buffer_overrun = e.buffer_overrun;
    x.xmit_wait = e.xmit_wait;
    return sim_.inject_port_errors(PortRef{node, port}, x);
  }
  state::SimCounters counters() const override {
    const discovery::sim::SimStats s = sim_.stats();
    using discovery::sim::DropReason;
    state::SimCounters c;
    c.smps_handled = s.smps_handled;
    c.smps_dropped = s.drops_total();
    c.traps_sent = s.traps_sent;
    for (DropReason r : {DropReason::kPortNotActive, DropReason::kBadLid, DropReason::kLftBeyondTop,
                         DropReason::kLftUnset, DropReason::kLftBadPort, DropReason::kNoLidMatch,
                         DropReason::kHopLimit}) {
      c.lid_routed_dropped += s.drops_of(r);
    }
    return c;
  }

 private:
  discovery::sim::SimFabric& sim_;
};

}  // namespace

Result<routing::Topology> load_topology(const std::string& spec_or_path) {
  std::error_code ec;
  const auto colon = spec_or_path.find(':');
  const auto slash = spec_or_path.find('/');
  const bool looks_like_spec =
      colon != std::string::npos && (slash == std::string::npos || colon < slash);
  if (looks_like_spec && !std::filesystem::exists(spec_or_path, ec)) {
    return discovery::topo::generate(spec_or_path);
  }
  return discovery::topo::read_netfile(spec_or_path);
}

Result<TransportBundle> make_transport(const Config& config) {
  if (config.fabric.transport == TransportKind::kUmad) {
    discovery::umad::UmadOptions opts;
    opts.ca = config.fabric.ca;
    opts.port = config.fabric.port;
    // The kernel drops responses that arrive after a request's timeout, so it
    // must not be shorter than the MAD engine's own.
    opts.request_timeout = std::max(config.sweep.timeout, std::chrono::milliseconds{1});
    opts.sm_priority = config.sm.priority;
    opts.sm_key = config.sm.key;
    auto umad = discovery::umad::UmadTransport::open(opts);
    if (!umad.ok()) return umad.error();
    TransportBundle b;
    b.transport = std::move(umad).value();
    return b;
  }
  auto topo = load_topology(config.fabric.topology);
  if (!topo.ok()) {
    return Error{topo.error().code, fmt::format("fabric.topology: {}", topo.error().message)};
  }
  discovery::sim::SimOptions opts;
  opts.lid_bits = config.addressing.lid_bits;
  if (config.fabric.sm_port.guid) opts.sm_guid = *config.fabric.sm_port.guid;
  opts.sm_node = config.fabric.sm_port.name;
  auto sim = discovery::sim::SimFabric::create(std::move(topo).value(), opts);
  if (!sim.ok()) return Error{sim.error().code, fmt::format("simulator: {}", sim.error().message)};
  TransportBundle b;
  b.sim_control = std::make_unique<SimControlAdapter>(**sim);
  b.transport = std::move(sim).value();
  return b;
}

}  // namespace subnetd::daemon

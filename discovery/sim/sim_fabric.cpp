#include "discovery/sim/sim_fabric.hpp"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "routing/text.hpp"

namespace subnetd::discovery::sim {

using routing::NodeType;

namespace {

// Resolves SimOptions' SM attachment point to a CA port of `t`.
Result<PortRef> resolve_sm_port(const routing::Topology& t, const SimOptions& o) {
  std::optional<PortRef> ref;
  std::string what;
  if (!o.sm_node.empty()) {
    what = fmt::format("SM node \"{}\"", o.sm_node);
    if (auto n = t.find_by_name(o.sm_node)) ref = PortRef{*n, o.sm_port};
  } else if (o.sm_guid.value != 0) {
    what = fmt::format("SM GUID {:#018x}", o.sm_guid.value);
    if (auto n = t.find_by_guid(o.sm_guid)) {
      ref = PortRef{*n, o.sm_port};
    } else if (auto p = t.find_by_port_guid(o.sm_guid)) {
      ref = *p;
    }
  } else {
    what = "the first CA";
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      if (t.node(NodeId{i}).type == NodeType::kCa) {
        ref = PortRef{NodeId{i}, o.sm_port};
        break;
      }
    }
  }
  if (!ref)
    return Error{Errc::kNotFound, fmt::format("simulator: {} is not in the topology", what)};
  const routing::Node& n = t.node(ref->node);
  if (n.type != NodeType::kCa) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("simulator: {} is {} \"{}\"; the SM attaches to a CA port", what,
                             routing::node_type_name(n.type), printable(n.description))};
  }
  if (ref->port == 0 || ref->port > n.num_ports) {
    return Error{Errc::kOutOfRange,
                 fmt::format("simulator: {}: \"{}\" has ports 1..{}, not {}", what,
                             printable(n.description), n.num_ports, ref->port)};
  }
  return *ref;
}

Result<void> check_probability(double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    return Error{Errc::kOutOfRange,
                 fmt::format("simulator: drop probability {} is outside [0, 1]", p)};
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<SimFabric>> SimFabric::create(routing::Topology topology,
                                                     const SimOptions& options) {
  if (!routing::LidSpace::from_bits(options.lid_bits)) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("simulator: lid_bits {} (expected 16, 17 or 24)", options.lid_bits)};
  }
  SUBNETD_TRY(check_probability(options.drop_probability));
  if (options.latency && options.latency->sma_queue_depth == 0) {
    return Error{Errc::kInvalidArgument, "simulator: latency.sma_queue_depth must be at least 1"};
  }
  if (auto v = topology.validate(); !v.ok()) {
    return Error{v.error().code, "simulator: invalid topology: " + v.error().message};
  }
  PortRef sm;
  SUBNETD_TRY_ASSIGN(sm, resolve_sm_port(topology, options));
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    return Error{Errc::kIo, fmt::format("simulator: eventfd: {}", std::strerror(errno))};
  }
  return std::unique_ptr<SimFabric>(new SimFabric(std::move(topology), options, sm, fd));
}

SimFabric::SimFabric(routing::Topology topology, const SimOptions& options, PortRef sm,
                     int event_fd)
    : core_(std::move(topology), options, sm), event_fd_(event_fd) {}

SimFabric::~SimFabric() {
  ::close(event_fd_);
}

void SimFabric::sync_event_fd() {
  // Unwatched (the engine pumps us), the fd may lag: no syscall per answer.
  if (!event_fd_watched_) return;
  const bool want = !core_.inbox().empty();
  if (want == event_fd_armed_) return;
  if (want) {
    const std::uint64_t one = 1;
    // Cannot fail short of a counter overflow, which one pending write excludes.
    [[maybe_unused]] const ssize_t n = ::write(event_fd_, &one, sizeof one);
  } else {
    std::uint64_t drained = 0;
    [[maybe_unused]] const ssize_t n = ::read(event_fd_, &drained, sizeof drained);
  }
  event_fd_armed_ = want;
}

void SimFabric::watch_event_fd(bool watched) {
  std::lock_guard lock(mu_);
  if (watched == event_fd_watched_) return;
  event_fd_watched_ = watched;
  sync_event_fd();
}

// ------------------------------------------------------------------ Transport

Result<void> SimFabric::send(const Mad& mad) {
  std::lock_guard lock(mu_);
  core_.send_from_sm(mad);
  // Finish everything due now (the whole exchange, without a latency model).
  core_.run_until(core_.now(), /*stop_at_delivery=*/false);
  sync_event_fd();
  return {};
}

Result<std::optional<Mad>> SimFabric::receive(std::chrono::microseconds timeout) {
  std::lock_guard lock(mu_);
  if (timeout.count() < 0) timeout = std::chrono::microseconds{0};
  const std::chrono::nanoseconds deadline = core_.now() + timeout;
  if (core_.inbox().empty()) core_.run_until(deadline, /*stop_at_delivery=*/true);
  if (core_.inbox().empty()) {
    core_.advance_to(deadline);
    sync_event_fd();
    return std::optional<Mad>{};
  }
  Mad m = core_.inbox().front();
  core_.inbox().pop_front();
  sync_event_fd();
  return std::optional<Mad>{m};
}

std::chrono::nanoseconds SimFabric::now() const {
  std::lock_guard lock(mu_);
  return core_.now();
}

LocalPort SimFabric::local_port() const {
  const routing::Topology& t = core_.topology();
  const PortRef sm = core_.sm_port();
  LocalPort lp;
  lp.node_guid = t.node(sm.node).guid;
  lp.port_guid = t.port(sm).guid;
  lp.port_num = sm.port;
  lp.ca_name = t.node(sm.node).description;
  return lp;
}

// ------------------------------------------------------------------ faults

Result<PortRef> SimFabric::check_link_end(PortRef end) const {
  const routing::Topology& t = core_.topology();
  if (end.node.value >= t.num_nodes()) {
    return Error{Errc::kNotFound, fmt::format("simulator: no node with index {}", end.node.value)};
  }
  const routing::Node& n = t.node(end.node);
  if (end.port == 0 || end.port > n.num_ports) {
    return Error{Errc::kOutOfRange, fmt::format("simulator: \"{}\" has ports 1..{}, not {}",
                                                printable(n.description), n.num_ports, end.port)};
  }
  if (!t.port(end).connected()) {
    return Error{Errc::kNotFound, fmt::format("simulator: \"{}\" port {} has no cable",
                                              printable(n.description), end.port)};
  }
  return end;
}

Result<NodeId> SimFabric::check_switch(NodeId node) const {
  const routing::Topology& t = core_.topology();
  if (node.value >= t.num_nodes()) {
    return Error{Errc::kNotFound, fmt::format("simulator: no node with index {}", node.value)};
  }
  if (t.node(node).type != NodeType::kSwitch) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("simulator: \"{}\" is not a switch", t.node(node).description)};
  }
  return node;
}

Result<NodeId> SimFabric::find_node(std::string_view description) const {
  // Topology's name index is built lazily; the topology is never mutated
  // after construction, but the first lookup builds the index, so it is
  // done under the lock.
  auto n = core_.topology().find_by_name(description);
  if (!n) return Error{Errc::kNotFound, fmt::format("simulator: no node \"{}\"", description)};
  return *n;
}

Result<void> SimFabric::link_down(PortRef end) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_link_end(end));
  core_.set_link_failed(end, true);
  core_.run_until(core_.now(), false);
  sync_event_fd();
  return {};
}

Result<void> SimFabric::link_up(PortRef end) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_link_end(end));
  core_.set_link_failed(end, false);
  core_.run_until(core_.now(), false);
  sync_event_fd();
  return {};
}

Result<void> SimFabric::link_down(std::string_view node_description, PortNum port) {
  NodeId n;
  {
    std::lock_guard lock(mu_);
    SUBNETD_TRY_ASSIGN(n, find_node(node_description));
  }
  return link_down(PortRef{n, port});
}

Result<void> SimFabric::link_up(std::string_view node_description, PortNum port) {
  NodeId n;
  {
    std::lock_guard lock(mu_);
    SUBNETD_TRY_ASSIGN(n, find_node(node_description));
  }
  return link_up(PortRef{n, port});
}

Result<void> SimFabric::switch_down(NodeId node) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(node));
  core_.set_powered(node, false);
  core_.run_until(core_.now(), false);
  sync_event_fd();
  return {};
}

Result<void> SimFabric::switch_up(NodeId node) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(node));
  core_.set_powered(node, true);
  core_.run_until(core_.now(), false);
  sync_event_fd();
  return {};
}

Result<void> SimFabric::switch_down(std::string_view node_description) {
  NodeId n;
  {
    std::lock_guard lock(mu_);
    SUBNETD_TRY_ASSIGN(n, find_node(node_description));
  }
  return switch_down(n);
}

Result<void> SimFabric::switch_up(std::string_view node_description) {
  NodeId n;
  {
    std::lock_guard lock(mu_);
    SUBNETD_TRY_ASSIGN(n, find_node(node_description));
  }
  return switch_up(n);
}

Result<void> SimFabric::set_drop_probability(double p) {
  SUBNETD_TRY(check_probability(p));
  std::lock_guard lock(mu_);
  core_.set_drop_probability(p);
  return {};
}

Result<void> SimFabric::set_node_silent(NodeId node, bool silent) {
  std::lock_guard lock(mu_);
  if (node.value >= core_.topology().num_nodes()) {
    return Error{Errc::kNotFound, fmt::format("simulator: no node with index {}", node.value)};
  }
  core_.set_silent(node, silent);
  return {};
}

Result<void> SimFabric::inject_port_errors(PortRef at, const PortErrors& e) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_port(at));
  core_.inject_port_errors(at, e);
  return {};
}

Result<std::uint64_t> SimFabric::send_trap(PortRef from, const mad::Notice& notice,
                                           std::uint64_t tid) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_port(from));
  const std::optional<std::uint64_t> sent = core_.send_trap(from, notice, tid);
  if (!sent) {
    return Error{Errc::kUnreachable,
                 fmt::format("simulator: {} port {} has no LID or no master SM yet to trap to",
                             core_.topology().label(from.node), from.port)};
  }
  core_.run_until(core_.now(), false);
  sync_event_fd();
  return *sent;
}

Result<mad::pma::PortCounters> SimFabric::port_counters(PortRef at) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_port(at));
  return core_.port_counters(at);
}

// ------------------------------------------------------------------ peer SMs

Result<void> SimFabric::set_peer_sm(PortRef at, const PeerSmOptions& options) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_port(at));
  const routing::Topology& t = core_.topology();
  if (t.node(at.node).type != routing::NodeType::kCa) {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("simulator: a peer SM sits on a CA port; {} is not a CA", t.label(at.node))};
  }
  if (at == core_.sm_port()) {
    return Error{Errc::kInvalidArgument, fmt::format("simulator: {} port {} is the SM's own port",
                                                     t.label(at.node), at.port)};
  }
  if (options.priority > 15 || options.state > 3) {
    return Error{Errc::kOutOfRange,
                 fmt::format("simulator: peer SM priority {} / state {} (0-15 / 0-3)",
                             options.priority, options.state)};
  }
  core_.set_peer_sm(at, options);
  return {};
}

Result<void> SimFabric::set_peer_sm_alive(PortRef at, bool alive) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_port(at));
  if (!core_.peer_sm(at)) return no_peer_sm(at);
  core_.set_peer_sm_alive(at, alive);
  return {};
}

Result<void> SimFabric::peer_sm_send(PortRef at, std::uint32_t control) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_port(at));
  const auto peer = core_.peer_sm(at);
  if (!peer || !peer->alive) return no_peer_sm(at);
  if (control < 1 || control > 5) {
    return Error{Errc::kOutOfRange,
                 fmt::format("simulator: SMInfo control {} (1 HANDOVER .. 5 DISCOVER)", control)};
  }
  core_.peer_sm_send(at, control);
  core_.run_until(core_.now(), false);
  sync_event_fd();
  return {};
}

Result<PeerSmView> SimFabric::peer_sm(PortRef at) const {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_port(at));
  auto peer = core_.peer_sm(at);
  if (!peer) return no_peer_sm(at);
  return *peer;
}

Error SimFabric::no_peer_sm(PortRef at) const {
  return Error{Errc::kNotFound, fmt::format("simulator: no {}peer SM at {} port {}",
                                            core_.peer_sm(at) ? "live " : "",
                                            core_.topology().label(at.node), at.port)};
}

Result<void> SimFabric::check_port(PortRef at) const {
  const routing::Topology& t = core_.topology();
  if (at.node.value >= t.num_nodes()) {
    return Error{Errc::kNotFound, fmt::format("simulator: no node with index {}", at.node.value)};
  }
  if (at.port < 1 || at.port > t.node(at.node).num_ports) {
    return Error{Errc::kOutOfRange,
                 fmt::format("simulator: {} has no port {}", t.label(at.node), at.port)};
  }
  return {};
}

// ------------------------------------------------------------------ inspection

Result<NodeId> SimFabric::node_by_guid(Guid guid) const {
  std::lock_guard lock(mu_);
  auto n = core_.topology().find_by_guid(guid);
  if (!n) return Error{Errc::kNotFound, fmt::format("no node with GUID {:#018x}", guid.value)};
  return *n;
}

SimStats SimFabric::stats() const {
  std::lock_guard lock(mu_);
  SimStats st = core_.stats();
  st.gmp_delivered = gmp_delivered_;
  st.gmp_lost = gmp_lost_;
  return st;
}

Result<PortView> SimFabric::port_view(PortRef ref) const {
  std::lock_guard lock(mu_);
  const routing::Topology& t = core_.topology();
  if (ref.node.value >= t.num_nodes() || ref.port > t.node(ref.node).num_ports) {
    return Error{Errc::kNotFound,
                 fmt::format("simulator: no port {} on node index {}", ref.port, ref.node.value)};
  }
  return core_.port_view(ref);
}

Result<routing::PortMask> SimFabric::mft_entry(NodeId sw, Lid mlid) const {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(sw));
  return core_.mft_entry(sw, mlid.value);
}

Result<mad::SlToVlMappingTable> SimFabric::sl2vl(NodeId node, PortNum in, std::uint32_t attr_mod) {
  std::lock_guard lock(mu_);
  if (node.value >= core_.topology().num_nodes()) {
    return Error{Errc::kInvalidArgument, "no such node"};
  }
  return core_.sl2vl(node, in, attr_mod);
}

Result<mad::VlArbitrationTable> SimFabric::vlarb(NodeId node, PortNum in, std::uint32_t attr_mod) {
  std::lock_guard lock(mu_);
  if (node.value >= core_.topology().num_nodes()) {
    return Error{Errc::kInvalidArgument, "no such node"};
  }
  return core_.vlarb(node, in, attr_mod);
}

Result<std::uint8_t> SimFabric::lft_entry(NodeId sw, Lid lid) const {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(sw));
  return core_.lft_entry(sw, lid.value);
}

Result<void> SimFabric::set_lft_entry(NodeId sw, Lid lid, PortNum port) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(sw));
  if (lid.value >= core_.lft_cap()) {
    return Error{
        Errc::kOutOfRange,
        fmt::format("simulator: LID {:#x} is beyond the LFT capacity {:#x} of \"{}\"", lid.value,
                    core_.lft_cap(), printable(core_.topology().node(sw).description))};
  }
  core_.set_lft_entry(sw, lid.value, port);
  return {};
}

Result<void> SimFabric::set_failover(NodeId sw, FailoverTables tables) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(sw));
  const routing::Node& node = core_.topology().node(sw);
  if (tables.groups.size() > 256) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("simulator: {} failover groups for \"{}\" (at most 255)",
                             tables.groups.size() - 1, printable(node.description))};
  }
  for (std::size_t g = 1; g < tables.groups.size(); ++g) {
    for (unsigned p = static_cast<unsigned>(node.num_ports) + 1; p < 256; ++p) {
      if (tables.groups[g].test(static_cast<PortNum>(p))) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("simulator: failover group {} of \"{}\" names port {} (it has {})",
                                 g, printable(node.description), p, node.num_ports)};
      }
    }
  }
  for (std::size_t l = 0; l < tables.lid_group.size(); ++l) {
    const std::uint8_t g = tables.lid_group[l];
    if (g != 0 && g >= tables.groups.size()) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("simulator: LID {:#x} of \"{}\" names failover group {} of {}", l,
                               printable(node.description), g, tables.groups.size())};
    }
  }
  core_.set_failover(sw, std::move(tables));
  return {};
}

Result<void> SimFabric::arm_failover(const routing::Topology& topo,
                                     const routing::FailoverPlan& plan) {
  for (std::uint32_t i = 0; i < plan.num_switches(); ++i) {
    const SwitchIndex s{i};
    const routing::Node& node = topo.node(topo.switch_node(s));
    auto sw = node_by_guid(node.guid);
    if (!sw.ok()) {
      return Error{Errc::kNotFound,
                   fmt::format("simulator: no switch {:#018x} to arm", node.guid.value)};
    }
    FailoverTables t;
    t.enabled = true;
    const auto groups = plan.groups(s);
    t.groups.assign(groups.begin(), groups.end());
    t.lid_group.resize(std::size_t{plan.max_lid().value} + 1);
    for (std::uint32_t l = 1; l < t.lid_group.size(); ++l) {
      t.lid_group[l] = plan.lid_group(s, Lid{l});
    }
    t.notify = plan.notify(s);
    SUBNETD_TRY(set_failover(*sw, std::move(t)));
  }
  return {};
}

Result<void> SimFabric::clear_failover_state(NodeId sw) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(sw));
  core_.clear_failover_state(sw);
  return {};
}

void SimFabric::clear_all_failover_state() {
  std::lock_guard lock(mu_);
  const routing::Topology& t = core_.topology();
  for (const NodeId sw : t.switches()) core_.clear_failover_state(sw);
}

FailoverCheck SimFabric::check_failover_forwarding() const {
  std::lock_guard lock(mu_);
  return core_.check_failover_forwarding();
}

Result<void> SimFabric::restore_link(PortRef end) {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_link_end(end));
  core_.restore_link(end);
  sync_event_fd();
  return {};
}

Result<std::uint8_t> SimFabric::effective_port(NodeId sw, Lid lid) const {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(sw));
  return core_.effective_port(sw, lid.value);
}

void SimFabric::run_for(std::chrono::nanoseconds d) {
  std::lock_guard lock(mu_);
  const auto deadline = core_.now() + d;
  core_.run_until(deadline, /*stop_at_delivery=*/false);
  core_.advance_to(deadline);
  sync_event_fd();
}

Result<bool> SimFabric::port_state_change(NodeId sw) const {
  std::lock_guard lock(mu_);
  SUBNETD_TRY(check_switch(sw));
  return core_.port_state_change(sw);
}

std::size_t SimFabric::lft_bytes() const {
  std::lock_guard lock(mu_);
  return core_.lft_bytes();
}

}  // namespace subnetd::discovery::sim

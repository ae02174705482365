// GMPs on the simulated fabric: the SM's GMP servers (the SA) and
// simulated CAs as their clients; see sim_fabric.hpp.

#include <fmt/format.h>

#include <cstring>

#include "discovery/sim/sim_fabric.hpp"

namespace subnetd::discovery::sim {

Result<void> SimFabric::serve_gmp_class(std::uint8_t mgmt_class, GmpServer server) {
  std::lock_guard lock(mu_);
  for (const auto& [cls, s] : gmp_servers_) {
    if (cls == mgmt_class) {
      return Error{Errc::kConflict,
                   fmt::format("sim: management class {:#04x} is served already", mgmt_class)};
    }
  }
  gmp_servers_.emplace_back(mgmt_class, std::make_shared<const GmpServer>(std::move(server)));
  return {};
}

std::shared_ptr<const GmpServer> SimFabric::route_gmp(PortRef from, std::uint32_t dlid,
                                                      std::uint32_t qpn,
                                                      std::span<const std::uint8_t> mad) {
  const std::optional<PortRef> to = core_.walk_gmp(from, dlid);
  if (to && *to == core_.sm_port() && qpn == 1) {
    for (const auto& [cls, server] : gmp_servers_) {
      if (cls == mad[1]) {
        ++gmp_delivered_;
        return server;
      }
    }
  }
  const routing::Topology& t = core_.topology();
  if (!to || *to == core_.sm_port() || t.node(to->node).type == routing::NodeType::kSwitch) {
    ++gmp_lost_;  // lost on the way, or at a port where nothing serves it
    return nullptr;
  }
  GmpDelivery d;
  d.slid = core_.port_view(from).lid.value;
  d.qpn = qpn;
  std::memcpy(d.mad.data(), mad.data(), kMadSize);
  gmp_inbox_[t.port_index(to->node, to->port)].push_back(d);
  ++gmp_delivered_;
  gmp_arrived_.notify_all();
  return nullptr;
}

Result<void> SimFabric::send_gmp(std::uint32_t dlid, std::uint32_t qpn,
                                 std::span<const std::uint8_t> mad) {
  if (mad.size() != kMadSize) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("sim: a GMP is {} bytes, not {}", kMadSize, mad.size())};
  }
  std::lock_guard lock(mu_);
  route_gmp(core_.sm_port(), dlid, qpn, mad);
  return {};
}

Result<void> SimFabric::gmp_send(PortRef from, std::uint32_t dlid,
                                 std::span<const std::uint8_t> mad) {
  if (mad.size() != kMadSize) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("sim: a GMP is {} bytes, not {}", kMadSize, mad.size())};
  }
  std::shared_ptr<const GmpServer> server;
  Lid slid;
  {
    std::lock_guard lock(mu_);
    const routing::Topology& t = core_.topology();
    if (from.node.value >= t.num_nodes() || t.node(from.node).type == routing::NodeType::kSwitch ||
        from.port == 0 || from.port > t.node(from.node).num_ports) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("sim: port {} of node index {} is not a CA port", from.port,
                               from.node.value)};
    }
    slid = core_.port_view(from).lid;
    server = route_gmp(from, dlid, 1, mad);
  }
  if (server == nullptr) return {};
  const GmpRequest request{mad, slid.value};
  const std::vector<GmpAnswer> answers = (*server)(std::span(&request, 1));
  std::lock_guard lock(mu_);
  for (const GmpAnswer& answer : answers) {
    for (const auto& segment : answer) route_gmp(core_.sm_port(), slid.value, 1, segment);
  }
  return {};
}

std::vector<SimFabric::GmpDelivery> SimFabric::gmp_take(PortRef at) {
  std::lock_guard lock(mu_);
  const routing::Topology& t = core_.topology();
  if (at.node.value >= t.num_nodes() || at.port > t.node(at.node).num_ports) return {};
  auto it = gmp_inbox_.find(t.port_index(at.node, at.port));
  if (it == gmp_inbox_.end()) return {};
  std::vector<GmpDelivery> out(it->second.begin(), it->second.end());
  gmp_inbox_.erase(it);
  return out;
}

std::optional<SimFabric::GmpDelivery> SimFabric::gmp_wait(PortRef at,
                                                          std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  const routing::Topology& t = core_.topology();
  if (at.node.value >= t.num_nodes() || at.port > t.node(at.node).num_ports) return std::nullopt;
  const std::uint32_t key = t.port_index(at.node, at.port);
  auto has = [&] {
    auto it = gmp_inbox_.find(key);
    return it != gmp_inbox_.end() && !it->second.empty();
  };
  if (!gmp_arrived_.wait_for(lock, limit, has)) return std::nullopt;
  std::deque<GmpDelivery>& q = gmp_inbox_[key];
  GmpDelivery d = q.front();
  q.pop_front();
  return d;
}

}  // namespace subnetd::discovery::sim

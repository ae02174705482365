#include "discovery/sweeper.hpp"

#include <fmt/format.h>

#include <memory>

#include "discovery/mad/failover.hpp"

namespace subnetd::discovery {
namespace {

using routing::NodeType;
using routing::PortState;

constexpr std::uint8_t kPhysLinkUp = 5;

// Node descriptions come from the wire: label() escapes them.
std::string describe(const routing::Topology& t, NodeId n) {
  return fmt::format("{} {}", routing::node_type_name(t.node(n).type), t.label(n));
}

// State of one sweep; callbacks capture a pointer to it.
class Sweep {
 public:
  Sweep(MadEngine& engine, const SweepOptions& opts)
      : opts_(opts), pipeline_(engine, opts.pipeline) {}

  boost::asio::awaitable<Result<SweepResult>> run(MadEngine& engine) {
    Transport& transport = engine.transport();
    const auto start = transport.now();
    const std::uint64_t malformed0 = engine.stats().malformed;
    // Our own node: a zero-hop directed-route NodeInfo.
    probe({}, kNoNode, 0);
    co_await pipeline_.drained();
    if (engine.stopped()) {
      co_return engine.error() ? *engine.error()
                               : Error{Errc::kCancelled, "sweep cancelled: the MAD engine stopped"};
    }
    out_.malformed = engine.stats().malformed - malformed0;
    co_return finish(transport, start);
  }

 private:
  Result<SweepResult> finish(Transport& transport, std::chrono::nanoseconds start) {
    if (!fatal_.empty()) return Error{Errc::kUnreachable, fatal_};
    if (!foreign_vendor_.empty()) return Error{Errc::kInvalidArgument, foreign_vendor_};
    if (!out_.sm_node.valid())
      return Error{Errc::kInternal, "sweep ended without the SM's own node"};
    // Without a live, answering neighbour on the SM's port there is no
    // subnet: say so rather than report a "subnet" of the SM's CA alone.
    // (An SM on a switch's management port 0 sweeps through the switch's own
    // ports: port 0 has no cable by definition.)
    const routing::Port& own = out_.topology.port(out_.sm_node, out_.sm_port);
    const bool on_switch = out_.topology.node(out_.sm_node).type == routing::NodeType::kSwitch;
    if (!on_switch && !own.connected()) {
      const bool link_up = own.phys_state == kPhysLinkUp;
      return Error{
          Errc::kUnreachable,
          fmt::format("the SM's port, {} port {}, {}; there is no subnet to sweep",
                      describe(out_.topology, out_.sm_node), out_.sm_port,
                      link_up ? "leads to a neighbour that does not answer"
                              : fmt::format("has no link (PortState {}, PortPhysicalState {})",
                                            routing::port_state_name(own.state), own.phys_state))};
    }
    // A loopback cable sweeps and routes fine (no route uses it), which is
    // why it must be said: it is usually a cable in the wrong port.
    for (std::string& l : out_.topology.loopback_cables()) out_.warnings.push_back(std::move(l));
    out_.smps = pipeline_.stats();
    out_.duration = transport.now() - start;
    return std::move(out_);
  }

  std::vector<std::uint8_t> extend(std::span<const std::uint8_t> path, PortNum p) {
    std::vector<std::uint8_t> v(path.begin(), path.end());
    v.push_back(p);
    return v;
  }

  // Requests to a node found already carry its per-destination window key
  // (its SMA's queue is finite); NodeInfo probes of nodes not yet known go
  // without one.
  void ask(NodeId node, const mad::Smp& smp, Flow::Callback done) {
    pipeline_.submit(smp, 0, std::move(done), dest_of(node));
  }

  // NodeInfo along `path`, reached from (parent, parent_port) (kNoNode for ourselves).
  void probe(std::vector<std::uint8_t> path, NodeId parent, PortNum parent_port) {
    mad::Smp smp = mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kNodeInfo, 0, path, 0);
    pipeline_.submit(
        smp, 0, [this, path = std::move(path), parent, parent_port](Result<mad::Smp> r) {
          if (!r.ok()) {
            if (!parent.valid()) {
              fatal_ = "the SM's own port does not answer NodeInfo: " + r.error().message;
            } else {
              out_.unreachable.push_back(fmt::format("{} port {}: {}",
                                                     describe(out_.topology, parent), parent_port,
                                                     r.error().message));
            }
            return;
          }
          on_node_info(path, parent, parent_port, mad::NodeInfo::decode(mad::data_of(*r)));
        });
  }

  void on_node_info(const std::vector<std::uint8_t>& path, NodeId parent, PortNum parent_port,
                    const mad::NodeInfo& ni) {
    routing::Topology& t = out_.topology;
    if (ni.node_type < 1 || ni.node_type > 3 || ni.num_ports == 0 ||
        (ni.node_type != 2 && ni.local_port_num == 0) || ni.local_port_num > ni.num_ports) {
      out_.warnings.push_back(fmt::format(
          "node GUID {:#018x} behind path [{}]: implausible NodeInfo (type {}, {} ports, "
          "local port {}); ignored",
          ni.node_guid, fmt::join(path, ","), ni.node_type, ni.num_ports, ni.local_port_num));
      return;
    }
    const auto type = static_cast<NodeType>(ni.node_type);
    const Guid guid{ni.node_guid};
    NodeId node;
    bool is_new = false;
    if (auto found = t.find_by_guid(guid)) {
      node = *found;
      if (t.node(node).type != type || t.node(node).num_ports != ni.num_ports) {
        clash(node, path,
              fmt::format("a {} with {} ports", ni.node_type == 2 ? "switch" : "CA", ni.num_ports));
        return;
      }
    } else {
      is_new = true;
      node = t.add_node(type, guid, ni.num_ports, fmt::format("{:#018x}", ni.node_guid));
      t.mutable_node(node).system_guid = Guid{ni.system_image_guid};
      t.mutable_node(node).vendor_id = ni.vendor_id;
      t.mutable_node(node).device_id = ni.device_id;
      t.mutable_node(node).partition_cap = ni.partition_cap;
      t.mutable_node(node).revision = ni.revision;
      out_.paths.add(path);
      out_.max_hops =
          std::max<std::uint32_t>(out_.max_hops, static_cast<std::uint32_t>(path.size()));
    }
    const PortNum arrival = ni.local_port_num;
    if (type != NodeType::kSwitch) {
      t.mutable_port(node, arrival).guid = Guid{ni.port_guid};
      const auto first = out_.paths.path(node);
      if (!std::equal(first.begin(), first.end(), path.begin(), path.end())) {
        out_.port_paths.emplace(t.port_index(node, arrival), path);
      }
    } else if (is_new) {
      // A switch's PortGUID is its port 0's (shared by all its ports); IBA
      // does not make it equal the node GUID, and LIDs are keyed by it.
      for (unsigned p = 0; p <= ni.num_ports; ++p) {
        t.mutable_port(node, static_cast<PortNum>(p)).guid = Guid{ni.port_guid};
      }
    }

    if (!parent.valid()) {
      out_.sm_node = node;
      out_.sm_port = arrival;
    } else {
      const routing::Port& from = t.port(parent, parent_port);
      const routing::Port& to = t.port(node, arrival);
      if (!from.connected() && !to.connected()) {
        if (auto c = t.connect({parent, parent_port}, {node, arrival}); !c.ok()) {
          out_.warnings.push_back(c.error().message);
        }
      } else if (from.remote_node != node || from.remote_port != arrival) {
        if (!is_new && to.connected() &&
            (to.remote_node != parent || to.remote_port != parent_port)) {
          // One port cannot be cabled to two neighbours: another node
          // answers with this GUID.
          clash(node, path,
                fmt::format("port {} cabled to {} port {}", arrival, describe(t, parent),
                            parent_port));
          return;
        }
        out_.warnings.push_back(
            fmt::format("{} port {} leads to {} port {}, which is already "
                        "linked elsewhere; link ignored",
                        describe(t, parent), parent_port, describe(t, node), arrival));
      }
    }

    if (is_new) {
      request_node_description(node);
      if (type == NodeType::kSwitch) {
        request_switch_info(node);
        for (unsigned p = 0; p <= ni.num_ports; ++p)
          request_port_info(node, static_cast<PortNum>(p));
      }
    }
    // A CA (or router) is asked about the port we reached it through; each of
    // its ports is reached along its own path.
    if (type != NodeType::kSwitch) request_port_info(node, arrival);
  }

  // A second node answering with `node`'s GUID, reached by `path`, where
  // it is `what`: a clash (once per GUID) and a warning; it is left out.
  void clash(NodeId node, const std::vector<std::uint8_t>& path, const std::string& what) {
    const routing::Topology& t = out_.topology;
    const Guid guid = t.node(node).guid;
    const auto first = out_.paths.path(node);
    const std::string message = fmt::format(
        "duplicate node GUID {:#018x}: {} reached by path [{}], and a node with the same GUID "
        "by path [{}] ({}); the second is left out",
        guid.value, describe(t, node), fmt::join(first, ","), fmt::join(path, ","), what);
    out_.warnings.push_back(message);
    for (const auto& c : out_.guid_clashes) {
      if (c.guid == guid) return;
    }
    out_.guid_clashes.push_back({guid, message});
  }

  // Extended LIDs need subnetd's vendor attributes (0xFF10-0xFF12), which
  // other vendors' nodes use for other things: a node of another vendor is
  // sent none, and the sweep fails naming it (the first one found).
  bool speaks_extended_lids(NodeId node) {
    const std::uint32_t vendor = out_.topology.node(node).vendor_id;
    if (vendor == mad::kSubnetdVendorId) return true;
    if (foreign_vendor_.empty()) {
      foreign_vendor_ = fmt::format(
          "lid_bits above 16 need subnetd's extended-LID attributes, and {} (NodeInfo VendorID "
          "{:#08x}) does not have them (nothing was sent to it: its vendor may use attributes "
          "0xFF10-0xFF12 for something else); set addressing.lid_bits to 16",
          describe(out_.topology, node), vendor);
    }
    return false;
  }

  void request_node_description(NodeId node) {
    mad::Smp smp = mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kNodeDescription, 0,
                                    out_.paths.path(node), 0);
    ask(node, smp, [this, node](Result<mad::Smp> r) {
      if (!r.ok()) {
        out_.warnings.push_back(fmt::format("{}: NodeDescription: {}",
                                            describe(out_.topology, node), r.error().message));
        return;
      }
      std::string text = mad::NodeDescription::decode(mad::data_of(*r)).text;
      if (!text.empty()) out_.topology.mutable_node(node).description = std::move(text);
    });
  }

  void request_switch_info(NodeId node) {
    if (out_.lft_top.size() <= node.value) {
      out_.lft_top.resize(node.value + 1, SweepResult::kUnknownTop);
    }
    mad::Smp smp =
        mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kSwitchInfo, 0, out_.paths.path(node), 0);
    ask(node, smp, [this, node](Result<mad::Smp> r) {
      if (!r.ok()) {
        out_.warnings.push_back(
            fmt::format("{}: SwitchInfo: {}", describe(out_.topology, node), r.error().message));
        return;
      }
      const auto raw = mad::data_of(*r);
      const std::uint32_t sw = out_.topology.node(node).switch_index.value;
      if (out_.switch_info.size() <= sw) out_.switch_info.resize(sw + 1);
      std::copy(raw.begin(), raw.end(), out_.switch_info[sw].begin());
      const mad::SwitchInfo si = mad::SwitchInfo::decode(raw);
      out_.topology.mutable_node(node).partition_enforcement_cap = si.partition_enforcement_cap;
      if (!opts_.extended_lids) out_.lft_top[node.value] = si.linear_fdb_top;
    });
    if (!opts_.extended_lids || !speaks_extended_lids(node)) return;
    mad::Smp ext = mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kExtSwitchInfo, 0,
                                    out_.paths.path(node), 0);
    ask(node, ext, [this, node](Result<mad::Smp> r) {
      // A switch not yet in an extended mode answers with a status: its
      // table holds nothing we wrote.
      out_.lft_top[node.value] =
          r.ok() ? mad::ExtSwitchInfo::decode(mad::data_of(*r)).linear_fdb_top : 0;
    });
  }

  void request_port_info(NodeId node, PortNum port) {
    mad::Smp smp = mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kPortInfo, port,
                                    out_.path_to_port(node, port), 0);
    ask(node, smp, [this, node, port](Result<mad::Smp> r) {
      if (!r.ok()) {
        out_.warnings.push_back(fmt::format(
            "{} port {}: PortInfo: {}", describe(out_.topology, node), port, r.error().message));
        return;
      }
      const std::uint32_t at = out_.topology.port_index(node, port);
      if (out_.port_info.size() <= at) out_.port_info.resize(at + 1);
      const auto raw = mad::data_of(*r);
      std::copy(raw.begin(), raw.end(), out_.port_info[at].begin());
      on_port_info(node, port, mad::PortInfo::decode(raw));
    });
    const bool lid_port = port == 0 || out_.topology.node(node).type != NodeType::kSwitch;
    if (opts_.extended_lids && lid_port && speaks_extended_lids(node)) {
      mad::Smp ext = mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kExtPortInfo, port,
                                      out_.path_to_port(node, port), 0);
      ask(node, ext, [this, node, port](Result<mad::Smp> r) {
        if (!r.ok()) return;  // a port without extended LIDs simply has none yet
        auto e = mad::ExtPortInfo::decode(mad::data_of(*r));
        routing::Port& p = out_.topology.mutable_port(node, port);
        p.lid = Lid{e.lid};
        p.master_sm_lid = Lid{e.master_sm_lid};
        p.lmc = e.lmc;
      });
    }
  }

  void on_port_info(NodeId node, PortNum port, const mad::PortInfo& pi) {
    routing::Topology& t = out_.topology;
    routing::Port& p = t.mutable_port(node, port);
    p.state = static_cast<PortState>(pi.port_state);
    p.phys_state = pi.port_phys_state;
    p.width_active = pi.link_width_active;
    p.speed_active = pi.link_speed_active;
    p.mtu_cap = pi.mtu_cap;
    if (!opts_.extended_lids) {
      p.lid = Lid{pi.lid};
      p.master_sm_lid = Lid{pi.master_sm_lid};
      p.lmc = pi.lmc;
    }
    const routing::Node& n = t.node(node);
    // Only switches forward directed-route SMPs onward; the one CA port we
    // look out of is the SM's own.
    const bool is_sm_port = node == out_.sm_node && port == out_.sm_port;
    if ((n.type != NodeType::kSwitch && !is_sm_port) || port == 0) return;
    // A switch port with a live link leads somewhere: go and look, unless the
    // link is already known from the other side.
    const bool up =
        pi.port_phys_state == kPhysLinkUp ||
        (pi.port_phys_state == 0 && pi.port_state >= static_cast<std::uint8_t>(PortState::kInit));
    if (!up || p.connected()) return;
    std::span<const std::uint8_t> path = out_.paths.path(node);
    if (path.size() >= mad::kMaxHopCount) {
      out_.unreachable.push_back(fmt::format("{} port {}: beyond the 63-hop directed-route limit",
                                             describe(t, node), port));
      return;
    }
    probe(extend(path, port), node, port);
  }

  SweepOptions opts_;
  Flow pipeline_;
  SweepResult out_;
  std::string fatal_;
  std::string foreign_vendor_;  // the first node that cannot do extended LIDs
};

}  // namespace

DrPaths bfs_paths(const routing::Topology& t, NodeId sm_node, PortNum sm_port,
                  const std::function<bool(NodeId, PortNum)>& usable,
                  std::vector<std::uint8_t>* reached) {
  std::vector<std::vector<std::uint8_t>> path(t.num_nodes());
  std::vector<std::uint8_t> seen(t.num_nodes(), 0);
  std::vector<NodeId> queue{sm_node};
  seen[sm_node.value] = 1;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const NodeId n = queue[i];
    // Only switches forward directed-route SMPs; the SM looks out of its own port.
    if (n != sm_node && t.node(n).type != routing::NodeType::kSwitch) continue;
    for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      if (n == sm_node && p != sm_port) continue;
      const routing::Port& port = t.port(n, p);
      if (!port.connected() || seen[port.remote_node.value] != 0) continue;
      if (usable && (!usable(n, p) || !usable(port.remote_node, port.remote_port))) continue;
      if (path[n.value].size() + 1 > mad::kMaxHopCount) continue;
      seen[port.remote_node.value] = 1;
      path[port.remote_node.value] = path[n.value];
      path[port.remote_node.value].push_back(p);
      queue.push_back(port.remote_node);
    }
  }
  DrPaths out;
  for (const auto& p : path) out.add(p);
  if (reached != nullptr) *reached = std::move(seen);
  return out;
}

boost::asio::awaitable<Result<SweepResult>> Sweeper::run(MadEngine& engine) {
  SUBNETD_ASSERT_ON(engine.strand());
  auto sweep = std::make_unique<Sweep>(engine, opts_);
  co_return co_await sweep->run(engine);
}

Result<SweepResult> Sweeper::run() {
  return run_blocking<Result<SweepResult>>(*transport_,
                                           [this](MadEngine& engine) { return run(engine); });
}

}  // namespace subnetd::discovery

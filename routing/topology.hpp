#pragma once
// routing::Topology — the fabric as a graph of nodes and ports.
//
// Owner: whoever built it (a generator, the net-file reader, or the Sweeper);
// afterwards it is treated as immutable and shared read-only (routing engines,
// the verifier, published FabricState). Not thread-safe for mutation.
//
// Layout: nodes in a dense vector (NodeId = index); ports of all nodes in one
// flat vector, node n's port p at node(n).first_port + p. Every node has a
// slot for port 0 (the switch management port; unused on CAs) so indexing is
// uniform. GUIDs and names are only looked up at the edges (maps built once).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "routing/ids.hpp"
#include "routing/result.hpp"

namespace subnetd::routing {

enum class NodeType : std::uint8_t { kCa = 1, kSwitch = 2, kRouter = 3 };
const char* node_type_name(NodeType t);

// IBA PortInfo:PortState.
enum class PortState : std::uint8_t {
  kNoChange = 0,
  kDown = 1,
  kInit = 2,
  kArmed = 3,
  kActive = 4
};
const char* port_state_name(PortState s);

struct Port {
  Guid guid;                     // port GUID (switch ports share the node's port-0 GUID)
  NodeId remote_node = kNoNode;  // peer across the link, kNoNode if unconnected
  PortNum remote_port = 0;
  PortState state = PortState::kDown;
  std::uint8_t width_active = 0;  // IBA LinkWidthActive bits (1=1x, 2=4x, 4=8x, 8=12x, 16=2x)
  std::uint8_t speed_active =
      0;              // IBA LinkSpeedActive (1=SDR, 2=DDR, 4=QDR); ext. speeds elsewhere
  Lid lid;            // LID found on the port at sweep time (0 = none)
  Lid master_sm_lid;  // MasterSMLID found on the port at sweep time
  std::uint8_t lmc = 0;
  std::uint8_t phys_state = 0;  // IBA PortPhysicalState (5 = LinkUp)
  std::uint8_t mtu_cap = 0;     // IBA PortInfo:MTUCap (1=256 .. 5=4096); 0 = not read
  bool connected() const { return remote_node.valid(); }
};

struct Node {
  NodeType type = NodeType::kCa;
  Guid guid;
  Guid system_guid;
  std::uint8_t num_ports = 0;    // physical ports, numbered 1..num_ports
  std::uint32_t first_port = 0;  // index of port 0 in the flat port array
  SwitchIndex switch_index;      // dense index among switches, kNoSwitch otherwise
  std::uint32_t vendor_id = 0;   // NodeInfo:VendorID (24 bits), as the sweep found it
  // More of NodeInfo, as the sweep found it (the SA's NodeRecord).
  std::uint16_t device_id = 0;
  std::uint16_t partition_cap = 0;
  // SwitchInfo:PartitionEnforcementCap: the P_Key table size of a switch's
  // external ports (0 on CAs, or not read).
  std::uint16_t partition_enforcement_cap = 0;
  std::uint32_t revision = 0;
  std::string description;
};

class Topology {
 public:
  // Adds a node; port GUIDs default to node_guid (switch) or node_guid+port (CA/router).
  NodeId add_node(NodeType type, Guid node_guid, std::uint8_t num_ports, std::string description);

  // Links a.port <-> b.port. Fails if either port does not exist or is
  // already linked, or if a and b are the same port. Two ports of one node
  // may be linked: a loopback cable exists on real fabrics (a test plug, a
  // cabling mistake); routing leaves it out (SwitchGraph) and
  // loopback_cables() names it for the operator.
  Result<void> connect(PortRef a, PortRef b);
  // Unlinks the port and its peer (no-op if unconnected).
  void disconnect(PortRef a);

  std::size_t num_nodes() const { return nodes_.size(); }
  std::size_t num_switches() const { return switches_.size(); }
  std::size_t num_cas() const { return num_nodes() - num_switches(); }
  std::size_t num_ports_total() const { return ports_.size(); }
  // Number of links (each counted once).
  std::size_t num_links() const;
  // One line per loopback cable (two ports of one node linked to each
  // other), naming the node and both ports, for a warning: no route can use
  // such a link, and it usually means a cable is in the wrong port.
  std::vector<std::string> loopback_cables() const;

  const Node& node(NodeId id) const { return nodes_[id.value]; }
  Node& mutable_node(NodeId id) {
    names_valid_ = false;  // the description may change
    return nodes_[id.value];
  }
  std::span<const Node> nodes() const { return nodes_; }

  // Port p of node n; p must be <= num_ports.
  const Port& port(NodeId n, PortNum p) const { return ports_[nodes_[n.value].first_port + p]; }
  Port& mutable_port(NodeId n, PortNum p) {
    port_guids_valid_ = false;  // the port GUID may change
    return ports_[nodes_[n.value].first_port + p];
  }
  const Port& port(PortRef r) const { return port(r.node, r.port); }
  std::uint32_t port_index(NodeId n, PortNum p) const { return nodes_[n.value].first_port + p; }
  std::span<const Port> ports() const { return ports_; }

  // Node ids of all switches, in switch_index order.
  std::span<const NodeId> switches() const { return switches_; }
  NodeId switch_node(SwitchIndex switch_index) const { return switches_[switch_index.value]; }
  // How errors and logs name a node: "sw-a" (0x0002c90000000001). The
  // description is escaped and cut with printable() (it comes from the wire).
  std::string label(NodeId id) const;
  std::string switch_label(SwitchIndex switch_index) const {
    return label(switch_node(switch_index));
  }

  std::optional<NodeId> find_by_guid(Guid node_guid) const;
  // Looks up a port GUID (CA ports, switch port 0).
  std::optional<PortRef> find_by_port_guid(Guid port_guid) const;
  std::optional<NodeId> find_by_name(std::string_view description) const;

  // Structural checks: links symmetric, port numbers in range, GUIDs unique.
  Result<void> validate() const;

  void reserve(std::size_t nodes, std::size_t ports);

 private:
  void build_port_guid_index() const;
  void build_name_index() const;

  std::vector<Node> nodes_;
  std::vector<Port> ports_;
  std::vector<NodeId> switches_;
  // Node GUIDs are indexed as nodes are added (the Sweeper dedups by GUID
  // on every answer). Port GUIDs and names change through mutable_*(), so
  // those indexes are rebuilt lazily on first use after a change.
  std::unordered_map<Guid, NodeId> by_guid_;
  mutable bool port_guids_valid_ = false;
  mutable bool names_valid_ = false;
  mutable std::unordered_map<Guid, PortRef> by_port_guid_;
  mutable std::unordered_map<std::string, NodeId> by_name_;
};

}  // namespace subnetd::routing

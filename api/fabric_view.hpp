#pragma once
// FabricView: one published FabricState plus the lookups the gRPC API needs
// (nodes ordered by GUID for paging, GUID / port-GUID / name indexes, the
// canonical link list) and its conversions to subnet.v1 messages.
//
// Built once per snapshot generation by whichever gRPC thread first needs it
// (ViewCache), then immutable and shared by every call that reads that
// generation. It owns a reference to the snapshot, so a call that holds a
// view keeps reading one consistent fabric however often the SM publishes.
// It never calls Topology's lazily indexed finders (which are not safe to
// call from several threads on a shared topology); it builds its own maps.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "routing/ids.hpp"
#include "routing/result.hpp"
#include "state/event.hpp"
#include "state/fabric_state.hpp"
#include "subnet/v1/subnet.pb.h"

namespace subnetd::api {

namespace v1 = ::subnet::v1;

// A cable, each reported once: `a` has the lower node GUID (the lower port
// on a loop-back between two ports of one node).
struct LinkRef {
  PortRef a;
  PortRef b;
};

class FabricView {
 public:
  explicit FabricView(std::shared_ptr<const state::FabricState> state);

  const state::FabricState& state() const { return *state_; }
  // True once a sweep has produced a topology and LIDs.
  bool has_fabric() const { return state_->topology && state_->lids; }
  bool has_routes() const { return has_fabric() && state_->routes; }
  const routing::Topology& topo() const { return *state_->topology; }
  const routing::LidMap& lids() const { return *state_->lids; }

  std::span<const NodeId> nodes_by_guid() const { return by_guid_; }
  std::span<const LinkRef> links() const { return links_; }
  std::uint32_t lids_in_use() const { return lids_in_use_; }
  std::optional<NodeId> node_by_guid(Guid g) const;
  std::optional<PortRef> port_by_guid(Guid g) const;

  // What a NodeRef names. `port` is set when the reference itself names a
  // port (a LID or a CA port GUID); node GUIDs and names leave it unset.
  struct Target {
    NodeId node;
    std::optional<PortNum> port;
  };
  // kInvalidArgument (empty selector, LID 0, ambiguous name) or kNotFound.
  // Messages do not name the request field; the caller prefixes it.
  Result<Target> resolve(const v1::NodeRef& ref) const;

  // The port a trace of `node` starts from or goes to when none was named: a
  // switch's port 0; a CA's first ACTIVE port, else its first cabled port
  // that is not DOWN; nullopt when it has none.
  std::optional<PortNum> default_port(NodeId node) const;
  // Base LID of a CA/router port or of a switch (port 0); 0 = none.
  Lid port_lid(NodeId node, PortNum port) const;
  // The node's LID as Node.lid reports it.
  Lid node_lid(NodeId node) const;

  // Node description for an event's GUID; empty when not in this snapshot.
  std::string name_of(Guid node_guid) const;

  void fill_node(NodeId n, v1::Node* out) const;
  void fill_port(NodeId n, PortNum p, v1::Port* out) const;
  void fill_link_end(PortRef end, v1::LinkEnd* out) const;
  // `first` decides which end becomes `a` (GetNode puts the asked node first).
  void fill_link(PortRef first, PortRef second, v1::Link* out) const;

 private:
  std::shared_ptr<const state::FabricState> state_;
  std::vector<NodeId> by_guid_;  // all nodes, ascending node GUID
  std::unordered_map<std::uint64_t, NodeId> node_guid_;
  std::unordered_map<std::uint64_t, PortRef> port_guid_;  // CA/router ports
  std::unordered_map<std::string_view, std::vector<NodeId>> names_;
  std::vector<LinkRef> links_;  // ascending (a node GUID, a port)
  std::uint32_t lids_in_use_ = 0;
};

// Hands out the view of the publisher's current snapshot, building it at most
// once per snapshot (concurrent first callers may both build; one wins).
// Thread-safe.
class ViewCache {
 public:
  explicit ViewCache(const state::StatePublisher& publisher) : publisher_(publisher) {}
  std::shared_ptr<const FabricView> current();

 private:
  const state::StatePublisher& publisher_;
  std::mutex mu_;
  std::shared_ptr<const FabricView> view_;
};

// Wire conversions shared by the service and tests.
v1::NodeType to_proto(routing::NodeType t);
v1::PortState to_proto(routing::PortState s);
v1::SmState to_proto(state::SmState s);
// An SM state as SMInfo carries it (0 not active .. 3 master).
v1::SmState sm_state_to_proto(std::uint8_t ib_state);
v1::EventKind to_proto(state::EventKind k);
std::optional<state::EventKind> from_proto(v1::EventKind k);
// IBA LinkWidthActive bits -> lanes (0 = unknown).
std::uint32_t width_lanes(std::uint8_t width_active);
// IBA LinkSpeedActive -> LinkSpeed.
v1::LinkSpeed link_speed(std::uint8_t speed_active);

}  // namespace subnetd::api

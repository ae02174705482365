#pragma once
// LidMap: which LIDs belong to which port, and back.
//
// Every CA/router port holds 2^LMC consecutive LIDs starting at an aligned
// base; every switch holds one LID on port 0. Produced by LidAssigner,
// consumed read-only by engines, the verifier and the Programmer.

#include <cstdint>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lid_space.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

struct LidMap {
  LidSpace space;
  std::uint8_t lmc = 0;
  Lid max_lid;  // highest LID in use
  // Base LID by Topology port index (0 = none). Switch LIDs live on port 0.
  std::vector<Lid> base_by_port;
  // Owner of each LID value 0..max_lid (node kNoNode = unassigned). All 2^LMC
  // LIDs of a CA port map to that port.
  std::vector<PortRef> owner;

  Lid base_lid(const Topology& t, NodeId n, PortNum p) const {
    return base_by_port[t.port_index(n, p)];
  }
  std::uint32_t lids_per_port(const Topology& t, NodeId n) const {
    return t.node(n).type == NodeType::kSwitch ? 1U : (1U << lmc);
  }
  PortRef owner_of(Lid l) const {
    return l.value < owner.size() ? owner[l.value] : PortRef{};
  }
};

}  // namespace subnetd::routing

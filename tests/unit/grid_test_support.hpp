#pragma once
// Grids for the tests of routing/grid_shape.hpp, grid_placement.hpp and
// dimension order: a fabric's grid and its coordinates by GUID, the checks
// that coordinates and routes fit the cabling, and a fabric rebuilt as
// discovery finds it after a switch died.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "routing/grid_shape.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing::testing {

// Every (switch, LID) pair the cabling connects is delivered by the tables,
// none that it does not, and the verifier finds every VL's CDG acyclic.
inline void expect_delivered_deadlock_free(const Fabric& f, const Routes& r) {
  const auto t = trace_all(f.topo, f.lids, r);
  EXPECT_EQ(t.delivered, t.reachable_pairs) << t.first_failure;
  EXPECT_EQ(t.misrouted, 0U);
  WorkerPool pool(2);
  auto v = verify(f.topo, f.lids, r, pool, {});
  EXPECT_TRUE(v.ok()) << v.error().message;
}

// The whole grid the fabric's switches form (grid_shape()).
inline Result<GridShape> shape_of(const Fabric& f) {
  auto g = SwitchGraph::build(f.topo, f.lids);
  if (!g.ok()) return g.error();
  return grid_shape(f.topo, *g);
}

// Coordinates: one grid point per switch, and every link one step in one
// dimension (checked here, not by the code under test).
inline void expect_grid_coordinates(const Fabric& f, const SwitchGraph& g, const GridShape& shape) {
  std::set<std::vector<std::uint32_t>> points;
  for (std::uint32_t s = 0; s < g.num_switches(); ++s) {
    std::vector<std::uint32_t> p;
    for (std::uint32_t d = 0; d < shape.dims(); ++d) {
      p.push_back(shape.at(SwitchIndex{s}, d));
      EXPECT_LT(p.back(), shape.size[d]);
    }
    EXPECT_TRUE(points.insert(p).second) << "two switches at one grid point";
    for (const SwitchArc& a : g.arcs(SwitchIndex{s})) {
      std::uint32_t steps = 0;
      for (std::uint32_t d = 0; d < shape.dims(); ++d) {
        const std::uint32_t x = shape.at(SwitchIndex{s}, d), y = shape.at(a.to, d);
        const std::uint32_t k = shape.size[d];
        if (x == y) continue;
        const std::uint32_t gap = x > y ? x - y : y - x;
        EXPECT_TRUE(gap == 1 || (shape.wrap[d] != 0 && gap == k - 1))
            << f.topo.switch_label(SwitchIndex{s}) << " - " << f.topo.switch_label(a.to);
        ++steps;
      }
      EXPECT_EQ(steps, 1U);
    }
  }
}

// `f` without switch `dead` (none: kNoSwitch) and the CAs cabled only to
// it, as discovery finds a fabric whose switch died, its nodes in reverse
// order if `reversed` (as another sweep may find them); LIDs assigned
// afresh.
inline Fabric rebuilt(const Fabric& f, SwitchIndex dead, bool reversed) {
  const Topology& t = f.topo;
  const NodeId gone = dead == kNoSwitch ? NodeId{} : t.switch_node(dead);
  Fabric out;
  out.spec = f.spec + (dead == kNoSwitch ? "" : " minus " + t.switch_label(dead));
  std::vector<NodeId> kept(t.num_nodes());
  for (std::uint32_t k = 0; k < t.num_nodes(); ++k) {
    const std::uint32_t i = reversed ? t.num_nodes() - 1 - k : k;
    const NodeId id{i};
    const Node& node = t.node(id);
    bool cabled = false;
    for (PortNum p = 1; p <= node.num_ports; ++p) {
      cabled |= t.port(id, p).connected() && t.port(id, p).remote_node != gone;
    }
    if ((gone.valid() && id == gone) || !cabled) continue;
    kept[i] = out.topo.add_node(node.type, node.guid, node.num_ports, node.description);
  }
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    if (!kept[i].valid()) continue;
    for (PortNum p = 1; p <= t.node(NodeId{i}).num_ports; ++p) {
      const Port& port = t.port(NodeId{i}, p);
      if (!port.connected() || !kept[port.remote_node.value].valid()) continue;
      if (std::pair(port.remote_node.value, port.remote_port) < std::pair(i, p)) continue;
      const PortRef a{kept[i], p}, b{kept[port.remote_node.value], port.remote_port};
      EXPECT_TRUE(out.topo.connect(a, b).ok());
      for (const PortRef& r : {a, b}) {
        Port& q = out.topo.mutable_port(r.node, r.port);
        q.state = port.state;
        q.width_active = port.width_active;
        q.speed_active = port.speed_active;
      }
    }
  }
  out.lids = lids_for(out.topo);
  return out;
}

inline Fabric without_switch(const Fabric& f, SwitchIndex dead) {
  return rebuilt(f, dead, false);
}

// Each switch's grid coordinates, by its GUID.
inline std::map<std::uint64_t, std::vector<std::uint32_t>> coordinates_by_guid(
    const Topology& topo, const GridShape& shape) {
  std::map<std::uint64_t, std::vector<std::uint32_t>> out;
  const auto n = static_cast<std::uint32_t>(shape.coord.size() / shape.dims());
  for (std::uint32_t s = 0; s < n; ++s) {
    std::vector<std::uint32_t>& p = out[topo.node(topo.switch_node(SwitchIndex{s})).guid.value];
    for (std::uint32_t d = 0; d < shape.dims(); ++d) p.push_back(shape.at(SwitchIndex{s}, d));
  }
  return out;
}

// The switch of least GUID: canonical grid coordinates start from it.
inline SwitchIndex least_guid_switch(const Topology& t) {
  SwitchIndex least{0};
  for (std::uint32_t s = 1; s < t.num_switches(); ++s) {
    if (t.node(t.switch_node(SwitchIndex{s})).guid < t.node(t.switch_node(least)).guid) {
      least = SwitchIndex{s};
    }
  }
  return least;
}

// Each CA port's SL (its LID's layer), by its port GUID.
inline std::map<std::uint64_t, std::uint8_t> sls_by_port_guid(const Topology& t, const LidMap& lids,
                                                              const Routes& r) {
  std::map<std::uint64_t, std::uint8_t> out;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId id{i};
    if (t.node(id).type == NodeType::kSwitch) continue;
    for (PortNum p = 1; p <= t.node(id).num_ports; ++p) {
      if (!t.port(id, p).connected()) continue;
      out[t.port(id, p).guid.value] = r.layer(lids.base_lid(t, id, p));
    }
  }
  return out;
}

}  // namespace subnetd::routing::testing

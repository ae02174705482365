// Bring-up screening: cabling plans (net file, YAML) and what comparing
// them with a discovered fabric finds, each finding reported exactly.

#include "daemon/screening/cabling.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "discovery/sim/sim_fabric.hpp"
#include "discovery/sweeper.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"

namespace subnetd::daemon::screening {
namespace {

using routing::NodeType;
using routing::Topology;
using state::CablingFindingKind;

Topology fat_tree() {
  auto t = discovery::topo::generate("fat-tree:levels=2,radix=8");
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

NodeId named(const Topology& t, std::string_view name) {
  auto n = t.find_by_name(name);
  EXPECT_TRUE(n.has_value()) << name;
  return n.value_or(NodeId{0});
}

// The same fabric without one node (as a sweep finds it when that node is
// dead): every other node, port and link.
Topology without(const Topology& t, NodeId gone) {
  Topology out;
  std::vector<NodeId> id(t.num_nodes());
  for (std::size_t i = 0; i < t.num_nodes(); ++i) {
    if (i == gone.value) continue;
    const routing::Node& n = t.node(NodeId{static_cast<std::uint32_t>(i)});
    id[i] = out.add_node(n.type, n.guid, n.num_ports, n.description);
    for (PortNum p = 0; p <= n.num_ports; ++p) {
      out.mutable_port(id[i], p) = t.port(NodeId{static_cast<std::uint32_t>(i)}, p);
      out.mutable_port(id[i], p).remote_node = kNoNode;
      out.mutable_port(id[i], p).remote_port = 0;
    }
  }
  for (std::size_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{static_cast<std::uint32_t>(i)};
    if (n == gone) continue;
    for (PortNum p = 1; p <= t.node(n).num_ports; ++p) {
      const routing::Port& port = t.port(n, p);
      if (!port.connected() || port.remote_node == gone) continue;
      if (std::pair(port.remote_node.value, port.remote_port) < std::pair(n.value, p)) continue;
      EXPECT_TRUE(out.connect({id[i], p}, {id[port.remote_node.value], port.remote_port}).ok());
    }
  }
  return out;
}

std::vector<CablingFindingKind> kinds(const state::CablingReport& r) {
  std::vector<CablingFindingKind> k;
  for (const auto& f : r.findings) k.push_back(f.kind);
  return k;
}

TEST(Cabling, AFabricMatchesItsOwnPlan) {
  const Topology t = fat_tree();
  const CablingPlan plan = plan_of(t, "self");
  const state::CablingReport r = check_cabling(plan, t);
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().message;
  EXPECT_EQ(r.plan_nodes, 44U);
  EXPECT_EQ(r.plan_cables, 64U);
  EXPECT_EQ(r.found_cables, 64U);
}

TEST(Cabling, TwoCablesSwappedAtOneEndAreOneFinding) {
  const Topology planned = fat_tree();
  Topology t = planned;
  const NodeId leaf = named(t, "leaf0");
  // leaf0/5 and leaf0/6 go to two spines; exchange them at the leaf.
  const PortRef s5{t.port(leaf, 5).remote_node, t.port(leaf, 5).remote_port};
  const PortRef s6{t.port(leaf, 6).remote_node, t.port(leaf, 6).remote_port};
  t.disconnect({leaf, 5});
  t.disconnect({leaf, 6});
  ASSERT_TRUE(t.connect({leaf, 5}, s6).ok());
  ASSERT_TRUE(t.connect({leaf, 6}, s5).ok());
  const state::CablingReport r = check_cabling(plan_of(planned, "plan"), t);
  ASSERT_EQ(kinds(r), std::vector{CablingFindingKind::kSwapped});
  const state::CablingFinding& f = r.findings.front();
  EXPECT_EQ(f.node_name, "leaf0");
  EXPECT_EQ(f.port, 5);
  EXPECT_NE(f.message.find("ports 5 and 6 are swapped"), std::string::npos) << f.message;
}

TEST(Cabling, ACableInTheWrongPortIsMiswired) {
  const Topology planned = fat_tree();
  Topology t = planned;
  const NodeId leaf = named(t, "leaf0");
  // Rotate three host cables: no two of them are a swap.
  const PortRef h1{t.port(leaf, 1).remote_node, 1}, h2{t.port(leaf, 2).remote_node, 1},
      h3{t.port(leaf, 3).remote_node, 1};
  for (PortNum p : {1, 2, 3}) t.disconnect({leaf, p});
  ASSERT_TRUE(t.connect({leaf, 1}, h2).ok());
  ASSERT_TRUE(t.connect({leaf, 2}, h3).ok());
  ASSERT_TRUE(t.connect({leaf, 3}, h1).ok());
  const state::CablingReport r = check_cabling(plan_of(planned, "plan"), t);
  // Each rotated cable is wrong at the leaf and at its host.
  std::size_t miswired = 0;
  for (const auto& f : r.findings) miswired += f.kind == CablingFindingKind::kMiswired ? 1 : 0;
  EXPECT_EQ(miswired, r.findings.size()) << r.findings.front().message;
  EXPECT_GE(miswired, 3U);
  bool named_leaf_port1 = false;
  for (const auto& f : r.findings) {
    if (f.node_name == "leaf0" && f.port == 1) {
      named_leaf_port1 = true;
      EXPECT_EQ(f.found, t.node(h2.node).description + "/1");
      EXPECT_EQ(f.expected, t.node(h1.node).description + "/1");
    }
  }
  EXPECT_TRUE(named_leaf_port1);
}

TEST(Cabling, AMissingSwitchIsOneFindingNotOnePerCable) {
  const Topology planned = fat_tree();
  const NodeId spine = named(planned, "spine1");
  const Topology t = without(planned, spine);
  const state::CablingReport r = check_cabling(plan_of(planned, "plan"), t);
  ASSERT_EQ(kinds(r), std::vector{CablingFindingKind::kMissingNode});
  EXPECT_EQ(r.findings.front().node_guid, planned.node(spine).guid);
  EXPECT_NE(r.findings.front().message.find("its 8 planned cables"), std::string::npos)
      << r.findings.front().message;
}

TEST(Cabling, AnUnplannedNodeAndAnUnpluggedCable) {
  const Topology planned = fat_tree();
  const NodeId host = planned.port(named(planned, "leaf2"), 1).remote_node;
  // The plan lacks the host; the fabric lacks leaf3's first uplink.
  Topology t = planned;
  t.disconnect({named(t, "leaf3"), 5});
  const state::CablingReport r = check_cabling(plan_of(without(planned, host), "plan"), t);
  ASSERT_EQ(kinds(r),
            (std::vector{CablingFindingKind::kUnexpectedNode, CablingFindingKind::kMissingCable}))
      << r.findings.front().message;
  EXPECT_EQ(r.findings[0].node_guid, planned.node(host).guid);
  EXPECT_EQ(r.findings[1].node_name, "leaf3");
  EXPECT_EQ(r.findings[1].port, 5);
}

TEST(Cabling, ALinkTrainedNarrowerOrSlowerThanPlanned) {
  const Topology planned = fat_tree();
  Topology t = planned;
  const NodeId leaf = named(t, "leaf1");
  const routing::Port up = t.port(leaf, 5);
  ASSERT_EQ(up.width_active, 2);             // 4x
  t.mutable_port(leaf, 5).width_active = 1;  // 1x
  t.mutable_port(up.remote_node, up.remote_port).width_active = 1;
  const PortRef h{t.port(leaf, 2).remote_node, 1};
  const std::uint8_t planned_speed = t.port(leaf, 2).speed_active;
  CablingPlan plan = plan_of(planned, "plan");
  for (PlanCable& c : plan.cables) c.speed = 4;  // everything planned QDR
  if (planned_speed < 4) {
    for (const auto& f : check_cabling(plan, planned).findings) {
      EXPECT_EQ(f.kind, CablingFindingKind::kSpeedBelow) << f.message;
    }
  }
  for (PlanCable& c : plan.cables) c.speed = planned_speed;
  t.mutable_port(h.node, h.port).speed_active = 0;  // not trained to any speed: below
  const state::CablingReport r = check_cabling(plan, t);
  ASSERT_EQ(kinds(r),
            (std::vector{CablingFindingKind::kWidthBelow, CablingFindingKind::kSpeedBelow}));
  EXPECT_EQ(r.findings[0].expected, "4x");
  EXPECT_EQ(r.findings[0].found, "1x");
}

TEST(Cabling, DescriptionsAndNodeTypesAreChecked) {
  const Topology planned = fat_tree();
  Topology t = planned;
  t.mutable_node(named(t, "spine0")).description = "spine-zero";
  CablingPlan plan = plan_of(planned, "plan");
  plan.nodes[named(planned, "leaf0").value].ports = 36;
  const state::CablingReport r = check_cabling(plan, t);
  ASSERT_EQ(kinds(r), (std::vector{CablingFindingKind::kNodeMismatch,
                                   CablingFindingKind::kDescriptionMismatch}));
  EXPECT_EQ(r.findings[0].expected, "switch, 36 ports");
  EXPECT_EQ(r.findings[0].found, "switch, 8 ports");
  EXPECT_EQ(r.findings[1].expected, "spine0");
  EXPECT_EQ(r.findings[1].found, "spine-zero");
}

// A CA and a switch flashed with another node's GUID: the sweep sees one
// node reached in ways one node cannot be, names both paths, and the
// screening reports a duplicate GUID for each, plan or no plan.
TEST(Cabling, DuplicateGuidsFoundByTheSweepAreFindings) {
  const Topology truth = fat_tree();
  discovery::sim::SimOptions so;
  const NodeId leaf1 = named(truth, "leaf1"), leaf2 = named(truth, "leaf2");
  // (Not a host of leaf2: the sweep leaves leaf2 out, and what hangs off it.)
  const NodeId h1 = named(truth, "h-l1-0"), h2 = named(truth, "h-l3-1");
  so.node_guid_answers[leaf2.value] = truth.node(leaf1).guid;
  so.node_guid_answers[h2.value] = truth.node(h1).guid;
  auto sim = discovery::sim::SimFabric::create(truth, so);
  ASSERT_TRUE(sim.ok()) << sim.error().message;
  auto swept = discovery::Sweeper(**sim, {}).run();
  ASSERT_TRUE(swept.ok()) << swept.error().message;
  ASSERT_EQ(swept->guid_clashes.size(), 2U) << fmt::format("{}", fmt::join(swept->warnings, "\n"));
  std::vector<std::pair<Guid, std::string>> dups;
  for (const auto& c : swept->guid_clashes) dups.emplace_back(c.guid, c.message);
  std::sort(dups.begin(), dups.end());
  EXPECT_EQ(dups[0].first, truth.node(leaf1).guid);
  EXPECT_EQ(dups[1].first, truth.node(h1).guid);
  for (const auto& [guid, message] : dups) {
    EXPECT_NE(message.find(fmt::format("duplicate node GUID {:#018x}", guid.value)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("by path ["), message.rfind("by path [")) << message;
  }
  const state::CablingReport r = check_cabling(plan_of(truth, "plan.net"), swept->topology, dups);
  std::size_t dup_findings = 0;
  for (const auto& f : r.findings) {
    if (f.kind != CablingFindingKind::kDuplicateGuid) continue;
    EXPECT_EQ(f.node_guid, dups[dup_findings].first);
    EXPECT_EQ(f.message, dups[dup_findings].second);
    EXPECT_EQ(f.found, "two nodes");
    ++dup_findings;
  }
  EXPECT_EQ(dup_findings, 2U);
  // The fabric without duplicates: none.
  auto clean = discovery::sim::SimFabric::create(truth, {});
  ASSERT_TRUE(clean.ok());
  auto swept_clean = discovery::Sweeper(**clean, {}).run();
  ASSERT_TRUE(swept_clean.ok());
  EXPECT_TRUE(swept_clean->guid_clashes.empty());
}

TEST(CablingPlan, ANetFilePlanIsTheFabricItDescribes) {
  const Topology t = fat_tree();
  auto plan = parse_cabling_plan(
      {state::CablingPlanText::Format::kAuto, "fabric.net", discovery::topo::write_netfile(t)});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->nodes.size(), 44U);
  EXPECT_EQ(plan->cables.size(), 64U);
  EXPECT_TRUE(check_cabling(*plan, t).findings.empty());
}

constexpr const char* kYamlPlan = R"(nodes:
  - {name: sw, type: switch, ports: 4}
  - {name: a, type: ca}
  - {name: b, guid: 0xb0}
cables:
  - {a: sw/1, b: a/1, width: 4x, speed: QDR}
  - [sw/2, b/1]
)";

Topology small(std::uint8_t width) {
  Topology t;
  const NodeId sw = t.add_node(NodeType::kSwitch, Guid{0x10}, 4, "sw");
  const NodeId a = t.add_node(NodeType::kCa, Guid{0xa0}, 1, "a");
  const NodeId b = t.add_node(NodeType::kCa, Guid{0xb0}, 1, "b");
  EXPECT_TRUE(t.connect({sw, 1}, {a, 1}).ok());
  EXPECT_TRUE(t.connect({sw, 2}, {b, 1}).ok());
  for (PortRef p : {PortRef{sw, 1}, PortRef{a, 1}, PortRef{sw, 2}, PortRef{b, 1}}) {
    t.mutable_port(p.node, p.port).width_active = width;
    t.mutable_port(p.node, p.port).speed_active = 4;
  }
  return t;
}

TEST(CablingPlan, AYamlPlanMatchesByNameOrGuid) {
  auto plan = parse_cabling_plan({state::CablingPlanText::Format::kAuto, "plan.yaml", kYamlPlan});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->cables.size(), 2U);
  EXPECT_EQ(plan->cables[0].width, 2);
  EXPECT_EQ(plan->cables[0].speed, 4);
  EXPECT_TRUE(check_cabling(*plan, small(2)).findings.empty());
  const state::CablingReport r = check_cabling(*plan, small(1));
  ASSERT_EQ(kinds(r), std::vector{CablingFindingKind::kWidthBelow});
  EXPECT_NE(r.findings[0].message.find("trained at 1x; the plan says 4x"), std::string::npos)
      << r.findings[0].message;
}

void expect_plan_error(const std::string& text, const std::string& where, const std::string& what) {
  auto plan = parse_cabling_plan({state::CablingPlanText::Format::kYaml, "p.yaml", text});
  ASSERT_FALSE(plan.ok()) << text;
  EXPECT_NE(plan.error().message.find(where), std::string::npos) << plan.error().message;
  EXPECT_NE(plan.error().message.find(what), std::string::npos) << plan.error().message;
}

TEST(CablingPlan, BadYamlPlansNameTheLineAndTheProblem) {
  expect_plan_error("nodes:\n  - {name: x}\ncables:\n  - [x/1, y/1]\n", "p.yaml:4:5",
                    "\"y\" is not a node of the plan's nodes list");
  expect_plan_error(
      "nodes:\n  - {name: x}\n  - {name: y}\ncables:\n  - [x/1, y/1]\n  - [x/1, y/2]\n",
      "p.yaml:6:5", "x/1 is already cabled by cables[0]");
  expect_plan_error("nodes:\n  - {name: x}\ncables:\n  - [x, x/1]\n", "p.yaml:4:5",
                    "bad end \"x\"");
  expect_plan_error("nodes:\n  - {name: x, kind: ca}\n", "p.yaml:2:15",
                    "nodes[0].kind: unknown key");
  expect_plan_error("nodes:\n  - {name: x}\n  - {name: x}\n", "p.yaml:3:5", "listed twice");
  expect_plan_error("nodes:\n  - {name: x}\ncables:\n  - {a: x/1, b: x/2, width: 3x}\n",
                    "p.yaml:4:29", "cables[0].width: unknown width \"3x\"");
  expect_plan_error("nodes: [\n", "p.yaml:", "YAML syntax error");
}

}  // namespace
}  // namespace subnetd::daemon::screening

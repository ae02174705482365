#pragma once
// Cabling plans and their comparison with a discovered Topology (bring-up
// screening, issue 16).
//
// A plan is the fabric as it should be: its nodes (name, optionally GUID,
// type and port count) and its cables (two node/port ends, optionally the
// width and speed they must train at). It is read from
//  - an ibnetdiscover / ibsim net file (discovery/topo/netfile.hpp): every
//    node with its GUID, description and ports, every link with the width
//    and speed the file gives (ibsim's defaults where it gives none); or
//  - a YAML file:
//        nodes:
//          - {name: leaf0, guid: 0x0002c90000000000, type: switch, ports: 36}
//          - {name: h0, type: ca}
//        cables:
//          - {a: leaf0/1, b: h0/1, width: 4x, speed: QDR}
//          - [leaf0/19, spine0/1]
//    `guid`, `type`, `ports`, `width` and `speed` are optional; an end is
//    "NAME/PORT" with NAME a node of the list. Errors name file:line:col.
//
// Matching: a plan node with a GUID is the found node with that GUID (its
// description is then checked against the name); one without is the found
// node whose NodeDescription is the name, which must be unique in the
// fabric. Findings (state/cabling.hpp): missing and unexpected nodes, type
// or port-count mismatches, descriptions that differ, missing cables,
// unexpected cables between planned nodes, miswired ports (two planned
// cables exchanged at one end are one "swapped" finding), links trained
// below the planned width or speed; node GUIDs that two nodes answered
// with (the sweep's finding: it sees one node). A missing node's cables are not listed
// again (its finding counts them); links to unexpected nodes neither.
//
// Pure: no I/O except read_cabling_plan. O(nodes + ports) with hash maps:
// 1M ports in well under a second.

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "routing/result.hpp"
#include "routing/topology.hpp"
#include "state/cabling.hpp"

namespace subnetd::daemon::screening {

struct PlanNode {
  std::string name;
  Guid guid;  // 0: match by name
  bool type_known = false;
  routing::NodeType type = routing::NodeType::kCa;
  std::uint8_t ports = 0;  // 0: any
};

struct PlanCable {
  std::uint32_t a = 0, b = 0;  // indexes into CablingPlan::nodes
  PortNum pa = 0, pb = 0;
  std::uint8_t width = 0;  // IBA LinkWidth bit (1=1x, 16=2x, 2=4x, 4=8x, 8=12x); 0: any
  std::uint8_t speed = 0;  // IBA LinkSpeed bit (1=SDR, 2=DDR, 4=QDR); 0: any
};

struct CablingPlan {
  std::string source;  // file name, for reports
  std::vector<PlanNode> nodes;
  std::vector<PlanCable> cables;
};

// From a net file's text or a YAML plan's text; `name` names it in errors.
Result<CablingPlan> parse_cabling_plan(const state::CablingPlanText& text);
// Reads a file: ".yaml"/".yml" is YAML, anything else a net file.
Result<CablingPlan> read_cabling_plan(const std::string& path);
// The plan a Topology is (every node with its GUID, every link with its
// width and speed): a net-file plan, or a test's.
CablingPlan plan_of(const routing::Topology& t, std::string source);

// Compares; the report's generation and timing are the caller's to fill.
// `duplicate_guids` (FabricState's: what the sweep found) become findings
// of their own, whatever the plan says.
state::CablingReport check_cabling(
    const CablingPlan& plan, const routing::Topology& found,
    std::span<const std::pair<Guid, std::string>> duplicate_guids = {});

}  // namespace subnetd::daemon::screening

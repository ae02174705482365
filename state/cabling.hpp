#pragma once
// Bring-up screening: what comparing the discovered fabric with a cabling
// plan found (daemon/screening/), as the API and the events show it.
// Implemented by daemon::screening::Screener; the API reaches it through
// CablingCheck (any thread).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/result.hpp"

namespace subnetd::state {

enum class CablingFindingKind : std::uint8_t {
  kMissingNode,          // in the plan, not found
  kUnexpectedNode,       // found, not in the plan
  kNodeMismatch,         // found with another type or port count than planned
  kDescriptionMismatch,  // NodeDescription differs from the plan's name
  kMissingCable,         // planned, both nodes found, the port has no link
  kUnexpectedCable,      // a link between planned nodes on ports the plan leaves empty
  kMiswired,             // the port leads somewhere else than planned
  kSwapped,              // two planned cables swapped at one end
  kWidthBelow,           // trained narrower than planned
  kSpeedBelow,           // trained slower than planned
  kDuplicateGuid,        // two nodes answer with one node GUID (found by the sweep)
};
const char* cabling_finding_name(CablingFindingKind k);

struct CablingFinding {
  CablingFindingKind kind = CablingFindingKind::kMissingNode;
  Guid node_guid;  // the node concerned (0 when only the plan names it)
  std::string node_name;
  PortNum port = 0;      // 0 when about a whole node
  std::string expected;  // what the plan says ("spine0/3", "4x", "switch, 36 ports")
  std::string found;     // what the sweep found
  std::string message;   // one line, naming the node, port and both sides
  bool operator==(const CablingFinding&) const = default;
};

struct CablingReport {
  std::string plan;              // where the plan came from (file name, "request")
  std::uint64_t generation = 0;  // the published snapshot it was compared with
  std::uint32_t plan_nodes = 0, plan_cables = 0;
  std::uint32_t found_nodes = 0, found_cables = 0;
  std::vector<CablingFinding> findings;  // by kind, then node, then port
  std::chrono::microseconds took{};
};

// A plan given with a request: its text and how to read it.
struct CablingPlanText {
  enum class Format : std::uint8_t { kAuto, kNetFile, kYaml };
  Format format = Format::kAuto;
  std::string name;  // for error messages ("plan.yaml")
  std::string text;
};

class CablingCheck {
 public:
  virtual ~CablingCheck() = default;
  // Compares the current snapshot with `plan`, or with the configured plan
  // when `plan` is null. kNotFound when neither exists, kUnreachable before
  // the first sweep, the plan's parse error (naming file:line) when it is
  // bad. Blocking (O(ports)); callers run it off latency-critical threads.
  virtual Result<CablingReport> check_cabling(const CablingPlanText* plan) const = 0;
};

}  // namespace subnetd::state

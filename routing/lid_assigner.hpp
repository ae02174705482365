#pragma once
// LID assignment: every CA/router port gets 2^LMC consecutive, aligned LIDs;
// every switch one LID on port 0.
//
// Pure function of its inputs. Stability comes from `previous` (what the
// store remembers, GUID -> base LID, from earlier sweeps and daemon runs) and
// from the LIDs already valid on the ports (Port::lid, found by the sweep).
// Precedence, per port: the remembered LID, then the LID found on the port,
// then the lowest free aligned LID. A LID claimed twice goes to the port with
// the lower GUID; the other is re-assigned and the conflict reported. A
// remembered LID the addressing mode cannot use is reported too.

#include <cstdint>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lid_map.hpp"
#include "routing/lid_space.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

struct LidRecord {
  Guid port_guid;
  Lid base;
  auto operator<=>(const LidRecord&) const = default;
};

struct LidAssignOptions {
  LidSpace space;
  std::uint8_t lmc = 0;             // 0..7
  std::vector<LidRecord> previous;  // from the store; may be empty
};

struct LidAssignment {
  LidMap map;
  // Ports whose base LID is new or changed (to persist), and the LMC of each
  // (0 for switch port 0, the configured LMC for CA/router ports).
  std::vector<LidRecord> changed;
  std::vector<std::uint8_t> changed_lmc;
  // Human-readable reports of conflicts resolved (one line each).
  std::vector<std::string> conflicts;
  // Remembered LIDs (LidAssignOptions::previous) that this addressing mode
  // cannot use and that were therefore replaced, one line each naming the
  // port GUID, the stored LID, why it is unusable and the LID given instead:
  // e.g. 0xC000 or 0xFFFF in the 16-bit space, a base not aligned to 2^LMC.
  // The caller logs them (and the daemon records an event): a port whose LID
  // changes must never change silently.
  std::vector<std::string> unusable_remembered;
  std::uint32_t lids_used = 0;
};

Result<LidAssignment> assign_lids(const Topology& topo, const LidAssignOptions& opts);

}  // namespace subnetd::routing

#pragma once
// Verifier: proves computed LFTs safe to program.
//
//  (a) complete: every (switch, LID) pair whose LID is physically reachable
//      from the switch over switch-to-switch links has an entry, naming a
//      cabled port (or 0 for the switch's own LID);
//  (b) loop-free: following next hops for a LID from every switch of its part
//      of the fabric ends at the LID's switch, which delivers it on the port
//      the LID's owner hangs off;
//  (c) deadlock-free: for every VL the channel dependency graph is acyclic.
//      Channels are directed switch-to-switch links (switch, out port); a
//      route that takes s -> n -> next_n makes channel (s->n) depend on
//      (n->next_n). The routes counted are those of data traffic, as
//      ibdmchk counts them: from every switch with CAs/routers to every
//      CA/router LID. Traffic to and from switches' port 0 is management
//      (SMPs on VL15, which has no credits) and is left out unless
//      VerifyOptions::switch_traffic asks for it (then every switch is a
//      source and switch LIDs are destinations too).
//
// It trusts nothing about the engine that produced the tables. Failures are
// Errc::kIncomplete, kForwardingLoop or kCdgCycle with a message naming
// switches (description and GUID), ports and the LID, e.g.
//   VL 0: credit loop sw-a[3] -> sw-b[5] -> sw-c[2] -> sw-a[3] (...)
// The first failure by LID order is reported, whatever the thread count.
//
// Scale: LIDs are checked in tiles of 256 (four LFT blocks: four cache lines
// per switch, copied in one visit), tiles in parallel on the WorkerPool,
// next hops walked in strips of 64; dependencies are kept as one 256-bit set
// of next out-ports per channel and VL, so memory is 32 bytes x channels x
// VLs beside ~550 bytes x switches of tile buffers per thread.
//
// Pure computation like the engines: const inputs, no I/O; the timings in
// the report are measurements only.

#include <cstdint>
#include <stop_token>

#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

struct VerifyReport {
  std::uint32_t switches = 0;
  std::uint32_t lids = 0;           // destination LIDs some switch delivers
  std::uint64_t pairs_checked = 0;  // (switch, LID) pairs with the LID reachable
  std::uint32_t num_vls = 0;
  std::uint64_t channels = 0;      // directed switch-to-switch links x VLs
  std::uint64_t dependencies = 0;  // distinct (channel -> channel) dependencies
  double tables_seconds = 0;       // completeness, loops, dependency marking
  double cdg_seconds = 0;          // cycle search
  double total_seconds = 0;
};

class McastTables;

struct VerifyOptions {
  // Count switch-to-switch (management) routes in the dependency graphs too.
  bool switch_traffic = false;
  // Multicast trees (routing/mcast.hpp) whose dependencies join VL 0's
  // graph: a packet entering a switch on a tree port may leave on every
  // other port of the tree. Their shape is verify_multicast's to check.
  const McastTables* multicast = nullptr;
};

Result<VerifyReport> verify(const Topology& topo, const LidMap& lids, const Routes& routes,
                            const VerifyOptions& opts, WorkerPool& pool, std::stop_token stop);
// Default options.
Result<VerifyReport> verify(const Topology& topo, const LidMap& lids, const Routes& routes,
                            WorkerPool& pool, std::stop_token stop);

}  // namespace subnetd::routing

#pragma once
// The fast-failover verifier: proves a FailoverPlan safe to arm beside the
// LFTs it was computed for (issue 14). It trusts neither the plan nor the
// engine; the LFTs themselves are the plain verifier's job (verifier.hpp).
//
//  (a) groups name only ports cabled to another switch, and every LID's
//      class is on the LID's switch;
//  (b) deadlock freedom in every state the switches can reach: for each
//      destination class c (FailoverPlan: a destination switch t, or on
//      several VLs t's LIDs on one layer), each switch s may send c's
//      traffic out of any port of H(s,c) = its LFT ports for c's CA/router
//      LIDs + its group for c (on several VLs, LID by LID: the LID's own
//      entry + the group). Whatever ports die and whatever notifications
//      arrive, a switch only ever picks from H (dead and notified ports are
//      removed, nothing is added), so the channel dependency graph of data
//      traffic over H, from every switch with CAs/routers, contains the
//      graph of every such state. It must be acyclic on every VL (each
//      layer's graph apart; VL 0 also holds every up*/down* dependency of
//      Routes::vl0_rank, multicast's order), else kCdgCycle naming the VL
//      and the channels. Per-hop VLs (Routes::hop_vls): one graph across
//      the VLs, a dependency's VLs those the ports' SL2VL give the LID's
//      SL, kept as (VL in, VL out) blocks and searched whole.
//  (c) every single switch-to-switch link failure: the state the switches
//      settle in, exactly as they compute it (discovery/sim/sim_failover.cpp):
//      a switch is stranded for t when, for some class of t, it has a group,
//      the port of some entry for that class is dead or was named in a
//      notification, and no port of the group is left (a pair without a
//      group is not under failover); it
//      then notifies the neighbours on its notify ports, which drop the port
//      towards it for t. Every switch that is not stranded forwards to a
//      neighbour that is not, so a CA/router pair is cut off exactly when its
//      source switch ends stranded. Counted: pairs still physically
//      connected whose source switch ends stranded ("gaps"). A neighbour
//      that sends t into a stranded switch without being notified is a gap
//      too. With require_coverage a gap is an error (kUnreachable).
//
// Cost: (b) reads every LFT entry once per destination switch's LIDs and
// ORs 32-byte port sets per (switch, port of H); (c) is proportional to the
// switches each failure strands and their neighbours.

#include <cstdint>
#include <stop_token>
#include <string>

#include "routing/failover_plan.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

struct FailoverVerifyOptions {
  // Single-link failures that leave a connected pair without a path before
  // the SM acts are an error, not only counted.
  bool require_coverage = false;
  // Skip (c) (tests of (a) and (b) alone).
  bool check_failures = true;
};

struct FailoverVerifyReport {
  std::uint64_t pairs = 0;         // (switch, class) pairs carrying data
  std::uint64_t channels = 0;      // directed switch-to-switch links x VLs
  std::uint64_t dependencies = 0;  // distinct (channel -> out-port) dependencies
  std::uint32_t links_checked = 0;
  std::uint32_t links_with_gaps = 0;   // failures that leave some pair to the SM
  std::uint64_t gap_pairs = 0;         // (CA switch, destination) pairs, all failures
  std::uint64_t stranded_pairs = 0;    // (switch, destination) pairs stranded, all failures
  std::uint32_t max_notify_depth = 0;  // longest chain of notifications
  std::string first_gap;               // the first failure with a gap, described
  double cdg_seconds = 0;
  double failures_seconds = 0;
  double total_seconds = 0;
};

Result<FailoverVerifyReport> verify_failover(const Topology& topo, const LidMap& lids,
                                             const Routes& routes, const FailoverPlan& plan,
                                             const FailoverVerifyOptions& opts, WorkerPool& pool,
                                             std::stop_token stop = {});

}  // namespace subnetd::routing

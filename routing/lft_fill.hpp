#pragma once
// Balanced LFT fill: the second stage of the hop-table engines (minhop, updn).
//
// Given a HopTable, every switch s fills its own LFT row, destinations in
// switch order and LIDs ascending within a switch (so LMC ranges and a
// switch's CAs are spread as a group). For a LID on another switch t the
// candidates are s's ports toward
// neighbours one hop closer to t (filtered by the candidate rule); s picks the
// candidate that has carried the fewest LIDs so far (s's own per-port
// counters), ties broken by rotating through the candidates, as OpenSM's
// minhop balances. For a LID on s itself the entry is the CA port, or 0 for
// s's own LID; a LID s cannot reach stays 255 (drop).
//
// Load means data destinations: the counters, and Routes::load ("routes per
// link": for every switch s and CA/router LID d, the switch-to-switch link
// s's entry for d uses), count CA/router LIDs only. Switch LIDs carry
// management traffic; they are routed like the rest but do not load ports,
// so they cannot skew the balance of the data routes.
//
// Work split: the candidate set of (s, t) is computed once per destination
// *switch*, 64 destinations at a time with byte compares over hop rows, and
// interned into "candidate classes" (a fat-tree leaf has one class for all
// remote switches), so picking a port per LID is O(1) amortised. Each source
// switch is handled by exactly one thread with its own counters, so the
// tables do not depend on the number of threads.

#include <cstdint>
#include <span>
#include <stop_token>

#include "routing/hop_table.hpp"
#include "routing/lft.hpp"
#include "routing/result.hpp"
#include "routing/switch_graph.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

enum class CandidateRule {
  // Every neighbour one hop closer (minhop).
  kShortest,
  // Up*/down* (updn): order_pos defines up/down as in updown_hops(). From a
  // switch in mode U only up-links; from a switch in mode D down-links to
  // D neighbours, and up-links too unless a neighbour in mode D one hop
  // further out may enter it over a down-link (that packet must keep going
  // down). Every route built from these candidates is up*down*.
  kUpDown,
};

// Fills Routes::lfts (by switch_index), max_lid and load; the caller sets
// Routes::engine. Fails with kCancelled when `stop` is requested, and with
// kInternal if the hop table leaves a reachable switch without a candidate
// (a broken invariant of the table's builder).
Result<Routes> fill_balanced_lfts(const Topology& topo, const SwitchGraph& g, const HopTable& hops,
                                  CandidateRule rule, std::span<const std::uint32_t> order_pos,
                                  WorkerPool& pool, std::stop_token stop);

}  // namespace subnetd::routing

#pragma once
// Rerouter: incremental, deadlock-free repair of up*/down* tables when links
// fail — the fast path of DESIGN.md step 7.
//
// Input: the Topology and LidMap the tables were computed for, and Routes from
// an engine that exports `Routes::updown_rank` (updn, ftree). The rank orients
// every switch-to-switch link (up = toward the smaller (rank, GUID)), and the
// engine keeps the promise of lft.hpp: for CA/router LIDs, at every switch
// with an up*down* route, an entry that leads over a down-link is followed by
// a down-going entry. Those routes are up*down*, which is what keeps the
// channel dependency graph of data traffic acyclic.
//
// repair(failed links) changes only entries whose route crossed a failed link
// and keeps the invariant by construction. Its unit of decision is the
// destination switch where it can be, the (switch, LID) entry only where an
// entry must be written:
//  - down_ok, then legal: S x S bit tables kept current under failures.
//    legal(s, t) = s still has an up*/down* route to switch t (down_ok, or
//    a live up-link to a switch with one). A pair that loses it is a lost
//    route: every entry of s for t's LIDs becomes an implicit orphan at
//    once, with no per-LID step (at k=80 a link at an edge switch takes the
//    routes of 120 switches to it: the cores above the aggregation switch,
//    and their peers in every pod, 41 LIDs each). Those entries stay as
//    they are unless they named the failed port: they lead on through
//    other orphans to a switch with a legal route, and carry only traffic
//    that starts at orphans.
//  - seeds: the entries that name a failed port (row scans, 16 bytes a
//    step), and every entry of a switch that still has a legal route and
//    leads into a lost one (for each lost (x, t), the neighbours below x,
//    those of t's LIDs that name the port to x: one 64-byte read a block),
//    and the entries of a switch with CAs that lost its route to a switch
//    with CA/router LIDs (its CAs' traffic may not follow an orphan: the
//    repair is refused if it can still reach them);
//  - each seed (s, d) takes a legal next hop: a down-link to a neighbour
//    whose own entry for d goes down (the neighbour must be able to reach
//    d's switch going down: down_ok), or, unless a neighbour above s sends
//    d down into s (then s must keep going down), an up-link to a neighbour
//    with a usable entry. Of the next two legal ports in the switch's
//    rotation it takes the less loaded ("power of two choices": close to
//    the least-loaded choice without reading every port's load, which would
//    be most of the cache misses of a repair that touches 3,000 switches);
//  - a switch with a legal route but no legal next hop (a neighbour above
//    keeps it going down, the ones below are being repaired) is a dead end
//    for d: its entry is dropped and every neighbour with a legal route
//    whose entry leads into it joins the worklist;
//  - when the worklist is empty, a switch left without an entry for a LID it
//    can still reach physically gets an "orphan" entry toward a neighbour
//    that has a route, preferring one with a legal route (whose route
//    cannot come back into it). An implicit orphan with no such neighbour
//    goes through an orphan neighbour that goes straight to one (that
//    neighbour's entry changes only if it led back into the switch: its
//    route crossed the failure too); only without that are the entries
//    leading into it moved first, so that no loop can form. No legal route leads into an orphan, so
//    orphans carry only traffic that starts at orphan switches; a switch that has CAs/routers
//    cannot be an orphan for a CA/router LID (repair refuses). Orphan
//    routes may turn down->up, but no CA traffic follows them, so they add
//    no dependency to the CDG the verifier checks (data traffic, as ibdmchk
//    counts it). Switch-originated traffic (SMP answers on VL15) has no
//    credits and cannot deadlock. Later repairs never route anything into
//    orphans. Entries an engine wrote for a switch that has no up*/down*
//    route to the LID's switch at all (ftree routes them down and then up:
//    a core that lost its only link into a pod, or top switches' routes to
//    each other's LIDs) are implicit orphans from the start; that is
//    exactly where lft.hpp exempts entries from the up/down promise.
//  - switch LIDs are repaired by the same rules; only the refusal of an
//    orphan on a CA-carrying switch is for CA/router LIDs alone (switch LIDs
//    carry management traffic on VL15, which has no credits).
// Then check_changes() proves the result from the changes (and the entries
// the repair found leading into lost routes): for every changed (s, d), a
// down-link is followed by a down-going entry, an up-link enters no orphan,
// and if s no longer goes down although it did before, no neighbour above s
// still sends d into it; no entry with a legal route still leads into a lost
// one; every changed orphan reaches a legal route within a few hops.
// Unchanged entries were legal before and new down-links into them are
// checked from the changed side, so every non-orphan route is still
// up*down* and the CDG stays acyclic. A repair that fails the check (or that
// would need a CA-carrying orphan) is refused: the working tables are rolled
// back and the caller falls back to the full recompute.
//
// Owner: the SubnetManager (one per successful heavy sweep) or a test/bench.
// Threads: built on the caller's thread with a WorkerPool for the precompute;
// repair/reset/check run on the caller's thread only (no pool, no locks, no
// allocation on the repair path once the scratch buffers have grown). Not
// thread-safe. It keeps references to the Topology and LidMap it was built
// from: the owner keeps them alive.
//
// Memory (stated budget; S switches, L = LFT entries per switch rounded to
// 64, P = switch port slots):
//   working tables            S x L bytes      (1.09 GB at k=80, 24-bit)
//                             on 2 MiB pages where THP allows (huge_buffer.hpp):
//                             the repair reads them at scattered places
//   down_ok + its original    2 x S x S bits   (16 MB at 8,000 switches)
//   legal, by switch and by
//   destination, + originals,
//   + its update's scratch    5 x S x S bits   (40 MB)
//   LIDs by destination switch 4 bytes x LIDs
//   per-port loads, classes   ~12 bytes x P
//   per-LID destination       8 bytes x L
//   dirty-block bitmaps       2 x S x L/64 bits (4 MB at k=80)
// plus per-repair scratch proportional to the entries changed.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "routing/huge_buffer.hpp"
#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/switch_graph.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

// One failed link, named by its end on a switch: a switch-to-switch link
// (either end names it) or the link from a switch to a CA/router port.
struct FailedLink {
  SwitchIndex sw;
  PortNum port = 0;
  auto operator<=>(const FailedLink&) const = default;
};

// One LFT entry that differs from before the repair.
struct LftChange {
  SwitchIndex sw;
  Lid lid;
  std::uint8_t old_port = kDropPort;
  std::uint8_t new_port = kDropPort;
};

struct DirtyBlock {
  SwitchIndex sw;
  std::uint32_t block = 0;
};

struct RepairReport {
  enum class Verdict {
    kRepaired,            // tables changed (or nothing to change); push `blocks`
    kNeedsFullRecompute,  // refused: nothing changed, the caller recomputes
  };
  Verdict verdict = Verdict::kRepaired;
  std::string reason;  // why it was refused (empty when repaired)

  // Valid until the next call that changes the Rerouter.
  std::span<const LftChange> changes;  // distinct (switch, LID), old != new
  std::span<const DirtyBlock> blocks;  // distinct

  std::uint32_t switch_links_failed = 0;  // newly failed (already-known ones are ignored)
  std::uint32_t ca_links_failed = 0;
  std::uint64_t seeds = 0;            // entries that named a failed port
  std::uint64_t dead_ends = 0;        // (switch, LID) left without a legal next hop
  std::uint64_t orphans = 0;          // orphan entries written (see above)
  std::uint64_t down_ok_updates = 0;  // down_ok words changed
  // (switch, destination switch) pairs that lost their last up*/down* route:
  // their entries become implicit orphans, unchanged unless they named a
  // failed port.
  std::uint64_t legal_routes_lost = 0;
  std::uint64_t moved_off_lost = 0;  // legal entries that led into one of them
  std::uint32_t rounds = 0;          // worklist rounds

  // Measurements only (steady_clock).
  std::chrono::nanoseconds t_reach{};  // mark failures, down_ok and legal updates
  std::chrono::nanoseconds t_seed{};   // row scans and entries into lost routes
  std::chrono::nanoseconds t_route{};  // worklist rounds and orphan fill
  std::chrono::nanoseconds t_check{};  // check_changes
  std::chrono::nanoseconds t_total{};
};

struct RerouterStats {
  std::uint32_t switches = 0;
  std::uint32_t lft_entries = 0;  // per switch (L)
  std::uint64_t memory_bytes = 0;
  std::uint64_t table_bytes = 0;  // the working tables alone
  std::chrono::nanoseconds t_build{};
  std::chrono::nanoseconds t_tables{};   // copy of the tables
  std::chrono::nanoseconds t_loads{};    // per-port route counts
  std::chrono::nanoseconds t_down_ok{};  // down_ok and legal-route closures
  // (switch, destination switch with CA/router LIDs) pairs with no
  // up*/down* route at build: the engine's entries there are orphans.
  std::uint64_t initial_orphan_pairs = 0;
  // The warm-up repair build() runs and undoes (see build()).
  std::chrono::nanoseconds t_warmup{};
  std::uint64_t warmup_changes = 0;
  std::uint64_t warmup_blocks = 0;
};

class Rerouter {
 public:
  // Fails with kUnsupported when `routes` has no up/down order (minhop), and
  // kInvalidArgument when the routes do not fit the topology. Before it
  // returns, build() repairs one switch link at a switch with CAs (the
  // heaviest kind of failure) and resets: the first real repair then finds
  // its scratch buffers grown and their pages touched, instead of paying for
  // that on the fast path (in the daemon every re-balancing sweep builds a
  // new Rerouter, so every isolated failure would be a "first" repair).
  static Result<std::unique_ptr<Rerouter>> build(const Topology& topo, const LidMap& lids,
                                                 std::shared_ptr<const Routes> routes,
                                                 WorkerPool& pool, std::stop_token stop = {});
  ~Rerouter();
  Rerouter(const Rerouter&) = delete;
  Rerouter& operator=(const Rerouter&) = delete;

  // Repairs the working tables for links that went down (several at once are
  // one repair: coalesced failures, a switch failure = all its links). Links
  // already known down are ignored. Errors (kInvalidArgument, kNotFound) mean
  // a bad argument and change nothing; a refusal is a report with
  // Verdict::kNeedsFullRecompute, after which the Rerouter refuses every
  // further repair until reset() (its tables no longer match the fabric).
  Result<RepairReport> repair(std::span<const FailedLink> failed);

  // Re-runs the incremental check on the changes of the last repair (repair()
  // already ran it; tests call it to compare with the full verifier).
  Result<void> check_changes() const;

  // Applies externally chosen changes as if a repair had made them for
  // `failed`, and checks them like repair() does: refused changes are rolled
  // back. For tests that feed the check a repair it must refuse.
  Result<RepairReport> apply_for_test(std::span<const FailedLink> failed,
                                      std::span<const LftChange> changes);

  // Back to the tables, links and loads the Rerouter was built with.
  void reset();
  // Blocks that may differ from the tables it was built with (every block a
  // repair changed since build or reset), by switch then block.
  std::vector<DirtyBlock> changed_blocks() const;

  // The working tables as Routes (a copy; parallel on `pool`). Load figures
  // come from the per-port counts.
  Routes export_routes(WorkerPool& pool) const;

  std::span<const std::uint8_t> block(SwitchIndex sw, std::uint32_t b) const {
    return {row(sw) + std::size_t{b} * kLftBlockSize, kLftBlockSize};
  }
  // Switch sw's working table, indexed by LID value (lft_entries() bytes).
  const std::uint8_t* row(SwitchIndex sw) const {
    return table_.get() + std::size_t{sw.value} * stride_;
  }
  std::uint8_t entry(SwitchIndex sw, Lid lid) const {
    return lid.value < stride_ ? row(sw)[lid.value] : kDropPort;
  }
  std::uint32_t num_switches() const { return n_; }
  std::uint32_t lft_entries() const { return stride_; }
  // Whether the rerouter believes a switch port's link is up (switch and CA
  // links; false for unconnected ports and ports it never saw cabled).
  bool link_live(SwitchIndex sw, PortNum port) const;
  // Whether the link from switch `sw` on `port` was cabled when built.
  bool link_known(SwitchIndex sw, PortNum port) const;
  // True after a refusal, until reset().
  bool stale() const { return stale_; }
  // Whether switch s still has an up*/down* route to switch t over the live
  // links, as the repairs keep it (false where either index is out of
  // range). A switch cut off from every other switch keeps what it had.
  bool has_updown_route(SwitchIndex s, SwitchIndex t) const;
  const RerouterStats& stats() const { return stats_; }
  const std::shared_ptr<const Routes>& base_routes() const { return base_; }
  const Topology& topology() const { return topo_; }
  const LidMap& lids() const { return lids_; }

  // The precomputed state and scratch (rerouter_internal.hpp).
  struct Impl;

 private:
  Rerouter(const Topology& topo, const LidMap& lids, std::shared_ptr<const Routes> routes);
  void warm_up();
  // repair() and apply_for_test(): the same steps around how the changes
  // are made (computed here when `given` is null, else applied as given).
  Result<RepairReport> run(std::span<const FailedLink> failed,
                           const std::span<const LftChange>* given);

  const Topology& topo_;
  const LidMap& lids_;
  std::shared_ptr<const Routes> base_;
  std::uint32_t n_ = 0;
  std::uint32_t stride_ = 0;
  HugeBuffer table_;  // S x stride_ bytes
  bool stale_ = false;
  RerouterStats stats_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace subnetd::routing

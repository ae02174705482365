#pragma once
// FastPath: the SM's answer to a link failure (DESIGN.md step 7, issue 7).
//
// trap 128 from switch X  ->  identify()        PortInfo Get, windowed: first
//                                               the ports that would explain
//                                               several traps at once (see
//                                               below), then every port of
//                                               each trapping switch still
//                                               unexplained. A port believed
//                                               up and found down is a
//                                               failure; a port found up that
//                                               is not known as up is a link
//                                               coming (back) up, for the
//                                               heavy sweep
//                         ->  repair_and_push() Rerouter::repair, then every
//                                               changed LFT block as a DR Set
//                                               (Ext)LinearForwardingTable,
//                                               handed to the MAD engine at
//                                               once; it returns when all are
//                                               transmitted, and the answers
//                                               are collected after
//                                               (PushInFlight::confirmed()).
// Latency = from the trap's receipt to the last changed block handed to the
// transport; what comes after (collecting answers, exporting the repaired
// tables, publishing, logging) is off that path.
//
// Every SMP goes through the MAD engine (discovery/mad_engine.hpp): the
// probes as a few Flows of PortInfo Gets, the push as one Flow of encoded
// LFT Sets (one template per switch, patched per block) with a window per
// switch.
//
// Directed routes: a BFS tree from the SM's switch over the links the
// rerouter believes up, rebuilt by refresh_paths() after each repair (off the
// hot path). A switch whose tree path crosses a link that failed since takes
// a neighbour's intact path plus one hop; failing that, LFT Sets follow the
// repaired tables' own route to the switch's LID (it avoids every failed
// link by construction).
//
// Trap 128 says only that some port of its issuer changed state, and
// failures come with several traps: a link's two ends both trap, a dead
// switch's neighbours all trap. So identify() first reads only the ports
// that explain traps together ("targeted" probes): a live link between two
// trapping switches, read at one end, and each trapping switch's link to a
// switch that did not trap but has two or more trapping neighbours (a dead
// switch, likely). They go only to switches whose tree path crosses no
// such link and no such switch. A trapping switch at either end of a link
// found down is explained, and its other ports are not read: one SMP for a
// cable instead of every port of both ends, one per neighbour for a dead
// switch. What a trap might also have meant (a second change at the same
// switch) is left to the heavy sweep that follows every reroute to
// re-balance. Unexplained switches then get every port probed, in two
// phases: first those whose tree parent did not trap (their paths cannot
// cross the failed link), then, with what that found avoided, the rest — so
// a failed link on a switch's own tree path costs no timeout.
//
// LFT Sets respect a per-switch window (a switch's SMA queue is finite: the
// simulator's latency model drops beyond 64 waiting SMPs, real SMAs behave
// alike); without a latency model every answer is ready at once and the
// window costs nothing.
//
// Owner: the SubnetManager (one per successful heavy sweep) or the reroute
// benchmark. build() runs anywhere (the SM runs it as a compute step off its
// strand); after that, Runs on: the MAD engine's strand. It keeps references
// to the Topology and LidMap it was built from; the owner keeps them alive.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "discovery/mad_engine.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/rerouter.hpp"
#include "routing/thread_check.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::daemon {

struct FastPathConfig {
  bool extended_lids = false;                 // LFT blocks as ExtLinearForwardingTable
  std::chrono::microseconds timeout{20'000};  // per probe / LFT answer, transport time
  unsigned retries = 2;                       // resends of an unanswered SMP
  // SMPs in flight: PortInfo probes (in all), LFT Sets (per switch). An SMA
  // queue holds a few dozen SMPs (the simulator's latency model: 64), and the
  // trapping switch also gets our TrapRepress: 16 leaves room.
  unsigned probe_window = 16;
  unsigned switch_window = 16;
  std::uint32_t sm_lid = 0xFFFF;  // SLID of LID-routed SMPs (none here)
};

// What the probes found.
struct Identified {
  std::vector<routing::FailedLink> failed;  // newly down, by their switch end
  bool link_up = false;                     // a port believed down is up again
  std::uint32_t unanswered = 0;             // probes lost (path or switch gone)
  std::uint32_t not_switches = 0;           // trap issuers that are no known switch
  std::uint64_t smps = 0;
  std::uint64_t targeted_smps = 0;      // of which targeted probes
  std::uint32_t explained = 0;          // trapping switches explained by targeted probes
  std::chrono::nanoseconds duration{};  // wall
};

// The answers to a push still outstanding after repair_and_push returned.
// Owned by whoever awaits confirmed(); the FastPath that pushed need not be
// alive by then.
class PushInFlight {
 public:
  PushInFlight(discovery::MadEngine& engine, discovery::FlowOptions opts) : flow(engine, opts) {}
  // Completes when every block is answered or given up; then the fields
  // below are final.
  boost::asio::awaitable<void> confirmed();

  discovery::Flow flow;
  std::uint32_t switches = 0;  // switches sent blocks
  std::uint64_t blocks_failed = 0;
  // Switches whose blocks did not all land (sorted, once confirmed).
  std::vector<SwitchIndex> failed_switches;
  std::chrono::steady_clock::time_point confirmed_at{};
  std::chrono::nanoseconds transport_confirmed_at{};  // transport clock
};

struct PushOutcome {
  routing::RepairReport::Verdict verdict = routing::RepairReport::Verdict::kRepaired;
  std::string reason;  // why the rerouter refused
  std::uint32_t switch_links = 0;
  std::uint32_t ca_links = 0;
  std::uint64_t changed_entries = 0;
  std::uint64_t blocks = 0;
  std::uint64_t orphans = 0;
  std::uint64_t dead_ends = 0;
  std::uint32_t switches_programmed = 0;
  // Wall clock, from the trap's receipt (`start`).
  std::chrono::nanoseconds repaired{};       // tables repaired and checked
  std::chrono::nanoseconds latency{};        // last changed block handed to the transport
  std::chrono::nanoseconds compute{};        // Rerouter::repair alone
  std::chrono::nanoseconds compute_route{};  // of which worklist and orphan fill
  std::chrono::nanoseconds compute_check{};  // of which check_changes
  // The answers still to come (null when nothing was sent).
  std::shared_ptr<PushInFlight> in_flight;
};

class FastPath {
 public:
  using Clock = std::chrono::steady_clock;

  // Fails when the routes carry no up/down order (kUnsupported) or do not
  // fit the topology; `sm_node`/`sm_port` is the SM's own CA port.
  static Result<std::unique_ptr<FastPath>> build(const routing::Topology& topo,
                                                 const routing::LidMap& lids,
                                                 std::shared_ptr<const routing::Routes> routes,
                                                 NodeId sm_node, PortNum sm_port,
                                                 FastPathConfig config, routing::WorkerPool& pool,
                                                 std::stop_token stop = {});
  ~FastPath();

  // Probes the ports of the switches that sent trap 128 (their LIDs): the
  // targeted ports first, then every port of the unexplained ones (see the
  // top). Fails only when the engine stops.
  boost::asio::awaitable<Result<Identified>> identify(discovery::MadEngine& engine,
                                                      std::span<const std::uint32_t> issuer_lids);

  // Repairs the tables for `failed` and pushes the changed blocks; returns
  // once every block has been handed to the transport (answers are awaited
  // through PushOutcome::in_flight). A refusal is an outcome with
  // Verdict::kNeedsFullRecompute (nothing was sent); an error means a bad
  // argument or a stopped engine.
  boost::asio::awaitable<Result<PushOutcome>> repair_and_push(
      discovery::MadEngine& engine, std::span<const routing::FailedLink> failed,
      Clock::time_point start);

  // Repairs the tables for `failed` without pushing anything (the caller
  // pushes the report's blocks, or keeps them for a programming pass).
  // The report's spans are valid until the next repair.
  Result<routing::RepairReport> repair(std::span<const routing::FailedLink> failed);

  // Pushes blocks a repair already changed (e.g. applied while the tables
  // were being programmed) the same way, without a new repair.
  std::shared_ptr<PushInFlight> push(discovery::MadEngine& engine,
                                     std::span<const routing::DirtyBlock> blocks);

  // Recomputes the directed-route tree over the links believed up.
  void refresh_paths();
  // Back to the state at build (benchmark: after restoring a link).
  void reset();

  routing::Routes export_routes(routing::WorkerPool& pool) const {
    return rerouter_->export_routes(pool);
  }
  // The topology as built, minus the links that failed since.
  routing::Topology live_topology() const;
  // Keeps what the references given to build() point into alive as long
  // as this FastPath (e.g. the bring-up result owning the topology).
  void keep_alive(std::shared_ptr<const void> owner) { owner_ = std::move(owner); }
  routing::Rerouter& rerouter() { return *rerouter_; }
  const routing::Rerouter& rerouter() const { return *rerouter_; }
  // Directed-route path (ports of hops 1..n) to switch `sw` over links
  // believed up; empty when none is known. For tests and the benchmark.
  std::vector<std::uint8_t> path_to(SwitchIndex sw) const;

 private:
  FastPath(const routing::Topology& topo, const routing::LidMap& lids, NodeId sm_node,
           PortNum sm_port, FastPathConfig config);

  bool link_up_now(SwitchIndex sw, PortNum port) const;
  bool intact(SwitchIndex sw) const;
  // Writes the path into `out`, returns its length (0 = none).
  std::size_t path(SwitchIndex sw, std::array<std::uint8_t, 64>& out) const;
  std::size_t tree_path(SwitchIndex sw, std::array<std::uint8_t, 64>& out) const;
  // One hop from the neighbour over a live link with the shallowest tree
  // path that `accept` (SwitchIndex -> bool) takes; 0 when none.
  template <class Accept>
  std::size_t one_hop_off(SwitchIndex sw, Accept&& accept, std::array<std::uint8_t, 64>& out) const;
  // The route the (repaired) tables give from the SM's switch to sw's LID.
  std::size_t table_path(SwitchIndex sw, std::array<std::uint8_t, 64>& out) const;
  bool descends_from(SwitchIndex sw, SwitchIndex ancestor) const;
  // PortInfo Get of port `p` of switch `s` along `route`, judged by `judge`.
  discovery::mad::Smp probe_smp(PortNum p, std::span<const std::uint8_t> route) const;

  std::shared_ptr<const void> owner_;
  // The "Runs on" check (debug builds): bound to the strand's thread by its
  // first use after build().
  ThreadAffinity affinity_;
  const routing::Topology& topo_;
  const routing::LidMap& lids_;
  NodeId sm_node_;
  PortNum sm_port_;
  FastPathConfig config_;
  std::unique_ptr<routing::Rerouter> rerouter_;

  // Switch-to-switch cables by switch (CSR), built once: the tree, the
  // paths and the probes walk these instead of the Topology's ports.
  struct SwitchLink {
    SwitchIndex peer;
    PortNum port = 0;  // on this switch
    PortNum peer_port = 0;
  };
  std::vector<std::uint32_t> links_first_;  // S+1 offsets into links_
  std::vector<SwitchLink> links_;
  std::span<const SwitchLink> links_of(SwitchIndex s) const {
    return std::span<const SwitchLink>(links_).subspan(
        links_first_[s.value], links_first_[s.value + 1] - links_first_[s.value]);
  }
  std::vector<std::uint8_t> seen_;  // refresh_paths scratch
  std::vector<SwitchIndex> queue_;  // refresh_paths scratch

  // Directed-route tree; the vectors are by switch (SwitchIndex::value).
  SwitchIndex root_;                  // the SM's switch
  std::vector<SwitchIndex> parent_;   // kNoSwitch: root or unreached
  std::vector<PortNum> parent_port_;  // egress port at the parent
  std::vector<std::uint8_t> depth_;   // hops from the root
  // Links found down by identify() and not yet handed to the rerouter.
  std::vector<routing::FailedLink> suspect_;
  // identify() scratch, per switch: trapped (stamp), and for switches that
  // did not trap, how many trapping neighbours they have.
  std::vector<std::uint32_t> trap_mark_, near_mark_, near_count_;
  std::uint32_t mark_epoch_ = 0;

  // LFT push scratch (kept across calls: no allocation once grown).
  std::vector<std::uint32_t> stamp_;      // per switch: epoch_ when its template is built
  std::vector<std::uint8_t> path_len_;    // per switch: 0 = no route
  std::vector<std::uint32_t> path_slot_;  // per switch: index into tmpl_buf_
  // Per switch being programmed: its LFT Set encoded once (directed route
  // and all); each block patches block number and entries into a copy (the
  // engine sets the TID).
  std::vector<std::array<std::uint8_t, discovery::kMadSize>> tmpl_buf_;
  std::uint32_t epoch_ = 0;
};

// Used by fast_path.cpp and fast_path_probe.cpp.
template <class Accept>
inline std::size_t FastPath::one_hop_off(SwitchIndex sw, Accept&& accept,
                                         std::array<std::uint8_t, 64>& out) const {
  SwitchIndex best = kNoSwitch;
  PortNum best_port = 0;
  for (const SwitchLink& l : links_of(sw)) {
    const SwitchIndex nb = l.peer;
    if (!link_up_now(sw, l.port) || depth_[nb.value] + 2U > discovery::mad::kMaxHopCount ||
        !accept(nb))
      continue;
    if (best == kNoSwitch || depth_[nb.value] < depth_[best.value]) {
      best = nb;
      best_port = l.peer_port;
    }
  }
  if (best == kNoSwitch) return 0;
  const std::size_t len = tree_path(best, out);
  out[len] = best_port;
  return len + 1;
}

}  // namespace subnetd::daemon

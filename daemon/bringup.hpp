#pragma once
// One bring-up pass, in DESIGN.md order: sweep -> LIDs -> route -> verify ->
// program. Nothing reaches a switch unless the verifier passed.
//
// The steps are separate so the SubnetManager can compose them with what it
// learns meanwhile (links the fast path found down are folded into the swept
// topology; see subnet_manager.hpp); BringUp::run composes them plainly for
// `subnetd --once` and tests. I/O steps are coroutines on the MAD engine's
// strand; compute steps are plain functions the caller runs where it likes
// (the SM: on its ComputeRunner). Pure orchestration: persistence and
// publishing are the caller's.

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/compute.hpp"
#include "daemon/config.hpp"
#include "discovery/mad_engine.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sweeper.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/mcast.hpp"
#include "routing/partitions.hpp"
#include "routing/verifier.hpp"
#include "routing/worker_pool.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::daemon {

// SMPs a sweep, a programming pass or a read-back keeps queued at one
// switch's SMA at most (bring_up_options; the fast path's push has its own
// FastPathConfig::switch_window).
inline constexpr unsigned kSmpsPerSwitch = 16;

struct BringUpOptions {
  discovery::SweepOptions sweep;
  discovery::ProgramOptions program;
  routing::LidSpace space;
  std::uint8_t lmc = 0;
  std::string engine = "auto";
  // Routes with this engine when `engine` fails (empty: none), and says so
  // in Routes::notes.
  std::string fallback_engine;
  // engine_options.max_vls is set per route from the sweep: the data VLs
  // every switch-to-switch port offers, capped by this (0 = no cap).
  std::uint8_t max_vls = 0;
  routing::EngineOptions engine_options;
  std::vector<routing::LidRecord> remembered_lids;  // from the store
  std::vector<routing::PartitionSpec> partitions;   // the default partition alone if empty
  // The routes programmed now and the fabric they were computed for (the
  // daemon's last heavy sweep; null: none). Layered routes on several VLs
  // are repaired in their layers while the fabric has only lost switch
  // links (or CAs came and went), so that every LID keeps the SL hosts
  // hold (routing/engines/layered_repair.hpp); a fabric that gained
  // switches or links is routed afresh, which uses them.
  std::shared_ptr<const routing::Routes> previous_routes;
  std::shared_ptr<const routing::Topology> previous_topology;
  // Where each switch sat in the grid of the last routes, given where
  // there are no previous_routes (which carry their own: Routes::grid): a
  // daemon that started gives the store's, so that a grid found again is
  // placed as before the restart and its LIDs keep their SLs.
  std::shared_ptr<const routing::GridPlacement> previous_grid;
  // The operator asked to re-balance (subnetctl sweep --rebalance): route
  // afresh even where the previous routes could be repaired in place,
  // accepting that LIDs may change layer (SL).
  bool rebalance = false;
  // BringUp::run calls it once the LIDs are assigned, before anything is
  // programmed; an error fails the bring-up (LIDs must be durable before a
  // port carries them). The daemon persists through its own step instead.
  std::function<Result<void>(const routing::LidAssignment&)> persist_lids;
};

// Wall-clock time of each phase.
struct PhaseTimes {
  std::chrono::nanoseconds sweep{}, lids{}, route{}, verify{}, program{}, total{};
};

struct BringUpResult {
  discovery::SweepResult sweep;
  routing::LidAssignment lids;
  std::shared_ptr<const routing::Routes> routes;
  routing::VerifyReport verify;
  discovery::ProgramReport program;
  // The P_Key tables programmed (of sweep.topology); planned by
  // program_step unless the caller planned them.
  std::shared_ptr<const routing::PartitionPlan> partitions;
  // The multicast groups and their trees (the SM's; empty for --once).
  std::shared_ptr<const std::vector<state::McastGroup>> mcast_groups;
  std::shared_ptr<const routing::McastTables> multicast;
  PhaseTimes times;
};

// Which phase failed (or is running), for messages, exit codes and tests.
enum class Phase { kSweep, kLids, kRoute, kVerify, kProgram };
const char* phase_name(Phase p);

// "routing failed: ..." — the error of a step, naming its phase.
Error phase_error(Phase p, const Error& e);

// The steps. Each returns what it made or an error naming its phase.
boost::asio::awaitable<Result<discovery::SweepResult>> sweep_step(discovery::MadEngine& engine,
                                                                  const BringUpOptions& opts);
Result<routing::LidAssignment> lids_step(const discovery::SweepResult& sweep,
                                         const BringUpOptions& opts);
// Routes with opts.engine within the VLs the sweep found every switch link
// to offer (and opts.max_vls); on an error, with opts.fallback_engine.
// With previous layered routes (opts.previous_routes), repairs them in
// their layers first where it may, and routes afresh if the repair is
// refused; Routes::notes says which and why.
Result<std::shared_ptr<const routing::Routes>> route_step(const discovery::SweepResult& sweep,
                                                          const routing::LidMap& lids,
                                                          const BringUpOptions& opts,
                                                          routing::WorkerPool& pool,
                                                          std::stop_token stop);
// With `multicast`, the trees' dependencies are in the graph too.
Result<routing::VerifyReport> verify_step(const routing::Topology& topo,
                                          const routing::LidMap& lids,
                                          const routing::Routes& routes, routing::WorkerPool& pool,
                                          std::stop_token stop,
                                          const routing::McastTables* multicast = nullptr);
// Programs, and on success updates out.sweep.topology to what the fabric
// now is (ports ACTIVE, LIDs written). Plans the partitions of the swept
// topology into out.partitions unless `live` brings a plan. A pass with failed SMPs is an error
// naming the first (the report is kept in `out.program` either way).
boost::asio::awaitable<Result<void>> program_step(discovery::MadEngine& engine,
                                                  const BringUpOptions& opts, BringUpResult& out,
                                                  const discovery::HeldTables* held,
                                                  discovery::ProgramLive live = {});

class BringUp {
 public:
  BringUp(discovery::MadEngine& engine, ComputeRunner& compute, routing::WorkerPool& pool)
      : engine_(engine), compute_(compute), pool_(pool) {}

  // `held`: what the switches hold from an earlier pass (null = unknown).
  // On failure the error names the phase; a failure before the program
  // phase leaves the fabric untouched.
  boost::asio::awaitable<Result<BringUpResult>> run(const BringUpOptions& opts,
                                                    const discovery::HeldTables* held);

  // The same on a private event loop over `transport` (`subnetd --once`,
  // tests, benchmarks).
  // `failed` (optional) receives the phase that failed.
  static Result<BringUpResult> run_blocking(discovery::Transport& transport,
                                            routing::WorkerPool& pool, const BringUpOptions& opts,
                                            const discovery::HeldTables* held = nullptr,
                                            Phase* failed = nullptr);
  // The phase the last run() failed in.
  Phase failed_phase() const { return failed_phase_; }

 private:
  // Records the phase of a failure for failed_phase().
  Error failed(Phase p, Error e) {
    failed_phase_ = p;
    return e;
  }

  discovery::MadEngine& engine_;
  ComputeRunner& compute_;
  routing::WorkerPool& pool_;
  Phase failed_phase_ = Phase::kSweep;
};

// Options from the YAML config (remembered_lids left empty).
BringUpOptions bring_up_options(const Config& cfg);

// Multi-line human summary (switches, CAs, LIDs, engine, balance, phase times).
std::string summarize(const BringUpResult& r, std::string_view transport_name);

}  // namespace subnetd::daemon

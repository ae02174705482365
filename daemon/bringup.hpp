#pragma once
// One bring-up pass, in DESIGN.md order: sweep -> LIDs -> route -> verify ->
// program. Nothing reaches a switch unless the verifier passed.
//
// Used by `subnetd --once` and by the SubnetManager's heavy sweep. Runs on the
// calling thread (the SM strand); routing and verification use the given
// WorkerPool. Pure orchestration: persistence and publishing are the caller's.

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/config.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sweeper.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/verifier.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::daemon {

struct BringUpOptions {
  discovery::SweepOptions sweep;
  discovery::ProgramOptions program;
  routing::LidSpace space;
  std::uint8_t lmc = 0;
  std::string engine = "auto";
  routing::EngineOptions engine_options;
  std::vector<routing::LidRecord> remembered_lids;  // from the store
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
  PhaseTimes times;
};

// Which phase failed, for messages and exit codes.
enum class Phase { kSweep, kLids, kRoute, kVerify, kProgram };
const char* phase_name(Phase p);

struct BringUpError {
  Phase phase;
  Error error;
};

class BringUp {
 public:
  BringUp(discovery::Transport& transport, routing::WorkerPool& pool)
      : transport_(transport), pool_(pool) {}

  // `held`: what the switches hold from an earlier pass (null = unknown).
  // On failure `error()` says which phase and why; a failure before the
  // program phase leaves the fabric untouched.
  Result<BringUpResult> run(const BringUpOptions& opts, const discovery::HeldTables* held,
                            std::stop_token stop = {});
  Phase failed_phase() const { return failed_phase_; }

 private:
  discovery::Transport& transport_;
  routing::WorkerPool& pool_;
  Phase failed_phase_ = Phase::kSweep;
};

// Options from the YAML config (remembered_lids left empty).
BringUpOptions bring_up_options(const Config& cfg);

// Multi-line human summary (switches, CAs, LIDs, engine, balance, phase times).
std::string summarize(const BringUpResult& r, std::string_view transport_name);

}  // namespace subnetd::daemon

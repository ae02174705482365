#pragma once
// SubnetManager: the SM state machine of the long-running daemon.
//
// Owner: run_daemon (subnetd_main.cpp). Threads: everything here runs on one
// Boost.Asio strand (the "SM strand") — topology, LIDs, routes and the sweep
// state machine are touched nowhere else. Other threads (gRPC handlers,
// signal handling) reach it only through state::SmControl, whose calls post onto the
// strand and return futures. Heavy routing uses the WorkerPool; SQLite writes
// go to the StoreWriter thread; readers see only published state::FabricState.
//
// Life cycle: start() posts the first heavy sweep (bring-up). Then:
//  - traps (trap 128 link state change) are repressed at once and queued;
//    the queue is drained in one go (traps that arrive together are one
//    repair) and handed to the fast path (daemon/fast_path.hpp: probe the
//    trapping switches' ports, Rerouter::repair, push the changed LFT
//    blocks). After a repair the repaired tables are published and a heavy
//    sweep is scheduled to re-balance (it replaces them only once the full
//    verifier passes). Link up, a refused repair, or anything the fast path
//    cannot tell schedules a heavy sweep (debounced, so a burst of traps
//    costs one sweep). The fast path is rebuilt after every successful heavy
//    sweep (engines without an up/down order, minhop, have none);
//  - a periodic light sweep reads every switch's SwitchInfo:PortStateChange
//    (and notices silent switches) and escalates to a heavy sweep on change.
//    trigger_light_sweep runs the same probe on demand (and restarts the
//    period); the periodic one skips its turn while a heavy sweep is pending;
//  - a failed bring-up keeps the previous programming and published state
//    and retries with backoff.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/bringup.hpp"
#include "daemon/config.hpp"
#include "daemon/fast_path.hpp"
#include "daemon/store.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/mad/smp.hpp"
#include "routing/worker_pool.hpp"
#include "state/control.hpp"
#include "state/event_log.hpp"
#include "state/fabric_state.hpp"

namespace subnetd::daemon {

// What a trap told us, for the fast path.
struct TrapEvent {
  std::uint16_t trap_number = 0;
  std::uint32_t issuer_lid = 0;            // LIDADDR of trap 128 (the switch whose port changed)
  std::chrono::nanoseconds received_at{};  // transport time
  std::chrono::steady_clock::time_point received_wall{};  // where reroute latency starts
};

// Tuning of the built-in fast path (tests shorten or stretch the delays).
struct FastPathOptions {
  bool enabled = true;
  // After a repair, the heavy sweep that re-balances comes this much later
  // (a burst of failures costs one sweep).
  std::chrono::milliseconds rebalance_delay{2'000};
  // Port probes and LFT block answers: per SMP, transport time.
  std::chrono::milliseconds timeout{20};
};

class SubnetManager final : public state::SmControl {
 public:
  struct Hooks {
    // After every publish, on the strand (systemd STATUS/READY, logging).
    std::function<void(const state::FabricState&)> published;
    // Optional override, consulted first for every trap 128. Returns true
    // when it handled the trap itself; false lets the built-in fast path
    // (and, failing that, a heavy sweep) take it.
    std::function<bool(const TrapEvent&)> fast_path;
  };

  SubnetManager(boost::asio::io_context& io, Config cfg, TransportBundle transport,
                StoreWriter* store, std::vector<routing::LidRecord> remembered,
                state::StatePublisher& publisher, state::EventLog& events,
                routing::WorkerPool& pool, Hooks hooks, FastPathOptions fast = {});
  ~SubnetManager() override;

  void start();
  // Stops timers and I/O and cancels a bring-up in progress (it returns
  // kCancelled at its next check). Any thread.
  void stop();
  // Applies a new, already validated config (SIGHUP). Keys that need a
  // restart (fabric, addressing, store, api) are reported and ignored.
  void reload(Config cfg, std::string source);

  // state::SmControl (any thread).
  void trigger_sweep(std::string reason, state::Completion<state::SweepReply> done) override;
  void trigger_light_sweep(std::string reason,
                           state::Completion<Result<state::SweepReply>> done) override;
  void verify_routing(state::VerifyRequest request,
                      state::Completion<Result<state::VerifyReply>> done) override;
  void set_port_enabled(Guid node_guid, PortNum port, bool enabled, std::string who,
                        state::Completion<Result<void>> done) override;

  state::SimControl* sim_control() { return sim_control_.get(); }
  const std::string& transport_name() const { return transport_name_; }

 private:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  state::SweepReply heavy_sweep(const std::string& reason);
  // One SwitchInfo Get of every switch of current_ (which must be set);
  // what it found. Shared by the periodic and the on-demand light sweep.
  state::LightSweepReport light_sweep();
  void periodic_light_sweep();
  void schedule_light_sweep();
  void schedule_heavy_sweep(std::chrono::milliseconds delay, std::string reason);
  void watch_transport();
  void drain_transport();
  // drain_transport(), then the traps it queued at once on this thread.
  void drain_and_handle_traps();
  void handle_unsolicited(const discovery::mad::Smp& smp, const discovery::Mad& mad);
  // Fast path (issue 7).
  void process_traps();
  bool fast_reroute(const std::vector<TrapEvent>& traps);
  void build_fast_path();
  void publish(state::SmState state, std::string last_error);
  void log_link_changes(const routing::Topology& before, const routing::Topology& after);

  boost::asio::io_context& io_;
  Strand strand_;
  Config cfg_;
  std::unique_ptr<discovery::Transport> transport_;
  std::unique_ptr<state::SimControl> sim_control_;
  std::string transport_name_;
  StoreWriter* store_;
  std::vector<routing::LidRecord> remembered_;
  state::StatePublisher& publisher_;
  state::EventLog& events_;
  routing::WorkerPool& pool_;
  Hooks hooks_;

  std::optional<boost::asio::posix::stream_descriptor> transport_fd_;
  boost::asio::steady_timer light_timer_;
  boost::asio::steady_timer heavy_timer_;
  bool heavy_pending_ = false;
  std::string heavy_reason_;
  bool stopped_ = false;
  // Cancels a running bring-up at shutdown (requested from any thread).
  std::stop_source stop_source_;
  std::chrono::milliseconds retry_backoff_{500};

  // The last successful bring-up: what the switches hold.
  std::shared_ptr<const BringUpResult> current_;
  discovery::HeldTables held_;
  std::uint64_t generation_ = 0;
  std::uint64_t sweeps_ = 0;

  // Fast path. fast_ is built from current_ (which keeps its Topology and
  // LidMap alive); routes_now_/topology_now_ are what a repair left (null
  // until the first repair after a heavy sweep).
  FastPathOptions fast_opts_;
  std::unique_ptr<FastPath> fast_;
  std::vector<TrapEvent> pending_traps_;
  bool draining_ = false;  // drain_and_handle_traps is reading the transport
  bool traps_posted_ = false;
  std::shared_ptr<const routing::Routes> routes_now_;
  std::shared_ptr<const routing::Topology> topology_now_;
  std::uint64_t reroutes_ = 0;
  std::chrono::nanoseconds last_reroute_{};
};

}  // namespace subnetd::daemon

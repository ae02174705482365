#pragma once
// SubnetManager: the SM of the long-running daemon.
//
// Owner: the daemon's main (cmd/subnetd_main.cpp) or a test. Runs on: one
// strand of the io_context given at construction (the "SM strand"):
// topology, LIDs, routes and every decision are touched only there, and
// nothing there blocks. I/O goes through the MAD engine (one per SM; traps
// are heard in every phase), compute steps (routing, verification, rerouter
// builds) run on the ComputeRunner's thread and come back to the strand,
// SQLite writes go to the StoreWriter's thread, and readers see only the
// published FabricState. Other threads (gRPC, signals) reach it through
// SmControl: each call is posted onto the strand and answered through its
// completion.
//
// Files: subnet_manager.cpp (life cycle, publishing, what the switches hold,
// reload, commands), sm_sweeps.cpp (heavy and light sweeps and their
// scheduling), sm_traps.cpp (traps and the fast path), sm_verify.cpp
// (verification on demand, read-back of the switches' tables),
// sm_standby.cpp (the SM election: other SMs, polling, handover).
//
// Election (IBA 14.4, discovery/sm_election.hpp): the SM starts
// DISCOVERING; the first heavy sweep's discovery asks every SM-capable port
// it found for its SMInfo, and the election decides. As MASTER the sweep
// goes on and, at its end, the SMs are asked again (a higher one gets a
// HANDOVER). As STANDBY (or NOTACTIVE) the sweep stops there: nothing is
// programmed, no light or counter sweep runs, traps are ignored; the
// master is polled, and the SM takes over (DISCOVERING, a heavy sweep that
// keeps the LIDs the ports hold) when it stops answering or hands over.
//
// A heavy sweep is a sequence of steps (coroutine): discover -> fold in the
// links found down since it began -> LIDs (made durable before anything is
// programmed) -> route -> verify -> program, while the rerouter for the new
// tables is built alongside -> publish. Traps keep arriving meanwhile; each
// batch goes to the fast path:
//  - before the programming step, the published tables are repaired and
//    pushed (the switches hold them), and the sweep in progress folds the
//    failure in: found before its route step, it is left out of the topology
//    it routes; found later, it is repaired in the new tables as soon as
//    their rerouter exists;
//  - during the programming step, the switches are moving to the new
//    tables: the failure is repaired there (the programmer reads blocks as
//    repaired, and sends again those it sent before the repair), and in the
//    published tables without pushing them (what readers see never routes
//    through a link known down).
// After every repair a heavy sweep re-balances (rebalance_delay later). Link
// up, a refused repair, or what the fast path cannot tell asks for a heavy
// sweep; requests while one runs are queued (coalesced) and served by the
// next one. A periodic light sweep reads every switch's SwitchInfo
// (PortStateChange, a switch that lost its tables) and asks for a heavy sweep
// on a change. A failed bring-up keeps the published state and retries with
// backoff.
//
// What the switches hold: the published tables (the fast path's rerouter,
// kept current by every repair), minus switches whose blocks did not all
// land and switches found rebooted (their port-0 LID or LinearFDBTop reset):
// those get every block at the next programming.

#include <array>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/bringup.hpp"
#include "daemon/clock.hpp"
#include "daemon/compute.hpp"
#include "daemon/config.hpp"
#include "daemon/fast_path.hpp"
#include "daemon/health/port_health.hpp"
#include "daemon/perfmgr/perf_manager.hpp"
#include "daemon/signal.hpp"
#include "daemon/store.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/failover_armer.hpp"
#include "discovery/mad_engine.hpp"
#include "discovery/sm_agent.hpp"
#include "discovery/sm_election.hpp"
#include "routing/failover_plan.hpp"
#include "routing/worker_pool.hpp"
#include "state/control.hpp"
#include "state/event_log.hpp"
#include "state/fabric_state.hpp"
#include "state/port_counters.hpp"
#include "state/port_health.hpp"

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
    // Every trap an SMA sent but 128 (which the SA tells from the
    // snapshots), on the strand, while master: the SA forwards them to its
    // subscribers (daemon/sa/reporter.hpp). A resent copy (the same issuer
    // LID and TID) is passed on once.
    std::function<void(const discovery::mad::Notice&)> trap_received;
    // Called on the strand as each step of a heavy sweep begins (tests
    // inject failures into a given phase through it).
    std::function<void(Phase)> phase;
  };

  // `clock` drives the SM's own timers (null = the steady clock).
  SubnetManager(boost::asio::io_context& io, Config cfg, TransportBundle transport,
                StoreWriter* store, std::vector<routing::LidRecord> remembered,
                state::StatePublisher& publisher, state::EventLog& events,
                routing::WorkerPool& pool, Hooks hooks, FastPathOptions fast = {},
                Clock* clock = nullptr);
  ~SubnetManager() override;

  void start();
  // The multicast groups the SA's joins and leaves change (may be null: no
  // multicast). Before start(); the registry must outlive the SM. The SM
  // creates the IPoIB broadcast groups of the partitions in it, and
  // computes, verifies and programs the trees of its groups at every heavy
  // sweep and whenever they change (sm_multicast.cpp).
  void attach_multicast(state::McastRegistry* registry);
  // Where the performance manager publishes port counters (null: no
  // counter sweeps). Before start(); must outlive the SM. Counter sweeps
  // run every perfmgr.interval once the fabric is up (sm_perfmgr.cpp).
  void attach_counters(state::CounterBoard* board);
  // Where the fault policy publishes the links it holds against (null: no
  // fault policy), and the isolations the store remembers (they stay
  // until their hold-down ends). Before start(); must outlive the SM
  // (sm_health.cpp).
  void attach_health(state::HealthBoard* board, std::vector<HealthAction> isolated = {});
  // Where each switch sat in the grid of the routes before a restart (the
  // store's; null: none). Before start(). The first heavy sweep places a
  // grid it finds again the same way; every heavy sweep whose routes
  // place their grid otherwise writes theirs to the store.
  void remember_grid(std::shared_ptr<const routing::GridPlacement> grid);
  // Stops timers and I/O; a sweep in progress ends at its next step. Any
  // thread. Pending SmControl calls are answered (cancelled).
  void stop();
  // Applies a reload planned by plan_reload (SIGHUP): plan.effective
  // becomes the running config (its restart-only keys already hold their
  // running values; the caller reports them), and a routing change
  // recomputes the routes.
  void reload(ReloadPlan plan, std::string source);

  // SmControl (any thread).
  state::MadCounters mad_counters() const override;
  void trigger_sweep(std::string reason, state::Completion<state::SweepReply> done) override;
  void trigger_rebalance(std::string reason, state::Completion<state::SweepReply> done) override;
  void trigger_light_sweep(std::string reason,
                           state::Completion<Result<state::SweepReply>> done) override;
  void verify_routing(state::VerifyRequest request,
                      state::Completion<Result<state::VerifyReply>> done) override;
  void set_port_enabled(Guid node_guid, PortNum port, bool enabled, std::string who,
                        state::Completion<Result<void>> done) override;

  // Calls `done` (on the strand) once the SM is idle: no trap waiting or
  // being handled, no MAD in flight, no sweep or verification running
  // (timers may be pending). Tests wait for it instead of sleeping.
  void notify_when_idle_for_test(std::function<void()> done);
  // Calls `done` (on the strand) with what keeps the SM from being idle
  // ("idle" if nothing): what a test prints when waiting for idle failed.
  void describe_busy_for_test(std::function<void(std::string)> done);

  state::SimControl* sim_control() { return sim_control_.get(); }
  const std::string& transport_name() const { return transport_name_; }

 private:
  using Strand = discovery::Strand;
  template <class T>
  using awaitable = boost::asio::awaitable<T>;

  // A link found down by the fast path, by its ends' identities (so any
  // topology can find it), in the order found.
  struct KnownDown {
    std::uint64_t seq = 0;
    Guid a;  // a switch
    PortNum pa = 0;
    Guid b;  // its peer (switch or CA)
    PortNum pb = 0;
  };

  // The heavy sweep in progress, as far as the trap path needs to know.
  struct SweepInProgress {
    explicit SweepInProgress(Strand s) : built(std::move(s)) {}
    std::shared_ptr<BringUpResult> result;  // being built (its topology: the new indices)
    Phase phase = Phase::kSweep;
    std::uint64_t route_seq = 0;  // failures after this are not in its topology
    bool programming = false;
    // The new tables' fast path, once its build is done (during programming).
    std::shared_ptr<FastPath> fast;
    Signal built;                   // set when that build finished (fast may stay null)
    std::uint64_t applied_seq = 0;  // failures up to this are repaired in `fast`
    std::uint64_t seq0 = 0;         // failures after this were found while it ran
    // Directed routes replaced around links found down (ProgramLive).
    std::uint32_t paths_version = 0;
    std::vector<std::uint8_t> reached;        // by NodeId, after a replacement
    std::vector<routing::DirtyBlock> resend;  // for the programmer (ProgramLive)
    bool repaired = false;                    // `fast` changed since its build
    std::vector<Guid> push_failed_switches;
  };

  // ---- subnet_manager.cpp
  void publish(state::SmState state, std::string last_error);
  discovery::HeldTables held_tables() const;
  void forget_held(Guid switch_guid);
  void post(std::function<void()> fn);
  bool idle() const;
  // Calls fn(what, how many) for each thing that keeps the SM from being
  // idle: idle() is none, describe_busy_for_test() lists them.
  void for_each_busy(const std::function<void(std::string_view, std::size_t)>& fn) const;
  void check_idle();
  void log_link_changes(const routing::Topology& before, const routing::Topology& after);

  // ---- sm_multicast.cpp
  // The registry changed (any thread posts it): trees again, soon.
  void multicast_changed();
  // The fast path took `failed` links out (switch indexes of the bring-up's
  // topology): trees that used one are computed again on the live
  // topology and their MFT blocks reprogrammed, around the failures.
  void multicast_links_failed(std::span<const routing::FailedLink> failed);
  awaitable<void> reprogram_multicast();
  // The heavy sweep's routes use several VLs: groups on another SL than 0
  // move to it (said, a warning each; if one had members, the sweep asks
  // the clients to register again), and the sweep's trees take the groups
  // as they are now.
  void keep_multicast_on_vl0(BringUpResult& r);

  // ---- sm_sweeps.cpp
  void request_heavy_sweep(std::chrono::milliseconds delay, std::string reason);
  void start_heavy_sweep();
  awaitable<void> heavy_sweep_task(std::string reason,
                                   std::vector<state::Completion<state::SweepReply>> waiters);
  awaitable<state::SweepReply> heavy_sweep(const std::string& reason);
  // Removes from `topo` every link found down after `since`; how many.
  std::size_t fold(routing::Topology& topo, std::uint64_t since) const;
  // The sweep's directed routes, again, around the links found down since
  // it began (its topology is not changed: a rerouter may be reading it).
  void reroute_sweep_paths(SweepInProgress& ctx);
  // reroute_sweep_paths for the sweep in progress, if it is past discovery.
  void reroute_running_sweep_paths();
  // Whether (node, port) of the sweep in progress is on a link found down
  // since it began, or no route reaches the node any more.
  bool skip_port(const SweepInProgress& ctx, NodeId n, PortNum p) const;
  // Builds the new tables' fast path on the compute thread, then applies
  // the failures found since the route step (in ctx.fast) and pushes them.
  awaitable<void> build_new_fast_path(std::shared_ptr<SweepInProgress> ctx,
                                      std::shared_ptr<BringUpResult> result);
  awaitable<void> persist_lids(const routing::LidAssignment& lids);
  // Queues the routes' grid placement for the store unless it holds it.
  void persist_grid(const std::shared_ptr<const routing::GridPlacement>& grid);
  // ---- sm_failover.cpp
  // Computes and verifies the failover plan for the published tables, arms
  // it on the switches that have the feature (only what differs), and after
  // repairs clears the notification state the failures left.
  awaitable<void> arm_fast_failover(std::shared_ptr<const BringUpResult> r);
  // Stage 2's clean-up right after a repair is pushed: the repaired tables
  // avoid the dead links, and a port a notification removed would only
  // black-hole the LIDs the repair sent through it again.
  awaitable<void> clear_failover_notifications();
  void detect_reboots(const discovery::SweepResult& sweep, const routing::Routes* expected);
  awaitable<state::LightSweepReport> light_sweep();
  void schedule_light_sweep();
  awaitable<void> periodic_light_sweep();
  void enter_phase(Phase p);

  // ---- sm_traps.cpp
  void on_unsolicited(const discovery::mad::Smp& smp, const discovery::Mad& mad);
  // Whether the trap (issuer LID, TID) is new among recent_traps_ (and
  // remembers it).
  bool first_copy(std::uint32_t issuer_lid, std::uint64_t tid);
  awaitable<void> trap_worker();
  awaitable<void> handle_traps(std::vector<TrapEvent> traps);
  // Applies failures (GUID ends) found after ctx->applied_seq to ctx->fast.
  // `trap_at`: when the trap came, for the latency (none: the failures
  // were found before the rerouter existed).
  void apply_to_new_tables(SweepInProgress& ctx,
                           std::optional<std::chrono::steady_clock::time_point> trap_at = {});
  awaitable<void> confirm_push(std::shared_ptr<PushInFlight> push, std::shared_ptr<FastPath> fast);
  std::vector<routing::FailedLink> to_failed_links(const FastPath& fast, std::uint64_t since) const;
  void remember_down(const FastPath& fast, const std::vector<routing::FailedLink>& failed);
  void publish_repaired(FastPath& fast);

  // ---- sm_standby.cpp
  // An SM-capable port the sweeps found, or a peer that sent us a Set.
  struct SmPeerEntry {
    std::vector<std::uint8_t> path;  // directed route to it (empty: use lid)
    bool have_path = false;
    Lid lid;
    std::optional<discovery::PeerSm> last;  // its last SMInfo
    std::chrono::system_clock::time_point last_contact{};
  };
  // Asks every SM-capable port of `sweep` (not ours) for its SMInfo; the
  // peers that answered. Refreshes sm_peers_.
  awaitable<std::vector<discovery::PeerSm>> query_sms(const discovery::SweepResult& sweep);
  // The election after a sweep's discovery (DISCOVERING) or at its end
  // (MASTER); whether we are (still) master.
  awaitable<bool> elect_after_discovery(const discovery::SweepResult& sweep);
  awaitable<void> elect_after_master_sweep(const discovery::SweepResult& sweep);
  // Carries out what the election decided (see ElectionActions).
  void apply_election(discovery::ElectionActions a);
  void enter_role(discovery::SmState s, const std::string& why);
  bool standing_by() const;  // STANDBY or NOTACTIVE: the master is someone else
  void on_sminfo_set(const discovery::mad::Smp& smp, const discovery::Mad& m);
  // SMInfo Get (poll) or Set (control) to a peer: its answer, or an error.
  awaitable<Result<discovery::mad::SmInfo>> ask_peer(Guid to,
                                                     std::optional<discovery::SmControl> ctl,
                                                     discovery::SmState as, unsigned retries);
  // The same to a directed route (`directed`) or a LID.
  awaitable<Result<discovery::mad::SmInfo>> ask_sminfo(bool directed,
                                                       std::vector<std::uint8_t> path,
                                                       std::uint32_t dlid,
                                                       std::optional<discovery::SmControl> ctl,
                                                       discovery::SmState as, unsigned retries);
  // A master got trap 144 from `lid`: an SM there that is master too or
  // outranks us makes a heavy sweep (whose end hands over, or settles two
  // masters); anything else (a tool holding the port's issm) changes
  // nothing. OpenSM sweeps at every trap 144; this asks the one port.
  awaitable<void> trap144_received(std::uint32_t lid);
  awaitable<void> send_handover(Guid to);
  awaitable<void> send_acknowledge(Guid to);
  void send_trap144(Guid to);
  void schedule_poll();
  awaitable<void> poll_once();
  // What the switches' LFTs hold, read block by block (a takeover from
  // another SM): rows by switch GUID, switches with a block unread left out.
  struct AdoptedTables {
    std::unordered_map<Guid, std::vector<std::uint8_t>> rows;
    std::uint64_t blocks_read = 0;
  };
  awaitable<std::shared_ptr<AdoptedTables>> read_held_lfts(std::shared_ptr<const BringUpResult> r);
  state::SmRoleView role_view() const;
  // Publishes the state as it is with the election's view updated.
  void republish_role();
  discovery::mad::SmInfo own_sm_info(discovery::SmState as) const;

  // ---- sm_verify.cpp
  void start_verify();
  awaitable<void> verify_task(bool read_back);
  awaitable<state::ReadBackReport> read_back(std::shared_ptr<const state::FabricState> s);
  // Reads LFT blocks 0..blocks-1 of every switch of `t` along
  // `path_to(switch)` (empty: none known, the switch is left out) and hands
  // each answer to on_block(switch index, block, its 64 ports). By switch
  // index: 1 where a block went unanswered or no path was known.
  using LftBlockFn =
      std::function<void(std::uint32_t sw, std::uint32_t block, std::span<const std::uint8_t>)>;
  awaitable<std::vector<std::uint8_t>> read_lft_blocks(
      const routing::Topology& t, bool extended, std::uint32_t blocks,
      std::function<std::vector<std::uint8_t>(SwitchIndex)> path_to, LftBlockFn on_block);

  boost::asio::io_context& io_;
  // Held from start() to stop(): a running SM keeps its io loop running
  // (in the daemon, its signal set does too), whatever it waits for. Not
  // every wait of the SM counts as io work: on the simulator, under load,
  // io_context::run() returned while the SM was between fast failover's
  // arming and its next step, and nothing woke it again.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
      keep_loop_;
  Strand strand_;
  Config cfg_;
  std::unique_ptr<discovery::Transport> transport_;
  std::unique_ptr<state::SimControl> sim_control_;
  std::string transport_name_;
  std::unique_ptr<SteadyClock> own_clock_;
  Clock& clock_;
  discovery::MadEngine engine_;
  ComputeRunner compute_;
  StoreWriter* store_;
  std::vector<routing::LidRecord> remembered_;
  // The grid placement the store holds (or is queued to hold).
  std::shared_ptr<const routing::GridPlacement> stored_grid_;
  state::StatePublisher& publisher_;
  state::EventLog& events_;
  routing::WorkerPool& pool_;           // compute steps only (on the ComputeRunner)
  routing::WorkerPool strand_pool_{1};  // the strand's own copies (no worker threads)
  Hooks hooks_;
  FastPathOptions fast_opts_;
  bool stopped_ = false;
  std::stop_source stop_source_;  // cancels compute steps at shutdown

  // Published: the last successful bring-up, its fast path (null when the
  // engine has no up/down order), and what repairs left since.
  std::shared_ptr<const BringUpResult> current_;
  std::shared_ptr<FastPath> fast_;
  std::shared_ptr<const routing::Routes> routes_now_;
  std::shared_ptr<const routing::Topology> topology_now_;
  std::uint64_t generation_ = 0;
  std::uint64_t sweeps_ = 0;
  std::uint64_t reroutes_ = 0;
  std::chrono::nanoseconds last_reroute_{};
  // Switches whose tables are unknown (see the top).
  std::set<Guid> held_unknown_;
  // P_Key table blocks the ports acknowledged; a node's are forgotten when
  // it may have reset (a port found below ACTIVE, a switch that lost its
  // tables).
  discovery::HeldPKeys held_pkeys_;
  discovery::HeldVls held_vls_;  // SL2VL and VLArb tables the ports hold
  // Multicast: the registry, the MFT blocks switches acknowledged, the
  // trees and groups programmed since the last bring-up (null: its own),
  // and the re-programming after joins and leaves.
  state::McastRegistry* mcast_registry_ = nullptr;
  discovery::HeldBlocks held_mfts_;
  std::shared_ptr<const routing::McastTables> mcast_now_;
  std::shared_ptr<const std::vector<state::McastGroup>> mcast_groups_now_;
  bool mcast_running_ = false;
  bool mcast_dirty_ = false;
  std::uint64_t mcast_version_ = 0;  // the registry's, when its groups were last taken
  // Whether a bring-up has asked every CA port's clients to register
  // again (ClientReregister): once per daemon run, as the SM that starts
  // knows none of their joins.
  bool reregistered_ = false;
  // Fast failover: what each switch can do and holds; the plan armed; a
  // line for the log.
  discovery::FailoverArmer armer_;
  std::shared_ptr<const routing::FailoverPlan> failover_plan_;
  std::string failover_summary_;

  // Heavy sweeps.
  Timer heavy_timer_;
  Timer light_timer_;
  std::string heavy_reason_;
  bool heavy_running_ = false;
  bool heavy_again_ = false;  // asked for while one ran
  std::string heavy_again_reason_;
  std::chrono::milliseconds heavy_again_delay_{0};
  std::vector<state::Completion<state::SweepReply>> heavy_waiters_;  // for the next sweep
  // The next heavy sweep routes afresh (trigger_rebalance); one that fails
  // leaves the request for its retry.
  bool rebalance_requested_ = false;
  std::shared_ptr<SweepInProgress> sweep_;  // the one running
  std::chrono::milliseconds retry_backoff_{500};
  bool light_running_ = false;
  // The periodic light sweep's timer fired and its coroutine, posted, has
  // not begun yet: work for idle(), like a due timer.
  bool light_starting_ = false;

  // The performance manager (sm_perfmgr.cpp).
  void schedule_counter_sweep();
  boost::asio::awaitable<void> periodic_counter_sweep();
  boost::asio::awaitable<void> counter_sweep();
  void record_counter_history(const state::PortCounterSnapshot& snap,
                              const std::vector<const state::PortCounterEntry*>& erring);
  state::CounterBoard* counter_board_ = nullptr;
  perfmgr::PerfManager perfmgr_;
  // Node GUID -> whether its PMA has PortCountersExtended (nullopt: asked,
  // no answer yet).
  std::unordered_map<std::uint64_t, std::optional<bool>> pma_extended_;
  Timer perf_timer_;
  bool perf_running_ = false;
  bool perf_starting_ = false;

  // The fault policy (sm_health.cpp).
  void health_link_down(Guid a, PortNum pa, Guid b, PortNum pb);
  void health_link_up(Guid a, PortNum pa, Guid b, PortNum pb);
  void health_port_errors(const std::vector<const state::PortCounterEntry*>& erring,
                          const routing::Topology& t);
  // An operator enabled or disabled a port (SetPortState).
  void health_operator(Guid node_guid, PortNum port, bool enabled, const std::string& who);
  // Runs an isolation or a restore, counted by idle() from this call on.
  void spawn_health(awaitable<void> task);
  awaitable<void> isolate(health::PortHealth::Verdict v);
  awaitable<void> restore(health::LinkEnds l);
  // PortInfo Set of PortPhysicalState: Disabled, or Polling to enable.
  awaitable<Result<void>> send_port_phys(std::shared_ptr<const BringUpResult> c, NodeId node,
                                         PortNum port, bool enabled);
  void audit_health(std::string_view action, const health::LinkEnds& l, Guid node, PortNum port,
                    std::string_view cause, const std::string& reason, const std::string& who,
                    std::optional<state::WallTime> until);
  void schedule_health_timer();
  void publish_health();
  state::WallTime wall_clock_now() const;
  state::WallTime wall_of(Clock::time_point t) const;
  health::PortHealth health_;
  state::HealthBoard* health_board_ = nullptr;
  Timer health_timer_;
  int health_tasks_ = 0;  // isolations and restores running
  std::uint64_t health_isolated_total_ = 0;
  std::uint64_t health_restored_total_ = 0;
  std::uint64_t health_refused_total_ = 0;

  // The SM election: our agent (the transport's, answering SMInfo Get on
  // its own thread, or our own, answered on the strand), the rules, the
  // peers by GUID, the master's poll.
  std::unique_ptr<discovery::SmAgent> own_agent_;
  discovery::SmAgent* agent_ = nullptr;
  discovery::SmElection election_;
  std::map<Guid, SmPeerEntry> sm_peers_;
  Lid own_lid_;                            // our port's LID, as the last sweep found it
  std::uint32_t own_capability_mask_ = 0;  // for trap 144
  Timer poll_timer_;
  bool poll_running_ = false;
  // An ACKNOWLEDGE owed to an SM we had no route to when it handed over.
  std::optional<Guid> ack_owed_;
  // We stood by: the next programming reads the tables another master left
  // and sends only the blocks that differ (read_held_lfts).
  bool adopt_tables_ = false;

  // Failures the fast path found (see KnownDown), newest last.
  std::vector<KnownDown> known_down_;
  std::uint64_t failure_seq_ = 0;

  // Traps waiting for the fast path; the worker drains them in batches.
  std::vector<TrapEvent> pending_traps_;
  bool trap_worker_running_ = false;
  // The last traps passed to Hooks::trap_received, as (issuer LID, TID):
  // an SMA resends a trap until repressed, and a repress can be lost.
  std::array<std::pair<std::uint32_t, std::uint64_t>, 64> recent_traps_{};
  std::size_t recent_trap_next_ = 0;

  // Verification on demand: one run at a time; requests for the generation
  // it verifies join it, the others wait for the next run; the last result
  // answers repeated requests until the published generation changes.
  struct VerifyWaiter {
    state::Completion<Result<state::VerifyReply>> done;
    bool read_back = false;
  };
  bool verify_running_ = false;
  bool verify_running_read_back_ = false;
  std::uint64_t verify_generation_ = 0;
  std::vector<VerifyWaiter> verify_joined_;          // answered by the run in progress
  std::vector<VerifyWaiter> verify_queue_;           // answered by the next run
  std::optional<state::VerifyReply> verified_;       // last verifier result (generation inside)
  std::vector<std::function<void()>> idle_waiters_;  // notify_when_idle_for_test
  std::shared_ptr<int> life_ = std::make_shared<int>(0);
};

}  // namespace subnetd::daemon

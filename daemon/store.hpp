#pragma once
// The durable state of subnetd in one SQLite file: the GUID -> LID map, sweep
// history and the event log. The schema lives in schema/sqlite/NNNN_*.sql,
// embedded at build time and applied in order on open.
//
// Durability. The database runs in WAL mode with synchronous=NORMAL. A commit
// appends the transaction to the WAL with write(2) before returning, so the
// data sits in the kernel's page cache: a crash of the *process* (kill -9, a
// segfault) loses nothing that was committed, and the WAL is replayed on the
// next open. Only a kernel crash or power loss can drop the last few commits
// (never corrupt the file), because NORMAL skips the fsync at commit and syncs
// at checkpoints. That is the guarantee we need — after kill -9 every GUID
// keeps its LID — at a fraction of FULL's cost on the event path; the LID map
// is also recoverable from the fabric itself (ports keep their LIDs).
//
// Bad files. A file that is not an SQLite database, is not a subnetd store,
// fails `PRAGMA quick_check`, carries a schema version newer than this
// binary knows, is empty (0 bytes) or has lost its tables is an error naming
// the file; the store never resets it silently (a fresh store would give
// every port a new LID). OpenOptions::reset (the daemon's --reset-store)
// renames the old file, with its -wal and -shm companions, to
// `<path>.corrupt-<UTC timestamp>` and starts an empty store: the old data is
// kept for a post-mortem, never deleted. daemon/store_file.hpp has the file
// checks, the atomic creation of a new store and the file modes (0600).
//
// Threads. A Store is used by one thread at a time (the connection is opened
// with SQLITE_OPEN_NOMUTEX); concurrent calls are a bug and trip an assert in
// debug builds. The daemon owns it through StoreWriter, whose thread performs
// every write in order, off the SM strand and the reroute path.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/result.hpp"
#include "state/event.hpp"
#include "state/port_counters.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace subnetd::routing {
struct GridPlacement;  // routing/grid_placement.hpp
}  // namespace subnetd::routing

namespace subnetd::daemon {

enum class SweepKind : std::uint8_t { kHeavy, kLight };
enum class SweepOutcome : std::uint8_t { kOk, kFailed, kCancelled };

std::string_view to_string(SweepKind k);
std::string_view to_string(SweepOutcome o);

struct SweepPhase {
  std::string name;  // [a-z0-9_]+, e.g. "discover", "route"
  std::int64_t duration_us = 0;
  bool operator==(const SweepPhase&) const = default;
};

struct SweepRecord {
  std::int64_t id = 0;  // assigned by the store; ignored by record_sweep
  state::WallTime started_at{};
  state::WallTime ended_at{};
  SweepKind kind = SweepKind::kHeavy;
  std::uint32_t nodes = 0;
  std::uint32_t switches = 0;
  std::uint32_t cas = 0;
  std::uint32_t lids = 0;
  std::vector<SweepPhase> phases;  // in execution order
  SweepOutcome outcome = SweepOutcome::kOk;
  std::string message;
  bool operator==(const SweepRecord&) const = default;
};

struct OpenOptions {
  // Move an existing file aside (see the file comment) and start empty.
  bool reset = false;
  // How long a statement waits for a lock held by another connection (e.g.
  // an operator's sqlite3 shell) before failing.
  std::chrono::milliseconds busy_timeout{5000};
  // Retention: the oldest rows beyond these counts are pruned as new ones
  // are added (ids keep increasing; WatchEvents resumes past a gap).
  std::int64_t max_events = 1'000'000;
  std::int64_t max_sweeps = 100'000;
  // Clock for lids.updated_at and the reset file suffix; injected for tests.
  std::function<state::WallTime()> clock;
};

// A port's counter changes over `seconds` from `at` (unix seconds): a
// counter sweep's (level 0) or an hour's sum (level 1, `at` the hour's
// start). See schema/sqlite/0003_port_counters.sql.
struct CounterRow {
  Guid node_guid;
  PortNum port = 0;
  int level = 0;
  std::int64_t at = 0;
  double seconds = 0;
  state::CounterSet delta;
  bool operator==(const CounterRow&) const = default;
};

// An action of the fault policy, or an operator's return of a link it
// isolated (schema/sqlite/0004_health_actions.sql).
struct HealthAction {
  std::int64_t id = 0;  // assigned by the store
  state::WallTime at{};
  Guid node_guid;  // the end the policy disables
  PortNum port = 0;
  Guid peer_guid;
  PortNum peer_port = 0;
  std::string action;  // "isolate", "refuse" or "restore"
  std::string cause;   // "flapping" or "errors"
  std::string reason;
  std::string who;                       // "policy", "hold-down", or the operator
  std::optional<state::WallTime> until;  // isolate: the hold-down's end
  bool operator==(const HealthAction&) const = default;
};

class Store {
 public:
  // Opens or creates the store at `path` (creating its parent directory if
  // needed), checks it and brings its schema up to date.
  static Result<std::unique_ptr<Store>> open(const std::string& path, OpenOptions opts = {});

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  // Schema version after open (the highest migration applied).
  int schema_version() const { return schema_version_; }
  // The version this binary's newest migration creates.
  static int latest_schema_version();
  // Where a reset moved the old file, if it did.
  const std::optional<std::string>& moved_aside_to() const { return moved_aside_; }

  // Every remembered port GUID -> base LID, ordered by port GUID.
  Result<std::vector<routing::LidRecord>> load_lids();
  // Upserts `lids` (all with this `lmc`) in one transaction. `node_guids`
  // is empty or parallel to `lids`. A saved range displaces any other port's
  // row whose LID range overlaps it, so rows never share a LID.
  // As below, with one LMC per record (switch port 0 has LMC 0, CA ports the
  // configured LMC), in one transaction.
  Result<void> save_lids(std::span<const routing::LidRecord> lids,
                         std::span<const std::uint8_t> lmcs, std::span<const Guid> node_guids = {});
  Result<void> save_lids(std::span<const routing::LidRecord> lids, std::uint8_t lmc,
                         std::span<const Guid> node_guids = {});

  // Returns the sweep's id.
  Result<std::int64_t> record_sweep(const SweepRecord& sweep);
  // Newest first.
  Result<std::vector<SweepRecord>> recent_sweeps(std::size_t limit);

  // Stores `event` under its own id. Ids only grow and are never reused, not
  // even after pruning: an id at or below last_event_id() is a kConflict
  // error that names it (and says whether it is already stored); an id < 1
  // is kInvalidArgument. The schema enforces the same rule (a trigger), so
  // no other writer can break it either.
  Result<void> append_event(const state::Event& event);
  // Events with id > `after_id`, oldest first, at most `limit`. Page by
  // passing the last id received.
  Result<std::vector<state::Event>> events_since(std::int64_t after_id, std::size_t limit);
  // The highest event id ever stored, pruned ones included (0 when none):
  // the daemon's state::EventLog continues after it.
  Result<std::int64_t> last_event_id();

  // Port counter history (store_counters.cpp). Level-0 rows are inserted
  // (a row for the same port and time replaces the old one); a level-1 row
  // adds to the hour's row of its port. In one transaction.
  Result<void> record_counters(std::span<const CounterRow> rows);
  // Deletes level-0 rows older than `raw_before` and level-1 rows older
  // than `hourly_before` (unix seconds); returns how many went.
  Result<std::int64_t> prune_counters(std::int64_t raw_before, std::int64_t hourly_before);
  // One port's rows of `level` from `since` on, oldest first, at most `limit`.
  Result<std::vector<CounterRow>> counter_history(Guid node_guid, PortNum port, int level,
                                                  std::int64_t since, std::size_t limit);
  // Rows held, per level (tests, benchmarks).
  Result<std::int64_t> counter_rows(int level);

  // The fault policy's audit (store_health.cpp). Rows beyond the newest
  // 100,000 are pruned. An action other than isolate/refuse/restore, or a
  // port outside 1..255, is kInvalidArgument.
  Result<std::int64_t> record_health_action(const HealthAction& a);
  // Links whose latest isolate/restore row is an isolation, oldest first.
  Result<std::vector<HealthAction>> active_isolations();
  // Newest first, at most `limit`.
  Result<std::vector<HealthAction>> health_actions(std::size_t limit);

  // Where each switch sat in the grid of the last routes
  // (schema/sqlite/0005_grid_placement.sql, store_grid.cpp). Saving
  // replaces the placement held; an empty one (no dimensions) clears it.
  // Loading gives null when none is held; rows that do not make a whole
  // placement (a dimension missing, a switch without a coordinate on
  // every dimension, a coordinate past its dimension's size) are a
  // kParse error naming the table and the row, and are left as they are.
  Result<void> save_grid_placement(const routing::GridPlacement& p);
  Result<std::shared_ptr<const routing::GridPlacement>> load_grid_placement();

  // Runs a PRAGMA quick_check now; used at open and by tests.
  Result<void> check_integrity();

 private:
  class Stmt;
  Store(std::string path, sqlite3* db, OpenOptions opts);
  // Opens an existing file (Store::open has checked or created it), checks
  // it and migrates it.
  static Result<std::unique_ptr<Store>> open_file(const std::string& path, OpenOptions opts);
  Result<void> check_tables();
  Result<void> exec(std::string_view sql, std::string_view what);
  Result<void> prepare_all();
  Result<void> migrate();
  Result<void> prune(std::string_view table, std::int64_t keep);
  Result<std::int64_t> read_last_event_id();
  Error event_id_conflict(const state::Event& event);
  Error sql_error(std::string_view what) const;
  state::WallTime now() const;

  std::string path_;
  sqlite3* db_ = nullptr;
  OpenOptions opts_;
  int schema_version_ = 0;
  std::optional<std::string> moved_aside_;
  std::uint32_t events_since_prune_ = 0;
  std::uint32_t sweeps_since_prune_ = 0;
  std::atomic<bool> in_use_{false};  // guards the one-thread-at-a-time rule
  std::unique_ptr<Stmt> upsert_lid_;
  std::unique_ptr<Stmt> displace_lids_;
  std::unique_ptr<Stmt> insert_event_;
  std::unique_ptr<Stmt> insert_sweep_;
};

// Owns the Store and a thread that performs writes in submission order, so
// the SM strand never waits on SQLite. Writes are fire-and-forget: a failed
// write is reported to `on_error` (on the writer thread) and the next write
// proceeds. The queue is unbounded (writes are small and rare next to SMP
// traffic); `pending()` exposes its depth for status reporting.
// close() is called by the owner, not concurrently with itself.
//
// Thread-safe: any thread may queue. Destruction (or close()) stops accepting
// work, performs everything already queued, then joins.
class StoreWriter {
 public:
  using ErrorHandler = std::function<void(const Error&)>;

  StoreWriter(std::unique_ptr<Store> store, ErrorHandler on_error);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  void save_lids(std::vector<routing::LidRecord> lids, std::vector<std::uint8_t> lmcs);
  void save_lids(std::vector<routing::LidRecord> lids, std::uint8_t lmc,
                 std::vector<Guid> node_guids = {});
  void record_sweep(SweepRecord sweep);
  void append_event(state::Event event);
  // Records counter rows, then prunes by age (see Store).
  void record_counters(std::vector<CounterRow> rows, std::int64_t raw_before,
                       std::int64_t hourly_before);
  void record_health_action(HealthAction a);
  // Null: no grid (the placement held is cleared).
  void save_grid_placement(std::shared_ptr<const routing::GridPlacement> p);

  // Runs `fn(Store&)` on the writer thread after everything queued before it
  // and returns its result. Use for reads that must see earlier writes.
  // After close() the future holds a broken_promise error.
  template <class F>
  auto call(F fn) -> std::future<std::invoke_result_t<F, Store&>> {
    using R = std::invoke_result_t<F, Store&>;
    auto task = std::make_shared<std::packaged_task<R(Store&)>>(std::move(fn));
    auto fut = task->get_future();
    enqueue([task](Store& s) { (*task)(s); });
    return fut;
  }

  // Blocks until every write queued before this call has been performed.
  void flush();
  // Stops accepting work, drains the queue and joins. Idempotent.
  void close();
  // Writes queued and not yet started.
  std::size_t pending() const;

 private:
  using Job = std::function<void(Store&)>;
  void enqueue(Job job);
  void run();

  std::unique_ptr<Store> store_;
  ErrorHandler on_error_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace subnetd::daemon

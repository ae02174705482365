#include "daemon/store.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <filesystem>

#include "daemon/store_file.hpp"
#include "daemon/store_internal.hpp"
#include "schema/sqlite_migrations.hpp"

namespace subnetd::daemon {

namespace fs = std::filesystem;

std::string_view to_string(SweepKind k) {
  return k == SweepKind::kHeavy ? "heavy" : "light";
}

std::string_view to_string(SweepOutcome o) {
  switch (o) {
    case SweepOutcome::kOk:
      return "ok";
    case SweepOutcome::kFailed:
      return "failed";
    case SweepOutcome::kCancelled:
      return "cancelled";
  }
  return "?";
}

namespace {

using store_detail::ResetOnExit;
using store_detail::UseGuard;

// PRAGMA application_id of a subnetd store ("SBND"): tells our file apart
// from some other program's SQLite database at the same path.
constexpr std::int32_t kApplicationId = 0x53424e44;

std::int64_t to_db(Guid g) {
  return static_cast<std::int64_t>(g.value);
}
Guid guid_from_db(std::int64_t v) {
  return Guid{static_cast<std::uint64_t>(v)};
}
std::int64_t to_db(state::WallTime t) {
  return t.time_since_epoch().count();
}
state::WallTime time_from_db(std::int64_t us) {
  return state::WallTime{std::chrono::microseconds{us}};
}

using store_detail::column_text;

bool valid_phase_name(std::string_view n) {
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

// A prepared statement, finalized on destruction.
class Store::Stmt {
 public:
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_;
};

namespace {

// Opens a transaction with BEGIN IMMEDIATE (takes the write lock up front, so
// a busy database fails here rather than half-way) and rolls back unless
// committed.
class Txn {
 public:
  explicit Txn(sqlite3* db) : db_(db) {}
  ~Txn() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  bool begin() {
    open_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
    return open_;
  }
  bool commit() {
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return false;
    open_ = false;
    return true;
  }

 private:
  sqlite3* db_;
  bool open_ = false;
};

}  // namespace

Store::Store(std::string path, sqlite3* db, OpenOptions opts)
    : path_(std::move(path)), db_(db), opts_(std::move(opts)) {}

Store::~Store() {
  // Statements first: sqlite3_close_v2 would otherwise defer the close.
  upsert_lid_.reset();
  displace_lids_.reset();
  insert_event_.reset();
  insert_sweep_.reset();
  sqlite3_close_v2(db_);
}

int Store::latest_schema_version() {
  return static_cast<int>(std::size(schema::kSqliteMigrations));
}

state::WallTime Store::now() const {
  if (opts_.clock) return opts_.clock();
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

Error Store::sql_error(std::string_view what) const {
  const int code = sqlite3_errcode(db_) & 0xff;
  Errc errc = Errc::kIo;
  if (code == SQLITE_CONSTRAINT) errc = Errc::kInvalidArgument;
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) errc = Errc::kParse;
  return Error{errc, fmt::format("{}: {}: {}", path_, what, sqlite3_errmsg(db_))};
}

Result<void> Store::exec(std::string_view sql, std::string_view what) {
  char* msg = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    Error e = sql_error(what);
    if (msg) {
      e.message = fmt::format("{}: {}: {}", path_, what, msg);
      sqlite3_free(msg);
    }
    return e;
  }
  return ok_result();
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path, OpenOptions opts) {
  if (path.empty()) return Error{Errc::kInvalidArgument, "store: empty path"};
  if (!opts.clock) {
    opts.clock = [] {
      return std::chrono::time_point_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now());
    };
  }
  std::optional<std::string> moved;
  if (opts.reset) {
    SUBNETD_TRY_ASSIGN(moved, move_store_aside(path, opts.clock()));
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) {
      return Error{Errc::kIo, fmt::format("{}: cannot create directory {}: {}", path,
                                          parent.string(), ec.message())};
    }
  }
  SUBNETD_TRY(check_store_file(path));
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    SUBNETD_TRY(create_store_file(path, [&opts](const std::string& fresh) -> Result<void> {
      auto built = open_file(fresh, opts);
      if (!built.ok()) return built.error();
      return ok_result();
    }));
  }
  SUBNETD_TRY(restrict_store_permissions(path));
  std::unique_ptr<Store> store;
  SUBNETD_TRY_ASSIGN(store, open_file(path, std::move(opts)));
  store->moved_aside_ = std::move(moved);
  return store;
}

Result<std::unique_ptr<Store>> Store::open_file(const std::string& path, OpenOptions opts) {
  // No SQLITE_OPEN_CREATE: the file exists (checked, or just created), and
  // one that vanished since must not come back empty.
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Error{Errc::kIo, fmt::format("{}: cannot open store: {}", path, msg)};
  }
  std::unique_ptr<Store> store(new Store(path, db, std::move(opts)));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, static_cast<int>(store->opts_.busy_timeout.count()));

  // Reading the header is the first access to the file: a damaged page 1
  // or a non-database shows up here, before anything is written.
  std::int64_t app_id = 0;
  std::int64_t version = 0;
  std::int64_t objects = 0;
  {
    sqlite3_stmt* s = nullptr;
    const char* sql =
        "SELECT (SELECT application_id FROM pragma_application_id),"
        "       (SELECT user_version FROM pragma_user_version),"
        "       (SELECT count(*) FROM sqlite_schema)";
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
      Error e = store->sql_error("cannot read store");
      e.code = Errc::kParse;
      e.message += " (start with --reset-store to move it aside)";
      sqlite3_finalize(s);
      return e;
    }
    app_id = sqlite3_column_int64(s, 0);
    version = sqlite3_column_int64(s, 1);
    objects = sqlite3_column_int64(s, 2);
    sqlite3_finalize(s);
  }
  if (app_id != kApplicationId && (version != 0 || objects != 0)) {
    return Error{Errc::kConflict,
                 fmt::format("{}: an SQLite database, but not a subnetd store (application_id "
                             "0x{:08x}, user_version {}); refusing to touch it",
                             path, static_cast<std::uint32_t>(app_id), version)};
  }
  if (version > latest_schema_version()) {
    return Error{Errc::kUnsupported,
                 fmt::format("{}: store schema version {} is newer than this subnetd supports "
                             "({}); run a newer subnetd or start with --reset-store",
                             path, version, latest_schema_version())};
  }
  store->schema_version_ = static_cast<int>(version);
  SUBNETD_TRY(store->check_integrity());
  SUBNETD_TRY(store->check_tables());

  // journal_mode persists in the file; synchronous and busy timeout are per
  // connection. See the header for why NORMAL is enough.
  {
    sqlite3_stmt* s = nullptr;
    std::string mode;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      mode = column_text(s, 0);
    }
    sqlite3_finalize(s);
    if (mode != "wal") {
      return Error{Errc::kIo, fmt::format("{}: cannot switch the store to WAL mode ({}): {}", path,
                                          mode.empty() ? "error" : mode, sqlite3_errmsg(db))};
    }
  }
  SUBNETD_TRY(store->exec("PRAGMA synchronous=NORMAL", "set synchronous"));
  SUBNETD_TRY(store->migrate());
  SUBNETD_TRY(store->prepare_all());
  SUBNETD_TRY(store->prune("events", store->opts_.max_events));
  SUBNETD_TRY(store->prune("sweeps", store->opts_.max_sweeps));
  return store;
}

Result<void> Store::check_integrity() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "PRAGMA quick_check(5)", -1, &s, nullptr) != SQLITE_OK) {
    Error e = sql_error("integrity check failed");
    e.code = Errc::kParse;
    return e;
  }
  std::vector<std::string> problems;
  int rc = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    std::string line = column_text(s, 0);
    if (line != "ok") problems.push_back(std::move(line));
  }
  if (rc != SQLITE_DONE) {
    Error e = sql_error("integrity check failed");
    e.code = Errc::kParse;
    e.message += " (start with --reset-store to move it aside)";
    sqlite3_finalize(s);
    return e;
  }
  sqlite3_finalize(s);
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    return Error{Errc::kParse, fmt::format("{}: integrity check failed: {} (start with "
                                           "--reset-store to move it aside)",
                                           path_, all)};
  }
  return ok_result();
}

// Every migration so far only adds, and 0001 created all three tables: a
// store at version 1 or later without one of them lost it (dropped, or a
// file put together from pieces). Its LIDs are gone, so this is an error
// like any other corruption, never a silent fresh start.
Result<void> Store::check_tables() {
  if (schema_version_ < 1) return ok_result();
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT name FROM sqlite_schema WHERE type = 'table' AND "
                         "name IN ('lids', 'sweeps', 'events')",
                         -1, &s, nullptr) != SQLITE_OK) {
    return sql_error("list tables");
  }
  std::vector<std::string> found;
  while (sqlite3_step(s) == SQLITE_ROW) found.push_back(column_text(s, 0));
  sqlite3_finalize(s);
  std::string missing;
  for (const char* table : {"lids", "sweeps", "events"}) {
    if (std::find(found.begin(), found.end(), table) != found.end()) continue;
    missing += fmt::format("{}{}", missing.empty() ? "" : ", ", table);
  }
  if (missing.empty()) return ok_result();
  return Error{Errc::kParse,
               fmt::format("{}: the store has lost its table{} {} (schema version {} has them): "
                           "what it remembered is gone; refusing to start with a fresh store, "
                           "which would give every port a new LID. Restore it from a backup, or "
                           "start with --reset-store to move it aside",
                           path_, missing.find(',') == std::string::npos ? "" : "s", missing,
                           schema_version_)};
}

Result<void> Store::migrate() {
  for (const auto& m : schema::kSqliteMigrations) {
    if (m.version <= schema_version_) continue;
    // The migrations array is generated gap-free; a mismatch is a build bug.
    if (m.version != schema_version_ + 1) {
      return Error{Errc::kInternal, fmt::format("{}: migration {} follows version {}", path_,
                                                m.file, schema_version_)};
    }
    Txn txn(db_);
    if (!txn.begin()) return sql_error(fmt::format("migration {}: cannot begin", m.file));
    SUBNETD_TRY(exec(m.sql, fmt::format("migration {}", m.file)));
    SUBNETD_TRY(exec(fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}",
                                 kApplicationId, m.version),
                     fmt::format("migration {}: set version", m.file)));
    if (!txn.commit()) return sql_error(fmt::format("migration {}: commit", m.file));
    schema_version_ = m.version;
  }
  return ok_result();
}

Result<void> Store::prepare_all() {
  auto prep = [this](const char* sql, std::unique_ptr<Stmt>& out) -> Result<void> {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
      return sql_error(fmt::format("prepare \"{}\"", sql));
    }
    out = std::make_unique<Stmt>(s);
    return ok_result();
  };
  SUBNETD_TRY(
      prep("INSERT INTO lids (port_guid, base_lid, lmc, node_guid, updated_at) "
           "VALUES (?1, ?2, ?3, ?4, ?5) "
           "ON CONFLICT (port_guid) DO UPDATE SET base_lid = excluded.base_lid, "
           "lmc = excluded.lmc, node_guid = coalesce(excluded.node_guid, lids.node_guid), "
           "updated_at = excluded.updated_at",
           upsert_lid_));
  // ?1 = first LID, ?2 = last LID of the new range, ?3 = its port. Rows are
  // disjoint, so only rows starting inside the range, plus the one row that
  // starts just before it (if its 2^lmc LIDs reach in), can overlap. Both
  // are index seeks; a plain "base_lid BETWEEN ?1 - 127 AND ?2" would visit
  // 128 rows per save on a densely numbered fabric.
  SUBNETD_TRY(
      prep("DELETE FROM lids WHERE port_guid <> ?3 AND port_guid IN ("
           "SELECT port_guid FROM lids WHERE base_lid BETWEEN ?1 AND ?2 "
           "UNION ALL "
           "SELECT port_guid FROM (SELECT port_guid, base_lid, lmc FROM lids "
           "WHERE base_lid < ?1 ORDER BY base_lid DESC LIMIT 1) "
           "WHERE base_lid + (1 << lmc) > ?1)",
           displace_lids_));
  SUBNETD_TRY(
      prep("INSERT INTO events (id, ts, kind, node_guid, port, message, details) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
           insert_event_));
  SUBNETD_TRY(
      prep("INSERT INTO sweeps (started_at, ended_at, kind, nodes, switches, cas, lids, "
           "phases, outcome, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
           insert_sweep_));
  return ok_result();
}

Result<void> Store::prune(std::string_view table, std::int64_t keep) {
  if (keep <= 0) return ok_result();
  return exec(fmt::format("DELETE FROM {0} WHERE id <= "
                          "(SELECT id FROM {0} ORDER BY id DESC LIMIT 1 OFFSET {1})",
                          table, keep),
              fmt::format("prune {}", table));
}

Result<std::vector<routing::LidRecord>> Store::load_lids() {
  UseGuard guard(in_use_);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT port_guid, base_lid FROM lids ORDER BY port_guid", -1, &s,
                         nullptr) != SQLITE_OK) {
    return sql_error("load LIDs");
  }
  std::vector<routing::LidRecord> out;
  int rc = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    out.push_back({guid_from_db(sqlite3_column_int64(s, 0)),
                   Lid{static_cast<std::uint32_t>(sqlite3_column_int64(s, 1))}});
  }
  Result<std::vector<routing::LidRecord>> result = std::move(out);
  if (rc != SQLITE_DONE) result = sql_error("load LIDs");
  sqlite3_finalize(s);
  // ORDER BY port_guid sorts signed; callers expect unsigned GUID order.
  if (result.ok()) std::sort(result->begin(), result->end());
  return result;
}

Result<void> Store::save_lids(std::span<const routing::LidRecord> lids, std::uint8_t lmc,
                              std::span<const Guid> node_guids) {
  const std::vector<std::uint8_t> lmcs(lids.size(), lmc);
  return save_lids(lids, std::span<const std::uint8_t>(lmcs), node_guids);
}

Result<void> Store::save_lids(std::span<const routing::LidRecord> lids,
                              std::span<const std::uint8_t> lmcs,
                              std::span<const Guid> node_guids) {
  UseGuard guard(in_use_);
  if (lmcs.size() != lids.size()) {
    return Error{Errc::kInvalidArgument, fmt::format("{}: save LIDs: {} LMCs for {} LIDs", path_,
                                                     lmcs.size(), lids.size())};
  }
  for (std::uint8_t lmc : lmcs) {
    if (lmc > 7)
      return Error{Errc::kOutOfRange, fmt::format("{}: save LIDs: lmc {} > 7", path_, lmc)};
  }
  if (!node_guids.empty() && node_guids.size() != lids.size()) {
    return Error{Errc::kInvalidArgument, fmt::format("{}: save LIDs: {} node GUIDs for {} LIDs",
                                                     path_, node_guids.size(), lids.size())};
  }
  std::vector<std::size_t> order(lids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return lids[a].base < lids[b].base; });
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto& r = lids[order[k]];
    const std::uint8_t lmc = lmcs[order[k]];
    const std::uint32_t count = 1u << lmc;
    if (r.port_guid.value == 0 || r.base.value == 0 || r.base.value > 0xFFFFFF ||
        r.base.value % count != 0 || r.base.value + count - 1 > 0xFFFFFF) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("{}: save LIDs: port 0x{:016x}: bad base LID {} for lmc {}", path_,
                               r.port_guid.value, r.base.value, lmc)};
    }
    const auto& sorted_prev = k > 0 ? lids[order[k - 1]] : r;
    const std::uint32_t prev_count = k > 0 ? (1u << lmcs[order[k - 1]]) : 0;
    if (k > 0 && sorted_prev.base.value + prev_count > r.base.value) {
      return Error{
          Errc::kConflict,
          fmt::format("{}: save LIDs: ports 0x{:016x} and 0x{:016x} overlap at LID {}", path_,
                      sorted_prev.port_guid.value, r.port_guid.value, r.base.value)};
    }
  }

  Txn txn(db_);
  if (!txn.begin()) return sql_error("save LIDs: begin");
  const std::int64_t ts = to_db(now());
  sqlite3_stmt* del = displace_lids_->get();
  sqlite3_stmt* up = upsert_lid_->get();
  for (std::size_t i = 0; i < lids.size(); ++i) {
    const auto& r = lids[i];
    const std::uint32_t count = 1u << lmcs[i];
    {
      ResetOnExit reset{del};
      sqlite3_bind_int64(del, 1, r.base.value);
      sqlite3_bind_int64(del, 2, r.base.value + count - 1);
      sqlite3_bind_int64(del, 3, to_db(r.port_guid));
      if (sqlite3_step(del) != SQLITE_DONE) return sql_error("save LIDs: displace");
    }
    ResetOnExit reset{up};
    sqlite3_bind_int64(up, 1, to_db(r.port_guid));
    sqlite3_bind_int64(up, 2, r.base.value);
    sqlite3_bind_int(up, 3, lmcs[i]);
    if (!node_guids.empty()) sqlite3_bind_int64(up, 4, to_db(node_guids[i]));
    sqlite3_bind_int64(up, 5, ts);
    if (sqlite3_step(up) != SQLITE_DONE) return sql_error("save LIDs");
  }
  if (!txn.commit()) return sql_error("save LIDs: commit");
  return ok_result();
}

Result<std::int64_t> Store::record_sweep(const SweepRecord& sw) {
  UseGuard guard(in_use_);
  std::string phases = "{";
  for (std::size_t i = 0; i < sw.phases.size(); ++i) {
    const auto& p = sw.phases[i];
    if (!valid_phase_name(p.name)) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("{}: record sweep: bad phase name \"{}\"", path_, p.name)};
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (sw.phases[j].name == p.name) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{}: record sweep: phase \"{}\" twice", path_, p.name)};
      }
    }
    phases += fmt::format("{}\"{}\":{}", i ? "," : "", p.name, p.duration_us);
  }
  phases += "}";
  sqlite3_stmt* s = insert_sweep_->get();
  ResetOnExit reset{s};
  sqlite3_bind_int64(s, 1, to_db(sw.started_at));
  sqlite3_bind_int64(s, 2, to_db(sw.ended_at));
  sqlite3_bind_text(s, 3, to_string(sw.kind).data(), -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 4, sw.nodes);
  sqlite3_bind_int64(s, 5, sw.switches);
  sqlite3_bind_int64(s, 6, sw.cas);
  sqlite3_bind_int64(s, 7, sw.lids);
  sqlite3_bind_text(s, 8, phases.c_str(), static_cast<int>(phases.size()), SQLITE_STATIC);
  sqlite3_bind_text(s, 9, to_string(sw.outcome).data(), -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 10, sw.message.c_str(), static_cast<int>(sw.message.size()), SQLITE_STATIC);
  if (sqlite3_step(s) != SQLITE_DONE) return sql_error("record sweep");
  const std::int64_t id = sqlite3_last_insert_rowid(db_);
  if (++sweeps_since_prune_ >= 256) {
    sweeps_since_prune_ = 0;
    SUBNETD_TRY(prune("sweeps", opts_.max_sweeps));
  }
  return id;
}

Result<std::vector<SweepRecord>> Store::recent_sweeps(std::size_t limit) {
  UseGuard guard(in_use_);
  sqlite3_stmt* s = nullptr;
  sqlite3_stmt* ph = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT id, started_at, ended_at, kind, nodes, switches, cas, lids, "
                         "phases, outcome, message FROM sweeps ORDER BY id DESC LIMIT ?1",
                         -1, &s, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "SELECT key, value FROM json_each(?1) ORDER BY id", -1, &ph,
                         nullptr) != SQLITE_OK) {
    Error e = sql_error("read sweeps");
    sqlite3_finalize(s);
    return e;
  }
  auto finalize = [&] {
    sqlite3_finalize(s);
    sqlite3_finalize(ph);
  };
  sqlite3_bind_int64(s, 1, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  std::vector<SweepRecord> out;
  int rc = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    SweepRecord r;
    r.id = sqlite3_column_int64(s, 0);
    r.started_at = time_from_db(sqlite3_column_int64(s, 1));
    r.ended_at = time_from_db(sqlite3_column_int64(s, 2));
    const std::string kind = column_text(s, 3);
    const std::string outcome = column_text(s, 9);
    r.kind = kind == "light" ? SweepKind::kLight : SweepKind::kHeavy;
    if (outcome == "ok") {
      r.outcome = SweepOutcome::kOk;
    } else if (outcome == "cancelled") {
      r.outcome = SweepOutcome::kCancelled;
    } else {
      r.outcome = SweepOutcome::kFailed;
    }
    r.nodes = static_cast<std::uint32_t>(sqlite3_column_int64(s, 4));
    r.switches = static_cast<std::uint32_t>(sqlite3_column_int64(s, 5));
    r.cas = static_cast<std::uint32_t>(sqlite3_column_int64(s, 6));
    r.lids = static_cast<std::uint32_t>(sqlite3_column_int64(s, 7));
    r.message = column_text(s, 10);
    const std::string phases = column_text(s, 8);
    sqlite3_bind_text(ph, 1, phases.c_str(), static_cast<int>(phases.size()), SQLITE_STATIC);
    int prc = 0;
    while ((prc = sqlite3_step(ph)) == SQLITE_ROW) {
      r.phases.push_back({column_text(ph, 0), sqlite3_column_int64(ph, 1)});
    }
    sqlite3_reset(ph);
    if (prc != SQLITE_DONE) {
      Error e = sql_error(fmt::format("read sweep {} phases", r.id));
      finalize();
      return e;
    }
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) {
    Error e = sql_error("read sweeps");
    finalize();
    return e;
  }
  finalize();
  return out;
}

Result<void> Store::append_event(const state::Event& ev) {
  UseGuard guard(in_use_);
  if (ev.id < 1) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("{}: append {} event: id {} (event ids start at 1; the daemon's "
                             "EventLog assigns them)",
                             path_, to_string(ev.kind), ev.id)};
  }
  sqlite3_stmt* s = insert_event_->get();
  ResetOnExit reset{s};
  sqlite3_bind_int64(s, 1, ev.id);
  sqlite3_bind_int64(s, 2, to_db(ev.ts));
  sqlite3_bind_text(s, 3, to_string(ev.kind).data(), -1, SQLITE_STATIC);
  if (ev.node_guid) sqlite3_bind_int64(s, 4, to_db(*ev.node_guid));
  if (ev.port) sqlite3_bind_int(s, 5, *ev.port);
  sqlite3_bind_text(s, 6, ev.message.c_str(), static_cast<int>(ev.message.size()), SQLITE_STATIC);
  if (!ev.details_json.empty()) {
    sqlite3_bind_text(s, 7, ev.details_json.c_str(), static_cast<int>(ev.details_json.size()),
                      SQLITE_STATIC);
  }
  if (sqlite3_step(s) != SQLITE_DONE) {
    const int code = sqlite3_extended_errcode(db_);
    if (code == SQLITE_CONSTRAINT_CHECK) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("{}: append {} event {}: details are not valid JSON", path_,
                               to_string(ev.kind), ev.id)};
    }
    // The schema's trigger (ids only grow) fires before the primary key
    // would; both mean the same to the caller.
    if (code == SQLITE_CONSTRAINT_TRIGGER || code == SQLITE_CONSTRAINT_PRIMARYKEY) {
      return event_id_conflict(ev);
    }
    return sql_error(fmt::format("append {} event {}", to_string(ev.kind), ev.id));
  }
  if (++events_since_prune_ >= 1024) {
    events_since_prune_ = 0;
    SUBNETD_TRY(prune("events", opts_.max_events));
  }
  return ok_result();
}

// Names the refused id and why: a duplicate, or an id that pruning removed
// (or that was skipped) below the highest one stored.
Error Store::event_id_conflict(const state::Event& ev) {
  const std::string where = fmt::format("{}: append {} event {}", path_, to_string(ev.kind), ev.id);
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT EXISTS (SELECT 1 FROM events WHERE id = ?1)", -1, &q,
                         nullptr) != SQLITE_OK) {
    return Error{Errc::kConflict, fmt::format("{}: event id {} is already used", where, ev.id)};
  }
  sqlite3_bind_int64(q, 1, ev.id);
  const bool stored = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) != 0;
  sqlite3_finalize(q);
  if (stored) {
    return Error{Errc::kConflict, fmt::format("{}: event id {} is already stored", where, ev.id)};
  }
  const auto last = read_last_event_id();
  return Error{Errc::kConflict,
               fmt::format("{}: event id {} is not above the highest event id ever stored ({}); "
                           "ids are never reused",
                           where, ev.id, last.ok() ? fmt::format("{}", *last) : "unknown")};
}

Result<std::vector<state::Event>> Store::events_since(std::int64_t after_id, std::size_t limit) {
  UseGuard guard(in_use_);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT id, ts, kind, node_guid, port, message, details FROM events "
                         "WHERE id > ?1 ORDER BY id LIMIT ?2",
                         -1, &s, nullptr) != SQLITE_OK) {
    return sql_error("read events");
  }
  sqlite3_bind_int64(s, 1, after_id);
  sqlite3_bind_int64(s, 2, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
  std::vector<state::Event> out;
  int rc = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    state::Event e;
    e.id = sqlite3_column_int64(s, 0);
    e.ts = time_from_db(sqlite3_column_int64(s, 1));
    const std::string kind = column_text(s, 2);
    auto k = state::event_kind_from_string(kind);
    if (!k) {
      sqlite3_finalize(s);
      return Error{Errc::kParse,
                   fmt::format("{}: event {}: unknown kind \"{}\"", path_, e.id, kind)};
    }
    e.kind = *k;
    if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
      e.node_guid = guid_from_db(sqlite3_column_int64(s, 3));
    }
    if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
      e.port = static_cast<PortNum>(sqlite3_column_int(s, 4));
    }
    e.message = column_text(s, 5);
    e.details_json = column_text(s, 6);
    out.push_back(std::move(e));
  }
  Result<std::vector<state::Event>> result = std::move(out);
  if (rc != SQLITE_DONE) result = sql_error("read events");
  sqlite3_finalize(s);
  return result;
}

Result<std::int64_t> Store::last_event_id() {
  UseGuard guard(in_use_);
  return read_last_event_id();
}

// sqlite_sequence keeps the highest id ever inserted into the AUTOINCREMENT
// events table, explicit ids included, and pruning does not lower it.
Result<std::int64_t> Store::read_last_event_id() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT seq FROM sqlite_sequence WHERE name = 'events'", -1, &s,
                         nullptr) != SQLITE_OK) {
    // sqlite_sequence exists once any AUTOINCREMENT table does; we have one.
    return sql_error("read last event id");
  }
  const int rc = sqlite3_step(s);
  Result<std::int64_t> result = std::int64_t{0};
  if (rc == SQLITE_ROW) {
    result = sqlite3_column_int64(s, 0);
  } else if (rc != SQLITE_DONE) {
    result = sql_error("read last event id");
  }
  sqlite3_finalize(s);
  return result;
}

// ---------------------------------------------------------------------------

StoreWriter::StoreWriter(std::unique_ptr<Store> store, ErrorHandler on_error)
    : store_(std::move(store)), on_error_(std::move(on_error)) {
  thread_ = std::thread([this] { run(); });
}

StoreWriter::~StoreWriter() {
  close();
}

void StoreWriter::enqueue(Job job) {
  {
    std::lock_guard lock(mu_);
    if (closing_) return;  // dropped; a call() future reports broken_promise
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void StoreWriter::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job(*store_);
  }
}

void StoreWriter::save_lids(std::vector<routing::LidRecord> lids, std::vector<std::uint8_t> lmcs) {
  enqueue([this, lids = std::move(lids), lmcs = std::move(lmcs)](Store& s) {
    if (auto r = s.save_lids(lids, std::span<const std::uint8_t>(lmcs)); !r && on_error_) {
      on_error_(r.error());
    }
  });
}

void StoreWriter::save_lids(std::vector<routing::LidRecord> lids, std::uint8_t lmc,
                            std::vector<Guid> node_guids) {
  enqueue([this, lids = std::move(lids), lmc, node_guids = std::move(node_guids)](Store& s) {
    if (auto r = s.save_lids(lids, lmc, node_guids); !r && on_error_) on_error_(r.error());
  });
}

void StoreWriter::record_sweep(SweepRecord sweep) {
  enqueue([this, sweep = std::move(sweep)](Store& s) {
    if (auto r = s.record_sweep(sweep); !r && on_error_) on_error_(r.error());
  });
}

void StoreWriter::append_event(state::Event event) {
  enqueue([this, event = std::move(event)](Store& s) {
    if (auto r = s.append_event(event); !r && on_error_) on_error_(r.error());
  });
}

void StoreWriter::flush() {
  auto done = call([](Store&) {});
  done.wait();
}

void StoreWriter::close() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::size_t StoreWriter::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace subnetd::daemon

// daemon::Store: the fault policy's audit (schema/sqlite/0004_health_actions.sql)
// and StoreWriter::record_health_action. Actions are rare (a flapping link,
// an erring port): statements are prepared per call.

#include <fmt/format.h>

#include "daemon/store.hpp"
#include "daemon/store_internal.hpp"

namespace subnetd::daemon {

namespace {

using store_detail::column_text;
using store_detail::Finalize;
using store_detail::UseGuard;

constexpr std::int64_t kKeepActions = 100'000;

constexpr const char* kSelect =
    "SELECT h.id, h.at, h.node_guid, h.port, h.peer_guid, h.peer_port, h.action, h.cause, "
    "h.reason, h.who, h.until_at FROM health_actions h";

HealthAction row_of(sqlite3_stmt* s) {
  HealthAction a;
  a.id = sqlite3_column_int64(s, 0);
  a.at = state::WallTime{std::chrono::microseconds{sqlite3_column_int64(s, 1)}};
  a.node_guid = Guid{static_cast<std::uint64_t>(sqlite3_column_int64(s, 2))};
  a.port = static_cast<PortNum>(sqlite3_column_int(s, 3));
  a.peer_guid = Guid{static_cast<std::uint64_t>(sqlite3_column_int64(s, 4))};
  a.peer_port = static_cast<PortNum>(sqlite3_column_int(s, 5));
  a.action = column_text(s, 6);
  a.cause = column_text(s, 7);
  a.reason = column_text(s, 8);
  a.who = column_text(s, 9);
  if (sqlite3_column_type(s, 10) != SQLITE_NULL) {
    a.until = state::WallTime{std::chrono::microseconds{sqlite3_column_int64(s, 10)}};
  }
  return a;
}

}  // namespace

Result<std::int64_t> Store::record_health_action(const HealthAction& a) {
  UseGuard guard(in_use_);
  if (a.action != "isolate" && a.action != "refuse" && a.action != "restore") {
    return Error{Errc::kInvalidArgument,
                 fmt::format("health action \"{}\": not isolate, refuse or restore", a.action)};
  }
  if (a.port == 0 || a.peer_port == 0) {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("health action on port {} - {}: ports are 1..255", a.port, a.peer_port)};
  }
  Finalize st;
  if (sqlite3_prepare_v2(db_,
                         "INSERT INTO health_actions (at, node_guid, port, peer_guid, peer_port, "
                         "action, cause, reason, who, until_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                         "?7, ?8, ?9, ?10)",
                         -1, &st.s, nullptr) != SQLITE_OK) {
    return sql_error("prepare health action");
  }
  sqlite3_bind_int64(st.s, 1, a.at.time_since_epoch().count());
  sqlite3_bind_int64(st.s, 2, static_cast<std::int64_t>(a.node_guid.value));
  sqlite3_bind_int(st.s, 3, a.port);
  sqlite3_bind_int64(st.s, 4, static_cast<std::int64_t>(a.peer_guid.value));
  sqlite3_bind_int(st.s, 5, a.peer_port);
  sqlite3_bind_text(st.s, 6, a.action.data(), static_cast<int>(a.action.size()), SQLITE_STATIC);
  sqlite3_bind_text(st.s, 7, a.cause.data(), static_cast<int>(a.cause.size()), SQLITE_STATIC);
  sqlite3_bind_text(st.s, 8, a.reason.data(), static_cast<int>(a.reason.size()), SQLITE_STATIC);
  sqlite3_bind_text(st.s, 9, a.who.data(), static_cast<int>(a.who.size()), SQLITE_STATIC);
  if (a.until) {
    sqlite3_bind_int64(st.s, 10, a.until->time_since_epoch().count());
  } else {
    sqlite3_bind_null(st.s, 10);
  }
  if (sqlite3_step(st.s) != SQLITE_DONE) return sql_error("record health action");
  const std::int64_t id = sqlite3_last_insert_rowid(db_);
  if (id % 1000 == 0) {
    SUBNETD_TRY(exec(fmt::format("DELETE FROM health_actions WHERE id <= {}", id - kKeepActions),
                     "prune health actions"));
  }
  return id;
}

Result<std::vector<HealthAction>> Store::active_isolations() {
  UseGuard guard(in_use_);
  const std::string sql = fmt::format(
      "{} JOIN (SELECT MAX(id) AS id FROM health_actions WHERE action IN ('isolate', 'restore') "
      "GROUP BY node_guid, port, peer_guid, peer_port) last ON h.id = last.id WHERE h.action = "
      "'isolate' ORDER BY h.id",
      kSelect);
  Finalize st;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) {
    return sql_error("prepare active isolations");
  }
  std::vector<HealthAction> out;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) out.push_back(row_of(st.s));
  if (rc != SQLITE_DONE) return sql_error("read active isolations");
  return out;
}

Result<std::vector<HealthAction>> Store::health_actions(std::size_t limit) {
  UseGuard guard(in_use_);
  const std::string sql = fmt::format("{} ORDER BY h.id DESC LIMIT ?1", kSelect);
  Finalize st;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) {
    return sql_error("prepare health actions");
  }
  sqlite3_bind_int64(st.s, 1, static_cast<std::int64_t>(limit));
  std::vector<HealthAction> out;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) out.push_back(row_of(st.s));
  if (rc != SQLITE_DONE) return sql_error("read health actions");
  return out;
}

void StoreWriter::record_health_action(HealthAction a) {
  enqueue([this, a = std::move(a)](Store& s) {
    if (auto r = s.record_health_action(a); !r && on_error_) on_error_(r.error());
  });
}

}  // namespace subnetd::daemon

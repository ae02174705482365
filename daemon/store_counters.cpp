// daemon::Store: port counter history (schema/sqlite/0003_port_counters.sql)
// and StoreWriter::record_counters. Statements are prepared per call: a
// counter sweep writes once a period, in one transaction.

#include <fmt/format.h>

#include "daemon/store.hpp"
#include "daemon/store_internal.hpp"

namespace subnetd::daemon {

namespace {

using store_detail::Finalize;
using store_detail::UseGuard;

constexpr const char* kColumns =
    "symbol_errors, link_recovers, link_downed, rcv_errors, rcv_remote_phys, rcv_switch_relay, "
    "xmit_discards, xmit_constraint, rcv_constraint, link_integrity, buffer_overrun, "
    "vl15_dropped, xmit_wait, xmit_bytes, rcv_bytes, xmit_pkts, rcv_pkts";
constexpr int kCounterColumns = 17;

// The counters in column order.
std::array<std::uint64_t, kCounterColumns> values(const state::CounterSet& c) {
  return {c.symbol_errors,   c.link_recovers,    c.link_downed,    c.rcv_errors,
          c.rcv_remote_phys, c.rcv_switch_relay, c.xmit_discards,  c.xmit_constraint,
          c.rcv_constraint,  c.link_integrity,   c.buffer_overrun, c.vl15_dropped,
          c.xmit_wait,       c.xmit_bytes,       c.rcv_bytes,      c.xmit_pkts,
          c.rcv_pkts};
}

state::CounterSet from_values(sqlite3_stmt* s, int first) {
  auto v = [s, first](int i) {
    return static_cast<std::uint64_t>(sqlite3_column_int64(s, first + i));
  };
  state::CounterSet c;
  c.symbol_errors = v(0);
  c.link_recovers = v(1);
  c.link_downed = v(2);
  c.rcv_errors = v(3);
  c.rcv_remote_phys = v(4);
  c.rcv_switch_relay = v(5);
  c.xmit_discards = v(6);
  c.xmit_constraint = v(7);
  c.rcv_constraint = v(8);
  c.link_integrity = v(9);
  c.buffer_overrun = v(10);
  c.vl15_dropped = v(11);
  c.xmit_wait = v(12);
  c.xmit_bytes = v(13);
  c.rcv_bytes = v(14);
  c.xmit_pkts = v(15);
  c.rcv_pkts = v(16);
  return c;
}

}  // namespace

Result<void> Store::record_counters(std::span<const CounterRow> rows) {
  UseGuard guard(in_use_);
  if (rows.empty()) return ok_result();
  std::string cols(kColumns);
  std::string params;
  std::string add;
  for (int i = 0; i < kCounterColumns; ++i) params += fmt::format(", ?{}", 6 + i);
  {
    // "col = col + excluded.col" for each counter column (level 1 sums).
    std::size_t pos = 0;
    while (pos < cols.size()) {
      std::size_t comma = cols.find(',', pos);
      if (comma == std::string::npos) comma = cols.size();
      std::string name = cols.substr(pos, comma - pos);
      name.erase(0, name.find_first_not_of(' '));
      add += fmt::format(
          ", {0} = CASE WHEN excluded.level = 1 THEN {0} + excluded.{0} ELSE "
          "excluded.{0} END",
          name);
      pos = comma + 1;
    }
  }
  const std::string sql = fmt::format(
      "INSERT INTO port_counters (node_guid, port, level, at, seconds, {}) VALUES (?1, ?2, ?3, "
      "?4, ?5{}) ON CONFLICT (node_guid, port, level, at) DO UPDATE SET seconds = CASE WHEN "
      "excluded.level = 1 THEN seconds + excluded.seconds ELSE excluded.seconds END{}",
      cols, params, add);
  Finalize st;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) {
    return sql_error("prepare record counters");
  }
  SUBNETD_TRY(exec("BEGIN IMMEDIATE", "record counters"));
  for (const CounterRow& r : rows) {
    sqlite3_reset(st.s);
    sqlite3_bind_int64(st.s, 1, static_cast<std::int64_t>(r.node_guid.value));
    sqlite3_bind_int(st.s, 2, r.port);
    sqlite3_bind_int(st.s, 3, r.level);
    sqlite3_bind_int64(st.s, 4, r.at);
    sqlite3_bind_double(st.s, 5, r.seconds);
    const auto v = values(r.delta);
    for (int i = 0; i < kCounterColumns; ++i) {
      sqlite3_bind_int64(st.s, 6 + i, static_cast<std::int64_t>(v[static_cast<std::size_t>(i)]));
    }
    if (sqlite3_step(st.s) != SQLITE_DONE) {
      Error e = sql_error("record counters");
      (void)exec("ROLLBACK", "record counters");
      return e;
    }
  }
  return exec("COMMIT", "record counters");
}

Result<std::int64_t> Store::prune_counters(std::int64_t raw_before, std::int64_t hourly_before) {
  UseGuard guard(in_use_);
  SUBNETD_TRY(exec(fmt::format("DELETE FROM port_counters WHERE (level = 0 AND at < {}) OR "
                               "(level = 1 AND at < {})",
                               raw_before, hourly_before),
                   "prune counters"));
  return static_cast<std::int64_t>(sqlite3_changes(db_));
}

Result<std::vector<CounterRow>> Store::counter_history(Guid node_guid, PortNum port, int level,
                                                       std::int64_t since, std::size_t limit) {
  UseGuard guard(in_use_);
  const std::string sql = fmt::format(
      "SELECT at, seconds, {} FROM port_counters WHERE node_guid = ?1 AND port = ?2 AND level = "
      "?3 AND at >= ?4 ORDER BY at LIMIT ?5",
      kColumns);
  Finalize st;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) {
    return sql_error("prepare counter history");
  }
  sqlite3_bind_int64(st.s, 1, static_cast<std::int64_t>(node_guid.value));
  sqlite3_bind_int(st.s, 2, port);
  sqlite3_bind_int(st.s, 3, level);
  sqlite3_bind_int64(st.s, 4, since);
  sqlite3_bind_int64(st.s, 5, static_cast<std::int64_t>(limit));
  std::vector<CounterRow> out;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    CounterRow r;
    r.node_guid = node_guid;
    r.port = port;
    r.level = level;
    r.at = sqlite3_column_int64(st.s, 0);
    r.seconds = sqlite3_column_double(st.s, 1);
    r.delta = from_values(st.s, 2);
    out.push_back(r);
  }
  if (rc != SQLITE_DONE) return sql_error("counter history");
  return out;
}

Result<std::int64_t> Store::counter_rows(int level) {
  UseGuard guard(in_use_);
  Finalize st;
  if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM port_counters WHERE level = ?1", -1, &st.s,
                         nullptr) != SQLITE_OK) {
    return sql_error("prepare counter rows");
  }
  sqlite3_bind_int(st.s, 1, level);
  if (sqlite3_step(st.s) != SQLITE_ROW) return sql_error("counter rows");
  return sqlite3_column_int64(st.s, 0);
}

void StoreWriter::record_counters(std::vector<CounterRow> rows, std::int64_t raw_before,
                                  std::int64_t hourly_before) {
  enqueue([this, rows = std::move(rows), raw_before, hourly_before](Store& s) {
    if (auto r = s.record_counters(rows); !r && on_error_) on_error_(r.error());
    if (auto r = s.prune_counters(raw_before, hourly_before); !r && on_error_) {
      on_error_(r.error());
    }
  });
}

}  // namespace subnetd::daemon

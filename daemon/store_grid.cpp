// daemon::Store: the grid placement of the last routes
// (schema/sqlite/0005_grid_placement.sql) and StoreWriter::save_grid_placement.
// Written after a heavy sweep that changed it, read once at start: its
// statements are prepared per call.

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <numeric>

#include "daemon/store.hpp"
#include "daemon/store_internal.hpp"
#include "routing/grid_placement.hpp"

namespace subnetd::daemon {

namespace {

using store_detail::Finalize;
using store_detail::UseGuard;

// GUIDs are unsigned; SQLite integers signed (the bits kept as they are).
std::uint64_t guid_of_db(std::int64_t v) {
  return static_cast<std::uint64_t>(v);
}

}  // namespace

Result<void> Store::save_grid_placement(const routing::GridPlacement& p) {
  UseGuard guard(in_use_);
  if (const std::string bad = routing::placement_problem(p); !bad.empty()) {
    return Error{Errc::kInvalidArgument, fmt::format("{}: save grid placement: {}", path_, bad)};
  }
  SUBNETD_TRY(exec("BEGIN IMMEDIATE", "save grid placement"));
  auto write = [&]() -> Result<void> {
    SUBNETD_TRY(exec("DELETE FROM grid_switches; DELETE FROM grid_dimensions",
                     "save grid placement: clear"));
    Finalize dim, sw;
    if (sqlite3_prepare_v2(db_, "INSERT INTO grid_dimensions (dim, size, wrap) VALUES (?1, ?2, ?3)",
                           -1, &dim.s, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(db_,
                           "INSERT INTO grid_switches (node_guid, dim, pos) VALUES (?1, ?2, ?3)",
                           -1, &sw.s, nullptr) != SQLITE_OK) {
      return sql_error("save grid placement: prepare");
    }
    const std::uint32_t nd = p.dims();
    for (std::uint32_t d = 0; d < nd; ++d) {
      sqlite3_bind_int(dim.s, 1, static_cast<int>(d));
      sqlite3_bind_int64(dim.s, 2, p.size[d]);
      sqlite3_bind_int(dim.s, 3, p.wrap[d] != 0 ? 1 : 0);
      if (sqlite3_step(dim.s) != SQLITE_DONE) return sql_error("save grid placement: dimension");
      sqlite3_reset(dim.s);
    }
    for (std::size_t i = 0; i < p.guids.size(); ++i) {
      for (std::uint32_t d = 0; d < nd; ++d) {
        sqlite3_bind_int64(sw.s, 1, static_cast<std::int64_t>(p.guids[i]));
        sqlite3_bind_int(sw.s, 2, static_cast<int>(d));
        sqlite3_bind_int64(sw.s, 3, p.coord[i * nd + d]);
        if (sqlite3_step(sw.s) != SQLITE_DONE) return sql_error("save grid placement: switch");
        sqlite3_reset(sw.s);
      }
    }
    return exec("COMMIT", "save grid placement");
  };
  Result<void> r = write();
  if (!r.ok()) (void)exec("ROLLBACK", "save grid placement");
  return r;
}

Result<std::shared_ptr<const routing::GridPlacement>> Store::load_grid_placement() {
  UseGuard guard(in_use_);
  auto bad = [&](std::string what) {
    return Error{Errc::kParse, fmt::format("{}: the grid placement: {}", path_, what)};
  };
  auto p = std::make_shared<routing::GridPlacement>();
  {
    Finalize st;
    if (sqlite3_prepare_v2(db_, "SELECT dim, size, wrap FROM grid_dimensions ORDER BY dim", -1,
                           &st.s, nullptr) != SQLITE_OK) {
      return sql_error("load grid placement: dimensions");
    }
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
      const std::int64_t d = sqlite3_column_int64(st.s, 0);
      if (d != static_cast<std::int64_t>(p->size.size())) {
        return bad(
            fmt::format("grid_dimensions has dimension {} where {} comes next", d, p->size.size()));
      }
      p->size.push_back(static_cast<std::uint32_t>(sqlite3_column_int64(st.s, 1)));
      p->wrap.push_back(static_cast<std::uint8_t>(sqlite3_column_int(st.s, 2) != 0 ? 1 : 0));
    }
    if (rc != SQLITE_DONE) return sql_error("load grid placement: dimensions");
  }
  const std::uint32_t nd = p->dims();
  // Rows by GUID (signed order here, sorted unsigned below), each with
  // one coordinate per dimension in order.
  std::vector<std::uint64_t> guids;
  std::vector<std::uint32_t> coords;
  {
    Finalize st;
    if (sqlite3_prepare_v2(db_,
                           "SELECT node_guid, dim, pos FROM grid_switches ORDER BY node_guid, dim",
                           -1, &st.s, nullptr) != SQLITE_OK) {
      return sql_error("load grid placement: switches");
    }
    std::uint32_t next_dim = 0;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
      const std::uint64_t guid = guid_of_db(sqlite3_column_int64(st.s, 0));
      const std::int64_t d = sqlite3_column_int64(st.s, 1);
      const std::int64_t pos = sqlite3_column_int64(st.s, 2);
      if (guids.empty() || guids.back() != guid) {
        if (!guids.empty() && next_dim != nd) {
          return bad(fmt::format("grid_switches gives switch {:#018x} {} of {} coordinates",
                                 guids.back(), next_dim, nd));
        }
        guids.push_back(guid);
        next_dim = 0;
      }
      if (d >= nd) {
        return bad(fmt::format(
            "grid_switches gives switch {:#018x} a coordinate on dimension {}; grid_dimensions "
            "has {}",
            guid, d, nd));
      }
      if (d != next_dim) {
        return bad(fmt::format("grid_switches gives switch {:#018x} no coordinate on dimension {}",
                               guid, next_dim));
      }
      if (pos >= p->size[static_cast<std::size_t>(d)]) {
        return bad(
            fmt::format("grid_switches puts switch {:#018x} at {} on dimension {} of size {}", guid,
                        pos, d, p->size[static_cast<std::size_t>(d)]));
      }
      coords.push_back(static_cast<std::uint32_t>(pos));
      ++next_dim;
    }
    if (rc != SQLITE_DONE) return sql_error("load grid placement: switches");
    if (!guids.empty() && next_dim != nd) {
      return bad(fmt::format("grid_switches gives switch {:#018x} {} of {} coordinates",
                             guids.back(), next_dim, nd));
    }
  }
  if (nd == 0) return std::shared_ptr<const routing::GridPlacement>();  // none held
  std::vector<std::size_t> order(guids.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return guids[a] < guids[b]; });
  p->guids.reserve(guids.size());
  p->coord.reserve(coords.size());
  for (const std::size_t i : order) {
    p->guids.push_back(guids[i]);
    p->coord.insert(p->coord.end(), coords.begin() + static_cast<std::ptrdiff_t>(i * nd),
                    coords.begin() + static_cast<std::ptrdiff_t>((i + 1) * nd));
  }
  if (const std::string problem = routing::placement_problem(*p); !problem.empty()) {
    return bad(problem);
  }
  return std::shared_ptr<const routing::GridPlacement>(std::move(p));
}

void StoreWriter::save_grid_placement(std::shared_ptr<const routing::GridPlacement> p) {
  enqueue([this, p = std::move(p)](Store& s) {
    const routing::GridPlacement none;
    if (auto r = s.save_grid_placement(p != nullptr ? *p : none); !r && on_error_) {
      on_error_(r.error());
    }
  });
}

}  // namespace subnetd::daemon

#pragma once
// Helpers for the store's tests (store_test, store_grid_test).

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

namespace subnetd::daemon::testing {

// Runs SQL on the file directly, bypassing the Store (to forge bad files).
inline void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

}  // namespace subnetd::daemon::testing

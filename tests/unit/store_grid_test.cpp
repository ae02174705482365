// The store's grid placement (schema/sqlite/0005_grid_placement.sql): what
// the last routes' grid was, kept across a restart; rows that make no
// placement are an error naming them, and are left for the next save.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "daemon/store.hpp"
#include "routing/grid_placement.hpp"
#include "store_test_support.hpp"

namespace subnetd::daemon {
namespace {

namespace fs = std::filesystem;
using routing::GridPlacement;
using testing::raw_sql;

class StoreGrid : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/subnetd-grid-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/subnetd.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<Store> open_ok() {
    auto s = Store::open(path_);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // The placement held, after a reopen.
  std::shared_ptr<const GridPlacement> held() {
    auto s = open_ok();
    if (!s) return nullptr;
    auto p = s->load_grid_placement();
    EXPECT_TRUE(p.ok()) << p.error().message;
    return p.ok() ? *p : nullptr;
  }
  // Loading fails with kParse, its message naming the store and `what`.
  void expect_load_error(const std::string& what) {
    auto s = open_ok();
    ASSERT_TRUE(s);
    auto p = s->load_grid_placement();
    ASSERT_FALSE(p.ok()) << "loaded a broken placement";
    EXPECT_EQ(p.error().code, Errc::kParse) << p.error().message;
    EXPECT_EQ(p.error().message.rfind(path_ + ": the grid placement: ", 0), 0U)
        << p.error().message;
    EXPECT_NE(p.error().message.find(what), std::string::npos) << p.error().message;
  }

  std::string dir_;
  std::string path_;
};

// A 3x2 torus-by-path: a ring of 3 and a path of 2, GUIDs on both sides
// of 2^63 (SQLite's integers are signed; the placement's GUIDs ascend
// unsigned).
GridPlacement three_by_two() {
  GridPlacement p;
  p.size = {3, 2};
  p.wrap = {1, 0};
  p.guids = {0x10,
             0x11,
             0x12,
             0x8000'0000'0000'0001ULL,
             0x8000'0000'0000'0002ULL,
             0xFFFF'FFFF'FFFF'FFF0ULL};
  p.coord = {2, 1, 0, 0, 1, 0, 0, 1, 1, 1, 2, 0};
  return p;
}

TEST_F(StoreGrid, ThePlacementIsKeptAcrossAReopenReplacedAndCleared) {
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    auto none = s->load_grid_placement();
    ASSERT_TRUE(none.ok()) << none.error().message;
    EXPECT_EQ(*none, nullptr) << "a new store holds no grid";
    ASSERT_TRUE(s->save_grid_placement(three_by_two()).ok());
  }
  auto first = held();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(*first, three_by_two());
  ASSERT_NE(first->find(0x8000'0000'0000'0002ULL), nullptr);
  EXPECT_EQ(first->find(0x8000'0000'0000'0002ULL)[0], 1U);

  // Another grid replaces it whole: no row of the first is left.
  GridPlacement line;
  line.size = {4};
  line.wrap = {0};
  line.guids = {0x10, 0x20, 0x30, 0x40};
  line.coord = {3, 2, 1, 0};
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->save_grid_placement(line).ok());
  }
  auto second = held();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(*second, line);

  // Routes on no grid: nothing held.
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->save_grid_placement(GridPlacement{}).ok());
  }
  EXPECT_EQ(held(), nullptr);
}

TEST_F(StoreGrid, TheWriterSavesInOrderAndNullClears) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  std::string failed;
  StoreWriter w(std::move(s), [&failed](const Error& e) { failed = e.message; });
  w.save_grid_placement(std::make_shared<const GridPlacement>(three_by_two()));
  auto got = w.call([](Store& st) { return st.load_grid_placement(); }).get();
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_NE(*got, nullptr);
  EXPECT_EQ(**got, three_by_two());
  w.save_grid_placement(nullptr);
  got = w.call([](Store& st) { return st.load_grid_placement(); }).get();
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, nullptr);
  EXPECT_EQ(failed, "");
}

// A placement that is none is refused, naming what, and the one held
// stays.
TEST_F(StoreGrid, SavingNoPlacementIsRefusedAndKeepsTheOneHeld) {
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->save_grid_placement(three_by_two()).ok());
    struct Case {
      const char* what;
      GridPlacement p;
    };
    GridPlacement past = three_by_two();
    past.coord[4] = 3;  // the ring has 3
    GridPlacement twice = three_by_two();
    twice.coord[2] = 2;  // onto (2,1)
    twice.coord[3] = 1;
    GridPlacement unsorted = three_by_two();
    std::swap(unsorted.guids[0], unsorted.guids[1]);
    GridPlacement short_ring = three_by_two();
    short_ring.size[1] = 2;
    short_ring.wrap[1] = 1;
    GridPlacement counts = three_by_two();
    counts.coord.pop_back();
    for (const Case& c :
         {Case{"at 3 on dimension 0 of size 3", past}, Case{"both at (2,1)", twice},
          Case{"GUIDs must ascend", unsorted}, Case{"dimension 1 is a ring of 2", short_ring},
          Case{"11 coordinates for 6 switches", counts}}) {
      auto r = s->save_grid_placement(c.p);
      ASSERT_FALSE(r.ok()) << c.what;
      EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << r.error().message;
      EXPECT_NE(r.error().message.find(c.what), std::string::npos) << r.error().message;
    }
  }
  auto kept = held();
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(*kept, three_by_two());
}

// Rows edited by hand (or left by a bug) that make no placement: a clear
// error naming the table and the switch, the rows left as they are, and
// the next save writes a whole placement over them.
TEST_F(StoreGrid, RowsThatMakeNoPlacementAreAnErrorNamingThem) {
  struct Case {
    const char* sql;
    const char* what;
  };
  const Case cases[] = {
      {"DELETE FROM grid_switches WHERE node_guid = 17 AND dim = 1",
       "grid_switches gives switch 0x0000000000000011 1 of 2 coordinates"},
      {"DELETE FROM grid_switches WHERE node_guid = 17 AND dim = 0",
       "grid_switches gives switch 0x0000000000000011 no coordinate on dimension 0"},
      {"UPDATE grid_switches SET pos = 2 WHERE node_guid = 18 AND dim = 1",
       "grid_switches puts switch 0x0000000000000012 at 2 on dimension 1 of size 2"},
      {"DELETE FROM grid_dimensions WHERE dim = 1",
       "grid_switches gives switch 0x8000000000000001 a coordinate on dimension 1; "
       "grid_dimensions has 1"},
      {"UPDATE grid_dimensions SET dim = 2 WHERE dim = 1",
       "grid_dimensions has dimension 2 where 1 comes next"},
      {"UPDATE grid_switches SET pos = 1 WHERE node_guid = 18 AND dim = 1",
       "switches 0x0000000000000012 and 0x8000000000000002 both at (1,1)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sql);
    {
      auto s = open_ok();
      ASSERT_TRUE(s);
      ASSERT_TRUE(s->save_grid_placement(three_by_two()).ok());
    }
    raw_sql(path_, c.sql);
    expect_load_error(c.what);
    expect_load_error(c.what);  // left as it was
    {
      auto s = open_ok();
      ASSERT_TRUE(s);
      ASSERT_TRUE(s->save_grid_placement(three_by_two()).ok());
    }
    auto back = held();
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(*back, three_by_two());
  }
}

}  // namespace
}  // namespace subnetd::daemon

#include "daemon/store.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "schema/sqlite_migrations.hpp"
#include "store_test_support.hpp"

namespace subnetd::daemon {
namespace {

using namespace subnetd::state;

namespace fs = std::filesystem;
using routing::LidRecord;

WallTime at_us(std::int64_t us) {
  return WallTime{std::chrono::microseconds{us}};
}

std::string read_file(const std::string& p) {
  std::string bytes(fs::file_size(p), '\0');
  std::ifstream in(p, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

void write_file(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

using testing::raw_sql;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/subnetd-store-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/state/subnetd.db";  // parent created by Store::open
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<Store> open_ok(OpenOptions o = {}) {
    auto r = Store::open(path_, std::move(o));
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? std::move(r).value() : nullptr;
  }
  void expect_open_error(const std::string& what, Errc code) {
    auto r = Store::open(path_);
    ASSERT_FALSE(r.ok()) << "opened a bad store";
    EXPECT_EQ(r.error().code, code) << r.error().message;
    EXPECT_EQ(r.error().message.rfind(path_ + ": ", 0), 0u) << r.error().message;
    EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().message;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(StoreTest, MigratesAFreshFile) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), Store::latest_schema_version());
  EXPECT_GE(Store::latest_schema_version(), 1);
  EXPECT_FALSE(s->moved_aside_to().has_value());
  s.reset();
  // The file is a WAL-mode database at the latest version with our tables.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sql;
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
    std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
  };
  EXPECT_EQ(one("PRAGMA user_version"), std::to_string(Store::latest_schema_version()));
  EXPECT_EQ(one("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(one("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE "
                "type = 'table' AND name IN ('lids', 'sweeps', 'events') ORDER BY name)"),
            "events,lids,sweeps");
  sqlite3_close(db);
}

// A store that held LIDs and was truncated to 0 bytes: a fresh start would
// give every port a new LID, so it is an error until --reset-store.
TEST_F(StoreTest, EmptiedStoreIsAnErrorUntilReset) {
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->save_lids(std::vector<LidRecord>{{Guid{0x10}, Lid{0x40}}}, 0).ok());
  }
  write_file(path_, "");
  expect_open_error("the store file is empty (0 bytes)", Errc::kParse);
  auto r = Store::open(path_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--reset-store"), std::string::npos) << r.error().message;
  // Untouched: still empty, no WAL created beside it.
  EXPECT_EQ(fs::file_size(path_), 0u);
  EXPECT_FALSE(fs::exists(path_ + "-wal"));
  OpenOptions o;
  o.reset = true;
  auto s = open_ok(o);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->moved_aside_to().has_value());
  EXPECT_EQ(fs::file_size(*s->moved_aside_to()), 0u);
  auto lids = s->load_lids();
  ASSERT_TRUE(lids.ok());
  EXPECT_TRUE(lids->empty());
}

TEST_F(StoreTest, StoreThatLostItsTablesIsAnError) {
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->save_lids(std::vector<LidRecord>{{Guid{0x10}, Lid{0x40}}}, 0).ok());
  }
  raw_sql(path_, "DROP TABLE lids");
  expect_open_error("the store has lost its table lids (schema version", Errc::kParse);
  raw_sql(path_,
          "DROP TRIGGER IF EXISTS events_ids_only_grow; DROP TABLE events; "
          "DROP TABLE sweeps");
  expect_open_error("the store has lost its tables lids, sweeps, events", Errc::kParse);
}

// The database deleted while its WAL still held committed transactions.
TEST_F(StoreTest, WalWithoutItsDatabaseIsAnError) {
  fs::create_directories(fs::path(path_).parent_path());
  write_file(path_ + "-wal", "frames of a store that is gone");
  auto r = Store::open(path_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
  EXPECT_NE(r.error().message.find("the store file is missing but its write-ahead log"),
            std::string::npos)
      << r.error().message;
  EXPECT_FALSE(fs::exists(path_));
}

// A new store is built beside the path and renamed into place: what a crash
// during creation leaves behind (<path>.init) is replaced, and the path
// itself never exists empty.
TEST_F(StoreTest, NewStoreIsCreatedWhole) {
  fs::create_directories(fs::path(path_).parent_path());
  write_file(path_ + ".init", "");  // left by a crash during an earlier creation
  write_file(path_ + ".init-wal", "junk");
  auto s = open_ok();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), Store::latest_schema_version());
  EXPECT_FALSE(fs::exists(path_ + ".init"));
  EXPECT_FALSE(fs::exists(path_ + ".init-wal"));
  EXPECT_GT(fs::file_size(path_), 0u);
}

// Store files hold the fabric's LID map and events: 0600 when subnetd
// creates them, whatever the umask, and -wal/-shm follow the database.
TEST_F(StoreTest, FilesArePrivateWhateverTheUmask) {
  const mode_t old_umask = ::umask(0);
  auto s = Store::open(path_);
  ::umask(old_umask);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE((*s)->save_lids(std::vector<LidRecord>{{Guid{0x10}, Lid{0x40}}}, 0).ok());
  for (const std::string& f : {path_, path_ + "-wal", path_ + "-shm"}) {
    ASSERT_TRUE(fs::exists(f)) << f;
    EXPECT_EQ(fs::status(f).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << f;
  }
  s->reset();
  // A world-readable store from an older subnetd (or a copy) is tightened
  // to at most 0640 when opened.
  fs::permissions(path_, fs::perms::all);
  auto again = open_ok();
  ASSERT_TRUE(again);
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(StoreTest, LidsRoundTripAndSurviveReopen) {
  const std::vector<LidRecord> lids = {
      {Guid{0x0002c90300000001}, Lid{1}},
      {Guid{0xf452140300000002}, Lid{2}},  // >= 2^63: stored as a negative INTEGER
      {Guid{0x0002c90300000003}, Lid{0xBFFF}},
  };
  const std::vector<Guid> nodes = {Guid{0x10}, Guid{0x20}, Guid{0x30}};
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    auto empty = s->load_lids();
    ASSERT_TRUE(empty.ok()) << empty.error().message;
    EXPECT_TRUE(empty->empty());
    ASSERT_TRUE(s->save_lids(lids, 0, nodes).ok());
    auto back = s->load_lids();
    ASSERT_TRUE(back.ok()) << back.error().message;
    std::vector<LidRecord> want = lids;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(*back, want);
  }
  auto s = open_ok();
  ASSERT_TRUE(s);
  auto back = s->load_lids();
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[2].port_guid.value, 0xf452140300000002u);  // unsigned order
  EXPECT_EQ((*back)[2].base.value, 2u);
  // An update changes only the LID of that port.
  const LidRecord moved{Guid{0x0002c90300000001}, Lid{7}};
  ASSERT_TRUE(s->save_lids(std::span(&moved, 1), 0).ok());
  back = s->load_lids();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0], moved);
  EXPECT_EQ(back->size(), 3u);
}

TEST_F(StoreTest, SavedRangeDisplacesOverlappingRows) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  const LidRecord a{Guid{0xa}, Lid{8}};  // lmc 2: LIDs 8..11
  const LidRecord c{Guid{0xc}, Lid{12}};
  ASSERT_TRUE(s->save_lids(std::vector{a, c}, 2).ok());
  const LidRecord b{Guid{0xb}, Lid{10}};  // lmc 0: LID 10, inside a's range
  ASSERT_TRUE(s->save_lids(std::span(&b, 1), 0).ok());
  auto back = s->load_lids();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (std::vector<LidRecord>{b, c}));
  // A range that swallows another row's start displaces it too; the row just
  // below (4..7) does not overlap 8..11 and stays.
  const LidRecord d{Guid{0xd}, Lid{4}};
  ASSERT_TRUE(s->save_lids(std::span(&d, 1), 2).ok());
  ASSERT_TRUE(s->save_lids(std::span(&a, 1), 2).ok());
  back = s->load_lids();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (std::vector<LidRecord>{a, c, d}));
}

TEST_F(StoreTest, SaveLidsRejectsBadInputAtomically) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  const std::vector<LidRecord> overlap = {{Guid{1}, Lid{4}}, {Guid{2}, Lid{5}}};
  auto r = s->save_lids(overlap, 1);  // 4..5 and 5..6 overlap (and 5 is misaligned)
  ASSERT_FALSE(r.ok());
  const std::vector<LidRecord> clash = {{Guid{1}, Lid{4}}, {Guid{2}, Lid{4}}};
  r = s->save_lids(clash, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kConflict) << r.error().message;
  const std::vector<LidRecord> misaligned = {{Guid{1}, Lid{6}}};
  r = s->save_lids(misaligned, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << r.error().message;
  const std::vector<LidRecord> zero = {{Guid{1}, Lid{0}}};
  EXPECT_FALSE(s->save_lids(zero, 0).ok());
  const std::vector<Guid> one_node = {Guid{9}};
  EXPECT_FALSE(s->save_lids(overlap, 0, one_node).ok());  // wrong node_guids size
  auto back = s->load_lids();
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->empty());
}

TEST_F(StoreTest, GarbageFileIsAClearErrorAndUntouched) {
  fs::create_directories(fs::path(path_).parent_path());
  std::string garbage(8192, '\0');
  std::mt19937 rng(7);
  for (char& c : garbage) c = static_cast<char>(rng());
  write_file(path_, garbage);
  expect_open_error("not an SQLite database", Errc::kParse);
  EXPECT_EQ(read_file(path_), garbage);
  EXPECT_FALSE(fs::exists(path_ + "-wal"));
  write_file(path_, "SQLite");  // shorter than the header
  expect_open_error("not an SQLite database", Errc::kParse);
}

TEST_F(StoreTest, TruncatedFileIsAClearError) {
  {
    auto s = open_ok();
    ASSERT_TRUE(s);
    std::vector<LidRecord> lids;
    for (std::uint32_t i = 1; i <= 5000; ++i) lids.push_back({Guid{0x1000 + i}, Lid{i}});
    ASSERT_TRUE(s->save_lids(lids, 0).ok());
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE(s->append_event({i + 1, at_us(i), EventKind::kLinkDown, Guid{0x77}, 3,
                                   std::string(100, 'x'), "{\"n\":1}"})
                      .ok());
    }
  }
  ASSERT_FALSE(fs::exists(path_ + "-wal"));  // checkpointed on close
  const std::string full = read_file(path_);
  ASSERT_GT(full.size(), 64u * 1024);
  write_file(path_, full.substr(0, full.size() / 2));
  expect_open_error("", Errc::kParse);
  auto r = Store::open(path_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--reset-store"), std::string::npos) << r.error().message;
  write_file(path_, full.substr(0, 100));  // header only
  expect_open_error("", Errc::kParse);
}

TEST_F(StoreTest, NewerSchemaVersionIsAClearError) {
  open_ok().reset();
  raw_sql(path_, "PRAGMA user_version = " + std::to_string(Store::latest_schema_version() + 1));
  expect_open_error(fmt::format("schema version {} is newer than this subnetd supports ({})",
                                Store::latest_schema_version() + 1, Store::latest_schema_version()),
                    Errc::kUnsupported);
}

TEST_F(StoreTest, ForeignDatabaseIsRefused) {
  fs::create_directories(fs::path(path_).parent_path());
  raw_sql(path_, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER)");
  expect_open_error("not a subnetd store", Errc::kConflict);
}

TEST_F(StoreTest, PathThatIsADirectoryIsAClearError) {
  fs::create_directories(path_);
  expect_open_error("not a regular file", Errc::kIo);
}

TEST_F(StoreTest, ResetMovesTheOldFilesAside) {
  fs::create_directories(fs::path(path_).parent_path());
  write_file(path_, "this is not a database, just a text file that is long enough");
  write_file(path_ + "-wal", "stale wal");
  OpenOptions o;
  o.reset = true;
  o.clock = [] {
    return at_us(1704164645'000000); /* 2024-01-02T03:04:05Z */
  };
  auto s = open_ok(o);
  ASSERT_TRUE(s);
  const std::string aside = path_ + ".corrupt-20240102T030405Z";
  ASSERT_TRUE(s->moved_aside_to().has_value());
  EXPECT_EQ(*s->moved_aside_to(), aside);
  EXPECT_EQ(read_file(aside), "this is not a database, just a text file that is long enough");
  EXPECT_EQ(read_file(aside + "-wal"), "stale wal");
  auto lids = s->load_lids();
  ASSERT_TRUE(lids.ok());
  EXPECT_TRUE(lids->empty());
  s.reset();
  // A second reset at the same second does not overwrite the first copy.
  auto again = open_ok(o);
  ASSERT_TRUE(again);
  ASSERT_TRUE(again->moved_aside_to().has_value());
  EXPECT_EQ(*again->moved_aside_to(), aside + "-1");
  EXPECT_TRUE(fs::exists(aside));
}

TEST_F(StoreTest, EventsPageInOrderAndRoundTrip) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  auto last = s->last_event_id();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 0);
  std::vector<Event> sent;
  for (int i = 0; i < 25; ++i) {
    Event e;
    e.id = 3 * i + 2;  // kept as given: 2, 5, 8, ...
    e.ts = at_us(1'700'000'000'000'000 + i);
    e.kind = i % 2 ? EventKind::kLinkUp : EventKind::kLinkDown;
    if (i % 3) e.node_guid = Guid{0x8000000000000000ull + static_cast<std::uint64_t>(i)};
    if (i % 4) e.port = static_cast<PortNum>(i);
    e.message = fmt::format("event {}", i);
    if (i % 5 == 0) e.details_json = fmt::format("{{\"i\":{}}}", i);
    auto r = s->append_event(e);
    ASSERT_TRUE(r.ok()) << r.error().message;
    sent.push_back(e);
  }
  std::vector<Event> got;
  std::int64_t cursor = 0;
  std::vector<std::size_t> pages;
  for (;;) {
    auto page = s->events_since(cursor, 10);
    ASSERT_TRUE(page.ok()) << page.error().message;
    pages.push_back(page->size());
    if (page->empty()) break;
    cursor = page->back().id;
    got.insert(got.end(), page->begin(), page->end());
  }
  EXPECT_EQ(pages, (std::vector<std::size_t>{10, 10, 5, 0}));
  EXPECT_EQ(got, sent);
  last = s->last_event_id();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, sent.back().id);
  auto tail = s->events_since(sent[20].id, 100);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->size(), 4u);
}

TEST_F(StoreTest, EventWithInvalidJsonIsRejected) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  auto r = s->append_event({1, at_us(1), EventKind::kError, {}, {}, "boom", "{not json"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  EXPECT_NE(r.error().message.find("not valid JSON"), std::string::npos) << r.error().message;
  auto all = s->events_since(0, 10);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST_F(StoreTest, EventsArePrunedButIdsKeepGrowing) {
  OpenOptions o;
  o.max_events = 10;
  std::int64_t last = 0;
  {
    auto s = open_ok(o);
    ASSERT_TRUE(s);
    for (int i = 0; i < 1100; ++i) {
      ASSERT_TRUE(s->append_event({i + 1, at_us(i), EventKind::kSweep, {}, {}, "", ""}).ok());
      last = i + 1;
    }
    auto all = s->events_since(0, 5000);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->size(), 10u + (1100 - 1024));  // pruned at the 1024th append
  }
  auto s = open_ok(o);  // prunes on open too
  ASSERT_TRUE(s);
  auto all = s->events_since(0, 5000);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 10u);
  EXPECT_EQ(all->back().id, last);
  auto high = s->last_event_id();
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(*high, last);
  // A pruned id is not free again.
  auto again = s->append_event({5, at_us(0), EventKind::kSweep, {}, {}, "", ""});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::kConflict) << again.error().message;
  ASSERT_TRUE(s->append_event({last + 1, at_us(0), EventKind::kSweep, {}, {}, "", ""}).ok());
}

std::vector<std::int64_t> event_ids(Store& s) {
  auto all = s.events_since(0, 100000);
  EXPECT_TRUE(all.ok()) << all.error().message;
  std::vector<std::int64_t> out;
  if (all.ok()) {
    for (const Event& e : *all) out.push_back(e.id);
  }
  return out;
}

TEST_F(StoreTest, EventIdsAreKeptAsGivenAndNeverReused) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  for (std::int64_t id : {7, 8, 20}) {
    auto r = s->append_event({id, at_us(id), EventKind::kLinkDown, Guid{0x10}, 1, "", ""});
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  EXPECT_EQ(event_ids(*s), (std::vector<std::int64_t>{7, 8, 20}));
  auto last = s->last_event_id();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 20);

  auto dup = s->append_event({20, at_us(99), EventKind::kReroute, {}, {}, "again", ""});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, Errc::kConflict);
  EXPECT_EQ(dup.error().message.rfind(path_ + ": append reroute event 20: ", 0), 0u)
      << dup.error().message;
  EXPECT_NE(dup.error().message.find("event id 20 is already stored"), std::string::npos)
      << dup.error().message;

  // Never stored, but below the highest id: refused all the same.
  auto low = s->append_event({9, at_us(99), EventKind::kReroute, {}, {}, "late", ""});
  ASSERT_FALSE(low.ok());
  EXPECT_EQ(low.error().code, Errc::kConflict);
  EXPECT_NE(
      low.error().message.find("event id 9 is not above the highest event id ever stored (20)"),
      std::string::npos)
      << low.error().message;

  for (std::int64_t id : {0, -3}) {
    auto bad = s->append_event({id, at_us(99), EventKind::kSweep, {}, {}, "", ""});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, Errc::kInvalidArgument) << bad.error().message;
    EXPECT_NE(bad.error().message.find(fmt::format("id {}", id)), std::string::npos)
        << bad.error().message;
  }

  ASSERT_TRUE(s->append_event({21, at_us(21), EventKind::kSweep, {}, {}, "", ""}).ok());
  auto events = s->events_since(8, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].id, 20);
  EXPECT_EQ((*events)[0].kind, EventKind::kLinkDown);  // not overwritten by the refused one
  EXPECT_EQ((*events)[1].id, 21);

  // The schema holds the rule too: another writer cannot reuse an id or
  // fall back to SQLite numbering.
  s.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  for (const char* sql : {"INSERT INTO events (id, ts, kind) VALUES (10, 0, 'sweep')",
                          "INSERT INTO events (ts, kind) VALUES (0, 'sweep')"}) {
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_CONSTRAINT) << sql;
    EXPECT_EQ(sqlite3_extended_errcode(db), SQLITE_CONSTRAINT_TRIGGER) << sql;
  }
  sqlite3_close(db);
  s = open_ok();
  ASSERT_TRUE(s);
  EXPECT_EQ(event_ids(*s), (std::vector<std::int64_t>{7, 8, 20, 21}));
}

// A write that fails half-way through the event stream (here: another
// connection holds the write lock past the busy timeout) loses that event
// and nothing else: the ids after it are stored as given, with a gap where
// it would have been.
TEST_F(StoreTest, FailedEventWriteLeavesAGapNotAShift) {
  OpenOptions o;
  o.busy_timeout = std::chrono::milliseconds(20);
  auto s = open_ok(o);
  ASSERT_TRUE(s);
  auto append = [&](std::int64_t id) {
    return s->append_event(
        {id, at_us(id), EventKind::kLinkUp, {}, {}, fmt::format("event {}", id), ""});
  };
  ASSERT_TRUE(append(1).ok());
  ASSERT_TRUE(append(2).ok());

  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &locker), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto failed = append(3);
  ASSERT_FALSE(failed.ok()) << "the write lock was not held";
  EXPECT_EQ(failed.error().code, Errc::kIo) << failed.error().message;
  EXPECT_NE(failed.error().message.find("append link_up event 3"), std::string::npos)
      << failed.error().message;
  ASSERT_EQ(sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(locker);

  ASSERT_TRUE(append(4).ok());
  ASSERT_TRUE(append(5).ok());
  auto all = s->events_since(0, 100);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 4u);
  for (const Event& e : *all) EXPECT_EQ(e.message, fmt::format("event {}", e.id));
  EXPECT_EQ(event_ids(*s), (std::vector<std::int64_t>{1, 2, 4, 5}));
  auto last = s->last_event_id();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 5);
}

// A store written by a version-1 subnetd (its events numbered by SQLite)
// opens, is migrated in place and keeps its rows; its highest id so far —
// including one that pruning removed — stays used.
TEST_F(StoreTest, MigratesAVersion1StoreAndKeepsItsEvents) {
  ASSERT_GE(Store::latest_schema_version(), 2);
  ASSERT_EQ(schema::kSqliteMigrations[0].version, 1);
  fs::create_directories(fs::path(path_).parent_path());
  raw_sql(path_, std::string(schema::kSqliteMigrations[0].sql));
  raw_sql(path_,
          "PRAGMA application_id = 1396854340; PRAGMA user_version = 1;"  // "SBND"
          "PRAGMA journal_mode = WAL;"
          "INSERT INTO lids (port_guid, base_lid, lmc, updated_at) VALUES (4096, 5, 0, 1);"
          "INSERT INTO events (ts, kind, node_guid, port, message, details) VALUES "
          "  (100, 'link_down', 16, 3, 'leaf0[3] down', NULL),"
          "  (200, 'reroute', NULL, NULL, 'repaired', '{\"lids\":4}'),"
          "  (300, 'sweep', NULL, NULL, '', NULL),"
          "  (400, 'sweep', NULL, NULL, 'pruned', NULL);"
          "DELETE FROM events WHERE id = 4;");

  auto s = open_ok();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), Store::latest_schema_version());
  auto lids = s->load_lids();
  ASSERT_TRUE(lids.ok());
  EXPECT_EQ(*lids, (std::vector<LidRecord>{{Guid{4096}, Lid{5}}}));
  auto all = s->events_since(0, 10);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0], (Event{1, at_us(100), EventKind::kLinkDown, Guid{16}, PortNum{3},
                              "leaf0[3] down", ""}));
  EXPECT_EQ((*all)[1], (Event{2, at_us(200), EventKind::kReroute, std::nullopt, std::nullopt,
                              "repaired", "{\"lids\":4}"}));
  EXPECT_EQ((*all)[2].id, 3);
  auto last = s->last_event_id();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 4);  // the daemon's EventLog continues at 5

  auto reused = s->append_event({4, at_us(500), EventKind::kSweep, {}, {}, "", ""});
  ASSERT_FALSE(reused.ok());
  EXPECT_EQ(reused.error().code, Errc::kConflict) << reused.error().message;
  ASSERT_TRUE(s->append_event({5, at_us(500), EventKind::kSweep, {}, {}, "after", ""}).ok());
  EXPECT_EQ(event_ids(*s), (std::vector<std::int64_t>{1, 2, 3, 5}));
  s.reset();

  // Migrated once: a second open finds the latest version and changes nothing.
  auto again = open_ok();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->schema_version(), Store::latest_schema_version());
  EXPECT_EQ(event_ids(*again), (std::vector<std::int64_t>{1, 2, 3, 5}));
}

TEST_F(StoreTest, SweepsRoundTripNewestFirst) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  std::vector<SweepRecord> sent;
  for (int i = 0; i < 3; ++i) {
    SweepRecord r;
    r.started_at = at_us(1000 * i);
    r.ended_at = at_us(1000 * i + 500);
    r.kind = i == 1 ? SweepKind::kLight : SweepKind::kHeavy;
    r.nodes = 702 + static_cast<std::uint32_t>(i);
    r.switches = 54;
    r.cas = 648;
    r.lids = 702;
    r.phases = {{"discover", 8123}, {"lids", 95}, {"route", 3120 + i}, {"program", 2210}};
    r.outcome = i == 2 ? SweepOutcome::kFailed : SweepOutcome::kOk;
    r.message = i == 2 ? "verify: VL 0: credit loop" : "";
    auto id = s->record_sweep(r);
    ASSERT_TRUE(id.ok()) << id.error().message;
    r.id = *id;
    sent.push_back(r);
  }
  auto recent = s->recent_sweeps(2);
  ASSERT_TRUE(recent.ok()) << recent.error().message;
  ASSERT_EQ(recent->size(), 2u);
  EXPECT_EQ((*recent)[0], sent[2]);
  EXPECT_EQ((*recent)[1], sent[1]);
  SweepRecord bad = sent[0];
  bad.phases = {{"Bad Name", 1}};
  EXPECT_FALSE(s->record_sweep(bad).ok());
  bad.phases = {{"route", 1}, {"route", 2}};
  EXPECT_FALSE(s->record_sweep(bad).ok());
}

TEST_F(StoreTest, WriterPerformsWritesInOrderAndDrainsOnClose) {
  auto s = open_ok();
  ASSERT_TRUE(s);
  std::vector<std::string> errors;
  std::mutex mu;
  {
    StoreWriter w(std::move(s), [&](const Error& e) {
      std::lock_guard lock(mu);
      errors.push_back(e.message);
    });
    for (std::uint32_t i = 1; i <= 200; ++i) {
      w.save_lids({{Guid{0x500}, Lid{i}}}, 0);  // the last one wins
      w.append_event({i, at_us(i), EventKind::kReroute, {}, {}, fmt::format("{}", i), ""});
    }
    w.append_event({201, at_us(0), EventKind::kError, {}, {}, "", "{broken"});
    w.flush();
    EXPECT_EQ(w.pending(), 0u);
    auto lids = w.call([](Store& st) { return st.load_lids(); }).get();
    ASSERT_TRUE(lids.ok());
    ASSERT_EQ(lids->size(), 1u);
    EXPECT_EQ((*lids)[0].base.value, 200u);
    auto evs = w.call([](Store& st) { return st.events_since(0, 1000); }).get();
    ASSERT_TRUE(evs.ok());
    ASSERT_EQ(evs->size(), 200u);
    EXPECT_EQ(evs->back().message, "200");
    {
      std::lock_guard lock(mu);
      ASSERT_EQ(errors.size(), 1u);
      EXPECT_NE(errors[0].find("not valid JSON"), std::string::npos);
    }
    // Queued and never flushed: performed by close().
    for (int i = 0; i < 50; ++i) {
      w.append_event({202 + i, at_us(i), EventKind::kSweep, {}, {}, "", ""});
    }
    w.close();
    auto after = w.call([](Store& st) { return st.last_event_id(); });
    EXPECT_THROW((void)after.get(), std::future_error);
  }
  auto reopened = open_ok();
  ASSERT_TRUE(reopened);
  auto evs = reopened->events_since(0, 1000);
  ASSERT_TRUE(evs.ok());
  EXPECT_EQ(evs->size(), 250u);
}

// The property the daemon promises: after kill -9 at any moment, every GUID
// keeps the LID of the last committed save. A child writes a full LID set per
// transaction ("generation" g gives port i the LID 1 + (7g + i) mod 49000) and
// reports each commit through a pipe; the parent kills it at a random moment,
// reopens the store and finds exactly one generation: the last one reported,
// or the one whose commit landed just before the report could be written.
TEST_F(StoreTest, KillNineLosesNoCommittedLids) {
  constexpr unsigned kSeed = 20240611;
  constexpr int kPorts = 300;
  constexpr int kRounds = 12;
  std::printf("kill -9 test seed %u\n", kSeed);
  std::mt19937 rng(kSeed);
  auto generation = [](std::int64_t g) {
    std::vector<LidRecord> v;
    for (int i = 0; i < kPorts; ++i) {
      v.push_back({Guid{0xf452140000000000ull + static_cast<std::uint64_t>(i)},
                   Lid{static_cast<std::uint32_t>(1 + (7 * g + i) % 49000)}});
    }
    std::sort(v.begin(), v.end());
    return v;
  };

  std::int64_t on_disk = 0;  // the generation the store holds (0 = none yet)
  std::int64_t total_commits = 0;
  for (int round = 0; round < kRounds; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto st = Store::open(path_);
      if (!st.ok()) _exit(2);
      auto last_event = (*st)->last_event_id();
      if (!last_event.ok()) _exit(2);
      std::int64_t event_id = *last_event;
      for (std::int64_t g = on_disk + 1;; ++g) {
        const auto lids = generation(g);
        if (!(*st)->save_lids(lids, 0).ok()) _exit(3);
        if (!(*st)->append_event({++event_id, at_us(g), EventKind::kSweep, {}, {}, "", ""}).ok()) {
          _exit(4);
        }
        if (write(fds[1], &g, sizeof g) != sizeof g) _exit(5);
      }
    }
    close(fds[1]);
    // Wait for the first commit so that the kill lands amid the write loop,
    // then for a random number of further commits (0..40): each report is
    // the event itself, so nothing here waits "long enough".
    std::int64_t reported = on_disk;
    std::int64_t g = 0;
    const bool started = read(fds[0], &g, sizeof g) == sizeof g;
    if (started) reported = g;
    for (int more = std::uniform_int_distribution<int>(0, 40)(rng); started && more > 0; --more) {
      if (read(fds[0], &g, sizeof g) != sizeof g) break;
      reported = g;
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(started) << "child exited before its first commit, status " << status;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child stopped by itself, status " << status;
    while (read(fds[0], &g, sizeof g) == sizeof g) reported = g;
    close(fds[0]);
    total_commits += reported - on_disk;

    auto st = Store::open(path_);
    ASSERT_TRUE(st.ok()) << "round " << round << ": " << st.error().message;
    auto lids = (*st)->load_lids();
    ASSERT_TRUE(lids.ok()) << lids.error().message;
    if (lids->empty()) {
      ASSERT_EQ(reported, 0) << "round " << round << ": committed LIDs lost";
      on_disk = 0;
    } else if (*lids == generation(reported)) {
      on_disk = reported;
    } else {
      ASSERT_EQ(*lids, generation(reported + 1))
          << "round " << round << ": the store holds neither generation " << reported << " nor "
          << reported + 1;
      on_disk = reported + 1;
    }
    ASSERT_TRUE((*st)->check_integrity().ok());
  }
  std::printf("kill -9 test: %lld commits over %d kills, final generation %lld\n",
              static_cast<long long>(total_commits), kRounds, static_cast<long long>(on_disk));
  EXPECT_GE(total_commits, kRounds);  // every round committed before its kill
}

}  // namespace
}  // namespace subnetd::daemon

// state::EventLog: id assignment, the bounded ring, persistence order through
// a real Store + StoreWriter (the store keeps the log's ids, also past a failed
// write), reads that fall back to the store (and jump a gap), waiting and
// closing.

#include "state/event_log.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/store.hpp"

namespace subnetd::daemon {
namespace {

using namespace subnetd::state;

using namespace std::chrono_literals;

WallTime at_us(std::int64_t us) {
  return WallTime{std::chrono::microseconds{us}};
}

EventLogOptions opts_with(std::size_t ring) {
  EventLogOptions o;
  o.ring_capacity = ring;
  // Atomic: append() reads the clock from every appending thread.
  auto tick = std::make_shared<std::atomic<std::int64_t>>(1'700'000'000'000'000);
  o.clock = [tick] { return at_us((*tick)++); };
  return o;
}

std::vector<std::int64_t> ids(const std::vector<Event>& evs) {
  std::vector<std::int64_t> out;
  for (const Event& e : evs) out.push_back(e.id);
  return out;
}

TEST(EventLog, IdsContinueFromTheGivenLastId) {
  std::vector<Event> persisted;
  EventLog log(
      41, [&](const Event& e) { persisted.push_back(e); }, {}, opts_with(100));
  EXPECT_EQ(log.last_id(), 41);
  EXPECT_EQ(log.oldest_in_memory(), 42);
  EXPECT_EQ(log.append(EventKind::kLinkDown, Guid{0x10}, PortNum{3}, "leaf0[3] down"), 42);
  EXPECT_EQ(log.append(EventKind::kReroute, std::nullopt, std::nullopt, "repaired", "{\"lids\":4}"),
            43);
  EXPECT_EQ(log.last_id(), 43);
  ASSERT_EQ(persisted.size(), 2u);
  EXPECT_EQ(persisted[0].id, 42);
  EXPECT_EQ(persisted[0].kind, EventKind::kLinkDown);
  EXPECT_EQ(persisted[0].node_guid, Guid{0x10});
  EXPECT_EQ(persisted[0].port, PortNum{3});
  EXPECT_EQ(persisted[1].details_json, "{\"lids\":4}");
  EXPECT_LT(persisted[0].ts, persisted[1].ts);

  auto all = log.recent_since(41, 10);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(ids(*all), (std::vector<std::int64_t>{42, 43}));
  EXPECT_EQ((*all)[0], persisted[0]);
  auto none = log.recent_since(43, 10);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  auto limited = log.recent_since(0, 1);  // older than memory
  EXPECT_FALSE(limited.has_value());
}

TEST(EventLog, RingKeepsTheNewestAndLimitsReads) {
  EventLog log(0, {}, {}, opts_with(5));
  for (int i = 0; i < 12; ++i) log.append(EventKind::kSweep, std::nullopt, std::nullopt, "s");
  EXPECT_EQ(log.last_id(), 12);
  EXPECT_EQ(log.oldest_in_memory(), 8);
  EXPECT_FALSE(log.recent_since(6, 10).has_value());
  auto r = log.recent_since(7, 10);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ids(*r), (std::vector<std::int64_t>{8, 9, 10, 11, 12}));
  auto two = log.recent_since(9, 2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(ids(*two), (std::vector<std::int64_t>{10, 11}));
  // No history callback: a read from before memory jumps the gap.
  auto jumped = log.since(2, 3);
  ASSERT_TRUE(jumped.ok());
  EXPECT_EQ(ids(*jumped), (std::vector<std::int64_t>{8, 9, 10}));
}

class EventLogStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("event_log_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Write errors fail the test unless `on_error` takes them.
  std::unique_ptr<StoreWriter> open_writer(OpenOptions opts = {},
                                           StoreWriter::ErrorHandler on_error = {}) {
    auto s = Store::open(db_path(), std::move(opts));
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    last_id_at_open_ = s.value()->last_event_id().value();
    if (!on_error) {
      on_error = [](const Error& e) { ADD_FAILURE() << "store write failed: " << e.message; };
    }
    return std::make_unique<StoreWriter>(std::move(s).value(), std::move(on_error));
  }
  std::string db_path() const { return (dir_ / "subnetd.db").string(); }

  static EventLog::HistoryReader history_of(StoreWriter& w, std::atomic<int>* calls = nullptr) {
    return [&w, calls](std::int64_t after, std::size_t limit) {
      if (calls) ++*calls;
      return w.call([after, limit](Store& s) { return s.events_since(after, limit); }).get();
    };
  }

  std::filesystem::path dir_;
  std::int64_t last_id_at_open_ = -1;
};

TEST_F(EventLogStore, PersistedIdsMatchAndOldReadsComeFromTheStore) {
  auto writer = open_writer();
  ASSERT_EQ(last_id_at_open_, 0);
  std::atomic<int> history_calls = 0;
  {
    EventLog log(
        last_id_at_open_, [&](const Event& e) { writer->append_event(e); },
        history_of(*writer, &history_calls), opts_with(4));
    for (int i = 1; i <= 10; ++i) {
      log.append(i % 2 ? EventKind::kLinkDown : EventKind::kLinkUp, Guid{0x100u + i}, PortNum(i),
                 "event " + std::to_string(i));
    }
    writer->flush();
    // Ids 1..6 are only in the store now.
    auto old = log.since(0, 3);
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(ids(*old), (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ((*old)[1].message, "event 2");
    EXPECT_EQ((*old)[1].kind, EventKind::kLinkUp);
    EXPECT_EQ((*old)[1].node_guid, Guid{0x102});
    EXPECT_EQ(history_calls.load(), 1);
    auto mid = log.since(5, 100);  // 6 from the store (memory starts at 7)
    ASSERT_TRUE(mid.ok());
    EXPECT_EQ(ids(*mid), (std::vector<std::int64_t>{6, 7, 8, 9, 10}));
    auto recent = log.since(8, 100);  // memory only
    ASSERT_TRUE(recent.ok());
    EXPECT_EQ(ids(*recent), (std::vector<std::int64_t>{9, 10}));
    EXPECT_EQ(history_calls.load(), 2);
  }
  writer.reset();
  // A restart continues the ids where the store left off.
  auto writer2 = open_writer();
  EXPECT_EQ(last_id_at_open_, 10);
  EventLog log2(
      last_id_at_open_, [&](const Event& e) { writer2->append_event(e); }, history_of(*writer2),
      opts_with(4));
  EXPECT_EQ(log2.append(EventKind::kSmState, std::nullopt, std::nullopt, "restarted"), 11);
  writer2->flush();
  auto across = log2.since(8, 100);
  ASSERT_TRUE(across.ok());
  EXPECT_EQ(ids(*across), (std::vector<std::int64_t>{9, 10, 11}));  // the store's batch
  auto rest = log2.since(10, 100);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(ids(*rest), (std::vector<std::int64_t>{11}));
  EXPECT_EQ((*rest)[0].message, "restarted");
}

// The drift this guards against: the store used to number events itself, so
// after one failed write every later event sat under the previous id, and a
// client resuming from an id it had been streamed got the wrong events.
TEST_F(EventLogStore, AFailedWriteLeavesAGapAndLaterIdsStillMatch) {
  OpenOptions o;
  o.busy_timeout = 20ms;  // the lock below makes the write fail, not wait
  std::vector<std::string> errors;
  std::mutex mu;
  auto writer = open_writer(o, [&](const Error& e) {
    std::lock_guard lock(mu);
    errors.push_back(e.message);
  });
  ASSERT_EQ(last_id_at_open_, 0);
  auto message = [](std::int64_t id) { return "event " + std::to_string(id); };
  {
    EventLog log(
        last_id_at_open_, [&](const Event& e) { writer->append_event(e); }, history_of(*writer),
        opts_with(2));
    auto append = [&] {
      const std::int64_t next = log.last_id() + 1;
      return log.append(EventKind::kLinkDown, Guid{0x100}, PortNum{1}, message(next));
    };
    for (int i = 0; i < 3; ++i) append();
    writer->flush();

    // Another connection holds the write lock: event 4's write fails.
    sqlite3* locker = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &locker), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(locker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_EQ(append(), 4);
    writer->flush();
    ASSERT_EQ(sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(locker);
    {
      std::lock_guard lock(mu);
      ASSERT_EQ(errors.size(), 1u);
      EXPECT_NE(errors[0].find("append link_down event 4"), std::string::npos) << errors[0];
    }

    for (int i = 0; i < 3; ++i) append();
    writer->flush();
    EXPECT_EQ(log.last_id(), 7);

    // The store holds every id the log handed out but the failed one, each
    // with its own event.
    auto stored = writer->call([](Store& s) { return s.events_since(0, 100); }).get();
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    EXPECT_EQ(ids(*stored), (std::vector<std::int64_t>{1, 2, 3, 5, 6, 7}));
    for (const Event& e : *stored) EXPECT_EQ(e.message, message(e.id));

    // A reader resuming after id 3 (memory holds only 6 and 7) is served
    // from the store and gets exactly the events after 3.
    auto resumed = log.since(3, 100);
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    EXPECT_EQ(ids(*resumed), (std::vector<std::int64_t>{5, 6, 7}));
    for (const Event& e : *resumed) EXPECT_EQ(e.message, message(e.id));
    auto memory = log.recent_since(5, 100);
    ASSERT_TRUE(memory.has_value());
    ASSERT_EQ(memory->size(), 2u);
    EXPECT_EQ((*memory)[0], (*resumed)[1]);
    EXPECT_EQ((*memory)[1], (*resumed)[2]);
  }
  writer.reset();

  // A restart continues after the largest stored id.
  auto writer2 = open_writer();
  EXPECT_EQ(last_id_at_open_, 7);
  EventLog log2(
      last_id_at_open_, [&](const Event& e) { writer2->append_event(e); }, history_of(*writer2),
      opts_with(2));
  EXPECT_EQ(log2.append(EventKind::kSmState, std::nullopt, std::nullopt, message(8)), 8);
  writer2->flush();
  auto stored = writer2->call([](Store& s) { return s.events_since(6, 100); }).get();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(ids(*stored), (std::vector<std::int64_t>{7, 8}));
  EXPECT_EQ(stored->back().message, message(8));
}

TEST(EventLog, HistoryErrorsAreReturned) {
  EventLog log(
      100, {},
      [](std::int64_t, std::size_t) -> Result<std::vector<Event>> {
        return Error{Errc::kIo, "store.db: disk I/O error"};
      },
      opts_with(10));
  log.append(EventKind::kError, std::nullopt, std::nullopt, "x");
  auto r = log.since(50, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kIo);
  EXPECT_NE(r.error().message.find("disk I/O"), std::string::npos);
  // An empty answer from the store jumps the gap to memory.
  EventLog empty_store(
      100, {},
      [](std::int64_t, std::size_t) { return Result<std::vector<Event>>(std::vector<Event>{}); },
      opts_with(10));
  empty_store.append(EventKind::kError, std::nullopt, std::nullopt, "y");
  auto j = empty_store.since(10, 10);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(ids(*j), (std::vector<std::int64_t>{101}));
}

TEST(EventLog, WaitWakesOnAppendAndOnClose) {
  EventLog log(0, {}, {}, opts_with(10));
  EXPECT_FALSE(log.wait_for(0, 1ms));  // nothing yet: times out
  // A waiter on another thread; the append comes once it is about to wait
  // (before or after it blocks, it must see the event either way). The
  // 10 s bound only fails a broken wake-up; a passing run never waits it.
  std::promise<void> waiting;
  std::future<bool> woke = std::async(std::launch::async, [&] {
    waiting.set_value();
    return log.wait_for(0, 10s);
  });
  waiting.get_future().wait();
  log.append(EventKind::kLinkDown, std::nullopt, std::nullopt, "down");
  EXPECT_TRUE(woke.get());
  EXPECT_TRUE(log.wait_for(0, 0ms));  // already newer: no wait

  std::promise<void> waiting2;
  std::future<bool> woke2 = std::async(std::launch::async, [&] {
    waiting2.set_value();
    return log.wait_for(1, 10s);
  });
  waiting2.get_future().wait();
  log.close();
  EXPECT_FALSE(woke2.get());
  EXPECT_TRUE(log.closed());
  EXPECT_FALSE(log.wait_for(1, 10s));  // closed: returns at once
}

TEST(EventLog, ConcurrentAppendsPersistInIdOrder) {
  std::vector<std::int64_t> persisted;
  EventLog log(
      0, [&](const Event& e) { persisted.push_back(e.id); }, {}, opts_with(1000));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i)
        log.append(EventKind::kReroute, std::nullopt, std::nullopt, "r");
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(persisted.size(), 800u);
  for (std::size_t i = 0; i < persisted.size(); ++i) {
    ASSERT_EQ(persisted[i], static_cast<std::int64_t>(i + 1));
  }
  auto r = log.recent_since(0, 2000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->size(), 800u);
}

}  // namespace
}  // namespace subnetd::daemon

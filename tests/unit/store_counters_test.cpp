// The store's port counter history: per-sweep rows, hourly sums, pruning by
// age, and the writer that does both.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "daemon/store.hpp"

namespace subnetd::daemon {
namespace {

namespace fs = std::filesystem;

class StoreCounters : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/subnetd-counters-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto s = Store::open(dir_ + "/subnetd.db");
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(s).value();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static CounterRow row(int level, std::int64_t at, std::uint64_t symbol, std::uint64_t bytes) {
    CounterRow r;
    r.node_guid = Guid{0x8000'0000'0000'00AAULL};  // above 2^63: stored as a negative integer
    r.port = 7;
    r.level = level;
    r.at = at;
    r.seconds = 60;
    r.delta.symbol_errors = symbol;
    r.delta.xmit_bytes = bytes;
    return r;
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreCounters, SweepRowsAndHourlySums) {
  const std::int64_t hour = 1'800'000'000 - 1'800'000'000 % 3600;
  const std::vector<CounterRow> first = {row(0, hour + 60, 3, 1000), row(1, hour, 3, 1000)};
  ASSERT_TRUE(store_->record_counters(first).ok());
  const std::vector<CounterRow> second = {row(0, hour + 120, 2, 500), row(1, hour, 2, 500)};
  ASSERT_TRUE(store_->record_counters(second).ok());

  auto raw = store_->counter_history(first[0].node_guid, 7, 0, 0, 10);
  ASSERT_TRUE(raw.ok()) << raw.error().message;
  ASSERT_EQ(raw->size(), 2U);
  EXPECT_EQ((*raw)[0], first[0]);
  EXPECT_EQ((*raw)[1], second[0]);
  auto hourly = store_->counter_history(first[0].node_guid, 7, 1, 0, 10);
  ASSERT_TRUE(hourly.ok());
  ASSERT_EQ(hourly->size(), 1U);
  EXPECT_EQ((*hourly)[0].delta.symbol_errors, 5U);
  EXPECT_EQ((*hourly)[0].delta.xmit_bytes, 1500U);
  EXPECT_DOUBLE_EQ((*hourly)[0].seconds, 120.0);

  // Raw rows older than hour + 100 go; the hour's sum stays.
  auto gone = store_->prune_counters(hour + 100, hour - 3600);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, 1);
  EXPECT_EQ(*store_->counter_rows(0), 1);
  EXPECT_EQ(*store_->counter_rows(1), 1);
  ASSERT_TRUE(store_->prune_counters(hour + 100, hour + 1).ok());
  EXPECT_EQ(*store_->counter_rows(1), 0);
}

TEST_F(StoreCounters, TheWriterRecordsThenPrunes) {
  auto writer = std::make_unique<StoreWriter>(std::move(store_),
                                              [](const Error& e) { ADD_FAILURE() << e.message; });
  writer->record_counters({row(0, 1000, 1, 1), row(0, 5000, 1, 1)}, 2000, 0);
  auto rows = writer->call([](Store& s) { return s.counter_rows(0); }).get();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, 1);  // the row at 1000 was older than 2000
}

}  // namespace
}  // namespace subnetd::daemon

// Screener: the configured cabling plan compared at every new topology, the
// findings turned into events (new and cleared), and checks on demand.

#include "daemon/screening/screener.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "discovery/topo/generators.hpp"

namespace subnetd::daemon::screening {
namespace {

using namespace std::chrono_literals;

class ScreenerTest : public ::testing::Test {
 protected:
  ScreenerTest() : events(0, {}, {}) {
    auto t = discovery::topo::generate("fat-tree:levels=2,radix=8");
    EXPECT_TRUE(t.ok());
    planned = std::move(t).value();
  }

  void publish(routing::Topology t) {
    auto s = std::make_shared<state::FabricState>();
    s->generation = ++generation;
    s->state = state::SmState::kMaster;
    s->topology = std::make_shared<const routing::Topology>(std::move(t));
    publisher.publish(std::move(s));
  }

  // The events appended after `after`, waiting for at least `n` of them.
  std::vector<state::Event> events_after(std::int64_t after, std::size_t n) {
    std::vector<state::Event> got;
    while (got.size() < n) {
      const std::int64_t seen = got.empty() ? after : got.back().id;
      if (!events.wait_for(seen, 10s)) break;
      auto more = events.since(seen, 1000);
      if (!more.ok()) break;
      got.insert(got.end(), more->begin(), more->end());
    }
    return got;
  }

  routing::Topology planned;
  std::uint64_t generation = 0;
  state::StatePublisher publisher;
  state::EventLog events;
};

TEST_F(ScreenerTest, FindingsBecomeEventsAndClearedOnesSayWhenTheyGo) {
  Screener screener(publisher, events, plan_of(planned, "plan.net"));
  routing::Topology t = planned;
  const NodeId leaf = *t.find_by_name("leaf1");
  t.disconnect({leaf, 6});
  publish(t);
  screener.wake();
  // One finding (the unplugged uplink) and the summary.
  std::vector<state::Event> got = events_after(0, 2);
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].kind, state::EventKind::kCabling);
  EXPECT_EQ(got[0].node_guid, planned.node(leaf).guid);
  EXPECT_EQ(got[0].port, 6);
  EXPECT_NE(got[0].message.find("\"leaf1\" (0x0002c90000000001) port 6 has no link"),
            std::string::npos)
      << got[0].message;
  EXPECT_NE(got[0].details_json.find("\"finding\":\"missing cable\""), std::string::npos);
  EXPECT_NE(got[1].message.find("1 finding(s) against plan.net: 1 missing cable"),
            std::string::npos)
      << got[1].message;
  ASSERT_TRUE(screener.last());
  EXPECT_EQ(screener.last()->findings.size(), 1U);

  // The same topology again: nothing new to say. The cable back: cleared.
  screener.wake();
  publish(planned);
  screener.wake();
  got = events_after(got.back().id, 2);
  ASSERT_EQ(got.size(), 2U);
  EXPECT_NE(got[0].message.find("cabling: cleared: "), std::string::npos) << got[0].message;
  EXPECT_NE(got[1].message.find("the fabric matches plan.net (44 nodes, 64 cables)"),
            std::string::npos)
      << got[1].message;
}

// Room for one topology, used again once that one is destroyed: two
// topologies built in it one after the other have the same address, as a
// freed topology's successor may have from the heap. The control block is
// apart (shared_ptr with a deleter), so a weak_ptr to the first does not
// keep its room.
struct Slot {
  alignas(routing::Topology) unsigned char bytes[sizeof(routing::Topology)];
  std::atomic<bool> taken{false};

  std::shared_ptr<const routing::Topology> make(const routing::Topology& t) {
    EXPECT_FALSE(taken.exchange(true));
    const auto* p = new (bytes) routing::Topology(t);
    return std::shared_ptr<const routing::Topology>(p, [this](const routing::Topology* q) {
      q->~Topology();
      taken = false;
      taken.notify_all();
    });
  }
};

// A topology that follows a freed one at the same address is still a new
// topology: the screener compares it, where comparing addresses took it
// for the one it had checked and kept a cleared finding.
TEST_F(ScreenerTest, ANewTopologyWhereAFreedOneWasIsComparedAgain) {
  Screener screener(publisher, events, plan_of(planned, "plan.net"));
  Slot slot;
  auto publish_in_slot = [&](const routing::Topology& t) {
    auto s = std::make_shared<state::FabricState>();
    s->generation = ++generation;
    s->state = state::SmState::kMaster;
    s->topology = slot.make(t);
    publisher.publish(std::move(s));
  };
  auto publish_bare = [&] {
    auto s = std::make_shared<state::FabricState>();
    s->generation = ++generation;
    s->state = state::SmState::kMaster;
    publisher.publish(std::move(s));
  };
  // However the test ends, the slot outlives its topology.
  const std::shared_ptr<void> release(nullptr, [&](void*) {
    publish_bare();
    slot.taken.wait(true);
  });
  routing::Topology unplugged = planned;
  unplugged.disconnect({*unplugged.find_by_name("leaf1"), 6});
  publish_in_slot(unplugged);
  const void* first = publisher.current()->topology.get();
  screener.wake();
  std::vector<state::Event> got = events_after(0, 2);
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].port, 6);

  // A snapshot without a topology destroys the first (once the
  // screener's own reference to it goes), and the fixed fabric takes its
  // place.
  publish_bare();
  slot.taken.wait(true);
  publish_in_slot(planned);
  ASSERT_EQ(publisher.current()->topology.get(), first);
  screener.wake();
  got = events_after(got.back().id, 2);
  ASSERT_EQ(got.size(), 2U);
  EXPECT_NE(got[0].message.find("cabling: cleared: "), std::string::npos) << got[0].message;
  EXPECT_NE(got[1].message.find("the fabric matches plan.net"), std::string::npos)
      << got[1].message;
}

TEST_F(ScreenerTest, ChecksOnDemandWithTheConfiguredPlanOrAGivenOne) {
  Screener screener(publisher, events, std::nullopt);
  auto none = screener.check_cabling(nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::kNotFound);

  const state::CablingPlanText text{state::CablingPlanText::Format::kAuto, "p.yaml",
                                    "nodes:\n  - {name: leaf0, type: switch}\n"};
  auto early = screener.check_cabling(&text);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().code, Errc::kUnreachable);

  publish(planned);
  auto r = screener.check_cabling(&text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->plan, "p.yaml");
  EXPECT_EQ(r->generation, generation);
  // leaf0 matches; everything else is unexpected.
  EXPECT_EQ(r->findings.size(), 43U);

  const state::CablingPlanText bad{state::CablingPlanText::Format::kAuto, "p.yaml", "nodes: 7\n"};
  auto parse = screener.check_cabling(&bad);
  ASSERT_FALSE(parse.ok());
  EXPECT_NE(parse.error().message.find("p.yaml:1:8: nodes: expected a list"), std::string::npos)
      << parse.error().message;

  screener.set_plan(plan_of(planned, "configured"));
  auto configured = screener.check_cabling(nullptr);
  ASSERT_TRUE(configured.ok());
  EXPECT_TRUE(configured->findings.empty());
}

}  // namespace
}  // namespace subnetd::daemon::screening

// InformInfo subscriptions and the Reports they bring: subscribing and
// unsubscribing by Set, InformInfoRecords, which notices a published
// change makes (GID out of/in service, link state changes) and which
// subscribers they reach, ReportResps counted; the Reporter that sends
// them compares every publish with the one before it; traps the SM
// received are forwarded to those who ask, in order with the changes.

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "daemon/sa/inform.hpp"
#include "daemon/sa/reporter.hpp"
#include "discovery/mad/bytes.hpp"
#include "sa_test_support.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::daemon::sa {
namespace {

class SaInformTest : public SaAgentTest {
 protected:
  void SetUp() override {
    SaAgentTest::SetUp();
    // As a bring-up leaves them: every cabled port ACTIVE.
    for (std::uint32_t i = 0; i < topo_->num_nodes(); ++i) {
      for (PortNum p = 1; p <= topo_->node(NodeId{i}).num_ports; ++p) {
        if (topo_->port(NodeId{i}, p).connected()) {
          topo_->mutable_port(NodeId{i}, p).state = routing::PortState::kActive;
        }
      }
    }
  }
  // An InformInfo Set from `from`: every notice (GID 0, all LIDs, all
  // types, traps and producers) unless `trap` narrows it.
  mad::SaMad inform(bool subscribe, std::uint16_t trap = 0xFFFF, std::uint8_t generic = 1,
                    std::uint32_t qpn = 1) const {
    mad::SaMad q = sa_inform(subscribe, trap);
    set(q, "IsGeneric", generic);
    set(q, "QPN", qpn);
    return q;
  }
  std::uint16_t status(const mad::SaMad& q, PortRef from) {
    return status_of(agent_.answer(mad::encode_sa(q), lid_of(from), state_));
  }
  std::vector<std::vector<std::uint8_t>> records(PortRef from) {
    return table(agent_.answer(mad::encode_sa(request(Method::kGetTable, Attr::kInformInfoRecord)),
                               lid_of(from), state_));
  }
  // The snapshot after `port`'s link went down (the CA's end and the
  // switch's), from `before` (state_ unless given).
  state::FabricState without(PortRef port) const { return without(state_, port); }
  static state::FabricState without(const state::FabricState& before, PortRef port) {
    auto t = std::make_shared<routing::Topology>(*before.topology);
    const routing::Port& p = t->port(port);
    t->mutable_port(p.remote_node, p.remote_port).state = routing::PortState::kDown;
    t->mutable_port(port.node, port.port).state = routing::PortState::kDown;
    state::FabricState after = before;
    after.topology = t;
    after.generation = before.generation + 1;
    return after;
  }
  std::uint64_t guid_of(PortRef p) const { return topo_->port(p).guid.value; }
  // For a Reporter: state_ published as generation 1, then `sub`
  // subscribed to every notice.
  void publish_and_subscribe(state::StatePublisher& publisher, PortRef sub) {
    state_.generation = 1;
    publisher.publish(std::make_shared<const state::FabricState>(state_));
    ASSERT_EQ(status(inform(true), sub), 0);
  }
};

TEST_F(SaInformTest, SubscribeListAndUnsubscribe) {
  const PortRef a = ca_ports_[0];
  const auto answer = agent_.answer(mad::encode_sa(inform(true)), lid_of(a), state_);
  ASSERT_EQ(status_of(answer), 0);
  const auto resp = mad::decode_sa(answer.front());
  EXPECT_EQ(resp->method, static_cast<std::uint8_t>(Method::kGetResp));
  EXPECT_EQ(get(Attr::kInformInfo, {resp->data.begin(), resp->data.end()}, "QPN"), 1U);
  // The same subscription again replaces it.
  ASSERT_EQ(status(inform(true), a), 0);
  const auto recs = records(ca_ports_[1]);
  ASSERT_EQ(recs.size(), 1U);
  EXPECT_EQ(discovery::mad::load_be64(&recs[0][8]), guid_of(a)) << "the subscriber's GID";
  EXPECT_EQ(discovery::mad::load_be64(&recs[0][0]), 0xFE80'0000'0000'0000ULL);
  EXPECT_EQ(get(Attr::kInformInfoRecord, recs[0], "InformInfo.TrapNumber"), 0xFFFFU);
  EXPECT_EQ(agent_.stats().subscriptions, 1U);

  ASSERT_EQ(status(inform(false), a), 0);
  EXPECT_TRUE(records(a).empty());
  EXPECT_EQ(status(inform(false), a), mad::status::kReqInvalid) << "nothing to remove";
  EXPECT_EQ(status(inform(true, 0xFFFF, 0), a), mad::status::kReqInvalid) << "vendor notices";
  EXPECT_EQ(status(inform(true, 0xFFFF, 1, 0), a), mad::status::kReqInvalid) << "QP0";
  mad::SaMad get = inform(true);
  get.method = static_cast<std::uint8_t>(Method::kGet);
  EXPECT_EQ(status(get, a), mad::status::kMethodAttrUnsupported);
}

TEST_F(SaInformTest, ALostPortIsReportedToItsSubscribers) {
  const PortRef sub = ca_ports_[0], gone = ca_ports_[2], picky = ca_ports_[1];
  ASSERT_EQ(status(inform(true), sub), 0);
  ASSERT_EQ(status(inform(true, 64), picky), 0);  // in service only: not told
  const state::FabricState after = without(gone);
  const std::vector<Report> reports = agent_.reports(state_, after);
  // Trap 65 for the CA port, trap 128 from its switch, both to `sub`.
  ASSERT_EQ(reports.size(), 2U);
  bool saw65 = false, saw128 = false;
  for (const Report& r : reports) {
    EXPECT_EQ(r.dlid, lid_of(sub).value);
    EXPECT_EQ(r.qpn, 1U);
    const auto m = mad::decode_sa(r.mad);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->method, static_cast<std::uint8_t>(Method::kReport));
    EXPECT_EQ(m->attr_id, static_cast<std::uint16_t>(Attr::kNotice));
    const auto n = discovery::mad::Notice::decode(discovery::mad::ConstSmpData(m->data.data(), 64));
    EXPECT_TRUE(n.is_generic);
    if (n.trap_number == 65) {
      saw65 = true;
      EXPECT_EQ(n.type, 3U);
      EXPECT_EQ(n.producer_type, 4U);
      EXPECT_EQ(discovery::mad::load_be64(&m->data[16 + 8]), guid_of(gone)) << "the GID lost";
    } else if (n.trap_number == 128) {
      saw128 = true;
      const NodeId sw = topo_->port(gone).remote_node;
      EXPECT_EQ(n.issuer_lid, lid_of({sw, 0}).value);
      EXPECT_EQ(discovery::mad::load_be64(&m->data[64 + 8]), topo_->port(sw, 0).guid.value);
    }
  }
  EXPECT_TRUE(saw65);
  EXPECT_TRUE(saw128);
  EXPECT_EQ(agent_.stats().reports, 2U);
  // Back in service: trap 64, which `picky` wants too.
  const auto back = agent_.reports(after, [&] {
    state::FabricState s = state_;
    s.generation = after.generation + 1;
    s.topology = std::make_shared<routing::Topology>(*topo_);
    return s;
  }());
  std::size_t to_picky = 0;
  for (const Report& r : back) {
    if (r.dlid == lid_of(picky).value) ++to_picky;
  }
  EXPECT_EQ(to_picky, 1U);

  // The subscriber answers; a ReportResp is counted, not answered.
  mad::SaMad ack = mad::decode_sa(reports.front().mad).value();
  ack.method = static_cast<std::uint8_t>(Method::kReportResp);
  EXPECT_TRUE(agent_.answer(mad::encode_sa(ack), lid_of(sub), state_).empty());
  EXPECT_EQ(agent_.stats().report_acks, 1U);
}

TEST_F(SaInformTest, ASubscriberThatLeavesLosesItsSubscriptions) {
  const PortRef sub = ca_ports_[0];
  ASSERT_EQ(status(inform(true), sub), 0);
  // Nothing changes: no reports, no work.
  EXPECT_TRUE(agent_.reports(state_, state_).empty());
  const state::FabricState after = without(sub);
  agent_.reports(state_, after);
  EXPECT_EQ(agent_.stats().subscriptions, 0U);
}

TEST_F(SaInformTest, GidAndLidRangeNarrowTheIssuer) {
  const PortRef sub = ca_ports_[0], gone = ca_ports_[2];
  const NodeId sw = topo_->port(gone).remote_node;
  // Only notices issued by LIDs of the switch: its trap 128, not the
  // SM's trap 65.
  mad::SaMad q = inform(true);
  set(q, "LIDRangeBegin", lid_of({sw, 0}).value);
  set(q, "LIDRangeEnd", 0);
  ASSERT_EQ(status(q, sub), 0);
  const auto reports = agent_.reports(state_, without(gone));
  ASSERT_EQ(reports.size(), 1U);
  const auto m = mad::decode_sa(reports.front().mad);
  EXPECT_EQ(discovery::mad::load_be16(&m->data[4]), 128U);
}

TEST_F(SaInformTest, AChangeBeforeTheSubscriptionIsNotReported) {
  const PortRef sub = ca_ports_[0], gone = ca_ports_[2];
  // The subscriber asked against generation 7, in which `gone` was up;
  // the Reporter had yet to compare 6 (`gone` down) with 7.
  state_.generation = 7;
  state::FabricState earlier = without(gone);
  earlier.generation = 6;
  ASSERT_EQ(status(inform(true), sub), 0);
  EXPECT_TRUE(agent_.reports(earlier, state_).empty()) << "trap 64 predates the subscription";
  // What changed after 7 it hears of.
  const state::FabricState at7 = state_, down8 = without(gone);
  EXPECT_EQ(agent_.reports(at7, down8).size(), 2U);
  // Subscribing again (answered against 9) keeps the first generation:
  // still told of 7 -> 8.
  state_.generation = 9;
  ASSERT_EQ(status(inform(true), sub), 0);
  EXPECT_EQ(agent_.reports(at7, down8).size(), 2U);
}

// A multicast group created is trap 66, deleted 67, with its MGID where
// the GID goes; a subscription for one of them hears of that one only.
TEST_F(SaInformTest, MulticastGroupsCreatedAndDeletedAreReported) {
  const PortRef all = ca_ports_[0], created_only = ca_ports_[1];
  ASSERT_EQ(status(inform(true), all), 0);
  ASSERT_EQ(status(inform(true, 66), created_only), 0);
  state::McastGroup g;
  g.mgid = state::ipoib_broadcast_mgid(0x7FFF);
  g.mgid[15] = 0x42;
  g.mlid = Lid{0xC001};
  state::FabricState with = state_;
  with.generation = state_.generation + 1;
  with.mcast_groups = std::make_shared<const std::vector<state::McastGroup>>(1, g);
  state::FabricState without_group = with;
  without_group.generation = with.generation + 1;
  without_group.mcast_groups = std::make_shared<const std::vector<state::McastGroup>>();

  auto heard = [&](const std::vector<Report>& reports) {
    std::vector<std::pair<std::uint16_t, std::uint16_t>> out;  // (DLID, trap)
    for (const Report& r : reports) {
      const auto m = mad::decode_sa(r.mad);
      EXPECT_TRUE(m.ok());
      const auto n =
          discovery::mad::Notice::decode(discovery::mad::ConstSmpData(m->data.data(), 64));
      EXPECT_EQ(n.type, 3U);
      EXPECT_EQ(n.producer_type, 4U);
      EXPECT_TRUE(std::equal(g.mgid.begin(), g.mgid.end(), m->data.begin() + 16)) << "the MGID";
      out.emplace_back(static_cast<std::uint16_t>(r.dlid), n.trap_number);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<std::pair<std::uint16_t, std::uint16_t>> want{
      {static_cast<std::uint16_t>(lid_of(all).value), 66},
      {static_cast<std::uint16_t>(lid_of(created_only).value), 66}};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(heard(agent_.reports(state_, with)), want);
  want = {{static_cast<std::uint16_t>(lid_of(all).value), 67}};
  EXPECT_EQ(heard(agent_.reports(with, without_group)), want);
  // A member joining an existing group is no notice.
  state::FabricState joined = with;
  joined.generation = without_group.generation + 1;
  g.members[topo_->port(all).guid] = 1;
  joined.mcast_groups = std::make_shared<const std::vector<state::McastGroup>>(1, g);
  EXPECT_TRUE(agent_.reports(with, joined).empty());
}

// The Reporter behind on its sends: the publishes made meanwhile are each
// compared with the one before, so a port that went down and came back
// while it was busy is reported twice, in order.
// A Bad P_Key trap (257) as a CA's SMA sends it: security, from a CA,
// the IssuerLID `issuer`'s, some details.
discovery::mad::Notice bad_pkey_trap(Lid issuer) {
  discovery::mad::Notice n;
  n.is_generic = true;
  n.type = 2;
  n.producer_type = 1;
  n.trap_number = 257;
  n.issuer_lid = static_cast<std::uint16_t>(issuer.value);
  n.data_details[2] = 0x12;  // LID1 and LID2, the keys, the QPs: as received
  n.data_details[3] = 0x34;
  return n;
}

TEST_F(SaInformTest, AReceivedTrapIsForwardedToTheSubscribersThatAskForIt) {
  const PortRef everything = ca_ports_[0], bad_keys = ca_ports_[1], links = ca_ports_[2];
  const PortRef issuer = ca_ports_[3];
  ASSERT_EQ(status(inform(true), everything), 0);
  ASSERT_EQ(status(inform(true, 257), bad_keys), 0);
  ASSERT_EQ(status(inform(true, 128), links), 0);
  const std::vector<Report> reports = agent_.forward(bad_pkey_trap(lid_of(issuer)), state_);
  std::vector<std::uint32_t> to;
  for (const Report& r : reports) {
    to.push_back(r.dlid);
    const auto m = mad::decode_sa(r.mad);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->method, static_cast<std::uint8_t>(Method::kReport));
    const auto n = discovery::mad::Notice::decode(discovery::mad::ConstSmpData(m->data.data(), 64));
    EXPECT_EQ(n, bad_pkey_trap(lid_of(issuer))) << "the notice as received";
    EXPECT_EQ(discovery::mad::load_be64(&m->data[64 + 8]), guid_of(issuer)) << "its IssuerGID";
  }
  std::sort(to.begin(), to.end());
  std::vector<std::uint32_t> want{lid_of(everything).value, lid_of(bad_keys).value};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(to, want);
  // A LID range that leaves the issuer out: no more Reports.
  mad::SaMad range = inform(true, 257);
  set(range, "LIDRangeBegin", lid_of(issuer).value + 1);
  set(range, "LIDRangeEnd", lid_of(issuer).value + 5);
  ASSERT_EQ(status(range, links), 0);
  EXPECT_EQ(agent_.forward(bad_pkey_trap(lid_of(issuer)), state_).size(), 2U);
}

TEST_F(SaInformTest, TheReporterForwardsTrapsInOrderWithTheChanges) {
  const PortRef sub = ca_ports_[0], gone = ca_ports_[1], issuer = ca_ports_[3];
  state::StatePublisher publisher;
  ASSERT_NO_FATAL_FAILURE(publish_and_subscribe(publisher, sub));
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::uint16_t> heard;  // trap numbers but 128
  Reporter reporter(agent_, publisher, [&](const Report& r) -> Result<void> {
    const auto m = mad::decode_sa(r.mad);
    const std::uint16_t trap = discovery::mad::load_be16(&m->data[4]);
    std::lock_guard lock(mu);
    if (trap != 128) heard.push_back(trap);
    cv.notify_all();
    return {};
  });
  reporter.forward(bad_pkey_trap(lid_of(issuer)));
  publisher.publish(std::make_shared<const state::FabricState>(without(gone)));
  reporter.wake();
  discovery::mad::Notice bad_qkey = bad_pkey_trap(lid_of(issuer));
  bad_qkey.trap_number = 258;
  reporter.forward(bad_qkey);
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return heard.size() >= 3; }))
      << heard.size() << " notices heard";
  EXPECT_EQ(heard, (std::vector<std::uint16_t>{257, 65, 258}));
}

TEST_F(SaInformTest, TheReporterReportsEveryPublishInOrder) {
  const PortRef sub = ca_ports_[0], first = ca_ports_[1], flapped = ca_ports_[2];
  state::StatePublisher publisher;
  ASSERT_NO_FATAL_FAILURE(publish_and_subscribe(publisher, sub));

  std::mutex mu;
  std::condition_variable cv;
  bool sending = false, release = false;
  std::vector<std::pair<std::uint16_t, std::uint64_t>> heard;  // trap, subject GUID
  Reporter reporter(agent_, publisher, [&](const Report& r) -> Result<void> {
    const auto m = mad::decode_sa(r.mad);
    std::unique_lock lock(mu);
    sending = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });  // held until the test has published
    const std::uint16_t trap = discovery::mad::load_be16(&m->data[4]);
    if (trap == 64 || trap == 65) heard.emplace_back(trap, discovery::mad::load_be64(&m->data[24]));
    cv.notify_all();
    return {};
  });
  auto publish = [&](const state::FabricState& s) {
    publisher.publish(std::make_shared<const state::FabricState>(s));
    reporter.wake();
  };
  const state::FabricState one_down = without(first);
  publish(one_down);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return sending; }))
        << "the first change was not reported";
  }
  const state::FabricState both_down = without(one_down, flapped);
  publish(both_down);
  state::FabricState back = one_down;
  back.generation = both_down.generation + 1;
  publish(back);
  std::unique_lock lock(mu);
  release = true;
  cv.notify_all();
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return heard.size() >= 3; }))
      << heard.size() << " GID notices heard";
  const std::vector<std::pair<std::uint16_t, std::uint64_t>> want{
      {65, guid_of(first)}, {65, guid_of(flapped)}, {64, guid_of(flapped)}};
  EXPECT_EQ(heard, want);
}

}  // namespace
}  // namespace subnetd::daemon::sa

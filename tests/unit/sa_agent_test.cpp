// SA agent tests over a generated, routed fat tree: ClassPortInfo,
// NodeRecord, LinkRecord and PathRecord queries with component masks, Get
// versus GetTable, and the statuses of what the agent does not serve.

#include "daemon/sa/sa_agent.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "discovery/mad/sa.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/worker_pool.hpp"
#include "sa_test_support.hpp"

namespace subnetd::daemon::sa {
namespace {

namespace mad = discovery::mad::sa;
using mad::Attr;
using mad::Method;

TEST_F(SaAgentTest, ClassPortInfoNamesClassVersionTwo) {
  auto a = ask(request(Method::kGet, Attr::kClassPortInfo));
  ASSERT_EQ(a.size(), 1u);
  auto r = mad::decode_sa(a.front());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->method, static_cast<std::uint8_t>(Method::kGetResp));
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(r->tid, 0x77u);
  EXPECT_EQ(r->data[1], mad::kClassVersion);
  // As OpenSM fills them: RespTimeValue 16, redirect and trap to QP1 with
  // the GSI Q_Key.
  EXPECT_EQ(r->data[7] & 0x1F, 16);
  // What it serves: UD multicast (CapabilityMask bit 9), MulticastFDBTop
  // (CapabilityMask2 bit 3, above the 5 bits of RespTimeValue).
  EXPECT_EQ(r->data[2], 0x02);
  EXPECT_EQ(r->data[3], 0x00);
  EXPECT_EQ(r->data[7] >> 5, 0);
  EXPECT_EQ(r->data[6], 0x01);
  EXPECT_EQ(r->data[35], 1);
  EXPECT_EQ(r->data[36], 0x80);
  EXPECT_EQ(r->data[37], 0x01);
  EXPECT_EQ(r->data[68], 0x80);
  EXPECT_EQ(r->data[69], 0x01);
}

TEST_F(SaAgentTest, NodeRecordTableHasEverySwitchAndCaPort) {
  auto recs = table(ask(request(Method::kGetTable, Attr::kNodeRecord)));
  EXPECT_EQ(recs.size(), switches_ + ca_ports_.size());
  std::set<std::uint64_t> lids;
  for (const auto& r : recs) {
    lids.insert(get(Attr::kNodeRecord, r, "LID"));
    const PortRef owner =
        lids_->owner_of(Lid{static_cast<std::uint32_t>(get(Attr::kNodeRecord, r, "LID"))});
    ASSERT_TRUE(owner.node.valid());
    EXPECT_EQ(get(Attr::kNodeRecord, r, "NodeGUID"), topo_->node(owner.node).guid.value);
    EXPECT_EQ(get(Attr::kNodeRecord, r, "PortGUID"), topo_->port(owner).guid.value);
    EXPECT_EQ(get(Attr::kNodeRecord, r, "NodeType"),
              static_cast<std::uint8_t>(topo_->node(owner.node).type));
  }
  EXPECT_EQ(lids.size(), recs.size());
}

TEST_F(SaAgentTest, NodeRecordGetByLidAnswersThatNodeOnly) {
  const PortRef ca = ca_ports_[2];
  auto q = request(Method::kGet, Attr::kNodeRecord, 1u << 0);  // LID
  set(q, "LID", lid_of(ca).value);
  auto a = ask(q);
  ASSERT_EQ(a.size(), 1u);
  auto r = mad::decode_sa(a.front());
  ASSERT_EQ(r->status, 0);
  std::vector<std::uint8_t> rec(r->data.begin(), r->data.begin() + 108);
  EXPECT_EQ(get(Attr::kNodeRecord, rec, "NodeGUID"), topo_->node(ca.node).guid.value);
  EXPECT_EQ(get(Attr::kNodeRecord, rec, "LocalPortNum"), ca.port);
  // Without the mask a Get matches every node: too many.
  EXPECT_EQ(status_of(ask(request(Method::kGet, Attr::kNodeRecord))), mad::status::kTooManyRecords);
  set(q, "LID", 0xBFFF);
  EXPECT_EQ(status_of(ask(q)), mad::status::kNoRecords);
}

TEST_F(SaAgentTest, NodeRecordFieldsComeFromTheSweep) {
  auto q = request(Method::kGetTable, Attr::kNodeRecord, 1u << 10);  // DeviceID
  set(q, "DeviceID", 0xCAFE);
  auto recs = table(ask(q));
  ASSERT_FALSE(recs.empty());
  for (const auto& r : recs) {
    EXPECT_EQ(get(Attr::kNodeRecord, r, "NodeGUID"), topo_->node(NodeId{0}).guid.value);
  }
}

TEST_F(SaAgentTest, PortInfoRecordsAreWhatTheSweepReadWithWhatTheSmSet) {
  const PortRef ca = ca_ports_.front();
  // The SM programmed the CA port: LID, LMC, MasterSMLID, ACTIVE.
  routing::Port& port = topo_->mutable_port(ca.node, ca.port);
  port.lid = lid_of(ca);
  port.lmc = 0;
  port.master_sm_lid = Lid{1};
  port.state = routing::PortState::kActive;
  auto q = request(Method::kGetTable, Attr::kPortInfoRecord, 1u << 0);
  set(q, "EndportLID", lid_of(ca).value);
  auto recs = table(ask(q));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "EndportLID"), lid_of(ca).value);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "PortNum"), ca.port);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "LID"), lid_of(ca).value);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "MasterSMLID"), 1u);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "PortState"), 4u);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "MTUCap"), 5u);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "CapabilityMask"), 0x02010048u);
  EXPECT_EQ(get(Attr::kPortInfoRecord, recs[0], "GidPrefix"), 0xFE80'0000'0000'0000ULL);

  // A switch's LID: every port, 0..N, as read (INIT, no LID programmed).
  const NodeId leaf = topo_->port(ca).remote_node;
  set(q, "EndportLID", lids_->base_lid(*topo_, leaf, 0).value);
  recs = table(ask(q));
  ASSERT_EQ(recs.size(), topo_->node(leaf).num_ports + 1u);
  for (std::size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(get(Attr::kPortInfoRecord, recs[i], "PortNum"), i);
    EXPECT_EQ(get(Attr::kPortInfoRecord, recs[i], "LocalPortNum"), i);
  }
  // Narrowed by PortNum too: one record, which Get answers.
  auto one = request(Method::kGet, Attr::kPortInfoRecord, (1u << 0) | (1u << 1));
  set(one, "EndportLID", lids_->base_lid(*topo_, leaf, 0).value);
  set(one, "PortNum", 2);
  EXPECT_EQ(status_of(ask(one)), 0);
  // Every port of the fabric the sweep read.
  std::size_t ports = 0;
  for (const NodeId n : topo_->switches()) ports += topo_->node(n).num_ports + 1u;
  for (std::uint32_t i = 0; i < topo_->num_nodes(); ++i) {
    if (topo_->node(NodeId{i}).type != routing::NodeType::kSwitch) {
      ports += topo_->node(NodeId{i}).num_ports;
    }
  }
  EXPECT_EQ(table(ask(request(Method::kGetTable, Attr::kPortInfoRecord))).size(), ports);
}

TEST_F(SaAgentTest, LinkRecordsFromOneLidAreItsCables) {
  const PortRef ca = ca_ports_[0];
  auto q = request(Method::kGetTable, Attr::kLinkRecord, 1u << 0);  // FromLID
  set(q, "FromLID", lid_of(ca).value);
  auto recs = table(ask(q));
  ASSERT_EQ(recs.size(), 1u);
  const routing::Port& p = topo_->port(ca);
  EXPECT_EQ(get(Attr::kLinkRecord, recs[0], "FromPort"), ca.port);
  EXPECT_EQ(get(Attr::kLinkRecord, recs[0], "ToPort"), p.remote_port);
  EXPECT_EQ(get(Attr::kLinkRecord, recs[0], "ToLID"),
            lids_->base_lid(*topo_, p.remote_node, 0).value);
  // Every direction of every cable once.
  auto all = table(ask(request(Method::kGetTable, Attr::kLinkRecord)));
  EXPECT_EQ(all.size(), 2 * topo_->num_links());
}

TEST_F(SaAgentTest, LftRecordsAreThePublishedTables) {
  // The first switch and its port-0 LID.
  NodeId sw;
  for (std::uint32_t i = 0; i < topo_->num_nodes() && !sw.valid(); ++i) {
    if (topo_->node(NodeId{i}).type == routing::NodeType::kSwitch) sw = NodeId{i};
  }
  ASSERT_TRUE(sw.valid());
  const Lid lid = lids_->base_lid(*topo_, sw, 0);
  const routing::Lft& lft = state_.routes->lfts[topo_->node(sw).switch_index.value];
  auto q = request(Method::kGet, Attr::kLftRecord, (1u << 0) | (1u << 1));
  set(q, "LID", lid.value);
  set(q, "BlockNum", 0);
  auto a = ask(q);
  ASSERT_EQ(a.size(), 1u);
  auto r = mad::decode_sa(a.front());
  ASSERT_EQ(r->status, 0) << std::hex << r->status;
  std::vector<std::uint8_t> rec(r->data.begin(), r->data.begin() + 72);
  EXPECT_EQ(get(Attr::kLftRecord, rec, "LID"), lid.value);
  // The ports follow 4 reserved bytes (byte 8), where saquery reads them.
  const auto block = lft.block(0);
  EXPECT_TRUE(std::equal(block.begin(), block.end(), rec.begin() + 8));
  // Every block of that switch up to the highest LID in use.
  auto all = table(ask(request(Method::kGetTable, Attr::kLftRecord, 1u << 0)));
  EXPECT_EQ(all.size(), 0u) << "LID 0 names no switch";
  auto t = request(Method::kGetTable, Attr::kLftRecord, 1u << 0);
  set(t, "LID", lid.value);
  auto blocks = table(ask(t));
  EXPECT_EQ(blocks.size(), state_.routes->max_lid.value / 64 + 1);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    EXPECT_EQ(get(Attr::kLftRecord, blocks[b], "BlockNum"), b);
  }
  // Without a LID: every switch's blocks.
  auto every = table(ask(request(Method::kGetTable, Attr::kLftRecord)));
  EXPECT_EQ(every.size(), switches_ * blocks.size());
}

TEST_F(SaAgentTest, PathRecordByLidsFollowsTheTables) {
  const PortRef a = ca_ports_.front(), b = ca_ports_.back();
  // The slowest link on the way sets the MTU.
  const NodeId leaf_b = topo_->port(b).remote_node;
  topo_->mutable_port(leaf_b, topo_->port(b).remote_port).mtu_cap = 3;
  auto q = request(Method::kGet, Attr::kPathRecord, (1u << 4) | (1u << 5) | (1u << 12));
  set(q, "SLID", lid_of(a).value);
  set(q, "DLID", lid_of(b).value);
  set(q, "NumbPath", 127);  // as saquery asks
  auto ans = ask(q);
  ASSERT_EQ(ans.size(), 1u);
  auto r = mad::decode_sa(ans.front());
  ASSERT_EQ(r->status, 0) << std::hex << r->status;
  std::vector<std::uint8_t> rec(r->data.begin(), r->data.begin() + 64);
  EXPECT_EQ(get(Attr::kPathRecord, rec, "SLID"), lid_of(a).value);
  EXPECT_EQ(get(Attr::kPathRecord, rec, "DLID"), lid_of(b).value);
  EXPECT_EQ(get(Attr::kPathRecord, rec, "MTU"), 3u);
  EXPECT_EQ(get(Attr::kPathRecord, rec, "MTUSelector"), 2u);
  EXPECT_EQ(get(Attr::kPathRecord, rec, "P_Key"), 0xFFFFu);
  EXPECT_EQ(get(Attr::kPathRecord, rec, "Reversible"), 1u);
  EXPECT_EQ(get(Attr::kPathRecord, rec, "NumbPath"), 0u);  // a question, not an answer
  EXPECT_EQ(get(Attr::kPathRecord, rec, "PacketLifeTime"), 18u);
  const std::size_t dgid = mad::component(*mad::layout_of(0x35), "DGID").offset / 8;
  EXPECT_EQ(
      mad::get_field(std::span<const std::uint8_t>(rec).subspan(dgid + 8, 8), {"guid", 0, 64}),
      topo_->port(b).guid.value);
  // Asking for more than the path has, or a partition or SL it does not
  // give, finds nothing.
  auto bigger = q;
  bigger.comp_mask |= (1u << 16) | (1u << 17);
  set(bigger, "MTUSelector", 0);  // greater than
  set(bigger, "MTU", 3);
  EXPECT_EQ(status_of(ask(bigger)), mad::status::kNoRecords);
  set(bigger, "MTUSelector", 1);  // less than 4: 3 qualifies
  set(bigger, "MTU", 4);
  EXPECT_EQ(status_of(ask(bigger)), 0);
  auto pkey = q;
  pkey.comp_mask |= 1u << 13;
  set(pkey, "P_Key", 0x8001);
  EXPECT_EQ(status_of(ask(pkey)), mad::status::kNoRecords);
  set(pkey, "P_Key", 0x7FFF);  // the default partition, limited member
  EXPECT_EQ(status_of(ask(pkey)), 0);
  auto sl = q;
  sl.comp_mask |= 1u << 15;
  set(sl, "SL", 1);
  EXPECT_EQ(status_of(ask(sl)), mad::status::kNoRecords);
}

TEST_F(SaAgentTest, ManyRequestsAtOnceAnswerAsOneByOne) {
  // A burst as a transport drains it: PathRecord Gets (paths, a LID with
  // no port), a PathRecord table, other records, a malformed MAD and a
  // response, in one call; each answer equals the one-by-one answer.
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<Lid> from;
  for (std::size_t i = 0; i < ca_ports_.size(); ++i) {
    auto q = request(Method::kGet, Attr::kPathRecord, (1u << 4) | (1u << 5));
    set(q, "SLID", lid_of(ca_ports_[i]).value);
    set(q, "DLID", lid_of(ca_ports_[(i * 7 + 3) % ca_ports_.size()]).value);
    const auto e = mad::encode_sa(q);
    bytes.emplace_back(e.begin(), e.end());
    from.push_back(lid_of(ca_ports_[i]));
  }
  auto none = request(Method::kGet, Attr::kPathRecord, 1u << 4);
  set(none, "DLID", 0xBFFF);
  auto table = request(Method::kGetTable, Attr::kPathRecord);
  auto nodes = request(Method::kGetTable, Attr::kNodeRecord);
  auto resp = request(Method::kGetResp, Attr::kNodeRecord);
  for (const auto& q : {none, table, nodes, resp}) {
    const auto e = mad::encode_sa(q);
    bytes.emplace_back(e.begin(), e.end());
    from.push_back(lid_of(ca_ports_[1]));
  }
  bytes.emplace_back(10, 0);  // too short
  from.push_back(Lid{1});

  std::vector<SaAgent::SaRequest> reqs;
  for (std::size_t i = 0; i < bytes.size(); ++i) reqs.push_back({bytes[i], from[i]});
  SaAgent batch_agent;
  const auto many = batch_agent.answer_many(reqs, state_);
  ASSERT_EQ(many.size(), reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(many[i], agent_.answer(bytes[i], from[i], state_)) << "request " << i;
  }
  EXPECT_EQ(status_of(many[ca_ports_.size()]), mad::status::kNoRecords);
  EXPECT_GT(many[ca_ports_.size() + 1].size(), 1u);  // a multi-segment table
  EXPECT_TRUE(many[ca_ports_.size() + 3].empty());   // a response is not answered
  EXPECT_TRUE(many.back().empty());
  const auto st = batch_agent.stats();
  EXPECT_EQ(st.malformed, 1u);
  EXPECT_EQ(st.ignored, 1u);
  EXPECT_EQ(st.requests, ca_ports_.size() + 3);
}

TEST_F(SaAgentTest, AnswersFromManyThreadsAtOnce) {
  // As sa_bench and any second GMP thread do: GID lookups and walks on
  // one agent and one fresh snapshot from two threads (the TSan build
  // checks that nothing is built lazily without a lock).
  std::vector<std::vector<std::uint8_t>> qs;
  for (std::size_t i = 0; i < ca_ports_.size(); ++i) {
    const PortRef a = ca_ports_[i], b = ca_ports_[(i + 1) % ca_ports_.size()];
    auto q = request(Method::kGet, Attr::kPathRecord, (1u << 2) | (1u << 3));
    const auto* l = mad::layout_of(0x35);
    for (const auto& [name, port] : {std::pair{"SGID", a}, std::pair{"DGID", b}}) {
      const std::size_t at = mad::component(*l, name).offset / 8;
      mad::set_field(std::span(q.data).subspan(at, 8), {"p", 0, 64}, 0xFE80'0000'0000'0000ULL);
      mad::set_field(std::span(q.data).subspan(at + 8, 8), {"g", 0, 64},
                     topo_->port(port).guid.value);
    }
    const auto e = mad::encode_sa(q);
    qs.emplace_back(e.begin(), e.end());
  }
  SaAgent fresh;
  std::atomic<int> ok{0};
  auto work = [&] {
    for (const auto& q : qs) {
      auto a = fresh.answer(q, Lid{1}, state_);
      if (a.size() == 1 && mad::decode_sa(a.front())->status == 0) ok.fetch_add(1);
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  EXPECT_EQ(ok.load(), static_cast<int>(2 * qs.size()));
}

TEST_F(SaAgentTest, PathRecordByGidsAndFromTheRequester) {
  const PortRef a = ca_ports_[1], b = ca_ports_[3];
  auto q = request(Method::kGetTable, Attr::kPathRecord, (1u << 2) | (1u << 3));
  const auto* l = mad::layout_of(0x35);
  auto put_gid = [&](const char* name, std::uint64_t guid) {
    const std::size_t at = mad::component(*l, name).offset / 8;
    mad::set_field(std::span<std::uint8_t>(q.data).subspan(at, 8), {"p", 0, 64},
                   0xFE80'0000'0000'0000ULL);
    mad::set_field(std::span<std::uint8_t>(q.data).subspan(at + 8, 8), {"g", 0, 64}, guid);
  };
  put_gid("SGID", topo_->port(a).guid.value);
  put_gid("DGID", topo_->port(b).guid.value);
  auto recs = table(ask(q));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(get(Attr::kPathRecord, recs[0], "SLID"), lid_of(a).value);
  EXPECT_EQ(get(Attr::kPathRecord, recs[0], "DLID"), lid_of(b).value);
  // A GID naming no port.
  put_gid("DGID", 0x1234);
  auto bad = ask(q);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(mad::decode_sa(bad.front())->status, mad::status::kInvalidGid);
  // No source given: the requester; no destination: every endport.
  auto from_me = table(ask(request(Method::kGetTable, Attr::kPathRecord), lid_of(a)));
  EXPECT_EQ(from_me.size(), switches_ + ca_ports_.size());
  for (const auto& r : from_me) EXPECT_EQ(get(Attr::kPathRecord, r, "SLID"), lid_of(a).value);
}

TEST_F(SaAgentTest, WhatItDoesNotServeGetsTheIbaStatus) {
  EXPECT_EQ(status_of(ask(request(Method::kSet, Attr::kNodeRecord))),
            mad::status::kMethodAttrUnsupported);
  EXPECT_EQ(status_of(ask(request(Method::kGetTable, Attr::kMcMemberRecord))),
            mad::status::kMethodAttrUnsupported);
  auto odd = request(Method::kGet, Attr::kNodeRecord);
  odd.method = 0x7F;
  EXPECT_EQ(status_of(ask(odd)), mad::status::kMethodUnsupported);
  auto v1 = request(Method::kGet, Attr::kNodeRecord);
  v1.class_version = 1;
  EXPECT_EQ(status_of(ask(v1)), mad::status::kBadVersion);
  // Before the first sweep there is nothing to answer from.
  state::FabricState empty;
  auto early =
      agent_.answer(mad::encode_sa(request(Method::kGet, Attr::kNodeRecord)), Lid{1}, empty);
  EXPECT_EQ(status_of(early), mad::status::kNoResources);
  // Malformed bytes and responses get no answer, only a count.
  const std::vector<std::uint8_t> junk(40, 0xFF);
  EXPECT_TRUE(agent_.answer(junk, Lid{1}, state_).empty());
  auto resp = request(Method::kGetResp, Attr::kNodeRecord);
  EXPECT_TRUE(ask(resp).empty());
  const SaStats s = agent_.stats();
  EXPECT_EQ(s.malformed, 1u);
  EXPECT_EQ(s.ignored, 1u);
  EXPECT_EQ(s.errors, 5u);
}

}  // namespace
}  // namespace subnetd::daemon::sa

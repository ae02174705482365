// The SA's tables of switch state, SMs and GUIDs: SwitchInfoRecord (as read,
// with what the SM writes patched in), MulticastForwardingTableRecord (the
// programmed trees), SMInfoRecord (subnetd itself), GuidInfoRecord,
// SLtoVLMappingTableRecord and VLArbitrationTableRecord (the VL tables).

#include <gtest/gtest.h>

#include <cstring>

#include "discovery/mad/bytes.hpp"
#include "discovery/vl_tables.hpp"
#include "routing/mcast.hpp"
#include "sa_test_support.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::daemon::sa {
namespace {

class SaRecordsTest : public SaAgentTest {
 protected:
  void SetUp() override {
    SaAgentTest::SetUp();
    if (HasFatalFailure()) return;
    // What the sweep read of each switch: a table never programmed, a
    // PortStateChange pending.
    auto read = std::make_shared<std::vector<std::array<std::uint8_t, 64>>>(switches_);
    for (auto& raw : *read) {
      discovery::mad::SwitchInfo si;
      si.linear_fdb_cap = 49152;
      si.multicast_fdb_cap = 1024;
      si.port_state_change = true;
      si.partition_enforcement_cap = 32;
      si.encode(discovery::mad::SmpData(raw));
    }
    state_.switch_info = read;
    // One multicast tree: switch 0 forwards MLID 0xC001 to ports 2 and 3.
    std::vector<std::vector<routing::McastTables::Entry>> by_switch(switches_);
    routing::PortMask m;
    m.set(2);
    m.set(3);
    by_switch[0].push_back({routing::kMlidBase + 1, m});
    state_.multicast = std::make_shared<const routing::McastTables>(
        routing::mcast_tables_for_test(std::move(by_switch)));
    state_.sm_node = ca_ports_[0].node;
    state_.sm_port = ca_ports_[0].port;
    state_.sm_lid = lid_of(ca_ports_[0]);
    state_.state = state::SmState::kMaster;
    state_.generation = 7;
  }
  Lid switch_lid(std::uint32_t s) const {
    return lids_->base_lid(*topo_, topo_->switch_node(SwitchIndex{s}), 0);
  }
};

TEST_F(SaRecordsTest, SwitchInfoRecordsAreWhatWasReadWithWhatTheSmWrote) {
  const auto all = table(ask(request(Method::kGetTable, Attr::kSwitchInfoRecord)));
  ASSERT_EQ(all.size(), switches_);
  for (const auto& r : all) {
    EXPECT_EQ(get(Attr::kSwitchInfoRecord, r, "LinearFDBCap"), 49152U);
    EXPECT_EQ(get(Attr::kSwitchInfoRecord, r, "LinearFDBTop"), state_.routes->max_lid.value);
    EXPECT_EQ(get(Attr::kSwitchInfoRecord, r, "MulticastFDBTop"), routing::kMlidBase + 1);
    EXPECT_EQ(get(Attr::kSwitchInfoRecord, r, "PortStateChange"), 0U) << "the SM cleared it";
    EXPECT_EQ(get(Attr::kSwitchInfoRecord, r, "LifeTimeValue"), 18U);
    EXPECT_EQ(get(Attr::kSwitchInfoRecord, r, "PartitionEnforcementCap"), 32U);
  }
  // By LID: that switch; a CA's LID has none.
  auto q = request(Method::kGet, Attr::kSwitchInfoRecord, 1);
  set(q, "LID", switch_lid(1).value);
  const auto one = ask(q);
  ASSERT_EQ(status_of(one), 0);
  auto d = mad::decode_sa(one.front());
  EXPECT_EQ(mad::get_field(d->data, mad::component(*mad::layout_of(d->attr_id), "LID")),
            switch_lid(1).value);
  set(q, "LID", lid_of(ca_ports_[1]).value);
  EXPECT_EQ(status_of(ask(q)), mad::status::kNoRecords);
  // Not read: no record.
  state_.switch_info = nullptr;
  EXPECT_TRUE(table(ask(request(Method::kGetTable, Attr::kSwitchInfoRecord))).empty());
}

TEST_F(SaRecordsTest, MftRecordsAreTheProgrammedTrees) {
  auto q = request(Method::kGetTable, Attr::kMftRecord, 1);
  set(q, "LID", switch_lid(0).value);
  const auto recs = table(ask(q));
  const std::uint32_t positions =
      (topo_->node(topo_->switch_node(SwitchIndex{0})).num_ports + 16U) / 16U;
  ASSERT_EQ(recs.size(), positions) << "one block of MLIDs, every position";
  const auto& layout = *mad::layout_of(static_cast<std::uint16_t>(Attr::kMftRecord));
  const std::size_t table_at = mad::component(layout, "MulticastForwardingTable").offset / 8;
  for (const auto& r : recs) {
    const std::uint64_t pos = get(Attr::kMftRecord, r, "Position");
    EXPECT_EQ(get(Attr::kMftRecord, r, "BlockNum"), 0U);
    // MLID 0xC001 is entry 1 of block 0.
    const std::uint16_t mask = discovery::mad::load_be16(&r[table_at + 2]);
    EXPECT_EQ(mask, pos == 0 ? 0x000CU : 0U) << "position " << pos;
    EXPECT_EQ(discovery::mad::load_be16(&r[table_at]), 0U) << "MLID 0xC000 is in no tree";
  }
  // Position and block selected: one record; a block past the trees none.
  auto p0 = request(Method::kGet, Attr::kMftRecord, 1 | 2 | 8);
  set(p0, "LID", switch_lid(0).value);
  set(p0, "Position", 0);
  set(p0, "BlockNum", 0);
  EXPECT_EQ(status_of(ask(p0)), 0);
  set(p0, "BlockNum", 1);
  EXPECT_EQ(status_of(ask(p0)), mad::status::kNoRecords);
  // Without trees there is nothing.
  state_.multicast = nullptr;
  EXPECT_TRUE(table(ask(request(Method::kGetTable, Attr::kMftRecord))).empty());
}

TEST_F(SaRecordsTest, SmInfoRecordIsSubnetdItself) {
  const auto one = ask(request(Method::kGet, Attr::kSmInfoRecord));
  ASSERT_EQ(status_of(one), 0);
  auto d = mad::decode_sa(one.front());
  std::vector<std::uint8_t> r(d->data.begin(), d->data.end());
  EXPECT_EQ(get(Attr::kSmInfoRecord, r, "LID"), lid_of(ca_ports_[0]).value);
  EXPECT_EQ(get(Attr::kSmInfoRecord, r, "GUID"), topo_->port(ca_ports_[0]).guid.value);
  EXPECT_EQ(get(Attr::kSmInfoRecord, r, "SM_Key"), 0U);
  EXPECT_EQ(get(Attr::kSmInfoRecord, r, "ActCount"), 7U);
  EXPECT_EQ(get(Attr::kSmInfoRecord, r, "Priority"), 15U);
  EXPECT_EQ(get(Attr::kSmInfoRecord, r, "SMState"), 3U) << "master";
  // While a heavy sweep runs it says so.
  state_.state = state::SmState::kDiscovering;
  auto again = mad::decode_sa(ask(request(Method::kGet, Attr::kSmInfoRecord)).front());
  std::vector<std::uint8_t> r2(again->data.begin(), again->data.end());
  EXPECT_EQ(get(Attr::kSmInfoRecord, r2, "SMState"), 1U);
}

TEST_F(SaRecordsTest, GuidInfoRecordsHoldEachPortGuid) {
  const auto all = table(ask(request(Method::kGetTable, Attr::kGuidInfoRecord)));
  ASSERT_EQ(all.size(), switches_ + ca_ports_.size());
  const auto& layout = *mad::layout_of(static_cast<std::uint16_t>(Attr::kGuidInfoRecord));
  const std::size_t guids_at = mad::component(layout, "GUIDInfo").offset / 8;
  // A port with GUIDCap 16 has two blocks; block 1 is empty.
  const PortRef a = ca_ports_[2];
  auto pi = std::make_shared<std::vector<std::array<std::uint8_t, 64>>>(*state_.port_info);
  const std::uint32_t at = topo_->port_index(a.node, a.port);
  auto info = discovery::mad::PortInfo::decode((*pi)[at]);
  info.guid_cap = 16;
  info.encode(discovery::mad::SmpData((*pi)[at]));
  state_.port_info = pi;
  auto q = request(Method::kGetTable, Attr::kGuidInfoRecord, 1);
  set(q, "LID", lid_of(a).value);
  const auto mine = table(ask(q));
  ASSERT_EQ(mine.size(), 2U);
  EXPECT_EQ(get(Attr::kGuidInfoRecord, mine[0], "BlockNum"), 0U);
  EXPECT_EQ(discovery::mad::load_be64(&mine[0][guids_at]), topo_->port(a).guid.value);
  EXPECT_EQ(discovery::mad::load_be64(&mine[0][guids_at + 8]), 0U);
  EXPECT_EQ(get(Attr::kGuidInfoRecord, mine[1], "BlockNum"), 1U);
  EXPECT_EQ(discovery::mad::load_be64(&mine[1][guids_at]), 0U);
}

TEST_F(SaRecordsTest, Sl2VlAndVlArbRecordsAreTheProgrammedTables) {
  // A CA port: one table, ports 0 (whatever ports the query names, as
  // OpenSM answers), every SL on VL0 (one data VL).
  const PortRef a = ca_ports_[0];
  auto q = request(Method::kGetTable, Attr::kSlToVlTableRecord, 1 | 4);
  set(q, "LID", lid_of(a).value);
  set(q, "OutputPortNum", a.port);
  const auto mine = table(ask(q));
  ASSERT_EQ(mine.size(), 1U);
  EXPECT_EQ(get(Attr::kSlToVlTableRecord, mine[0], "InputPortNum"), 0U);
  EXPECT_EQ(get(Attr::kSlToVlTableRecord, mine[0], "OutputPortNum"), 0U);
  EXPECT_EQ(get(Attr::kSlToVlTableRecord, mine[0], "SLtoVLMappingTable"), 0U);
  // A switch's output port: one table per input port, 0 included.
  const NodeId sw = topo_->switch_node(SwitchIndex{0});
  PortNum out = 0;
  for (unsigned p = 1; p <= topo_->node(sw).num_ports && out == 0; ++p) {
    if (topo_->port(sw, static_cast<PortNum>(p)).connected()) out = static_cast<PortNum>(p);
  }
  auto qs = request(Method::kGetTable, Attr::kSlToVlTableRecord, 1 | 4);
  set(qs, "LID", switch_lid(0).value);
  set(qs, "OutputPortNum", out);
  EXPECT_EQ(table(ask(qs)).size(), topo_->node(sw).num_ports + 1U);
  // Per-hop VLs (dimension order with datelines): the routes' own table
  // of that output port, from every input port.
  {
    auto hop = std::make_shared<routing::Routes>(*state_.routes);
    hop->num_vls = 3;
    hop->lid_layer.assign(hop->max_lid.value + 1, 1);
    hop->hop_vls.resize(switches_);
    for (std::uint32_t s = 0; s < switches_; ++s) {
      const auto ports = topo_->node(topo_->switch_node(SwitchIndex{s})).num_ports;
      hop->hop_vls[s].assign((ports + 1U) * routing::kNumSls, 1);
      for (unsigned p = 0; p <= ports; ++p) hop->hop_vls[s][p * routing::kNumSls] = 0;
    }
    hop->hop_vls[0][out * routing::kNumSls + 3] = 2;
    const auto plain = state_.routes;
    state_.routes = hop;
    discovery::mad::SlToVlMappingTable want;
    want.vl.fill(1);
    want.vl[0] = 0;
    want.vl[3] = 2;
    const auto per_hop = table(ask(qs));
    ASSERT_EQ(per_hop.size(), topo_->node(sw).num_ports + 1U);
    for (const auto& r : per_hop) {
      EXPECT_EQ(get(Attr::kSlToVlTableRecord, r, "SLtoVLMappingTable"),
                discovery::sl2vl_bits(want));
    }
    state_.routes = plain;
  }

  // VLArb: the blocks the port's caps hold (low and high, 32 entries each).
  auto pi = std::make_shared<std::vector<std::array<std::uint8_t, 64>>>(*state_.port_info);
  const std::uint32_t at = topo_->port_index(a.node, a.port);
  auto info = discovery::mad::PortInfo::decode((*pi)[at]);
  info.vl_arbitration_low_cap = 8;
  info.vl_arbitration_high_cap = 8;
  info.encode(discovery::mad::SmpData((*pi)[at]));
  state_.port_info = pi;
  auto qa = request(Method::kGetTable, Attr::kVlArbTableRecord, 1);
  set(qa, "LID", lid_of(a).value);
  const auto arb = table(ask(qa));
  ASSERT_EQ(arb.size(), 2U);
  EXPECT_EQ(get(Attr::kVlArbTableRecord, arb[0], "BlockNum"), 1U);
  EXPECT_EQ(get(Attr::kVlArbTableRecord, arb[1], "BlockNum"), 3U);
  const std::size_t entries_at =
      mad::component(*mad::layout_of(static_cast<std::uint16_t>(Attr::kVlArbTableRecord)),
                     "VLArbitrationTable")
          .offset /
      8;
  EXPECT_EQ(arb[0][entries_at], 0) << "VL0";
  EXPECT_EQ(arb[0][entries_at + 1], 64) << "its weight";
  EXPECT_EQ(arb[0][entries_at + 3], 0) << "no other VL";
  EXPECT_EQ(arb[1][entries_at + 1], 0) << "no high priority";
}

// A PathRecord to a multicast group: the MLID and the group's properties,
// not reversible; selectors apply; a named source must be a member; an
// unknown group has none.
TEST_F(SaRecordsTest, PathRecordToAGroupGivesItsMlid) {
  state::McastGroup g;
  g.mgid = state::ipoib_broadcast_mgid(0x7FFF);
  g.mlid = Lid{0xC000};
  g.qkey = 0x0B1B;
  g.mtu = 4;   // 2048
  g.rate = 3;  // 10 Gb/s
  g.sl = 0;
  const PortRef a = ca_ports_[1];
  g.members[topo_->port(a).guid] = state::kJoinFull;
  state_.mcast_groups = std::make_shared<const std::vector<state::McastGroup>>(1, g);
  constexpr std::uint64_t kDgid = 1ULL << 2, kSgid = 1ULL << 3, kMtuSel = 1ULL << 16,
                          kMtu = 1ULL << 17;
  auto q = request(Method::kGet, Attr::kPathRecord, kDgid | kSgid);
  const auto& layout = *mad::layout_of(static_cast<std::uint16_t>(Attr::kPathRecord));
  auto put_gid = [&](mad::SaMad& m, const char* name, const state::Mgid& gid) {
    std::memcpy(&m.data[mad::component(layout, name).offset / 8], gid.data(), gid.size());
  };
  state::Mgid sgid{};
  discovery::mad::store_be64(sgid.data(), 0xFE80'0000'0000'0000ULL);
  discovery::mad::store_be64(sgid.data() + 8, topo_->port(a).guid.value);
  put_gid(q, "DGID", g.mgid);
  put_gid(q, "SGID", sgid);
  const auto one = ask(q, lid_of(a));
  ASSERT_EQ(status_of(one), 0);
  const auto d = mad::decode_sa(one.front());
  const std::vector<std::uint8_t> r(d->data.begin(), d->data.end());
  EXPECT_EQ(get(Attr::kPathRecord, r, "DLID"), 0xC000U);
  EXPECT_EQ(get(Attr::kPathRecord, r, "SLID"), lid_of(a).value);
  EXPECT_EQ(get(Attr::kPathRecord, r, "MTU"), 4U);
  EXPECT_EQ(get(Attr::kPathRecord, r, "Rate"), 3U);
  EXPECT_EQ(get(Attr::kPathRecord, r, "P_Key"), 0xFFFFU);
  EXPECT_EQ(get(Attr::kPathRecord, r, "Reversible"), 0U);
  EXPECT_EQ(std::memcmp(&r[mad::component(layout, "DGID").offset / 8], g.mgid.data(), 16), 0);
  // An MTU above the group's is not offered.
  auto bigger = q;
  bigger.comp_mask |= kMtuSel | kMtu;
  set(bigger, "MTUSelector", 0);  // greater than
  set(bigger, "MTU", 4);
  EXPECT_EQ(status_of(ask(bigger, lid_of(a))), mad::status::kNoRecords);
  // A source named in the query that is not a member has none; the
  // requester asking for its own path (no source named) has one.
  const PortRef b = ca_ports_[2];
  auto not_member = q;
  discovery::mad::store_be64(sgid.data() + 8, topo_->port(b).guid.value);
  put_gid(not_member, "SGID", sgid);
  EXPECT_EQ(status_of(ask(not_member, lid_of(b))), mad::status::kNoRecords);
  auto own = request(Method::kGet, Attr::kPathRecord, kDgid);
  put_gid(own, "DGID", g.mgid);
  EXPECT_EQ(status_of(ask(own, lid_of(b))), 0);
  // A group the SM does not know.
  auto other = q;
  state::Mgid unknown = g.mgid;
  unknown[15] = 0x01;
  put_gid(other, "DGID", unknown);
  EXPECT_EQ(status_of(ask(other, lid_of(a))), mad::status::kNoRecords);
}

}  // namespace
}  // namespace subnetd::daemon::sa

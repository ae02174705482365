// SimFabric at the SMP level: directed-route hop-pointer semantics, the
// SMA's attributes and state machine, and LID-routed forwarding through the
// switches' own tables, on the hand-wired fat tree of sim_test_support.hpp
// (every expected port number can be checked against its drawing). Traps,
// faults, extended LIDs, the latency model and bad input: sim_faults_test.cpp.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "sim_test_support.hpp"

namespace subnetd::discovery::sim {
namespace {

using namespace std::chrono_literals;
using namespace simtest;

// ------------------------------------------------------------------ directed route

TEST(SimDirectedRoute, NodeInfoAlongMultiHopPaths) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);

  struct Case {
    Path path;
    NodeId node;
    std::uint8_t local_port;
    std::vector<std::uint8_t> return_path;  // expected ReturnPath[1..n]
  };
  const Case cases[] = {
      {kToHost0, f.host[0], 1, {}},
      {kToLeaf0, f.leaf[0], 1, {1}},
      {kToSpine0, f.spine[0], 1, {1, 1}},
      {kToSpine1, f.spine[1], 1, {1, 1}},
      {kToLeaf2, f.leaf[2], 3, {1, 1, 3}},
      {{1, 4, 3}, f.leaf[2], 4, {1, 1, 4}},
      {kToHost4, f.host[4], 1, {1, 1, 3, 1}},
      {{1, 4, 4, 2}, f.host[7], 1, {1, 1, 4, 1}},
      // Out of leaf0's spine port and straight back: DR may reverse.
      {{1, 3, 1}, f.leaf[0], 3, {1, 1, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("path [{}]", fmt::join(c.path, ",")));
    auto r = sm.dr(Method::kGet, AttrId::kNodeInfo, 0, c.path);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 0);
    EXPECT_EQ(r->method, Method::kGetResp);
    EXPECT_TRUE(r->direction);
    EXPECT_EQ(r->hop_pointer, 0) << "the hop pointer counts back down to 0 at the SM";
    EXPECT_EQ(r->hop_count, c.path.size());
    for (std::size_t i = 0; i < c.path.size(); ++i) {
      EXPECT_EQ(r->initial_path[i + 1], c.path[i]) << "initial path is untouched";
      EXPECT_EQ(r->return_path[i + 1], c.return_path[i]) << "return path hop " << i + 1;
    }
    const auto ni = mad::NodeInfo::decode(mad::data_of(*r));
    const routing::Node& node = fabric->topology().node(c.node);
    EXPECT_EQ(ni.node_guid, node.guid.value);
    EXPECT_EQ(ni.node_type, static_cast<std::uint8_t>(node.type));
    EXPECT_EQ(ni.num_ports, node.num_ports);
    EXPECT_EQ(ni.local_port_num, c.local_port);
    const std::uint64_t port_guid =
        node.type == NodeType::kSwitch ? node.guid.value : node.guid.value + c.local_port;
    EXPECT_EQ(ni.port_guid, port_guid);
  }
  const SimStats st = fabric->stats();
  EXPECT_EQ(st.drops_total(), 0U);
  EXPECT_EQ(st.smps_handled, std::size(cases));
  // Every hop is crossed twice.
  std::uint64_t hops = 0;
  for (const Case& c : cases) hops += 2 * c.path.size();
  EXPECT_EQ(st.link_traversals, hops);
}

TEST(SimDirectedRoute, BadPathsAreDroppedAndCounted) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  const auto before = fabric->now();
  // Through a CA: leaf0 port 2 is host1, which must not forward.
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 2, 1}));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kDrThroughCa), 1U);
  EXPECT_EQ(fabric->now() - before, 100ms) << "a timeout advances the virtual clock";
  // Out of an unconnected port (leaf0 port 5).
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 5}));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kUnconnectedPort), 1U);
  // A port the switch does not have, and port 0 as an exit.
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 9, 1}));
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 0, 1}));
  // The SM's CA can only send out of the SM's port.
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {2}));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kDrBadPath), 3U);
  // A hop pointer the SM should not have set.
  mad::Smp odd = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf2, 0);
  odd.hop_pointer = 2;
  EXPECT_FALSE(sm.exchange(odd));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kDrBadPath), 4U);
  EXPECT_EQ(fabric->stats().smps_handled, 0U);
}

TEST(SimDirectedRoute, LidRoutedStartAndEnd) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  sm.route(kToLeaf0, kLeafLid[2], 3);
  sm.route(kToSpine0, kLeafLid[2], 3);
  sm.route(kToLeaf2, kLeafLid[0], 3);
  sm.route(kToSpine0, kLeafLid[0], 1);

  // DrSLID = the SM: LID-routed to leaf2, then directed out of its port 1.
  mad::Smp s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, Path{1}, 0);
  s.dr_slid = kSmLid;
  Mad raw;
  auto r = sm.exchange(s, kLeafLid[2], &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2040U);  // host4
  EXPECT_EQ(r->hop_pointer, 0);
  EXPECT_EQ(r->return_path[1], 1);
  EXPECT_EQ(raw.dlid, kSmLid) << "the last part back is LID-routed to DrSLID";
  EXPECT_EQ(raw.slid, kLeafLid[2]);

  // DrDLID = host4: directed to leaf0, then LID-routed on; the response
  // comes LID-routed back to leaf0 and directed from there.
  s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, Path{1}, 0);
  s.dr_dlid = kHost4Lid;
  sm.route(kToLeaf2, kLeafLid[0], 3);
  r = sm.exchange(s, mad::kPermissiveLid, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2040U);
  EXPECT_EQ(r->hop_pointer, 0);
  EXPECT_EQ(raw.dlid, mad::kPermissiveLid) << "arrived directed";
  EXPECT_EQ(fabric->stats().drops_total(), 0U);
}

// ------------------------------------------------------------------ the SMA

TEST(SimSma, PortInfoLidLmcSmLidAndCapabilities) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);

  mad::PortInfo pi;
  pi.lid = 0x40;
  pi.lmc = 2;
  pi.master_sm_lid = 0x7;
  pi.gid_prefix = 0xfe80000000001234ULL;
  pi.subnet_timeout = 18;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, pi), 0);
  auto got = sm.get<mad::PortInfo>(AttrId::kPortInfo, 0, kToHost4);  // 0: the receiving port
  ASSERT_TRUE(got);
  EXPECT_EQ(got->lid, 0x40);
  EXPECT_EQ(got->lmc, 2);
  EXPECT_EQ(got->master_sm_lid, 0x7);
  EXPECT_EQ(got->gid_prefix, 0xfe80000000001234ULL);
  EXPECT_EQ(got->subnet_timeout, 18);
  EXPECT_EQ(got->local_port_num, 1);
  EXPECT_EQ(got->port_state, static_cast<std::uint8_t>(PortState::kInit));
  EXPECT_EQ(got->port_phys_state, kPhysLinkUp);
  EXPECT_EQ(got->link_width_active, 2);  // 4x, from the topology default
  EXPECT_TRUE(got->capability_mask & mad::kCapIsTrapSupported);
  EXPECT_FALSE(got->capability_mask & mad::kCapIsSm);
  auto own = sm.get<mad::PortInfo>(AttrId::kPortInfo, 1, kToHost0);
  ASSERT_TRUE(own);
  EXPECT_TRUE(own->capability_mask & mad::kCapIsSm) << "the SM's port says IsSM";

  // Switch port 0 holds the switch's LID; LMC is not applied there (base
  // SP0); external ports have none and report the state of their link.
  pi.lid = 0x50;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 0, kToSpine0, pi), 0);
  auto p0 = sm.get<mad::PortInfo>(AttrId::kPortInfo, 0, kToSpine0);
  ASSERT_TRUE(p0);
  EXPECT_EQ(p0->lid, 0x50);
  EXPECT_EQ(p0->lmc, 0);
  EXPECT_EQ(p0->port_state, static_cast<std::uint8_t>(PortState::kActive));
  EXPECT_EQ(p0->local_port_num, 1);
  auto p4 = sm.get<mad::PortInfo>(AttrId::kPortInfo, 4, kToSpine0);
  ASSERT_TRUE(p4);
  EXPECT_EQ(p4->lid, 0);
  EXPECT_EQ(p4->capability_mask, 0U);
  EXPECT_EQ(p4->port_state, static_cast<std::uint8_t>(PortState::kInit));
  auto unconnected = sm.get<mad::PortInfo>(AttrId::kPortInfo, 5, kToLeaf0);
  ASSERT_TRUE(unconnected);
  EXPECT_EQ(unconnected->port_state, static_cast<std::uint8_t>(PortState::kDown));
  EXPECT_EQ(unconnected->port_phys_state, kPhysPolling);

  // Bad values change nothing.
  pi.lid = 0xC000;  // multicast range
  EXPECT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, pi), mad::status::kInvalidField);
  EXPECT_EQ(sm.get<mad::PortInfo>(AttrId::kPortInfo, 1, kToHost4)->lid, 0x40);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kPortInfo, 6, kToLeaf0)->status,
            mad::status::kInvalidField);
  EXPECT_EQ(fabric->port_view({f.host[4], 1})->lid.value, 0x40U);
}

TEST(SimSma, PortStateTransitions) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  const auto state = [&](const Path& p, PortNum port) {
    return static_cast<PortState>(sm.get<mad::PortInfo>(AttrId::kPortInfo, port, p)->port_state);
  };
  const std::uint16_t bad = mad::status::kInvalidField;

  // leaf0 port 3 <-> spine0 port 1, both INIT.
  sm.set_state(kToLeaf0, 3, PortState::kActive, 0, bad);  // INIT -> ACTIVE skips ARMED
  sm.set_state(kToLeaf0, 3, PortState::kInit, 0, bad);    // INIT is not settable
  sm.set_state(kToLeaf0, 3, PortState::kArmed);
  EXPECT_EQ(state(kToLeaf0, 3), PortState::kArmed);
  sm.set_state(kToLeaf0, 3, PortState::kActive, 0, bad);  // neighbour still INIT
  sm.set_state(kToSpine0, 1, PortState::kArmed);
  sm.set_state(kToLeaf0, 3, PortState::kActive);
  EXPECT_EQ(state(kToLeaf0, 3), PortState::kActive);
  sm.set_state(kToLeaf0, 3, PortState::kArmed, 0, bad);  // no way back but Down
  EXPECT_FALSE(*fabric->port_state_change(f.leaf[0])) << "SubnSet transitions set no flag";

  // Down: the link drops and retrains to INIT at both ends; both switches
  // notice (PortStateChange).
  sm.set_state(kToLeaf0, 3, PortState::kDown);
  EXPECT_EQ(state(kToLeaf0, 3), PortState::kInit);
  EXPECT_EQ(state(kToSpine0, 1), PortState::kInit);
  EXPECT_TRUE(*fabric->port_state_change(f.leaf[0]));
  EXPECT_TRUE(*fabric->port_state_change(f.spine[0]));
  // Cleared by writing 1.
  auto si = sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToLeaf0);
  ASSERT_TRUE(si);
  EXPECT_TRUE(si->port_state_change);
  ASSERT_EQ(sm.set_status(AttrId::kSwitchInfo, 0, kToLeaf0, *si), 0);
  EXPECT_FALSE(sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToLeaf0)->port_state_change);

  // PortPhysicalState Disabled takes the link down until Polling.
  sm.set_state(kToLeaf0, 4, PortState::kNoChange, kPhysDisabled);
  auto pi = sm.get<mad::PortInfo>(AttrId::kPortInfo, 4, kToLeaf0);
  EXPECT_EQ(pi->port_state, static_cast<std::uint8_t>(PortState::kDown));
  EXPECT_EQ(pi->port_phys_state, kPhysDisabled);
  EXPECT_EQ(fabric->port_view({f.spine[1], 1})->phys_state, kPhysPolling);
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToSpine1));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kLinkDown), 1U);
  sm.set_state(kToLeaf0, 4, PortState::kArmed, 0, bad);  // a DOWN port arms nothing
  sm.set_state(kToLeaf0, 4, PortState::kNoChange, kPhysPolling);
  EXPECT_EQ(state(kToLeaf0, 4), PortState::kInit);
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToSpine1));

  // Switch port 0 is ACTIVE and stays so; other physical states are refused.
  EXPECT_EQ(state(kToSpine0, 0), PortState::kActive);
  sm.set_state(kToSpine0, 0, PortState::kArmed, 0, bad);
  sm.set_state(kToSpine0, 0, PortState::kNoChange, kPhysDisabled, bad);
  sm.set_state(kToSpine0, 0, PortState::kActive);
  // A refused Set applies nothing, not even its other fields.
  mad::PortInfo lid_and_bad_state;
  lid_and_bad_state.lid = 77;
  lid_and_bad_state.port_state = static_cast<std::uint8_t>(PortState::kActive);
  EXPECT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, lid_and_bad_state), bad);
  EXPECT_EQ(fabric->port_view({f.host[4], 1})->lid.value, 0U);
}

TEST(SimSma, LinearForwardingTableBlocks) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  EXPECT_EQ(fabric->lft_bytes(), 0U) << "no table until one is written";

  auto fresh = sm.get<mad::LinearForwardingTable>(AttrId::kLinearForwardingTable, 5, kToSpine0);
  ASSERT_TRUE(fresh);
  for (std::uint8_t p : fresh->ports) EXPECT_EQ(p, 255);

  mad::LinearForwardingTable block;
  for (int i = 0; i < 64; ++i) block.ports[i] = static_cast<std::uint8_t>(i % 4 + 1);
  ASSERT_EQ(sm.set_status(AttrId::kLinearForwardingTable, 5, kToSpine0, block), 0);
  EXPECT_EQ(*sm.get<mad::LinearForwardingTable>(AttrId::kLinearForwardingTable, 5, kToSpine0),
            block);
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{5 * 64 + 6}), 3);
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{4 * 64}), 255) << "blocks below stay unset";
  EXPECT_EQ(*fabric->lft_entry(f.spine[1], Lid{5 * 64}), 255) << "tables are per switch";
  EXPECT_GE(fabric->lft_bytes(), 6U * 64U);

  // LinearFDBCap is 0xC000: blocks 0..767.
  auto si = sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToSpine0);
  ASSERT_TRUE(si);
  EXPECT_EQ(si->linear_fdb_cap, 0xC000);
  EXPECT_EQ(sm.set_status(AttrId::kLinearForwardingTable, 767, kToSpine0, block), 0);
  EXPECT_EQ(sm.set_status(AttrId::kLinearForwardingTable, 768, kToSpine0, block),
            mad::status::kInvalidField);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kLinearForwardingTable, 768, kToSpine0)->status,
            mad::status::kInvalidField);
  // LinearFDBTop beyond the cap is refused.
  si->linear_fdb_top = 0xC000;
  EXPECT_EQ(sm.set_status(AttrId::kSwitchInfo, 0, kToSpine0, *si), mad::status::kInvalidField);
  // A CA has no LFT; ExtLFT does not exist in 16-bit mode.
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kLinearForwardingTable, 0, kToHost4)->status,
            mad::status::kMethodAttrUnsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kExtLinearForwardingTable, 0, kToSpine0)->status,
            mad::status::kMethodAttrUnsupported);
}

TEST(SimSma, UnsupportedAttributesAndMethodsGetStatus) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  const std::uint16_t unsupported = mad::status::kMethodAttrUnsupported;
  // An attribute the codec does not know (GUIDInfo, 0x0014) and one no SMA has.
  for (std::uint16_t raw : {0x0014, 0x1234}) {
    mad::Smp s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf0, 0);
    s.attr_id = static_cast<AttrId>(raw);
    auto r = sm.exchange(s);
    ASSERT_TRUE(r.has_value()) << raw;
    EXPECT_EQ(r->status, unsupported) << raw;
    EXPECT_EQ(static_cast<std::uint16_t>(r->attr_id), raw);
  }
  EXPECT_EQ(sm.dr(Method::kSet, AttrId::kNodeInfo, 0, kToLeaf0)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kSet, AttrId::kNodeDescription, 0, kToLeaf0)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kSwitchInfo, 0, kToHost4)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kSmInfo, 0, kToLeaf0)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kExtPortInfo, 0, kToLeaf0)->status, unsupported);
  auto nd = sm.dr(Method::kGet, AttrId::kNodeDescription, 0, kToLeaf2);
  ASSERT_TRUE(nd);
  EXPECT_EQ(mad::NodeDescription::decode(mad::data_of(*nd)).text, "leaf2");
  // An SMA does not answer a response or a trap sent to it.
  EXPECT_FALSE(sm.dr(Method::kGetResp, AttrId::kNodeInfo, 0, kToHost0));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kUnexpected), 1U);
}

TEST(SimSma, SlToVlAndVlArbitrationTables) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  mad::SlToVlMappingTable t;
  for (int sl = 0; sl < 16; ++sl) t.vl[sl] = static_cast<std::uint8_t>((sl * 3) % 8);
  const std::uint32_t in3_out4 = (3U << 8) | 4U;
  ASSERT_EQ(sm.set_status(AttrId::kSlToVlMappingTable, in3_out4, kToLeaf0, t), 0);
  EXPECT_EQ(*sm.get<mad::SlToVlMappingTable>(AttrId::kSlToVlMappingTable, in3_out4, kToLeaf0), t);
  EXPECT_EQ(
      sm.get<mad::SlToVlMappingTable>(AttrId::kSlToVlMappingTable, (4U << 8) | 3U, kToLeaf0)->vl[1],
      0)
      << "another (in, out) pair is untouched";
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kSlToVlMappingTable, (6U << 8) | 1U, kToLeaf0)->status,
            mad::status::kInvalidField);
  ASSERT_EQ(sm.set_status(AttrId::kSlToVlMappingTable, 0, kToHost4, t), 0);  // CA: its port
  EXPECT_EQ(*sm.get<mad::SlToVlMappingTable>(AttrId::kSlToVlMappingTable, 1, kToHost4), t);

  mad::VlArbitrationTable arb;
  for (int e = 0; e < 32; ++e) arb.entries[e] = {static_cast<std::uint8_t>(e % 8), 1};
  const std::uint32_t high_port2 = (3U << 16) | 2U;
  ASSERT_EQ(sm.set_status(AttrId::kVlArbitrationTable, high_port2, kToLeaf0, arb), 0);
  EXPECT_EQ(*sm.get<mad::VlArbitrationTable>(AttrId::kVlArbitrationTable, high_port2, kToLeaf0),
            arb);
  EXPECT_EQ(sm.get<mad::VlArbitrationTable>(AttrId::kVlArbitrationTable, (1U << 16) | 2U, kToLeaf0)
                ->entries[0]
                .weight,
            0);
  // Blocks 2 and 4 (entries 32-63) exist only beyond a capacity of 32.
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kVlArbitrationTable, (2U << 16) | 2U, kToLeaf0)->status,
            mad::status::kInvalidField);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kVlArbitrationTable, (5U << 16) | 2U, kToLeaf0)->status,
            mad::status::kInvalidField);
}

// ------------------------------------------------------------------ LID routing

TEST(SimLidRouted, DeliveredOnlyWhenEverySwitchRoutesIt) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  sm.set_lid(kToHost0, 1, kSmLid);
  sm.set_lid(kToHost4, 1, kHost4Lid);
  const auto drops = [&](DropReason r) { return fabric->stats().drops_of(r); };

  // LinearFDBTop is 0 after power-on: leaf0 discards everything.
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kLftBeyondTop), 1U);
  for (const Path& p : {kToLeaf0, kToSpine0, kToLeaf2}) sm.set_top(p, 127);
  // No entry for the LID.
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kLftUnset), 1U);
  // The way there but not the way back: host4's SMA answers, the answer dies
  // at leaf2.
  sm.route(kToLeaf0, kHost4Lid, 3);
  sm.route(kToSpine0, kHost4Lid, 3);
  sm.route(kToLeaf2, kHost4Lid, 1);
  const auto handled = fabric->stats().smps_handled;
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->stats().smps_handled, handled + 1);
  EXPECT_EQ(drops(DropReason::kLftUnset), 2U);
  // Both ways.
  sm.route(kToLeaf2, kSmLid, 3);
  sm.route(kToSpine0, kSmLid, 1);
  sm.route(kToLeaf0, kSmLid, 1);
  Mad raw;
  auto r = sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->directed());
  const auto ni = mad::NodeInfo::decode(mad::data_of(*r));
  EXPECT_EQ(ni.node_guid, fabric->topology().node(f.host[4]).guid.value);
  EXPECT_EQ(ni.local_port_num, 1);
  EXPECT_EQ(raw.dlid, kSmLid);
  EXPECT_EQ(raw.slid, kHost4Lid);
  // A wrong turn: spine0 sends host4's LID to leaf1, whose table has no entry.
  sm.route(kToSpine0, kHost4Lid, 2);
  sm.set_top({1, 3, 2}, 127);
  const auto total = fabric->stats().drops_total();
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->stats().drops_total(), total + 1);
  EXPECT_EQ(drops(DropReason::kLftUnset), 3U);
  // A loop (spine0 -> leaf1 -> spine0 ...) ends at the hop limit.
  sm.route({1, 3, 2}, kHost4Lid, 3);
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kHopLimit), 1U);
  // An entry naming a port the switch lacks.
  sm.route({1, 3, 2}, kHost4Lid, 9);
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kLftBadPort), 1U);
  // LID 0 and LIDs beyond the 16-bit unicast space never leave the SM.
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, 0));
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, 0xC000));
  EXPECT_EQ(drops(DropReason::kBadLid), 2U);
  // The SM's own LID loops back inside its HCA.
  r = sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kSmLid, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2000U);
}

TEST(SimLidRouted, ReachesSwitchPortZeroAndHonoursLmc) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  sm.route(kToLeaf0, kLeafLid[2], 3);
  sm.route(kToSpine0, kLeafLid[2], 3);
  auto r = sm.lr(Method::kGet, AttrId::kSwitchInfo, 0, kLeafLid[2]);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(mad::SwitchInfo::decode(mad::data_of(*r)).linear_fdb_top, 127);

  // LMC 2 on host4: LIDs 104..107 all reach it once routed.
  mad::PortInfo pi;
  pi.lid = kHost4Lid;
  pi.lmc = 2;
  pi.master_sm_lid = kSmLid;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, pi), 0);
  for (std::uint32_t lid = kHost4Lid + 1; lid < kHost4Lid + 4; ++lid) {
    sm.route(kToLeaf0, lid, 3);
    sm.route(kToSpine0, lid, 3);
    sm.route(kToLeaf2, lid, 1);
    EXPECT_TRUE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, lid)) << lid;
  }
  EXPECT_EQ(fabric->stats().drops_total(), 0U);
}

TEST(SimLidRouted, StrictModeNeedsActivePorts) {
  SimOptions opts;
  opts.lid_routed_needs_active = true;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kPortNotActive), 1U);
  // Activate the links on the way: host0-leaf0, leaf0-spine0, spine0-leaf2, leaf2-host4.
  const std::pair<Path, PortNum> ends[][2] = {
      {{kToHost0, 1}, {kToLeaf0, 1}},
      {{kToLeaf0, 3}, {kToSpine0, 1}},
      {{kToSpine0, 3}, {kToLeaf2, 3}},
      {{kToLeaf2, 1}, {kToHost4, 1}},
  };
  for (const auto& link : ends) {
    for (const auto& [path, port] : link) sm.set_state(path, port, PortState::kArmed);
    for (const auto& [path, port] : link) sm.set_state(path, port, PortState::kActive);
  }
  EXPECT_TRUE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
}

}  // namespace
}  // namespace subnetd::discovery::sim

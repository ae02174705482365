// Multicast forwarding tables through the wire: the MFT SMP codec, the
// simulator's tables and the Programmer. The switches end up holding
// exactly the computed trees; a second pass with what they acknowledged
// sends nothing; a group that goes away is cleared; a switch that forgot
// gets its blocks again.

#include <gtest/gtest.h>

#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/mad/smp.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "routing/mcast.hpp"
#include "routing_test_support.hpp"

namespace subnetd::discovery {
namespace {

using routing::McastGroupIn;
using routing::NodeType;

TEST(MftCodec, RoundTripsAndPacksTheModifier) {
  mad::MulticastForwardingTable t;
  t.masks[0] = 0x8001;
  t.masks[31] = 0x0042;
  std::array<std::uint8_t, mad::kSmpDataSize> bytes{};
  t.encode(bytes);
  EXPECT_EQ(bytes[0], 0x80);
  EXPECT_EQ(bytes[1], 0x01);
  EXPECT_EQ(bytes[63], 0x42);
  EXPECT_EQ(mad::MulticastForwardingTable::decode(bytes), t);
  EXPECT_EQ(mad::MulticastForwardingTable::attr_mod(3, 2), 0x20000003U);
  EXPECT_STREQ(mad::attr_name(mad::AttrId::kMulticastForwardingTable), "MulticastForwardingTable");
}

struct Up {
  std::unique_ptr<sim::SimFabric> sim;
  daemon::BringUpResult r;
};

void bring_up(Up& up) {
  auto truth = daemon::load_topology("fat-tree:levels=2,radix=8");
  ASSERT_TRUE(truth.ok()) << truth.error().message;
  auto made = sim::SimFabric::create(std::move(truth).value(), {});
  ASSERT_TRUE(made.ok()) << made.error().message;
  up.sim = std::move(made).value();
  daemon::BringUpOptions o;
  o.engine = "ftree";
  routing::WorkerPool pool(1);
  auto r = daemon::BringUp::run_blocking(*up.sim, pool, o, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  up.r = std::move(r).value();
}

routing::McastTables trees(const Up& up, const std::vector<McastGroupIn>& groups) {
  routing::WorkerPool pool(1);
  auto t = routing::compute_multicast(up.r.sweep.topology, *up.r.routes, groups, pool);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? std::move(t).value() : routing::McastTables{};
}

ProgramReport program(Up& up, const routing::McastTables& t, HeldBlocks& held,
                      bool only_multicast = false) {
  ProgramOptions o;
  o.activate = false;
  o.only_multicast = only_multicast;
  Programmer programmer(o);
  auto r = run_blocking<Result<ProgramReport>>(*up.sim, [&](MadEngine& engine) {
    ProgramLive live;
    live.multicast = &t;
    live.held_mfts = &held;
    return programmer.program(engine, up.r.sweep, up.r.lids.map, *up.r.routes, nullptr, live);
  });
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.ok() && r->ok()) << (r.ok() && !r->ok() ? r->failures.front() : "");
  return r.ok() ? *r : ProgramReport{};
}

// Every switch holds exactly the computed mask for each MLID.
void expect_held(const Up& up, const routing::McastTables& t, std::uint32_t mlids) {
  const routing::Topology& topo = up.r.sweep.topology;
  for (std::uint32_t s = 0; s < topo.num_switches(); ++s) {
    const NodeId n = topo.switch_node(SwitchIndex{s});
    const auto sn = up.sim->node_by_guid(topo.node(n).guid);
    ASSERT_TRUE(sn.ok());
    for (std::uint32_t m = routing::kMlidBase; m < routing::kMlidBase + mlids; ++m) {
      auto have = up.sim->mft_entry(*sn, Lid{m});
      ASSERT_TRUE(have.ok());
      EXPECT_EQ(*have, t.ports(SwitchIndex{s}, Lid{m})) << topo.label(n) << " MLID " << m;
    }
  }
}

TEST(MftProgramming, SwitchesHoldTheTreesAndOnlyChangesAreSent) {
  Up up;
  bring_up(up);
  if (HasFatalFailure()) return;
  const auto cas = routing::testing::cabled_ca_ports(up.r.sweep.topology);
  // 40 groups: two blocks of MLIDs.
  std::vector<McastGroupIn> groups;
  for (std::uint32_t g = 0; g < 40; ++g) {
    groups.push_back(
        {Lid{routing::kMlidBase + g},
         {cas[g % cas.size()], cas[(g * 7 + 3) % cas.size()], cas[(g * 13) % cas.size()]}});
  }
  groups[0].members = cas;  // a broadcast group
  const routing::McastTables first = trees(up, groups);
  HeldBlocks held;
  const ProgramReport all = program(up, first, held);
  EXPECT_GT(all.mft_blocks_sent, 0U);
  expect_held(up, first, 64);

  const ProgramReport none = program(up, first, held);
  EXPECT_EQ(none.mft_blocks_sent, 0U);
  EXPECT_EQ(none.mft_blocks_unchanged, all.mft_blocks_sent);

  // The groups of the second block go away: their block is cleared on the
  // switches that had them, the first block is left alone.
  groups.resize(32);
  const routing::McastTables second = trees(up, groups);
  const ProgramReport cleared = program(up, second, held);
  EXPECT_GT(cleared.mft_blocks_sent, 0U);
  EXPECT_LT(cleared.mft_blocks_sent, all.mft_blocks_sent);
  expect_held(up, second, 64);

  // A switch that forgot gets every block of its own again.
  const NodeId sw = up.r.sweep.topology.switch_node(SwitchIndex{0});
  held.forget(up.r.sweep.topology.node(sw).guid);
  const ProgramReport again = program(up, second, held);
  const std::uint32_t positions = (up.r.sweep.topology.node(sw).num_ports + 16U) / 16U;
  EXPECT_EQ(again.mft_blocks_sent, positions * 1U) << "one block of MLIDs, every position";
}

// The simulated switches forward no MLID above SwitchInfo:MulticastFDBTop
// (IBA 1.3). A full pass writes it with the trees' highest MLID; a
// multicast-only pass that adds a group in a higher block moves it on the
// switches it changes, without clearing a PortStateChange the SM has not
// swept yet.
TEST(MftProgramming, MulticastFdbTopFollowsTheTrees) {
  Up up;
  bring_up(up);
  if (HasFatalFailure()) return;
  const auto cas = routing::testing::cabled_ca_ports(up.r.sweep.topology);
  std::vector<McastGroupIn> groups = {{Lid{routing::kMlidBase}, cas}};
  const routing::McastTables first = trees(up, groups);
  HeldBlocks held;
  program(up, first, held);
  expect_held(up, first, 1);

  // A host's link goes down (no directed route to a switch crosses it):
  // its leaf raises PortStateChange.
  const routing::Topology& topo = up.r.sweep.topology;
  const NodeId leaf = topo.switch_node(SwitchIndex{0});
  PortNum cabled = 0;
  // The last one: the SM's own host is on the first.
  for (unsigned p = topo.node(leaf).num_ports; p >= 1 && cabled == 0; --p) {
    const auto& port = topo.port(leaf, static_cast<PortNum>(p));
    if (port.connected() && topo.node(port.remote_node).type != NodeType::kSwitch) {
      cabled = static_cast<PortNum>(p);
    }
  }
  ASSERT_NE(cabled, 0);
  const auto sim_leaf = up.sim->node_by_guid(topo.node(leaf).guid);
  ASSERT_TRUE(sim_leaf.ok());
  ASSERT_TRUE(up.sim->link_down(PortRef{*sim_leaf, cabled}).ok());
  up.sim->run_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(*up.sim->port_state_change(*sim_leaf));

  // A group in block 8 (MLID 0xC100), joined by every CA: every switch
  // of its tree forwards it, so their top moved.
  groups.push_back({Lid{routing::kMlidBase + 0x100}, cas});
  const routing::McastTables second = trees(up, groups);
  const ProgramReport r = program(up, second, held, /*only_multicast=*/true);
  EXPECT_GT(r.switch_info_sets, 0U);
  std::uint32_t in_tree = 0;
  for (std::uint32_t s = 0; s < topo.num_switches(); ++s) {
    const NodeId n = topo.switch_node(SwitchIndex{s});
    const auto sn = up.sim->node_by_guid(topo.node(n).guid);
    ASSERT_TRUE(sn.ok());
    const auto have = up.sim->mft_entry(*sn, Lid{routing::kMlidBase + 0x100});
    ASSERT_TRUE(have.ok());
    EXPECT_EQ(*have, second.ports(SwitchIndex{s}, Lid{routing::kMlidBase + 0x100}))
        << topo.label(n);
    in_tree += have->none() ? 0 : 1;
  }
  EXPECT_GT(in_tree, topo.num_switches() / 2);
  EXPECT_TRUE(*up.sim->port_state_change(*sim_leaf)) << "left for the sweep to see";
}

}  // namespace
}  // namespace subnetd::discovery

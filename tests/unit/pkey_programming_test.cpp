// P_Key tables through the wire: the PKeyTable SMP codec, the simulator's
// SMA, and the Programmer. After a bring-up with partitions every port the
// plan gives a table holds exactly that table in the simulator, and every
// switch port facing a CA enforces; a second pass with what the ports
// acknowledged sends nothing, a changed partition sends exactly the blocks
// that changed, and a port that forgot its table (a node reset) gets it again.

#include <gtest/gtest.h>

#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/mad/smp.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "routing/partitions.hpp"

namespace subnetd::discovery {
namespace {

using routing::NodeType;
using routing::PartitionMember;
using routing::PartitionSpec;

TEST(PKeyTableCodec, RoundTripsBigEndianEntries) {
  mad::PKeyTable t;
  t.keys[0] = 0xFFFF;
  t.keys[1] = 0x8001;
  t.keys[31] = 0x0042;
  std::array<std::uint8_t, mad::kSmpDataSize> bytes{};
  t.encode(bytes);
  EXPECT_EQ(bytes[0], 0xFF);
  EXPECT_EQ(bytes[2], 0x80);
  EXPECT_EQ(bytes[3], 0x01);
  EXPECT_EQ(bytes[62], 0x00);
  EXPECT_EQ(bytes[63], 0x42);
  EXPECT_EQ(mad::PKeyTable::decode(bytes), t);
  EXPECT_TRUE(mad::is_known_attr(0x0016));
  EXPECT_STREQ(mad::attr_name(mad::AttrId::kPKeyTable), "P_KeyTable");
}

std::vector<PartitionSpec> specs(std::uint16_t storage_key) {
  PartitionSpec def{"default", routing::kDefaultPKey, true, {}, {{}}};
  def.members[0].full = false;  // all, limited
  PartitionSpec storage{"storage", storage_key, false, {}, {}};
  storage.members.push_back({PartitionMember::Kind::kAll, {}, {}, true});
  return {def, storage};
}

struct Up {
  std::unique_ptr<sim::SimFabric> sim;
  daemon::BringUpResult r;
};

void bring_up(Up& up, std::vector<PartitionSpec> parts) {
  auto truth = daemon::load_topology("fat-tree:levels=2,radix=4");
  ASSERT_TRUE(truth.ok()) << truth.error().message;
  auto made = sim::SimFabric::create(std::move(truth).value(), {});
  ASSERT_TRUE(made.ok()) << made.error().message;
  up.sim = std::move(made).value();
  daemon::BringUpOptions o;
  o.engine = "updn";
  o.partitions = std::move(parts);
  routing::WorkerPool pool(1);
  auto r = daemon::BringUp::run_blocking(*up.sim, pool, o, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  up.r = std::move(r).value();
}

// Every port the plan gives a table holds it; enforcement exactly where the
// plan has it. Returns the ports checked.
std::size_t expect_tables_held(const Up& up, const routing::PartitionPlan& plan) {
  const routing::Topology& t = up.r.sweep.topology;
  std::size_t checked = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const auto sn = up.sim->node_by_guid(t.node(n).guid);
    EXPECT_TRUE(sn.ok());
    if (!sn.ok()) return checked;
    for (unsigned pn = 0; pn <= t.node(n).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      const auto want = plan.table(t, n, p);
      const auto v = up.sim->port_view({*sn, p});
      EXPECT_TRUE(v.ok());
      if (!v.ok()) return checked;
      if (t.node(n).type == NodeType::kSwitch && pn != 0) {
        EXPECT_EQ(v->pkey_enforced, plan.enforced(t.port_index(n, p)))
            << t.label(n) << " port " << pn;
      }
      // An uncabled CA port has a table in the plan, but no route reaches it.
      if (want.empty() || (pn != 0 && !t.port(n, p).connected())) continue;
      ++checked;
      EXPECT_EQ(v->pkeys, std::vector<std::uint16_t>(want.begin(), want.end()))
          << t.label(n) << " port " << pn;
    }
  }
  return checked;
}

// Programs `plan` again on the first pass's sweep, with `held`.
ProgramReport reprogram(Up& up, const routing::PartitionPlan& plan, HeldPKeys& held) {
  ProgramOptions o;
  o.activate = false;  // the sweep's port states are stale: tables only
  Programmer programmer(o);
  auto r = run_blocking<Result<ProgramReport>>(*up.sim, [&](MadEngine& engine) {
    ProgramLive live;
    live.partitions = &plan;
    live.held_pkeys = &held;
    return programmer.program(engine, up.r.sweep, up.r.lids.map, *up.r.routes, nullptr, live);
  });
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : ProgramReport{};
}

TEST(PKeyProgramming, EveryPortHoldsItsPlannedTable) {
  Up up;
  bring_up(up, specs(0x0010));
  if (HasFatalFailure()) return;
  ASSERT_NE(up.r.partitions, nullptr);
  const routing::PartitionPlan& plan = *up.r.partitions;
  const routing::Topology& t = up.r.sweep.topology;
  // The sweep read the switches' PartitionEnforcementCap: they enforce.
  EXPECT_EQ(t.node(t.switch_node(SwitchIndex{0})).partition_enforcement_cap, sim::kPartitionCap);
  const std::size_t checked = expect_tables_held(up, plan);
  // Every cabled CA port, every switch port 0, and the switch side of every
  // CA link.
  std::size_t ca_links = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    if (t.node(NodeId{i}).type == NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(NodeId{i}).num_ports; ++p) {
      ca_links += t.port(NodeId{i}, static_cast<PortNum>(p)).connected() ? 1 : 0;
    }
  }
  EXPECT_EQ(checked, 2 * ca_links + t.num_switches());
  EXPECT_EQ(up.r.program.pkey_blocks_sent, checked * 2) << "64 entries: two blocks a port";
  const NodeId ca = up.r.sweep.sm_node;
  EXPECT_EQ(plan.table(t, ca, up.r.sweep.sm_port)[0], 0xFFFF) << "the SM's port: full member";
}

TEST(PKeyProgramming, SendsOnlyWhatDiffersFromWhatPortsHold) {
  Up up;
  bring_up(up, specs(0x0010));
  if (HasFatalFailure()) return;
  const routing::Topology& t = up.r.sweep.topology;
  const PortRef sm{up.r.sweep.sm_node, up.r.sweep.sm_port};
  HeldPKeys held;
  const routing::PartitionPlan first = routing::plan_partitions(t, specs(0x0010), sm);
  const ProgramReport all = reprogram(up, first, held);
  EXPECT_GT(all.pkey_blocks_sent, 0U) << "nothing held yet";

  const ProgramReport none = reprogram(up, first, held);
  EXPECT_EQ(none.pkey_blocks_sent, 0U);
  EXPECT_EQ(none.pkey_blocks_unchanged, all.pkey_blocks_sent);

  // Another P_Key for the storage partition: block 0 of every table
  // changes, block 1 (empty) does not.
  const routing::PartitionPlan second = routing::plan_partitions(t, specs(0x0020), sm);
  const ProgramReport changed = reprogram(up, second, held);
  EXPECT_EQ(changed.pkey_blocks_sent, all.pkey_blocks_sent / 2);
  expect_tables_held(up, second);

  // A node that forgot: everything of it is sent again.
  held.forget(t.node(sm.node).guid);
  const ProgramReport again = reprogram(up, second, held);
  EXPECT_EQ(again.pkey_blocks_sent, 2U) << "the SM's CA: one port, two blocks";
}

TEST(PKeyProgramming, SimulatorRejectsBlocksBeyondItsCapacity) {
  Up up;
  bring_up(up, {});
  if (HasFatalFailure()) return;
  const routing::Topology& t = up.r.sweep.topology;
  const NodeId sw = t.switch_node(SwitchIndex{0});
  auto status = [&](std::uint32_t attr_mod) {
    return run_blocking<std::uint16_t>(
        *up.sim, [&](MadEngine& engine) -> boost::asio::awaitable<std::uint16_t> {
          Flow flow(engine, {});
          std::uint16_t out = 0xFFFF;
          mad::Smp smp = mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kPKeyTable, attr_mod,
                                          up.r.sweep.paths.path(sw), 0);
          flow.submit(smp, 0, [&out](Result<mad::Smp> r) {
            out = r.ok() ? r->status : std::uint16_t{0xEEEE};
          });
          co_await flow.drained();
          co_return out;
        });
  };
  EXPECT_EQ(status(1), mad::status::kOk) << "port 0, block 1";
  EXPECT_EQ(status((1U << 16) | 1), mad::status::kOk) << "port 1, block 1";
  EXPECT_NE(status(2), mad::status::kOk) << "block 2: beyond 64 entries";
  EXPECT_NE(status(200U << 16), mad::status::kOk) << "no port 200";
}

}  // namespace
}  // namespace subnetd::discovery

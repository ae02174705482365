// SL-to-VL and VL arbitration tables: the policy (every SL on a data VL the
// port runs, equal low-priority shares, no high priority), the simulator's
// tables after a Programmer pass (switches take one Set for every port, as
// they claim OptimizedSLtoVLMappingProgramming), a second pass with what
// ports acknowledged sends nothing, a port whose node reset gets its tables
// again, and the SA answers what was programmed.

#include "discovery/vl_tables.hpp"

#include <gtest/gtest.h>

#include "bringup_test_support.hpp"
#include "daemon/bringup.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "routing_test_support.hpp"

namespace subnetd::discovery {
namespace {

TEST(VlTables, PolicyPutsEverySlOnARunningVl) {
  EXPECT_EQ(data_vls(0), 1U);
  EXPECT_EQ(data_vls(1), 1U);
  EXPECT_EQ(data_vls(3), 4U);
  EXPECT_EQ(data_vls(5), 15U);
  for (const unsigned n : {1U, 2U, 4U, 8U, 15U}) {
    const auto t = sl2vl_table(n);
    for (unsigned sl = 0; sl < 16; ++sl) {
      EXPECT_LT(t.vl[sl], n) << "SL " << sl << " with " << n << " VLs";
      EXPECT_NE(t.vl[sl], 15) << "VL15 carries management only";
    }
    EXPECT_EQ(t.vl[0], 0) << "SL 0, what PathRecords give, is VL0";
  }
  // Low priority: one entry per data VL, within the port's cap.
  const auto low = vlarb_block(4, 1, 32, 32);
  ASSERT_TRUE(low.has_value());
  for (unsigned e = 0; e < 32; ++e) {
    EXPECT_EQ(low->entries[e].weight, e < 4 ? kVlArbWeight : 0) << e;
    if (e < 4) {
      EXPECT_EQ(low->entries[e].vl, e);
    }
  }
  EXPECT_EQ(vlarb_block(8, 1, 2, 0)->entries[2].weight, 0) << "cut to the cap";
  // High priority: empty; blocks past the caps do not exist.
  const auto high = vlarb_block(4, 3, 32, 8);
  ASSERT_TRUE(high.has_value());
  for (const auto& e : high->entries) EXPECT_EQ(e.weight, 0);
  EXPECT_FALSE(vlarb_block(4, 2, 32, 32).has_value());
  EXPECT_TRUE(vlarb_block(4, 2, 64, 32).has_value());
  EXPECT_FALSE(vlarb_block(4, 3, 32, 0).has_value());
  EXPECT_FALSE(vlarb_block(4, 5, 64, 64).has_value());
}

struct Up {
  std::unique_ptr<sim::SimFabric> sim;
  daemon::BringUpResult r;
};

void bring_up(Up& up) {
  up.sim = bringup_testing::sim_of("fat-tree:levels=2,radix=4");
  ASSERT_NE(up.sim, nullptr);
  daemon::BringUpOptions o;
  o.engine = "updn";
  routing::WorkerPool pool(1);
  auto r = daemon::BringUp::run_blocking(*up.sim, pool, o, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  up.r = std::move(r).value();
}

ProgramReport program(Up& up, HeldVls& held) {
  ProgramOptions o;
  o.activate = false;
  Programmer programmer(o);
  auto r = run_blocking<Result<ProgramReport>>(*up.sim, [&](MadEngine& engine) {
    ProgramLive live;
    live.held_vls = &held;
    return programmer.program(engine, up.r.sweep, up.r.lids.map, *up.r.routes, nullptr, live);
  });
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.ok() && r->ok()) << (r.ok() && !r->ok() ? r->failures.front() : "");
  return r.ok() ? *r : ProgramReport{};
}

// Writes something else (every SL on VL3) into every port's SL2VL table
// first, so that the pass has to change them.
void scramble(Up& up) {
  const routing::Topology& t = up.r.sweep.topology;
  mad::SlToVlMappingTable other;
  other.vl.fill(3);
  auto done = run_blocking<Result<void>>(
      *up.sim, [&](MadEngine& engine) -> boost::asio::awaitable<Result<void>> {
        Flow flow(engine, {});
        std::size_t failed = 0;
        auto check = [&failed](Result<void> r) { failed += r.ok() ? 0 : 1; };
        for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
          const NodeId n{i};
          const bool sw = t.node(n).type == routing::NodeType::kSwitch;
          for (unsigned p = sw ? 0 : 1; p <= (sw ? 0U : t.node(n).num_ports); ++p) {
            if (!sw && !t.port(n, static_cast<PortNum>(p)).connected()) continue;
            mad::Smp smp = mad::make_dr_smp(
                mad::Method::kSet, mad::AttrId::kSlToVlMappingTable,
                sw ? kSl2VlAllInputs | kSl2VlAllOutputs : 0,
                sw ? up.r.sweep.paths.path(n) : up.r.sweep.path_to_port(n, static_cast<PortNum>(p)),
                0);
            other.encode(mad::data_of(smp));
            flow.submit_checked(smp, 0, check);
          }
        }
        co_await flow.drained();
        if (failed != 0) co_return Error{Errc::kInvalidArgument, "scramble failed"};
        co_return Result<void>{};
      });
  ASSERT_TRUE(done.ok()) << done.error().message;
}

TEST(VlTables, EveryPortHoldsThemAndOnlyChangesAreSent) {
  Up up;
  bring_up(up);
  if (HasFatalFailure()) return;
  scramble(up);
  if (HasFatalFailure()) return;
  const routing::Topology& t = up.r.sweep.topology;
  // The simulator numbers its nodes as its wiring was built; the sweep as it
  // found them.
  auto sim_node = [&](NodeId n) { return *up.sim->node_by_guid(t.node(n).guid); };
  const NodeId spine = t.switch_node(SwitchIndex{static_cast<std::uint32_t>(t.num_switches() - 1)});
  EXPECT_EQ(up.sim->sl2vl(sim_node(spine), 1, (2U << 8) | 1U)->vl[0], 3) << "scrambled";
  HeldVls held;
  const ProgramReport first = program(up, held);
  // One SL2VL Set per switch, one per cabled CA port.
  std::uint64_t ca_ports = 0, cabled_switch_ports = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      if (!t.port(n, static_cast<PortNum>(p)).connected()) continue;
      (t.node(n).type == routing::NodeType::kSwitch ? cabled_switch_ports : ca_ports) += 1;
    }
  }
  EXPECT_EQ(first.sl2vl_sets, t.num_switches() + ca_ports);
  EXPECT_EQ(first.vlarb_sets, 2 * (ca_ports + cabled_switch_ports)) << "low and high, 32 each";

  // What every port holds: SL s on VL (s mod 1) = 0 between every pair of
  // a switch's ports, VL0 alone in the low-priority table.
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = t.node(n).type == routing::NodeType::kSwitch;
    for (unsigned out = 1; out <= t.node(n).num_ports; ++out) {
      if (!t.port(n, static_cast<PortNum>(out)).connected()) continue;
      for (unsigned in = 0; in <= (sw ? t.node(n).num_ports : 0U); ++in) {
        const auto table =
            up.sim->sl2vl(sim_node(n), static_cast<PortNum>(out), sw ? (in << 8) | out : 0);
        ASSERT_TRUE(table.ok()) << table.error().message;
        EXPECT_EQ(*table, sl2vl_table(1)) << t.label(n) << " " << in << "->" << out;
      }
      const auto low =
          up.sim->vlarb(sim_node(n), static_cast<PortNum>(out), (1U << 16) | (sw ? out : 0));
      ASSERT_TRUE(low.ok());
      EXPECT_EQ(low->entries[0].weight, kVlArbWeight) << t.label(n) << " port " << out;
      EXPECT_EQ(low->entries[1].weight, 0);
    }
  }

  // A second pass sends nothing; a node that reset gets its tables again.
  const ProgramReport none = program(up, held);
  EXPECT_EQ(none.sl2vl_sets + none.vlarb_sets, 0U);
  EXPECT_EQ(none.vl_ports_unchanged, ca_ports + cabled_switch_ports);
  const NodeId leaf = t.switch_node(SwitchIndex{0});
  held.forget(t.node(leaf).guid);
  const ProgramReport again = program(up, held);
  EXPECT_EQ(again.sl2vl_sets, 1U);
  EXPECT_GT(again.vlarb_sets, 0U);
}

// Layered routing on a torus: the routing's layers run on every link (both
// ends, OperationalVLs for as many data VLs as layers), SL i maps to VL i
// between every pair of switch ports, and the SA's PathRecords give the
// destination's layer as SL. A bring-up onto ACTIVE ports that ran one VL
// changes them in place (phase 1c), and a second pass changes nothing.
TEST(VlTables, LayeredRoutingRunsItsLayersOnEveryLink) {
  Up up;
  up.sim = bringup_testing::sim_of("torus:dims=5x5,hosts=1");
  ASSERT_NE(up.sim, nullptr);
  routing::WorkerPool pool(1);
  daemon::BringUpOptions o;
  o.engine = "updn";
  auto first = daemon::BringUp::run_blocking(*up.sim, pool, o, nullptr);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->routes->num_vls, 1);
  EXPECT_EQ(first->program.operational_vls_sets, 0U);

  o.engine = "layered";
  auto r = daemon::BringUp::run_blocking(*up.sim, pool, o, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  up.r = std::move(r).value();
  const routing::Topology& t = up.r.sweep.topology;
  const unsigned layers = up.r.routes->num_vls;
  ASSERT_EQ(layers, 4U) << "dimension-order routes on two rings of five: three layers "
                           "(routing/engines/dor.hpp) and multicast's VL 0";
  const std::uint8_t want = operational_vls_for(layers);
  ASSERT_GE(data_vls(want), layers);
  auto sim_node = [&](NodeId n) { return *up.sim->node_by_guid(t.node(n).guid); };
  std::uint64_t cabled = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = t.node(n).type == routing::NodeType::kSwitch;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      if (!t.port(n, static_cast<PortNum>(p)).connected()) continue;
      ++cabled;
      const auto v = up.sim->port_view({sim_node(n), static_cast<PortNum>(p)});
      ASSERT_TRUE(v.ok());
      EXPECT_EQ(v->operational_vls, want) << t.label(n) << " port " << p;
      if (!sw) continue;
      for (unsigned in = 1; in <= t.node(n).num_ports; ++in) {
        if (in == p || !t.port(n, static_cast<PortNum>(in)).connected()) continue;
        const auto table = up.sim->sl2vl(sim_node(n), static_cast<PortNum>(p), (in << 8) | p);
        ASSERT_TRUE(table.ok());
        for (unsigned sl = 0; sl < layers; ++sl) {
          EXPECT_EQ(table->vl[sl], sl) << t.label(n) << " " << in << "->" << p << " SL " << sl;
        }
      }
    }
  }
  EXPECT_EQ(up.r.program.operational_vls_sets, cabled) << "every ACTIVE port changed in place";
  EXPECT_EQ(up.r.program.ports_armed, 0U);

  // Once more: nothing left to change.
  auto again = daemon::BringUp::run_blocking(*up.sim, pool, o, nullptr);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->routes->num_vls, layers);
  EXPECT_EQ(again->program.operational_vls_sets, 0U);
}

// Dimension order on per-hop VLs (a torus whose layers exceed the VLs):
// each switch output port holds the routes' own SL2VL, the same from
// every input port, sent once per output port; a second pass sends none.
TEST(VlTables, PerHopVlsGoToEachOutputPort) {
  Up up;
  up.sim = bringup_testing::sim_of("torus:dims=6x6,hosts=1");
  ASSERT_NE(up.sim, nullptr);
  routing::WorkerPool pool(1);
  daemon::BringUpOptions o;
  o.engine = "layered";
  o.max_vls = 3;
  auto r = daemon::BringUp::run_blocking(*up.sim, pool, o, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  up.r = std::move(r).value();
  const routing::Routes& routes = *up.r.routes;
  ASSERT_TRUE(routes.per_hop_vls()) << "a 6x6 torus needs 5 VLs in layers, 3 on datelines";
  ASSERT_EQ(routes.num_vls, 3);
  const routing::Topology& t = up.r.sweep.topology;
  auto sim_node = [&](NodeId n) { return *up.sim->node_by_guid(t.node(n).guid); };
  std::uint64_t switch_ports = 0, ca_ports = 0, on_vl2 = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = t.node(n).type == routing::NodeType::kSwitch;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      if (!t.port(n, static_cast<PortNum>(p)).connected()) continue;
      (sw ? switch_ports : ca_ports) += 1;
      if (!sw) continue;
      for (unsigned in = 0; in <= t.node(n).num_ports; ++in) {
        const auto table = up.sim->sl2vl(sim_node(n), static_cast<PortNum>(p), (in << 8) | p);
        ASSERT_TRUE(table.ok());
        for (unsigned sl = 0; sl < 16; ++sl) {
          const std::uint8_t want =
              routes.hop_vl(t.node(n).switch_index.value, static_cast<std::uint8_t>(p),
                            static_cast<std::uint8_t>(sl));
          EXPECT_EQ(table->vl[sl], want) << t.label(n) << " " << in << "->" << p << " SL " << sl;
          on_vl2 += in == 0 && want == 2 ? 1 : 0;
        }
      }
    }
  }
  EXPECT_GT(on_vl2, 0U) << "hops before a dateline";
  EXPECT_EQ(up.r.program.sl2vl_sets, switch_ports + ca_ports);
  HeldVls held;
  const ProgramReport first = program(up, held);
  EXPECT_EQ(first.sl2vl_sets, switch_ports + ca_ports);
  const ProgramReport none = program(up, held);
  EXPECT_EQ(none.sl2vl_sets + none.vlarb_sets, 0U);
  EXPECT_EQ(none.vl_ports_unchanged, switch_ports + ca_ports);
}

// The VLs the layered engine may use: the least VLCap of the switch links.
TEST(VlTables, FabricDataVlsIsTheLeastSwitchLinkCap) {
  const routing::Topology t = routing::testing::make_fabric("torus:dims=3x3,hosts=1").topo;
  std::vector<std::array<std::uint8_t, 64>> read(t.num_ports_total());
  EXPECT_EQ(fabric_data_vls(t, read), 1U) << "nothing read";
  auto set_cap = [&](NodeId n, PortNum p, std::uint8_t cap) {
    mad::PortInfo pi;
    pi.vl_cap = cap;
    pi.encode(read[t.port_index(n, p)]);
  };
  NodeId ca;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = t.node(n).type == routing::NodeType::kSwitch;
    if (!sw) ca = n;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      set_cap(n, static_cast<PortNum>(p), sw ? 4 : 1);  // 8 data VLs; CAs 1
    }
  }
  EXPECT_EQ(fabric_data_vls(t, read), 8U) << "CA links do not count";
  const NodeId sw0 = t.switch_node(SwitchIndex{0});
  PortNum linked{};
  for (unsigned p = 1; p <= t.node(sw0).num_ports; ++p) {
    const routing::Port& port = t.port(sw0, static_cast<PortNum>(p));
    if (port.connected() && t.node(port.remote_node).type == routing::NodeType::kSwitch) {
      linked = static_cast<PortNum>(p);
      break;
    }
  }
  ASSERT_NE(linked, 0);
  set_cap(sw0, linked, 2);  // 2 data VLs on one switch link
  EXPECT_EQ(fabric_data_vls(t, read), 2U);
  // Both ends of a link run the lesser cap's VLs, no more than the layers
  // need.
  const routing::Port& far = t.port(sw0, linked);
  EXPECT_EQ(port_link_settings(t, read, far.remote_node, far.remote_port, 8).operational_vls, 2);
  EXPECT_EQ(port_link_settings(t, read, sw0, linked, 1).operational_vls, 1);
  EXPECT_EQ(operational_vls_for(1), 1);
  EXPECT_EQ(operational_vls_for(2), 2);
  EXPECT_EQ(operational_vls_for(3), 3);
  EXPECT_EQ(operational_vls_for(5), 4);
  EXPECT_EQ(operational_vls_for(9), 5);
  // A CA port's link: the CA's cap.
  const routing::Port& ca_port = t.port(ca, PortNum{1});
  EXPECT_EQ(
      port_link_settings(t, read, ca_port.remote_node, ca_port.remote_port, 8).operational_vls, 1);
}

}  // namespace
}  // namespace subnetd::discovery

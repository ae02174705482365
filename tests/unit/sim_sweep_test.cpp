// The simulator under the real SM pieces: the Sweeper rediscovers generated
// fabrics through it, the LidAssigner, a routing engine and the Programmer
// configure them, and then every end port answers a LID-routed SMP that the
// switches forward through the tables the Programmer wrote into each of
// them. A wrong table anywhere shows up as a missing answer and a drop count.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unordered_map>

#include "discovery/mad/smp.hpp"
#include "discovery/programmer.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/sweeper.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"

namespace subnetd::discovery::sim {
namespace {

using namespace std::chrono_literals;
using routing::NodeType;
using routing::PortState;

struct Case {
  const char* spec;
  int lid_bits;
  // Remembered LIDs from this base (extended modes: LIDs past 0xFFFF).
  std::uint32_t lid_base;
};

std::string case_name(const testing::TestParamInfo<Case>& i) {
  std::string s = fmt::format("{}_{}bit", i.param.spec, i.param.lid_bits);
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

class SimSweep : public testing::TestWithParam<Case> {};

TEST_P(SimSweep, SweepProgramAndRouteEveryLid) {
  const Case& c = GetParam();
  auto generated = topo::generate(c.spec);
  ASSERT_TRUE(generated.ok()) << generated.error().message;
  const routing::Topology truth = *generated;
  SimOptions so;
  so.lid_bits = c.lid_bits;
  auto made = SimFabric::create(std::move(generated).value(), so);
  ASSERT_TRUE(made.ok()) << made.error().message;
  SimFabric& sim = **made;
  const routing::LidSpace space{c.lid_bits};

  // 1. Discovery: the same nodes and the same cables.
  SweepOptions sweep_opts;
  sweep_opts.extended_lids = space.extended();
  auto swept = Sweeper(sim, sweep_opts).run();
  ASSERT_TRUE(swept.ok()) << swept.error().message;
  const routing::Topology& found = swept->topology;
  EXPECT_TRUE(swept->unreachable.empty()) << swept->unreachable.front();
  ASSERT_EQ(found.num_nodes(), truth.num_nodes());
  EXPECT_EQ(found.num_switches(), truth.num_switches());
  EXPECT_EQ(found.num_links(), truth.num_links());
  for (std::uint32_t i = 0; i < found.num_nodes(); ++i) {
    const routing::Node& fn = found.node(NodeId{i});
    const auto t = truth.find_by_guid(fn.guid);
    ASSERT_TRUE(t.has_value()) << fmt::format("{:#x}", fn.guid.value);
    EXPECT_EQ(fn.description, truth.node(*t).description);
    for (unsigned p = 1; p <= fn.num_ports; ++p) {
      const routing::Port& fp = found.port(NodeId{i}, static_cast<PortNum>(p));
      const routing::Port& tp = truth.port(*t, static_cast<PortNum>(p));
      ASSERT_EQ(fp.connected(), tp.connected()) << fn.description << " port " << p;
      if (!fp.connected()) continue;
      EXPECT_EQ(found.node(fp.remote_node).guid, truth.node(tp.remote_node).guid);
      EXPECT_EQ(fp.remote_port, tp.remote_port);
    }
  }
  EXPECT_EQ(sim.stats().drops_total(), 0U);

  // 2. LIDs (remembered ones from lid_base, to push them past 16 bits),
  //    routes, programming.
  routing::LidAssignOptions lid_opts;
  lid_opts.space = space;
  std::uint32_t next = c.lid_base;
  for (std::uint32_t i = 0; i < found.num_nodes() && c.lid_base != 0; ++i) {
    const NodeId n{i};
    const routing::Node& node = found.node(n);
    if (node.type == NodeType::kSwitch) {
      lid_opts.previous.push_back({found.port(n, 0).guid, Lid{next++}});
    } else {
      for (unsigned p = 1; p <= node.num_ports; ++p) {
        if (!found.port(n, static_cast<PortNum>(p)).connected()) continue;
        lid_opts.previous.push_back({found.port(n, static_cast<PortNum>(p)).guid, Lid{next++}});
      }
    }
  }
  auto lids = routing::assign_lids(found, lid_opts);
  ASSERT_TRUE(lids.ok()) << lids.error().message;
  auto engine = routing::make_engine("updn");
  ASSERT_TRUE(engine.ok());
  routing::WorkerPool pool(1);
  auto routes = (*engine)->compute(found, lids->map, {}, pool, {});
  ASSERT_TRUE(routes.ok()) << routes.error().message;
  auto report = Programmer(sim, {}).program(*swept, lids->map, *routes, nullptr);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_TRUE(report->ok()) << report->failures.front();
  EXPECT_GT(report->ports_activated, 0U);
  EXPECT_EQ(sim.stats().drops_total(), 0U);

  // Every cabled port is ACTIVE; every end port holds the LID assigned to it.
  for (std::uint32_t i = 0; i < found.num_nodes(); ++i) {
    const NodeId n{i};
    const NodeId t = *truth.find_by_guid(found.node(n).guid);
    const bool sw = found.node(n).type == NodeType::kSwitch;
    for (unsigned p = sw ? 0 : 1; p <= found.node(n).num_ports; ++p) {
      const auto pn = static_cast<PortNum>(p);
      const PortView v = *sim.port_view({t, pn});
      if (p > 0 && found.port(n, pn).connected()) {
        EXPECT_EQ(v.state, PortState::kActive);
      }
      if (p == 0 || (!sw && found.port(n, pn).connected())) {
        EXPECT_EQ(v.lid, lids->map.base_lid(found, n, pn)) << found.node(n).description;
      }
    }
  }

  // 3. A LID-routed NodeInfo to every LID, answered by its owner through the
  //    switches' own tables.
  const std::uint32_t sm_lid = lids->map.base_lid(found, swept->sm_node, swept->sm_port).value;
  std::uint64_t tid = 0x9000;
  std::size_t answered = 0;
  std::size_t probed = 0;
  for (std::uint32_t lid = 1; lid <= lids->map.max_lid.value; ++lid) {
    const PortRef owner = lids->map.owner_of(Lid{lid});
    if (!owner.node.valid()) continue;
    ++probed;
    Mad m;
    mad::encode_smp(mad::make_lr_smp(mad::Method::kGet, mad::AttrId::kNodeInfo, 0, ++tid),
                    std::span<std::uint8_t, kMadSize>(m.data));
    m.dlid = lid;
    m.slid = sm_lid;
    ASSERT_TRUE(sim.send(m).ok());
    auto got = sim.receive(1ms);
    ASSERT_TRUE(got.ok());
    if (!got->has_value()) {
      ADD_FAILURE() << "no answer from LID " << lid << " (" << found.node(owner.node).description
                    << ")";
      continue;
    }
    auto r = mad::decode_smp((*got)->data);
    ASSERT_TRUE(r.ok());
    if (r->method != mad::Method::kGetResp) continue;  // a trap: not expected here
    EXPECT_EQ(r->tid, tid);
    EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, found.node(owner.node).guid.value);
    EXPECT_EQ((*got)->slid, lid);
    EXPECT_EQ((*got)->dlid, sm_lid);
    ++answered;
  }
  EXPECT_EQ(answered, probed);
  EXPECT_EQ(sim.stats().drops_total(), 0U);

  // 4. A cut switch-to-switch cable: both switches report it (trap 128,
  //    LID-routed to the SM through the programmed tables).
  for (std::uint32_t s = 0; s < truth.num_switches(); ++s) {
    const NodeId sw = truth.switch_node(SwitchIndex{s});
    for (unsigned p = 1; p <= truth.node(sw).num_ports; ++p) {
      const routing::Port& tp = truth.port(sw, static_cast<PortNum>(p));
      if (!tp.connected() || truth.node(tp.remote_node).type != NodeType::kSwitch) continue;
      ASSERT_TRUE(sim.link_down({sw, static_cast<PortNum>(p)}).ok());
      std::unordered_map<std::uint32_t, int> issuers;
      for (;;) {
        auto got = sim.receive(0us);
        ASSERT_TRUE(got.ok());
        if (!got->has_value()) break;
        auto r = mad::decode_smp((*got)->data);
        ASSERT_TRUE(r.ok());
        ASSERT_EQ(r->method, mad::Method::kTrap);
        ++issuers[mad::Notice::decode(mad::data_of(*r)).trap128_lid(space.extended())];
      }
      const NodeId fa = *found.find_by_guid(truth.node(sw).guid);
      const NodeId fb = *found.find_by_guid(truth.node(tp.remote_node).guid);
      const std::uint32_t la = lids->map.base_lid(found, fa, 0).value;
      const std::uint32_t lb = lids->map.base_lid(found, fb, 0).value;
      // A switch whose own way to the SM ran over the cut cable cannot
      // report; at least one of the two always can in these fabrics.
      EXPECT_GE(issuers.size(), 1U);
      for (const auto& [issuer, copies] : issuers) {
        EXPECT_TRUE(issuer == la || issuer == lb) << issuer;
        EXPECT_EQ(copies, 1);
      }
      return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fabrics, SimSweep,
                         testing::Values(Case{"fat-tree:levels=2,radix=8", 16, 0},
                                         Case{"fat-tree:levels=3,k=8", 16, 0},
                                         Case{"torus:dims=3x3,hosts=2", 16, 0},
                                         Case{"random:switches=12,degree=4,hosts=2,seed=3", 16, 0},
                                         Case{"fat-tree:levels=3,k=8", 24, 0x10000},
                                         Case{"fat-tree:levels=2,radix=8", 17, 0x1A000}),
                         case_name);

// The latency model puts a number on a sweep: with 200 ns hops and 2 us per
// SMA, a k=8 fat tree (208 nodes, window 64) takes a few milliseconds of
// transport time, and a narrower window takes longer.
TEST(SimSweepTiming, LatencyModelTimesASweep) {
  std::chrono::nanoseconds duration[2];
  const unsigned windows[2] = {64, 4};
  for (int i = 0; i < 2; ++i) {
    auto topo = topo::generate("fat-tree:levels=3,k=8");
    ASSERT_TRUE(topo.ok());
    SimOptions so;
    so.latency = LatencyModel{};
    auto sim = SimFabric::create(std::move(topo).value(), so);
    ASSERT_TRUE(sim.ok());
    SweepOptions o;
    o.pipeline.window = windows[i];
    auto swept = Sweeper(**sim, o).run();
    ASSERT_TRUE(swept.ok());
    EXPECT_EQ(swept->topology.num_nodes(), 208U);
    duration[i] = swept->duration;
    EXPECT_EQ((*sim)->now(), swept->duration) << "the sweep started at transport time 0";
  }
  EXPECT_GT(duration[0], 100us);
  EXPECT_LT(duration[0], 50ms);
  EXPECT_GT(duration[1], duration[0]) << "a narrow window serialises the sweep";
}

}  // namespace
}  // namespace subnetd::discovery::sim

// Sweeper against the simulator: for every generator family and every ibsim
// example net file the discovered Topology must equal the truth the
// simulator was built from, compared by GUID (nodes, types, port counts,
// descriptions, system/port GUIDs, every cable, width and speed), and every
// directed-route path must lead to its node. Then the awkward cases: CAs
// with ports on two switches, dark switch ports, switches without CAs, a
// neighbour that never answers, SMP windows of 1/8/256, random loss, cut
// cables, and malformed or implausible answers.

#include "discovery/sweeper.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <functional>

#include "bringup_test_support.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"

namespace subnetd::discovery {
namespace {

using bringup_testing::check_dr_paths;
using bringup_testing::diff_topologies;
using bringup_testing::join_lines;
using routing::NodeType;
using routing::PortState;
using routing::Topology;
using sim::DropReason;
using sim::SimFabric;
using sim::SimOptions;
using namespace std::chrono_literals;

std::unique_ptr<SimFabric> make_sim(Topology t, SimOptions o = {}) {
  auto s = SimFabric::create(std::move(t), o);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

Topology load(const std::string& spec_or_path) {
  auto t = daemon::load_topology(spec_or_path);
  EXPECT_TRUE(t.ok()) << spec_or_path << ": " << t.error().message;
  return t.ok() ? std::move(t).value() : Topology{};
}

PortRef sm_port_of(const SimFabric& sim) {
  const LocalPort lp = sim.local_port();
  return PortRef{*sim.topology().find_by_guid(lp.node_guid), lp.port_num};
}

// Sweeps `sim` and checks the result against `expected` (the truth, with any
// cables cut in the simulator also disconnected here).
void expect_discovers(SimFabric& sim, const Topology& expected, SweepOptions opts = {},
                      SweepResult* out = nullptr) {
  auto r = Sweeper(sim, opts).run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const PortRef sm = sm_port_of(sim);
  const auto diff = diff_topologies(expected, sm, r->topology);
  EXPECT_TRUE(diff.empty()) << diff.size() << " differences:" << join_lines(diff);
  const auto paths = check_dr_paths(sim.topology(), sm, *r);
  EXPECT_TRUE(paths.empty()) << join_lines(paths);
  EXPECT_TRUE(r->unreachable.empty()) << join_lines(r->unreachable);
  EXPECT_TRUE(r->warnings.empty()) << join_lines(r->warnings);
  EXPECT_EQ(r->topology.node(r->sm_node).guid, sim.local_port().node_guid);
  EXPECT_EQ(r->sm_port, sim.local_port().port_num);
  EXPECT_EQ(r->paths.size(), r->topology.num_nodes());
  EXPECT_TRUE(r->topology.validate().ok());
  if (out != nullptr) *out = std::move(r).value();
}

// ------------------------------------------------------------------ every family

class Families : public testing::TestWithParam<std::string> {};

TEST_P(Families, DiscoversTheTruth) {
  const Topology truth = load(GetParam());
  ASSERT_GT(truth.num_nodes(), 0U);
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  SweepResult r;
  expect_discovers(*sim, truth, {}, &r);
  EXPECT_EQ(sim->stats().drops_total(), 0U);
  EXPECT_EQ(r.smps.timeouts, 0U);
  EXPECT_EQ(r.smps.retries, 0U);
  EXPECT_EQ(r.malformed, 0U);
  // A fresh fabric: every cabled port trained to INIT, nothing has a LID.
  // What the SA reports comes from the sweep too: the simulator's SMAs
  // answer device ID = node type, revision 1, PartitionCap 64, MTUCap 4096.
  for (std::uint32_t i = 0; i < r.topology.num_nodes(); ++i) {
    const routing::Node& n = r.topology.node(NodeId{i});
    EXPECT_EQ(n.device_id, static_cast<std::uint16_t>(n.type)) << n.description;
    EXPECT_EQ(n.revision, 1U) << n.description;
    EXPECT_EQ(n.partition_cap, 64U) << n.description;
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      const routing::Port& port = r.topology.port(NodeId{i}, static_cast<PortNum>(p));
      if (!port.connected()) continue;
      EXPECT_EQ(port.state, PortState::kInit) << n.description << " port " << p;
      EXPECT_EQ(port.phys_state, 5) << n.description << " port " << p;
      EXPECT_EQ(port.lid.value, 0U);
      EXPECT_EQ(port.mtu_cap, 5) << n.description << " port " << p;
      // The PortInfo bytes as read, for the SA's PortInfoRecords.
      const std::uint32_t at = r.topology.port_index(NodeId{i}, static_cast<PortNum>(p));
      ASSERT_LT(at, r.port_info.size());
      const auto pi = discovery::mad::PortInfo::decode(r.port_info[at]);
      EXPECT_EQ(pi.mtu_cap, port.mtu_cap);
      EXPECT_EQ(pi.port_state, static_cast<std::uint8_t>(port.state));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Generators, Families, testing::ValuesIn(bringup_testing::family_specs()),
                         [](const auto& i) { return bringup_testing::param_name(i.param); });

class NetFiles : public testing::TestWithParam<std::string> {};

TEST_P(NetFiles, DiscoversTheTruth) {
  const Topology truth = load(GetParam());
  ASSERT_GT(truth.num_nodes(), 0U);
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  expect_discovers(*sim, truth);
  EXPECT_EQ(sim->stats().drops_total(), 0U);
}

INSTANTIATE_TEST_SUITE_P(IbsimExamples, NetFiles,
                         testing::ValuesIn(bringup_testing::ibsim_net_files()), [](const auto& i) {
                           return bringup_testing::param_name(
                               std::filesystem::path(i.param).filename().string());
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NetFiles);  // ibsim-utils not installed

TEST(NetFiles, ExamplesArePresent) {
  if (bringup_testing::ibsim_net_files().empty()) GTEST_SKIP() << "ibsim-utils not installed";
  EXPECT_GE(bringup_testing::ibsim_net_files().size(), 5U);
}

// ------------------------------------------------------------------ the awkward shapes

// A hand-built fabric: two switches joined by one cable, a dual-port CA with
// a port on each switch, the SM's CA on the first switch, and a second
// dual-port CA bridging the second switch to a third switch that has no
// other cable. Directed routes do not pass through CAs, so the third switch
// is invisible, and so is the bridging CA's second cable. The second switch's
// port GUID differs from its node GUID.
TEST(Sweeper, CaPortsOnDifferentSwitches) {
  Topology t;
  const NodeId a = t.add_node(NodeType::kSwitch, Guid{0x100}, 8, "swA");
  const NodeId b = t.add_node(NodeType::kSwitch, Guid{0x200}, 8, "swB");
  const NodeId c = t.add_node(NodeType::kSwitch, Guid{0x300}, 8, "swC");
  const NodeId sm = t.add_node(NodeType::kCa, Guid{0x1000}, 1, "sm-ca");
  const NodeId dual = t.add_node(NodeType::kCa, Guid{0x2000}, 2, "dual");
  const NodeId bridge = t.add_node(NodeType::kCa, Guid{0x3000}, 2, "bridge");
  // IBA lets a switch's port GUID differ from its node GUID; LIDs are
  // remembered by port GUID, so the sweep must keep the real one.
  t.mutable_port(b, 0).guid = Guid{0x2FF};
  ASSERT_TRUE(t.connect({sm, 1}, {a, 1}).ok());
  ASSERT_TRUE(t.connect({a, 5}, {b, 6}).ok());
  ASSERT_TRUE(t.connect({dual, 1}, {a, 3}).ok());
  ASSERT_TRUE(t.connect({dual, 2}, {b, 4}).ok());
  ASSERT_TRUE(t.connect({bridge, 1}, {b, 8}).ok());
  ASSERT_TRUE(t.connect({bridge, 2}, {c, 2}).ok());
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    for (unsigned p = 1; p <= t.node(NodeId{i}).num_ports; ++p) {
      t.mutable_port(NodeId{i}, static_cast<PortNum>(p)).state = PortState::kInit;
    }
  }
  SimOptions o;
  o.sm_node = "sm-ca";
  auto sim = make_sim(t, o);
  ASSERT_TRUE(sim);
  SweepResult r;
  expect_discovers(*sim, t, {}, &r);
  ASSERT_EQ(r.topology.num_nodes(), 5U);
  EXPECT_FALSE(r.topology.find_by_guid(Guid{0x300}).has_value());
  const NodeId fd = *r.topology.find_by_guid(Guid{0x2000});
  const routing::Port& d1 = r.topology.port(fd, 1);
  const routing::Port& d2 = r.topology.port(fd, 2);
  ASSERT_TRUE(d1.connected() && d2.connected());
  EXPECT_EQ(r.topology.node(d1.remote_node).guid, Guid{0x100});
  EXPECT_EQ(r.topology.node(d2.remote_node).guid, Guid{0x200});
  EXPECT_EQ(d1.guid, Guid{0x2001});
  EXPECT_EQ(d2.guid, Guid{0x2002});
  const NodeId fb = *r.topology.find_by_guid(Guid{0x3000});
  EXPECT_TRUE(r.topology.port(fb, 1).connected());
  EXPECT_FALSE(r.topology.port(fb, 2).connected());
  EXPECT_EQ(r.topology.port(*r.topology.find_by_guid(Guid{0x200}), 0).guid, Guid{0x2FF});
}

// The generator's dual-port CAs: port 1 and port 2 of each CA on two
// different switches; one node per CA, both ports with their own GUID.
TEST(Sweeper, DualPortCasFromTheGenerator) {
  const Topology truth = load("fat-tree:levels=2,radix=4,ca_ports=2");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  SweepResult r;
  expect_discovers(*sim, truth, {}, &r);
  std::size_t split = 0;
  for (std::uint32_t i = 0; i < r.topology.num_nodes(); ++i) {
    const NodeId n{i};
    if (r.topology.node(n).type != NodeType::kCa) continue;
    ASSERT_EQ(r.topology.node(n).num_ports, 2);
    const routing::Port& p1 = r.topology.port(n, 1);
    const routing::Port& p2 = r.topology.port(n, 2);
    ASSERT_TRUE(p1.connected() && p2.connected()) << r.topology.node(n).description;
    EXPECT_NE(p1.remote_node, p2.remote_node);
    EXPECT_NE(p1.guid, p2.guid);
    split += p1.remote_node != p2.remote_node ? 1 : 0;
  }
  EXPECT_EQ(split, truth.num_cas());
}

// Edge switches with fewer CAs than CA ports (dark ports), and switches with
// no CA at all: the spines and aggregation layer, and edge switches that
// hosts=3 leaves empty.
TEST(Sweeper, DarkPortsAndSwitchesWithoutCas) {
  const Topology truth = load("fat-tree:levels=3,k=4,hosts=3");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  SweepResult r;
  expect_discovers(*sim, truth, {}, &r);
  std::size_t dark = 0;
  std::size_t no_ca = 0;
  for (NodeId s : r.topology.switches()) {
    bool has_ca = false;
    for (unsigned p = 1; p <= r.topology.node(s).num_ports; ++p) {
      const routing::Port& port = r.topology.port(s, static_cast<PortNum>(p));
      if (!port.connected()) {
        ++dark;
        EXPECT_NE(port.phys_state, 5) << r.topology.node(s).description << " port " << p;
        continue;
      }
      has_ca |= r.topology.node(port.remote_node).type != NodeType::kSwitch;
    }
    no_ca += has_ca ? 0 : 1;
  }
  EXPECT_EQ(r.topology.num_cas(), 3U);
  EXPECT_EQ(r.topology.num_switches(), 20U);
  // 8 edge switches x 2 host ports, 3 of them cabled.
  EXPECT_EQ(dark, 13U);
  // 4 cores + 8 aggregation + the 5 edge switches without a host.
  EXPECT_EQ(no_ca, 17U);
}

// A CA with both ports on one switch (ibsim's net.2sw2path4hca2port does the
// same): two cables between the same pair of nodes, one node.
TEST(Sweeper, ParallelCablesBetweenTheSameNodes) {
  const Topology truth = load("pgft:h=2,m=3.2,w=1.2,p=2.3");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  SweepResult r;
  expect_discovers(*sim, truth, {}, &r);
  EXPECT_EQ(r.topology.num_links(), truth.num_links());
}

// Directed routes hold at most 63 hops: on a 70-switch chain switch k is
// k+1 hops from the SM (on switch 0's CA), so switches 0..62 are found, and
// the two cables onward from switch 62 (to its CA and to switch 63, 64 hops
// away) are reported, not probed.
TEST(Sweeper, DirectedRouteHopLimit) {
  const Topology truth = load("mesh:dims=70,hosts=1");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  auto r = Sweeper(*sim, {}).run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->max_hops, 63U);
  ASSERT_EQ(r->unreachable.size(), 2U) << join_lines(r->unreachable);
  for (const std::string& u : r->unreachable) {
    EXPECT_NE(u.find("\"sw-62\""), std::string::npos) << u;
    EXPECT_NE(u.find("63-hop"), std::string::npos) << u;
  }
  EXPECT_EQ(r->topology.num_switches(), 63U);
  EXPECT_EQ(r->topology.num_cas(), 62U);
  const auto paths = check_dr_paths(sim->topology(), sm_port_of(*sim), *r);
  EXPECT_TRUE(paths.empty()) << join_lines(paths);
  EXPECT_EQ(sim->stats().drops_total(), 0U);
}

// ------------------------------------------------------------------ a silent neighbour

TEST(SimFabricSilentNode, DropsWhatReachesTheSmaAndCanBeUndone) {
  auto sim = make_sim(load("fat-tree:levels=2,radix=4"));
  ASSERT_TRUE(sim);
  EXPECT_FALSE(sim->set_node_silent(NodeId{9999}, true).ok());
  // leaf0 is switch 0; the SM's CA hangs off it on port 1.
  const NodeId leaf0 = sim->topology().switch_node(SwitchIndex{0});
  ASSERT_TRUE(sim->set_node_silent(leaf0, true).ok());
  const std::array<std::uint8_t, 1> path{1};
  Mad m;
  mad::encode_smp(mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kNodeInfo, 0, path, 7),
                  std::span<std::uint8_t, kMadSize>(m.data));
  ASSERT_TRUE(sim->send(m).ok());
  auto got = sim->receive(1ms);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(sim->stats().drops_of(DropReason::kSilentNode), 1U);
  EXPECT_STREQ(sim::drop_reason_name(DropReason::kSilentNode), "silent_node");
  ASSERT_TRUE(sim->set_node_silent(leaf0, false).ok());
  ASSERT_TRUE(sim->send(m).ok());
  got = sim->receive(1ms);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(sim->stats().drops_of(DropReason::kSilentNode), 1U);
}

// A spine that never answers: every leaf's probe of it times out after
// 1 + retries tries, each leaf port is reported unreachable, and the rest of
// the fabric is discovered as if the spine were absent.
TEST(Sweeper, SilentSwitchIsUnreachableNotFatal) {
  const Topology truth = load("fat-tree:levels=2,radix=4");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  const NodeId spine = *truth.find_by_name("spine0");
  ASSERT_TRUE(sim->set_node_silent(spine, true).ok());
  SweepOptions o;
  o.pipeline.retries = 3;
  o.pipeline.timeout = 2ms;
  auto r = Sweeper(*sim, o).run();
  ASSERT_TRUE(r.ok()) << r.error().message;

  Topology expected = truth;
  for (unsigned p = 1; p <= truth.node(spine).num_ports; ++p) {
    expected.disconnect({spine, static_cast<PortNum>(p)});
  }
  const auto diff = diff_topologies(expected, sm_port_of(*sim), r->topology);
  EXPECT_TRUE(diff.empty()) << join_lines(diff);
  // Four leaves, one cable each to spine0.
  ASSERT_EQ(r->unreachable.size(), 4U) << join_lines(r->unreachable);
  for (const std::string& u : r->unreachable) {
    EXPECT_NE(u.find("leaf"), std::string::npos) << u;
    EXPECT_NE(u.find("no answer after 4 tries"), std::string::npos) << u;
  }
  EXPECT_EQ(r->smps.timeouts, 4U);
  EXPECT_EQ(r->smps.retries, 12U);
  EXPECT_EQ(sim->stats().drops_of(DropReason::kSilentNode), 16U);
  // The leaves' ports towards the silent spine are up: found, but not linked.
  const NodeId leaf = *r->topology.find_by_guid(truth.node(*truth.find_by_name("leaf1")).guid);
  std::size_t up_unlinked = 0;
  for (unsigned p = 1; p <= r->topology.node(leaf).num_ports; ++p) {
    const routing::Port& port = r->topology.port(leaf, static_cast<PortNum>(p));
    up_unlinked += !port.connected() && port.phys_state == 5 ? 1 : 0;
  }
  EXPECT_EQ(up_unlinked, 1U);
}

// A silent CA and a silent switch in a ring: the ring's other direction still
// reaches everything but the silent switch; its CAs are lost with it.
TEST(Sweeper, SilentNodesInARing) {
  const Topology truth = load("ring:switches=5,hosts=2");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  const NodeId sw2 = truth.switch_node(SwitchIndex{2});
  NodeId silent_ca = kNoNode;
  for (std::uint32_t i = 0; i < truth.num_nodes(); ++i) {
    const NodeId n{i};
    if (truth.node(n).type == NodeType::kCa &&
        truth.port(n, 1).remote_node == truth.switch_node(SwitchIndex{4})) {
      silent_ca = n;
      break;
    }
  }
  ASSERT_TRUE(silent_ca.valid());
  ASSERT_TRUE(sim->set_node_silent(sw2, true).ok());
  ASSERT_TRUE(sim->set_node_silent(silent_ca, true).ok());
  SweepOptions o;
  o.pipeline.timeout = 1ms;
  o.pipeline.retries = 2;
  auto r = Sweeper(*sim, o).run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  Topology expected = truth;
  // sw2's own CAs hang off a silent switch: unreachable, not even probed.
  for (unsigned p = 1; p <= truth.node(sw2).num_ports; ++p) {
    expected.disconnect({sw2, static_cast<PortNum>(p)});
  }
  expected.disconnect({silent_ca, 1});
  const auto diff = diff_topologies(expected, sm_port_of(*sim), r->topology);
  EXPECT_TRUE(diff.empty()) << join_lines(diff);
  // sw1 and sw3 each probe sw2 once; sw4 probes the silent CA.
  EXPECT_EQ(r->unreachable.size(), 3U) << join_lines(r->unreachable);
  EXPECT_EQ(r->smps.timeouts, 3U);
  EXPECT_EQ(r->topology.num_nodes(), truth.num_nodes() - 1 - 2 - 1);
}

TEST(Sweeper, SilentSmNodeFailsTheSweep) {
  auto sim = make_sim(load("ring:switches=3"));
  ASSERT_TRUE(sim);
  ASSERT_TRUE(sim->set_node_silent(sm_port_of(*sim).node, true).ok());
  SweepOptions o;
  o.pipeline.timeout = 1ms;
  auto r = Sweeper(*sim, o).run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kUnreachable);
  EXPECT_NE(r.error().message.find("SM's own port"), std::string::npos) << r.error().message;
}

// ------------------------------------------------------------------ windows, loss, cuts

// Counts SMPs in flight between the pipeline and the simulator.
class CountingTransport final : public Transport {
 public:
  explicit CountingTransport(Transport& inner) : inner_(inner) {}
  Result<void> send(const Mad& m) override {
    ++outstanding_;
    max_outstanding_ = std::max(max_outstanding_, outstanding_);
    return inner_.send(m);
  }
  Result<std::optional<Mad>> receive(std::chrono::microseconds timeout) override {
    auto r = inner_.receive(timeout);
    if (r.ok() && r->has_value()) --outstanding_;
    return r;
  }
  std::chrono::nanoseconds now() const override { return inner_.now(); }
  LocalPort local_port() const override { return inner_.local_port(); }
  bool virtual_time() const override { return inner_.virtual_time(); }
  std::string name() const override { return "counting"; }
  std::int64_t max_outstanding() const { return max_outstanding_; }

 private:
  Transport& inner_;
  std::int64_t outstanding_ = 0;
  std::int64_t max_outstanding_ = 0;
};

class Windows : public testing::TestWithParam<std::string> {};

TEST_P(Windows, OneEightAnd256GiveTheSameTopology) {
  const Topology truth = load(GetParam());
  std::vector<SweepResult> results;
  for (unsigned window : {1U, 8U, 256U}) {
    SCOPED_TRACE(fmt::format("window {}", window));
    auto sim = make_sim(truth);
    ASSERT_TRUE(sim);
    CountingTransport counting(*sim);
    SweepOptions o;
    o.pipeline.window = window;
    auto r = Sweeper(counting, o).run();
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_LE(counting.max_outstanding(), static_cast<std::int64_t>(window));
    if (window <= 8) {
      EXPECT_EQ(counting.max_outstanding(), static_cast<std::int64_t>(window));
    } else {
      EXPECT_GT(counting.max_outstanding(), 8);
    }
    const auto diff = diff_topologies(truth, sm_port_of(*sim), r->topology);
    EXPECT_TRUE(diff.empty()) << join_lines(diff);
    results.push_back(std::move(r).value());
  }
  // And the same as each other, whatever the discovery order.
  for (std::size_t i = 1; i < results.size(); ++i) {
    const NodeId sm = results[0].sm_node;
    const auto diff =
        diff_topologies(results[0].topology, PortRef{sm, results[0].sm_port}, results[i].topology);
    EXPECT_TRUE(diff.empty()) << join_lines(diff);
  }
}

INSTANTIATE_TEST_SUITE_P(Fabrics, Windows,
                         testing::Values("fat-tree:levels=3,k=6", "torus:dims=3x3x3",
                                         "random:switches=24,degree=5,hosts=1,seed=11",
                                         "dragonfly:a=4,p=2,h=2,g=5"),
                         [](const auto& i) { return bringup_testing::param_name(i.param); });

// 5% loss on every link crossing (a DR SMP to a node 4 hops away and back
// crosses 8 links) with a fixed seed: retries find everything.
TEST(Sweeper, RandomLossWithRetriesStillFindsEverything) {
  for (const char* spec :
       {"fat-tree:levels=3,k=6", "random:switches=24,degree=5,hosts=2,seed=11", "torus:dims=4x4"}) {
    constexpr std::uint64_t kSeed = 20240611;
    SCOPED_TRACE(fmt::format("{} drop 0.05 seed {}", spec, kSeed));
    const Topology truth = load(spec);
    SimOptions so;
    so.seed = kSeed;
    so.drop_probability = 0.05;
    auto sim = make_sim(truth, so);
    ASSERT_TRUE(sim);
    SweepOptions o;
    o.pipeline.retries = 10;
    o.pipeline.timeout = 1ms;
    SweepResult r;
    expect_discovers(*sim, truth, o, &r);
    EXPECT_GT(sim->stats().drops_of(DropReason::kRandomLoss), 10U);
    EXPECT_GT(r.smps.retries, 10U);
    EXPECT_EQ(r.smps.timeouts, 0U);
    RecordProperty("seed", std::to_string(kSeed));
  }
}

// Cables that are DOWN before the sweep are not discovered: a
// switch-to-switch cable and the only cable of a CA.
TEST(Sweeper, DownLinksAreNotDiscovered) {
  const Topology truth = load("fat-tree:levels=2,radix=4");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  const NodeId leaf1 = *truth.find_by_name("leaf1");
  PortNum up_port = 0;
  for (unsigned p = 1; p <= truth.node(leaf1).num_ports; ++p) {
    const routing::Port& port = truth.port(leaf1, static_cast<PortNum>(p));
    if (port.connected() && truth.node(port.remote_node).type == NodeType::kSwitch) {
      up_port = static_cast<PortNum>(p);
      break;
    }
  }
  ASSERT_NE(up_port, 0);
  ASSERT_TRUE(sim->link_down({leaf1, up_port}).ok());
  const routing::Port& ca_cable = truth.port(leaf1, 1);
  ASSERT_EQ(truth.node(ca_cable.remote_node).type, NodeType::kCa);
  const NodeId lost_ca = ca_cable.remote_node;
  ASSERT_TRUE(sim->link_down({leaf1, 1}).ok());

  Topology expected = truth;
  expected.disconnect({leaf1, up_port});
  expected.disconnect({leaf1, 1});
  SweepResult r;
  expect_discovers(*sim, expected, {}, &r);
  EXPECT_FALSE(r.topology.find_by_guid(truth.node(lost_ca).guid).has_value());
  const NodeId fl = *r.topology.find_by_guid(truth.node(leaf1).guid);
  EXPECT_EQ(r.topology.port(fl, up_port).state, PortState::kDown);
  EXPECT_NE(r.topology.port(fl, up_port).phys_state, 5);
  EXPECT_EQ(r.topology.port(fl, 1).state, PortState::kDown);
}

// ------------------------------------------------------------------ malformed answers

// Hands the sweep what the simulator answers, after `tamper` had its way:
// it may corrupt a MAD in place, or queue extra MADs to be delivered first.
class TamperingTransport final : public Transport {
 public:
  using Tamper = std::function<void(std::uint64_t index, Mad& m, std::deque<Mad>& extra)>;
  TamperingTransport(Transport& inner, Tamper tamper) : inner_(inner), tamper_(std::move(tamper)) {}
  Result<void> send(const Mad& m) override { return inner_.send(m); }
  Result<std::optional<Mad>> receive(std::chrono::microseconds timeout) override {
    if (!extra_.empty()) {
      Mad m = extra_.front();
      extra_.pop_front();
      return std::optional<Mad>{m};
    }
    auto r = inner_.receive(timeout);
    if (!r.ok() || !r->has_value()) return r;
    Mad m = **r;
    std::deque<Mad> before;
    tamper_(received_++, m, before);
    if (before.empty()) return std::optional<Mad>{m};
    extra_ = std::move(before);
    extra_.push_back(m);
    Mad first = extra_.front();
    extra_.pop_front();
    return std::optional<Mad>{first};
  }
  std::chrono::nanoseconds now() const override { return inner_.now(); }
  LocalPort local_port() const override { return inner_.local_port(); }
  bool virtual_time() const override { return inner_.virtual_time(); }
  std::string name() const override { return "tampering"; }

 private:
  Transport& inner_;
  Tamper tamper_;
  std::deque<Mad> extra_;
  std::uint64_t received_ = 0;
};

// Garbage before every fifth answer (bad base version, a non-SMP class, a
// truncated-looking hop count): counted as malformed, the sweep unharmed.
TEST(Sweeper, MalformedMadsAreCountedNotFatal) {
  const Topology truth = load("fat-tree:levels=3,k=4");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  std::uint64_t injected = 0;
  TamperingTransport t(*sim, [&injected](std::uint64_t i, Mad& m, std::deque<Mad>& extra) {
    if (i % 5 != 0) return;
    Mad bad = m;
    switch (i / 5 % 3) {
      case 0:
        bad.data[0] = 0x7F;  // base version
        break;
      case 1:
        bad.data[1] = 0x04;  // performance management, not an SMP class
        break;
      default:
        bad.data[3] = 0x7E;  // unknown method
        break;
    }
    extra.push_back(bad);
    ++injected;
  });
  auto r = Sweeper(t, {}).run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto diff = diff_topologies(truth, sm_port_of(*sim), r->topology);
  EXPECT_TRUE(diff.empty()) << join_lines(diff);
  EXPECT_GT(injected, 20U);
  EXPECT_EQ(r->malformed, injected);
  EXPECT_EQ(r->smps.retries, 0U);
}

// Answers corrupted in flight are lost; the retry gets through.
TEST(Sweeper, CorruptedAnswersAreRetried) {
  const Topology truth = load("torus:dims=3x3,hosts=2");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  std::uint64_t corrupted = 0;
  TamperingTransport t(*sim, [&corrupted](std::uint64_t i, Mad& m, std::deque<Mad>&) {
    if (i % 7 != 3) return;
    m.data[2] = 0x09;  // class version
    ++corrupted;
  });
  SweepOptions o;
  o.pipeline.timeout = 1ms;
  auto r = Sweeper(t, o).run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto diff = diff_topologies(truth, sm_port_of(*sim), r->topology);
  EXPECT_TRUE(diff.empty()) << join_lines(diff);
  EXPECT_GT(corrupted, 5U);
  EXPECT_EQ(r->malformed, corrupted);
  EXPECT_EQ(r->smps.retries, corrupted);
  EXPECT_TRUE(r->unreachable.empty()) << join_lines(r->unreachable);
}

// A node whose NodeInfo decodes but makes no sense (no ports) is left out
// with a warning naming its GUID; the rest of the fabric is discovered.
TEST(Sweeper, ImplausibleNodeInfoIsAWarning) {
  const Topology truth = load("fat-tree:levels=2,radix=4");
  auto sim = make_sim(truth);
  ASSERT_TRUE(sim);
  const NodeId liar = *truth.find_by_name("spine1");
  const std::uint64_t liar_guid = truth.node(liar).guid.value;
  TamperingTransport t(*sim, [liar_guid](std::uint64_t, Mad& m, std::deque<Mad>&) {
    auto smp = mad::decode_smp(m.data);
    if (!smp.ok() || smp->attr_id != mad::AttrId::kNodeInfo) return;
    auto ni = mad::NodeInfo::decode(mad::data_of(*smp));
    if (ni.node_guid != liar_guid) return;
    ni.num_ports = 0;
    ni.encode(mad::data_of(*smp));
    mad::encode_smp(*smp, std::span<std::uint8_t, kMadSize>(m.data));
  });
  auto r = Sweeper(t, {}).run();
  ASSERT_TRUE(r.ok()) << r.error().message;
  Topology expected = truth;
  for (unsigned p = 1; p <= truth.node(liar).num_ports; ++p) {
    expected.disconnect({liar, static_cast<PortNum>(p)});
  }
  const auto diff = diff_topologies(expected, sm_port_of(*sim), r->topology);
  EXPECT_TRUE(diff.empty()) << join_lines(diff);
  ASSERT_FALSE(r->warnings.empty());
  for (const std::string& w : r->warnings) {
    EXPECT_NE(w.find(fmt::format("{:#018x}", liar_guid)), std::string::npos) << w;
    EXPECT_NE(w.find("implausible"), std::string::npos) << w;
  }
}

// Extended LIDs use subnetd's vendor attributes (0xFF10-0xFF12), which
// other vendors use for other things: a fabric of another vendor's nodes is
// sent none of them, and the sweep says why it cannot go on. In 16-bit mode
// the same fabric sweeps as any other. (The simulator of another vendor
// drops vendor SMPs, as ibsim does: the drop counter shows whether any was
// sent.)
TEST(Sweeper, ExtendedLidsAreNeverAskedOfAnotherVendorsNodes) {
  SimOptions o;
  o.vendor_id = 0x0002C9;
  o.lid_bits = 24;
  auto sim = make_sim(load("fat-tree:levels=2,radix=4"), o);
  ASSERT_NE(sim, nullptr);
  SweepOptions so;
  so.extended_lids = true;
  auto r = Sweeper(*sim, so).run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("VendorID 0x0002c9"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("addressing.lid_bits to 16"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(sim->stats().drops_of(DropReason::kVendorAttribute), 0U);

  auto plain = make_sim(load("fat-tree:levels=2,radix=4"), [] {
    SimOptions p;
    p.vendor_id = 0x0002C9;
    return p;
  }());
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(Sweeper(*plain, {}).run().ok());
  // What the check above rules out: that node drops our attributes.
  Mad m;
  mad::encode_smp(mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kExtPortInfo, 1,
                                   std::span<const std::uint8_t>{}, 0),
                  std::span<std::uint8_t, kMadSize>(m.data));
  m.dlid = m.slid = mad::kPermissiveLid;
  ASSERT_TRUE(plain->send(m).ok());
  auto got = plain->receive(std::chrono::microseconds{100});
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(plain->stats().drops_of(DropReason::kVendorAttribute), 1U);
}

}  // namespace
}  // namespace subnetd::discovery

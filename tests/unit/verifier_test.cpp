// The verifier: hand-broken tables are reported as what they are, credit
// loops are found and named, and its dependency graph matches a naive
// reference built in this file.

#include "routing/verifier.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stop_token>
#include <string>
#include <utility>

#include "routing/engine.hpp"
#include "routing/switch_graph.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::Fabric;
using testing::make_fabric;
using testing::port_to;
using testing::route_fabric;
using testing::sw_index;

Result<VerifyReport> run_verify(const Fabric& f, const Routes& r, unsigned threads = 2,
                                bool switch_traffic = false) {
  WorkerPool pool(threads);
  VerifyOptions opts;
  opts.switch_traffic = switch_traffic;
  return verify(f.topo, f.lids, r, opts, pool, {});
}

Lid lid_of(const Fabric& f, std::string_view node, PortNum port) {
  return f.lids.base_lid(f.topo, *f.topo.find_by_name(node), port);
}

std::string guid_hex(const Fabric& f, std::string_view node) {
  return fmt::format("{:#018x}", f.topo.node(*f.topo.find_by_name(node)).guid.value);
}

bool contains(const std::string& s, std::string_view what) {
  return s.find(what) != std::string::npos;
}

// ---------------------------------------------------------------------------
// Hand-broken tables

TEST(Verifier, PassesUpdnAndCountsWhatItChecked) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=4");  // 20 switches, 16 CAs
  const Routes r = route_fabric(f, "updn");
  auto v = run_verify(f, r);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->switches, 20u);
  EXPECT_EQ(v->lids, 36u);
  EXPECT_EQ(v->pairs_checked, 20u * 36u);
  EXPECT_EQ(v->num_vls, 1u);
  EXPECT_EQ(v->channels, 2u * 32u);  // 16 edge-agg + 16 agg-core links, both ways
  EXPECT_GT(v->dependencies, 0u);
  EXPECT_GE(v->total_seconds, v->cdg_seconds);
}

TEST(Verifier, HoleIsIncompleteAndSaysWhere) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=4");  // leaf0..3, spine0..1, 2 CAs a leaf
  Routes r = route_fabric(f, "updn");
  // leaf0 loses its route to h on leaf3.
  const NodeId leaf3 = *f.topo.find_by_name("leaf3");
  const Port& host_port = f.topo.port(leaf3, 1);
  const std::string host = f.topo.node(host_port.remote_node).description;
  const Lid lid = f.lids.base_lid(f.topo, host_port.remote_node, host_port.remote_port);
  const SwitchIndex leaf0 = sw_index(f, "leaf0");
  const PortNum was = r.lfts[leaf0.value].get(lid);
  r.lfts[leaf0.value].set(lid, kDropPort);
  auto v = run_verify(f, r);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kIncomplete);
  const std::string& m = v.error().message;
  EXPECT_TRUE(contains(m, fmt::format("switch \"leaf0\" ({}) has no route to LID {:#x} (\"{}\" "
                                      "port 1), reachable via port ",
                                      guid_hex(f, "leaf0"), lid.value, host)))
      << m;
  // The port named is a real way there: an up-link (the leaf's ports 3, 4).
  const std::string via = m.substr(m.rfind(' ') + 1);
  EXPECT_TRUE(via == "3" || via == "4") << m;
  EXPECT_NE(was, kDropPort);
}

TEST(Verifier, MissingTableEntriesAreHoles) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=4");
  Routes r = route_fabric(f, "minhop");
  r.lfts[3] = Lft(Lid{4});  // far too short: LIDs past block 0 are unrouted
  auto v = run_verify(f, r);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kIncomplete);
}

TEST(Verifier, ForwardingLoopIsNamed) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=4");
  Routes r = route_fabric(f, "updn");
  // LID of a CA in pod 1; bounce it between edge-p0-0 and agg-p0-0.
  const NodeId edge = *f.topo.find_by_name("edge-p1-0");
  const Port& hp = f.topo.port(edge, 1);
  const Lid lid = f.lids.base_lid(f.topo, hp.remote_node, hp.remote_port);
  const PortNum up = port_to(f, "edge-p0-0", "agg-p0-0");
  const PortNum down = port_to(f, "agg-p0-0", "edge-p0-0");
  r.lfts[sw_index(f, "edge-p0-0").value].set(lid, up);
  r.lfts[sw_index(f, "agg-p0-0").value].set(lid, down);
  auto v = run_verify(f, r);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kForwardingLoop);
  const std::string& m = v.error().message;
  const std::string a = fmt::format("edge-p0-0[{}]", up);
  const std::string b = fmt::format("agg-p0-0[{}]", down);
  EXPECT_TRUE(contains(m, fmt::format("LID {:#x} (", lid.value))) << m;
  EXPECT_TRUE(contains(m, fmt::format("forwarding loop {} -> {} -> {}", a, b, a)) ||
              contains(m, fmt::format("forwarding loop {} -> {} -> {}", b, a, b)))
      << m;
  EXPECT_TRUE(contains(m, guid_hex(f, "agg-p0-0"))) << m;
}

TEST(Verifier, WrongDeliveryAndManagementPort) {
  const Fabric f = make_fabric("fat-tree:levels=2,radix=4");
  const NodeId leaf1 = *f.topo.find_by_name("leaf1");
  const Port& h1 = f.topo.port(leaf1, 1);
  const Lid lid = f.lids.base_lid(f.topo, h1.remote_node, h1.remote_port);
  {
    Routes r = route_fabric(f, "updn");
    r.lfts[sw_index(f, "leaf1").value].set(lid, 2);  // the other CA on leaf1
    auto v = run_verify(f, r);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Errc::kIncomplete);
    EXPECT_TRUE(contains(v.error().message, "routes LID")) << v.error().message;
    EXPECT_TRUE(contains(v.error().message, "to port 2, which leads to CA")) << v.error().message;
    EXPECT_TRUE(contains(v.error().message, "delivered by \"leaf1\"")) << v.error().message;
  }
  {
    Routes r = route_fabric(f, "updn");
    r.lfts[sw_index(f, "spine0").value].set(lid, 0);
    auto v = run_verify(f, r);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code, Errc::kIncomplete);
    EXPECT_TRUE(contains(v.error().message, "switch \"spine0\"")) << v.error().message;
    EXPECT_TRUE(contains(v.error().message, "management port 0")) << v.error().message;
  }
  {
    Routes r = route_fabric(f, "updn");
    r.lfts[sw_index(f, "spine0").value].set(lid, 9);  // spines have 4 ports
    auto v = run_verify(f, r);
    ASSERT_FALSE(v.ok());
    EXPECT_TRUE(contains(v.error().message, "port 9, but it has 4 ports")) << v.error().message;
  }
}

TEST(Verifier, FirstErrorByLidWhateverTheThreads) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=6");  // 45 switches, 54 CAs: 2 tiles
  Routes r = route_fabric(f, "updn");
  ASSERT_GT(f.lids.max_lid.value, 70u);
  r.lfts[5].set(Lid{70}, kDropPort);
  r.lfts[9].set(Lid{20}, kDropPort);
  r.lfts[2].set(Lid{20}, kDropPort);
  std::string first;
  for (unsigned threads : {1u, 2u, 4u}) {
    auto v = run_verify(f, r, threads);
    ASSERT_FALSE(v.ok());
    if (first.empty()) first = v.error().message;
    EXPECT_EQ(v.error().message, first) << threads << " threads";
  }
  EXPECT_TRUE(contains(first, "LID 0x14")) << first;
}

TEST(Verifier, UnreachablePairsAreNotChecked) {
  Fabric f = make_fabric("ring:switches=6,hosts=1");
  // Cut the ring in two places: {sw-1, sw-2} and {sw-3, sw-4, sw-5, sw-0}.
  f.topo.disconnect({*f.topo.find_by_name("sw-0"), port_to(f, "sw-0", "sw-1")});
  f.topo.disconnect({*f.topo.find_by_name("sw-2"), port_to(f, "sw-2", "sw-3")});
  Routes r = route_fabric(f, "updn");
  auto v = run_verify(f, r);
  ASSERT_TRUE(v.ok()) << v.error().message;
  // 12 LIDs; 4 in the small part, 8 in the big one.
  EXPECT_EQ(v->pairs_checked, 2u * 4u + 4u * 8u);
  // Garbage toward the other part is not a route anyone can use.
  r.lfts[sw_index(f, "sw-1").value].set(lid_of(f, "sw-4", 0), 1);
  EXPECT_TRUE(run_verify(f, r).ok());
}

TEST(Verifier, RejectsMismatchedRoutes) {
  const Fabric f = make_fabric("ring:switches=4,hosts=1");
  Routes r = route_fabric(f, "updn");
  r.num_vls = 2;  // and no layer per LID
  auto vls = run_verify(f, r);
  ASSERT_FALSE(vls.ok());
  EXPECT_EQ(vls.error().code, Errc::kInvalidArgument);
  EXPECT_NE(vls.error().message.find("give a layer"), std::string::npos) << vls.error().message;
  r.lid_layer.assign(f.lids.owner.size() + 64, 0);
  r.lid_layer[1] = 2;  // beyond the VLs
  auto beyond = run_verify(f, r);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.error().message.find("on layer 2 of 2 VLs"), std::string::npos)
      << beyond.error().message;
  r.num_vls = 1;
  r.lid_layer.clear();
  r.lfts.pop_back();
  auto size = run_verify(f, r);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.error().code, Errc::kInvalidArgument);
}

TEST(Verifier, StopTokenCancels) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=4");
  const Routes r = route_fabric(f, "updn");
  std::stop_source stop;
  stop.request_stop();
  WorkerPool pool(2);
  auto v = verify(f.topo, f.lids, r, pool, stop.get_token());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kCancelled);
}

// ---------------------------------------------------------------------------
// Credit loops

TEST(Verifier, MinhopRingHasANamedCreditLoop) {
  const Fabric f = make_fabric("ring:switches=6,hosts=1");
  const Routes r = route_fabric(f, "minhop");
  auto v = run_verify(f, r);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::kCdgCycle);
  const std::string& m = v.error().message;
  ASSERT_EQ(m.rfind("VL 0: credit loop ", 0), 0u) << m;
  // The cycle is written out in full and closes on its first channel.
  const std::string cycle = m.substr(18, m.find(" (switches:") - 18);
  const std::string head = cycle.substr(0, cycle.find(" -> "));
  const std::string tail = cycle.substr(cycle.rfind(" -> ") + 4);
  EXPECT_EQ(head, tail) << m;
  // Around a ring of 6 every switch is on the loop (a loop needs all 6 links
  // of one direction), and the example names a LID that makes a dependency.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(contains(m, fmt::format("sw-{}[", i))) << m;
  EXPECT_TRUE(contains(m, guid_hex(f, "sw-3"))) << m;
  EXPECT_TRUE(contains(m, "; e.g. LID ")) << m;
}

// A naive channel dependency graph: trace every counted route and collect
// dependencies in a std::set; acyclic iff Kahn's algorithm removes every
// channel. Channels are (switch node, out port).
struct Reference {
  std::size_t dependencies = 0;
  bool acyclic = true;
};

Reference reference_cdg(const Fabric& f, const Routes& r, bool switch_traffic) {
  using Channel = std::pair<std::uint32_t, PortNum>;
  std::set<std::pair<Channel, Channel>> deps;
  const Topology& t = f.topo;
  for (std::uint32_t d = 1; d <= f.lids.max_lid.value; ++d) {
    const PortRef owner = f.lids.owner_of(Lid{d});
    if (!owner.node.valid()) continue;
    if (!switch_traffic && t.node(owner.node).type == NodeType::kSwitch) continue;
    for (NodeId src : t.switches()) {
      bool has_ca = false;
      for (unsigned p = 1; p <= t.node(src).num_ports; ++p) {
        const Port& port = t.port(src, static_cast<PortNum>(p));
        has_ca |= port.connected() && t.node(port.remote_node).type != NodeType::kSwitch;
      }
      if (!switch_traffic && !has_ca) continue;
      NodeId cur = src;
      std::optional<Channel> prev;
      for (std::size_t hop = 0; hop <= t.num_switches(); ++hop) {
        const std::uint8_t p = r.lfts[t.node(cur).switch_index.value].get(Lid{d});
        if (p == 0 || p == kDropPort) break;
        const Port& link = t.port(cur, p);
        if (!link.connected() || t.node(link.remote_node).type != NodeType::kSwitch) break;
        const Channel c{cur.value, p};
        if (prev) deps.insert({*prev, c});
        prev = c;
        cur = link.remote_node;
      }
    }
  }
  std::map<Channel, std::size_t> indegree;
  std::map<Channel, std::vector<Channel>> out;
  for (const auto& [a, b] : deps) {
    out[a].push_back(b);
    ++indegree[b];
    indegree.emplace(a, 0);
  }
  std::vector<Channel> ready;
  for (const auto& [c, in] : indegree) {
    if (in == 0) ready.push_back(c);
  }
  std::size_t removed = 0;
  while (!ready.empty()) {
    const Channel c = ready.back();
    ready.pop_back();
    ++removed;
    for (const Channel& b : out[c]) {
      if (--indegree[b] == 0) ready.push_back(b);
    }
  }
  return Reference{deps.size(), removed == indegree.size()};
}

TEST(Verifier, DependencyGraphMatchesNaiveReference) {
  const char* specs[] = {"ring:switches=7,hosts=1",
                         "torus:dims=4x4,hosts=1",
                         "torus:dims=3x3x3,hosts=1",
                         "mesh:dims=4x3,hosts=2",
                         "fat-tree:levels=3,k=4",
                         "dragonfly:a=4,p=2,h=2,g=5",
                         "random:switches=24,degree=4,hosts=1,seed=9",
                         "pgft:h=2,m=4.4,w=1.2,p=1.2"};
  int cycles_seen = 0;
  for (const char* spec : specs) {
    const Fabric f = make_fabric(spec);
    for (std::string_view engine : {"minhop", "updn"}) {
      const Routes r = route_fabric(f, engine);
      for (bool switch_traffic : {false, true}) {
        SCOPED_TRACE(fmt::format("{} / {} / switch traffic {}", spec, engine, switch_traffic));
        const Reference ref = reference_cdg(f, r, switch_traffic);
        auto v = run_verify(f, r, 2, switch_traffic);
        if (ref.acyclic) {
          ASSERT_TRUE(v.ok()) << v.error().message;
          EXPECT_EQ(v->dependencies, ref.dependencies);
        } else {
          ++cycles_seen;
          ASSERT_FALSE(v.ok());
          EXPECT_EQ(v.error().code, Errc::kCdgCycle) << v.error().message;
        }
      }
    }
  }
  EXPECT_GT(cycles_seen, 4);  // the reference does see loops (minhop on rings, tori)
}

}  // namespace
}  // namespace subnetd::routing

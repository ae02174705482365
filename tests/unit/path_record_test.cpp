// state::PathIndex (the SA's fast walk) against state::path_properties (the
// general trace) on every pair of endports and every LID of an LMC range,
// over tables made imperfect on purpose: links DOWN after routing, drop
// entries, a forwarding loop, and ports of mixed MTU, width and speed.

#include "state/path_record.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::state {
namespace {

struct Fabric {
  std::shared_ptr<routing::Topology> topo;
  std::shared_ptr<routing::LidMap> lids;
  std::shared_ptr<routing::Routes> routes;
  FabricState state() const {
    FabricState st;
    st.topology = topo;
    st.lids = lids;
    st.routes = routes;
    return st;
  }
};

Fabric make(const char* spec, std::uint8_t lmc, const char* engine_name = "updn",
            const routing::EngineOptions& opts = {}) {
  Fabric f;
  auto topo = discovery::topo::generate(spec);
  EXPECT_TRUE(topo.ok());
  f.topo = std::make_shared<routing::Topology>(std::move(topo).value());
  routing::LidAssignOptions lo;
  lo.lmc = lmc;
  auto lids = routing::assign_lids(*f.topo, lo);
  EXPECT_TRUE(lids.ok());
  f.lids = std::make_shared<routing::LidMap>(std::move(lids->map));
  auto engine = routing::make_engine(engine_name);
  EXPECT_TRUE(engine.ok());
  routing::WorkerPool pool(1);
  auto routes = (*engine)->compute(*f.topo, *f.lids, opts, pool, {});
  EXPECT_TRUE(routes.ok());
  f.routes = std::make_shared<routing::Routes>(std::move(routes).value());
  return f;
}

std::vector<PortRef> endports(const Fabric& f) {
  std::vector<PortRef> out;
  for (std::uint32_t i = 0; i < f.topo->num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = f.topo->node(n).type == routing::NodeType::kSwitch;
    for (unsigned p = sw ? 0 : 1; p <= (sw ? 0U : f.topo->node(n).num_ports); ++p) {
      if (f.lids->base_lid(*f.topo, n, static_cast<PortNum>(p)).valid()) {
        out.push_back({n, static_cast<PortNum>(p)});
      }
    }
  }
  return out;
}

// The switch a source's packets enter first (kNoSwitch: none).
std::uint32_t first_switch(const Fabric& f, PortRef src) {
  const routing::Node& n = f.topo->node(src.node);
  if (n.type == routing::NodeType::kSwitch) return n.switch_index.value;
  const routing::Port& cable = f.topo->port(src.node, src.port);
  if (!cable.connected()) return kNoSwitch.value;
  const routing::Node& far = f.topo->node(cable.remote_node);
  return far.type == routing::NodeType::kSwitch ? far.switch_index.value : kNoSwitch.value;
}

// Walks every pair both ways; returns how many pairs had a path.
std::size_t compare_all(const Fabric& f) {
  const FabricState st = f.state();
  const PathIndex index(f.topo);
  const auto ends = endports(f);
  std::size_t paths = 0;
  for (const PortRef src : ends) {
    for (const PortRef dst : ends) {
      const Lid base = f.lids->base_lid(*f.topo, dst.node, dst.port);
      for (std::uint32_t k = 0; k < f.lids->lids_per_port(*f.topo, dst.node); ++k) {
        const Lid dlid{base.value + k};
        auto general = path_properties(st, src, dst, dlid);
        auto fast = index.walk(st, src, dst, dlid);
        if (general.ok() != fast.has_value()) {
          ADD_FAILURE() << f.topo->label(src.node) << " port " << int{src.port} << " -> LID "
                        << dlid.value << ": "
                        << (general.ok() ? std::string("only the trace has a path")
                                         : "only the index has a path; " + general.error().message);
          continue;
        }
        if (!fast) continue;
        ++paths;
        EXPECT_EQ(fast->slid, general->slid);
        EXPECT_EQ(fast->dlid, general->dlid);
        EXPECT_EQ(fast->mtu, general->mtu);
        EXPECT_EQ(fast->rate, general->rate);
        EXPECT_EQ(fast->gbps10, general->gbps10);
        EXPECT_EQ(fast->switch_hops, general->switch_hops)
            << f.topo->label(src.node) << " -> LID " << dlid.value;
        EXPECT_EQ(fast->sl, general->sl);
        const std::uint32_t sw = first_switch(f, src);
        EXPECT_EQ(fast->sl, src == dst || sw == kNoSwitch.value ? f.routes->layer(dlid)
                                                                : f.routes->path_layer(sw, dlid));
      }
    }
  }
  return paths;
}

TEST(PathIndex, AgreesWithTheTraceOnAHealthyFabric) {
  const Fabric f = make("fat-tree:levels=3,k=6", 1);
  const std::size_t n = endports(f).size();
  // Every pair, every LID of the LMC range (switches have one).
  EXPECT_GT(compare_all(f), n * n);
}

// With VL layers a path's SL is its destination's layer, so traffic stays
// on the VL whose CDG the engine kept acyclic.
TEST(PathIndex, SlIsTheDestinationsLayer) {
  const Fabric f = make("torus:dims=5x5,hosts=2", 0, "layered");
  ASSERT_GT(f.routes->num_vls, 1) << "the test needs routes on several layers";
  const std::size_t n = endports(f).size();
  EXPECT_GT(compare_all(f), n * (n - 1));
  const FabricState st = f.state();
  std::vector<bool> seen(f.routes->num_vls, false);
  for (const PortRef dst : endports(f)) {
    if (f.topo->node(dst.node).type == routing::NodeType::kSwitch) continue;
    const Lid dlid = f.lids->base_lid(*f.topo, dst.node, dst.port);
    const std::uint8_t layer = f.routes->lid_layer.at(dlid.value);
    ASSERT_LT(layer, f.routes->num_vls);
    seen[layer] = true;
    for (const PortRef src : endports(f)) {
      auto p = path_properties(st, src, dst, dlid);
      if (p.ok()) {
        EXPECT_EQ(p->sl, layer);
      }
    }
  }
  // Every layer but VL 0, which dimension order leaves to multicast.
  EXPECT_FALSE(seen[0]);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), f.routes->num_vls - 1);
  // Without layers, SL 0.
  const Fabric one = make("torus:dims=4x4,hosts=2", 0, "updn");
  EXPECT_EQ(one.routes->num_vls, 1);
  EXPECT_EQ(one.routes->layer(Lid{1}), 0);
}

// With layers per source (branch layers), a path's SL is the layer of its
// source switch's route, both in the index and in the trace.
TEST(PathIndex, SlFollowsTheSourceWhereLayersDependOnIt) {
  routing::EngineOptions opts;
  opts.max_vls = 4;
  opts.branch_layers = true;
  const Fabric f = make("random:switches=40,degree=4,hosts=1,seed=1", 0, "layered", opts);
  ASSERT_FALSE(f.routes->path_layers.empty()) << "the test needs layers per source";
  const std::size_t n = endports(f).size();
  EXPECT_GT(compare_all(f), n * (n - 1));
  // Some destination is reached on several SLs.
  const FabricState st = f.state();
  std::size_t several = 0;
  for (const PortRef dst : endports(f)) {
    if (f.topo->node(dst.node).type == routing::NodeType::kSwitch) continue;
    const Lid dlid = f.lids->base_lid(*f.topo, dst.node, dst.port);
    std::vector<bool> sls(16, false);
    for (const PortRef src : endports(f)) {
      if (f.topo->node(src.node).type == routing::NodeType::kSwitch || src == dst) continue;
      auto p = path_properties(st, src, dst, dlid);
      ASSERT_TRUE(p.ok()) << p.error().message;
      sls[p->sl] = true;
    }
    if (std::count(sls.begin(), sls.end(), true) > 1) ++several;
  }
  EXPECT_GT(several, 0u);
}

TEST(PathIndex, AgreesWithTheTraceOnBrokenTablesAndMixedLinks) {
  Fabric f = make("fat-tree:levels=3,k=6", 1);
  routing::Topology& t = *f.topo;
  std::mt19937 rng(7);
  // Mixed MTUs, widths and speeds, some never read (0).
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    for (PortNum p = 1; p <= t.node(NodeId{i}).num_ports; ++p) {
      routing::Port& port = t.mutable_port(NodeId{i}, p);
      port.mtu_cap = static_cast<std::uint8_t>(rng() % 6);
      port.width_active = static_cast<std::uint8_t>(1U << (rng() % 5));
      port.speed_active = static_cast<std::uint8_t>(rng() % 5);
    }
  }
  // Links DOWN after routing (the tables still use them: dead ends).
  std::size_t down = 0;
  for (const NodeId sw : t.switches()) {
    for (PortNum p = 1; p <= t.node(sw).num_ports && down < 6; ++p) {
      if (t.port(sw, p).connected() && rng() % 7 == 0) {
        t.mutable_port(sw, p).state = routing::PortState::kDown;
        ++down;
      }
    }
  }
  ASSERT_GT(down, 0u);
  // Drop entries, an entry past the switch's ports, and a loop between two
  // neighbouring switches for one LID.
  const auto ends = endports(f);
  auto& lfts = f.routes->lfts;
  lfts[0].set(f.lids->base_lid(t, ends[3].node, ends[3].port), routing::kDropPort);
  lfts[1].set(f.lids->base_lid(t, ends[5].node, ends[5].port), 200);
  const NodeId a = t.switch_node(SwitchIndex{2});
  for (PortNum p = 1; p <= t.node(a).num_ports; ++p) {
    const routing::Port& port = t.port(a, p);
    if (!port.connected() || t.node(port.remote_node).type != routing::NodeType::kSwitch) continue;
    const Lid victim = f.lids->base_lid(t, ends[9].node, ends[9].port);
    lfts[t.node(a).switch_index.value].set(victim, p);
    lfts[t.node(port.remote_node).switch_index.value].set(victim, port.remote_port);
    break;
  }
  const std::size_t n = ends.size();
  const std::size_t paths = compare_all(f);
  EXPECT_LT(paths, n * n * 2);  // some were broken
  EXPECT_GT(paths, n);
}

TEST(PathIndex, ManyWalksAtOnceAnswerAsOneByOne) {
  // Lanes start and end at different times: short and long walks, paths
  // and none, mixed in one batch.
  Fabric f = make("fat-tree:levels=3,k=6", 1);
  const auto ends = endports(f);
  f.routes->lfts[3].set(f.lids->base_lid(*f.topo, ends[7].node, ends[7].port), routing::kDropPort);
  const FabricState st = f.state();
  const PathIndex index(f.topo);
  std::vector<PathIndex::PathQuery> qs;
  for (const PortRef src : ends) {
    for (const PortRef dst : ends) {
      qs.push_back({src, dst, f.lids->base_lid(*f.topo, dst.node, dst.port)});
    }
  }
  std::vector<std::optional<PathProperties>> many(qs.size());
  index.walk_many(st, qs, many);
  std::size_t none = 0;
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const auto one = index.walk(st, qs[i].source, qs[i].destination, qs[i].dlid);
    ASSERT_EQ(one.has_value(), many[i].has_value()) << i;
    if (!one) {
      ++none;
      continue;
    }
    EXPECT_EQ(one->slid, many[i]->slid);
    EXPECT_EQ(one->dlid, many[i]->dlid);
    EXPECT_EQ(one->mtu, many[i]->mtu);
    EXPECT_EQ(one->rate, many[i]->rate);
    EXPECT_EQ(one->switch_hops, many[i]->switch_hops) << i;
  }
  EXPECT_GT(none, 0u);
  EXPECT_LT(none, qs.size() / 10);
}

TEST(PathIndexCache, RebuildsOnlyWhenTheTopologyChanges) {
  const Fabric f = make("fat-tree:levels=2,radix=4", 0);
  PathIndexCache cache;
  FabricState st = f.state();
  auto first = cache.get(st);
  ASSERT_NE(first, nullptr);
  st.generation = 2;  // a new snapshot of the same topology
  EXPECT_EQ(cache.get(st), first);
  st.topology = std::make_shared<routing::Topology>(*f.topo);
  auto second = cache.get(st);
  EXPECT_NE(second, first);
  EXPECT_EQ(second->topology(), st.topology.get());
  EXPECT_EQ(cache.get(FabricState{}), nullptr);
}

}  // namespace
}  // namespace subnetd::state

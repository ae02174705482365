// The SubnetManager keeps the grid placement of its routes in the store
// (schema/sqlite/0005_grid_placement.sql) and, restarted, places the grid
// as the store says (SubnetManager::remember_grid, as subnetd gives it at
// start): on dateline VLs a LID's SL follows its switch's coordinates, so
// the hosts' PathRecords stay good across a restart, and across the death
// of the switch that canonical coordinates start from.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "daemon/store.hpp"
#include "daemon_test_support.hpp"
#include "discovery/topo/generators.hpp"
#include "grid_test_support.hpp"
#include "routing/grid_placement.hpp"

namespace subnetd::daemon {
namespace {

namespace fs = std::filesystem;
using routing::GridPlacement;
using routing::testing::least_guid_switch;
using routing::testing::sls_by_port_guid;

// Above 256 switches: a torus that lost a switch is routed by dimension
// order around the gap, not by the general engine (whose SLs follow no
// coordinates).
constexpr const char* kTorus = "torus:dims=7x7x6,hosts=1";

// A store in a directory of its own, written through a StoreWriter.
class TempStore {
 public:
  TempStore() {
    char tmpl[] = "/tmp/subnetd-grid-restart-XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto s = Store::open(dir_ + "/subnetd.db");
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    if (s.ok()) {
      writer = std::make_unique<StoreWriter>(std::move(s).value(), [](const Error& e) {
        ADD_FAILURE() << "store write: " << e.message;
      });
    }
  }
  ~TempStore() {
    writer.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // The placement held once every write queued before is done.
  std::shared_ptr<const GridPlacement> held() {
    auto p = writer->call([](Store& s) { return s.load_grid_placement(); }).get();
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return p.ok() ? *p : nullptr;
  }

  std::unique_ptr<StoreWriter> writer;

 private:
  std::string dir_;
};

// Layered routes on three data VLs: the torus's take dateline VLs.
void on_dateline_vls(Config& cfg) {
  cfg.routing.engine = EngineKind::kLayered;
  cfg.routing.max_vls = 3;
}

// `p` with every ring turned by one and every path run the other way: the
// placement a grid found again would have had if another switch had been
// least when it was first placed.
GridPlacement turned(const GridPlacement& p) {
  GridPlacement out = p;
  const std::uint32_t nd = p.dims();
  for (std::size_t i = 0; i < p.coord.size(); ++i) {
    const std::uint32_t d = static_cast<std::uint32_t>(i % nd);
    out.coord[i] = p.wrap[d] != 0 ? (p.coord[i] + 1) % p.size[d] : p.size[d] - 1 - p.coord[i];
  }
  return out;
}

std::map<std::uint64_t, std::uint8_t> sls_of(const state::FabricState& s) {
  return sls_by_port_guid(*s.topology, *s.lids, *s.routes);
}

TEST(GridRestart, ARestartedSmPlacesTheGridAsTheStoreSaysThroughASwitchDeath) {
  auto truth = discovery::topo::generate(kTorus);
  ASSERT_TRUE(truth.ok()) << truth.error().message;
  const routing::Topology& t = *truth;
  const NodeId least = t.switch_node(least_guid_switch(t));
  const Guid least_guid = t.node(least).guid;
  const std::string dying = t.node(least).description;
  // The SM on a CA of another switch.
  std::string sm_node;
  for (std::uint32_t i = 0; i < t.num_nodes() && sm_node.empty(); ++i) {
    const routing::Node& node = t.node(NodeId{i});
    if (node.type != routing::NodeType::kSwitch && t.port(NodeId{i}, 1).remote_node != least) {
      sm_node = node.description;
    }
  }
  auto sm_away = [&](discovery::sim::SimOptions& so) { so.sm_node = sm_node; };
  TempStore store;
  ASSERT_NE(store.writer, nullptr);

  // First run: the canonical placement, written to the store.
  std::map<std::uint64_t, std::uint8_t> first_sls;
  std::shared_ptr<const GridPlacement> first_grid;
  {
    testing::SimSm a(kTorus, on_dateline_vls, {}, {}, sm_away, store.writer.get());
    a.start();
    ASSERT_TRUE(a.settle());
    const auto s = a.publisher.current();
    ASSERT_TRUE(s->routes->per_hop_vls()) << s->routes->notes.front();
    ASSERT_NE(s->routes->grid, nullptr);
    first_grid = s->routes->grid;
    first_sls = sls_of(*s);
  }
  const auto held = store.held();
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(*held, *first_grid);

  // The store says the grid was placed otherwise before (every ring
  // turned): a restarted SM places it so, and moves SLs doing it.
  const auto before = std::make_shared<const GridPlacement>(turned(*held));
  store.writer->save_grid_placement(before);
  testing::SimSm b(kTorus, on_dateline_vls, {}, {}, sm_away, store.writer.get());
  b.sm->remember_grid(store.held());
  b.start();
  ASSERT_TRUE(b.settle());
  const auto up = b.publisher.current();
  ASSERT_NE(up->routes->grid, nullptr);
  EXPECT_EQ(*up->routes->grid, *before);
  const auto restarted_sls = sls_of(*up);
  std::size_t moved = 0;
  for (const auto& [guid, sl] : restarted_sls) moved += sl != first_sls.at(guid) ? 1 : 0;
  EXPECT_GT(moved, 0U) << "the turned placement gave every LID the SL it had: it tests nothing";
  ASSERT_NE(store.held(), nullptr);
  EXPECT_EQ(*store.held(), *before) << "the placement given is the routes': nothing to write";

  // The switch canonical coordinates start from dies: the placement holds
  // (the repairs in between carry it), every other LID keeps its SL, and
  // the store gets the grid without the dead switch.
  const std::uint64_t sweeps = up->sweeps;
  ASSERT_TRUE(b.sim->switch_down(dying).ok());
  ASSERT_TRUE(b.settle());
  if (b.publisher.current()->sweeps == sweeps) {
    ASSERT_TRUE(b.sweep_now().ok);
    ASSERT_TRUE(b.settle());
  }
  const auto after = b.publisher.current();
  ASSERT_NE(after->routes->grid, nullptr);
  const GridPlacement& placed = *after->routes->grid;
  EXPECT_EQ(placed.find(least_guid.value), nullptr);
  EXPECT_EQ(placed.guids.size() + 1, before->guids.size());
  for (std::size_t i = 0; i < placed.guids.size(); ++i) {
    const std::uint32_t* was = before->find(placed.guids[i]);
    ASSERT_NE(was, nullptr);
    for (std::uint32_t d = 0; d < placed.dims(); ++d) {
      EXPECT_EQ(placed.coord[i * placed.dims() + d], was[d])
          << "switch " << std::hex << placed.guids[i] << std::dec << " dimension " << d;
    }
  }
  // A LID no detour around the gap fits on its SL goes to VL 0's
  // up*/down* routes (SL 0), as the routes' note says; placed afresh, the
  // grid would move hundreds to other dateline SLs.
  const auto survivors = sls_of(*after);
  ASSERT_EQ(survivors.size() + 1, restarted_sls.size());  // the dead switch's CA
  std::size_t escaped = 0;
  for (const auto& [guid, sl] : survivors) {
    if (sl == restarted_sls.at(guid)) continue;
    EXPECT_EQ(sl, 0) << "port GUID " << std::hex << guid << " moved to another dateline SL";
    ++escaped;
  }
  EXPECT_LE(escaped * 100, survivors.size()) << escaped << " LIDs on VL 0";
  ASSERT_NE(store.held(), nullptr);
  EXPECT_EQ(*store.held(), placed);
}

}  // namespace
}  // namespace subnetd::daemon

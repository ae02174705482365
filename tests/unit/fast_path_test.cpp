// FastPath::identify over the simulator: which PortInfo probes a set of
// trap 128 issuers costs, and that the failed links are all found.
//
// Each case brings a fabric up for real (sweep, LIDs, routes, programming),
// builds the FastPath as the SM does, breaks something in the simulator,
// collects the traps that reach the SM and hands their issuers to
// identify(). The simulator's own truth (which cables are down) is the
// reference.

#include "daemon/fast_path.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/bringup.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/trap_repress.hpp"

namespace subnetd::daemon {
namespace {

namespace mad = discovery::mad;

struct Fixture {
  std::unique_ptr<discovery::sim::SimFabric> sim;
  routing::WorkerPool pool{2};
  BringUpResult up;
  std::unique_ptr<FastPath> fast;

  explicit Fixture(const std::string& spec, const std::string& engine = "ftree") {
    auto topo = discovery::topo::generate(spec);
    EXPECT_TRUE(topo.ok());
    discovery::sim::SimOptions so;
    so.lid_bits = 16;
    auto s = discovery::sim::SimFabric::create(std::move(topo).value(), so);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    sim = std::move(s).value();
    BringUpOptions opts;
    opts.engine = engine;
    auto r = BringUp::run_blocking(*sim, pool, opts, nullptr);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    up = std::move(r).value();
    FastPathConfig fc;
    fc.sm_lid = up.lids.map.base_lid(up.sweep.topology, up.sweep.sm_node, up.sweep.sm_port).value;
    auto f = FastPath::build(up.sweep.topology, up.lids.map, up.routes, up.sweep.sm_node,
                             up.sweep.sm_port, fc, pool);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
    fast = std::move(f).value();
  }

  const routing::Topology& topo() const { return up.sweep.topology; }
  SwitchIndex sw(std::string_view name) const {
    return topo().node(*topo().find_by_name(name)).switch_index;
  }
  std::string name_of(SwitchIndex s) const {
    return topo().node(topo().switch_node(s)).description;
  }
  PortNum port_to(std::string_view from, std::string_view to) const {
    const NodeId a = *topo().find_by_name(from), b = *topo().find_by_name(to);
    for (unsigned p = 1; p <= topo().node(a).num_ports; ++p) {
      if (topo().port(a, static_cast<PortNum>(p)).remote_node == b) return static_cast<PortNum>(p);
    }
    ADD_FAILURE() << from << " is not cabled to " << to;
    return 0;
  }

  // Issuer LIDs of the trap 128s waiting at the SM (each repressed).
  std::vector<std::uint32_t> traps() {
    std::vector<std::uint32_t> lids;
    for (;;) {
      auto got = sim->receive(std::chrono::microseconds{0});
      if (!got.ok() || !got->has_value()) break;
      auto smp = mad::decode_smp((*got)->data);
      if (!smp.ok() || smp->method != mad::Method::kTrap) continue;
      EXPECT_TRUE(sim->send(discovery::trap_repress(*smp, **got)).ok());
      const mad::Notice n = mad::Notice::decode(mad::data_of(*smp));
      if (n.trap_number == 128) lids.push_back(n.trap128_lid(false));
    }
    return lids;
  }
  // identify() over the MAD engine; traps arriving meanwhile are repressed.
  Result<Identified> identify(const std::vector<std::uint32_t>& issuers) {
    return discovery::run_blocking<Result<Identified>>(
        *sim, [&](discovery::MadEngine& engine) -> boost::asio::awaitable<Result<Identified>> {
          engine.set_unsolicited_handler([&engine](const mad::Smp& smp, const discovery::Mad& m) {
            if (smp.method == mad::Method::kTrap) {
              (void)engine.send_unsolicited(discovery::trap_repress(smp, m));
            }
          });
          co_return co_await fast->identify(engine, issuers);
        });
  }
  // repair_and_push, and the answers to the push collected. The push's
  // flow belongs to run_blocking's engine and io_context: it is dropped
  // there (what the tests read of it copied out), never outliving them.
  struct Pushed : PushOutcome {
    bool pushed = false;  // there were blocks to push
    std::size_t blocks_failed = 0;
  };
  Result<Pushed> repair_and_push(const std::vector<routing::FailedLink>& failed) {
    return discovery::run_blocking<Result<Pushed>>(
        *sim, [&](discovery::MadEngine& engine) -> boost::asio::awaitable<Result<Pushed>> {
          auto o = co_await fast->repair_and_push(engine, failed, FastPath::Clock::now());
          if (!o.ok()) co_return o.error();
          Pushed p;
          static_cast<PushOutcome&>(p) = std::move(*o);
          if (p.in_flight) {
            co_await p.in_flight->confirmed();
            p.pushed = true;
            p.blocks_failed = p.in_flight->blocks_failed;
            p.in_flight.reset();
          }
          co_return p;
        });
  }

  std::uint32_t lid_of(SwitchIndex s) const {
    return up.lids.map.base_lid(topo(), topo().switch_node(s), 0).value;
  }
};

// (switch name, port) of every failed-link end identify() reported.
std::set<std::pair<std::string, PortNum>> ends(const Fixture& f, const Identified& id) {
  std::set<std::pair<std::string, PortNum>> out;
  for (const routing::FailedLink& l : id.failed) out.emplace(f.name_of(l.sw), l.port);
  return out;
}

// Every switch link of switch `name`, at both ends (what identify() must
// report when that switch dies).
std::set<std::pair<std::string, PortNum>> links_of_switch(const Fixture& f, const char* name) {
  std::set<std::pair<std::string, PortNum>> out;
  const routing::Topology& t = f.topo();
  const NodeId v = *t.find_by_name(name);
  for (unsigned pn = 1; pn <= t.node(v).num_ports; ++pn) {
    const routing::Port& port = t.port(v, static_cast<PortNum>(pn));
    if (!port.connected() || t.node(port.remote_node).type != routing::NodeType::kSwitch) continue;
    out.emplace(name, static_cast<PortNum>(pn));
    out.emplace(t.node(port.remote_node).description, port.remote_port);
  }
  return out;
}

TEST(FastPathIdentify, CableWhoseEndsBothTrappedCostsOneProbe) {
  // Any cable of pod 3 whose two traps both reach the SM (a trap whose
  // route to the SM ran over the cut cable is lost until its repeat).
  const std::vector<std::pair<std::string, std::string>> cables = {
      {"edge-p3-0", "agg-p3-0"}, {"edge-p3-1", "agg-p3-1"}, {"agg-p3-0", "core-0"},
      {"agg-p3-1", "core-3"},    {"edge-p3-0", "agg-p3-1"}, {"agg-p3-0", "core-1"}};
  bool tried = false;
  for (const auto& [a, b] : cables) {
    Fixture f("fat-tree:levels=3,k=4");
    ASSERT_TRUE(f.fast);
    ASSERT_TRUE(f.sim->link_down(a, f.port_to(a, b)).ok());
    const std::vector<std::uint32_t> issuers = f.traps();
    if (issuers.size() != 2) continue;
    tried = true;
    auto id = f.identify(issuers);
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(ends(f, *id), (std::set<std::pair<std::string, PortNum>>{{a, f.port_to(a, b)},
                                                                       {b, f.port_to(b, a)}}));
    EXPECT_EQ(id->smps, 1U) << a << " - " << b;
    EXPECT_EQ(id->targeted_smps, 1U);
    EXPECT_EQ(id->explained, 2U);
    EXPECT_FALSE(id->link_up);
    EXPECT_EQ(id->unanswered, 0U);
    break;
  }
  EXPECT_TRUE(tried) << "no cable of the list had both traps arrive";
}

TEST(FastPathIdentify, OneTrapAloneGetsEveryPortProbed) {
  Fixture f("fat-tree:levels=3,k=4");
  ASSERT_TRUE(f.fast);
  const PortNum p = f.port_to("agg-p2-0", "core-1");
  ASSERT_TRUE(f.sim->link_down("agg-p2-0", p).ok());
  (void)f.traps();
  // As if core-1's trap had been lost: agg-p2-0 alone points at nothing in
  // particular, so all four of its ports are read.
  const std::uint32_t issuer = f.lid_of(f.sw("agg-p2-0"));
  auto id = f.identify(std::vector<std::uint32_t>{issuer});
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(ends(f, *id), (std::set<std::pair<std::string, PortNum>>{
                              {"agg-p2-0", p}, {"core-1", f.port_to("core-1", "agg-p2-0")}}));
  EXPECT_EQ(id->targeted_smps, 0U);
  EXPECT_EQ(id->smps, 4U);
}

TEST(FastPathIdentify, TwoUnrelatedTrapsAreEachProbedWhole) {
  // Two cables, and of each only the end away from the SM's side reports
  // (as if the other trap were lost): the two issuers share no cable and
  // no neighbour, nothing explains them together, both are read whole.
  Fixture f("fat-tree:levels=3,k=4");
  ASSERT_TRUE(f.fast);
  const PortNum p1 = f.port_to("agg-p1-0", "edge-p1-0");
  const PortNum p2 = f.port_to("core-2", "agg-p3-1");
  ASSERT_TRUE(f.sim->link_down("agg-p1-0", p1).ok());
  ASSERT_TRUE(f.sim->link_down("core-2", p2).ok());
  (void)f.traps();
  const std::vector<std::uint32_t> issuers = {f.lid_of(f.sw("agg-p1-0")), f.lid_of(f.sw("core-2"))};
  auto id = f.identify(issuers);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(ends(f, *id), (std::set<std::pair<std::string, PortNum>>{
                              {"agg-p1-0", p1},
                              {"edge-p1-0", f.port_to("edge-p1-0", "agg-p1-0")},
                              {"core-2", p2},
                              {"agg-p3-1", f.port_to("agg-p3-1", "core-2")}}));
  EXPECT_EQ(id->explained, 0U);
  EXPECT_EQ(id->targeted_smps, 0U);
  EXPECT_EQ(id->smps, 8U);  // every port of both
  EXPECT_EQ(id->unanswered, 0U);
}

TEST(FastPathIdentify, DeadSwitchIsFoundThroughItsNeighboursLinks) {
  for (const char* victim : {"agg-p3-1", "agg-p2-0", "edge-p2-1"}) {
    SCOPED_TRACE(victim);
    Fixture f("fat-tree:levels=3,k=4");
    ASSERT_TRUE(f.fast);
    ASSERT_TRUE(f.sim->switch_down(victim).ok());
    const std::vector<std::uint32_t> issuers = f.traps();
    ASSERT_GE(issuers.size(), 2U);
    auto id = f.identify(issuers);
    ASSERT_TRUE(id.ok()) << id.error().message;
    // Every switch link of the dead switch, at both ends, including links
    // to neighbours whose own trap was lost.
    EXPECT_EQ(ends(f, *id), links_of_switch(f, victim));
    // Fewer probes than every port of every trapping switch.
    EXPECT_LT(id->smps, 4U * issuers.size());
    EXPECT_EQ(id->smps, id->targeted_smps);
    EXPECT_EQ(id->explained, issuers.size());
  }
}

TEST(FastPathIdentify, DeadCoreTiedWithItsTwinIsFound) {
  // core-1 (or core-3) dies. Its neighbours, the aggregation switches of
  // its plane in every pod, trap; core-0 (core-2) has the same neighbours,
  // so the two cores tie as suspects. Both are asked about through one
  // trapper each, and every link of the dead one is found, without reading
  // every port of the four trappers. (core-0 and core-2 are the tree
  // parents: when they die, the other traps are lost on the way and only
  // one arrives.)
  for (const char* victim : {"core-1", "core-3"}) {
    SCOPED_TRACE(victim);
    Fixture f("fat-tree:levels=3,k=4");
    ASSERT_TRUE(f.fast);
    ASSERT_TRUE(f.sim->switch_down(victim).ok());
    const std::vector<std::uint32_t> issuers = f.traps();
    ASSERT_EQ(issuers.size(), 4U);
    auto id = f.identify(issuers);
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(ends(f, *id), links_of_switch(f, victim));
    EXPECT_EQ(id->smps, id->targeted_smps);
    EXPECT_EQ(id->explained, 4U);
    EXPECT_LE(id->smps, 6U);  // two suspects asked, three more links of the dead one
    EXPECT_EQ(id->unanswered, 0U);
  }
}

TEST(FastPathIdentify, RepairAfterTargetedProbesKeepsEveryLidRouted) {
  // The links found by the targeted probes are what the rerouter repairs:
  // after a dead switch, no table names a port of a link it had.
  Fixture f("fat-tree:levels=3,k=4");
  ASSERT_TRUE(f.fast);
  ASSERT_TRUE(f.sim->switch_down("agg-p3-1").ok());
  auto id = f.identify(f.traps());
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto pushed = f.repair_and_push(id->failed);
  ASSERT_TRUE(pushed.ok()) << pushed.error().message;
  EXPECT_EQ(pushed->verdict, routing::RepairReport::Verdict::kRepaired) << pushed->reason;
  EXPECT_EQ(pushed->switch_links, 4U);
  ASSERT_TRUE(pushed->pushed);
  EXPECT_EQ(pushed->blocks_failed, 0U);
  const routing::Rerouter& rr = f.fast->rerouter();
  for (const routing::FailedLink& l : id->failed) {
    for (std::uint32_t lid = 1; lid < rr.lft_entries(); ++lid) {
      if (l.sw == f.sw("agg-p3-1")) break;  // the dead switch keeps its row
      ASSERT_NE(rr.entry(l.sw, Lid{lid}), l.port) << f.name_of(l.sw) << " LID " << lid;
    }
  }
}

}  // namespace
}  // namespace subnetd::daemon

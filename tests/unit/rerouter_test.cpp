// The incremental rerouter (routing/rerouter.hpp): the up/down order the
// engines export, randomised failure sequences checked against the full
// verifier and a BFS oracle, the "only what crossed the failed link changes"
// property, refusal of repairs that would need a down->up turn for CA traffic
// or that would close a credit loop, reset and bad input.
//
// Seeds are fixed and printed; every failure sequence is deterministic.

#include "routing/rerouter.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "routing/engine.hpp"
#include "routing/grid_placement.hpp"
#include "routing/switch_graph.hpp"
#include "routing/verifier.hpp"
#include "routing_test_support.hpp"

namespace subnetd::routing {
namespace {

using testing::Fabric;
using testing::make_fabric;
using testing::port_to;
using testing::sw_index;
using testing::trace_all;

Result<Routes> route(const Topology& topo, const LidMap& lids, std::string_view engine) {
  WorkerPool pool(2);
  return testing::route_engine(topo, lids, engine, pool);
}

bool engine_exists(std::string_view name) {
  return make_engine(name.substr(0, name.find('@'))).ok();
}

// a -> b is "down" when b comes later in the exported order.
bool goes_down(const Topology& topo, const Routes& r, SwitchIndex a, SwitchIndex b) {
  auto key = [&](SwitchIndex s) {
    return std::pair(r.updown_rank[s.value], topo.node(topo.switch_node(s)).guid.value);
  };
  return key(a) < key(b);
}

// Walks every (switch, LID) route and checks it is up*down* under the
// exported rank (CA/router LIDs only unless `switch_lids`). Returns the first
// violation.
std::string updown_violation(const Topology& topo, const LidMap& lids, const Routes& r,
                             bool switch_lids, bool from_ca_switches_only = false) {
  auto g = SwitchGraph::build(topo, lids);
  if (!g.ok()) return g.error().message;
  const std::uint32_t n = g->num_switches();
  if (r.updown_rank.size() != n) return "no up/down rank exported";
  for (std::uint32_t d = 1; d <= g->max_lid().value; ++d) {
    const LidAttachment at = g->attachment(Lid{d});
    if (!at.routable() || (at.port == 0 && !switch_lids)) continue;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (from_ca_switches_only && !g->has_endpoints(SwitchIndex{s})) continue;
      bool went_down = false;
      SwitchIndex x{s};
      for (std::uint32_t hops = 0; x != at.sw; ++hops) {
        const std::uint8_t e = r.lfts[x.value].get(Lid{d});
        const SwitchIndex nb = g->peer_at_port(x, e);
        if (nb == kNoSwitch || hops > n) break;  // unreachable parts stay dropped
        const bool down = goes_down(topo, r, x, nb);
        if (!down && went_down) {
          return fmt::format("LID {} from switch {}: up-link after a down-link at switch {}", d, s,
                             x.value);
        }
        went_down = went_down || down;
        x = nb;
      }
    }
  }
  return {};
}

class UpDownRank : public ::testing::TestWithParam<std::string> {};

TEST_P(UpDownRank, EveryRouteIsUpThenDownUnderTheExportedRank) {
  for (const char* engine : {"updn", "ftree", "layered@1"}) {
    if (!engine_exists(engine)) continue;
    SCOPED_TRACE(fmt::format("{} on {}", engine, GetParam()));
    Fabric f = make_fabric(GetParam());
    auto r = route(f.topo, f.lids, engine);
    if (!r.ok() && r.error().code == Errc::kUnsupported) continue;  // ftree: not a fat tree
    ASSERT_TRUE(r.ok()) << r.error().message;
    // layered on one VL: balanced up*/down*, except on grids (dimension
    // order, no up/down order).
    if (std::string_view(engine) == "layered@1" && r->updown_rank.empty() &&
        r->notes.front().find("dimension-order") != std::string::npos) {
      continue;
    }
    if (std::string_view(engine) != "updn" && r->updown_rank.empty()) {
      ADD_FAILURE() << engine << " exports no up/down rank";
      continue;
    }
    ASSERT_EQ(r->updown_rank.size(), f.topo.num_switches());
    // The rerouter relies on this for CA/router LIDs. updn keeps switch LIDs
    // up*down* too; ftree routes switch pairs without an up/down path (top
    // switches) on shortest paths, which is management traffic only.
    EXPECT_EQ(updown_violation(f.topo, f.lids, *r, false), "");
    if (std::string_view(engine) != "ftree") {
      EXPECT_EQ(updown_violation(f.topo, f.lids, *r, true), "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fabrics, UpDownRank,
                         ::testing::Values("fat-tree:levels=2,radix=8", "fat-tree:levels=3,k=8",
                                           "ring:switches=6,hosts=1", "torus:dims=4x4,hosts=1",
                                           "random:switches=32,degree=5,hosts=2,seed=7",
                                           "dragonfly:a=4,p=2,h=2,g=5"));

TEST(UpDownRank, MinhopExportsNone) {
  Fabric f = make_fabric("fat-tree:levels=2,radix=4");
  auto r = route(f.topo, f.lids, "minhop");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->updown_rank.empty());
  WorkerPool pool(1);
  auto rr =
      Rerouter::build(f.topo, f.lids, std::make_shared<const Routes>(std::move(r).value()), pool);
  ASSERT_FALSE(rr.ok());
  EXPECT_EQ(rr.error().code, Errc::kUnsupported);
  EXPECT_NE(rr.error().message.find("minhop"), std::string::npos) << rr.error().message;
}

// ---------------------------------------------------------------------------
// Randomised failure sequences

// A failed link as both of its ends (one end for a CA link).
struct Cut {
  std::vector<FailedLink> ends;  // switch ends
  std::string what;
};

std::set<std::pair<SwitchIndex, PortNum>> end_set(const std::vector<FailedLink>& ends) {
  std::set<std::pair<SwitchIndex, PortNum>> s;
  for (const FailedLink& e : ends) s.emplace(e.sw, e.port);
  return s;
}

// Whether the route of (s, d) in `table` crosses one of `cut` over the
// topology as it was before the cut.
bool crosses(const Topology& before, const std::vector<std::uint8_t>& table, std::uint32_t stride,
             SwitchIndex s, Lid d, const std::set<std::pair<SwitchIndex, PortNum>>& cut) {
  SwitchIndex x = s;
  for (std::size_t hops = 0; hops <= before.num_switches(); ++hops) {
    const std::uint8_t e = table[std::size_t{x.value} * stride + d.value];
    if (e == kDropPort || e == 0) return false;
    if (cut.count({x, e}) != 0) return true;
    const NodeId node = before.switch_node(x);
    if (e > before.node(node).num_ports) return false;
    const Port& p = before.port(node, e);
    if (!p.connected() || before.node(p.remote_node).type != NodeType::kSwitch) return false;
    x = before.node(p.remote_node).switch_index;
  }
  return false;
}

struct SequenceStats {
  int repairs = 0;
  int refusals = 0;
  std::uint64_t changes = 0;
  std::uint64_t orphans = 0;
  std::uint64_t dead_ends = 0;
  std::size_t links_cut = 0;
};

// Cuts links of `spec` (routed by `engine`) one failure at a time until
// `percent` of the switch-to-switch links are gone, checking every repair.
// `precut` links are removed before routing (a degraded fabric).
// Switches that have an up*/down* route to t over the live links, from
// scratch: those that reach t going down only, then everything below them
// going up only (a -> b is down when b comes later in the order).
std::vector<bool> updown_reach(const Topology& live, const Topology& base,
                               const std::vector<std::uint32_t>& rank, SwitchIndex t) {
  const std::uint32_t n = static_cast<std::uint32_t>(live.num_switches());
  auto key = [&](std::uint32_t s) {
    return std::pair(rank[s], base.node(base.switch_node(SwitchIndex{s})).guid.value);
  };
  auto walk = [&](std::vector<bool>& in, bool toward_below) {
    std::vector<std::uint32_t> work;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (in[s]) work.push_back(s);
    }
    while (!work.empty()) {
      const std::uint32_t v = work.back();
      work.pop_back();
      const NodeId vn = live.switch_node(SwitchIndex{v});
      for (unsigned p = 1; p <= live.node(vn).num_ports; ++p) {
        const Port& port = live.port(vn, static_cast<PortNum>(p));
        if (!port.connected() || live.node(port.remote_node).type != NodeType::kSwitch) continue;
        const std::uint32_t u = live.node(port.remote_node).switch_index.value;
        // Down phase: u -> v goes down (u above v). Up phase: u -> v goes up.
        const bool ok = toward_below ? key(u) > key(v) : key(u) < key(v);
        if (ok && !in[u]) {
          in[u] = true;
          work.push_back(u);
        }
      }
    }
  };
  std::vector<bool> in(n, false);
  in[t.value] = true;
  walk(in, false);  // switches above that reach t going down
  walk(in, true);   // switches below them climb there first
  return in;
}

bool cut_off(const Topology& live, SwitchIndex s) {
  const NodeId sn = live.switch_node(s);
  for (unsigned p = 1; p <= live.node(sn).num_ports; ++p) {
    const Port& port = live.port(sn, static_cast<PortNum>(p));
    if (port.connected() && live.node(port.remote_node).type == NodeType::kSwitch) return false;
  }
  return true;
}

void run_sequence_into(const std::string& spec, const std::string& engine, std::uint64_t seed,
                       double percent, std::size_t precut, SequenceStats& st) {
  std::printf("[ sequence ] %s engine=%s seed=%llu precut=%zu\n", spec.c_str(), engine.c_str(),
              static_cast<unsigned long long>(seed), precut);
  SCOPED_TRACE(fmt::format("{} engine={} seed={} precut={}", spec, engine, seed, precut));
  Fabric f = make_fabric(spec);
  if (precut > 0) testing::cut_links(f.topo, precut, seed * 7919 + 1);
  std::mt19937_64 rng(seed);
  WorkerPool pool(2);

  // The rerouter refers to `base` (never mutated); `live` follows the failures.
  auto base = std::make_unique<Topology>(f.topo);
  Topology live = f.topo;
  auto routed = route(*base, f.lids, engine);
  ASSERT_TRUE(routed.ok()) << routed.error().message;
  // The precondition the rerouter relies on (lft.hpp, Routes::updown_rank),
  // from the switches that carry CAs (ftree gives switches with no up/down
  // route to a LID down-then-up entries that no CA traffic enters; the
  // rerouter takes those as orphans).
  ASSERT_EQ(updown_violation(*base, f.lids, *routed, false, true), "");
  std::vector<std::uint32_t> rank = routed->updown_rank;
  auto built =
      Rerouter::build(*base, f.lids, std::make_shared<const Routes>(std::move(*routed)), pool);
  ASSERT_TRUE(built.ok()) << built.error().message;
  std::unique_ptr<Rerouter> rr = std::move(built).value();
  const std::size_t target = std::max<std::size_t>(
      1, static_cast<std::size_t>(static_cast<double>(testing::switch_links(f.topo).size()) *
                                  percent / 100.0));
  int step = 0;
  while (st.links_cut < target) {
    ++step;
    // Pick a failure: mostly one switch link, sometimes a CA link, now and
    // then a whole switch (all its links at once).
    Cut cut;
    const std::uint64_t kind = rng() % 20;
    std::vector<PortRef> links = testing::switch_links(live);
    if (links.empty()) break;
    if (kind == 0) {
      const NodeId sw =
          live.switch_node(SwitchIndex{static_cast<std::uint32_t>(rng() % live.num_switches())});
      for (unsigned p = 1; p <= live.node(sw).num_ports; ++p) {
        const Port& port = live.port(sw, static_cast<PortNum>(p));
        if (!port.connected()) continue;
        cut.ends.push_back({live.node(sw).switch_index, static_cast<PortNum>(p)});
        if (live.node(port.remote_node).type == NodeType::kSwitch) {
          cut.ends.push_back({live.node(port.remote_node).switch_index, port.remote_port});
          ++st.links_cut;
        }
      }
      cut.what = "switch " + live.node(sw).description;
    } else if (kind == 1) {
      std::vector<PortRef> ca_links;
      for (NodeId sw : live.switches()) {
        for (unsigned p = 1; p <= live.node(sw).num_ports; ++p) {
          const Port& port = live.port(sw, static_cast<PortNum>(p));
          if (port.connected() && live.node(port.remote_node).type != NodeType::kSwitch)
            ca_links.push_back({sw, static_cast<PortNum>(p)});
        }
      }
      if (ca_links.empty()) continue;
      const PortRef c = ca_links[rng() % ca_links.size()];
      cut.ends.push_back({live.node(c.node).switch_index, c.port});
      cut.what = fmt::format("CA link {}[{}]", live.node(c.node).description, c.port);
    } else {
      const PortRef l = links[rng() % links.size()];
      const Port& p = live.port(l);
      cut.ends.push_back({live.node(l.node).switch_index, l.port});
      cut.ends.push_back({live.node(p.remote_node).switch_index, p.remote_port});
      cut.what = fmt::format("{}[{}]-{}[{}]", live.node(l.node).description, l.port,
                             live.node(p.remote_node).description, p.remote_port);
      ++st.links_cut;
    }
    if (cut.ends.empty()) continue;
    SCOPED_TRACE(fmt::format("step {}: {}", step, cut.what));

    // The tables before, to check which entries may change.
    const std::uint32_t stride = rr->lft_entries();
    std::vector<std::uint8_t> before(std::size_t{rr->num_switches()} * stride);
    for (std::uint32_t s = 0; s < rr->num_switches(); ++s)
      std::copy_n(rr->row(SwitchIndex{s}), stride, before.begin() + std::size_t{s} * stride);
    const Topology live_before = live;
    for (const FailedLink& e : cut.ends) live.disconnect({live.switch_node(e.sw), e.port});

    // Only one end of each switch link is handed in (the rerouter finds the
    // other), except for switch failures, where every end is.
    std::vector<FailedLink> hand_in;
    for (std::size_t i = 0; i < cut.ends.size(); ++i) {
      if (kind >= 2 && i == 1) continue;
      hand_in.push_back(cut.ends[i]);
    }
    auto rep = rr->repair(hand_in);
    ASSERT_TRUE(rep.ok()) << rep.error().message;
    if (rep->verdict == RepairReport::Verdict::kNeedsFullRecompute) {
      // Refused: nothing changed; the full recompute takes over.
      ++st.refusals;
      std::printf("[ sequence ]   step %d (%s) refused: %s\n", step, cut.what.c_str(),
                  rep->reason.c_str());
      EXPECT_FALSE(rep->reason.empty());
      EXPECT_TRUE(rr->stale());
      for (std::uint32_t s = 0; s < rr->num_switches(); ++s) {
        const SwitchIndex sw{s};
        ASSERT_TRUE(
            std::equal(rr->row(sw), rr->row(sw) + stride, before.begin() + std::size_t{s} * stride))
            << "refused repair changed switch " << s;
      }
      base = std::make_unique<Topology>(live);
      auto again = route(*base, f.lids, engine);
      ASSERT_TRUE(again.ok()) << again.error().message;
      rank = again->updown_rank;
      auto v = verify(*base, f.lids, *again, pool, {});
      ASSERT_TRUE(v.ok()) << v.error().message;
      auto rebuilt =
          Rerouter::build(*base, f.lids, std::make_shared<const Routes>(std::move(*again)), pool);
      ASSERT_TRUE(rebuilt.ok()) << rebuilt.error().message;
      rr = std::move(rebuilt).value();
      continue;
    }
    ++st.repairs;
    st.changes += rep->changes.size();
    st.orphans += rep->orphans;
    st.dead_ends += rep->dead_ends;

    // Only entries whose old route crossed the failed link(s) changed.
    const auto cut_ends = end_set(cut.ends);
    std::set<std::pair<SwitchIndex, Lid>> seen;
    for (const LftChange& c : rep->changes) {
      ASSERT_TRUE(seen.emplace(c.sw, c.lid).second) << "change listed twice";
      ASSERT_EQ(before[std::size_t{c.sw.value} * stride + c.lid.value], c.old_port);
      ASSERT_EQ(rr->row(c.sw)[c.lid.value], c.new_port);
      ASSERT_TRUE(crosses(live_before, before, stride, c.sw, c.lid, cut_ends))
          << "switch " << c.sw.value << " LID " << c.lid.value << " changed (" << int(c.old_port)
          << " -> " << int(c.new_port) << ") though its route did not cross the failed link";
    }
    // Every changed entry is in a listed block, and nothing else changed.
    std::set<std::pair<SwitchIndex, std::uint32_t>> blocks;
    for (const DirtyBlock& b : rep->blocks) ASSERT_TRUE(blocks.emplace(b.sw, b.block).second);
    for (std::uint32_t s = 0; s < rr->num_switches(); ++s) {
      const SwitchIndex sw{s};
      for (std::uint32_t d = 0; d < stride; ++d) {
        if (rr->row(sw)[d] == before[std::size_t{s} * stride + d]) continue;
        ASSERT_TRUE(seen.count({sw, Lid{d}})) << "unlisted change at switch " << s << " LID " << d;
        ASSERT_TRUE(blocks.count({sw, d / kLftBlockSize}));
      }
    }

    // The up*/down* routes the repairs keep (per destination switch) are
    // those of the live fabric, from scratch (cut-off switches aside).
    for (std::uint32_t t = 0; t < rr->num_switches(); ++t) {
      if (cut_off(live, SwitchIndex{t})) continue;
      const std::vector<bool> reach = updown_reach(live, *base, rank, SwitchIndex{t});
      for (std::uint32_t s = 0; s < rr->num_switches(); ++s) {
        if (cut_off(live, SwitchIndex{s})) continue;
        ASSERT_EQ(rr->has_updown_route(SwitchIndex{s}, SwitchIndex{t}), reach[s])
            << "switch " << s << " to switch " << t;
      }
    }
    // The incremental check and the full verifier agree: both pass.
    auto checked = rr->check_changes();
    ASSERT_TRUE(checked.ok()) << checked.error().message;
    Routes now = rr->export_routes(pool);
    auto v = verify(live, f.lids, now, pool, {});
    ASSERT_TRUE(v.ok()) << v.error().message;
    // Every still-connected pair routes (BFS oracle), nothing misroutes.
    const auto trace = trace_all(live, f.lids, now);
    ASSERT_EQ(trace.delivered, trace.reachable_pairs) << trace.first_failure;
    ASSERT_EQ(trace.misrouted, 0U);
  }
  std::printf(
      "[ sequence ]   %d repairs, %d refused, %zu links cut, %llu entries changed, %llu "
      "dead ends, %llu orphans\n",
      st.repairs, st.refusals, st.links_cut, static_cast<unsigned long long>(st.changes),
      static_cast<unsigned long long>(st.dead_ends), static_cast<unsigned long long>(st.orphans));
}

SequenceStats run_sequence(const std::string& spec, const std::string& engine, std::uint64_t seed,
                           double percent, std::size_t precut = 0) {
  SequenceStats st;
  run_sequence_into(spec, engine, seed, percent, precut, st);
  return st;
}

TEST(RerouterSequence, FatTreeUpdn) {
  for (std::uint64_t seed : {1, 2, 3}) {
    const auto st = run_sequence("fat-tree:levels=3,k=8", "updn", seed, 5.0);
    EXPECT_GT(st.repairs, 0);
  }
  const auto st = run_sequence("fat-tree:levels=2,radix=12", "updn", 4, 5.0);
  EXPECT_GT(st.repairs, 0);
}

TEST(RerouterSequence, FatTreeFtree) {
  if (!engine_exists("ftree")) GTEST_SKIP() << "no ftree engine in this build";
  for (std::uint64_t seed : {11, 12, 13}) {
    const auto st = run_sequence("fat-tree:levels=3,k=8", "ftree", seed, 5.0);
    EXPECT_GT(st.repairs, 0);
  }
}

TEST(RerouterSequence, DegradedFatTree) {
  for (std::uint64_t seed : {21, 22}) {
    const auto st = run_sequence("fat-tree:levels=3,k=8", "updn", seed, 5.0, 12);
    EXPECT_GT(st.repairs, 0);
  }
  if (engine_exists("ftree")) {
    const auto st = run_sequence("fat-tree:levels=3,k=8", "ftree", 23, 5.0, 12);
    EXPECT_GT(st.repairs, 0);
  }
}

// Balanced up*/down* (the layered engine on one VL) exports updn's order:
// the rerouter repairs its tables in place.
TEST(RerouterSequence, BalancedUpdnOnOneVl) {
  for (std::uint64_t seed : {24, 25}) {
    const auto st = run_sequence("fat-tree:levels=3,k=8", "layered@1", seed, 5.0, 12);
    EXPECT_GT(st.repairs, 0);
  }
  const auto st = run_sequence("random:switches=40,degree=6,hosts=2,seed=5", "layered@1", 44, 8.0);
  EXPECT_GT(st.repairs + st.refusals, 0);
}

TEST(RerouterSequence, LargerFatTreeAccumulatesFivePercent) {
  const auto st = run_sequence("fat-tree:levels=3,k=12", "updn", 31, 5.0);
  EXPECT_GT(st.repairs, 10);
}

TEST(RerouterSequence, RandomGraphUpdn) {
  for (std::uint64_t seed : {41, 42, 43}) {
    const auto st = run_sequence("random:switches=40,degree=6,hosts=2,seed=5", "updn", seed, 8.0);
    EXPECT_GT(st.repairs + st.refusals, 0);
  }
}

TEST(RerouterSequence, TorusUpdn) {
  for (std::uint64_t seed : {51, 52}) {
    const auto st = run_sequence("torus:dims=4x4x3,hosts=1", "updn", seed, 8.0);
    EXPECT_GT(st.repairs + st.refusals, 0);
  }
}

TEST(RerouterSequence, DragonflyUpdn) {
  const auto st = run_sequence("dragonfly:a=4,p=2,h=2,g=5", "updn", 61, 8.0);
  EXPECT_GT(st.repairs + st.refusals, 0);
}

// ---------------------------------------------------------------------------
// Specific repairs

struct Built {
  Fabric f;
  std::unique_ptr<Rerouter> rr;
};

Built build(std::string_view spec, std::string_view engine) {
  Built b{make_fabric(spec), nullptr};
  auto r = route(b.f.topo, b.f.lids, engine);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return b;
  WorkerPool pool(2);
  auto rr =
      Rerouter::build(b.f.topo, b.f.lids, std::make_shared<const Routes>(std::move(*r)), pool);
  EXPECT_TRUE(rr.ok()) << (rr.ok() ? "" : rr.error().message);
  if (rr.ok()) b.rr = std::move(rr).value();
  return b;
}

TEST(Rerouter, EdgeAggregationFailureLeavesOrphansWithoutCaTraffic) {
  // An edge-aggregation failure: the aggregation switches of that plane in
  // the other pods can no longer reach the edge switch going only up then
  // down; they become orphans for its LIDs and every edge switch avoids them.
  Built b = build("fat-tree:levels=3,k=4", "updn");
  ASSERT_TRUE(b.rr);
  const SwitchIndex edge = sw_index(b.f, "edge-p0-0");
  const PortNum p = port_to(b.f, "edge-p0-0", "agg-p0-0");
  const FailedLink cut[] = {{edge, p}};
  auto rep = b.rr->repair(cut);
  ASSERT_TRUE(rep.ok());
  ASSERT_EQ(rep->verdict, RepairReport::Verdict::kRepaired) << rep->reason;
  EXPECT_EQ(rep->switch_links_failed, 1U);
  EXPECT_GT(rep->orphans, 0U);
  EXPECT_GT(rep->dead_ends, 0U);
  // Per destination switch: the cores above agg-p0-0 and the aggregation
  // switches of its plane lose their up*/down* route to edge-p0-0 as a
  // whole (their entries become implicit orphans and stay: none named the
  // failed port), and only the switches that still have a route and sent
  // edge-p0-0's LIDs into them move.
  EXPECT_GE(rep->legal_routes_lost, 2U + 1U);  // >= 2 cores, the other pod's agg
  EXPECT_GT(rep->moved_off_lost, 0U);
  for (const LftChange& c : rep->changes) {
    const std::string name = b.f.topo.node(b.f.topo.switch_node(c.sw)).description;
    EXPECT_NE(name.rfind("core-", 0), 0U) << name << " LID " << c.lid.value << " changed";
  }
  Topology live = b.f.topo;
  live.disconnect({b.f.topo.switch_node(edge), p});
  WorkerPool pool(2);
  const Routes now = b.rr->export_routes(pool);
  auto v = verify(live, b.f.lids, now, pool, {});
  EXPECT_TRUE(v.ok()) << v.error().message;
  const auto trace = trace_all(live, b.f.lids, now);
  EXPECT_EQ(trace.delivered, trace.reachable_pairs) << trace.first_failure;
  EXPECT_FALSE(b.rr->link_live(edge, p));
  // Reporting the same link again (its other end) is a no-op.
  const FailedLink other[] = {{sw_index(b.f, "agg-p0-0"), port_to(b.f, "agg-p0-0", "edge-p0-0")}};
  auto again = b.rr->repair(other);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->switch_links_failed, 0U);
  EXPECT_TRUE(again->changes.empty());
}

TEST(Rerouter, CaLinkFailureDropsItsLidsAtTheLeafOnly) {
  Built b = build("fat-tree:levels=2,radix=4", "updn");
  ASSERT_TRUE(b.rr);
  const NodeId leaf = *b.f.topo.find_by_name("leaf0");
  PortNum ca_port = 0;
  for (unsigned p = 1; p <= b.f.topo.node(leaf).num_ports; ++p) {
    const Port& port = b.f.topo.port(leaf, static_cast<PortNum>(p));
    if (port.connected() && b.f.topo.node(port.remote_node).type != NodeType::kSwitch) {
      ca_port = static_cast<PortNum>(p);
      break;
    }
  }
  ASSERT_NE(ca_port, 0);
  const Port& ca = b.f.topo.port(leaf, ca_port);
  const Lid ca_lid = b.f.lids.base_lid(b.f.topo, ca.remote_node, ca.remote_port);
  const FailedLink cut[] = {{b.f.topo.node(leaf).switch_index, ca_port}};
  auto rep = b.rr->repair(cut);
  ASSERT_TRUE(rep.ok());
  ASSERT_EQ(rep->verdict, RepairReport::Verdict::kRepaired);
  EXPECT_EQ(rep->ca_links_failed, 1U);
  ASSERT_EQ(rep->changes.size(), 1U);
  EXPECT_EQ(rep->changes[0].sw, b.f.topo.node(leaf).switch_index);
  EXPECT_EQ(rep->changes[0].lid, ca_lid);
  EXPECT_EQ(rep->changes[0].new_port, kDropPort);
  EXPECT_EQ(rep->blocks.size(), 1U);
}

TEST(Rerouter, SwitchFailureRepairsAroundIt) {
  Built b = build("fat-tree:levels=3,k=6", "updn");
  ASSERT_TRUE(b.rr);
  const NodeId agg = *b.f.topo.find_by_name("agg-p1-1");
  std::vector<FailedLink> ends;
  Topology live = b.f.topo;
  for (unsigned p = 1; p <= b.f.topo.node(agg).num_ports; ++p) {
    if (!b.f.topo.port(agg, static_cast<PortNum>(p)).connected()) continue;
    ends.push_back({b.f.topo.node(agg).switch_index, static_cast<PortNum>(p)});
    live.disconnect({agg, static_cast<PortNum>(p)});
  }
  auto rep = b.rr->repair(ends);
  ASSERT_TRUE(rep.ok());
  ASSERT_EQ(rep->verdict, RepairReport::Verdict::kRepaired) << rep->reason;
  EXPECT_EQ(rep->switch_links_failed, 6U);
  WorkerPool pool(2);
  const Routes now = b.rr->export_routes(pool);
  auto v = verify(live, b.f.lids, now, pool, {});
  EXPECT_TRUE(v.ok()) << v.error().message;
  const auto trace = trace_all(live, b.f.lids, now);
  EXPECT_EQ(trace.delivered, trace.reachable_pairs) << trace.first_failure;
}

// The exported routes carry every field of the routes the Rerouter was
// built on, its working tables apart (the daemon publishes them in the
// engine's place: the SA, multicast and the dumps read the rest).
TEST(Rerouter, ExportedRoutesCarryEveryFieldOfTheBuiltOnes) {
  const Fabric f = make_fabric("fat-tree:levels=3,k=4");
  auto r = route(f.topo, f.lids, "updn");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::uint32_t n = static_cast<std::uint32_t>(r->lfts.size());
  r->notes.push_back("a note");
  r->vl0_rank.resize(n);
  for (std::uint32_t s = 0; s < n; ++s) r->vl0_rank[s] = n - 1 - s;
  r->path_layers.resize(std::size_t{r->max_lid.value} + 1);
  r->path_layers[1].assign(n, 0);
  auto grid = std::make_shared<GridPlacement>();
  grid->size = {2};
  grid->wrap = {0};
  r->grid = grid;
  const Routes base = *r;
  WorkerPool pool(2);
  auto rr = Rerouter::build(f.topo, f.lids, std::make_shared<const Routes>(std::move(*r)), pool);
  ASSERT_TRUE(rr.ok()) << rr.error().message;
  const Routes out = (*rr)->export_routes(pool);
  EXPECT_EQ(out.engine, base.engine);
  EXPECT_EQ(out.max_lid, base.max_lid);
  EXPECT_EQ(out.num_vls, base.num_vls);
  EXPECT_EQ(out.lid_layer, base.lid_layer);
  EXPECT_EQ(out.path_layers, base.path_layers);
  EXPECT_EQ(out.hop_vls, base.hop_vls);
  EXPECT_EQ(out.updown_rank, base.updown_rank);
  EXPECT_EQ(out.vl0_rank, base.vl0_rank);
  EXPECT_EQ(out.grid, base.grid);
  EXPECT_EQ(out.notes, base.notes);
  ASSERT_EQ(out.lfts.size(), base.lfts.size());
  for (std::size_t s = 0; s < base.lfts.size(); ++s) {
    EXPECT_TRUE(out.lfts[s] == base.lfts[s]) << "switch " << s;
  }
}

TEST(Rerouter, ResetRestoresTheBuiltTablesAndRepeatsARepairExactly) {
  Built b = build("fat-tree:levels=3,k=6", "updn");
  ASSERT_TRUE(b.rr);
  WorkerPool pool(2);
  const Routes original = b.rr->export_routes(pool);
  const SwitchIndex core = sw_index(b.f, "core-0");
  const FailedLink cut[] = {{core, 1}};
  auto first = b.rr->repair(cut);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->verdict, RepairReport::Verdict::kRepaired);
  const std::vector<LftChange> changes(first->changes.begin(), first->changes.end());
  ASSERT_FALSE(changes.empty());
  const FailedLink more[] = {{sw_index(b.f, "core-3"), 2}};
  ASSERT_TRUE(b.rr->repair(more).ok());
  b.rr->reset();
  EXPECT_TRUE(b.rr->link_live(core, 1));
  const Routes restored = b.rr->export_routes(pool);
  for (std::size_t s = 0; s < original.lfts.size(); ++s) {
    ASSERT_TRUE(restored.lfts[s] == original.lfts[s]) << "switch " << s;
  }
  auto second = b.rr->repair(cut);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->changes.size(), changes.size());
  for (std::size_t i = 0; i < changes.size(); ++i) {
    EXPECT_EQ(second->changes[i].sw, changes[i].sw);
    EXPECT_EQ(second->changes[i].lid, changes[i].lid);
    EXPECT_EQ(second->changes[i].new_port, changes[i].new_port);
  }
}

TEST(Rerouter, BadInputChangesNothing) {
  Built b = build("fat-tree:levels=2,radix=4", "updn");
  ASSERT_TRUE(b.rr);
  const FailedLink no_switch[] = {{SwitchIndex{999}, 1}};
  auto r1 = b.rr->repair(no_switch);
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.error().code, Errc::kNotFound);
  const FailedLink no_port[] = {{SwitchIndex{0}, 200}};
  auto r2 = b.rr->repair(no_port);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code, Errc::kInvalidArgument);
  EXPECT_NE(r2.error().message.find("no port 200"), std::string::npos) << r2.error().message;
  const FailedLink port_zero[] = {{SwitchIndex{0}, 0}};
  EXPECT_FALSE(b.rr->repair(port_zero).ok());
  // leaf0 has 4 ports: 2 CAs and 2 spines. A good end after a bad one: the
  // whole call fails and the good one is not applied either.
  const FailedLink mixed[] = {{SwitchIndex{0}, 3}, {SwitchIndex{999}, 1}};
  EXPECT_FALSE(b.rr->repair(mixed).ok());
  EXPECT_TRUE(b.rr->link_live(SwitchIndex{0}, 3));
}

// ---------------------------------------------------------------------------
// Refusals

TEST(RerouterRefusal, NoUpDownRouteForACaSwitchFallsBackToFullRecompute) {
  // ring:switches=4: updn's order is sw0 (root), sw1, sw3, sw2. Cutting
  // sw0-sw1 leaves sw1 only the path sw1 -> sw2 (down) -> sw3 (up) -> sw0
  // (up): its CAs' traffic would turn down->up. The repair is refused,
  // nothing changes, and the full recompute (a new order) routes it.
  Built b = build("ring:switches=4,hosts=1", "updn");
  ASSERT_TRUE(b.rr);
  WorkerPool pool(2);
  const Routes before = b.rr->export_routes(pool);
  const SwitchIndex sw1 = sw_index(b.f, "sw-1");
  const PortNum p = port_to(b.f, "sw-1", "sw-0");
  const FailedLink cut[] = {{sw1, p}};
  auto rep = b.rr->repair(cut);
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->verdict, RepairReport::Verdict::kNeedsFullRecompute);
  EXPECT_NE(rep->reason.find("down->up"), std::string::npos) << rep->reason;
  EXPECT_TRUE(rep->changes.empty());
  EXPECT_TRUE(rep->blocks.empty());
  EXPECT_TRUE(b.rr->stale());
  EXPECT_TRUE(b.rr->link_live(sw1, p)) << "a refused repair leaves the rerouter as it was";
  const Routes after = b.rr->export_routes(pool);
  for (std::size_t s = 0; s < before.lfts.size(); ++s) EXPECT_TRUE(after.lfts[s] == before.lfts[s]);
  // Further repairs are refused until reset.
  const FailedLink other[] = {{sw_index(b.f, "sw-2"), port_to(b.f, "sw-2", "sw-3")}};
  auto next = b.rr->repair(other);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->verdict, RepairReport::Verdict::kNeedsFullRecompute);
  // The fallback: a full recompute on the degraded ring verifies.
  Topology live = b.f.topo;
  live.disconnect({b.f.topo.switch_node(sw1), p});
  auto full = route(live, b.f.lids, "updn");
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(verify(live, b.f.lids, *full, pool, {}).ok());
}

// A naive repair: every entry that named a failed port takes the live
// neighbour closest (BFS hops) to the destination switch, ignoring up/down.
std::vector<LftChange> naive_repair(const Fabric& f, const Topology& live, const Rerouter& rr,
                                    const std::vector<FailedLink>& cut) {
  auto g = SwitchGraph::build(live, f.lids);
  EXPECT_TRUE(g.ok());
  const std::uint32_t n = g->num_switches();
  std::vector<LftChange> out;
  std::map<SwitchIndex, std::vector<std::uint32_t>> hops_to;  // by destination switch
  auto hops = [&](SwitchIndex t) -> const std::vector<std::uint32_t>& {
    auto it = hops_to.find(t);
    if (it != hops_to.end()) return it->second;
    std::vector<std::uint32_t> h(n, UINT32_MAX);
    std::vector<SwitchIndex> q{t};
    h[t.value] = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      for (const SwitchArc& a : g->arcs(q[i])) {
        if (h[a.to.value] == UINT32_MAX) {
          h[a.to.value] = h[q[i].value] + 1;
          q.push_back(a.to);
        }
      }
    }
    return hops_to.emplace(t, std::move(h)).first->second;
  };
  for (const FailedLink& e : cut) {
    for (std::uint32_t d = 1; d < rr.lft_entries(); ++d) {
      if (rr.row(e.sw)[d] != e.port) continue;
      const LidAttachment at = g->attachment(Lid{d});
      if (!at.routable()) continue;
      const auto& h = hops(at.sw);
      PortNum best = kDropPort;
      std::uint32_t best_h = UINT32_MAX;
      for (const SwitchArc& a : g->arcs(e.sw)) {
        if (h[a.to.value] < best_h) {
          best_h = h[a.to.value];
          best = a.local_port;
        }
      }
      out.push_back({e.sw, Lid{d}, e.port, best});
    }
  }
  return out;
}

TEST(RerouterRefusal, CheckRefusesARouteIntoAnOrphan) {
  // ftree on a 3-level fat tree: a core switch has no up*/down* route to
  // another core's own LID (down into a pod, then up), so its entry for that
  // LID is an orphan: only traffic that starts at the core may follow it.
  // Hand the check a change of that orphan entry together with a change that
  // sends an aggregation switch, which reaches the other core legally, into
  // the orphan core: the check must refuse (that traffic would turn
  // down->up) on the aggregation switch's change, the tables must stay as
  // built.
  Built b = build("fat-tree:levels=3,k=4", "ftree");
  ASSERT_TRUE(b.rr);
  const Topology& t = b.f.topo;
  const SwitchIndex core0 = sw_index(b.f, "core-0");
  const Lid core1_lid = b.f.lids.base_lid(t, *t.find_by_name("core-1"), 0);
  ASSERT_TRUE(core1_lid.valid());
  // agg-p0-0 is cabled to both core-0 and core-1 (plane 0): it goes straight
  // up to core-1.
  const SwitchIndex agg = sw_index(b.f, "agg-p0-0");
  const PortNum agg_to_core1 = port_to(b.f, "agg-p0-0", "core-1");
  ASSERT_EQ(b.rr->entry(agg, core1_lid), agg_to_core1);
  // core-0's orphan entry moves to another pod; agg-p0-0 now sends into core-0.
  const PortNum was = b.rr->entry(core0, core1_lid);
  const PortNum other = was == port_to(b.f, "core-0", "agg-p1-0")
                            ? port_to(b.f, "core-0", "agg-p2-0")
                            : port_to(b.f, "core-0", "agg-p1-0");
  const LftChange changes[] = {
      {core0, core1_lid, static_cast<std::uint8_t>(was), static_cast<std::uint8_t>(other)},
      {agg, core1_lid, static_cast<std::uint8_t>(agg_to_core1),
       static_cast<std::uint8_t>(port_to(b.f, "agg-p0-0", "core-0"))}};
  WorkerPool pool(2);
  const Routes before = b.rr->export_routes(pool);
  auto rep = b.rr->apply_for_test({}, changes);
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  EXPECT_EQ(rep->verdict, RepairReport::Verdict::kNeedsFullRecompute);
  EXPECT_NE(rep->reason.find("LID " + std::to_string(core1_lid.value) + ": switch \"agg-p0-0\"" +
                             " (0x0002c90000000008) sends up into "
                             "orphan switch \"core-0\""),
            std::string::npos)
      << rep->reason;
  const Routes after = b.rr->export_routes(pool);
  for (std::size_t s = 0; s < after.lfts.size(); ++s) EXPECT_TRUE(after.lfts[s] == before.lfts[s]);
  // The orphan change alone is accepted: nothing enters core-0 for that LID.
  b.rr->reset();
  const LftChange alone[] = {changes[0]};
  auto ok = b.rr->apply_for_test({}, alone);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->verdict, RepairReport::Verdict::kRepaired) << ok->reason;
}

TEST(RerouterRefusal, CheckRefusesANaiveRepairThatClosesACreditLoop) {
  // On a torus routed by updn, cut links one at a time and hand the rerouter
  // the naive shortest-path repair. Whenever the full verifier finds a credit
  // loop in the naive result, check_changes must refuse it (and it then
  // leaves the tables as they were); whenever check_changes accepts, the
  // verifier must pass. At least one cut must produce a loop, or the test
  // proves nothing.
  const std::string spec = "torus:dims=4x4,hosts=1";
  std::printf("[ naive    ] %s, every switch link in turn\n", spec.c_str());
  Fabric f = make_fabric(spec);
  WorkerPool pool(2);
  auto routed = route(f.topo, f.lids, "updn");
  ASSERT_TRUE(routed.ok());
  const auto routes = std::make_shared<const Routes>(std::move(*routed));
  auto built = Rerouter::build(f.topo, f.lids, routes, pool);
  ASSERT_TRUE(built.ok());
  std::unique_ptr<Rerouter> rr = std::move(built).value();
  int cycles = 0, refused = 0, accepted = 0;
  for (const PortRef& l : testing::switch_links(f.topo)) {
    const Port& p = f.topo.port(l);
    const std::vector<FailedLink> cut = {{f.topo.node(l.node).switch_index, l.port},
                                         {f.topo.node(p.remote_node).switch_index, p.remote_port}};
    Topology live = f.topo;
    live.disconnect(l);
    const std::vector<LftChange> naive = naive_repair(f, live, *rr, cut);
    // What the full verifier says about the naive tables.
    Routes candidate = *routes;
    for (const LftChange& c : naive) candidate.lfts[c.sw.value].set(c.lid, c.new_port);
    auto full = verify(live, f.lids, candidate, pool, {});
    const bool loop = !full.ok() && full.error().code == Errc::kCdgCycle;
    cycles += loop ? 1 : 0;
    auto rep = rr->apply_for_test(cut, naive);
    ASSERT_TRUE(rep.ok()) << rep.error().message;
    if (rep->verdict == RepairReport::Verdict::kNeedsFullRecompute) {
      ++refused;
      // Rolled back: the tables are the engine's again.
      const Routes now = rr->export_routes(pool);
      for (std::size_t s = 0; s < now.lfts.size(); ++s) ASSERT_TRUE(now.lfts[s] == routes->lfts[s]);
    } else {
      ++accepted;
      EXPECT_TRUE(full.ok()) << "check_changes accepted what the verifier rejects: "
                             << full.error().message;
    }
    if (loop) {
      EXPECT_EQ(rep->verdict, RepairReport::Verdict::kNeedsFullRecompute)
          << "a naive repair with a credit loop was not refused";
    }
    rr->reset();
  }
  std::printf(
      "[ naive    ]   %d cuts: %d naive repairs with a credit loop, %d refused, %d "
      "accepted\n",
      accepted + refused, cycles, refused, accepted);
  EXPECT_GT(cycles, 0) << "no naive repair closed a credit loop: pick another fabric";
  EXPECT_GE(refused, cycles);
  // And the rerouter's own repair of every one of those cuts is accepted.
  for (const PortRef& l : testing::switch_links(f.topo)) {
    const FailedLink cut[] = {{f.topo.node(l.node).switch_index, l.port}};
    auto rep = rr->repair(cut);
    ASSERT_TRUE(rep.ok());
    if (rep->verdict == RepairReport::Verdict::kRepaired) {
      Topology live = f.topo;
      live.disconnect(l);
      auto v = verify(live, f.lids, rr->export_routes(pool), pool, {});
      EXPECT_TRUE(v.ok()) << v.error().message;
    }
    rr->reset();
  }
}

}  // namespace
}  // namespace subnetd::routing

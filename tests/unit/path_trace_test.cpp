// routing::trace_path against the tables of a real engine (updn on a
// leaf/spine fabric) and against hand-broken tables: drop entries, loops, hop
// limits, down links, wrong deliveries and malformed questions.

#include "routing/path_trace.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {
namespace {

struct Routed {
  Topology topo;
  LidMap lids;
  Routes routes;
};

Routed make_routed(std::string_view spec, std::uint8_t lmc = 0) {
  Routed r;
  auto t = discovery::topo::generate(spec);
  EXPECT_TRUE(t.ok()) << spec;
  r.topo = std::move(t).value();
  LidAssignOptions lo;
  lo.space = *LidSpace::from_bits(16);
  lo.lmc = lmc;
  auto a = assign_lids(r.topo, lo);
  EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error().message);
  r.lids = std::move(a).value().map;
  auto engine = make_engine("updn");
  EXPECT_TRUE(engine.ok());
  WorkerPool pool(1);
  auto routes = (*engine)->compute(r.topo, r.lids, {}, pool, {});
  EXPECT_TRUE(routes.ok()) << (routes.ok() ? "" : routes.error().message);
  r.routes = std::move(routes).value();
  return r;
}

NodeId by_name(const Topology& t, std::string_view name) {
  auto n = t.find_by_name(name);
  EXPECT_TRUE(n.has_value()) << name;
  return n.value_or(kNoNode);
}

// Checks the hop list is physically consistent: each hop enters across the
// cable the previous hop left by.
void expect_cabled_chain(const Topology& topo, const PathTrace& tr) {
  for (std::size_t i = 1; i < tr.hops.size(); ++i) {
    const TraceHop& prev = tr.hops[i - 1];
    const Port& out = topo.port(prev.node, prev.out_port);
    ASSERT_TRUE(out.connected()) << "hop " << i;
    EXPECT_EQ(out.remote_node, tr.hops[i].node) << "hop " << i;
    EXPECT_EQ(out.remote_port, tr.hops[i].in_port) << "hop " << i;
  }
}

class LeafSpine : public ::testing::Test {
 protected:
  // 8 leaves, 4 spines, 4 CAs per leaf, CA "h-<n>"-style names from the
  // generator; CA ports 1..4 of each leaf face hosts.
  Routed f_ = make_routed("fat-tree:levels=2,radix=8");
};

TEST_F(LeafSpine, EveryCaPairIsCompleteAndMinimal) {
  const Topology& t = f_.topo;
  std::size_t traced = 0;
  for (std::size_t a = 0; a < t.num_nodes(); ++a) {
    const NodeId src{static_cast<std::uint32_t>(a)};
    if (t.node(src).type != NodeType::kCa) continue;
    const NodeId src_leaf = t.port(src, 1).remote_node;
    for (std::size_t b = 0; b < t.num_nodes(); ++b) {
      const NodeId dst{static_cast<std::uint32_t>(b)};
      if (t.node(dst).type != NodeType::kCa) continue;
      const Lid dlid = f_.lids.base_lid(t, dst, 1);
      auto tr = trace_path(t, f_.lids, f_.routes, PortRef{src, 1}, dlid);
      ASSERT_TRUE(tr.ok()) << tr.error().message;
      ASSERT_TRUE(tr->complete()) << tr->status.error().message;
      expect_cabled_chain(t, *tr);
      EXPECT_EQ(tr->hops.front(), (TraceHop{src, 0, static_cast<PortNum>(src == dst ? 0 : 1)}));
      EXPECT_EQ(tr->hops.back().node, dst);
      EXPECT_EQ(tr->hops.back().out_port, 0);
      // Leaf/spine: self, same leaf (CA, leaf, CA) or CA, leaf, spine, leaf, CA.
      const std::size_t expect = src == dst ? 1 : t.port(dst, 1).remote_node == src_leaf ? 3 : 5;
      EXPECT_EQ(tr->hops.size(), expect)
          << t.node(src).description << " -> " << t.node(dst).description;
      ++traced;
    }
  }
  EXPECT_EQ(traced, 32u * 32u);
}

TEST_F(LeafSpine, FromSwitchToCaAndToSwitch) {
  const Topology& t = f_.topo;
  const NodeId spine = by_name(t, "spine0");
  const NodeId leaf5 = by_name(t, "leaf5");
  const NodeId ca = t.port(leaf5, 1).remote_node;

  auto to_ca = trace_path(t, f_.lids, f_.routes, PortRef{spine, 0}, f_.lids.base_lid(t, ca, 1));
  ASSERT_TRUE(to_ca.ok());
  ASSERT_TRUE(to_ca->complete()) << to_ca->status.error().message;
  ASSERT_EQ(to_ca->hops.size(), 3u);
  EXPECT_EQ(to_ca->hops[0].node, spine);
  EXPECT_EQ(to_ca->hops[0].in_port, 0);
  EXPECT_EQ(to_ca->hops[1].node, leaf5);
  EXPECT_EQ(to_ca->hops[2], (TraceHop{ca, 1, 0}));
  expect_cabled_chain(t, *to_ca);

  auto to_sw = trace_path(t, f_.lids, f_.routes, PortRef{ca, 1}, f_.lids.base_lid(t, spine, 0));
  ASSERT_TRUE(to_sw.ok());
  ASSERT_TRUE(to_sw->complete()) << to_sw->status.error().message;
  ASSERT_EQ(to_sw->hops.size(), 3u);
  EXPECT_EQ(to_sw->hops[2].node, spine);
  EXPECT_EQ(to_sw->hops[2].out_port, 0);

  auto self = trace_path(t, f_.lids, f_.routes, PortRef{spine, 0}, f_.lids.base_lid(t, spine, 0));
  ASSERT_TRUE(self.ok());
  ASSERT_TRUE(self->complete());
  ASSERT_EQ(self->hops.size(), 1u);
  EXPECT_EQ(self->hops[0], (TraceHop{spine, 0, 0}));
}

TEST_F(LeafSpine, DropEntryStopsAtThatSwitch) {
  const Topology& t = f_.topo;
  const NodeId leaf0 = by_name(t, "leaf0");
  const NodeId src = t.port(leaf0, 1).remote_node;
  const NodeId dst = t.port(by_name(t, "leaf3"), 2).remote_node;
  const Lid dlid = f_.lids.base_lid(t, dst, 1);
  f_.routes.lfts[t.node(leaf0).switch_index.value].set(dlid, kDropPort);

  auto tr = trace_path(t, f_.lids, f_.routes, PortRef{src, 1}, dlid);
  ASSERT_TRUE(tr.ok());
  ASSERT_FALSE(tr->complete());
  EXPECT_EQ(tr->status.error().code, Errc::kUnreachable);
  EXPECT_NE(tr->status.error().message.find("leaf0"), std::string::npos)
      << tr->status.error().message;
  EXPECT_NE(tr->status.error().message.find("drop"), std::string::npos);
  ASSERT_EQ(tr->hops.size(), 2u);
  EXPECT_EQ(tr->hops[1].node, leaf0);
  EXPECT_EQ(tr->hops[1].in_port, 1);
  EXPECT_EQ(tr->hops[1].out_port, 0);
}

TEST_F(LeafSpine, LoopIsDetected) {
  const Topology& t = f_.topo;
  const NodeId leaf0 = by_name(t, "leaf0");
  const NodeId src = t.port(leaf0, 1).remote_node;
  const NodeId dst = t.port(by_name(t, "leaf3"), 1).remote_node;
  const Lid dlid = f_.lids.base_lid(t, dst, 1);
  // leaf0 sends the LID up to some spine; make that spine send it back down.
  const std::uint8_t up = f_.routes.lfts[t.node(leaf0).switch_index.value].get(dlid);
  const Port& up_port = t.port(leaf0, up);
  f_.routes.lfts[t.node(up_port.remote_node).switch_index.value].set(dlid, up_port.remote_port);

  auto tr = trace_path(t, f_.lids, f_.routes, PortRef{src, 1}, dlid);
  ASSERT_TRUE(tr.ok());
  ASSERT_FALSE(tr->complete());
  EXPECT_EQ(tr->status.error().code, Errc::kForwardingLoop);
  EXPECT_NE(tr->status.error().message.find("leaf0"), std::string::npos);
  ASSERT_EQ(tr->hops.size(), 4u);  // CA, leaf0, spine, leaf0 again
  EXPECT_EQ(tr->hops[3].node, leaf0);
  expect_cabled_chain(t, *tr);
}

TEST_F(LeafSpine, HopLimit) {
  const Topology& t = f_.topo;
  const NodeId src = t.port(by_name(t, "leaf0"), 1).remote_node;
  const NodeId dst = t.port(by_name(t, "leaf7"), 1).remote_node;
  const Lid dlid = f_.lids.base_lid(t, dst, 1);
  TraceOptions opts;
  opts.max_switch_hops = 3;
  auto ok = trace_path(t, f_.lids, f_.routes, PortRef{src, 1}, dlid, opts);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->complete());
  opts.max_switch_hops = 2;
  auto tr = trace_path(t, f_.lids, f_.routes, PortRef{src, 1}, dlid, opts);
  ASSERT_TRUE(tr.ok());
  ASSERT_FALSE(tr->complete());
  EXPECT_EQ(tr->status.error().code, Errc::kOutOfRange);
  EXPECT_NE(tr->status.error().message.find("hop limit of 2"), std::string::npos);
  EXPECT_EQ(tr->hops.size(), 4u);  // CA, leaf0, spine, and the leaf it stops at
}

TEST_F(LeafSpine, DownLinkAndUncabledPort) {
  const NodeId leaf0 = by_name(f_.topo, "leaf0");
  const NodeId src = f_.topo.port(leaf0, 1).remote_node;
  const NodeId dst = f_.topo.port(by_name(f_.topo, "leaf2"), 1).remote_node;
  const Lid dlid = f_.lids.base_lid(f_.topo, dst, 1);
  const std::uint8_t up = f_.routes.lfts[f_.topo.node(leaf0).switch_index.value].get(dlid);
  f_.topo.mutable_port(leaf0, up).state = PortState::kDown;
  auto tr = trace_path(f_.topo, f_.lids, f_.routes, PortRef{src, 1}, dlid);
  ASSERT_TRUE(tr.ok());
  ASSERT_FALSE(tr->complete());
  EXPECT_EQ(tr->status.error().code, Errc::kUnreachable);
  EXPECT_NE(tr->status.error().message.find("DOWN"), std::string::npos);
  EXPECT_EQ(tr->hops.back().node, leaf0);
  EXPECT_EQ(tr->hops.back().out_port, up);

  f_.topo.disconnect(PortRef{leaf0, up});
  auto tr2 = trace_path(f_.topo, f_.lids, f_.routes, PortRef{src, 1}, dlid);
  ASSERT_TRUE(tr2.ok());
  ASSERT_FALSE(tr2->complete());
  EXPECT_NE(tr2->status.error().message.find("not cabled"), std::string::npos);
}

TEST_F(LeafSpine, DeliveredToTheWrongPort) {
  const Topology& t = f_.topo;
  const NodeId leaf1 = by_name(t, "leaf1");
  const NodeId src = t.port(by_name(t, "leaf0"), 1).remote_node;
  const NodeId dst = t.port(leaf1, 1).remote_node;
  const Lid dlid = f_.lids.base_lid(t, dst, 1);
  f_.routes.lfts[t.node(leaf1).switch_index.value].set(dlid, 2);  // the neighbour CA
  auto tr = trace_path(t, f_.lids, f_.routes, PortRef{src, 1}, dlid);
  ASSERT_TRUE(tr.ok());
  ASSERT_FALSE(tr->complete());
  EXPECT_NE(tr->status.error().message.find("does not own it"), std::string::npos)
      << tr->status.error().message;
  EXPECT_EQ(tr->hops.back().node, t.port(leaf1, 2).remote_node);
}

TEST_F(LeafSpine, MalformedQuestions) {
  const Topology& t = f_.topo;
  const NodeId leaf0 = by_name(t, "leaf0");
  const NodeId ca = t.port(leaf0, 1).remote_node;
  const Lid dlid = f_.lids.base_lid(t, ca, 1);

  auto sw_port = trace_path(t, f_.lids, f_.routes, PortRef{leaf0, 3}, dlid);
  ASSERT_FALSE(sw_port.ok());
  EXPECT_EQ(sw_port.error().code, Errc::kInvalidArgument);
  EXPECT_NE(sw_port.error().message.find("port 0"), std::string::npos);

  auto ca_port0 = trace_path(t, f_.lids, f_.routes, PortRef{ca, 0}, dlid);
  ASSERT_FALSE(ca_port0.ok());
  EXPECT_EQ(ca_port0.error().code, Errc::kInvalidArgument);

  auto bad_node = trace_path(t, f_.lids, f_.routes, PortRef{NodeId{99999}, 1}, dlid);
  ASSERT_FALSE(bad_node.ok());

  auto unassigned = trace_path(t, f_.lids, f_.routes, PortRef{ca, 1}, Lid{0xB000});
  ASSERT_FALSE(unassigned.ok());
  EXPECT_EQ(unassigned.error().code, Errc::kNotFound);
  auto zero = trace_path(t, f_.lids, f_.routes, PortRef{ca, 1}, Lid{0});
  ASSERT_FALSE(zero.ok());

  Routes empty;
  auto no_tables = trace_path(t, f_.lids, empty, PortRef{ca, 1}, dlid);
  ASSERT_FALSE(no_tables.ok());
  EXPECT_EQ(no_tables.error().code, Errc::kInvalidArgument);
}

TEST(PathTraceLmc, EveryLidOfTheRangeArrives) {
  Routed f = make_routed("fat-tree:levels=2,radix=4", /*lmc=*/2);
  const Topology& t = f.topo;
  const NodeId src = t.port(*t.find_by_name("leaf0"), 1).remote_node;
  const NodeId dst = t.port(*t.find_by_name("leaf3"), 2).remote_node;
  const Lid base = f.lids.base_lid(t, dst, 1);
  for (std::uint32_t k = 0; k < 4; ++k) {
    auto tr = trace_path(t, f.lids, f.routes, PortRef{src, 1}, Lid{base.value + k});
    ASSERT_TRUE(tr.ok());
    ASSERT_TRUE(tr->complete()) << "LID " << base.value + k << ": " << tr->status.error().message;
    EXPECT_EQ(tr->hops.back().node, dst);
    expect_cabled_chain(t, *tr);
  }
}

}  // namespace
}  // namespace subnetd::routing

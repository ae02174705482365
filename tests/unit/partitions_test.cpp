// routing::plan_partitions: who gets which P_Key, in which order, what the
// switch side of a CA link holds, capacities, and the communication rule of
// shared_pkey (IBA 10.9.1: both members, one at least full).

#include "routing/partitions.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace subnetd::routing {
namespace {

using Kind = PartitionMember::Kind;
using Keys = std::vector<std::uint16_t>;

// sw (4 ports) -- a[1], b[1], c[1], d[1]; d has a second port, uncabled.
struct Small {
  Topology t;
  NodeId sw, a, b, c, d;
  Small() {
    sw = t.add_node(NodeType::kSwitch, Guid{0x100}, 6, "sw");
    a = t.add_node(NodeType::kCa, Guid{0x200}, 1, "host-a");
    b = t.add_node(NodeType::kCa, Guid{0x300}, 1, "host-b");
    c = t.add_node(NodeType::kCa, Guid{0x400}, 1, "host-c");
    d = t.add_node(NodeType::kCa, Guid{0x500}, 2, "host-d");
    EXPECT_TRUE(t.connect({sw, 1}, {a, 1}).ok());
    EXPECT_TRUE(t.connect({sw, 2}, {b, 1}).ok());
    EXPECT_TRUE(t.connect({sw, 3}, {c, 1}).ok());
    EXPECT_TRUE(t.connect({sw, 4}, {d, 1}).ok());
    t.mutable_node(sw).partition_enforcement_cap = 64;
  }
  Keys table(const PartitionPlan& p, NodeId n, PortNum port) const {
    const auto s = p.table(t, n, port);
    return Keys(s.begin(), s.end());
  }
};

PartitionMember guid(std::uint64_t g, bool full = true) {
  return {Kind::kGuid, Guid{g}, {}, full};
}
PartitionMember name(std::string n, bool full = true) {
  return {Kind::kName, {}, std::move(n), full};
}
PartitionMember all(bool full = true) {
  return {Kind::kAll, {}, {}, full};
}

TEST(Partitions, DefaultAloneGivesEveryEndportFullMembership) {
  Small f;
  const PartitionPlan p = plan_partitions(f.t, {}, PortRef{f.a, 1});
  ASSERT_EQ(p.partitions().size(), 1U);
  EXPECT_EQ(p.partitions()[0].pkey, kDefaultPKey);
  EXPECT_TRUE(p.partitions()[0].ipoib);
  EXPECT_EQ(f.table(p, f.a, 1), Keys{0xFFFF});
  EXPECT_EQ(f.table(p, f.sw, 0), Keys{0xFFFF});
  EXPECT_EQ(f.table(p, f.d, 2), Keys{0xFFFF}) << "an uncabled CA port is an endport too";
  // The switch side of a CA link holds the CA's table and enforces it.
  EXPECT_EQ(f.table(p, f.sw, 1), Keys{0xFFFF});
  EXPECT_TRUE(p.enforced(f.t.port_index(f.sw, 1)));
  EXPECT_TRUE(f.table(p, f.sw, 5).empty()) << "an uncabled switch port holds nothing";
  EXPECT_FALSE(p.enforced(f.t.port_index(f.sw, 5)));
  EXPECT_FALSE(p.enforced(f.t.port_index(f.a, 1))) << "enforcement is a switch port's";
  EXPECT_EQ(p.partitions()[0].full_members, 6U) << "sw port 0, a, b, c, d[1], d[2]";
  EXPECT_TRUE(p.warnings().empty());
}

TEST(Partitions, MembersByGuidNameAndAllWithLimitedMembership) {
  Small f;
  PartitionSpec def{"default", kDefaultPKey, true, {}, {all(false)}};
  PartitionSpec storage{"storage", 0x0010, false, {}, {guid(0x200), name("host-b")}};
  PartitionSpec compute{"compute", 0x0002, false, {}, {guid(0x300, false), guid(0x400)}};
  const PartitionPlan p = plan_partitions(f.t, std::vector{storage, def, compute}, PortRef{f.d, 1});
  // Default first, then by P_Key.
  ASSERT_EQ(p.partitions().size(), 3U);
  EXPECT_EQ(p.partitions()[0].pkey, kDefaultPKey);
  EXPECT_EQ(p.partitions()[1].pkey, 0x0002);
  EXPECT_EQ(p.partitions()[2].pkey, 0x0010);
  EXPECT_EQ(f.table(p, f.a, 1), (Keys{0x7FFF, 0x8010}));
  EXPECT_EQ(f.table(p, f.b, 1), (Keys{0x7FFF, 0x0002, 0x8010}));
  EXPECT_EQ(f.table(p, f.c, 1), (Keys{0x7FFF, 0x8002}));
  // The SM's port: a full member of every partition.
  EXPECT_EQ(f.table(p, f.d, 1), (Keys{0xFFFF, 0x8002, 0x8010}));
  EXPECT_EQ(f.table(p, f.d, 2), Keys{0x7FFF});
  EXPECT_EQ(f.table(p, f.sw, 2), f.table(p, f.b, 1));
  EXPECT_EQ(p.find(0x8010)->name, "storage");
  EXPECT_EQ(p.find(0x0010)->full_members, 3U) << "a, b and the SM's port";
  EXPECT_EQ(p.find(0x0002)->limited_members, 1U);
  EXPECT_EQ(p.find(0x7FFF)->full_members, 1U);
  EXPECT_EQ(p.find(0x7FFF)->limited_members, 5U);
  EXPECT_EQ(p.find(0x1234), nullptr);
}

TEST(Partitions, PortGuidSelectsOnePortAndFullWinsOverLimited) {
  Small f;
  // host-d's port 2 GUID is node GUID + 2 (Topology's default).
  PartitionSpec s{"p", 0x0042, false, {}, {guid(0x502, false), all(false), guid(0x502)}};
  const PartitionPlan p = plan_partitions(f.t, std::vector{s}, PortRef{});
  EXPECT_EQ(f.table(p, f.d, 2), (Keys{0xFFFF, 0x8042}));
  EXPECT_EQ(f.table(p, f.d, 1), (Keys{0xFFFF, 0x0042}));
}

TEST(Partitions, UnmatchedMembersAndCapacitiesAreReported) {
  Small f;
  f.t.mutable_node(f.a).partition_cap = 2;
  f.t.mutable_node(f.sw).partition_enforcement_cap = 1;
  std::vector<PartitionSpec> specs{
      {"one", 0x0001, false, {}, {all(), guid(0xDEAD), name("nobody")}},
      {"two", 0x0002, false, {}, {all()}},
  };
  const PartitionPlan p = plan_partitions(f.t, specs, PortRef{});
  EXPECT_EQ(f.table(p, f.a, 1), (Keys{0xFFFF, 0x8001})) << "cut to PartitionCap 2";
  EXPECT_EQ(f.table(p, f.b, 1), (Keys{0xFFFF, 0x8001, 0x8002}));
  EXPECT_FALSE(p.enforced(f.t.port_index(f.sw, 2))) << "3 keys, the switch holds 1";
  EXPECT_TRUE(f.table(p, f.sw, 2).empty());
  const auto w = p.warnings();
  auto has = [&](std::string_view text) {
    return std::any_of(w.begin(), w.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("0x000000000000dead is no node or port")) << testing::PrintToString(w);
  EXPECT_TRUE(has("\"nobody\" names no node"));
  EXPECT_TRUE(has("1 ports hold fewer P_Keys")) << testing::PrintToString(w);
  EXPECT_TRUE(has("4 switch ports facing a CA cannot enforce"));
}

TEST(Partitions, SharedPKeyNeedsOneFullMember) {
  const Keys full_a{0xFFFF, 0x8001};
  const Keys limited_b{0x7FFF, 0x0001};
  const Keys limited_c{0x7FFF, 0x0001, 0x8002};
  EXPECT_EQ(shared_pkey(full_a, limited_b), 0xFFFF);
  EXPECT_EQ(shared_pkey(limited_b, full_a), 0xFFFF) << "the first usable key of a's table";
  EXPECT_EQ(shared_pkey(limited_b, limited_c), std::nullopt) << "limited and limited";
  EXPECT_EQ(shared_pkey(full_a, limited_b, 0x0001), 0x8001);
  EXPECT_EQ(shared_pkey(full_a, limited_b, 0x8001), 0x8001) << "membership bit ignored";
  EXPECT_EQ(shared_pkey(limited_b, limited_c, 0x0001), std::nullopt);
  EXPECT_EQ(shared_pkey(full_a, limited_c, 0x0002), std::nullopt) << "a lacks 0x0002";
  EXPECT_EQ(find_pkey(limited_c, 0x8002), 0x8002);
  EXPECT_EQ(find_pkey(limited_c, 0x0003), 0);
  EXPECT_EQ(find_pkey(Keys{0, 0}, 0), 0) << "0 is no P_Key";
}

}  // namespace
}  // namespace subnetd::routing

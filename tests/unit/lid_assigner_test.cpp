#include "routing/lid_assigner.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace subnetd::routing {
namespace {

// sw0 - sw1 in a line, two CAs on each switch.
Topology small_fabric() {
  Topology t;
  NodeId s0 = t.add_node(NodeType::kSwitch, Guid{0x1000}, 8, "sw0");
  NodeId s1 = t.add_node(NodeType::kSwitch, Guid{0x2000}, 8, "sw1");
  EXPECT_TRUE(t.connect({s0, 8}, {s1, 8}).ok());
  for (int i = 0; i < 4; ++i) {
    NodeId ca = t.add_node(NodeType::kCa, Guid{0x9000u + 0x10u * static_cast<unsigned>(i)}, 1,
                           fmt::format("ca{}", i));
    EXPECT_TRUE(t.connect({i < 2 ? s0 : s1, static_cast<PortNum>(1 + i % 2)}, {ca, 1}).ok());
  }
  return t;
}

void expect_consistent(const Topology& t, const LidAssignment& a) {
  for (std::uint32_t l = 1; l <= a.map.max_lid.value; ++l) {
    PortRef o = a.map.owner_of(Lid{l});
    if (!o.node.valid()) continue;
    Lid base = a.map.base_lid(t, o.node, o.port);
    ASSERT_LE(base.value, l);
    ASSERT_LT(l, base.value + a.map.lids_per_port(t, o.node));
  }
}

TEST(LidAssigner, AssignsEveryEndpointOnceWithAlignment) {
  Topology t = small_fabric();
  for (std::uint8_t lmc : {0, 1, 2}) {
    auto r = assign_lids(t, {LidSpace{16}, lmc, {}});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->changed.size(), 6u);  // 2 switches + 4 CA ports
    EXPECT_EQ(r->lids_used, 2u + 4u * (1u << lmc));
    for (std::uint32_t i = 2; i < 6; ++i) {
      Lid base = r->map.base_lid(t, NodeId{i}, 1);
      EXPECT_EQ(base.value % (1u << lmc), 0u);
    }
    expect_consistent(t, *r);
  }
}

TEST(LidAssigner, RememberedLidsWinAndAreStable) {
  Topology t = small_fabric();
  std::vector<LidRecord> prev = {{Guid{0x9001}, Lid{0x40}}, {Guid{0x2000}, Lid{0x7}}};
  auto r = assign_lids(t, {LidSpace{16}, 0, prev});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->map.base_lid(t, NodeId{2}, 1).value, 0x40u);  // ca0 port 1 = GUID 0x9001
  EXPECT_EQ(r->map.base_lid(t, NodeId{1}, 0).value, 0x7u);
  // Running again with the output as memory changes nothing.
  std::vector<LidRecord> all = prev;
  for (auto& c : r->changed) all.push_back(c);
  auto again = assign_lids(t, {LidSpace{16}, 0, all});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->changed.empty());
  EXPECT_EQ(again->map.owner, r->map.owner);
}

TEST(LidAssigner, PortLidsKeptAndConflictsGoToLowerGuid) {
  Topology t = small_fabric();
  t.mutable_port(NodeId{3}, 1).lid = Lid{0x20};  // ca1, GUID 0x9011
  t.mutable_port(NodeId{2}, 1).lid = Lid{0x20};  // ca0, GUID 0x9001: lower, wins
  auto r = assign_lids(t, {LidSpace{16}, 0, {}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->map.base_lid(t, NodeId{2}, 1).value, 0x20u);
  EXPECT_NE(r->map.base_lid(t, NodeId{3}, 1).value, 0x20u);
  ASSERT_EQ(r->conflicts.size(), 1u);
  EXPECT_NE(r->conflicts[0].find("0x0000000000009011"), std::string::npos) << r->conflicts[0];
}

TEST(LidAssigner, MisalignedOrOutOfSpaceMemoryIsReplacedAndReported) {
  Topology t = small_fabric();
  // 0x41 is misaligned for LMC 1; 0xC000 (first multicast LID) and 0xFFFF
  // (the permissive LID) are not unicast LIDs in the 16-bit space.
  std::vector<LidRecord> prev = {{Guid{0x9001}, Lid{0x41}},
                                 {Guid{0x9011}, Lid{0xC000}},
                                 {Guid{0x9021}, Lid{0xFFFF}},
                                 {Guid{0x9031}, Lid{0x42}}};
  auto r = assign_lids(t, {LidSpace{16}, 1, prev});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->map.base_lid(t, NodeId{2}, 1).value, 0x41u);
  EXPECT_NE(r->map.base_lid(t, NodeId{3}, 1).value, 0xC000u);
  EXPECT_NE(r->map.base_lid(t, NodeId{4}, 1).value, 0xFFFFu);
  EXPECT_EQ(r->map.base_lid(t, NodeId{5}, 1).value, 0x42u);  // a good one is kept
  expect_consistent(t, *r);
  ASSERT_EQ(r->unusable_remembered.size(), 3u);
  const auto& m = r->unusable_remembered;
  EXPECT_NE(m[0].find("port GUID 0x0000000000009001"), std::string::npos) << m[0];
  EXPECT_NE(m[0].find("stored LID 0x41 is not aligned to the 2 LIDs"), std::string::npos) << m[0];
  EXPECT_NE(m[1].find("port GUID 0x0000000000009011"), std::string::npos) << m[1];
  EXPECT_NE(m[1].find("stored LID 0xc000 is not a unicast LID in the 16-bit space (0x1-0xbfff)"),
            std::string::npos)
      << m[1];
  EXPECT_NE(m[2].find("port GUID 0x0000000000009021"), std::string::npos) << m[2];
  EXPECT_NE(m[2].find("stored LID 0xffff"), std::string::npos) << m[2];
  const std::string given =
      fmt::format("assigned {:#x} instead", r->map.base_lid(t, NodeId{4}, 1).value);
  EXPECT_NE(m[2].find(given), std::string::npos) << m[2];
  // Memory for ports that are not in the fabric is not reported.
  prev = {{Guid{0x7777}, Lid{0xFFFF}}};
  auto absent = assign_lids(t, {LidSpace{16}, 0, prev});
  ASSERT_TRUE(absent.ok());
  EXPECT_TRUE(absent->unusable_remembered.empty());
}

TEST(LidAssigner, ExhaustionSaysHowManyAndHowMany) {
  Topology t;
  NodeId a = t.add_node(NodeType::kSwitch, Guid{1}, 254, "a");
  NodeId b = t.add_node(NodeType::kSwitch, Guid{2}, 254, "b");
  for (unsigned i = 0; i < 400; ++i) {
    // fmt, not "c" + std::to_string(i): GCC 12 at -O3 reports a false
    // -Wrestrict in the inlined string concatenation.
    NodeId ca = t.add_node(NodeType::kCa, Guid{0x100000u + i * 4}, 1, fmt::format("c{}", i));
    ASSERT_TRUE(t.connect({i < 200 ? a : b, static_cast<PortNum>(i % 200 + 1)}, {ca, 1}).ok());
  }
  auto r = assign_lids(t, {LidSpace{16}, 7, {}});  // 2 + 400 * 128 > 49151
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kLidsExhausted);
  EXPECT_NE(r.error().message.find("51202 LIDs needed"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("holds 49151"), std::string::npos) << r.error().message;
  // 383 aligned 128-LID blocks fit below 0xC000: 383 CA ports do, 384 do not.
  for (unsigned i = 0; i < 17; ++i) t.disconnect({NodeId{2 + i}, 1});
  auto exact = assign_lids(t, {LidSpace{16}, 7, {}});
  EXPECT_TRUE(exact.ok());
  auto ok = assign_lids(t, {LidSpace{17}, 7, {}});
  EXPECT_TRUE(ok.ok());
}

TEST(LidAssigner, ExtendedSpaceGoesPast16Bits) {
  Topology t = small_fabric();
  std::vector<LidRecord> prev = {{Guid{0x9001}, Lid{0x1BFF0}}};
  auto r16 = assign_lids(t, {LidSpace{16}, 0, prev});
  ASSERT_TRUE(r16.ok());
  EXPECT_NE(r16->map.base_lid(t, NodeId{2}, 1).value, 0x1BFF0u);
  ASSERT_EQ(r16->unusable_remembered.size(), 1u);
  EXPECT_NE(r16->unusable_remembered[0].find("stored LID 0x1bff0 is not a unicast LID"),
            std::string::npos)
      << r16->unusable_remembered[0];
  auto r17 = assign_lids(t, {LidSpace{17}, 0, prev});
  ASSERT_TRUE(r17.ok());
  EXPECT_TRUE(r17->unusable_remembered.empty());
  EXPECT_EQ(r17->map.base_lid(t, NodeId{2}, 1).value, 0x1BFF0u);
  EXPECT_EQ(r17->map.max_lid.value, 0x1BFF0u);
}

}  // namespace
}  // namespace subnetd::routing

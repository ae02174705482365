#include <gtest/gtest.h>

#include <atomic>
#include <utility>

#include "routing/huge_buffer.hpp"
#include "routing/lft.hpp"
#include "routing/text.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {
namespace {

TEST(Topology, ConnectRejectsBadPortsAndDoubleLinks) {
  Topology t;
  NodeId sw = t.add_node(NodeType::kSwitch, Guid{0x100}, 4, "sw");
  NodeId ca = t.add_node(NodeType::kCa, Guid{0x200}, 2, "ca");
  ASSERT_TRUE(t.connect({sw, 1}, {ca, 1}).ok());
  auto again = t.connect({sw, 1}, {ca, 2});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::kConflict);
  EXPECT_NE(again.error().message.find("\"sw\"[1]"), std::string::npos);
  auto range = t.connect({sw, 5}, {ca, 2});
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().code, Errc::kOutOfRange);
  EXPECT_TRUE(t.validate().ok());
  EXPECT_EQ(t.num_links(), 1u);
  EXPECT_EQ(t.port(ca, 2).guid.value, 0x202u);
  EXPECT_EQ(t.find_by_port_guid(Guid{0x201})->port, 1);
  EXPECT_EQ(t.find_by_name("ca")->value, ca.value);
  t.disconnect({ca, 1});
  EXPECT_FALSE(t.port(sw, 1).connected());
}

// A loopback cable (two ports of one node cabled together) exists on real
// fabrics; the Topology keeps it (routing skips it) and names it, once per
// cable with both ports, for the operator.
TEST(Topology, LoopbackCablesAreNamedWithBothPorts) {
  Topology t;
  NodeId sw = t.add_node(NodeType::kSwitch, Guid{0x100}, 8, "leaf0");
  NodeId ca = t.add_node(NodeType::kCa, Guid{0x200}, 2, "h0");
  NodeId other = t.add_node(NodeType::kSwitch, Guid{0x300}, 8, "leaf1");
  ASSERT_TRUE(t.connect({sw, 7}, {sw, 3}).ok());
  ASSERT_TRUE(t.connect({ca, 1}, {ca, 2}).ok());
  ASSERT_TRUE(t.connect({sw, 1}, {other, 1}).ok());
  auto same = t.connect({other, 2}, {other, 2});
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.error().message, "\"leaf1\" (0x0000000000000300) port 2 linked to itself");
  EXPECT_EQ(t.loopback_cables(),
            (std::vector<std::string>{
                "\"leaf0\" (0x0000000000000100) ports 3 and 7 are cabled to each other (a loopback "
                "cable); not a link between two nodes, so no route uses it",
                "\"h0\" (0x0000000000000200) ports 1 and 2 are cabled to each other (a loopback "
                "cable); not a link between two nodes, so no route uses it"}));
  t.disconnect({sw, 3});
  t.disconnect({ca, 2});
  EXPECT_TRUE(t.loopback_cables().empty());
}

// Node descriptions come from the wire: label() escapes and cuts them.
TEST(Topology, LabelEscapesAndCutsTheDescription) {
  Topology t;
  NodeId a = t.add_node(NodeType::kSwitch, Guid{0x100}, 4, "sw\x1b[2J\n");
  NodeId b = t.add_node(NodeType::kCa, Guid{0x200}, 1, std::string(1 << 20, 'n'));
  EXPECT_EQ(t.label(a), "\"sw\\x1b[2J\\n\" (0x0000000000000100)");
  EXPECT_EQ(t.label(b),
            "\"" + std::string(256, 'n') + "... (1048576 bytes)\" (0x0000000000000200)");
  auto r = t.connect({a, 5}, {b, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos) << r.error().message;
}

TEST(Topology, ValidateFindsDuplicateGuid) {
  Topology t;
  t.add_node(NodeType::kSwitch, Guid{0x100}, 4, "a");
  t.add_node(NodeType::kSwitch, Guid{0x100}, 4, "b");
  auto r = t.validate();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("\"a\" and \"b\""), std::string::npos);
}

TEST(Lft, DirtyBlocksTrackChanges) {
  Lft lft(Lid{200});
  EXPECT_EQ(lft.num_blocks(), 4u);
  EXPECT_EQ(lft.get(Lid{5}), kDropPort);
  lft.set(Lid{5}, 3);
  lft.set(Lid{130}, 7);
  lft.set(Lid{131}, kDropPort);  // unchanged: not dirty
  EXPECT_EQ(lft.dirty_blocks(), (std::vector<std::uint32_t>{0, 2}));
  lft.clear_dirty();
  EXPECT_TRUE(lft.dirty_blocks().empty());
  EXPECT_EQ(lft.block(2)[2], 7);
}

TEST(HugeBuffer, ZeroFilledAlignedAndMovable) {
  constexpr std::size_t kBytes = (std::size_t{5} << 20) + 123;  // not a whole huge page
  HugeBuffer b(kBytes);
  ASSERT_NE(b.get(), nullptr);
  EXPECT_EQ(b.size(), kBytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.get()) % (std::size_t{2} << 20), 0U);
  EXPECT_EQ(b.get()[0], 0);
  EXPECT_EQ(b.get()[kBytes - 1], 0);
  for (std::size_t i = 0; i < kBytes; i += 4096) b.get()[i] = static_cast<std::uint8_t>(i >> 12);
  b.get()[kBytes - 1] = 0xAB;
  std::uint8_t* const data = b.get();
  HugeBuffer moved(std::move(b));
  EXPECT_EQ(b.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(moved.get(), data);
  EXPECT_EQ(moved.get()[4096 * 7], 7);
  EXPECT_EQ(moved.get()[kBytes - 1], 0xAB);
  HugeBuffer other(64);
  other = std::move(moved);
  EXPECT_EQ(other.get(), data);
  EXPECT_EQ(other.size(), kBytes);
  EXPECT_EQ(HugeBuffer(0).get(), nullptr);
}

TEST(WorkerPool, CoversEveryIndexOnce) {
  for (unsigned threads : {1u, 2u, 4u}) {
    WorkerPool pool(threads);
    for (int round = 0; round < 20; ++round) {
      std::vector<std::atomic<int>> hits(1000);
      pool.parallel_for(hits.size(), 7, [&](std::size_t b, std::size_t e, unsigned slot) {
        ASSERT_LT(slot, pool.size());
        for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

}  // namespace
}  // namespace subnetd::routing

TEST(Printable, EscapesControlBytesAndCutsLongText) {
  EXPECT_EQ(subnetd::printable("leaf0"), "leaf0");
  EXPECT_EQ(subnetd::printable("a\x1b[31mred\n"), "a\\x1b[31mred\\n");
  EXPECT_EQ(subnetd::printable(std::string_view("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(subnetd::printable("back\\slash\t"), "back\\\\slash\\t");
  EXPECT_EQ(subnetd::printable("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 kept
  EXPECT_EQ(subnetd::printable("bad\xc3("), "bad\\xc3(");       // cut sequence escaped
  EXPECT_EQ(subnetd::printable("\xc0\xaf"), "\\xc0\\xaf");      // overlong form escaped
  EXPECT_EQ(subnetd::printable("\x7f"), "\\x7f");
  const std::string big(1'048'576, 'x');
  const std::string shown = subnetd::printable(big);
  EXPECT_EQ(shown, std::string(256, 'x') + "... (1048576 bytes)");
  EXPECT_EQ(subnetd::printable("abcdef", 3), "abc... (6 bytes)");
}

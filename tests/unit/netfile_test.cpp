// Net-file reader and writer: ibsim's own examples, ibnetdiscover output,
// GUID-base semantics, write -> read round trips, every bad-input class with
// its file:line, ibsim sizing.

#include "discovery/topo/netfile.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "discovery/topo/generators.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery::topo {
namespace {

namespace fs = std::filesystem;
using routing::Node;
using routing::NodeType;
using routing::PortState;
using routing::Topology;

Topology parse_ok(std::string_view text) {
  Result<Topology> t = parse_netfile(text, "t.net");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Topology{};
}

NodeId by_name(const Topology& t, const std::string& name) {
  std::optional<NodeId> n = t.find_by_name(name);
  EXPECT_TRUE(n.has_value()) << "no node " << name;
  return n.value_or(kNoNode);
}

// Same nodes (matched by GUID), port GUIDs, links, link modes and states.
void expect_same_fabric(const Topology& a, const Topology& b) {
  ASSERT_EQ(a.num_nodes(), b.num_nodes());
  EXPECT_EQ(a.num_links(), b.num_links());
  for (std::uint32_t i = 0; i < a.num_nodes(); ++i) {
    const Node& na = a.nodes()[i];
    SCOPED_TRACE(na.description);
    const std::optional<NodeId> j = b.find_by_guid(na.guid);
    ASSERT_TRUE(j.has_value());
    const Node& nb = b.node(*j);
    EXPECT_EQ(na.type, nb.type);
    EXPECT_EQ(na.num_ports, nb.num_ports);
    EXPECT_EQ(na.system_guid, nb.system_guid);
    EXPECT_EQ(na.description, nb.description);
    for (unsigned p = 1; p <= na.num_ports; ++p) {
      const routing::Port& pa = a.port(NodeId{i}, static_cast<PortNum>(p));
      const routing::Port& pb = b.port(*j, static_cast<PortNum>(p));
      EXPECT_EQ(pa.guid, pb.guid) << "port " << p;
      ASSERT_EQ(pa.connected(), pb.connected()) << "port " << p;
      if (!pa.connected()) continue;
      EXPECT_EQ(a.node(pa.remote_node).guid, b.node(pb.remote_node).guid) << "port " << p;
      EXPECT_EQ(pa.remote_port, pb.remote_port) << "port " << p;
      EXPECT_EQ(pa.width_active, pb.width_active) << "port " << p;
      EXPECT_EQ(pa.speed_active, pb.speed_active) << "port " << p;
      EXPECT_EQ(pa.state, pb.state) << "port " << p;
    }
  }
}

// ---------------------------------------------------------------------------

TEST(Netfile, EveryIbsimExampleParses) {
  const fs::path dir = "/usr/share/doc/ibsim-utils/net-examples";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " not installed (ibsim-utils)";
  // nodes, switches, links per example (read off the files).
  const std::map<std::string, std::array<std::size_t, 3>> expected = {
      {"net", {4, 2, 4}},
      {"net.1", {3, 1, 2}},
      {"net.2sw2path", {4, 2, 4}},
      {"net.2sw2path4hca", {6, 2, 6}},
      {"net.2sw2path4hca2port", {4, 2, 6}},
  };
  std::size_t parsed = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= 7 && name.substr(name.size() - 7) == ".README") continue;  // prose
    SCOPED_TRACE(name);
    Result<Topology> t = read_netfile(e.path().string());
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_TRUE(t->validate().ok());
    ++parsed;
    auto it = expected.find(name);
    if (it == expected.end()) continue;
    EXPECT_EQ(t->num_nodes(), it->second[0]);
    EXPECT_EQ(t->num_switches(), it->second[1]);
    EXPECT_EQ(t->num_links(), it->second[2]);
  }
  EXPECT_GE(parsed, expected.size());

  // "net" declares Hca2's link only as [2]; GUIDs follow ibsim's defaults.
  Result<Topology> net = read_netfile((dir / "net").string());
  ASSERT_TRUE(net.ok());
  const Topology& t = *net;
  EXPECT_EQ(t.node(by_name(t, "Switch1")).guid.value, 0x200000u);
  EXPECT_EQ(t.node(by_name(t, "Switch2")).guid.value, 0x200001u);
  EXPECT_EQ(t.node(by_name(t, "Hca1")).guid.value, 0x100000u);
  EXPECT_EQ(t.node(by_name(t, "Hca2")).guid.value, 0x100003u);  // Hca1 took 2 ports + 1
  const routing::Port& p = t.port(by_name(t, "Switch1"), 2);
  EXPECT_EQ(t.node(p.remote_node).description, "Hca2");
  EXPECT_EQ(p.remote_port, 2);
  EXPECT_EQ(p.state, PortState::kInit);
  EXPECT_EQ(p.width_active, 2);  // ibsim default 4x
  EXPECT_EQ(p.speed_active, 1);  // ibsim default SDR
  // Switch2's ports 3 and 4 both go to Switch1: parallel links.
  EXPECT_EQ(t.port(by_name(t, "Switch2"), 4).remote_port, 4);
}

constexpr std::string_view kIbnetdiscoverOutput = R"(#
# Topology file: generated on Mon Nov 30 04:25:51 2026
#
# Initiated from node 0002c90300001234 port 0002c90300001235

vendid=0x2c9
devid=0xc738
sysimgguid=0x2c90300aaaa00
switchguid=0x2c90300aaaa00(2c90300aaaa00)
Switch	8 "S-0002c90300aaaa00"		# "MF0;sw-a:SX6036/U1" enhanced port 0 lid 1 lmc 0
[1]	"H-0002c90300001234"[1](2c90300001235) 		# "node1 mlx4_0" lid 3 4xQDR
[2]	"S-0002c90300bbbb00"[2]		# "sw-b" lid 2 4xFDR
[3]	"S-0002c90300bbbb00"[3]		# "sw-b" lid 2 12xDDR

vendid=0x2c9
devid=0xc738
sysimgguid=0x2c90300bbbb00
switchguid=0x2c90300bbbb00(2c90300bbbb00)
Switch	8 "S-0002c90300bbbb00"		# "sw-b" base port 0 lid 2 lmc 0
[2]	"S-0002c90300aaaa00"[2]		# "MF0;sw-a:SX6036/U1" lid 1 4xFDR
[3]	"S-0002c90300aaaa00"[3]		# "MF0;sw-a:SX6036/U1" lid 1 12xDDR
[5]	"H-0002c90300005678"[2](2c9030000567a) 		# "node2 mlx4_0" lid 4 1xSDR

vendid=0x2c9
devid=0x1003
sysimgguid=0x2c90300001237
caguid=0x2c90300001234
Ca	2 "H-0002c90300001234"		# "node1 mlx4_0"
[1](2c90300001235) 	"S-0002c90300aaaa00"[1]		# lid 3 lmc 0 "MF0;sw-a:SX6036/U1" lid 1 4xQDR

vendid=0x2c9
devid=0x1003
sysimgguid=0x2c90300005679
caguid=0x2c90300005678
Ca	2 "H-0002c90300005678"		# "node2 mlx4_0"
[2](2c9030000567a) 	"S-0002c90300bbbb00"[5]		# lid 4 lmc 1 "sw-b" lid 2 1xSDR
)";

TEST(Netfile, ReadsIbnetdiscoverOutput) {
  const Topology t = parse_ok(kIbnetdiscoverOutput);
  ASSERT_EQ(t.num_nodes(), 4u);
  EXPECT_EQ(t.num_links(), 4u);
  EXPECT_TRUE(t.validate().ok());
  const NodeId a = by_name(t, "MF0;sw-a:SX6036/U1");
  const NodeId b = by_name(t, "sw-b");
  const NodeId n1 = by_name(t, "node1 mlx4_0");
  const NodeId n2 = by_name(t, "node2 mlx4_0");
  EXPECT_EQ(t.node(a).guid.value, 0x2c90300aaaa00u);
  EXPECT_EQ(t.node(a).type, NodeType::kSwitch);
  EXPECT_EQ(t.port(a, 0).lid.value, 1u);
  EXPECT_EQ(t.port(b, 0).lid.value, 2u);
  EXPECT_EQ(t.node(n1).guid.value, 0x2c90300001234u);
  EXPECT_EQ(t.node(n1).system_guid.value, 0x2c90300001237u);
  EXPECT_EQ(t.port(n1, 1).guid.value, 0x2c90300001235u);
  EXPECT_EQ(t.port(n1, 1).lid.value, 3u);
  EXPECT_EQ(t.port(n2, 2).guid.value, 0x2c9030000567au);
  EXPECT_EQ(t.port(n2, 2).lid.value, 4u);
  EXPECT_EQ(t.port(n2, 2).lmc, 1);
  EXPECT_FALSE(t.port(n2, 1).connected());
  // Link modes as ibsim derives them from the annotations.
  EXPECT_EQ(t.port(a, 1).width_active, 2);   // 4x
  EXPECT_EQ(t.port(a, 1).speed_active, 4);   // QDR
  EXPECT_EQ(t.port(a, 2).speed_active, 4);   // FDR is reported as QDR + ext speed
  EXPECT_EQ(t.port(a, 3).width_active, 8);   // 12x
  EXPECT_EQ(t.port(b, 3).speed_active, 2);   // DDR
  EXPECT_EQ(t.port(b, 5).width_active, 1);   // 1x
  EXPECT_EQ(t.port(n2, 2).speed_active, 1);  // SDR
  EXPECT_EQ(t.port(b, 5).remote_node, n2);
}

TEST(Netfile, CrlfAndOneSidedLinks) {
  const Topology t = parse_ok(
      "Switch 4 \"s\"\r\n[1] \"h\"[1]\r\n[2] \"g\"\r\n\r\nHca 1 \"h\"\r\n\r\nHca 1 \"g\"\r\n");
  EXPECT_EQ(t.num_links(), 2u);
  // "[2] "g"" without a remote port means port 1, as in ibsim.
  EXPECT_EQ(t.port(by_name(t, "g"), 1).remote_port, 2);
}

TEST(Netfile, GuidBasesFollowIbsim) {
  const Topology t = parse_ok(R"(switchguid=0x1000
Switch 2 "s1"
[1] "s2"[1]

Switch 2 "s2"

caguid=0x5000
Hca 2 "h1"

Hca 1 "h2"

caguid+0x100
Hca 1 "h3"

nodeguid=0xabc
Hca 1 "h4"

Hca 1 "h5"

Switch 2 "s3"
)");
  EXPECT_EQ(t.node(by_name(t, "s1")).guid.value, 0x1000u);
  EXPECT_EQ(t.node(by_name(t, "s2")).guid.value, 0x1001u);
  EXPECT_EQ(t.node(by_name(t, "h1")).guid.value, 0x5000u);
  EXPECT_EQ(t.node(by_name(t, "h2")).guid.value, 0x5003u);  // h1 reserved 2 ports + 1
  EXPECT_EQ(t.node(by_name(t, "h3")).guid.value, 0x5100u);  // relative to the last base
  EXPECT_EQ(t.node(by_name(t, "h4")).guid.value, 0xabcu);   // one-shot
  EXPECT_EQ(t.node(by_name(t, "h5")).guid.value, 0x5102u);
  EXPECT_EQ(t.node(by_name(t, "s3")).guid.value, 0x1002u);
  EXPECT_EQ(t.port(by_name(t, "h1"), 2).guid.value, 0x5002u);
}

TEST(Netfile, WidthAndSpeedLinesAndOptions) {
  const Topology t = parse_ok(R"(width=11
speed=3
Switch 4 "s"
[1] "h"[1]
[2] "g"[1] w=1 s=1

Hca 1 "h"

Hca 1 "g"
)");
  EXPECT_EQ(t.port(by_name(t, "s"), 1).width_active, 8);  // 12x common to both
  EXPECT_EQ(t.port(by_name(t, "s"), 1).speed_active, 2);  // DDR
  EXPECT_EQ(t.port(by_name(t, "g"), 1).width_active, 1);
  EXPECT_EQ(t.port(by_name(t, "g"), 1).speed_active, 1);
}

// ---------------------------------------------------------------------------
// Round trips.

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, WriteThenReadGivesTheSameFabric) {
  Result<Topology> t = generate(GetParam());
  ASSERT_TRUE(t.ok()) << t.error().message;
  const std::string text = write_netfile(*t);
  const Topology back = parse_ok(text);
  expect_same_fabric(*t, back);
  // Writing what was read gives the same file: node order and ids survive.
  EXPECT_EQ(write_netfile(back), text);
  // Both ends of every link are listed.
  std::size_t port_lines = 0;
  for (std::size_t at = 0; (at = text.find("\n[", at)) != std::string::npos; ++at) ++port_lines;
  EXPECT_EQ(port_lines, 2 * t->num_links());
}

INSTANTIATE_TEST_SUITE_P(Generated, RoundTrip,
                         ::testing::Values("fat-tree:levels=2,radix=8", "fat-tree:levels=3,k=4",
                                           "fat-tree:levels=3,k=4,ca_ports=2",
                                           "pgft:h=3,m=4.4.8,w=1.4.4,p=1.1.2",
                                           "pgft:h=2,m=3.5,w=2.2", "torus:dims=3x2x2,hosts=2",
                                           "mesh:dims=3x3,hosts=1", "ring:switches=6",
                                           "dragonfly:a=4,p=2,h=2,g=4",
                                           "random:switches=20,degree=4,hosts=1,seed=5"));

TEST(Netfile, RoundTripOfAwkwardNodes) {
  Topology t;
  const NodeId core = t.add_node(NodeType::kSwitch, Guid{0x10}, 12, "core");
  const NodeId d1 = t.add_node(NodeType::kSwitch, Guid{0x11}, 4, "dup");
  const NodeId d2 = t.add_node(NodeType::kSwitch, Guid{0x12}, 4, "dup");
  const NodeId hash = t.add_node(NodeType::kCa, Guid{0x100}, 2, "has # and \"quotes\"");
  const NodeId spaced = t.add_node(NodeType::kCa, Guid{0x200}, 1, "node 7 mlx5_0");
  const NodeId rt = t.add_node(NodeType::kRouter, Guid{0x300}, 1, "rt");
  const NodeId clash = t.add_node(NodeType::kCa, Guid{0x400}, 1, "S-0000000000000011");
  t.mutable_node(rt).system_guid = Guid{0x301};
  t.mutable_port(hash, 2).guid = Guid{0x999};
  auto link = [&](NodeId a, PortNum pa, NodeId b, PortNum pb, std::uint8_t w, std::uint8_t s) {
    ASSERT_TRUE(t.connect({a, pa}, {b, pb}).ok());
    for (const PortRef& e : {PortRef{a, pa}, PortRef{b, pb}}) {
      t.mutable_port(e.node, e.port).state = PortState::kInit;
      t.mutable_port(e.node, e.port).width_active = w;
      t.mutable_port(e.node, e.port).speed_active = s;
    }
  };
  link(core, 1, d1, 1, 8, 2);  // 12x DDR
  link(core, 2, d2, 1, 2, 4);
  link(core, 3, d2, 2, 2, 4);  // parallel
  link(core, 5, hash, 2, 1, 1);
  link(core, 7, spaced, 1, 2, 4);
  link(d1, 3, rt, 1, 2, 4);
  link(d1, 4, clash, 1, 2, 4);
  ASSERT_TRUE(t.validate().ok());

  const std::string text = write_netfile(t);
  SCOPED_TRACE(text);
  const Topology back = parse_ok(text);
  // The '"' of a description cannot sit in a quoted comment; it becomes '?'.
  t.mutable_node(hash).description = "has # and ?quotes?";
  expect_same_fabric(t, back);
  EXPECT_NE(text.find("Switch 4 \"S-0000000000000011-n"), std::string::npos)
      << "a generated id must not collide with another node's description";
  EXPECT_NE(text.find("[2](999)"), std::string::npos);
  EXPECT_NE(text.find("sysimgguid=0x0000000000000301\nrtguid=0x0000000000000300\nRt 1 \"rt\""),
            std::string::npos);
}

TEST(Netfile, WriterLeadsWithALinkedHcaAndEndsEveryRecord) {
  Topology t;
  const NodeId sw = t.add_node(NodeType::kSwitch, Guid{0x10}, 4, "sw");
  t.add_node(NodeType::kCa, Guid{0x100}, 1, "idle");  // no link: ibsim's SM port would be dead
  const NodeId live = t.add_node(NodeType::kCa, Guid{0x200}, 1, "live");
  ASSERT_TRUE(t.connect({sw, 1}, {live, 1}).ok());
  const std::string text = write_netfile(t);
  const std::size_t first = text.find("\ncaguid=");
  ASSERT_NE(first, std::string::npos);
  const std::string want = "\ncaguid=0x0000000000000200\nHca 1 \"live\"\n[1]\t\"sw\"[1]\n\n";
  EXPECT_EQ(text.compare(first, want.size(), want), 0) << text;
  EXPECT_LT(text.find("Hca 1 \"idle\""), text.find("Switch 4 \"sw\""));
  EXPECT_EQ(text.substr(text.size() - 2), "\n\n");
  // No width/speed known: no annotation, ibsim defaults apply.
  EXPECT_EQ(text.find("# lid"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Bad input: every class names file:line.

struct BadNet {
  std::string name;
  std::string text;
  int line;
  Errc code;
  std::string message;  // expected substring after "t.net:<line>: "
};

std::ostream& operator<<(std::ostream& os, const BadNet& c) {
  return os << c.name;
}

class BadNetfiles : public ::testing::TestWithParam<BadNet> {};

TEST_P(BadNetfiles, ReportFileLineAndWhat) {
  const BadNet& c = GetParam();
  Result<Topology> t = parse_netfile(c.text, "t.net");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, c.code) << errc_name(t.error().code) << ": " << t.error().message;
  const std::string prefix = "t.net:" + std::to_string(c.line) + ": ";
  EXPECT_EQ(t.error().message.rfind(prefix, 0), 0u) << t.error().message;
  EXPECT_NE(t.error().message.find(c.message), std::string::npos)
      << "got: " << t.error().message << "\nwant: " << c.message;
}

INSTANTIATE_TEST_SUITE_P(
    Classes, BadNetfiles,
    ::testing::Values(
        BadNet{"PortCountMissing", "Switch x \"a\"\n", 1, Errc::kParse,
               "expected the number of ports"},
        BadNet{"IdUnquoted", "\nSwitch 4 a\n", 2, Errc::kParse, "expected a quoted node id"},
        BadNet{"IdWithHash", "Hca 1 \"a#b\"\n", 1, Errc::kParse, "bad node id \"a#b\""},
        BadNet{"ZeroPorts", "Switch 0 \"a\"\n", 1, Errc::kParse, "1 to 254 ports, got 0"},
        BadNet{"TooManyPorts", "Switch 300 \"a\"\n", 1, Errc::kParse, "got 300"},
        BadNet{"BadPortLine", "Switch 4 \"a\"\n[1 \"b\"[1]\n", 2, Errc::kParse,
               "expected a port number"},
        BadNet{"JunkAfterLink", "Switch 4 \"a\"\n[1] \"b\"[1] junk\n\nHca 1 \"b\"\n", 2,
               Errc::kParse, "unexpected text 'junk'"},
        BadNet{"PortOutsideRecord", "Hca 1 \"b\"\n\n[1] \"b\"[1]\n", 3, Errc::kParse,
               "port line outside a node record"},
        BadNet{"RecordNotEnded", "Switch 4 \"a\"\n[1] \"b\"[1]\nHca 1 \"b\"\n[1] \"a\"[1]\n", 3,
               Errc::kParse, "blank line ending the record of \"a\""},
        BadNet{"UnknownLine", "# fine\nhello world\n", 2, Errc::kParse,
               "unrecognised line 'hello world'"},
        BadNet{"PortZero", "Switch 4 \"a\"\n[0] \"b\"[1]\n", 2, Errc::kParse, "port 0"},
        BadNet{"PortBeyondCount", "Switch 4 \"a\"\n[5] \"b\"[1]\n", 2, Errc::kOutOfRange,
               "port 5 is beyond \"a\"'s 4 ports"},
        BadNet{"RemotePortBeyondCount", "Switch 4 \"a\"\n[1] \"b\"[3]\n\nHca 2 \"b\"\n", 2,
               Errc::kOutOfRange, "\"a\"[1] links to \"b\"[3], but \"b\" has 2 ports"},
        BadNet{"InconsistentLink",
               "Switch 4 \"a\"\n[1] \"b\"[3]\n\nSwitch 4 \"b\"\n[3] \"c\"[1]\n\nHca 1 \"c\"\n", 2,
               Errc::kConflict,
               "inconsistent link: \"a\"[1] says \"b\"[3], but \"b\"[3] says \"c\"[1] (t.net:5)"},
        BadNet{"ClaimedTwice",
               "Switch 4 \"a\"\n[1] \"c\"[1]\n\nSwitch 4 \"b\"\n[1] \"c\"[1]\n\nHca 1 \"c\"\n", 5,
               Errc::kConflict, "\"c\"[1] is claimed by both \"b\"[1] and \"a\"[1] (t.net:2)"},
        BadNet{"PortListedTwice", "Switch 4 \"a\"\n[1] \"b\"[1]\n[1] \"b\"[2]\n", 3,
               Errc::kConflict, "port 1 of \"a\" is listed twice (first at t.net:2)"},
        BadNet{"LinkedToItself", "Switch 4 \"a\"\n[1] \"a\"[1]\n", 2, Errc::kConflict,
               "linked to itself"},
        // Text from the file is escaped and cut in messages.
        BadNet{"ControlBytesEscaped", "# fine\nhello \x1b[31mworld\x07\n", 2, Errc::kParse,
               "unrecognised line 'hello \\x1b[31mworld\\x07'"},
        BadNet{"HugeLineCut", std::string(1 << 20, 'x') + "\n", 1, Errc::kParse,
               "unrecognised line '" + std::string(256, 'x') + "... (1048576 bytes)'"},
        BadNet{"HugeIdCut", "Hca 1 \"" + std::string(1 << 20, 'h') + "\"\n", 1, Errc::kParse,
               "bad node id \"" + std::string(256, 'h') + "... (1048576 bytes)\""},
        BadNet{"ControlBytesInIdEscaped", "Switch 4 \"s\\w\x1b\"\n[1] \"zz\x1b]0;pwned\x07\"[1]\n",
               2, Errc::kNotFound,
               "\"s\\\\w\\x1b\"[1] links to unknown node \"zz\\x1b]0;pwned\\x07\""},
        BadNet{"DuplicateId", "Hca 1 \"a\"\n\n# again\nHca 1 \"a\"\n", 4, Errc::kConflict,
               "duplicate node id \"a\" (first defined at t.net:1)"},
        BadNet{"DuplicateGuid", "caguid=0x10\nHca 1 \"a\"\n\ncaguid=0x10\nHca 1 \"b\"\n", 5,
               Errc::kConflict,
               "GUID 0x0000000000000010 of \"b\" is already used by \"a\" (t.net:2)"},
        BadNet{"UnknownNode", "Switch 4 \"a\"\n[1] \"zz\"[1]\n", 2, Errc::kNotFound,
               "\"a\"[1] links to unknown node \"zz\""},
        BadNet{"NoCommonWidth",
               "Switch 4 \"a\"\n[1] \"b\"[1] w=1\n\nHca 1 \"b\"\n[1] \"a\"[1] w=2\n", 2,
               Errc::kConflict, "enable no common link width"},
        BadNet{"BadWidthOption", "Switch 4 \"a\"\n[1] \"b\"[1] w=99\n", 2, Errc::kParse, "w="},
        BadNet{"GuidWithoutNumber", "switchguid=zz\n", 1, Errc::kParse, "needs a number"},
        BadNet{"LongDescription", "Hca 1 \"a\" # \"" + std::string(70, 'x') + "\"\n", 1,
               Errc::kParse, "NodeDescription holds 64"},
        BadNet{"DoCommand", "do Unlink \"a\"[1]\n", 1, Errc::kUnsupported, "'do'"},
        BadNet{"Module", "module=\"m\"\n", 1, Errc::kUnsupported, "module"},
        BadNet{"Alias", "Switch 4 \"a\"\n@[1] \"x\"\n", 2, Errc::kUnsupported, "aliases"},
        BadNet{"IncludeWithoutFile", "\ninclude \"x.net\"\n", 2, Errc::kUnsupported,
               "read_netfile"}),
    [](const ::testing::TestParamInfo<BadNet>& param_info) { return param_info.param.name; });

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "subnetd-netfile-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) != nullptr ? fs::path(tmpl) : fs::path();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::FILE* f = std::fopen((path_ / name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }

 private:
  fs::path path_;
};

// A loopback cable is physical: the file may describe one (ibsim models it
// too). It is kept, and the Topology names it so that the SM reports it.
TEST(Netfile, LoopbackCableIsKeptAndNamed) {
  const Topology t = parse_ok("Switch 4 \"sw\"\n[1] \"sw\"[3]\n[2] \"h\"[1]\n\nHca 1 \"h\"\n\n");
  const NodeId sw = by_name(t, "sw");
  EXPECT_EQ(t.port(sw, 1).remote_node, sw);
  EXPECT_EQ(t.port(sw, 1).remote_port, 3);
  EXPECT_EQ(t.port(sw, 3).remote_port, 1);
  ASSERT_EQ(t.loopback_cables().size(), 1u);
  EXPECT_NE(t.loopback_cables()[0].find("\"sw\" (0x0000000000200000) ports 1 and 3"),
            std::string::npos)
      << t.loopback_cables()[0];
}

TEST(Netfile, IncludesResolveRelativeToTheIncludingFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  dir.write("main.net", "include \"sub/hosts.net\"\n\nSwitch 4 \"sw\"\n[1] \"h1\"[1]\n");
  dir.write("sub/hosts.net", "# hosts\nHca 1 \"h1\"\n[1] \"sw\"[1]\n\ninclude \"more.net\"\n");
  dir.write("sub/more.net", "Hca 1 \"h2\"\n[1] \"sw\"[2]\n");
  Result<Topology> t = read_netfile((dir.path() / "main.net").string());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->num_nodes(), 3u);
  EXPECT_EQ(t->num_links(), 2u);

  // An error inside an included file is located there.
  dir.write("sub/more.net", "Hca 1 \"h2\"\n[1] \"sw\"[2]\n[7] \"sw\"[3]\n");
  t = read_netfile((dir.path() / "main.net").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("sub/more.net:3: port 7 is beyond"), std::string::npos)
      << t.error().message;

  dir.write("loop.net", "include \"loop.net\"\n");
  t = read_netfile((dir.path() / "loop.net").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("nested deeper"), std::string::npos) << t.error().message;

  dir.write("missing.net", "\ninclude \"nope.net\"\n");
  t = read_netfile((dir.path() / "missing.net").string());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, Errc::kIo);
  EXPECT_NE(t.error().message.find("missing.net:2: cannot open included file"), std::string::npos)
      << t.error().message;
}

TEST(Netfile, SaveAndReadFile) {
  TempDir dir;
  Result<Topology> t = generate("fat-tree:levels=3,k=4");
  ASSERT_TRUE(t.ok());
  const std::string path = (dir.path() / "ft.net").string();
  ASSERT_TRUE(save_netfile(*t, path).ok());
  Result<Topology> back = read_netfile(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  expect_same_fabric(*t, *back);

  Result<Topology> none = read_netfile((dir.path() / "absent.net").string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::kIo);
  EXPECT_FALSE(save_netfile(*t, (dir.path() / "no/such/dir/x.net").string()).ok());
}

TEST(IbsimSizing, CountsNodesSwitchesPortsAndLids) {
  Result<Topology> small = generate("fat-tree:levels=2,radix=8");
  ASSERT_TRUE(small.ok());
  const IbsimSizing s = ibsim_sizing(*small);
  EXPECT_EQ(s.nodes, 44u);
  EXPECT_EQ(s.switches, 12u);
  EXPECT_EQ(s.ports, 12u * 9 + 32);  // a switch counts ports + 1
  EXPECT_EQ(s.linear_fdb_cap, 0u);
  EXPECT_EQ(s.args(), (std::vector<std::string>{"-N", "44", "-S", "12", "-P", "140"}));

  // k=24: 720 switches + 3456 CA ports = 4176 LIDs; with LMC 3, 33408 >= 0x7800.
  Result<Topology> k24 = generate("fat-tree:levels=3,k=24");
  ASSERT_TRUE(k24.ok());
  EXPECT_EQ(ibsim_sizing(*k24).lids_needed, 4176u);
  EXPECT_EQ(ibsim_sizing(*k24, 2).linear_fdb_cap, 0u);
  const IbsimSizing l3 = ibsim_sizing(*k24, 3);
  EXPECT_EQ(l3.linear_fdb_cap, kIbsimFullLinearFdbCap);
  EXPECT_EQ(l3.args().back(), "49152");
  EXPECT_EQ(l3.ports, 720u * 25 + 3456);
}

}  // namespace
}  // namespace subnetd::discovery::topo

// The `partitions` section of the YAML config: what it accepts, and a clear
// error naming file:line:col and the key for everything it does not.

#include <gtest/gtest.h>

#include <string>

#include "daemon/config.hpp"

namespace subnetd::daemon {
namespace {

using routing::PartitionMember;

Result<Config> parse_parts(const std::string& partitions) {
  return parse_config("fabric:\n  topology: \"fat-tree:levels=2,radix=4\"\n" + partitions,
                      "p.yaml");
}

// The error text of a config that must fail.
std::string error_of(const std::string& partitions) {
  auto r = parse_parts(partitions);
  EXPECT_FALSE(r.ok()) << partitions;
  return r.ok() ? std::string() : r.error().message;
}

TEST(ConfigPartitions, ParsesEveryMemberForm) {
  auto c = parse_parts(R"(partitions:
  - name: default
    pkey: 0x7fff
    ipoib: true
    members: all
  - name: storage
    pkey: 0x0010
    ipoib: true
    mtu: 4096
    rate: 100
    qkey: 0x0b1b
    sl: 2
    members:
      - 0x0002c90300a1b2c3
      - "storage-01 HCA-1"
      - {node: "login-01 HCA-1", membership: limited}
      - {guid: 42, membership: limited}
      - {all: true, membership: limited}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->partitions.size(), 2U);
  const routing::PartitionSpec& def = c->partitions[0];
  EXPECT_EQ(def.name, "default");
  EXPECT_EQ(def.pkey, 0x7FFF);
  EXPECT_TRUE(def.ipoib);
  ASSERT_EQ(def.members.size(), 1U);
  EXPECT_EQ(def.members[0], PartitionMember{});
  const routing::PartitionSpec& s = c->partitions[1];
  EXPECT_EQ(s.pkey, 0x0010);
  EXPECT_EQ(s.ipoib_params.mtu, 5);
  EXPECT_EQ(s.ipoib_params.rate, 16) << "IBA code 16: 100 Gb/s";
  EXPECT_EQ(s.ipoib_params.qkey, 0x0B1BU);
  EXPECT_EQ(s.ipoib_params.sl, 2);
  ASSERT_EQ(s.members.size(), 5U);
  EXPECT_EQ(s.members[0].kind, PartitionMember::Kind::kGuid);
  EXPECT_EQ(s.members[0].guid, Guid{0x0002c90300a1b2c3});
  EXPECT_TRUE(s.members[0].full);
  EXPECT_EQ(s.members[1].kind, PartitionMember::Kind::kName);
  EXPECT_EQ(s.members[1].name, "storage-01 HCA-1");
  EXPECT_EQ(s.members[2].name, "login-01 HCA-1");
  EXPECT_FALSE(s.members[2].full);
  EXPECT_EQ(s.members[3].guid, Guid{42});
  EXPECT_FALSE(s.members[3].full);
  EXPECT_EQ(s.members[4].kind, PartitionMember::Kind::kAll);
  EXPECT_FALSE(s.members[4].full);
}

TEST(ConfigPartitions, NoSectionMeansTheDefaultAlone) {
  auto c = parse_parts("");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->partitions.empty());
}

TEST(ConfigPartitions, BadSectionsNameFileLineAndKey) {
  EXPECT_NE(error_of("partitions: all\n").find("p.yaml:3:13: partitions: expected a list"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 0x8001, members: all}\n")
                .find("partitions[0].pkey: 0x8001 has the membership bit set: give the 15-bit "
                      "P_Key 0x0001"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 0, members: all}\n")
                .find("partitions[0].pkey: 0x0 is not a P_Key"),
            std::string::npos);
  EXPECT_NE(
      error_of("partitions:\n  - {name: a, pkey: 0x12345, members: all}\n").find("is not a P_Key"),
      std::string::npos);
  EXPECT_NE(
      error_of("partitions:\n  - {name: a, pkey: abc, members: all}\n").find("bad P_Key \"abc\""),
      std::string::npos);
  const std::string dup = error_of(
      "partitions:\n  - {name: a, pkey: 1, members: all}\n  - {name: b, pkey: 0x1, members: all}\n"
      "  - {name: a, pkey: 2, members: all}\n");
  EXPECT_NE(dup.find("p.yaml:5:15: partitions[1].pkey: P_Key 0x0001 is already partition \"a\"'s"),
            std::string::npos)
      << dup;
  EXPECT_NE(dup.find("partitions[2].name: partition \"a\" is already defined"), std::string::npos)
      << dup;
  const std::string missing = error_of("partitions:\n  - {ipoib: true}\n");
  EXPECT_NE(missing.find("partitions[0].name: required"), std::string::npos) << missing;
  EXPECT_NE(missing.find("partitions[0].pkey: required"), std::string::npos) << missing;
  EXPECT_NE(missing.find("partitions[0].members: required"), std::string::npos) << missing;
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: all, mtu: 4096}\n")
                .find("partitions[0].mtu: configures the IPoIB broadcast group, but the "
                      "partition has no ipoib: true"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, ipoib: true, mtu: 3000, members: all}\n")
                .find("3000 is not an MTU"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, ipoib: true, rate: 33, members: all}\n")
                .find("\"33\" is not an IBA rate"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: []}\n")
                .find("partitions[0].members: empty list"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: [{guid: 1, node: x}]}\n")
                .find("partitions[0].members[0]: names more than one member"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: [{membership: full}]}\n")
                .find("partitions[0].members[0]: names no member"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: [{all: true, membership: "
                     "some}]}\n")
                .find("unknown membership \"some\" (expected full, limited)"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: [0x0, x]}\n")
                .find("partitions[0].members[0]: bad GUID \"0x0\""),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: [x, x]}\n")
                .find("partitions[0].members[1]: names a member already listed"),
            std::string::npos);
  EXPECT_NE(error_of("partitions:\n  - {name: a, pkey: 1, members: all, colour: red}\n")
                .find("partitions[0].colour: unknown key"),
            std::string::npos);
}

TEST(ConfigPartitions, AReloadThatChangesThemRepartitions) {
  auto running = parse_parts("partitions:\n  - {name: a, pkey: 1, members: all}\n");
  auto next = parse_parts("partitions:\n  - {name: a, pkey: 2, members: all}\n");
  ASSERT_TRUE(running.ok() && next.ok());
  const ReloadPlan plan = plan_reload(*running, *next);
  EXPECT_EQ(plan.applied, std::vector<std::string>{"partitions"});
  EXPECT_TRUE(plan.repartition);
  EXPECT_FALSE(plan.reroute);
  EXPECT_FALSE(plan_reload(*running, *running).repartition);
}

}  // namespace
}  // namespace subnetd::daemon

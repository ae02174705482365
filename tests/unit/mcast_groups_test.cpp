// state::McastRegistry: IPoIB broadcast groups per partition, creation with
// the lowest free MLID, joins and leaves by JoinState bits, and the change
// hook the SM listens to.

#include "state/mcast_groups.hpp"

#include <gtest/gtest.h>

namespace subnetd::state {
namespace {

routing::PartitionPlan::Partition part(std::uint16_t pkey, bool ipoib) {
  routing::PartitionPlan::Partition p;
  p.name = "p";
  p.pkey = pkey;
  p.ipoib = ipoib;
  p.ipoib_params.mtu = 5;
  p.ipoib_params.qkey = 0x1234;
  return p;
}

TEST(McastRegistry, IpoibBroadcastGroupsFollowThePartitions) {
  EXPECT_EQ(mgid_text(ipoib_broadcast_mgid(0x7FFF)), "ff12:401b:ffff:0000:0000:0000:ffff:ffff");
  McastRegistry r;
  int changes = 0;
  r.set_on_change([&] { ++changes; });
  const std::vector parts{part(0x7FFF, true), part(0x0010, true), part(0x0020, false)};
  r.set_partition_groups(parts);
  EXPECT_EQ(changes, 1);
  auto groups = r.groups();
  ASSERT_EQ(groups.size(), 2U);
  const auto def = r.find(ipoib_broadcast_mgid(0x7FFF));
  ASSERT_TRUE(def);
  EXPECT_TRUE(def->well_known);
  EXPECT_EQ(def->pkey, 0xFFFF);
  EXPECT_EQ(def->qkey, 0x1234U);
  EXPECT_EQ(def->mtu, 5);
  EXPECT_EQ(def->mlid.value, 0xC000U);
  EXPECT_EQ(r.find(ipoib_broadcast_mgid(0x0010))->mlid.value, 0xC001U);
  r.set_partition_groups(parts);
  EXPECT_EQ(changes, 1) << "nothing new";
  // A member keeps a group whose partition went away; without members it
  // goes.
  ASSERT_TRUE(r.join(ipoib_broadcast_mgid(0x0010), Guid{7}, kJoinFull).ok());
  r.set_partition_groups(std::vector{part(0x7FFF, true)});
  EXPECT_FALSE(r.find(ipoib_broadcast_mgid(0x0010))->well_known);
  ASSERT_TRUE(r.leave(ipoib_broadcast_mgid(0x0010), Guid{7}, kJoinFull).ok());
  EXPECT_FALSE(r.find(ipoib_broadcast_mgid(0x0010)));
  // The default's group stays without members.
  ASSERT_TRUE(r.join(ipoib_broadcast_mgid(0x7FFF), Guid{7}, kJoinFull).ok());
  ASSERT_TRUE(r.leave(ipoib_broadcast_mgid(0x7FFF), Guid{7}, kJoinFull).ok());
  EXPECT_TRUE(r.find(ipoib_broadcast_mgid(0x7FFF)));
}

TEST(McastRegistry, JoinStateBitsAddAndRemove) {
  McastRegistry r;
  McastGroup g;
  g.mgid = Mgid{0xff, 0x12, 0xa0, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  g.mlid = Lid{0xC005};
  auto made = r.create(g);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->mlid.value, 0xC005U) << "the MLID asked for, when free";
  EXPECT_EQ(r.create(g).error().code, Errc::kConflict);
  g.mgid[15] = 2;
  EXPECT_EQ(r.create(g)->mlid.value, 0xC000U) << "taken: the lowest free one";
  const Mgid m1 = made->mgid;
  ASSERT_TRUE(r.join(m1, Guid{1}, kJoinFull).ok());
  ASSERT_TRUE(r.join(m1, Guid{1}, kJoinNon).ok());
  EXPECT_EQ(r.find(m1)->members.at(Guid{1}), kJoinFull | kJoinNon);
  const std::uint64_t v = r.version();
  ASSERT_TRUE(r.join(m1, Guid{1}, kJoinFull).ok());
  EXPECT_EQ(r.version(), v) << "no change, no version";
  ASSERT_TRUE(r.leave(m1, Guid{1}, kJoinFull).ok());
  EXPECT_EQ(r.find(m1)->members.at(Guid{1}), kJoinNon);
  EXPECT_EQ(r.leave(m1, Guid{2}, kJoinFull).error().code, Errc::kNotFound);
  ASSERT_TRUE(r.leave(m1, Guid{1}, kJoinNon).ok());
  EXPECT_FALSE(r.find(m1)) << "the last member left";
  EXPECT_EQ(r.join(m1, Guid{1}, kJoinFull).error().code, Errc::kNotFound);
}

}  // namespace
}  // namespace subnetd::state

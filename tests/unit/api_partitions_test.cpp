// gRPC ListPartitions and ListMulticastGroups, in process (the Api fixture of api_test_support.hpp)
// over a published partition plan: the partitions with their counts, one
// partition's members paged by (node GUID, port), and the errors.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api_test_support.hpp"
#include "routing/mcast.hpp"
#include "routing/partitions.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::api {
namespace {

using routing::PartitionMember;
using routing::PartitionSpec;

class ApiPartitions : public Api {
 protected:
  void publish_plan() {
    auto s = std::make_shared<state::FabricState>(*state_);
    PartitionSpec storage{"storage", 0x0010, true, {}, {}};
    storage.ipoib_params.mtu = 5;
    storage.members.push_back({PartitionMember::Kind::kName, {}, "h-l0-0", true});
    storage.members.push_back({PartitionMember::Kind::kName, {}, "h-l0-1", false});
    storage.members.push_back({PartitionMember::Kind::kName, {}, "nobody", true});
    s->partitions = std::make_shared<const routing::PartitionPlan>(
        routing::plan_partitions(*s->topology, std::vector{storage}, PortRef{}));
    s->generation = state_->generation + 1;
    state_ = s;
    publisher_.publish(state_);
  }
  grpc::Status list(std::uint32_t pkey, std::uint32_t page_size, const std::string& token,
                    v1::ListPartitionsResponse* r) {
    auto stub = unix_stub();
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::ListPartitionsRequest req;
    req.set_pkey(pkey);
    req.set_page_size(page_size);
    req.set_page_token(token);
    return stub->ListPartitions(&ctx, req, r);
  }
};

TEST_F(ApiPartitions, ListsPartitionsWithCountsAndWarnings) {
  start();
  v1::ListPartitionsResponse r;
  auto s = list(0, 0, "", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << "no plan published yet";
  publish_plan();
  r.Clear();
  s = list(0, 0, "", &r);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(r.partitions_size(), 2);
  EXPECT_EQ(r.partitions(0).pkey(), 0x7FFFU);
  EXPECT_EQ(r.partitions(0).name(), "default");
  EXPECT_TRUE(r.partitions(0).ipoib());
  EXPECT_EQ(r.partitions(1).pkey(), 0x0010U);
  EXPECT_EQ(r.partitions(1).full_members(), 1U);
  EXPECT_EQ(r.partitions(1).limited_members(), 1U);
  EXPECT_EQ(r.partitions(1).ipoib_mtu(), 4096U);
  EXPECT_EQ(r.partitions(1).ipoib_rate_gbps(), 10.0);
  EXPECT_EQ(r.partitions(1).ipoib_qkey(), 0x0B1BU);
  EXPECT_EQ(r.members_size(), 0) << "members only with a pkey";
  // The unmatched member, and the generated switches' unknown
  // PartitionEnforcementCap (0: they cannot enforce).
  ASSERT_EQ(r.warnings_size(), 2);
  EXPECT_NE(r.warnings(0).find("\"nobody\" names no node"), std::string::npos);
  EXPECT_NE(r.warnings(1).find("cannot enforce"), std::string::npos);
  EXPECT_EQ(r.generation(), state_->generation);
}

TEST_F(ApiPartitions, PagesThroughMembers) {
  start();
  publish_plan();
  v1::ListPartitionsResponse r;
  ASSERT_TRUE(list(0x8010, 0, "", &r).ok()) << "the membership bit is ignored";
  ASSERT_EQ(r.partitions_size(), 1);
  ASSERT_EQ(r.members_size(), 2);
  EXPECT_EQ(r.total_members(), 2U);
  EXPECT_TRUE(r.next_page_token().empty());
  for (const auto& m : r.members()) {
    EXPECT_EQ(m.full(), m.node_name() == "h-l0-0") << m.node_name();
    EXPECT_EQ(m.port(), 1U);
    EXPECT_EQ(m.lid(), lid_of(m.node_name(), 1).value);
    EXPECT_EQ(m.pkey_index(), 1U) << "after the default at index 0";
  }
  // The default partition, 3 at a time: every endport once, in order.
  std::string token;
  std::set<std::pair<std::uint64_t, std::uint32_t>> seen;
  std::pair<std::uint64_t, std::uint32_t> prev{0, 0};
  std::uint32_t total = 0;
  do {
    v1::ListPartitionsResponse page;
    auto s = list(0x7FFF, 3, token, &page);
    ASSERT_TRUE(s.ok()) << s.error_message();
    total = page.total_members();
    for (const auto& m : page.members()) {
      const std::pair<std::uint64_t, std::uint32_t> key{m.node_guid(), m.port()};
      EXPECT_LT(prev, key);
      prev = key;
      EXPECT_TRUE(seen.insert(key).second);
      EXPECT_TRUE(m.full());
      EXPECT_EQ(m.pkey_index(), 0U);
    }
    token = page.next_page_token();
  } while (!token.empty());
  EXPECT_EQ(seen.size(), total);
  EXPECT_GT(total, topo().num_switches());
}

TEST_F(ApiPartitions, RejectsWhatItCannotAnswer) {
  start();
  publish_plan();
  v1::ListPartitionsResponse r;
  EXPECT_EQ(list(0x0011, 0, "", &r).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(list(0x10000, 0, "", &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list(0x7FFF, 1001, "", &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list(0x7FFF, 0, "n1.0000000000000001", &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list(0, 0, "m1.0000000000000001.01", &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ApiPartitions, ListsMulticastGroupsWithMembersAndTrees) {
  start();
  v1::ListMulticastGroupsResponse r;
  {
    auto stub = unix_stub();
    grpc::ClientContext ctx;
    set_deadline(ctx);
    EXPECT_EQ(stub->ListMulticastGroups(&ctx, {}, &r).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  auto s = std::make_shared<state::FabricState>(*state_);
  state::McastGroup g;
  g.mgid = state::ipoib_broadcast_mgid(0x7FFF);
  g.mlid = Lid{0xC000};
  g.qkey = 0x0B1B;
  g.well_known = true;
  const PortRef a{node("h-l0-0"), 1}, b{node("h-l3-1"), 1};
  g.members[topo().port(a).guid] = state::kJoinFull;
  g.members[topo().port(b).guid] = state::kJoinNon;
  g.members[Guid{0x1234}] = state::kJoinFull;  // gone from the fabric
  s->mcast_groups = std::make_shared<const std::vector<state::McastGroup>>(std::vector{g});
  std::vector<routing::McastGroupIn> in{{Lid{0xC000}, {a, b}}};
  routing::WorkerPool pool(1);
  s->multicast = std::make_shared<const routing::McastTables>(
      std::move(routing::compute_multicast(topo(), *s->routes, in, pool)).value());
  s->generation = state_->generation + 1;
  state_ = s;
  publisher_.publish(state_);
  auto stub = unix_stub();
  grpc::ClientContext ctx;
  set_deadline(ctx);
  v1::ListMulticastGroupsRequest req;
  req.set_members(true);
  auto st = stub->ListMulticastGroups(&ctx, req, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(r.groups_size(), 1);
  const v1::MulticastGroup& out = r.groups(0);
  EXPECT_EQ(out.mgid(), "ff12:401b:ffff:0000:0000:0000:ffff:ffff");
  EXPECT_EQ(out.mlid(), 0xC000U);
  EXPECT_TRUE(out.well_known());
  EXPECT_EQ(out.member_count(), 3U);
  EXPECT_GE(out.tree_switches(), 3U) << "two leaves and a spine";
  ASSERT_EQ(out.members_size(), 3);
  std::set<std::string> names;
  for (const auto& m : out.members()) names.insert(m.node_name());
  EXPECT_EQ(names, (std::set<std::string>{"", "h-l0-0", "h-l3-1"}));
}

}  // namespace
}  // namespace subnetd::api

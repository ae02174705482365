// subnetctl's helpers: how a command-line word names a node, status -> exit
// code, and the text formatting.

#include <grpcpp/support/status.h>
#include <gtest/gtest.h>

#include "api/cli.hpp"

namespace subnetd::api::cli {
namespace {

namespace v1 = ::subnet::v1;

TEST(SubnetctlCli, NodeRefWords) {
  auto g = parse_node_ref("0x0002c90000000001");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ref_case(), v1::NodeRef::kGuid);
  EXPECT_EQ(g->guid(), 0x0002c90000000001u);
  auto l = parse_node_ref("12");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->ref_case(), v1::NodeRef::kLid);
  EXPECT_EQ(l->lid(), 12u);
  auto n = parse_node_ref("leaf0");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->name(), "leaf0");
  auto hca = parse_node_ref("h12 HCA-1");
  ASSERT_TRUE(hca.ok());
  EXPECT_EQ(hca->name(), "h12 HCA-1");
  auto explicit_name = parse_node_ref("name:1234");
  ASSERT_TRUE(explicit_name.ok());
  EXPECT_EQ(explicit_name->name(), "1234");
  auto explicit_guid = parse_node_ref("guid:2c90000000001");
  ASSERT_TRUE(explicit_guid.ok());
  EXPECT_EQ(explicit_guid->guid(), 0x2c90000000001u);
  auto explicit_lid = parse_node_ref("lid:49151");
  ASSERT_TRUE(explicit_lid.ok());
  EXPECT_EQ(explicit_lid->lid(), 49151u);

  for (const char* bad : {"", "0x0", "0x12345678901234567", "0xzz", "0", "lid:0", "lid:x",
                          "lid:16777216", "guid:", "name:"}) {
    auto r = parse_node_ref(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, Errc::kInvalidArgument) << bad;
    }
  }
}

// Issue 12.6: a word echoed in an error is escaped and cut.
TEST(SubnetctlCli, NodeRefErrorsEchoTheWordEscapedAndCut) {
  auto evil = parse_node_ref("guid:\x1b[31mbeef\n");
  ASSERT_FALSE(evil.ok());
  EXPECT_EQ(evil.error().message,
            "\"guid:\\x1b[31mbeef\\n\": a GUID is 1 to 16 hex digits and not zero");
  const std::string huge = "lid:" + std::string(3 * 1024 * 1024, '9');
  auto big = parse_node_ref(huge);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message, "\"lid:" + std::string(252, '9') +
                                     "... (3145732 bytes)\": a LID is a decimal number from 1 "
                                     "to 16777215");
}

TEST(SubnetctlCli, ExitCodes) {
  EXPECT_EQ(exit_code_for(grpc::Status::OK), kExitOk);
  EXPECT_EQ(exit_code_for({grpc::StatusCode::NOT_FOUND, ""}), kExitNotFound);
  EXPECT_EQ(exit_code_for({grpc::StatusCode::PERMISSION_DENIED, ""}), kExitPermission);
  EXPECT_EQ(exit_code_for({grpc::StatusCode::UNAUTHENTICATED, ""}), kExitPermission);
  EXPECT_EQ(exit_code_for({grpc::StatusCode::UNAVAILABLE, ""}), kExitUnavailable);
  EXPECT_EQ(exit_code_for({grpc::StatusCode::INVALID_ARGUMENT, ""}), kExitUsage);
  EXPECT_EQ(exit_code_for({grpc::StatusCode::FAILED_PRECONDITION, ""}), kExitRpcError);
  EXPECT_EQ(exit_code_for({grpc::StatusCode::DEADLINE_EXCEEDED, ""}), kExitRpcError);
}

TEST(SubnetctlCli, Formatting) {
  EXPECT_EQ(format_guid(0x2c90000000001), "0x0002c90000000001");
  EXPECT_EQ(format_duration_us(850), "850 us");
  EXPECT_EQ(format_duration_us(3100), "3.1 ms");
  EXPECT_EQ(format_duration_us(2'250'000), "2.25 s");
  EXPECT_EQ(format_uptime(45), "45s");
  EXPECT_EQ(format_uptime(192), "3m12s");
  EXPECT_EQ(format_uptime(2 * 3600 + 5 * 60 + 9), "2h05m");
  EXPECT_EQ(format_uptime(3 * 86400 + 4 * 3600), "3d04h");
  EXPECT_EQ(format_lid_range(12, 0), "12");
  EXPECT_EQ(format_lid_range(12, 2), "12-15");
  EXPECT_EQ(format_lid_range(0, 2), "-");
  EXPECT_EQ(node_type_word(v1::NODE_TYPE_SWITCH), "switch");
  EXPECT_EQ(event_kind_word(v1::EVENT_KIND_LINK_DOWN), "link_down");
  EXPECT_EQ(port_state_word(v1::PORT_STATE_ACTIVE), "Active");
  EXPECT_EQ(speed_word(v1::LINK_SPEED_HDR), "HDR");
}

TEST(SubnetctlCli, SweepLines) {
  v1::TriggerSweepResponse heavy;
  heavy.set_generation(8);
  v1::SweepSummary* sw = heavy.mutable_sweep();
  sw->set_kind(v1::SWEEP_KIND_HEAVY);
  sw->set_outcome(v1::SWEEP_OUTCOME_OK);
  sw->set_nodes(20);
  sw->set_switches(12);
  sw->set_cas(8);
  sw->set_lids(20);
  for (std::uint64_t us : {1000, 500, 1200, 300, 100}) sw->add_phases()->set_duration_us(us);
  EXPECT_EQ(format_sweep(heavy),
            "sweep OK: 20 nodes (12 switches, 8 CAs), 20 LIDs, 3.1 ms; generation 8\n");
  // Started by a light sweep: what it found comes first.
  sw->set_message("started by a light sweep: port state change on switch \"leaf3\"");
  EXPECT_EQ(format_sweep(heavy),
            "started by a light sweep: port state change on switch \"leaf3\"\n"
            "sweep OK: 20 nodes (12 switches, 8 CAs), 20 LIDs, 3.1 ms; generation 8\n");

  v1::TriggerSweepResponse light;
  light.set_generation(7);
  sw = light.mutable_sweep();
  sw->set_kind(v1::SWEEP_KIND_LIGHT);
  sw->set_outcome(v1::SWEEP_OUTCOME_OK);
  sw->set_switches(12);
  sw->set_message("light sweep: no change");
  sw->add_phases()->set_duration_us(850);
  EXPECT_EQ(format_sweep(light),
            "light sweep OK: no change; 12 switches answered in 850 us; generation 7\n");
}

TEST(SubnetctlCli, VerifyLines) {
  v1::VerifyRoutingResponse ok;
  ok.set_verdict(v1::VERDICT_OK);
  ok.set_message("complete, loop-free, deadlock-free");
  ok.set_switches(12);
  ok.set_virtual_lanes(1);
  ok.set_pairs_checked(528);
  ok.set_generation(7);
  ok.set_duration_us(1250);
  EXPECT_EQ(format_verify(ok),
            "OK: complete, loop-free, deadlock-free\n"
            "12 switches, 1 VLs, 528 pairs checked, generation 7, 1.2 ms\n");

  // Read back, shared with another caller's run; the SM's lines are escaped.
  v1::VerifyRoutingResponse differ = ok;
  differ.set_verdict(v1::VERDICT_TABLES_DIFFER);
  differ.set_message("2 LFT blocks differ");
  differ.set_shared(true);
  v1::ReadBack* rb = differ.mutable_read_back();
  rb->set_switches(12);
  rb->set_switches_silent(1);
  rb->set_blocks_read(23);
  rb->set_blocks_differ(2);
  rb->add_differences(
      "switch \"leaf0\" (0x0002c90000000001) block 0: LID 0x5 -> port 255, "
      "published 3");
  rb->add_differences("switch \"le\x1b[2Jaf1\" block 1: LID 0x47 -> port 1, published 2");
  EXPECT_EQ(format_verify(differ),
            "TABLES_DIFFER: 2 LFT blocks differ\n"
            "12 switches, 1 VLs, 528 pairs checked, generation 7, 1.2 ms (shared with a "
            "verification another caller asked for)\n"
            "read back: 12 switches (1 did not answer every block), 23 LFT blocks read, 2 "
            "differ:\n"
            "  switch \"leaf0\" (0x0002c90000000001) block 0: LID 0x5 -> port 255, published 3\n"
            "  switch \"le\\x1b[2Jaf1\" block 1: LID 0x47 -> port 1, published 2\n");
  v1::VerifyRoutingResponse same = ok;
  same.mutable_read_back()->set_switches(12);
  same.mutable_read_back()->set_blocks_read(24);
  EXPECT_EQ(format_verify(same),
            "OK: complete, loop-free, deadlock-free\n"
            "12 switches, 1 VLs, 528 pairs checked, generation 7, 1.2 ms\n"
            "read back: 12 switches, 24 LFT blocks read, 0 differ\n");
}

TEST(SubnetctlCli, TableAlignsColumns) {
  Table t({"GUID", "LID", "NAME"}, {false, true, false});
  t.add({"0x1", "7", "leaf0"});
  t.add({"0x0002c90000000002", "1234", "spine with a long name"});
  t.add({"0x3"});  // short rows are padded
  EXPECT_EQ(t.rows(), 3u);
  EXPECT_EQ(t.render(),
            "GUID                 LID  NAME\n"
            "0x1                    7  leaf0\n"
            "0x0002c90000000002  1234  spine with a long name\n"
            "0x3\n");
}

}  // namespace
}  // namespace subnetd::api::cli

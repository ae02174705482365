// gRPC GetPathRecord and the SA counters of GetStatus, in process (the Api
// fixture of api_test_support.hpp) with a real SaAgent: the record the API
// gives for a pair is the record the SA answers on the wire for it.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "api_test_support.hpp"
#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"

namespace subnetd::api {
namespace {

namespace mad = discovery::mad::sa;

class ApiPathRecord : public Api {
 protected:
  void SetUp() override {
    Api::SetUp();
    sa_ = &agent_;
  }

  grpc::Status path(const std::string& from, const std::string& to, v1::GetPathRecordResponse* r) {
    auto stub = unix_stub();
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::GetPathRecordRequest req;
    req.mutable_source()->set_name(from);
    req.mutable_destination()->set_name(to);
    return stub->GetPathRecord(&ctx, req, r);
  }

  // The SA's own answer to a Get PathRecord by SLID and DLID.
  std::vector<std::uint8_t> sa_record(Lid slid, Lid dlid) {
    mad::SaMad q;
    q.method = static_cast<std::uint8_t>(mad::Method::kGet);
    q.attr_id = static_cast<std::uint16_t>(mad::Attr::kPathRecord);
    q.comp_mask = (1ULL << 4) | (1ULL << 5);  // DLID, SLID
    set(q.data, "SLID", slid.value);
    set(q.data, "DLID", dlid.value);
    auto answer = agent_.answer(mad::encode_sa(q), slid, *state_);
    EXPECT_EQ(answer.size(), 1u);
    auto d = mad::decode_sa(answer.front());
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(d->status, 0);
    return {d->data.begin(), d->data.begin() + 64};
  }
  static const mad::Component& c(const char* name) {
    return mad::component(*mad::layout_of(static_cast<std::uint16_t>(mad::Attr::kPathRecord)),
                          name);
  }
  static void set(std::span<std::uint8_t> r, const char* name, std::uint64_t v) {
    mad::set_field(r, c(name), v);
  }
  static std::uint64_t get(std::span<const std::uint8_t> r, const char* name) {
    return mad::get_field(r, c(name));
  }

  daemon::sa::SaAgent agent_;
};

TEST_F(ApiPathRecord, IsWhatTheSaAnswersOnTheWire) {
  start();
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"h-l0-0", "h-l7-3"}, {"h-l2-1", "h-l2-3"}, {"h-l6-0", "spine1"}, {"leaf1", "h-l4-2"}};
  for (const auto& [from, to] : pairs) {
    SCOPED_TRACE(from + " -> " + to);
    v1::GetPathRecordResponse r;
    auto s = path(from, to, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    const v1::PathRecord& p = r.path();
    const bool from_switch = topo().node(node(from)).type == routing::NodeType::kSwitch;
    const bool to_switch = topo().node(node(to)).type == routing::NodeType::kSwitch;
    const Lid slid = lid_of(from, from_switch ? 0 : 1), dlid = lid_of(to, to_switch ? 0 : 1);
    EXPECT_EQ(p.slid(), slid.value);
    EXPECT_EQ(p.dlid(), dlid.value);
    EXPECT_EQ(p.source_name(), from);
    EXPECT_EQ(p.destination_name(), to);
    EXPECT_EQ(p.source_guid(), topo().port(node(from), from_switch ? 0 : 1).guid.value);
    EXPECT_EQ(p.destination_guid(), topo().port(node(to), to_switch ? 0 : 1).guid.value);
    EXPECT_EQ(p.subnet_prefix(), 0xFE80'0000'0000'0000ULL);
    EXPECT_EQ(r.generation(), state_->generation);

    const auto wire = sa_record(slid, dlid);
    EXPECT_EQ(p.sl(), get(wire, "SL"));
    EXPECT_EQ(p.pkey(), get(wire, "P_Key"));
    EXPECT_EQ(p.mtu(), 128U << get(wire, "MTU"));
    EXPECT_EQ(p.rate_code(), get(wire, "Rate"));
    EXPECT_EQ(p.packet_life_time(), get(wire, "PacketLifeTime"));
    EXPECT_EQ(p.reversible(), get(wire, "Reversible") == 1);
    // A two-level fat tree: a leaf alone, or leaf-spine-leaf.
    EXPECT_GE(p.switch_hops(), 1u);
    EXPECT_LE(p.switch_hops(), 3u);
  }
}

TEST_F(ApiPathRecord, SaysWhyThereIsNone) {
  start();
  v1::GetPathRecordResponse r;
  auto s = path("h-l0-0", "no-such-node", &r);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message().rfind("destination:", 0), 0u) << s.error_message();
  {
    auto stub = unix_stub();
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::GetPathRecordRequest req;
    req.mutable_destination()->set_name("leaf0");
    s = stub->GetPathRecord(&ctx, req, &r);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "source: required");
  }

  // Tables that drop the destination at leaf2: no path, and where it is lost.
  auto broken = std::make_shared<state::FabricState>(*state_);
  auto routes = std::make_shared<routing::Routes>(*state_->routes);
  routes->lfts[topo().node(node("leaf2")).switch_index.value].set(lid_of("h-l6-1"),
                                                                  routing::kDropPort);
  broken->routes = routes;
  broken->generation = 9;
  publisher_.publish(broken);
  s = path("h-l2-0", "h-l6-1", &r);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("leaf2"), std::string::npos) << s.error_message();
}

TEST_F(ApiPathRecord, UnavailableWithoutAnSa) {
  sa_ = nullptr;
  start();
  v1::GetPathRecordResponse r;
  auto s = path("h-l0-0", "h-l7-3", &r);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);

  auto stub = unix_stub();
  grpc::ClientContext ctx;
  set_deadline(ctx);
  v1::GetStatusResponse st;
  ASSERT_TRUE(stub->GetStatus(&ctx, {}, &st).ok());
  EXPECT_FALSE(st.has_sa());
}

TEST_F(ApiPathRecord, StatusCountsTheSaRequests) {
  start();
  sa_record(lid_of("h-l0-0"), lid_of("h-l1-0"));
  sa_record(lid_of("h-l0-1"), lid_of("h-l1-1"));
  const std::array<std::uint8_t, 10> garbage{};
  EXPECT_TRUE(agent_.answer(garbage, Lid{1}, *state_).empty());

  auto stub = unix_stub();
  grpc::ClientContext ctx;
  set_deadline(ctx);
  v1::GetStatusResponse st;
  ASSERT_TRUE(stub->GetStatus(&ctx, {}, &st).ok());
  ASSERT_TRUE(st.has_sa());
  EXPECT_EQ(st.sa().requests(), 2u);
  EXPECT_EQ(st.sa().records(), 2u);
  EXPECT_EQ(st.sa().errors(), 0u);
  EXPECT_EQ(st.sa().malformed(), 1u);
}

}  // namespace
}  // namespace subnetd::api

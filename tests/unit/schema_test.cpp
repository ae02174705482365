// Checks the generated subnet.v1 code: the services have the methods issue 4
// asks for with the right streaming shape, the schema's conventions hold
// (UNSPECIFIED = 0, GUIDs as fixed64), messages round-trip, and a generated
// service answers over an in-process channel.

#include <google/protobuf/descriptor.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "subnet/v1/subnet.grpc.pb.h"
#include "subnet/v1/subnet.pb.h"

namespace subnetd {
namespace {

namespace pb = google::protobuf;
namespace v1 = ::subnet::v1;

const pb::FileDescriptor* file() {
  return v1::GetStatusRequest::descriptor()->file();
}

struct MethodShape {
  const char* name;
  bool server_streaming;
};

void expect_service(const char* service, const std::vector<MethodShape>& methods) {
  const pb::ServiceDescriptor* s = file()->FindServiceByName(service);
  ASSERT_NE(s, nullptr) << service;
  EXPECT_EQ(s->method_count(), static_cast<int>(methods.size())) << service;
  for (const auto& m : methods) {
    const pb::MethodDescriptor* d = s->FindMethodByName(m.name);
    ASSERT_NE(d, nullptr) << service << "." << m.name;
    EXPECT_FALSE(d->client_streaming()) << m.name;
    EXPECT_EQ(d->server_streaming(), m.server_streaming) << m.name;
    // Request/response messages are named after the method (except the
    // streamed element types, which are domain messages).
    EXPECT_EQ(d->input_type()->name(), std::string(m.name) + "Request");
    if (!m.server_streaming) {
      EXPECT_EQ(d->output_type()->name(), std::string(m.name) + "Response");
    }
  }
}

TEST(Schema, PackageAndFileName) {
  EXPECT_EQ(file()->package(), "subnet.v1");
  EXPECT_EQ(file()->name(), "subnet/v1/subnet.proto");
}

TEST(Schema, SubnetManagerHasTheIssueMethods) {
  expect_service("SubnetManager", {{"GetStatus", false},
                                   {"ListNodes", false},
                                   {"GetNode", false},
                                   {"ListLinks", false},
                                   {"GetForwardingTable", true},
                                   {"TracePath", false},
                                   {"GetPathRecord", false},
                                   {"ListPartitions", false},
                                   {"ListMulticastGroups", false},
                                   {"WatchEvents", true},
                                   {"TriggerSweep", false},
                                   {"VerifyRouting", false},
                                   {"SetPortState", false},
                                   {"CheckCabling", false},
                                   {"GetPortCounters", false},
                                   {"ListPortErrors", false},
                                   {"TopPorts", false},
                                   {"ListUnhealthyPorts", false}});
  const auto* s = file()->FindServiceByName("SubnetManager");
  EXPECT_EQ(s->FindMethodByName("GetForwardingTable")->output_type()->name(),
            "ForwardingTableBlock");
  EXPECT_EQ(s->FindMethodByName("WatchEvents")->output_type()->name(), "Event");
}

TEST(Schema, SimulatorHasTheIssueMethods) {
  expect_service("Simulator",
                 {{"SetLinkState", false},
                  {"SetSwitchState", false},
                  {"InjectPortErrors", false},
                  {"GetStats", false}});
}

TEST(Schema, EveryEnumStartsWithUnspecified) {
  ASSERT_GT(file()->enum_type_count(), 5);
  for (int i = 0; i < file()->enum_type_count(); ++i) {
    const pb::EnumDescriptor* e = file()->enum_type(i);
    const pb::EnumValueDescriptor* zero = e->FindValueByNumber(0);
    ASSERT_NE(zero, nullptr) << e->name();
    EXPECT_EQ(zero->index(), 0) << e->name();
    const std::string& n = zero->name();
    EXPECT_TRUE(n.size() > 12 && n.compare(n.size() - 12, 12, "_UNSPECIFIED") == 0) << n;
  }
}

// One representation for GUIDs across the API: fixed64.
TEST(Schema, EveryGuidFieldIsFixed64) {
  int guid_fields = 0;
  for (int i = 0; i < file()->message_type_count(); ++i) {
    const pb::Descriptor* m = file()->message_type(i);
    for (int f = 0; f < m->field_count(); ++f) {
      const pb::FieldDescriptor* fd = m->field(f);
      if (fd->name().find("guid") == std::string::npos) continue;
      ++guid_fields;
      EXPECT_EQ(fd->type(), pb::FieldDescriptor::TYPE_FIXED64) << fd->full_name();
    }
  }
  EXPECT_GE(guid_fields, 8);
}

TEST(Schema, MessagesRoundTrip) {
  v1::TracePathRequest req;
  req.mutable_source()->set_guid(0xf452140300000001ull);
  req.mutable_destination()->set_name("h12 HCA-1");
  req.mutable_destination()->set_port(2);
  v1::TracePathRequest back;
  ASSERT_TRUE(back.ParseFromString(req.SerializeAsString()));
  EXPECT_EQ(back.source().ref_case(), v1::NodeRef::kGuid);
  EXPECT_EQ(back.source().guid(), 0xf452140300000001ull);
  EXPECT_EQ(back.destination().ref_case(), v1::NodeRef::kName);
  EXPECT_EQ(back.destination().name(), "h12 HCA-1");
  EXPECT_EQ(back.destination().port(), 2u);

  v1::Event ev;
  ev.set_id(42);
  ev.set_kind(v1::EVENT_KIND_LINK_DOWN);
  ev.mutable_time()->set_seconds(1'700'000'000);
  v1::Event ev_back;
  ASSERT_TRUE(ev_back.ParseFromString(ev.SerializeAsString()));
  EXPECT_FALSE(ev_back.has_port());  // explicit presence: "no port" != port 0
  ev.set_port(0);
  ASSERT_TRUE(ev_back.ParseFromString(ev.SerializeAsString()));
  EXPECT_TRUE(ev_back.has_port());
  EXPECT_EQ(ev_back.port(), 0u);

  v1::ForwardingTableBlock block;
  block.set_block(3);
  block.set_ports(std::string(64, '\xff'));
  v1::ForwardingTableBlock block_back;
  ASSERT_TRUE(block_back.ParseFromString(block.SerializeAsString()));
  EXPECT_EQ(block_back.ports().size(), 64u);
  EXPECT_EQ(static_cast<unsigned char>(block_back.ports()[63]), 255u);
}

// A generated service answers through a real (in-process) gRPC channel, so
// the stubs, the runtime and the link line all work together.
class FixedStatus final : public v1::SubnetManager::CallbackService {
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx, const v1::GetStatusRequest*,
                                      v1::GetStatusResponse* resp) override {
    resp->set_state(v1::SM_STATE_MASTER);
    resp->set_switches(54);
    resp->set_cas(648);
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

TEST(Schema, GeneratedServiceAnswersInProcess) {
  FixedStatus service;
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::SubnetManager::NewStub(server->InProcessChannel(grpc::ChannelArguments{}));
  grpc::ClientContext ctx;
  v1::GetStatusResponse resp;
  grpc::Status st = stub->GetStatus(&ctx, v1::GetStatusRequest{}, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.state(), v1::SM_STATE_MASTER);
  EXPECT_EQ(resp.cas(), 648u);
  // Methods the service does not override answer UNIMPLEMENTED.
  grpc::ClientContext ctx2;
  v1::VerifyRoutingResponse vr;
  EXPECT_EQ(stub->VerifyRouting(&ctx2, {}, &vr).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  server->Shutdown();
}

}  // namespace
}  // namespace subnetd

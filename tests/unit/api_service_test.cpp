// The gRPC API end to end, in process: an api::Server on a unix socket in a
// temp dir and on TCP port 0, over a FabricState built from a generated
// leaf/spine fabric (LIDs assigned, updn routes), with fake SmControl and
// SimControl. Server set-up, authorisation on both listeners, the unix
// peer check (as root, with a forked child that drops to another uid), the
// queries with their paging and status codes, the LFT stream against the
// Lft, TracePath against routing::trace_path, calls before the first
// sweep, health and reflection. Fixture and fakes: api_test_support.hpp;
// events, sweeps, verify, port state and the simulator:
// api_operations_test.cpp; waiting calls: api_concurrency_test.cpp;
// GetPathRecord: api_path_record_test.cpp.

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>
#include <grp.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "api/auth.hpp"
#include "api/server.hpp"
#include "api_test_support.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/path_trace.hpp"
#include "routing/text.hpp"
#include "routing/worker_pool.hpp"
#include "subnet/v1/subnet.grpc.pb.h"

namespace subnetd::api {
namespace {

using namespace std::chrono_literals;
using grpc::StatusCode;

// ---------------------------------------------------------------------------
// Server set-up

TEST_F(Api, UnixSocketModeAndStaleSocket) {
  // A socket file left by a crashed daemon: bound, never unlinked.
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, cfg_.socket.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  start();
  struct stat st {};
  ASSERT_EQ(::stat(cfg_.socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(server_->unix_target(), "unix:" + cfg_.socket);
  EXPECT_GT(server_->tcp_port(), 0);

  // A second server on the same path finds the live one and refuses.
  auto second = Server::start(cfg_, deps());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("another process is listening"), std::string::npos)
      << second.error().message;

  server_->stop(1s);
  EXPECT_FALSE(std::filesystem::exists(cfg_.socket));  // removed on stop
}

TEST_F(Api, RefusesAFileThatIsNotASocket) {
  write_file(cfg_.socket, "precious", 0644);
  auto s = Server::start(cfg_, deps());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not a socket"), std::string::npos) << s.error().message;
  std::ifstream in(cfg_.socket);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

TEST_F(Api, TokenFileMustBePrivate) {
  ::chmod(cfg_.token_file.c_str(), 0644);
  auto s = Server::start(cfg_, deps());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("api.token_file"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("mode 0644"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("refusing to start"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(cfg_.socket));  // nothing listens

  write_file(cfg_.token_file, "short", 0600);
  auto s2 = Server::start(cfg_, deps());
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.error().message.find("at least"), std::string::npos) << s2.error().message;

  cfg_.token_file = (dir_ / "missing").string();
  auto s3 = Server::start(cfg_, deps());
  ASSERT_FALSE(s3.ok());
  EXPECT_NE(s3.error().message.find("missing"), std::string::npos);
}

TEST_F(Api, BadTcpAddressAndTlsHalfConfigured) {
  cfg_.tcp = "256.1.1.1:99999";
  auto s = Server::start(cfg_, deps());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("api.tcp"), std::string::npos) << s.error().message;
  cfg_.tcp = "127.0.0.1:0";
  cfg_.tls_cert = (dir_ / "cert.pem").string();
  auto s2 = Server::start(cfg_, deps());
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.error().message.find("api.tls_key"), std::string::npos) << s2.error().message;
}

TEST_F(Api, TcpWithTls) {
  if (::access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/openssl";
  const std::string cert = (dir_ / "cert.pem").string();
  const std::string key = (dir_ / "key.pem").string();
  const std::string cmd =
      "/usr/bin/openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=localhost -addext subjectAltName=DNS:localhost -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  cfg_.tls_cert = cert;
  cfg_.tls_key = key;
  start();
  std::ifstream in(cert);
  std::stringstream pem;
  pem << in.rdbuf();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem.str();
  const std::string target = "localhost:" + std::to_string(server_->tcp_port());
  auto stub = v1::SubnetManager::NewStub(grpc::CreateChannel(target, grpc::SslCredentials(ssl)));
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    ctx.AddMetadata("authorization", std::string("Bearer ") + kToken);
    v1::TriggerSweepResponse r;
    auto s = stub->TriggerSweep(&ctx, {}, &r);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  // A plaintext client cannot talk to the TLS listener.
  auto plain = v1::SubnetManager::NewStub(tcp_channel());
  grpc::ClientContext ctx;
  set_deadline(ctx, 2s);
  v1::GetStatusResponse r;
  EXPECT_FALSE(plain->GetStatus(&ctx, {}, &r).ok());
}

TEST(ApiAuth, TokensAndPeerPolicy) {
  EXPECT_TRUE(constant_time_equal("abcdef", "abcdef"));
  EXPECT_FALSE(constant_time_equal("abcdef", "abcdeg"));
  EXPECT_FALSE(constant_time_equal("abcdef", "abcde"));
  EXPECT_FALSE(constant_time_equal("", "x"));
  EXPECT_EQ(bearer_token("Bearer abc"), std::optional<std::string_view>("abc"));
  EXPECT_EQ(bearer_token("bearer  abc "), std::optional<std::string_view>("abc"));
  EXPECT_FALSE(bearer_token("Basic abc").has_value());
  EXPECT_FALSE(bearer_token("Bearer ").has_value());
  EXPECT_FALSE(parse_token("has space in the middle!!", "f").ok());
  EXPECT_TRUE(parse_token("  0123456789abcdef\n", "f").ok());

  PeerCredentials p{.pid = 1, .uid = 1000, .gid = 1000, .groups = {27, 1000}};
  EXPECT_FALSE(peer_allowed(p, 999, std::nullopt));
  EXPECT_TRUE(peer_allowed(p, 1000, std::nullopt));  // the daemon's own user
  EXPECT_TRUE(peer_allowed(p, 999, gid_t{27}));      // supplementary group
  EXPECT_TRUE(peer_allowed(p, 999, gid_t{1000}));    // primary group
  EXPECT_FALSE(peer_allowed(p, 999, gid_t{28}));
  p.uid = 0;
  EXPECT_TRUE(peer_allowed(p, 999, std::nullopt));  // root
}

// Connects from a forked child running as uid 65534 with primary group
// `gid`: the file mode lets group members connect; the daemon's own peer
// check decides. Returns true when the server kept the connection (it sends
// its HTTP/2 SETTINGS frame), false when it closed it.
bool child_connection_kept(const std::string& path, gid_t gid) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on: the parent has threads.
    const gid_t groups[1] = {gid};
    if (::setgroups(1, groups) != 0 || ::setgid(gid) != 0 || ::setuid(65534) != 0) ::_exit(10);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) ::_exit(11);
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 5000) != 1) ::_exit(12);
    char buf[64];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    ::_exit(n > 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_LT(WEXITSTATUS(status), 10) << "child set-up failed: " << WEXITSTATUS(status);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_F(Api, UnixPeerCredentialsAreChecked) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another uid";
  start();
  // Socket is root:root 0660. A gid-0 child can connect, but it is neither
  // root nor the daemon's user and no api.socket_group is configured.
  EXPECT_FALSE(child_connection_kept(cfg_.socket, 0));
  server_->stop(1s);
  server_.reset();

  cfg_.socket_group = "root";
  start();
  EXPECT_TRUE(child_connection_kept(cfg_.socket, 0));
}

// ---------------------------------------------------------------------------
// Reads

TEST_F(Api, GetStatus) {
  log_->append(state::EventKind::kSweep, std::nullopt, std::nullopt, "bring-up");
  start();
  auto stub = unix_stub();
  grpc::ClientContext ctx;
  set_deadline(ctx);
  v1::GetStatusResponse r;
  ASSERT_TRUE(stub->GetStatus(&ctx, {}, &r).ok());
  EXPECT_EQ(r.state(), v1::SM_STATE_MASTER);
  EXPECT_EQ(r.generation(), 7u);
  EXPECT_EQ(r.version(), "9.9.9-test");
  EXPECT_EQ(r.nodes(), 44u);  // 8 leaves + 4 spines + 32 CAs
  EXPECT_EQ(r.switches(), 12u);
  EXPECT_EQ(r.cas(), 32u);
  EXPECT_EQ(r.routers(), 0u);
  EXPECT_EQ(r.links(), 64u);  // 32 host cables + 8 x 4 leaf-spine
  EXPECT_EQ(r.lids(), 44u);
  EXPECT_EQ(r.ports(), 12u * 8u + 32u);
  EXPECT_EQ(r.lid_bits(), 16u);
  EXPECT_EQ(r.routing_engine(), "updn");
  EXPECT_EQ(r.sm_lid(), lid_of("h-l0-0").value);
  EXPECT_EQ(r.sm_port_guid(), topo().port(node("h-l0-0"), 1).guid.value);
  EXPECT_EQ(r.verdict(), v1::VERDICT_OK);
  EXPECT_EQ(r.last_routing_us(), 1500u);
  EXPECT_EQ(r.last_event_id(), 1);
  EXPECT_EQ(r.sweeps(), 1u);
  EXPECT_EQ(r.last_sweep().outcome(), v1::SWEEP_OUTCOME_OK);
  EXPECT_EQ(r.last_sweep().switches(), 12u);
  EXPECT_GT(r.started_at().seconds(), 0);
}

TEST_F(Api, ListNodesPagesFiltersAndValidates) {
  start();
  auto stub = unix_stub();
  std::vector<std::uint64_t> guids;
  std::string token;
  int pages = 0;
  do {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::ListNodesRequest req;
    req.set_page_size(10);
    req.set_page_token(token);
    v1::ListNodesResponse r;
    auto s = stub->ListNodes(&ctx, req, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(r.total_size(), 44u);
    EXPECT_EQ(r.generation(), 7u);
    EXPECT_LE(r.nodes_size(), 10);
    for (const auto& n : r.nodes()) guids.push_back(n.guid());
    token = r.next_page_token();
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 5);
  ASSERT_EQ(guids.size(), 44u);
  EXPECT_TRUE(std::is_sorted(guids.begin(), guids.end()));
  EXPECT_EQ(std::set<std::uint64_t>(guids.begin(), guids.end()).size(), 44u);

  const auto list = [&](v1::ListNodesRequest req, v1::ListNodesResponse* r) {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    return stub->ListNodes(&ctx, req, r);
  };
  v1::ListNodesRequest sw;
  sw.set_type(v1::NODE_TYPE_SWITCH);
  v1::ListNodesResponse r;
  ASSERT_TRUE(list(sw, &r).ok());
  EXPECT_EQ(r.nodes_size(), 12);
  EXPECT_TRUE(r.next_page_token().empty());
  for (const auto& n : r.nodes()) {
    EXPECT_EQ(n.type(), v1::NODE_TYPE_SWITCH);
    EXPECT_EQ(n.num_ports(), 8u);
    EXPECT_NE(n.lid(), 0u);
  }
  v1::ListNodesRequest spine;
  spine.set_name_contains("spine");
  r.Clear();
  ASSERT_TRUE(list(spine, &r).ok());
  EXPECT_EQ(r.total_size(), 4u);

  v1::ListNodesRequest big;
  big.set_page_size(1001);
  auto s = list(big, &r);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("page_size:", 0), 0u) << s.error_message();
  v1::ListNodesRequest bad_token;
  bad_token.set_page_token("garbage");
  s = list(bad_token, &r);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("page_token:", 0), 0u) << s.error_message();
  v1::ListNodesRequest bad_type;
  bad_type.set_type(static_cast<v1::NodeType>(42));
  s = list(bad_type, &r);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("type:", 0), 0u) << s.error_message();
}

TEST_F(Api, GetNodeByGuidLidNameAndErrors) {
  start();
  auto stub = unix_stub();
  const auto get = [&](v1::NodeRef ref, v1::GetNodeResponse* r) {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::GetNodeRequest req;
    *req.mutable_node() = std::move(ref);
    return stub->GetNode(&ctx, req, r);
  };
  v1::NodeRef by_name;
  by_name.set_name("leaf3");
  v1::GetNodeResponse leaf;
  ASSERT_TRUE(get(by_name, &leaf).ok());
  EXPECT_EQ(leaf.node().guid(), guid("leaf3").value);
  EXPECT_EQ(leaf.node().type(), v1::NODE_TYPE_SWITCH);
  ASSERT_EQ(leaf.ports_size(), 9);  // port 0 + 8
  EXPECT_EQ(leaf.ports(0).number(), 0u);
  EXPECT_EQ(leaf.ports(0).lid(), lid_of("leaf3", 0).value);
  EXPECT_EQ(leaf.links_size(), 8);  // 4 hosts + 4 spines
  for (const auto& l : leaf.links()) EXPECT_EQ(l.a().node_guid(), guid("leaf3").value);
  const auto& p1 = leaf.ports(1);
  EXPECT_TRUE(p1.connected());
  EXPECT_EQ(p1.remote().node_name(), "h-l3-0");
  EXPECT_EQ(p1.width_lanes(), 4u);
  EXPECT_EQ(p1.speed(), v1::LINK_SPEED_QDR);

  v1::NodeRef by_guid;
  by_guid.set_guid(guid("h-l5-2").value);
  v1::GetNodeResponse ca;
  ASSERT_TRUE(get(by_guid, &ca).ok());
  EXPECT_EQ(ca.node().name(), "h-l5-2");
  EXPECT_EQ(ca.node().type(), v1::NODE_TYPE_CA);
  EXPECT_EQ(ca.node().lid(), lid_of("h-l5-2").value);
  ASSERT_EQ(ca.ports_size(), 1);
  EXPECT_EQ(ca.ports(0).lid(), lid_of("h-l5-2").value);
  ASSERT_EQ(ca.links_size(), 1);
  EXPECT_EQ(ca.links(0).b().node_name(), "leaf5");

  v1::NodeRef by_lid;
  by_lid.set_lid(lid_of("h-l5-2").value);
  v1::GetNodeResponse ca2;
  ASSERT_TRUE(get(by_lid, &ca2).ok());
  EXPECT_EQ(ca2.node().guid(), ca.node().guid());
  v1::NodeRef by_port_guid;
  by_port_guid.set_guid(topo().port(node("h-l5-2"), 1).guid.value);
  ASSERT_TRUE(get(by_port_guid, &ca2).ok());
  EXPECT_EQ(ca2.node().guid(), ca.node().guid());

  v1::GetNodeResponse r;
  v1::NodeRef unknown;
  unknown.set_name("leaf99");
  auto s = get(unknown, &r);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("leaf99"), std::string::npos);
  v1::NodeRef bad_guid;
  bad_guid.set_guid(0x1234);
  EXPECT_EQ(get(bad_guid, &r).error_code(), StatusCode::NOT_FOUND);
  v1::NodeRef bad_lid;
  bad_lid.set_lid(0xB000);
  s = get(bad_lid, &r);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("LID 45056"), std::string::npos) << s.error_message();
  s = get(v1::NodeRef{}, &r);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("node:", 0), 0u) << s.error_message();
  grpc::ClientContext ctx;
  set_deadline(ctx);
  s = stub->GetNode(&ctx, v1::GetNodeRequest{}, &r);  // no node at all
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "node: required");
}

TEST_F(Api, ListLinksPagesAndFilters) {
  start();
  auto stub = unix_stub();
  std::set<std::pair<std::uint64_t, std::uint32_t>> seen;
  std::string token;
  do {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::ListLinksRequest req;
    req.set_page_size(7);
    req.set_page_token(token);
    v1::ListLinksResponse r;
    ASSERT_TRUE(stub->ListLinks(&ctx, req, &r).ok());
    EXPECT_EQ(r.total_size(), 64u);
    for (const auto& l : r.links()) {
      EXPECT_LT(l.a().node_guid(), l.b().node_guid());
      EXPECT_TRUE(seen.insert({l.a().node_guid(), l.a().port()}).second);
    }
    token = r.next_page_token();
  } while (!token.empty());
  EXPECT_EQ(seen.size(), 64u);

  grpc::ClientContext ctx;
  set_deadline(ctx);
  v1::ListLinksRequest req;
  req.mutable_node()->set_name("spine2");
  v1::ListLinksResponse r;
  ASSERT_TRUE(stub->ListLinks(&ctx, req, &r).ok());
  EXPECT_EQ(r.links_size(), 8);  // one to every leaf
  grpc::ClientContext ctx2;
  set_deadline(ctx2);
  v1::ListLinksRequest bad;
  bad.set_page_token("n1.0000000000000001");  // a ListNodes token
  EXPECT_EQ(stub->ListLinks(&ctx2, bad, &r).error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(Api, ForwardingTableStreamEqualsTheLft) {
  start();
  auto stub = unix_stub();
  const NodeId leaf = node("leaf4");
  const routing::Lft& lft = state_->routes->lfts[topo().node(leaf).switch_index.value];
  grpc::ClientContext ctx;
  set_deadline(ctx);
  v1::GetForwardingTableRequest req;
  req.mutable_node()->set_lid(lid_of("leaf4", 0).value);
  auto reader = stub->GetForwardingTable(&ctx, req);
  v1::ForwardingTableBlock b;
  std::uint32_t expect_block = 0;
  std::string table;
  while (reader->Read(&b)) {
    EXPECT_EQ(b.block(), expect_block++);
    EXPECT_EQ(b.switch_guid(), guid("leaf4").value);
    EXPECT_EQ(b.linear_fdb_top(), state_->lids->max_lid.value);
    ASSERT_EQ(b.ports().size(), 64u);
    table += b.ports();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(expect_block, state_->lids->max_lid.value / 64 + 1);
  for (std::uint32_t l = 0; l < table.size(); ++l) {
    ASSERT_EQ(static_cast<std::uint8_t>(table[l]), lft.get(Lid{l})) << "LID " << l;
  }
  // Every CA LID is routed (not 255) somewhere in the table.
  EXPECT_NE(static_cast<std::uint8_t>(table[lid_of("h-l0-0").value]), routing::kDropPort);

  const auto status_of = [&](v1::NodeRef ref) {
    grpc::ClientContext c;
    set_deadline(c);
    v1::GetForwardingTableRequest r;
    *r.mutable_node() = std::move(ref);
    auto rd = stub->GetForwardingTable(&c, r);
    v1::ForwardingTableBlock ignored;
    while (rd->Read(&ignored)) {
    }
    return rd->Finish();
  };
  v1::NodeRef ca;
  ca.set_name("h-l1-1");
  auto s = status_of(ca);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("not a switch"), std::string::npos);
  v1::NodeRef missing;
  missing.set_name("nope");
  EXPECT_EQ(status_of(missing).error_code(), StatusCode::NOT_FOUND);
}

TEST_F(Api, TracePathEqualsPathTrace) {
  start();
  auto stub = unix_stub();
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"h-l0-0", "h-l7-3"}, {"h-l2-1", "h-l2-3"}, {"h-l6-0", "spine1"}, {"leaf1", "h-l4-2"}};
  for (const auto& [from, to] : pairs) {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::TracePathRequest req;
    req.mutable_source()->set_name(from);
    req.mutable_destination()->set_guid(guid(to).value);
    v1::TracePathResponse r;
    auto s = stub->TracePath(&ctx, req, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    const bool from_switch = topo().node(node(from)).type == routing::NodeType::kSwitch;
    const bool to_switch = topo().node(node(to)).type == routing::NodeType::kSwitch;
    const PortRef src{node(from), static_cast<PortNum>(from_switch ? 0 : 1)};
    const Lid dlid = lid_of(to, to_switch ? 0 : 1);
    auto oracle = routing::trace_path(topo(), *state_->lids, *state_->routes, src, dlid);
    ASSERT_TRUE(oracle.ok());
    ASSERT_TRUE(oracle->complete());
    EXPECT_TRUE(r.complete()) << r.message();
    EXPECT_EQ(r.destination_lid(), dlid.value);
    EXPECT_EQ(r.source_lid(), lid_of(from, from_switch ? 0 : 1).value);
    ASSERT_EQ(static_cast<std::size_t>(r.hops_size()), oracle->hops.size()) << from << "->" << to;
    for (std::size_t i = 0; i < oracle->hops.size(); ++i) {
      const auto& h = r.hops(static_cast<int>(i));
      const routing::TraceHop& o = oracle->hops[i];
      EXPECT_EQ(h.node_guid(), topo().node(o.node).guid.value);
      EXPECT_EQ(h.node_name(), topo().node(o.node).description);
      EXPECT_EQ(h.in_port(), o.in_port);
      EXPECT_EQ(h.out_port(), o.out_port);
    }
    EXPECT_EQ(r.hops(0).lid(), r.source_lid());
    EXPECT_EQ(r.hops(r.hops_size() - 1).lid(), r.destination_lid());
  }

  const auto trace = [&](v1::TracePathRequest req, v1::TracePathResponse* r) {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    return stub->TracePath(&ctx, req, r);
  };
  v1::TracePathResponse r;
  v1::TracePathRequest no_src;
  no_src.mutable_destination()->set_name("leaf0");
  auto s = trace(no_src, &r);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "source: required");
  v1::TracePathRequest unknown;
  unknown.mutable_source()->set_name("h-l0-0");
  unknown.mutable_destination()->set_lid(0xBFFF);
  s = trace(unknown, &r);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message().rfind("destination:", 0), 0u) << s.error_message();
  v1::TracePathRequest bad_port;
  bad_port.mutable_source()->set_name("h-l0-0");
  bad_port.mutable_source()->set_port(3);
  bad_port.mutable_destination()->set_name("leaf0");
  s = trace(bad_port, &r);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("source.port:", 0), 0u) << s.error_message();
}

TEST_F(Api, TracePathReportsWhereAPacketIsLost) {
  // Publish tables with a drop entry at leaf2 for h-l6-1's LID.
  auto broken = std::make_shared<state::FabricState>(*state_);
  auto routes = std::make_shared<routing::Routes>(*state_->routes);
  routes->lfts[topo().node(node("leaf2")).switch_index.value].set(lid_of("h-l6-1"),
                                                                  routing::kDropPort);
  broken->routes = routes;
  broken->generation = 8;
  publisher_.publish(broken);
  start();
  auto stub = unix_stub();
  grpc::ClientContext ctx;
  set_deadline(ctx);
  v1::TracePathRequest req;
  req.mutable_source()->set_name("h-l2-0");
  req.mutable_destination()->set_name("h-l6-1");
  v1::TracePathResponse r;
  ASSERT_TRUE(stub->TracePath(&ctx, req, &r).ok());
  EXPECT_FALSE(r.complete());
  EXPECT_NE(r.message().find("leaf2"), std::string::npos) << r.message();
  ASSERT_EQ(r.hops_size(), 2);
  EXPECT_EQ(r.hops(1).node_name(), "leaf2");
  EXPECT_EQ(r.generation(), 8u);
}

// ---------------------------------------------------------------------------
// Before the first sweep

TEST_F(Api, FailedPreconditionBeforeTheFirstSweep) {
  publisher_.publish(std::make_shared<state::FabricState>());
  start();
  auto stub = unix_stub();
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::GetStatusResponse r;
    ASSERT_TRUE(stub->GetStatus(&ctx, {}, &r).ok());
    EXPECT_EQ(r.state(), v1::SM_STATE_DISCOVERING);
    EXPECT_EQ(r.nodes(), 0u);
    EXPECT_FALSE(r.has_last_sweep());
  }
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::ListNodesResponse r;
    auto s = stub->ListNodes(&ctx, {}, &r);
    EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("no sweep has finished yet"), std::string::npos);
  }
  {
    // A light sweep has nothing to compare with: refused before the SM is asked.
    v1::TriggerSweepResponse r;
    auto s = light_sweep(*stub, /*wait=*/true, &r);
    EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("no sweep has finished yet"), std::string::npos);
    std::lock_guard lock(sm_.mu);
    EXPECT_TRUE(sm_.light_sweeps.empty());
  }
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::TracePathRequest req;
    req.mutable_source()->set_name("a");
    req.mutable_destination()->set_name("b");
    v1::TracePathResponse r;
    EXPECT_EQ(stub->TracePath(&ctx, req, &r).error_code(), StatusCode::FAILED_PRECONDITION);
  }
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::GetNodeRequest req;
    req.mutable_node()->set_name("a");
    v1::GetNodeResponse r;
    EXPECT_EQ(stub->GetNode(&ctx, req, &r).error_code(), StatusCode::FAILED_PRECONDITION);
  }
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::GetForwardingTableRequest req;
    req.mutable_node()->set_name("a");
    auto rd = stub->GetForwardingTable(&ctx, req);
    v1::ForwardingTableBlock b;
    EXPECT_FALSE(rd->Read(&b));
    EXPECT_EQ(rd->Finish().error_code(), StatusCode::FAILED_PRECONDITION);
  }
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    v1::VerifyRoutingResponse r;
    EXPECT_EQ(stub->VerifyRouting(&ctx, {}, &r).error_code(), StatusCode::FAILED_PRECONDITION);
  }
}

// ---------------------------------------------------------------------------
// Health and reflection, through the generic stub (no generated client here)

TEST_F(Api, HealthAndReflection) {
  start();
  grpc::GenericStub generic(unix_channel());
  {
    grpc::ClientContext ctx;
    set_deadline(ctx);
    grpc::Slice empty("");  // HealthCheckRequest{service: ""} serialises to nothing
    grpc::ByteBuffer req(&empty, 1), resp;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &req, &resp,
                      [&](grpc::Status s) { done.set_value(s); });
    ASSERT_TRUE(done.get_future().get().ok());
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(resp.Dump(&slices).ok());
    std::string bytes;
    for (auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // status: SERVING
  }
  {
    grpc::CompletionQueue cq;
    grpc::ClientContext ctx;
    set_deadline(ctx);
    auto call = generic.PrepareCall(
        &ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
    const auto next = [&cq](std::intptr_t want) {
      void* tag = nullptr;
      bool ok = false;
      EXPECT_TRUE(cq.Next(&tag, &ok));
      EXPECT_EQ(reinterpret_cast<std::intptr_t>(tag), want);
      return ok;
    };
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(next(1));
    // ServerReflectionRequest{list_services: ""}: field 7, length 0.
    grpc::Slice slice(std::string("\x3a\x00", 2));
    grpc::ByteBuffer req(&slice, 1);
    call->Write(req, reinterpret_cast<void*>(2));
    ASSERT_TRUE(next(2));
    grpc::ByteBuffer resp;
    call->Read(&resp, reinterpret_cast<void*>(3));
    ASSERT_TRUE(next(3));
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(resp.Dump(&slices).ok());
    std::string bytes;
    for (auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    EXPECT_NE(bytes.find("subnet.v1.SubnetManager"), std::string::npos);
    EXPECT_NE(bytes.find("subnet.v1.Simulator"), std::string::npos);
    EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
    call->WritesDone(reinterpret_cast<void*>(4));
    next(4);
    grpc::Status st;
    call->Finish(&st, reinterpret_cast<void*>(5));
    next(5);
    EXPECT_TRUE(st.ok()) << st.error_message();
    cq.Shutdown();
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {
    }
  }
}

}  // namespace
}  // namespace subnetd::api

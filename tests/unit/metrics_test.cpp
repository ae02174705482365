// api::Metrics and MetricsServer: what a scrape says about a published
// fabric, histograms fed by publishes, and the HTTP listener.

#include "api/metrics.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <sstream>

#include "api_test_support.hpp"

namespace subnetd::api {
namespace {

class FakeSa final : public state::SaInfo {
 public:
  state::SaStats sa_stats() const override {
    state::SaStats s;
    s.requests = 41;
    s.errors = 2;
    s.records = 90;
    s.subscriptions = 3;
    return s;
  }
  std::uint8_t packet_life_time() const override { return 18; }
  std::uint64_t subnet_prefix() const override { return 0xfe80000000000000ULL; }
};

// The value of the one series of `text` whose name and labels are `series`
// exactly (e.g. `subnetd_nodes{type="switch"}`); NaN when absent.
double value_of(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nan("");
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = make_state("fat-tree:levels=2,radix=8");
    ASSERT_TRUE(s);
    publisher.publish(s);
    sm.mad.sent = 1141;
    sm.mad.timeouts = 4;
    sm.mad.retries = 9;
    metrics = std::make_shared<Metrics>(MetricsSources{&publisher, &sm, &sa, "9.9"});
  }

  state::StatePublisher publisher;
  FakeSm sm;
  FakeSa sa;
  std::shared_ptr<Metrics> metrics;
};

TEST_F(MetricsTest, AScrapeDescribesThePublishedFabric) {
  const std::string text = metrics->scrape();
  EXPECT_EQ(value_of(text, R"(subnetd_sm_state{state="MASTER"})"), 1);
  EXPECT_EQ(value_of(text, R"(subnetd_sm_state{state="FAILED"})"), 0);
  EXPECT_EQ(value_of(text, R"(subnetd_nodes{type="switch"})"), 12);
  EXPECT_EQ(value_of(text, R"(subnetd_nodes{type="ca"})"), 32);
  // 2-level radix-8: 32 CA cables + 8 leaves x 4 spines.
  EXPECT_EQ(value_of(text, R"(subnetd_links{state="active"})") +
                value_of(text, R"(subnetd_links{state="not_active"})"),
            64);
  EXPECT_EQ(value_of(text, "subnetd_lids"), 44);
  EXPECT_EQ(value_of(text, "subnetd_sweeps_total"), 1);
  EXPECT_EQ(value_of(text, "subnetd_verification_ok"), 1);
  EXPECT_EQ(value_of(text, "subnetd_mads_sent_total"), 1141);
  EXPECT_EQ(value_of(text, "subnetd_mad_timeouts_total"), 4);
  EXPECT_EQ(value_of(text, "subnetd_mad_retries_total"), 9);
  EXPECT_EQ(value_of(text, "subnetd_sa_requests_total"), 41);
  EXPECT_EQ(value_of(text, "subnetd_sa_subscriptions"), 3);
  EXPECT_NE(text.find(R"(subnetd_build_info{version="9.9",transport="sim",engine="updn"} 1)"),
            std::string::npos)
      << text;
  // Every family has HELP and TYPE lines.
  EXPECT_NE(text.find("# TYPE subnetd_links gauge"), std::string::npos);
  EXPECT_NE(text.find("# TYPE subnetd_mads_sent_total counter"), std::string::npos);
}

TEST_F(MetricsTest, PublishesFeedTheHistogramsOncePerSweepAndRepair) {
  auto s = std::make_shared<state::FabricState>(*publisher.current());
  metrics->observe(*s);  // baseline: the one sweep it shows counts once
  metrics->observe(*s);  // the same snapshot again: nothing new
  const std::string sweep_count = R"(subnetd_bringup_phase_duration_seconds_count{phase="total"})";
  EXPECT_EQ(value_of(metrics->scrape(), sweep_count), 1);

  s->sweeps = 2;
  s->last_bringup.total = 3s;
  metrics->observe(*s);
  s->reroutes = 1;
  s->last_reroute = 700us;
  metrics->observe(*s);
  const std::string text = metrics->scrape();
  EXPECT_EQ(value_of(text, sweep_count), 2);
  EXPECT_DOUBLE_EQ(value_of(text, R"(subnetd_bringup_phase_duration_seconds_sum{phase="total"})"),
                   3.009);
  EXPECT_EQ(
      value_of(text, R"(subnetd_bringup_phase_duration_seconds_bucket{phase="total",le="2.5"})"),
      1);
  EXPECT_EQ(value_of(text, "subnetd_reroute_duration_seconds_count"), 1);
  EXPECT_EQ(value_of(text, R"(subnetd_reroute_duration_seconds_bucket{le="0.0005"})"), 0);
  EXPECT_EQ(value_of(text, R"(subnetd_reroute_duration_seconds_bucket{le="0.001"})"), 1);
}

TEST_F(MetricsTest, PortErrorSeriesAreBoundedToTheTopPorts) {
  state::CounterBoard board;
  auto snap = std::make_shared<state::PortCounterSnapshot>();
  snap->sweep = 3;
  snap->ports_read = 3;
  for (std::uint64_t i = 1; i <= 3; ++i) {
    state::PortCounterEntry e;
    e.node_guid = Guid{0x100 + i};
    e.port = static_cast<PortNum>(i);
    e.total.symbol_errors = i * 10;  // 10, 20, 30
    e.total.xmit_bytes = 1000;
    snap->ports.push_back(e);
  }
  board.publish(snap);
  MetricsSources src{&publisher, &sm, &sa, "9.9", &board};
  src.top_ports = 2;
  const std::string text = Metrics(src).scrape();
  EXPECT_EQ(value_of(text, "subnetd_counter_sweeps_total"), 3);
  EXPECT_EQ(value_of(text, "subnetd_fabric_port_errors_total"), 60);
  EXPECT_EQ(value_of(text, "subnetd_fabric_xmit_bytes_total"), 3000);
  EXPECT_EQ(value_of(text, "subnetd_ports_with_errors"), 3);
  EXPECT_EQ(value_of(text, R"(subnetd_port_errors_total{node_guid="0x0000000000000103",port="3"})"),
            30);
  EXPECT_EQ(value_of(text, R"(subnetd_port_errors_total{node_guid="0x0000000000000102",port="2"})"),
            20);
  EXPECT_EQ(text.find("0x0000000000000101"), std::string::npos) << "beyond top_ports";
}

// One HTTP/1.0 GET on 127.0.0.1:port; the whole answer.
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "connect failed";
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  EXPECT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

TEST_F(MetricsTest, TheServerAnswersScrapesOnThePortItPicked) {
  auto server = MetricsServer::start("127.0.0.1:0", metrics);
  ASSERT_TRUE(server.ok()) << server.error().message;
  ASSERT_GT((*server)->port(), 0);
  const std::string answer = http_get((*server)->port(), "/metrics");
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer;
  EXPECT_NE(answer.find(R"(subnetd_nodes{type="switch"} 12)"), std::string::npos) << answer;
}

TEST_F(MetricsTest, AnAddressThatCannotBeBoundIsAnErrorNamingIt) {
  auto first = MetricsServer::start("127.0.0.1:0", metrics);
  ASSERT_TRUE(first.ok()) << first.error().message;
  const std::string taken = fmt::format("127.0.0.1:{}", (*first)->port());
  auto second = MetricsServer::start(taken, metrics);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("metrics.listen \"" + taken + "\""), std::string::npos)
      << second.error().message;
}

}  // namespace
}  // namespace subnetd::api

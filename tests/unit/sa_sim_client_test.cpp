// The SA end to end on the simulated fabric: simulated CAs send SA MADs
// over the fabric (forwarded by the tables the SM programmed) to the SM's
// port, where subnetd's SA answers them, multi-packet answers in RMPP
// segments; an application joins the IPoIB broadcast group, registers a
// service, subscribes to notices and hears of a pulled cable by a Report,
// which it acknowledges; a GMP whose way is cut is lost, not delivered.

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "daemon/sa/reporter.hpp"
#include "daemon/sa/sa_agent.hpp"
#include "daemon_test_support.hpp"
#include "discovery/mad/bytes.hpp"
#include "discovery/mad/sa.hpp"
#include "routing_test_support.hpp"
#include "sa_test_support.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::daemon {
namespace {

using namespace std::chrono_literals;
namespace mad = discovery::mad::sa;
using mad::Attr;
using mad::Method;
using state::FabricState;

struct Harness {
  std::unique_ptr<discovery::sim::SimFabric> sim;
  state::StatePublisher publisher;
  state::EventLog events{0, {}, {}};
  routing::WorkerPool pool{2};
  state::McastRegistry registry;
  sa::SaAgent agent{{}, &registry};
  std::unique_ptr<sa::Reporter> reporter;
  boost::asio::io_context io;
  std::unique_ptr<SubnetManager> sm;
  std::thread thread;

  explicit Harness(const std::string& spec) {
    auto topo = discovery::topo::generate(spec);
    EXPECT_TRUE(topo.ok());
    auto s = discovery::sim::SimFabric::create(std::move(topo).value(), {});
    EXPECT_TRUE(s.ok());
    sim = std::move(s).value();
    // As subnetd_main wires them: the SA on the transport's GMP class,
    // Reports through its send_gmp.
    EXPECT_TRUE(sim->serve_gmp_class(mad::kMgmtClass,
                                     [this](std::span<const discovery::GmpRequest> requests) {
                                       std::vector<sa::SaAgent::SaRequest> reqs;
                                       for (const auto& r : requests) {
                                         reqs.push_back({r.bytes, Lid{r.slid}});
                                       }
                                       return agent.answer_many(reqs, *publisher.current());
                                     })
                    .ok());
    reporter = std::make_unique<sa::Reporter>(agent, publisher, [this](const sa::Report& r) {
      return sim->send_gmp(r.dlid, r.qpn, r.mad);
    });
    Config cfg;
    cfg.fabric.topology = spec;
    cfg.routing.engine = EngineKind::kAuto;
    cfg.sweep.interval = 0ms;
    TransportBundle bundle;
    bundle.transport = std::make_unique<testing::BorrowedSim>(*sim);
    SubnetManager::Hooks hooks;
    hooks.published = [this](const FabricState&) { reporter->wake(); };
    hooks.trap_received = [this](const discovery::mad::Notice& n) { reporter->forward(n); };
    FastPathOptions fast;
    fast.rebalance_delay = std::chrono::hours{1};
    sm = std::make_unique<SubnetManager>(io, cfg, std::move(bundle), nullptr,
                                         std::vector<routing::LidRecord>{}, publisher, events, pool,
                                         std::move(hooks), fast);
    sm->attach_multicast(&registry);
    sm->start();
    thread = std::thread([this] { io.run(); });
  }
  ~Harness() {
    testing::stop_on_thread(*sm, io, thread);
    reporter.reset();
  }

  std::shared_ptr<const FabricState> wait(const std::function<bool(const FabricState&)>& pred) {
    return publisher.wait_for(pred, 20s);
  }
  // `q` sent by CA port `from` to the SM's LID; what came back.
  std::vector<discovery::sim::SimFabric::GmpDelivery> ask(PortRef from, const mad::SaMad& q) {
    EXPECT_TRUE(sim->gmp_send(from, publisher.current()->sm_lid.value, mad::encode_sa(q)).ok());
    return sim->gmp_take(from);
  }
  std::uint16_t status(PortRef from, const mad::SaMad& q) {
    const auto got = ask(from, q);
    EXPECT_EQ(got.size(), 1U);
    return got.empty() ? 0xFFFF : mad::decode_sa(got.front().mad)->status;
  }
  void put_gid(mad::SaMad& q, std::size_t at, PortRef p) const {
    discovery::mad::store_be64(&q.data[at], 0xFE80'0000'0000'0000ULL);
    discovery::mad::store_be64(&q.data[at + 8], sim->topology().port(p).guid.value);
  }
};

using sa::sa_query;
using sa::sa_set;

TEST(SaSimClient, QueriesCrossTheFabricAndTablesComeInSegments) {
  Harness h("fat-tree:levels=2,radix=8");
  ASSERT_NE(h.wait(testing::master), nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  const auto cas = routing::testing::cabled_ca_ports(h.sim->topology());
  const PortRef client = cas.back();
  const auto segs = h.ask(client, sa_query(Method::kGetTable, Attr::kNodeRecord));
  ASSERT_GT(segs.size(), 1U) << "a NodeRecord table is more than one MAD";
  std::vector<std::array<std::uint8_t, mad::kMadSize>> raw;
  for (const auto& d : segs) {
    EXPECT_EQ(d.slid, h.publisher.current()->sm_lid.value) << "from the SM's port";
    raw.push_back(d.mad);
  }
  const auto bytes = mad::reassemble(raw);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  const routing::Topology& t = h.sim->topology();
  EXPECT_EQ(bytes->size() / (std::size_t{mad::layout_of(0x11)->attr_offset()} * 8),
            t.num_switches() + cas.size());
  EXPECT_GT(h.agent.stats().requests, 0U);
}

TEST(SaSimClient, JoinRegisterSubscribeAndHearOfAPulledCable) {
  Harness h("fat-tree:levels=2,radix=8");
  ASSERT_NE(h.wait(testing::master), nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  const auto cas = routing::testing::cabled_ca_ports(h.sim->topology());
  const routing::Topology& t = h.sim->topology();
  // Neither the application nor the port pulled is the SM's own.
  const PortRef sm_port{*t.find_by_guid(h.sim->local_port().node_guid),
                        h.sim->local_port().port_num};
  std::vector<PortRef> others;
  std::copy_if(cas.begin(), cas.end(), std::back_inserter(others),
               [&](const PortRef& p) { return p != sm_port; });
  ASSERT_GE(others.size(), 2U);
  const PortRef app = others.front(), pulled = others.back();

  // IPoIB's join of the broadcast group the SM created.
  mad::SaMad join =
      sa_query(Method::kSet, Attr::kMcMemberRecord, (1ULL << 0) | (1ULL << 1) | (1ULL << 16));
  const state::Mgid bcast = state::ipoib_broadcast_mgid(0x7FFF);
  std::copy(bcast.begin(), bcast.end(), join.data.begin());
  h.put_gid(join, 16, app);
  sa_set(join, "JoinState", 1);
  ASSERT_EQ(h.status(app, join), 0);
  const Guid app_guid = t.port(app).guid;
  ASSERT_NE(h.wait([&](const FabricState& s) {
    if (!s.mcast_groups) return false;
    return std::any_of(s.mcast_groups->begin(), s.mcast_groups->end(),
                       [&](const state::McastGroup& g) { return g.members.count(app_guid) != 0; });
  }),
            nullptr);

  // A service, for itself.
  mad::SaMad svc = sa_query(Method::kSet, Attr::kServiceRecord, 0x7);
  sa_set(svc, "ServiceID", 0x1000);
  h.put_gid(svc, 8, app);
  sa_set(svc, "ServiceP_Key", 0xFFFF);
  ASSERT_EQ(h.status(app, svc), 0);

  // Every notice.
  ASSERT_EQ(h.status(app, sa::sa_inform()), 0);

  const std::uint64_t before = h.publisher.current()->generation;
  ASSERT_TRUE(h.sim->link_down(pulled).ok());
  ASSERT_NE(h.wait([&](const FabricState& s) { return s.generation > before; }), nullptr);
  // The Reports arrive at the application: trap 65 names the lost GID.
  bool heard = false;
  while (!heard) {
    const auto d = h.sim->gmp_wait(app, 20s);
    ASSERT_TRUE(d.has_value()) << "no Report reached the subscriber";
    const auto m = mad::decode_sa(d->mad);
    ASSERT_TRUE(m.ok());
    ASSERT_EQ(m->method, static_cast<std::uint8_t>(Method::kReport));
    EXPECT_EQ(d->slid, h.publisher.current()->sm_lid.value);
    if (discovery::mad::load_be16(&m->data[4]) != 65) continue;
    EXPECT_EQ(discovery::mad::load_be64(&m->data[24]), t.port(pulled).guid.value);
    heard = true;
    mad::SaMad ack = *m;
    ack.method = static_cast<std::uint8_t>(Method::kReportResp);
    ASSERT_TRUE(h.sim->gmp_send(app, d->slid, mad::encode_sa(ack)).ok());
    for (const auto& other : h.sim->gmp_take(app)) {  // more Reports, perhaps; no answer
      EXPECT_EQ(mad::decode_sa(other.mad)->method, static_cast<std::uint8_t>(Method::kReport));
    }
  }
  EXPECT_EQ(h.agent.stats().report_acks, 1U);
  // Not reporter->sent(): the simulator delivers a Report inside send(), before
  // the Reporter counts it (TSan's run caught the test reading it in between).

  // The pulled port's own GMPs go nowhere now.
  const auto lost = h.sim->stats().gmp_lost;
  EXPECT_TRUE(h.ask(pulled, sa_query(Method::kGet, Attr::kClassPortInfo)).empty());
  EXPECT_EQ(h.sim->stats().gmp_lost, lost + 1);
}

TEST(SaSimClient, ATrapAPortSendsReachesItsSubscriberOnce) {
  Harness h("fat-tree:levels=2,radix=8");
  ASSERT_NE(h.wait(testing::master), nullptr);
  ASSERT_TRUE(testing::wait_idle(*h.sm));
  const routing::Topology& t = h.sim->topology();
  const PortRef sm_port{*t.find_by_guid(h.sim->local_port().node_guid),
                        h.sim->local_port().port_num};
  std::vector<PortRef> others;
  for (const PortRef& p : routing::testing::cabled_ca_ports(t)) {
    if (p != sm_port) others.push_back(p);
  }
  ASSERT_GE(others.size(), 2U);
  const PortRef app = others.front(), issuer = others.back();
  // Bad P_Key and bad Q_Key notices.
  ASSERT_EQ(h.status(app, sa::sa_inform(true, 257)), 0);
  ASSERT_EQ(h.status(app, sa::sa_inform(true, 258)), 0);

  // The issuer's SMA traps a bad P_Key, resends it (as when the SM's
  // TrapRepress is lost), then traps a bad Q_Key.
  discovery::mad::Notice trap;
  trap.type = 2;
  trap.producer_type = 1;
  trap.trap_number = 257;
  trap.data_details[3] = 0x42;
  const auto tid = h.sim->send_trap(issuer, trap);
  ASSERT_TRUE(tid.ok()) << tid.error().message;
  ASSERT_TRUE(h.sim->send_trap(issuer, trap, *tid).ok());
  trap.trap_number = 258;
  ASSERT_TRUE(h.sim->send_trap(issuer, trap).ok());

  // Each reaches the application once, in order, with the issuer's LID
  // and GID and the details as sent.
  const std::uint32_t issuer_lid =
      h.publisher.current()->lids->base_lid(t, issuer.node, issuer.port).value;
  std::vector<std::uint16_t> heard;
  while (heard.empty() || heard.back() != 258) {
    const auto d = h.sim->gmp_wait(app, 20s);
    ASSERT_TRUE(d.has_value()) << "Reports heard: " << heard.size();
    const auto m = mad::decode_sa(d->mad);
    ASSERT_TRUE(m.ok());
    ASSERT_EQ(m->method, static_cast<std::uint8_t>(Method::kReport));
    const auto n = discovery::mad::Notice::decode(discovery::mad::ConstSmpData(m->data.data(), 64));
    heard.push_back(n.trap_number);
    EXPECT_EQ(n.issuer_lid, issuer_lid);
    EXPECT_EQ(n.data_details[3], 0x42);
    EXPECT_EQ(discovery::mad::load_be64(&m->data[64 + 8]), t.port(issuer).guid.value);
  }
  EXPECT_EQ(heard, (std::vector<std::uint16_t>{257, 258}));
}

}  // namespace
}  // namespace subnetd::daemon

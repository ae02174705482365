// Light sweeps of the SubnetManager over the embedded simulator, periodic and
// on demand (SmControl::trigger_light_sweep, which TriggerSweep LIGHT calls).
//
// Every trap is "lost" here: the SM's fast-path hook swallows trap 128 and the
// built-in fast path is off, so a pulled cable or a powered-off switch is
// seen only when a light sweep reads the switches' SwitchInfo — the case
// light sweeps exist for. The SM runs on its own io thread, as in the daemon,
// built the way subnetd builds it (make_transport from a Config); the test
// pulls cables through the SimControl the daemon exposes and reads the
// published FabricState, the event log and the store.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "daemon/store.hpp"
#include "daemon/subnet_manager.hpp"
#include "daemon/transport_factory.hpp"
#include "daemon_test_support.hpp"
#include "state/event_log.hpp"

namespace subnetd::daemon {
namespace {

using namespace subnetd::state;

using namespace std::chrono_literals;

constexpr const char* kFabric = "fat-tree:levels=2,radix=8";  // 12 switches

class Daemon {
 public:
  // `light_interval` 0: no periodic light sweeps.
  explicit Daemon(std::chrono::milliseconds light_interval) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lightXXXXXX").string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto store = Store::open((dir_ / "subnetd.db").string());
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
    if (store.ok()) {
      store_ = std::make_unique<StoreWriter>(std::move(store).value(), [](const Error& e) {
        ADD_FAILURE() << "store write: " << e.message;
      });
    }
    Config cfg;
    cfg.fabric.transport = TransportKind::kSim;
    cfg.fabric.topology = kFabric;
    cfg.sweep.interval = light_interval;
    cfg.sweep.timeout = 20ms;  // a powered-off switch costs (retries + 1) timeouts
    cfg.routing.threads = 1;
    auto bundle = make_transport(cfg);
    EXPECT_TRUE(bundle.ok()) << (bundle.ok() ? "" : bundle.error().message);
    SubnetManager::Hooks hooks;
    hooks.fast_path = [this](const TrapEvent&) {
      ++traps_lost;
      return true;  // "handled": lost on its way, nothing follows from it
    };
    FastPathOptions fast;
    fast.enabled = false;
    // The SM's timers (the light-sweep period) run on a manual clock: the
    // test says when a period has passed.
    sm = std::make_unique<SubnetManager>(io_, cfg, std::move(bundle).value(), store_.get(),
                                         std::vector<routing::LidRecord>{}, publisher, events,
                                         pool_, std::move(hooks), fast, &clock);
  }
  ~Daemon() {
    stop();
    sm.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void start() {
    sm->start();
    thread_ = std::thread([this] { io_.run(); });
  }
  void stop() {
    if (sm) testing::stop_on_thread(*sm, io_, thread_);
  }

  // Polls the published state until `pred` holds (true) or 20 s pass.
  bool wait_for(const std::function<bool(const FabricState&)>& pred) {
    return testing::wait_for_state(publisher, pred);
  }

  Result<SweepReply> light_sweep() {
    auto fut = testing::sm_call<Result<SweepReply>>(
        [&](auto done) { sm->trigger_light_sweep("test", std::move(done)); });
    if (fut.wait_for(20s) != std::future_status::ready) {
      return Error{Errc::kTimeout, "no answer to the light sweep in 20 s"};
    }
    return fut.get();
  }

  // The first port of switch `name` cabled to a CA other than the SM's. A
  // CA link, so that cutting it changes no directed route to a switch: the
  // switch still answers and reports PortStateChange.
  std::pair<Guid, PortNum> ca_link_of(std::string_view name) const {
    const FabricState& s = *publisher.current();
    const routing::Topology& t = *s.topology;
    const NodeId n = *t.find_by_name(name);
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      const routing::Port& port = t.port(n, static_cast<PortNum>(p));
      if (port.connected() && t.node(port.remote_node).type == routing::NodeType::kCa &&
          port.remote_node != s.sm_node) {
        return {t.node(n).guid, static_cast<PortNum>(p)};
      }
    }
    ADD_FAILURE() << name << " has no CA link";
    return {};
  }

  std::vector<SweepRecord> stored_sweeps() {
    store_->flush();
    auto r = store_->call([](Store& s) { return s.recent_sweeps(100); }).get();
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(r).value() : std::vector<SweepRecord>{};
  }

  std::vector<Event> events_of(EventKind kind) {
    std::vector<Event> out;
    for (const Event& e : events.recent_since(0, 100000).value_or(std::vector<Event>{})) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }

  // One light-sweep period passes; returns once the SM is idle again.
  bool next_period(std::chrono::milliseconds interval) {
    clock.advance(interval);
    return testing::wait_idle(*sm);
  }

  ManualClock clock;
  StatePublisher publisher;
  EventLog events{0, {}, {}};
  std::unique_ptr<SubnetManager> sm;
  std::atomic<int> traps_lost{0};

 private:
  std::filesystem::path dir_;
  std::unique_ptr<StoreWriter> store_;
  routing::WorkerPool pool_{1};
  boost::asio::io_context io_;
  std::thread thread_;
};

bool master(const FabricState& s) {
  return s.state == SmState::kMaster && s.routes != nullptr;
}

bool connected(const FabricState& s, Guid node, PortNum port) {
  const routing::Topology& t = *s.topology;
  auto n = t.find_by_guid(node);
  return n && t.port(*n, port).connected();
}

TEST(LightSweep, RefusedBeforeTheFirstHeavySweep) {
  Daemon d(0ms);
  // Queued on the strand ahead of start()'s bring-up.
  auto early = testing::sm_call<Result<SweepReply>>(
      [&](auto done) { d.sm->trigger_light_sweep("test", std::move(done)); });
  d.start();
  ASSERT_EQ(early.wait_for(20s), std::future_status::ready);
  auto r = early.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kUnreachable);
  EXPECT_NE(r.error().message.find("first heavy sweep has not finished"), std::string::npos)
      << r.error().message;
  // The bring-up itself was not disturbed.
  ASSERT_TRUE(d.wait_for(master));
  EXPECT_EQ(d.publisher.current()->sweeps, 1u);
}

TEST(LightSweep, OnAQuietFabricFindsNothingAndRunsNoHeavySweep) {
  Daemon d(0ms);
  d.start();
  ASSERT_TRUE(d.wait_for(master));
  const auto before = d.publisher.current();
  auto r = d.light_sweep();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->ok);
  ASSERT_TRUE(r->light.has_value());
  const LightSweepReport& l = *r->light;
  EXPECT_FALSE(l.found_change()) << l.change;
  EXPECT_EQ(l.switches, 12u);
  EXPECT_EQ(l.answered, 12u);
  EXPECT_EQ(l.changed, 0u);
  EXPECT_GT(l.took.count(), 0);
  EXPECT_EQ(r->message,
            "light sweep: no change; all 12 switches answered, none reports a port state change");
  EXPECT_EQ(r->generation, before->generation);
  const auto after = d.publisher.current();
  EXPECT_EQ(after->generation, before->generation) << "nothing was published";
  EXPECT_EQ(after->sweeps, 1u);
  // The operator's light sweep is in the sweep history.
  const auto stored = d.stored_sweeps();
  ASSERT_EQ(stored.size(), 2u);  // newest first
  EXPECT_EQ(stored[0].kind, SweepKind::kLight);
  EXPECT_EQ(stored[0].outcome, SweepOutcome::kOk);
  EXPECT_EQ(stored[0].switches, 12u);
  EXPECT_EQ(stored[0].message, "test: " + r->message);
  ASSERT_EQ(stored[0].phases.size(), 1u);
  EXPECT_EQ(stored[0].phases[0].name, "light");
  EXPECT_EQ(stored[1].kind, SweepKind::kHeavy);
}

TEST(LightSweep, OnDemandFindsCablesWhoseTrapsWereLostAndSweepsAtOnce) {
  Daemon d(0ms);
  d.start();
  ASSERT_TRUE(d.wait_for(master));
  const auto before = d.publisher.current();
  const auto [leaf3, port3] = d.ca_link_of("leaf3");
  const auto [leaf5, port5] = d.ca_link_of("leaf5");
  ASSERT_NE(d.sm->sim_control(), nullptr);
  ASSERT_TRUE(d.sm->sim_control()->set_link_state(leaf3, port3, false).ok());
  ASSERT_TRUE(d.sm->sim_control()->set_link_state(leaf5, port5, false).ok());
  // The traps arrive and are lost; nothing else happens on its own.
  ASSERT_TRUE(d.wait_for([&](const FabricState&) { return d.traps_lost >= 2; }));
  EXPECT_EQ(d.publisher.current()->generation, before->generation);

  auto r = d.light_sweep();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->light.has_value());
  const LightSweepReport& l = *r->light;
  EXPECT_TRUE(l.found_change());
  EXPECT_EQ(l.answered, 12u);
  EXPECT_EQ(l.changed, 2u);
  EXPECT_EQ(l.change.rfind("port state change on switch \"leaf", 0), 0u) << l.change;
  EXPECT_NE(l.change.find("(and 1 more switch(es) with a port state change)"), std::string::npos)
      << l.change;
  // The answer is the heavy sweep's, which has already published.
  EXPECT_TRUE(r->ok) << r->message;
  const auto after = d.publisher.current();
  EXPECT_EQ(r->generation, after->generation);
  EXPECT_GT(after->generation, before->generation);
  EXPECT_EQ(after->sweeps, 2u);
  EXPECT_TRUE(master(*after));
  EXPECT_FALSE(connected(*after, leaf3, port3)) << "the heavy sweep found the cable gone";
  EXPECT_FALSE(connected(*after, leaf5, port5));
  EXPECT_EQ(after->topology->num_cas(), before->topology->num_cas() - 2);
  const auto sweeps = d.events_of(EventKind::kSweep);
  ASSERT_EQ(sweeps.size(), 2u);
  EXPECT_NE(sweeps[1].message.find("(light sweep (test): port state change on switch \"leaf"),
            std::string::npos)
      << sweeps[1].message;
  EXPECT_EQ(d.events_of(EventKind::kLinkDown).size(), 2u);

  // The heavy sweep cleared PortStateChange: the next light sweep is quiet.
  auto again = d.light_sweep();
  ASSERT_TRUE(again.ok()) << again.error().message;
  ASSERT_TRUE(again->light.has_value());
  EXPECT_FALSE(again->light->found_change()) << again->light->change;
  EXPECT_EQ(again->generation, after->generation);
  EXPECT_EQ(d.publisher.current()->sweeps, 2u);
}

TEST(LightSweep, OnDemandNoticesAPoweredOffSwitch) {
  Daemon d(0ms);
  d.start();
  ASSERT_TRUE(d.wait_for(master));
  const routing::Topology& t = *d.publisher.current()->topology;
  const Guid spine = t.node(*t.find_by_name("spine2")).guid;
  ASSERT_TRUE(d.sm->sim_control()->set_switch_state(spine, false).ok());
  auto r = d.light_sweep();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->light.has_value());
  EXPECT_TRUE(r->light->found_change());
  EXPECT_LT(r->light->answered, r->light->switches) << "the powered-off switch is silent";
  EXPECT_TRUE(r->ok) << r->message;
  const auto after = d.publisher.current();
  EXPECT_EQ(after->sweeps, 2u);
  EXPECT_FALSE(after->topology->find_by_guid(spine).has_value());
  EXPECT_EQ(after->topology->num_switches(), 11u);
}

TEST(LightSweep, PeriodicFindsACableWhoseTrapWasLost) {
  Daemon d(30ms);
  d.start();
  ASSERT_TRUE(d.wait_for(master));
  // Captured through copies: clang 14 cannot capture a structured binding.
  const auto [guid, port] = d.ca_link_of("leaf1");
  ASSERT_TRUE(d.sm->sim_control()->set_link_state(guid, port, false).ok());
  ASSERT_TRUE(testing::wait_idle(*d.sm));
  EXPECT_EQ(d.publisher.current()->sweeps, 1u) << "the trap was lost: nothing happens yet";
  ASSERT_TRUE(d.next_period(30ms));  // the light sweep finds it; the heavy sweep follows
  ASSERT_TRUE(d.wait_for([&, leaf_guid = guid, leaf_port = port](const FabricState& s) {
    return s.sweeps >= 2 && master(s) && !connected(s, leaf_guid, leaf_port);
  })) << "no periodic light sweep escalated to a heavy sweep";
  const auto sweeps = d.events_of(EventKind::kSweep);
  ASSERT_GE(sweeps.size(), 2u);
  EXPECT_NE(sweeps[1].message.find("(light sweep: port state change on switch \"leaf1\")"),
            std::string::npos)
      << sweeps[1].message;
  EXPECT_GT(d.traps_lost.load(), 0);
  // The period goes on after the heavy sweep, finding nothing more.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(d.next_period(30ms));
  EXPECT_EQ(d.publisher.current()->sweeps, 2u);
}

}  // namespace
}  // namespace subnetd::daemon

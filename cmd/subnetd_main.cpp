// subnetd: the subnet manager daemon.
//
//   subnetd --config FILE            run as a service (systemd Type=notify)
//   subnetd --config FILE --once     one bring-up: sweep, LIDs, route, verify,
//                                    program, print a summary, exit 0 / non-zero
//
// Exceptions stop here (CLI11, yaml, protobuf); everything below returns Result.

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "api/auth.hpp"
#include "api/metrics.hpp"
#include "api/server.hpp"
#include "daemon/bringup.hpp"
#include "daemon/config.hpp"
#include "daemon/dump_files.hpp"
#include "daemon/proc_stats.hpp"
#include "daemon/sa/reporter.hpp"
#include "daemon/sa/sa_agent.hpp"
#include "daemon/screening/screener.hpp"
#include "daemon/store.hpp"
#include "daemon/subnet_manager.hpp"
#include "daemon/transport_factory.hpp"
#include "routing/grid_placement.hpp"
#include "routing/text.hpp"
#include "state/event_log.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::daemon;
using namespace subnetd::state;

// Exit codes: 0 ok, 1 bring-up failed, 2 usage, 3 config, 4 store, 5 transport, 6 API.
constexpr int kExitBringUp = 1;
constexpr int kExitConfig = 3;
constexpr int kExitStore = 4;
constexpr int kExitTransport = 5;
constexpr int kExitApi = 6;
// How long SIGTERM waits for the SM to wind down before ending the loop.
constexpr std::chrono::seconds kStopGrace{10};

// Command-line options that override the file. A reload re-reads the file
// and applies them again: for the life of the process the command line wins.
struct CliOverrides {
  std::string dump_dir;
  std::optional<EngineKind> engine;
  void apply(Config& cfg) const {
    if (!dump_dir.empty()) cfg.dump_dir = dump_dir;
    if (engine) cfg.routing.engine = *engine;
  }
};

Result<std::unique_ptr<Store>> open_store(const Config& cfg, bool reset) {
  std::error_code ec;
  const auto parent = std::filesystem::path(cfg.store.path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  OpenOptions opts;
  opts.reset = reset;
  return Store::open(cfg.store.path, opts);
}

// What --reset-store did, for the operator: where the old store went.
std::string reset_note(const Config& cfg, const Store& store) {
  if (store.moved_aside_to()) {
    return fmt::format(
        "store {}: --reset-store moved the old store (with its -wal/-shm files) "
        "aside to {}; starting with an empty store",
        cfg.store.path, *store.moved_aside_to());
  }
  return fmt::format("store {}: --reset-store: there was no store to move aside", cfg.store.path);
}

int run_once(const Config& cfg, bool reset_store) {
  const auto wall_start = std::chrono::steady_clock::now();
  auto store = open_store(cfg, reset_store);
  if (!store.ok()) {
    fmt::print(stderr, "subnetd: store: {}\n", store.error().message);
    return kExitStore;
  }
  if (reset_store) fmt::print("{}\n", reset_note(cfg, **store));
  auto remembered = (*store)->load_lids();
  if (!remembered.ok()) {
    fmt::print(stderr, "subnetd: store: {}\n", remembered.error().message);
    return kExitStore;
  }
  const auto t_build = std::chrono::steady_clock::now();
  auto bundle = make_transport(cfg);
  if (!bundle.ok()) {
    fmt::print(stderr, "subnetd: {}\n", bundle.error().message);
    return kExitTransport;
  }
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_build).count();
  discovery::Transport& transport = *bundle->transport;

  routing::WorkerPool pool(cfg.routing.threads != 0
                               ? cfg.routing.threads
                               : std::max(1U, std::thread::hardware_concurrency()));
  BringUpOptions opts = bring_up_options(cfg);
  opts.remembered_lids = std::move(remembered).value();
  auto grid = (*store)->load_grid_placement();
  if (grid.ok()) {
    opts.previous_grid = *grid;
  } else {
    fmt::print(stderr, "subnetd: store: {}; the grid is placed afresh\n", grid.error().message);
  }
  // The LIDs are on disk before any port is programmed with them.
  bool store_failed = false;
  opts.persist_lids = [&store, &store_failed](const routing::LidAssignment& lids) -> Result<void> {
    auto saved = (*store)->save_lids(lids.changed, std::span<const std::uint8_t>(lids.changed_lmc));
    store_failed = !saved.ok();
    return saved;
  };
  auto result = BringUp::run_blocking(transport, pool, opts);
  if (!result.ok()) {
    fmt::print(stderr, "subnetd: {}{}\n", store_failed ? "store: " : "", result.error().message);
    return store_failed ? kExitStore : kExitBringUp;
  }
  if (const auto& placed = result->routes->grid;
      !routing::same_placement(placed, opts.previous_grid)) {
    const routing::GridPlacement none;
    if (auto saved = (*store)->save_grid_placement(placed ? *placed : none); !saved.ok()) {
      fmt::print(stderr, "subnetd: store: {}\n", saved.error().message);
    }
  }
  fmt::print("{}", summarize(*result, transport.name()));
  if (!cfg.dump_dir.empty()) {
    auto dumped = write_dump_files(cfg.dump_dir, result->sweep.topology, result->lids.map,
                                   *result->routes, result->sweep.sm_node);
    if (!dumped.ok()) {
      fmt::print(stderr, "subnetd: {}\n", dumped.error().message);
      return kExitBringUp;
    }
    fmt::print("  dump files written to {}\n", cfg.dump_dir);
  }
  const double total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start)
          .count();
  fmt::print("  fabric build {:.1f} ms (simulator set-up, not part of the bring-up)\n", build_ms);
  fmt::print("  wall time {:.1f} ms, peak RSS {:.1f} MiB\n", total_ms,
             static_cast<double>(peak_rss_bytes()) / (1024.0 * 1024.0));
  for (const std::string& c : result->lids.conflicts) fmt::print("  LID conflict: {}\n", c);
  for (const std::string& u : result->lids.unusable_remembered) {
    fmt::print("  stored LID not usable: {}\n", u);
  }
  for (const std::string& u : result->sweep.unreachable) fmt::print("  unreachable: {}\n", u);
  for (const std::string& w : result->sweep.warnings) fmt::print("  warning: {}\n", w);
  return 0;
}

spdlog::level::level_enum spd_level(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

void setup_logging(LogLevel level) {
  auto logger = spdlog::stderr_color_mt("subnetd");
  // Under systemd, journald stamps each line; elsewhere we do.
  if (std::getenv("JOURNAL_STREAM") != nullptr) {
    logger->set_pattern("<%l> %v");
  } else {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spd_level(level));
}

std::string status_line(const state::FabricState& s) {
  if (s.state == state::SmState::kStandby || s.state == state::SmState::kNotActive) {
    const state::SmRoleView& r = s.sm_role;
    if (r.master_guid.value == 0)
      return fmt::format("{}: no master known", state::sm_state_name(s.state));
    return fmt::format("{}: the master is SM {:#018x} at LID {}", state::sm_state_name(s.state),
                       r.master_guid.value, r.master_lid.value);
  }
  if (!s.topology) {
    return fmt::format("{}: {}", state::sm_state_name(s.state),
                       s.last_error.empty() ? "sweeping the fabric" : s.last_error);
  }
  std::string line =
      fmt::format("{}: {} CAs, {} switches, routed in {:.1f} ms", state::sm_state_name(s.state),
                  s.topology->num_cas(), s.topology->num_switches(),
                  std::chrono::duration<double, std::milli>(s.last_bringup.route).count());
  if (!s.last_error.empty()) line += "; last sweep failed: " + s.last_error;
  return line;
}

// The files a config refers to, as the next start would use them: the
// config's own check, then the API's rules for the token itself.
Result<void> check_referenced_files(const Config& cfg) {
  SUBNETD_TRY(check_config_files(cfg));
  if (!cfg.api.token_file.empty()) {
    if (auto token = api::load_token_file(cfg.api.token_file); !token.ok()) return token.error();
  }
  return ok_result();
}

// SIGHUP: re-read the file; refuse it (keeping the running configuration)
// when it does not parse or a file it refers to is bad; otherwise apply what
// can change while running and name every changed key that needs a restart.
// `running` is the configuration in effect and is updated here.
void reload(const std::string& config_path, const CliOverrides& overrides, Config& running,
            SubnetManager& sm, screening::Screener& screener, state::EventLog& events) {
  auto next = load_config(config_path);
  if (next.ok()) overrides.apply(*next);
  Result<void> usable = next.ok() ? check_referenced_files(*next) : Result<void>(next.error());
  if (!usable.ok()) {
    spdlog::error("reload of {} refused, keeping the running configuration: {}", config_path,
                  usable.error().message);
    events.append(state::EventKind::kError, std::nullopt, std::nullopt,
                  fmt::format("configuration reload of {} refused, running configuration kept: {}",
                              config_path, usable.error().message));
    return;
  }
  ReloadPlan plan = plan_reload(running, *next);
  if (!plan.needs_restart.empty()) {
    const std::string msg = fmt::format(
        "configuration reload of {}: changes to {} need a restart and were not applied (the "
        "running values stay until then): {}",
        config_path, plan.needs_restart.size() == 1 ? "this key" : "these keys",
        plan.restart_summary());
    spdlog::warn("{}", msg);
    events.append(state::EventKind::kConfigReload, std::nullopt, std::nullopt, msg);
  }
  spdlog::set_level(spd_level(plan.effective.log.level));
  running = plan.effective;
  // The plan file is read again even when its name did not change: an
  // operator edits the plan and sends SIGHUP.
  if (running.screening.cabling_plan.empty()) {
    screener.set_plan(std::nullopt);
  } else if (auto cabling = screening::read_cabling_plan(running.screening.cabling_plan);
             cabling.ok()) {
    screener.set_plan(std::move(cabling).value());
  } else {
    spdlog::error("screening: {}", cabling.error().message);
  }
  // The SM gets the configuration in effect: restart-only keys at their
  // running values, so it applies exactly what the plan says.
  sm.reload(std::move(plan), config_path);
}

// The service: SM strand + gRPC + signals + systemd notify. Returns the exit code.
int run_daemon(const std::string& config_path, const CliOverrides& overrides, Config cfg,
               bool reset_store) {
  setup_logging(cfg.log.level);
  auto opened = open_store(cfg, reset_store);
  if (!opened.ok()) {
    spdlog::critical("store: {}", opened.error().message);
    return kExitStore;
  }
  std::unique_ptr<Store> store = std::move(opened).value();
  if (reset_store) spdlog::warn("{}", reset_note(cfg, *store));
  auto remembered = store->load_lids();
  auto last_event = store->last_event_id();
  auto isolated = store->active_isolations();
  if (!remembered.ok() || !last_event.ok() || !isolated.ok()) {
    spdlog::critical("store: {}", (!remembered.ok()   ? remembered.error()
                                   : !last_event.ok() ? last_event.error()
                                                      : isolated.error())
                                      .message);
    return kExitStore;
  }
  if (!isolated->empty()) {
    spdlog::info(
        "store: {} link(s) isolated by the fault policy stay isolated until their "
        "hold-down ends",
        isolated->size());
  }
  spdlog::info("store {}: {} remembered LIDs", cfg.store.path, remembered->size());
  // Only the SLs of a grid's LIDs depend on it: a placement that cannot be
  // read costs one afresh placement, not the start (the next heavy sweep
  // writes its own).
  auto grid = store->load_grid_placement();
  if (!grid.ok()) {
    spdlog::warn("store: {}; the grid is placed afresh", grid.error().message);
  } else if (*grid != nullptr) {
    spdlog::info("store: a grid of {} switches on {} dimensions, placed as before the restart",
                 (*grid)->guids.size(), (*grid)->dims());
  }
  StoreWriter writer(std::move(store),
                     [](const Error& e) { spdlog::error("store: {}", e.message); });
  state::EventLog events(
      *last_event, [&writer](const state::Event& e) { writer.append_event(e); },
      [&writer](std::int64_t after, std::size_t limit) {
        return writer.call([after, limit](Store& s) { return s.events_since(after, limit); }).get();
      });

  auto bundle = make_transport(cfg);
  if (!bundle.ok()) {
    spdlog::critical("{}", bundle.error().message);
    return kExitTransport;
  }
  spdlog::info("transport {}", bundle->transport->name());

  // Background priority: the io thread must wake at once for a trap while
  // a route or verification keeps every core busy.
  routing::WorkerPool pool(cfg.routing.threads != 0
                               ? cfg.routing.threads
                               : std::max(1U, std::thread::hardware_concurrency()),
                           kComputeNice);
  boost::asio::io_context io;
  state::StatePublisher publisher;
  // The SA answers from the published snapshot, on the transport's own
  // receiving thread: queries are served while the SM strand routes.
  // Multicast groups: joined and left through the SA, their trees
  // computed and programmed by the SM.
  state::McastRegistry mcast;
  sa::SaAgent sa_agent({}, &mcast);
  if (auto served = bundle->transport->serve_gmp_class(
          discovery::mad::sa::kMgmtClass,
          [&sa_agent, &publisher](std::span<const discovery::GmpRequest> requests) {
            std::vector<sa::SaAgent::SaRequest> reqs;
            reqs.reserve(requests.size());
            for (const auto& r : requests) reqs.push_back({r.bytes, Lid{r.slid}});
            return sa_agent.answer_many(reqs, *publisher.current());
          });
      served.ok()) {
    spdlog::info("SA: serving Subnet Administration queries on {}", bundle->transport->name());
  } else {
    spdlog::warn("SA: not served: {}", served.error().message);
  }
  // InformInfo subscribers get Reports of what each publish changed, sent
  // from the reporter's own thread through the transport's GMP agent.
  discovery::Transport* transport = bundle->transport.get();
  std::unique_ptr<sa::Reporter> reporter;
  state::CounterBoard counters;  // the performance manager's, read by gRPC and /metrics
  state::HealthBoard health;     // the fault policy's, read by gRPC and /metrics
  // Bring-up screening against the cabling plan, off the SM strand.
  std::optional<screening::CablingPlan> cabling_plan;
  if (!cfg.screening.cabling_plan.empty()) {
    auto read = screening::read_cabling_plan(cfg.screening.cabling_plan);
    if (!read.ok()) {
      spdlog::critical("screening.cabling_plan: {}", read.error().message);
      return kExitConfig;
    }
    spdlog::info("screening: cabling plan {}: {} nodes, {} cables", cfg.screening.cabling_plan,
                 read->nodes.size(), read->cables.size());
    cabling_plan = std::move(read).value();
  }
  screening::Screener screener(publisher, events, std::move(cabling_plan));
  bool ready = false;
  // Prometheus: histograms fed after every publish (on the strand).
  std::shared_ptr<api::Metrics> metrics;
  SubnetManager::Hooks hooks;
  hooks.published = [&ready, &reporter, &metrics, &screener](const state::FabricState& s) {
    // /metrics first: whatever the wakes below lead to (a Report, a
    // cabling event) is seen after the publish is in the metrics.
    if (metrics) metrics->observe(s);
    if (reporter) reporter->wake();
    screener.wake();
    const std::string status = status_line(s);
    // Up: master of the subnet, or standing by for another SM (a standby
    // that never said READY would fail its systemd start).
    const bool up = s.state == state::SmState::kMaster || s.state == state::SmState::kStandby ||
                    s.state == state::SmState::kNotActive;
    if (up && !ready) {
      ready = true;
      sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
      spdlog::info("READY: {}", status);
    } else {
      sd_notifyf(0, "STATUS=%s", status.c_str());
    }
  };
  // Traps an SMA sent (but 128): forwarded to the SA's subscribers.
  hooks.trap_received = [&reporter](const discovery::mad::Notice& trap) {
    if (reporter) reporter->forward(trap);
  };
  SubnetManager sm(io, cfg, std::move(bundle).value(), &writer, std::move(remembered).value(),
                   publisher, events, pool, std::move(hooks));
  sm.attach_multicast(&mcast);
  sm.attach_counters(&counters);
  sm.attach_health(&health, std::move(isolated).value());
  if (grid.ok()) sm.remember_grid(std::move(grid).value());
  reporter = std::make_unique<sa::Reporter>(sa_agent, publisher, [transport](const sa::Report& r) {
    return transport->send_gmp(r.dlid, r.qpn, r.mad);
  });
  // Stopped before the SM (and the transport it owns) goes, on every way out.
  struct StopReporter {
    std::unique_ptr<sa::Reporter>& r;
    ~StopReporter() { r.reset(); }
  } stop_reporter{reporter};

  // Watchdog: pinged from the io thread while it keeps turning.
  std::uint64_t watchdog_usec = 0;
  boost::asio::steady_timer watchdog(io);
  std::function<void()> ping;
  if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0) {
    ping = [&] {
      sd_notify(0, "WATCHDOG=1");
      watchdog.expires_after(std::chrono::microseconds(watchdog_usec / 2));
      watchdog.async_wait([&](boost::system::error_code ec) {
        if (!ec) ping();
      });
    };
    ping();
  }

  // The configuration in effect; signals are handled one at a time.
  Config running = cfg;
  bool stopping = false;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool wound_down = false;
  boost::asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](boost::system::error_code ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        sd_notify(0, "RELOADING=1");
        reload(config_path, overrides, running, sm, screener, events);
        sd_notify(0, "READY=1");
        wait_signal();
        return;
      }
      if (stopping) return;
      stopping = true;
      spdlog::info("signal {}: stopping", sig);
      sd_notify(0, "STOPPING=1");
      sm.stop();
      watchdog.cancel();
      signals.cancel();
      events.close();
      // io.run() returns once the SM has wound down (nothing left waiting);
      // should something not, the loop is ended after a grace period.
      std::thread([&io, &stop_mu, &stop_cv, &wound_down] {
        std::unique_lock lock(stop_mu);
        if (!stop_cv.wait_for(lock, kStopGrace, [&] { return wound_down; })) {
          spdlog::warn("the SM did not wind down in {} s; stopping anyway", kStopGrace.count());
          io.stop();
        }
      }).detach();
    });
  };
  wait_signal();

  api::ServiceDeps deps;
  deps.state = &publisher;
  deps.sm = &sm;
  deps.sim = sm.sim_control();
  deps.events = &events;
  deps.sa = &sa_agent;  // gRPC's GetPathRecord answers what the SA answers
  deps.cabling = &screener;
  deps.counters = &counters;
  deps.health = &health;
  deps.version = SUBNETD_VERSION;
  deps.started_at = std::chrono::system_clock::now();
  api::ListenOptions listen;
  listen.socket = cfg.api.socket;
  listen.socket_group = cfg.api.socket_group;
  listen.tcp = cfg.api.tcp;
  listen.tls_cert = cfg.api.tls_cert;
  listen.tls_key = cfg.api.tls_key;
  listen.token_file = cfg.api.token_file;
  auto server = api::Server::start(listen, deps);
  if (!server.ok()) {
    spdlog::critical("api: {}", server.error().message);
    return kExitApi;
  }
  std::unique_ptr<api::MetricsServer> metrics_server;
  if (!cfg.metrics.listen.empty()) {
    metrics = std::make_shared<api::Metrics>(
        api::MetricsSources{&publisher, &sm, &sa_agent, SUBNETD_VERSION, &counters, &health});
    auto started = api::MetricsServer::start(cfg.metrics.listen, metrics);
    if (!started.ok()) {
      spdlog::critical("{}", started.error().message);
      return kExitApi;
    }
    metrics_server = std::move(started).value();
    spdlog::info("metrics: Prometheus /metrics on {} (port {})", cfg.metrics.listen,
                 metrics_server->port());
  }
  sm.start();
  // One thread: nothing on the SM strand blocks (compute steps run on the
  // SM's compute thread), and a post is taken up by the thread that is
  // already awake.
  io.run();
  {
    std::lock_guard lock(stop_mu);
    wound_down = true;
  }
  stop_cv.notify_all();
  (*server)->stop(std::chrono::milliseconds{1000});
  writer.close();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"subnetd: subnet manager for InfiniBand-compatible fabrics"};
  std::string config_path;
  bool once = false;
  bool reset_store = false;
  std::string dump_dir;
  std::string engine;
  app.add_option("-c,--config", config_path, "YAML configuration file")->required();
  app.add_flag("--once", once, "one bring-up, print a summary and exit");
  app.add_flag("--reset-store", reset_store,
               "move the SQLite store aside and start with an empty one");
  app.add_option("--dump-dir", dump_dir,
                 "write OpenSM-format dump files here (overrides dump_dir)");
  app.add_option("--engine", engine, "routing engine (overrides routing.engine)");
  app.set_version_flag("--version", "subnetd " SUBNETD_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  auto cfg = load_config(config_path);
  if (!cfg.ok()) {
    fmt::print(stderr, "subnetd: {}\n", cfg.error().message);
    return kExitConfig;
  }
  CliOverrides overrides;
  overrides.dump_dir = dump_dir;
  if (!engine.empty()) {
    for (EngineKind k : {EngineKind::kAuto, EngineKind::kMinhop, EngineKind::kUpdn,
                         EngineKind::kFtree, EngineKind::kLayered}) {
      if (to_string(k) == engine) overrides.engine = k;
    }
    if (!overrides.engine) {
      fmt::print(stderr, "subnetd: --engine: unknown engine \"{}\"\n", printable(engine));
      return kExitConfig;
    }
  }
  overrides.apply(*cfg);
  if (once) return run_once(*cfg, reset_store);
  return run_daemon(config_path, overrides, std::move(cfg).value(), reset_store);
}

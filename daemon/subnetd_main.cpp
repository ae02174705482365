// subnetd: the subnet manager daemon.
//
//   subnetd --config FILE            run as a service (systemd Type=notify)
//   subnetd --config FILE --once     one bring-up: sweep, LIDs, route, verify,
//                                    program, print a summary, exit 0 / non-zero
//
// Exceptions stop here (CLI11, yaml, protobuf); everything below returns Result.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <thread>

#include "daemon/bringup.hpp"
#include "daemon/config.hpp"
#include "daemon/dump_files.hpp"
#include "daemon/proc_stats.hpp"
#include "daemon/store.hpp"
#include "daemon/transport_factory.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::daemon;

// Exit codes: 0 ok, 1 bring-up failed, 2 usage, 3 config, 4 store, 5 transport.
constexpr int kExitBringUp = 1;
constexpr int kExitConfig = 3;
constexpr int kExitStore = 4;
constexpr int kExitTransport = 5;

Result<std::unique_ptr<Store>> open_store(const Config& cfg, bool reset) {
  std::error_code ec;
  const auto parent = std::filesystem::path(cfg.store.path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  OpenOptions opts;
  opts.reset = reset;
  return Store::open(cfg.store.path, opts);
}

int run_once(const Config& cfg, bool reset_store) {
  const auto wall_start = std::chrono::steady_clock::now();
  auto store = open_store(cfg, reset_store);
  if (!store.ok()) {
    fmt::print(stderr, "subnetd: store: {}\n", store.error().message);
    return kExitStore;
  }
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
  BringUp bring_up(transport, pool);
  auto result = bring_up.run(opts, nullptr);
  if (!result.ok()) {
    fmt::print(stderr, "subnetd: {}\n", result.error().message);
    return kExitBringUp;
  }
  if (auto saved = (*store)->save_lids(result->lids.changed, cfg.addressing.lmc); !saved.ok()) {
    fmt::print(stderr, "subnetd: store: {}\n", saved.error().message);
    return kExitStore;
  }
  fmt::print("{}", summarize(*result, transport.name()));
  if (!cfg.dump_dir.empty()) {
    auto dumped =
        write_dump_files(cfg.dump_dir, result->sweep.topology, result->lids.map, *result->routes);
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
  for (const std::string& u : result->sweep.unreachable) fmt::print("  unreachable: {}\n", u);
  for (const std::string& w : result->sweep.warnings) fmt::print("  warning: {}\n", w);
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
  app.set_version_flag("--version", "subnetd 0.1.0");
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
  if (!dump_dir.empty()) cfg->dump_dir = dump_dir;
  if (!engine.empty()) {
    std::optional<EngineKind> e;
    for (EngineKind k :
         {EngineKind::kAuto, EngineKind::kMinhop, EngineKind::kUpdn, EngineKind::kFtree}) {
      if (to_string(k) == engine) e = k;
    }
    if (!e) {
      fmt::print(stderr, "subnetd: --engine: unknown engine \"{}\"\n", engine);
      return kExitConfig;
    }
    cfg->routing.engine = *e;
  }
  if (once) return run_once(*cfg, reset_store);
  fmt::print(stderr, "subnetd: service mode is not in this build; use --once\n");
  return 2;
}

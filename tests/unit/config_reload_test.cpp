// plan_reload (which changed keys a SIGHUP can apply, which need a restart)
// and check_config_files (what a config refers to outside itself).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/config.hpp"

namespace subnetd::daemon {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::vector<std::string> keys_of(const std::vector<RestartChange>& changes) {
  std::vector<std::string> keys;
  for (const RestartChange& c : changes) keys.push_back(c.key);
  return keys;
}

Config sim_config() {
  Config c;
  c.fabric.topology = "fat-tree:levels=2,radix=4";
  return c;
}

TEST(PlanReload, NothingChangedNothingToDo) {
  const Config c = sim_config();
  const ReloadPlan plan = plan_reload(c, c);
  EXPECT_TRUE(plan.needs_restart.empty());
  EXPECT_TRUE(plan.applied.empty());
  EXPECT_FALSE(plan.reroute);
  EXPECT_EQ(plan.effective, c);
  EXPECT_EQ(plan.restart_summary(), "");
}

// The issue's case: socket_group and token_file were neither applied nor
// reported. Both are named, with why, and keep their running values.
TEST(PlanReload, ApiKeysNeedARestartAndKeepTheirRunningValues) {
  const Config running = sim_config();
  Config next = running;
  next.api.socket_group = "ibadmin";
  next.api.token_file = "/etc/subnetd/token";
  next.log.level = LogLevel::kDebug;
  const ReloadPlan plan = plan_reload(running, next);
  EXPECT_EQ(keys_of(plan.needs_restart),
            (std::vector<std::string>{"api.socket_group", "api.token_file"}));
  EXPECT_EQ(plan.applied, std::vector<std::string>{"log.level"});
  EXPECT_EQ(plan.effective.api, running.api);
  EXPECT_EQ(plan.effective.log.level, LogLevel::kDebug);
  EXPECT_EQ(plan.restart_summary(),
            "api.socket_group, api.token_file (the API server's listeners, socket group, TLS "
            "credentials and token are set up at start)");
  // Reloading the same file again, still without a restart: still named.
  const ReloadPlan again = plan_reload(plan.effective, next);
  EXPECT_EQ(keys_of(again.needs_restart), keys_of(plan.needs_restart));
  EXPECT_TRUE(again.applied.empty());
}

TEST(PlanReload, TheMetricsListenerNeedsARestart) {
  const Config running = sim_config();
  Config next = running;
  next.metrics.listen = "127.0.0.1:9464";
  const ReloadPlan plan = plan_reload(running, next);
  EXPECT_EQ(keys_of(plan.needs_restart), std::vector<std::string>{"metrics.listen"});
  EXPECT_EQ(plan.effective.metrics.listen, "");
  EXPECT_EQ(plan.restart_summary(), "metrics.listen (the /metrics listener is set up at start)");
}

TEST(PlanReload, RoutingChangesApplyAndReroute) {
  const Config running = sim_config();
  Config next = running;
  next.routing.engine = EngineKind::kUpdn;
  next.routing.root_guids = {Guid{0x10}};
  next.sweep.interval = milliseconds{2000};
  next.dump_dir = "dumps";
  const ReloadPlan plan = plan_reload(running, next);
  EXPECT_TRUE(plan.needs_restart.empty());
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"routing.engine", "routing.root_guids",
                                                    "sweep.interval", "dump_dir"}));
  EXPECT_TRUE(plan.reroute);
  EXPECT_EQ(plan.effective, next);

  // A grid seed alone places the grid anew: rerouted.
  Config seeded = running;
  seeded.routing.grid_seed = {Guid{0x20}, Guid{0x21}};
  const ReloadPlan reseeded = plan_reload(running, seeded);
  EXPECT_EQ(reseeded.applied, std::vector<std::string>{"routing.grid_seed"});
  EXPECT_TRUE(reseeded.reroute);
}

// Every key the parser knows is either applied or named: a file that sets
// every key to a non-default value, against the defaults.
TEST(PlanReload, EveryKeyIsAppliedOrNamed) {
  const std::string yaml = R"(
fabric:
  transport: umad
  ca: mlx5_1
  port: 2
addressing: {lid_bits: 24, lmc: 2}
routing:
  engine: ftree
  root_guids: [0x10]
  grid_seed: [0x20, 0x21, 0x22]
  threads: 3
sweep:
  interval: 1.5s
  smp_window: 4096
  timeout: 250ms
  retries: 0
api:
  socket: /tmp/s.sock
  socket_group: ibadmin
  tcp: "[::1]:0"
  tls_cert: c.pem
  tls_key: k.pem
  token_file: tok
store:
  path: x.db
dump_dir: dumps
log:
  level: trace
partitions:
  - {name: storage, pkey: 0x10, members: all}
)";
  auto umad = parse_config(yaml, "all.yaml");
  ASSERT_TRUE(umad.ok()) << umad.error().message;
  auto sim = parse_config("fabric:\n  topology: run/f.net\n  sm_port: h0\n", "sim.yaml");
  ASSERT_TRUE(sim.ok()) << sim.error().message;

  // One named default Config: GCC 12 at -O3 reports a false
  // -Wmaybe-uninitialized on members copied out of Config{} temporaries.
  const Config defaults;
  const ReloadPlan to_umad = plan_reload(defaults, *umad);
  EXPECT_EQ(keys_of(to_umad.needs_restart),
            (std::vector<std::string>{"fabric.transport", "fabric.ca", "fabric.port",
                                      "addressing.lid_bits", "addressing.lmc", "routing.threads",
                                      "api.socket", "api.socket_group", "api.tcp", "api.tls_cert",
                                      "api.tls_key", "api.token_file", "store.path"}));
  EXPECT_EQ(to_umad.applied,
            (std::vector<std::string>{"routing.engine", "routing.root_guids", "routing.grid_seed",
                                      "sweep.interval", "sweep.smp_window", "sweep.timeout",
                                      "sweep.retries", "dump_dir", "log.level", "partitions"}));
  EXPECT_TRUE(to_umad.repartition);
  for (const RestartChange& c : to_umad.needs_restart) EXPECT_FALSE(c.reason.empty()) << c.key;
  // What stays is exactly what runs: every restart-only key at its old value.
  Config expected = *umad;
  expected.fabric = defaults.fabric;
  expected.addressing = defaults.addressing;
  expected.routing.threads = defaults.routing.threads;
  expected.api = defaults.api;
  expected.store = defaults.store;
  EXPECT_EQ(to_umad.effective, expected);

  const ReloadPlan to_sim = plan_reload(defaults, *sim);
  EXPECT_EQ(keys_of(to_sim.needs_restart),
            (std::vector<std::string>{"fabric.topology", "fabric.sm_port"}));
}

// Over umad the kernel's MAD timeout is fixed when the port is opened: a
// shorter sweep.timeout applies, a longer one waits for a restart.
TEST(PlanReload, LongerSweepTimeoutOverUmadNeedsARestart) {
  Config running;
  running.fabric.transport = TransportKind::kUmad;
  Config longer = running;
  longer.sweep.timeout = milliseconds{500};
  const ReloadPlan plan = plan_reload(running, longer);
  EXPECT_EQ(keys_of(plan.needs_restart), std::vector<std::string>{"sweep.timeout"});
  EXPECT_EQ(plan.effective.sweep.timeout, running.sweep.timeout);
  EXPECT_NE(plan.restart_summary().find("kernel's MAD timeout"), std::string::npos);
  Config shorter = running;
  shorter.sweep.timeout = milliseconds{50};
  EXPECT_EQ(plan_reload(running, shorter).applied, std::vector<std::string>{"sweep.timeout"});
  Config sim = sim_config();
  Config sim_longer = sim;
  sim_longer.sweep.timeout = milliseconds{500};
  EXPECT_EQ(plan_reload(sim, sim_longer).applied, std::vector<std::string>{"sweep.timeout"});
}

class ConfigFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/subnetd-config-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name, const std::string& text, fs::perms mode) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    fs::permissions(p, mode);
    return p;
  }
  // Expects an error with a line that starts with `line_start` and contains `what`.
  void expect_problem(const Config& c, const std::string& line_start, const std::string& what) {
    auto r = check_config_files(c);
    ASSERT_FALSE(r.ok()) << "no problem found, expected " << line_start;
    const std::string& m = r.error().message;
    const auto at = m.find(line_start);
    ASSERT_NE(at, std::string::npos) << m;
    EXPECT_TRUE(at == 0 || m[at - 1] == '\n') << m;
    const auto end = m.find('\n', at);
    EXPECT_NE(m.substr(at, end == std::string::npos ? end : end - at).find(what), std::string::npos)
        << m;
  }

  fs::path dir_;
  static constexpr fs::perms kOwnerRw = fs::perms::owner_read | fs::perms::owner_write;
};

TEST_F(ConfigFilesTest, GoodFilesPass) {
  Config c = sim_config();
  c.api.socket = (dir_ / "api.sock").string();
  c.api.tcp = "127.0.0.1:0";
  c.api.tls_cert = file("c.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n", kOwnerRw);
  c.api.tls_key = file("k.pem", "-----BEGIN PRIVATE KEY-----\nMIIE\n", kOwnerRw);
  c.api.token_file = file("token", "0123456789abcdef0123456789abcdef\n", kOwnerRw);
  c.store.path = (dir_ / "state" / "subnetd.db").string();
  c.dump_dir = (dir_ / "dump").string();
  auto r = check_config_files(c);
  EXPECT_TRUE(r.ok()) << r.error().message;
}

// The issue's case: a token file that does not exist was only noticed at the
// next start (which then failed).
TEST_F(ConfigFilesTest, MissingTokenFileIsNamed) {
  Config c = sim_config();
  c.api.token_file = (dir_ / "no-such-token").string();
  expect_problem(c, "api.token_file " + c.api.token_file + ": ", "No such file or directory");
}

TEST_F(ConfigFilesTest, TokenFileOthersCanReadIsNamed) {
  Config c = sim_config();
  c.api.token_file = file("token", "0123456789abcdef0123456789abcdef\n",
                          kOwnerRw | fs::perms::group_read | fs::perms::others_read);
  expect_problem(c, "api.token_file " + c.api.token_file + ": ", "mode 0644");
  c.api.token_file = file("empty-token", "\n", kOwnerRw);
  expect_problem(c, "api.token_file " + c.api.token_file + ": ", "empty file");
  c.api.token_file = dir_.string();
  expect_problem(c, "api.token_file " + c.api.token_file + ": ", "is a directory");
}

TEST_F(ConfigFilesTest, TlsFilesMustBePem) {
  Config c = sim_config();
  c.api.tcp = "127.0.0.1:0";
  c.api.tls_cert = file("c.pem", "not a certificate\n", kOwnerRw);
  c.api.tls_key = (dir_ / "k.pem").string();
  expect_problem(c, "api.tls_cert " + c.api.tls_cert + ": ", "not PEM");
  expect_problem(c, "api.tls_key " + c.api.tls_key + ": ", "No such file");
}

TEST_F(ConfigFilesTest, NetFileIsReadAndItsErrorsCarryTheLine) {
  Config c = sim_config();
  c.fabric.topology =
      file("fabric.net", "Switch 4 \"sw\"\n[1] \"h\"[1]\n\nHca 1 \"h\"\nbogus\n", kOwnerRw);
  expect_problem(c, "fabric.topology: " + c.fabric.topology + ":5: ", "");
  c.fabric.topology = (dir_ / "gone.net").string();
  expect_problem(c, "fabric.topology: ", "cannot open net file");
  // A generator spec is checked by the parser, not here.
  c.fabric.topology = "fat-tree:levels=2,radix=4";
  EXPECT_TRUE(check_config_files(c).ok());
}

TEST_F(ConfigFilesTest, SocketGroupStoreAndDumpDir) {
  Config c = sim_config();
  c.api.socket_group = "no-such-group-subnetd-test";
  c.api.socket = file("api.sock", "a regular file", kOwnerRw);
  c.store.path = dir_.string();
  c.dump_dir = file("dump", "a file", kOwnerRw);
  auto r = check_config_files(c);
  ASSERT_FALSE(r.ok());
  // All problems at once, one per line.
  EXPECT_EQ(std::count(r.error().message.begin(), r.error().message.end(), '\n'), 3)
      << r.error().message;
  expect_problem(c, "api.socket_group: ", "no group named \"no-such-group-subnetd-test\"");
  expect_problem(c, "api.socket " + c.api.socket + ": ", "not a socket");
  expect_problem(c, "store.path " + c.store.path + ": ", "not a regular file");
  expect_problem(c, "dump_dir " + c.dump_dir + ": ", "not a directory");
  c.api.socket_group = "0";  // numeric gids are taken as they are
  c.api.socket = (dir_ / "api.sock2").string();
  c.store.path = (dir_ / "db").string();
  c.dump_dir = (dir_ / "dumps").string();
  EXPECT_TRUE(check_config_files(c).ok());
}

}  // namespace
}  // namespace subnetd::daemon

#include "daemon/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "daemon/bringup.hpp"

namespace subnetd::daemon {
namespace {

using std::chrono::milliseconds;

constexpr const char* kName = "t.yaml";

// Parses `yaml` and expects a failure whose message contains
// "t.yaml:<where>: <path>: " followed (somewhere) by `what`.
void expect_error(const std::string& yaml, const std::string& where, const std::string& path,
                  const std::string& what, Errc code = Errc::kInvalidArgument) {
  SCOPED_TRACE(yaml);
  auto r = parse_config(yaml, kName);
  ASSERT_FALSE(r.ok()) << "parsed, expected an error at " << where;
  const std::string& msg = r.error().message;
  const std::string head = std::string(kName) + ":" + where + ": " + path + ": ";
  const auto at = msg.find(head);
  ASSERT_NE(at, std::string::npos) << "message: " << msg << "\nexpected prefix: " << head;
  EXPECT_NE(msg.find(what, at + head.size()), std::string::npos)
      << "message: " << msg << "\nexpected text: " << what;
  EXPECT_EQ(r.error().code, code) << msg;
}

constexpr const char* kSim = "fabric:\n  topology: \"fat-tree:levels=2,radix=4\"\n";

TEST(ConfigParse, MinimalSimConfigGetsDefaults) {
  auto r = parse_config(kSim, kName);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  EXPECT_EQ(c.fabric.transport, TransportKind::kSim);
  EXPECT_EQ(c.fabric.topology, "fat-tree:levels=2,radix=4");
  EXPECT_TRUE(c.fabric.sm_port.empty());
  EXPECT_EQ(c.addressing.lid_bits, 16);
  EXPECT_EQ(c.addressing.lmc, 0);
  EXPECT_EQ(c.routing.engine, EngineKind::kAuto);
  EXPECT_EQ(c.routing.fallback, EngineKind::kUpdn);
  EXPECT_EQ(c.routing.max_vls, 0);
  EXPECT_TRUE(c.routing.branch_layers);
  EXPECT_TRUE(bring_up_options(c).engine_options.branch_layers);
  EXPECT_TRUE(c.routing.root_guids.empty());
  EXPECT_EQ(c.routing.threads, 0u);
  EXPECT_EQ(c.sweep.interval, milliseconds{10'000});
  EXPECT_EQ(c.sweep.smp_window, 64u);
  EXPECT_EQ(c.sweep.timeout, milliseconds{100});
  EXPECT_EQ(c.sweep.retries, 3u);
  EXPECT_EQ(c.sm.priority, 15);
  EXPECT_EQ(c.sm.key, 1u);  // OpenSM's default
  EXPECT_EQ(c.sm.poll_period, milliseconds{500});
  EXPECT_EQ(c.sm.poll_retries, 3u);
  EXPECT_EQ(c.api.socket, "/run/subnetd/subnetd.sock");
  EXPECT_TRUE(c.api.tcp.empty());
  EXPECT_EQ(c.store.path, "/var/lib/subnetd/subnetd.db");
  EXPECT_TRUE(c.dump_dir.empty());
  EXPECT_EQ(c.log.level, LogLevel::kInfo);
}

TEST(ConfigParse, EveryKeyIsRead) {
  const std::string yaml = R"(
fabric:
  transport: sim
  topology: run/fabric.net
  sm_port: 0x0002c90000000101
addressing: {lid_bits: 24, lmc: 2}
routing:
  engine: ftree
  fallback: minhop
  max_vls: 4
  branch_layers: false
  root_guids: [0x10, "0x0002C90000000020", 48]
  grid_seed: [0x20, 0x21, 0x27]
  threads: 3
  fast_failover: false
  failover_require_coverage: true
sweep:
  interval: 1.5s
  smp_window: 4096
  timeout: 250ms
  retries: 0
sm:
  priority: 4
  key: 0xfeedbeef00000001
  poll_period: 2s
  poll_retries: 5
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
)";
  auto r = parse_config(yaml, kName);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  EXPECT_EQ(c.fabric.topology, "run/fabric.net");
  ASSERT_TRUE(c.fabric.sm_port.guid.has_value());
  EXPECT_EQ(c.fabric.sm_port.guid->value, 0x0002c90000000101u);
  EXPECT_EQ(c.addressing.lid_bits, 24);
  EXPECT_EQ(c.addressing.lmc, 2);
  EXPECT_EQ(c.routing.engine, EngineKind::kFtree);
  EXPECT_EQ(c.routing.fallback, EngineKind::kMinhop);
  EXPECT_EQ(c.routing.max_vls, 4);
  EXPECT_FALSE(c.routing.branch_layers);
  EXPECT_FALSE(bring_up_options(c).engine_options.branch_layers);
  ASSERT_EQ(c.routing.root_guids.size(), 3u);
  EXPECT_EQ(c.routing.root_guids[0].value, 0x10u);
  EXPECT_EQ(c.routing.root_guids[1].value, 0x0002c90000000020u);
  EXPECT_EQ(c.routing.root_guids[2].value, 48u);
  EXPECT_EQ(c.routing.grid_seed, (std::vector<Guid>{Guid{0x20}, Guid{0x21}, Guid{0x27}}));
  EXPECT_EQ(bring_up_options(c).engine_options.grid_seed, c.routing.grid_seed);
  EXPECT_EQ(c.routing.threads, 3u);
  EXPECT_FALSE(c.routing.fast_failover);
  EXPECT_TRUE(c.routing.failover_require_coverage);
  EXPECT_EQ(c.sweep.interval, milliseconds{1500});
  EXPECT_EQ(c.sweep.smp_window, 4096u);
  EXPECT_EQ(c.sweep.timeout, milliseconds{250});
  EXPECT_EQ(c.sweep.retries, 0u);
  EXPECT_EQ(c.sm.priority, 4);
  EXPECT_EQ(c.sm.key, 0xfeedbeef00000001u);
  EXPECT_EQ(c.sm.poll_period, milliseconds{2000});
  EXPECT_EQ(c.sm.poll_retries, 5u);
  EXPECT_EQ(c.api.socket, "/tmp/s.sock");
  EXPECT_EQ(c.api.socket_group, "ibadmin");
  EXPECT_EQ(c.api.tcp, "[::1]:0");
  EXPECT_EQ(c.api.tls_cert, "c.pem");
  EXPECT_EQ(c.api.tls_key, "k.pem");
  EXPECT_EQ(c.api.token_file, "tok");
  EXPECT_EQ(c.store.path, "x.db");
  EXPECT_EQ(c.dump_dir, "dumps");
  EXPECT_EQ(c.log.level, LogLevel::kTrace);
}

TEST(ConfigParse, UmadNeedsNoKeys) {
  auto r = parse_config("fabric:\n  transport: umad\n", kName);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->fabric.transport, TransportKind::kUmad);
  EXPECT_TRUE(r->fabric.ca.empty());
  EXPECT_EQ(r->fabric.port, 0);
  auto r2 = parse_config("fabric:\n  transport: umad\n  ca: mlx5_1\n  port: 2\n", kName);
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  EXPECT_EQ(r2->fabric.ca, "mlx5_1");
  EXPECT_EQ(r2->fabric.port, 2);
}

TEST(ConfigParse, SmPortByName) {
  auto r = parse_config(std::string(kSim) + "  sm_port: H_12\n", kName);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->fabric.sm_port.guid.has_value());
  EXPECT_EQ(r->fabric.sm_port.name, "H_12");
}

TEST(ConfigParse, NullValuesKeepDefaults) {
  auto r = parse_config(std::string(kSim) + "routing:\nsweep:\n  interval: ~\ndump_dir:\n", kName);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sweep.interval, milliseconds{10'000});
  EXPECT_TRUE(r->dump_dir.empty());
}

TEST(ConfigParse, IntervalZeroTurnsLightSweepsOff) {
  auto r = parse_config(std::string(kSim) + "sweep:\n  interval: 0\n", kName);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sweep.interval, milliseconds{0});
}

TEST(ConfigErrors, UnknownTopLevelKey) {
  expect_error(
      std::string(kSim) + "fabrik:\n  transport: sim\n", "3:1", "fabrik",
      "unknown key (expected one of: fabric, addressing, routing, sweep, sm, api, metrics, "
      "perfmgr, screening, health, store, dump_dir, log, partitions)");
}

TEST(ConfigErrors, UnknownNestedKey) {
  expect_error(std::string(kSim) + "routing:\n  engine: updn\n  enigne: ftree\n", "5:3",
               "routing.enigne",
               "unknown key (expected one of: engine, fallback, max_vls, branch_layers, "
               "root_guids, grid_seed, threads, fast_failover, failover_require_coverage)");
}

TEST(ConfigErrors, DuplicateKey) {
  expect_error(std::string(kSim) + "log:\n  level: info\n  level: debug\n", "5:3", "log.level",
               "duplicate key");
}

TEST(ConfigErrors, UnknownEnumValues) {
  expect_error(std::string(kSim) + "routing:\n  engine: fastest\n", "4:11", "routing.engine",
               "unknown engine \"fastest\" (expected auto, minhop, updn, ftree, layered)");
  expect_error(std::string(kSim) + "routing:\n  fallback: nue\n", "4:13", "routing.fallback",
               "unknown engine \"nue\" (expected auto, minhop, updn, ftree, layered)");
  expect_error("fabric:\n  transport: verbs\n", "2:14", "fabric.transport",
               "unknown transport \"verbs\" (expected sim, umad)");
  expect_error(std::string(kSim) + "log:\n  level: loud\n", "4:10", "log.level",
               "unknown log level \"loud\" (expected trace, debug, info, warn, error)");
}

TEST(ConfigErrors, WrongTypes) {
  expect_error(std::string(kSim) + "addressing:\n  lid_bits: [16]\n", "4:13", "addressing.lid_bits",
               "expected an integer, got a list");
  expect_error(std::string(kSim) + "addressing:\n  lid_bits: sixteen\n", "4:13",
               "addressing.lid_bits", "expected an integer, got \"sixteen\"");
  expect_error(std::string(kSim) + "routing: fast\n", "3:10", "routing",
               "expected a mapping, got a scalar");
  expect_error(std::string(kSim) + "routing:\n  root_guids: 0x10\n", "4:15", "routing.root_guids",
               "expected a list of GUIDs, got a scalar");
  expect_error(std::string(kSim) + "store:\n  path: {a: 1}\n", "4:9", "store.path",
               "expected a path, got a mapping");
  expect_error("- fabric\n- log\n", "1:1", "(top level)", "expected a mapping, got a list");
  // Booleans are true or false: "yes" and typos are errors, not false.
  expect_error(std::string(kSim) + "routing:\n  fast_failover: yes\n", "4:18",
               "routing.fast_failover", "expected true or false, got \"yes\"");
  expect_error(std::string(kSim) + "routing:\n  failover_require_coverage: [true]\n", "4:30",
               "routing.failover_require_coverage", "expected true or false, got a list");
}

TEST(ConfigErrors, OutOfRangeNumbers) {
  expect_error(std::string(kSim) + "addressing:\n  lid_bits: 20\n", "4:13", "addressing.lid_bits",
               "20 is not a LID width (expected 16, 17 or 24)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "addressing:\n  lid_bits: 32\n", "4:13", "addressing.lid_bits",
               "32 is not a LID width", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "addressing:\n  lmc: 8\n", "4:8", "addressing.lmc",
               "8 is out of range (0..7)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "addressing:\n  lmc: -1\n", "4:8", "addressing.lmc",
               "-1 is out of range (0..7)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sweep:\n  smp_window: 0\n", "4:15", "sweep.smp_window",
               "0 is out of range (1..4096)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sweep:\n  smp_window: 4097\n", "4:15", "sweep.smp_window",
               "4097 is out of range (1..4096)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sweep:\n  retries: 11\n", "4:12", "sweep.retries",
               "11 is out of range (0..10)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "routing:\n  max_vls: 16\n", "4:12", "routing.max_vls",
               "16 is out of range (0..15)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sm:\n  priority: 16\n", "4:13", "sm.priority",
               "16 is out of range (0..15)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sm:\n  key: 0xfeedbeefz\n", "4:8", "sm.key",
               "bad SM key \"0xfeedbeefz\"");
  expect_error(std::string(kSim) + "sm:\n  poll_period: 50ms\n", "4:16", "sm.poll_period",
               "out of range (100ms..60000ms)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sm:\n  poll_retries: 0\n", "4:17", "sm.poll_retries",
               "0 is out of range (1..20)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sweep:\n  smp_window: 99999999999999999999\n", "4:15",
               "sweep.smp_window", "out of range (1..4096)", Errc::kOutOfRange);
  expect_error("fabric:\n  transport: umad\n  port: 255\n", "3:9", "fabric.port",
               "255 is out of range (0..254)", Errc::kOutOfRange);
}

TEST(ConfigErrors, BadDurations) {
  expect_error(std::string(kSim) + "sweep:\n  interval: 10 parsecs\n", "4:13", "sweep.interval",
               "bad duration \"10 parsecs\"");
  expect_error(std::string(kSim) + "sweep:\n  interval: -1s\n", "4:13", "sweep.interval",
               "bad duration \"-1s\"");
  expect_error(std::string(kSim) + "sweep:\n  timeout: 0.5ms\n", "4:12", "sweep.timeout",
               "bad duration \"0.5ms\"");
  expect_error(std::string(kSim) + "sweep:\n  interval: 50ms\n", "4:13", "sweep.interval",
               "50ms is out of range (0 or 100ms..86400000ms)", Errc::kOutOfRange);
  expect_error(std::string(kSim) + "sweep:\n  timeout: 0\n", "4:12", "sweep.timeout",
               "0 is out of range (1ms..60000ms)", Errc::kOutOfRange);
}

TEST(ConfigErrors, BadGuids) {
  expect_error(std::string(kSim) + "routing:\n  root_guids: [0x10, xyz]\n", "4:22",
               "routing.root_guids[1]", "bad GUID \"xyz\"");
  expect_error(
      std::string(kSim) + "routing:\n  root_guids:\n    - 0x10\n    - 0x12345678901234567\n", "6:7",
      "routing.root_guids[1]", "bad GUID \"0x12345678901234567\"");
  expect_error(std::string(kSim) + "routing:\n  root_guids: [0]\n", "4:16", "routing.root_guids[0]",
               "bad GUID \"0\"");
  expect_error(std::string(kSim) + "routing:\n  root_guids: [0x10, 16]\n", "4:22",
               "routing.root_guids[1]", "duplicate GUID 0x0000000000000010", Errc::kConflict);
  expect_error(std::string(kSim) + "routing:\n  grid_seed: [0x10, 0x11, 0x10]\n", "4:27",
               "routing.grid_seed[2]", "duplicate GUID 0x0000000000000010", Errc::kConflict);
  expect_error(std::string(kSim) + "routing:\n  grid_seed: [0x10]\n", "4:14", "routing.grid_seed",
               "one GUID: a grid seed names the origin switch and its neighbour along each "
               "dimension",
               Errc::kInvalidArgument);
  expect_error(std::string(kSim) + "routing:\n  grid_seed: 0x10\n", "4:14", "routing.grid_seed",
               "expected a list of GUIDs");
  expect_error(std::string(kSim) + "  sm_port: 0xzz\n", "3:12", "fabric.sm_port",
               "bad GUID \"0xzz\"");
}

TEST(ConfigErrors, MetricsListenIsAnAddress) {
  expect_error(std::string(kSim) + "metrics:\n  listen: 9464\n", "4:11", "metrics.listen",
               "bad address \"9464\"");
  expect_error(std::string(kSim) + "metrics:\n  port: 1\n", "4:3", "metrics.port", "unknown key");
  auto cfg = parse_config(std::string(kSim) + "metrics:\n  listen: \"[::1]:9464\"\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->metrics.listen, "[::1]:9464");
}

TEST(ConfigErrors, TlsNeedsBothFilesAndTcp) {
  expect_error(std::string(kSim) + "api:\n  tcp: \"localhost:1\"\n  tls_cert: c.pem\n", "5:3",
               "api.tls_cert", "given without api.tls_key (give both or neither)");
  expect_error(std::string(kSim) + "api:\n  tcp: \"localhost:1\"\n  tls_key: k.pem\n", "5:3",
               "api.tls_key", "given without api.tls_cert (give both or neither)");
  expect_error(std::string(kSim) + "api:\n  tls_cert: c.pem\n  tls_key: k.pem\n", "4:3",
               "api.tls_cert", "api.tcp is not set");
  expect_error(std::string(kSim) + "api:\n  tcp: localhost\n", "4:8", "api.tcp",
               "bad address \"localhost\"");
  expect_error(std::string(kSim) + "api:\n  tcp: \"h:70000\"\n", "4:8", "api.tcp",
               "bad address \"h:70000\"");
}

TEST(ConfigErrors, TransportSpecificKeys) {
  expect_error("fabric:\n  transport: sim\n", "1:1", "fabric.topology",
               "required with transport sim");
  expect_error("fabric:\n  transport: umad\n  topology: x\n", "3:3", "fabric.topology",
               "only used with transport sim");
  expect_error(std::string(kSim) + "  ca: mlx5_0\n", "3:3", "fabric.ca",
               "only used with transport umad");
  // No fabric section at all: the error names the file and the key.
  auto r = parse_config("log:\n  level: info\n", kName);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("t.yaml: fabric.topology: required", 0), 0u)
      << r.error().message;
}

TEST(ConfigErrors, YamlSyntaxErrorGivesPosition) {
  auto r = parse_config(std::string(kSim) + "routing:\n  engine: [ftree\n", kName);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
  EXPECT_EQ(r.error().message.rfind("t.yaml:", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("YAML syntax error"), std::string::npos) << r.error().message;
  // The line number is where the parser noticed; it must be a line of the file.
  const int line = std::stoi(r.error().message.substr(7));
  EXPECT_GE(line, 4);
  EXPECT_LE(line, 5);
}

TEST(ConfigErrors, AllErrorsReportedInFileOrder) {
  auto r = parse_config(std::string(kSim) + "log:\n  level: loud\naddressing:\n  lmc: 9\n", kName);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  const auto first = m.find("t.yaml:4:10: log.level");
  const auto second = m.find("t.yaml:6:8: addressing.lmc");
  ASSERT_NE(first, std::string::npos) << m;
  ASSERT_NE(second, std::string::npos) << m;
  EXPECT_LT(first, second);
  EXPECT_NE(m.find('\n'), std::string::npos);
}

TEST(ConfigErrors, HostileInputNeverThrows) {
  const char* inputs[] = {
      "",
      "\t\tfabric: x",
      "{",
      "fabric: *nowhere",
      "? [a, b]\n: c\n",
      "fabric: !!binary aGVsbG8=\n",
      "fabric:\n  topology: &a x\n  sm_port: *a\n",
      "\xff\xfe\x00garbage",
      "fabric: {transport: [sim]}",
      "%YAML 9.9\n---\nfabric: {}\n",
  };
  for (const char* in : inputs) {
    SCOPED_TRACE(in);
    Result<Config> r = Error{Errc::kInternal, {}};
    EXPECT_NO_THROW(r = parse_config(in, kName));
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("t.yaml", 0), 0u) << r.error().message;
    }
  }
}

// Values and keys from the file are echoed escaped and cut: a control byte
// never reaches a terminal or the journal raw, a megabyte never in full.
TEST(ConfigErrors, EchoedTextIsEscapedAndCut) {
  auto r = parse_config(std::string(kSim) + "routing:\n  engine: \"fast\\e[2Jest\"\n", kName);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("unknown engine \"fast\\x1b[2Jest\""), std::string::npos)
      << r.error().message;
  auto key = parse_config(std::string(kSim) + "\"bad\\akey\": 1\n", kName);
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message.find("t.yaml:3:1: bad\\x07key: unknown key"), std::string::npos)
      << key.error().message;
  const std::string huge(1 << 20, 'x');
  for (const std::string& yaml : {std::string(kSim) + "routing:\n  engine: " + huge + "\n",
                                  std::string(kSim) + "sweep:\n  retries: " + huge + "\n",
                                  std::string(kSim) + "? " + huge + "\n: 1\n",
                                  std::string(kSim) + "  sm_port: " + huge + "\n"}) {
    auto big = parse_config(yaml, kName);
    ASSERT_FALSE(big.ok());
    EXPECT_LT(big.error().message.size(), 1000u) << big.error().message.substr(0, 2000);
    EXPECT_NE(big.error().message.find("(1048576 bytes)"), std::string::npos)
        << big.error().message.substr(0, 2000);
  }
}

// No node description is longer than 64 bytes, so no node can match a longer
// sm_port name: an error at parse time, not a lookup that fails later.
TEST(ConfigErrors, SmPortNameLongerThanANodeDescription) {
  expect_error(std::string(kSim) + "  sm_port: " + std::string(65, 'h') + "\n", "3:12",
               "fabric.sm_port", "has 65 bytes, but a NodeDescription holds 64");
  auto ok = parse_config(std::string(kSim) + "  sm_port: " + std::string(64, 'h') + "\n", kName);
  EXPECT_TRUE(ok.ok()) << ok.error().message;
}

// A second document was ignored silently: the daemon ran on the first.
TEST(ConfigErrors, SecondYamlDocumentIsAnError) {
  auto r = parse_config(std::string(kSim) + "---\nrouting:\n  engine: ftree\n", kName);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("t.yaml:3:1: a second YAML document starts here", 0), 0u)
      << r.error().message;
  // An explicit start marker on the first document is fine; an empty second
  // document after it is not.
  auto marked = parse_config(std::string("---\n") + kSim, kName);
  EXPECT_TRUE(marked.ok()) << marked.error().message;
  auto trailing = parse_config(std::string("---\n") + kSim + "---\n", kName);
  ASSERT_FALSE(trailing.ok());
  EXPECT_EQ(trailing.error().message.rfind("t.yaml:4:1: a second YAML document", 0), 0u)
      << trailing.error().message;
  // "..." ends a document without starting another.
  auto ended = parse_config(std::string(kSim) + "...\n", kName);
  EXPECT_TRUE(ended.ok()) << ended.error().message;
}

// A bad generator spec was found only when the fabric was built (exit 5, no
// key named); it is a config error at the value's position.
TEST(ConfigErrors, TopologySpecIsCheckedWhenParsed) {
  expect_error("fabric:\n  topology: \"fat-tree:levels=2,radix=5\"\n", "2:13", "fabric.topology",
               "fat-tree: radix must be even, got 5");
  expect_error("fabric:\n  topology: \"fat-tree:levels=3\"\n", "2:13", "fabric.topology",
               "fat-tree: missing key k");
  expect_error("fabric:\n  topology: \"fat-tre:levels=2,radix=4\"\n", "2:13", "fabric.topology",
               "unknown topology family 'fat-tre'");
  expect_error("fabric:\n  topology: \"torus:dims=4x4,hots=2\"\n", "2:13", "fabric.topology",
               "torus: unknown key hots");
  // Paths are not specs (a '/' before any ':'), and good specs pass.
  for (const char* topo :
       {"nets/a:b.net", "fat-tree:levels=3,k=80", "random:switches=64,degree=8"}) {
    auto r = parse_config(std::string("fabric:\n  topology: \"") + topo + "\"\n", kName);
    EXPECT_TRUE(r.ok()) << topo << ": " << r.error().message;
  }
}

TEST(ConfigLoad, DirectoryIsNamedAsADirectory) {
  auto r = load_config("/tmp");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kIo);
  EXPECT_EQ(r.error().message.rfind("/tmp: is a directory, not a config file", 0), 0u)
      << r.error().message;
}

TEST(ConfigLoad, DeployFilesParse) {
  auto dev = load_config(SUBNETD_SOURCE_DIR "/deploy/subnetd.yaml");
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  EXPECT_EQ(dev->fabric.transport, TransportKind::kSim);
  EXPECT_EQ(dev->fabric.topology, "fat-tree:levels=2,radix=36");
  EXPECT_EQ(dev->store.path, "run/subnetd.db");
  EXPECT_EQ(dev->api.socket, "run/subnetd.sock");

  auto sys = load_config(SUBNETD_SOURCE_DIR "/deploy/subnetd-system.yaml");
  ASSERT_TRUE(sys.ok()) << sys.error().message;
  EXPECT_EQ(sys->fabric.transport, TransportKind::kUmad);
  EXPECT_EQ(sys->store.path.rfind("/var/lib/subnetd/", 0), 0u);
  EXPECT_EQ(sys->api.socket.rfind("/run/subnetd/", 0), 0u);
}

TEST(ConfigLoad, MissingFileNamesPath) {
  auto r = load_config("/nonexistent/subnetd.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kIo);
  EXPECT_NE(r.error().message.find("/nonexistent/subnetd.yaml"), std::string::npos);
  EXPECT_NE(r.error().message.find("No such file"), std::string::npos);
}

TEST(ConfigLoad, ErrorsNameTheFile) {
  char path[] = "/tmp/subnetd-config-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << kSim << "routing:\n  engine: fastest\n";
  }
  auto r = load_config(path);
  std::remove(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind(std::string(path) + ":4:11: routing.engine: unknown engine", 0),
            0u)
      << r.error().message;
}

TEST(ConfigScalars, Durations) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds{500});
  EXPECT_EQ(parse_duration("10s"), milliseconds{10'000});
  EXPECT_EQ(parse_duration("10"), milliseconds{10'000});
  EXPECT_EQ(parse_duration("0.25"), milliseconds{250});
  EXPECT_EQ(parse_duration("2m"), milliseconds{120'000});
  EXPECT_EQ(parse_duration("1h"), milliseconds{3'600'000});
  EXPECT_FALSE(parse_duration(""));
  EXPECT_FALSE(parse_duration("s"));
  EXPECT_FALSE(parse_duration(".5s"));
  EXPECT_FALSE(parse_duration("1.s"));
  EXPECT_FALSE(parse_duration("1.2.3s"));
  EXPECT_FALSE(parse_duration("1e3ms"));
  EXPECT_FALSE(parse_duration("5 s"));
  EXPECT_FALSE(parse_duration("1000000h"));
}

TEST(ConfigScalars, Guids) {
  EXPECT_EQ(parse_guid("0x0002c903000e0b72")->value, 0x0002c903000e0b72u);
  EXPECT_EQ(parse_guid("0XFFFFFFFFFFFFFFFF")->value, ~0ull);
  EXPECT_EQ(parse_guid("18446744073709551615")->value, ~0ull);
  EXPECT_FALSE(parse_guid("18446744073709551616"));
  EXPECT_FALSE(parse_guid("0x"));
  EXPECT_FALSE(parse_guid("0x-1"));
  EXPECT_FALSE(parse_guid("-1"));
  EXPECT_FALSE(parse_guid("0"));
  EXPECT_FALSE(parse_guid("0x00000000000000001"));
  EXPECT_FALSE(parse_guid("12ab"));
}

}  // namespace
}  // namespace subnetd::daemon

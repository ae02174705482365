#pragma once
// subnetd's YAML configuration: the typed Config and its strict parser.
//
// Every key is optional; the defaults below are what an absent key means
// (deploy/subnetd.yaml documents each one). The parser is strict because a
// typo in an SM config silently falls back to a default otherwise: an unknown
// key, a wrong type, an out-of-range value or a key that the chosen transport
// does not use is an error naming `file:line:col` and the key path, e.g.
//   subnetd.yaml:12:3: routing.engine: unknown engine "fastest" (expected auto, minhop, updn,
//   ftree)
// All errors in a file are reported at once, one per line, in file order.
//
// Relative paths (store.path, api.socket, dump_dir, ...) are kept as written
// and resolved by the daemon against its working directory, so a checkout can
// run with `run/...` paths while the systemd install uses absolute ones.
//
// parse_config never throws: yaml-cpp exceptions are caught at this edge.
// Config is a plain value; a SIGHUP reload parses a new one and the daemon
// swaps it in only when parsing succeeded (the running config is kept on error).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/health/port_health.hpp"
#include "routing/ids.hpp"
#include "routing/partitions.hpp"
#include "routing/result.hpp"

namespace subnetd::daemon {

enum class TransportKind : std::uint8_t { kSim, kUmad };
enum class EngineKind : std::uint8_t { kAuto, kMinhop, kUpdn, kFtree, kLayered };
enum class LogLevel : std::uint8_t { kTrace, kDebug, kInfo, kWarn, kError };

std::string_view to_string(TransportKind t);
std::string_view to_string(EngineKind e);
std::string_view to_string(LogLevel l);

// A node named in the config either by GUID (0x-prefixed hex or a YAML
// integer) or by its node description / generator name.
struct NodeSelector {
  std::optional<Guid> guid;
  std::string name;
  bool empty() const { return !guid && name.empty(); }
  bool operator==(const NodeSelector&) const = default;
};

struct FabricConfig {
  TransportKind transport = TransportKind::kSim;
  // sim: a topology generator spec ("fat-tree:levels=2,radix=36") or a path to
  // an ibnetdiscover-format net file. Required with transport sim.
  std::string topology;
  // sim: the CA the SM's port sits on. Empty = the first CA of the topology.
  NodeSelector sm_port;
  // umad: the local CA ("mlx5_0"). Empty = the first CA libibumad reports.
  std::string ca;
  // umad: the local port number, 0 = the first active port of `ca`.
  std::uint8_t port = 0;
  bool operator==(const FabricConfig&) const = default;
};

struct AddressingConfig {
  int lid_bits = 16;     // 16 (IBA), 17 or 24 (extended; simulator only)
  std::uint8_t lmc = 0;  // 0..7: each CA port gets 2^lmc LIDs
  bool operator==(const AddressingConfig&) const = default;
};

struct RoutingConfig {
  EngineKind engine = EngineKind::kAuto;
  // The engine routing falls back on when `engine` cannot route the fabric
  // (an error, not a verdict: the verifier still refuses what is unsafe).
  // The fallback is logged and shown in status (routing notes).
  EngineKind fallback = EngineKind::kUpdn;
  // The most data VLs the layered engine may use; 0 = what every
  // switch-to-switch port offers (the least PortInfo:VLCap read), and
  // never more than that.
  std::uint8_t max_vls = 0;
  // layered: a hot-spot tree no single layer takes off the busiest link
  // may put each of its branches on a layer of its own (the SL then
  // depends on the source too; routing::EngineOptions::branch_layers).
  bool branch_layers = true;
  // Roots for updn/ftree. Empty = the engine picks (e.g. top-level switches).
  std::vector<Guid> root_guids;
  // Tori, meshes, hypercubes: node GUIDs of the switch at the grid's
  // origin and of its neighbour one step up along each dimension, as
  // OpenSM's torus-2QoS seeds. SMs given the same seed place the grid
  // alike, so a LID keeps its SL across a takeover. Empty = as the routes
  // before (or the store, after a restart), else from the least GUID.
  std::vector<Guid> grid_seed;
  // Routing worker threads; 0 = one per hardware thread.
  unsigned threads = 0;
  // Arm switch-local fast failover (issue 14) on the switches that have it,
  // with groups the failover verifier proved deadlock-free; the SM's repair
  // path runs either way.
  bool fast_failover = true;
  // Refuse to arm groups that leave some single link failure to the SM
  // (pairs with no alternative before it acts); otherwise such failures are
  // logged and counted, and the groups armed (they never make a failure
  // worse than no groups).
  bool failover_require_coverage = false;
  bool operator==(const RoutingConfig&) const = default;
};

struct SweepConfig {
  // Light-sweep period; 0 disables periodic light sweeps (traps still act).
  std::chrono::milliseconds interval{10'000};
  // SMPs in flight at once during a sweep or programming pass.
  unsigned smp_window = 64;
  std::chrono::milliseconds timeout{100};  // per SMP
  unsigned retries = 3;                    // per SMP, after the first attempt
  bool operator==(const SweepConfig&) const = default;
};

// SM election and standby (IBA 14.4; discovery/sm_election.hpp).
struct SmConfig {
  // 0..15: the higher wins the election (then the lower port GUID).
  std::uint8_t priority = 15;
  // SMInfo.SM_Key: SMs with another key are not peers (0 = every SM is).
  // OpenSM's default, so that the two take part in one election unless
  // told otherwise (OpenSM ignores an SM whose key differs from its own).
  std::uint64_t key = 1;
  // A standby polls the master this often, and takes over after
  // `poll_retries` polls in a row went unanswered. A master answers polls
  // on the transport's receive thread, not the SM's (SmAgent), so a busy
  // master still answers within one SMP timeout: a poll is lost only when
  // its host, HCA or path is gone, and three in a row mean it. OpenSM:
  // 10 s x 4.
  std::chrono::milliseconds poll_period{500};
  unsigned poll_retries = 3;
  bool operator==(const SmConfig&) const = default;
};

struct ApiConfig {
  std::string socket = "/run/subnetd/subnetd.sock";  // unix socket, mode 0660
  // Peers in this group (by SO_PEERCRED) may call mutating RPCs. Empty = only
  // root and the daemon's own user.
  std::string socket_group;
  std::string tcp;       // "host:port" or "[v6]:port"; empty = no TCP listener
  std::string tls_cert;  // PEM files for TCP; both or neither
  std::string tls_key;
  // A file (mode 0600) holding the bearer token for mutating RPCs over TCP.
  std::string token_file;
  bool operator==(const ApiConfig&) const = default;
};

struct MetricsConfig {
  // "host:port" or "[v6]:port" of the Prometheus /metrics listener; empty =
  // none (the default). Plain HTTP without authentication: keep it on
  // localhost or a management network.
  std::string listen;
  bool operator==(const MetricsConfig&) const = default;
};

struct PerfmgrConfig {
  // How often the performance manager reads every port's counters (PMA
  // PortCounters and PortCountersExtended); 0 = never.
  std::chrono::milliseconds interval{60'000};
  // Counter history in the store: per-sweep rows of ports whose errors
  // rose are kept this long; hourly sums (those ports and the busiest 1000
  // of each sweep) this long.
  std::chrono::milliseconds retention{std::chrono::hours{24 * 7}};
  std::chrono::milliseconds hourly_retention{std::chrono::hours{24 * 30}};
  bool operator==(const PerfmgrConfig&) const = default;
};

struct ScreeningConfig {
  // Bring-up screening: a cabling plan (a net file, or a YAML plan when the
  // name ends in .yaml/.yml; daemon/screening/cabling.hpp) compared with the
  // fabric at every heavy sweep. Empty = no screening at sweeps.
  std::string cabling_plan;
  bool operator==(const ScreeningConfig&) const = default;
};

struct StoreConfig {
  std::string path = "/var/lib/subnetd/subnetd.db";
  bool operator==(const StoreConfig&) const = default;
};

struct LogConfig {
  LogLevel level = LogLevel::kInfo;
  bool operator==(const LogConfig&) const = default;
};

struct Config {
  FabricConfig fabric;
  AddressingConfig addressing;
  RoutingConfig routing;
  SweepConfig sweep;
  SmConfig sm;
  ApiConfig api;
  MetricsConfig metrics;
  PerfmgrConfig perfmgr;
  ScreeningConfig screening;
  // The fault-handling policy: when a flapping or erring link is isolated
  // and for how long (daemon/health/port_health.hpp).
  health::HealthPolicy health;
  StoreConfig store;
  std::string dump_dir;  // empty = no routing dump files
  LogConfig log;
  // Partitions (routing/partitions.hpp), checked: distinct names and
  // P_Keys. Empty = the default partition alone (every port full member).
  std::vector<routing::PartitionSpec> partitions;
  bool operator==(const Config&) const = default;
};

// Parses YAML text. `name` is the file name used in error messages.
Result<Config> parse_config(std::string_view text, std::string_view name);

// Reads and parses a file; a missing or unreadable file is an Errc::kIo error
// naming the path.
Result<Config> load_config(const std::string& path);

// ---------------------------------------------------------------------------
// Reload (SIGHUP). The daemon parses the file again, checks the files it
// references, and applies what can change while it runs. Some keys cannot:
// they name what was set up at start (the transport, the API's listeners,
// the store, the addressing mode, the worker pool). A reload keeps their
// running values and says so, naming each key; nothing is ignored silently.

// A changed key that a reload cannot apply.
struct RestartChange {
  std::string key;     // full YAML path, e.g. "api.socket_group"
  std::string reason;  // why: what was set up from it at start
  bool operator==(const RestartChange&) const = default;
};

struct ReloadPlan {
  // Changed keys a reload cannot apply, in Config field order. They keep
  // their running values until the next start.
  std::vector<RestartChange> needs_restart;
  // Changed keys a reload applies, in Config field order.
  std::vector<std::string> applied;
  // routing.engine, root_guids, grid_seed (...) changed: routes must be
  // recomputed.
  bool reroute = false;
  // partitions changed: P_Key tables must be planned and programmed again.
  bool repartition = false;
  // The configuration in effect after the reload: `next`, with every key in
  // needs_restart at its running value. The next reload is planned against
  // this (a key changed twice without a restart is still named).
  Config effective;

  // The needs_restart keys grouped by reason, for a log line or an event:
  // "api.socket_group, api.token_file (the API server's ... are set up at
  // start)". Empty when a reload applies everything.
  std::string restart_summary() const;
};

// Pure: compares every key of `running` and `next`.
ReloadPlan plan_reload(const Config& running, const Config& next);

// Checks what a config refers to outside itself, as the next start would use
// it: api.token_file (a regular, readable, non-empty file that only its owner
// can read, owned by root or this user; the token's format is the API's to
// check), api.tls_cert / api.tls_key (readable, non-empty PEM), api.socket
// (absent, or a socket), api.socket_group (an existing group),
// fabric.topology when it is a net file and screening.cabling_plan (read
// and parsed: errors carry file:line), store.path (absent or a regular file), dump_dir (absent or a
// directory). All problems are reported at once, one per line, each naming
// the key, the file and what is wrong.
Result<void> check_config_files(const Config& cfg);

// Duration scalar as accepted by the config: "500ms", "10s", "1.5s", "2m",
// "1h", or a plain number of seconds. Exposed for tests and for the CLI.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// GUID scalar: "0x0002c90300a1b2c3" (hex, 1..16 digits) or a decimal integer.
// Zero is not a valid GUID.
std::optional<Guid> parse_guid(std::string_view text);

}  // namespace subnetd::daemon

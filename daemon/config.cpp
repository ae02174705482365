#include "daemon/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <sstream>

#include "daemon/config_parser.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/text.hpp"

namespace subnetd::daemon {

std::string_view to_string(TransportKind t) {
  switch (t) {
    case TransportKind::kSim:
      return "sim";
    case TransportKind::kUmad:
      return "umad";
  }
  return "?";
}

std::string_view to_string(EngineKind e) {
  switch (e) {
    case EngineKind::kAuto:
      return "auto";
    case EngineKind::kMinhop:
      return "minhop";
    case EngineKind::kUpdn:
      return "updn";
    case EngineKind::kFtree:
      return "ftree";
    case EngineKind::kLayered:
      return "layered";
  }
  return "?";
}

std::string_view to_string(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  // Number: digits with an optional fraction; no sign, no exponent.
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string_view number = text.substr(0, i);
  const std::string_view unit = text.substr(i);
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      std::count(number.begin(), number.end(), '.') > 1) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc{} || end != number.data() + number.size()) return std::nullopt;
  double factor = 0;  // milliseconds per unit
  if (unit.empty() || unit == "s") {
    factor = 1000;
  } else if (unit == "ms") {
    factor = 1;
  } else if (unit == "m" || unit == "min") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else {
    return std::nullopt;
  }
  const double ms = value * factor;
  // A year is far beyond any sensible period; the bound keeps the cast defined.
  if (!std::isfinite(ms) || ms > 365.0 * 24 * 3'600'000) return std::nullopt;
  const double whole = std::round(ms);
  if (std::fabs(ms - whole) > 1e-6) return std::nullopt;  // sub-millisecond
  return std::chrono::milliseconds{static_cast<std::int64_t>(whole)};
}

namespace {

// What a reload cannot change, and why (for the log, the event and the
// operator deciding whether to restart now).
constexpr const char* kFabricAtStart =
    "the transport and the fabric it reaches are set up at start";
constexpr const char* kAddressingAtStart =
    "LIDs are assigned and programmed in the addressing mode chosen at start";
constexpr const char* kPoolAtStart = "the routing worker pool is sized at start";
constexpr const char* kApiAtStart =
    "the API server's listeners, socket group, TLS credentials and token are set up at start";
constexpr const char* kMetricsAtStart = "the /metrics listener is set up at start";
constexpr const char* kStoreAtStart = "the store is opened at start";
constexpr const char* kUmadTimeoutAtStart =
    "with transport umad the kernel's MAD timeout is set from it when the port is opened, so a "
    "longer one would not be waited for";

// One key of Config: how to tell a change, how to keep the running value,
// and why a reload cannot apply a change (nullptr: it can). Every key the
// parser knows is listed, in Config field order (config_test checks it).
struct KeyRule {
  std::string_view key;
  bool (*differs)(const Config& running, const Config& next);
  void (*keep_running)(const Config& running, Config& next);
  const char* (*restart_reason)(const Config& running, const Config& next);
};

#define SUBNETD_KEY(path, member, reason)                                           \
  KeyRule {                                                                         \
    path, [](const Config& a, const Config& b) { return !(a.member == b.member); }, \
        [](const Config& from, Config& to) { to.member = from.member; }, reason     \
  }

const char* (*const kApplies)(const Config&, const Config&) = nullptr;

template <const char* const* Reason>
const char* always(const Config&, const Config&) {
  return *Reason;
}

const char* umad_longer_timeout(const Config& running, const Config& next) {
  const bool umad = running.fabric.transport == TransportKind::kUmad;
  return umad && next.sweep.timeout > running.sweep.timeout ? kUmadTimeoutAtStart : nullptr;
}

const KeyRule kKeyRules[] = {
    SUBNETD_KEY("fabric.transport", fabric.transport, always<&kFabricAtStart>),
    SUBNETD_KEY("fabric.topology", fabric.topology, always<&kFabricAtStart>),
    SUBNETD_KEY("fabric.sm_port", fabric.sm_port, always<&kFabricAtStart>),
    SUBNETD_KEY("fabric.ca", fabric.ca, always<&kFabricAtStart>),
    SUBNETD_KEY("fabric.port", fabric.port, always<&kFabricAtStart>),
    SUBNETD_KEY("addressing.lid_bits", addressing.lid_bits, always<&kAddressingAtStart>),
    SUBNETD_KEY("addressing.lmc", addressing.lmc, always<&kAddressingAtStart>),
    SUBNETD_KEY("routing.engine", routing.engine, kApplies),
    SUBNETD_KEY("routing.fallback", routing.fallback, kApplies),
    SUBNETD_KEY("routing.max_vls", routing.max_vls, kApplies),
    SUBNETD_KEY("routing.branch_layers", routing.branch_layers, kApplies),
    SUBNETD_KEY("routing.root_guids", routing.root_guids, kApplies),
    SUBNETD_KEY("routing.grid_seed", routing.grid_seed, kApplies),
    SUBNETD_KEY("routing.threads", routing.threads, always<&kPoolAtStart>),
    SUBNETD_KEY("routing.fast_failover", routing.fast_failover, kApplies),
    SUBNETD_KEY("routing.failover_require_coverage", routing.failover_require_coverage, kApplies),
    SUBNETD_KEY("sweep.interval", sweep.interval, kApplies),
    SUBNETD_KEY("sweep.smp_window", sweep.smp_window, kApplies),
    SUBNETD_KEY("sweep.timeout", sweep.timeout, umad_longer_timeout),
    SUBNETD_KEY("sweep.retries", sweep.retries, kApplies),
    SUBNETD_KEY("sm.priority", sm.priority, kApplies),
    SUBNETD_KEY("sm.key", sm.key, kApplies),
    SUBNETD_KEY("sm.poll_period", sm.poll_period, kApplies),
    SUBNETD_KEY("sm.poll_retries", sm.poll_retries, kApplies),
    SUBNETD_KEY("api.socket", api.socket, always<&kApiAtStart>),
    SUBNETD_KEY("api.socket_group", api.socket_group, always<&kApiAtStart>),
    SUBNETD_KEY("api.tcp", api.tcp, always<&kApiAtStart>),
    SUBNETD_KEY("api.tls_cert", api.tls_cert, always<&kApiAtStart>),
    SUBNETD_KEY("api.tls_key", api.tls_key, always<&kApiAtStart>),
    SUBNETD_KEY("api.token_file", api.token_file, always<&kApiAtStart>),
    SUBNETD_KEY("metrics.listen", metrics.listen, always<&kMetricsAtStart>),
    SUBNETD_KEY("perfmgr.interval", perfmgr.interval, kApplies),
    SUBNETD_KEY("perfmgr.retention", perfmgr.retention, kApplies),
    SUBNETD_KEY("perfmgr.hourly_retention", perfmgr.hourly_retention, kApplies),
    SUBNETD_KEY("health.enabled", health.enabled, kApplies),
    SUBNETD_KEY("health.flap_count", health.flap_count, kApplies),
    SUBNETD_KEY("health.flap_window", health.flap_window, kApplies),
    SUBNETD_KEY("health.error_rate", health.error_rate, kApplies),
    SUBNETD_KEY("health.hold_down", health.hold_down, kApplies),
    SUBNETD_KEY("health.isolate_disconnecting", health.isolate_disconnecting, kApplies),
    SUBNETD_KEY("screening.cabling_plan", screening.cabling_plan, kApplies),
    SUBNETD_KEY("store.path", store.path, always<&kStoreAtStart>),
    SUBNETD_KEY("dump_dir", dump_dir, kApplies),
    SUBNETD_KEY("log.level", log.level, kApplies),
    SUBNETD_KEY("partitions", partitions, kApplies),
};

#undef SUBNETD_KEY

}  // namespace

ReloadPlan plan_reload(const Config& running, const Config& next) {
  ReloadPlan plan;
  plan.effective = next;
  for (const KeyRule& rule : kKeyRules) {
    if (!rule.differs(running, next)) continue;
    const char* reason = rule.restart_reason ? rule.restart_reason(running, next) : nullptr;
    if (reason != nullptr) {
      plan.needs_restart.push_back(RestartChange{std::string(rule.key), reason});
      rule.keep_running(running, plan.effective);
    } else {
      plan.applied.emplace_back(rule.key);
    }
  }
  plan.reroute =
      !(running.routing.engine == next.routing.engine) ||
      !(running.routing.fallback == next.routing.fallback) ||
      running.routing.max_vls != next.routing.max_vls ||
      running.routing.branch_layers != next.routing.branch_layers ||
      running.routing.root_guids != next.routing.root_guids ||
      running.routing.grid_seed != next.routing.grid_seed ||
      running.routing.fast_failover != next.routing.fast_failover ||
      running.routing.failover_require_coverage != next.routing.failover_require_coverage;
  plan.repartition = running.partitions != next.partitions;
  return plan;
}

std::string ReloadPlan::restart_summary() const {
  std::vector<std::string> reasons;  // in first-seen order
  for (const RestartChange& c : needs_restart) {
    if (std::find(reasons.begin(), reasons.end(), c.reason) == reasons.end()) {
      reasons.push_back(c.reason);
    }
  }
  std::string out;
  for (const std::string& reason : reasons) {
    std::string keys;
    for (const RestartChange& c : needs_restart) {
      if (c.reason == reason) keys += (keys.empty() ? "" : ", ") + c.key;
    }
    out += fmt::format("{}{} ({})", out.empty() ? "" : "; ", keys, reason);
  }
  return out;
}

std::optional<Guid> parse_guid(std::string_view text) {
  std::uint64_t v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    first += 2;
    base = 16;
    if (last - first > 16) return std::nullopt;
  }
  if (first == last || *first == '+' || *first == '-') return std::nullopt;
  auto [end, ec] = std::from_chars(first, last, v, base);
  if (ec != std::errc{} || end != last || v == 0) return std::nullopt;
  return Guid{v};
}

namespace {

using config_detail::describe;
using config_detail::EnumName;
using config_detail::kMaxNodeDescription;
using config_detail::Parser;

constexpr EnumName<TransportKind> kTransports[] = {{"sim", TransportKind::kSim},
                                                   {"umad", TransportKind::kUmad}};
constexpr EnumName<EngineKind> kEngines[] = {{"auto", EngineKind::kAuto},
                                             {"minhop", EngineKind::kMinhop},
                                             {"updn", EngineKind::kUpdn},
                                             {"ftree", EngineKind::kFtree},
                                             {"layered", EngineKind::kLayered}};
constexpr EnumName<LogLevel> kLevels[] = {{"trace", LogLevel::kTrace},
                                          {"debug", LogLevel::kDebug},
                                          {"info", LogLevel::kInfo},
                                          {"warn", LogLevel::kWarn},
                                          {"error", LogLevel::kError}};

// "host:port" or "[v6addr]:port"; port 0 asks the kernel for a free one (tests).
bool valid_host_port(std::string_view s) {
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return false;
  std::string_view host = s.substr(0, colon);
  std::string_view port = s.substr(colon + 1);
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc{} || end != port.data() + port.size() || p > 65535) return false;
  if (host.front() == '[') return host.size() > 2 && host.back() == ']';
  return host.find(':') == std::string_view::npos && host.find(' ') == std::string_view::npos;
}

// A "host:port" or "[v6]:port" value (api.tcp, metrics.listen).
std::optional<std::string> host_port(Parser& p, const YAML::Node& n, const std::string& path) {
  auto v = p.scalar(n, path, "\"host:port\"");
  if (!v) return std::nullopt;
  if (!valid_host_port(*v)) {
    p.fail(n.Mark(), path,
           fmt::format("bad address \"{}\" (expected \"host:port\" or \"[v6]:port\", port "
                       "0..65535)",
                       printable(*v)));
    return std::nullopt;
  }
  return v;
}

void walk(Parser& p, const YAML::Node& root, Config& cfg) {
  using K = Parser::Key;
  const K fabric_keys[] = {
      {"transport",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.enumeration<TransportKind>(n, path, "transport", kTransports)) {
           cfg.fabric.transport = *v;
         }
       }},
      {"topology",
       [&](const YAML::Node& n, const std::string& path) {
         auto v = p.scalar(n, path);
         if (!v) return;
         if (v->empty()) {
           p.fail(n.Mark(), path, "empty topology");
           return;
         }
         // A generator spec is checked here, so that a typo in it is a
         // config error naming this key and line, not a failure to build
         // the fabric after the store is open. Net files are checked when
         // read (and by check_config_files on reload).
         if (discovery::topo::looks_like_spec(*v)) {
           if (auto checked = discovery::topo::check_spec(*v); !checked.ok()) {
             p.fail(n.Mark(), path, checked.error().message, checked.error().code);
             return;
           }
         }
         cfg.fabric.topology = *v;
       }},
      {"sm_port",
       [&](const YAML::Node& n, const std::string& path) {
         auto v = p.scalar(n, path, "a node name or GUID");
         if (!v) return;
         const bool hex = v->size() > 1 && (*v)[0] == '0' && ((*v)[1] == 'x' || (*v)[1] == 'X');
         const bool digits = !v->empty() && std::all_of(v->begin(), v->end(), [](char c) {
           return c >= '0' && c <= '9';
         });
         if (hex || digits) {
           if (auto g = p.guid(n, path)) cfg.fabric.sm_port = NodeSelector{*g, {}};
         } else if (v->empty()) {
           p.fail(n.Mark(), path, "empty node name");
         } else if (v->size() > kMaxNodeDescription) {
           p.fail(n.Mark(), path,
                  fmt::format("node name \"{}\" has {} bytes, but a NodeDescription holds {}: "
                              "no node can match it",
                              printable(*v, 64), v->size(), kMaxNodeDescription));
         } else {
           cfg.fabric.sm_port = NodeSelector{std::nullopt, *v};
         }
       }},
      {"ca",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.scalar(n, path)) cfg.fabric.ca = *v;
       }},
      {"port",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 254)) cfg.fabric.port = static_cast<std::uint8_t>(*v);
       }},
  };
  const K addressing_keys[] = {
      {"lid_bits",
       [&](const YAML::Node& n, const std::string& path) {
         auto v = p.integer(n, path, 0, 1 << 20);
         if (!v) return;
         if (*v != 16 && *v != 17 && *v != 24) {
           p.fail(n.Mark(), path, fmt::format("{} is not a LID width (expected 16, 17 or 24)", *v),
                  Errc::kOutOfRange);
           return;
         }
         cfg.addressing.lid_bits = static_cast<int>(*v);
       }},
      {"lmc",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 7)) cfg.addressing.lmc = static_cast<std::uint8_t>(*v);
       }},
  };
  // A list of distinct node GUIDs (routing.root_guids, routing.grid_seed).
  auto guid_list = [&](const YAML::Node& n, const std::string& path, std::vector<Guid>& out) {
    if (!n.IsSequence()) {
      p.fail(n.Mark(), path, fmt::format("expected a list of GUIDs, got {}", describe(n)));
      return;
    }
    std::size_t i = 0;
    for (const auto& item : n) {
      const std::string item_path = fmt::format("{}[{}]", path, i++);
      auto g = p.guid(item, item_path);
      if (!g) continue;
      if (std::find(out.begin(), out.end(), *g) != out.end()) {
        p.fail(item.Mark(), item_path, fmt::format("duplicate GUID 0x{:016x}", g->value),
               Errc::kConflict);
        continue;
      }
      out.push_back(*g);
    }
  };
  const K routing_keys[] = {
      {"engine",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.enumeration<EngineKind>(n, path, "engine", kEngines))
           cfg.routing.engine = *v;
       }},
      {"fallback",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.enumeration<EngineKind>(n, path, "engine", kEngines))
           cfg.routing.fallback = *v;
       }},
      {"max_vls",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 15))
           cfg.routing.max_vls = static_cast<std::uint8_t>(*v);
       }},
      {"branch_layers",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.boolean(n, path)) cfg.routing.branch_layers = *v;
       }},
      {"root_guids", [&](const YAML::Node& n,
                         const std::string& path) { guid_list(n, path, cfg.routing.root_guids); }},
      {"grid_seed",
       [&](const YAML::Node& n, const std::string& path) {
         guid_list(n, path, cfg.routing.grid_seed);
         if (cfg.routing.grid_seed.size() == 1) {
           p.fail(n.Mark(), path,
                  "one GUID: a grid seed names the origin switch and its neighbour along each "
                  "dimension",
                  Errc::kInvalidArgument);
         }
       }},
      {"threads",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 1024)) cfg.routing.threads = static_cast<unsigned>(*v);
       }},
      {"fast_failover",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.boolean(n, path)) cfg.routing.fast_failover = *v;
       }},
      {"failover_require_coverage",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.boolean(n, path)) cfg.routing.failover_require_coverage = *v;
       }},
  };
  const K sweep_keys[] = {
      {"interval",
       [&](const YAML::Node& n, const std::string& path) {
         using std::chrono::hours, std::chrono::milliseconds;
         if (auto v = p.duration(n, path, milliseconds{100}, hours{24}, true)) {
           cfg.sweep.interval = *v;
         }
       }},
      {"smp_window",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 1, 4096)) cfg.sweep.smp_window = static_cast<unsigned>(*v);
       }},
      {"timeout",
       [&](const YAML::Node& n, const std::string& path) {
         using std::chrono::milliseconds, std::chrono::seconds;
         if (auto v = p.duration(n, path, milliseconds{1}, seconds{60}, false)) {
           cfg.sweep.timeout = *v;
         }
       }},
      {"retries",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 10)) cfg.sweep.retries = static_cast<unsigned>(*v);
       }},
  };
  const K sm_keys[] = {
      {"priority",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 15)) cfg.sm.priority = static_cast<std::uint8_t>(*v);
       }},
      {"key",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.u64(n, path, "SM key")) cfg.sm.key = *v;
       }},
      {"poll_period",
       [&](const YAML::Node& n, const std::string& path) {
         using std::chrono::milliseconds, std::chrono::seconds;
         if (auto v = p.duration(n, path, milliseconds{100}, seconds{60}, false)) {
           cfg.sm.poll_period = *v;
         }
       }},
      {"poll_retries",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 1, 20)) cfg.sm.poll_retries = static_cast<unsigned>(*v);
       }},
  };
  const K api_keys[] = {
      {"socket",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.path_value(n, path)) cfg.api.socket = *v;
       }},
      {"socket_group",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.scalar(n, path)) cfg.api.socket_group = *v;
       }},
      {"tcp",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = host_port(p, n, path)) cfg.api.tcp = *v;
       }},
      {"tls_cert",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.path_value(n, path)) cfg.api.tls_cert = *v;
       }},
      {"tls_key",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.path_value(n, path)) cfg.api.tls_key = *v;
       }},
      {"token_file",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.path_value(n, path)) cfg.api.token_file = *v;
       }},
  };
  const K metrics_keys[] = {
      {"listen",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = host_port(p, n, path)) cfg.metrics.listen = *v;
       }},
  };
  const K perfmgr_keys[] = {
      {"interval",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.duration(n, path, std::chrono::seconds{1}, std::chrono::hours{24}, true)) {
           cfg.perfmgr.interval = *v;
         }
       }},
      {"retention",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.duration(n, path, std::chrono::minutes{1}, std::chrono::hours{24 * 366},
                                 false)) {
           cfg.perfmgr.retention = *v;
         }
       }},
      {"hourly_retention",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v =
                 p.duration(n, path, std::chrono::hours{1}, std::chrono::hours{24 * 366}, false)) {
           cfg.perfmgr.hourly_retention = *v;
         }
       }},
  };
  const K health_keys[] = {
      {"enabled",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.boolean(n, path)) cfg.health.enabled = *v;
       }},
      {"flap_count",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 1000)) {
           cfg.health.flap_count = static_cast<std::uint32_t>(*v);
         }
       }},
      {"flap_window",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.duration(n, path, std::chrono::seconds{1}, std::chrono::hours{24}, false)) {
           cfg.health.flap_window = *v;
         }
       }},
      {"error_rate",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.integer(n, path, 0, 1'000'000'000)) {
           cfg.health.error_rate = static_cast<std::uint64_t>(*v);
         }
       }},
      {"hold_down",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v =
                 p.duration(n, path, std::chrono::seconds{1}, std::chrono::hours{24 * 30}, false)) {
           cfg.health.hold_down = *v;
         }
       }},
      {"isolate_disconnecting",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.boolean(n, path)) cfg.health.isolate_disconnecting = *v;
       }},
  };
  const K screening_keys[] = {
      {"cabling_plan",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.path_value(n, path)) cfg.screening.cabling_plan = *v;
       }},
  };
  const K store_keys[] = {
      {"path",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.path_value(n, path)) cfg.store.path = *v;
       }},
  };
  const K log_keys[] = {
      {"level",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.enumeration<LogLevel>(n, path, "log level", kLevels)) cfg.log.level = *v;
       }},
  };
  const K top_keys[] = {
      {"fabric",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, fabric_keys); }},
      {"addressing",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, addressing_keys); }},
      {"routing",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, routing_keys); }},
      {"sweep",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, sweep_keys); }},
      {"sm", [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, sm_keys); }},
      {"api", [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, api_keys); }},
      {"metrics",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, metrics_keys); }},
      {"perfmgr",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, perfmgr_keys); }},
      {"screening",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, screening_keys); }},
      {"health",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, health_keys); }},
      {"store",
       [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, store_keys); }},
      {"dump_dir",
       [&](const YAML::Node& n, const std::string& path) {
         if (auto v = p.path_value(n, path)) cfg.dump_dir = *v;
       }},
      {"log", [&](const YAML::Node& n, const std::string& path) { p.mapping(n, path, log_keys); }},
      {"partitions",
       [&](const YAML::Node& n, const std::string& path) {
         config_detail::walk_partitions(p, n, path, cfg.partitions);
       }},
  };
  p.mapping(root, "", top_keys);
}

// Checks that need more than one key. Errors point at the key that is wrong
// or, for a missing key, at its section (or the file when the section is absent).
void cross_check(Parser& p, const Config& cfg) {
  if (cfg.fabric.transport == TransportKind::kSim) {
    if (cfg.fabric.topology.empty()) {
      p.fail(p.mark_of("fabric"), "fabric.topology",
             "required with transport sim (a generator spec such as "
             "\"fat-tree:levels=2,radix=36\" or a net-file path)");
    }
    for (const char* k : {"fabric.ca", "fabric.port"}) {
      if (p.seen(k)) p.fail(p.mark_of(k), k, "only used with transport umad");
    }
  } else {
    for (const char* k : {"fabric.topology", "fabric.sm_port"}) {
      if (p.seen(k)) p.fail(p.mark_of(k), k, "only used with transport sim");
    }
  }
  if (!cfg.api.tls_cert.empty() && cfg.api.tls_key.empty()) {
    p.fail(p.mark_of("api.tls_cert"), "api.tls_cert",
           "given without api.tls_key (give both or neither)");
  }
  if (cfg.api.tls_cert.empty() && !cfg.api.tls_key.empty()) {
    p.fail(p.mark_of("api.tls_key"), "api.tls_key",
           "given without api.tls_cert (give both or neither)");
  }
  if (!cfg.api.tls_cert.empty() && cfg.api.tcp.empty()) {
    p.fail(p.mark_of("api.tls_cert"), "api.tls_cert",
           "TLS applies to the TCP listener, but api.tcp is not set");
  }
}

}  // namespace

namespace {

// The line of the "---" marker that starts the document whose first node is
// at `node_line` (0-based), or node_line itself when none is found.
int document_start_line(std::string_view text, int node_line) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t nl = text.find('\n', at);
    lines.push_back(
        text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  for (int l = std::min<int>(node_line, static_cast<int>(lines.size()) - 1); l >= 0; --l) {
    const std::string_view line = lines[static_cast<std::size_t>(l)];
    if (line.rfind("---", 0) == 0 &&
        (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r')) {
      return l;
    }
  }
  return node_line;
}

}  // namespace

Result<Config> parse_config(std::string_view text, std::string_view name) {
  Config cfg;
  Parser p(name);
  try {
    // All documents are read so that a second one is an error: the daemon
    // would otherwise run on the first and ignore the rest silently (a
    // config pasted twice, or two files concatenated).
    const std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    if (docs.size() > 1) {
      const YAML::Mark m = docs[1].Mark();
      const int line = document_start_line(text, m.is_null() ? 0 : m.line);
      p.fail_at(line, 0,
                "a second YAML document starts here; subnetd reads one document per config "
                "file (remove this \"---\" and what follows, or merge it into the first)");
    }
    const YAML::Node root = docs.empty() ? YAML::Node() : docs.front();
    walk(p, root, cfg);
    // Cross-key checks only on a well-typed file: a broken `fabric.transport`
    // would otherwise also yield a misleading "topology required".
    if (p.clean()) cross_check(p, cfg);
  } catch (const YAML::Exception& e) {
    return config_detail::yaml_error(e,
                                     name);  // syntax errors carry the offending token's position
  } catch (const std::exception& e) {
    return Error{Errc::kParse,
                 fmt::format("{}: cannot parse: {}", printable(name), printable(e.what()))};
  }
  SUBNETD_TRY(p.finish());
  return cfg;
}

Result<Config> load_config(const std::string& path) {
  // An ifstream opens a directory without complaint and reads nothing from
  // it; the empty "file" would then fail with a misleading "fabric.topology:
  // required".
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Error{Errc::kIo, fmt::format("{}: is a directory, not a config file (give the YAML file "
                                        "itself, e.g. {}/subnetd.yaml)",
                                        printable(path), printable(path))};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{Errc::kIo,
                 fmt::format("{}: cannot open config: {}", printable(path), std::strerror(errno))};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Error{Errc::kIo,
                 fmt::format("{}: cannot read config: {}", printable(path), std::strerror(errno))};
  }
  return parse_config(text.str(), path);
}

}  // namespace subnetd::daemon

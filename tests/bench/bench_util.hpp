#pragma once
// What every benchmark program in tests/bench/ needs and none should write
// again: wall-clock seconds, the process's memory high-water mark, strict
// `key=value` argument parsing, the error line a failed step prints, and the
// seeded choice of switch-to-switch links to cut (so that two benchmarks
// given the same seed cut the same links).
//
// Header-only: each *_bench.cpp is a program of its own
// (tests/bench/CMakeLists.txt). Used from the program's main thread.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "discovery/programmer.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/sweeper.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"
#include "routing/engine.hpp"
#include "routing/ids.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/result.hpp"
#include "routing/switch_graph.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

inline double seconds_since(Clock::time_point t0) {
  return seconds(Clock::now() - t0);
}

// The p-quantile (0 <= p <= 1; 1 = the maximum) of `v` by nearest rank
// from below, or 0 for none. Takes a copy: the caller's order stays.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 when the file
// or the field cannot be read.
inline long proc_status_kib(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view l(line);
    if (l.size() > field.size() && l.substr(0, field.size()) == field && l[field.size()] == ':') {
      std::string_view rest = l.substr(field.size() + 1);
      rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
      long kib = -1;
      const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
      return ec == std::errc() ? kib : -1;
    }
  }
  return -1;
}

// Peak resident set size so far (VmHWM) in MiB; -1 when unreadable.
inline double peak_rss_mib() {
  const long kib = proc_status_kib("VmHWM");
  return kib < 0 ? -1.0 : static_cast<double>(kib) / 1024.0;
}

// Starts a new high-water mark at the current RSS (Linux >= 4.0), so that
// peak_rss_mib() measures one phase of a longer run.
inline void reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

// One command-line argument: `key=value`, or a positional word with an empty
// key. A generator spec ("fat-tree:levels=3,k=8") or a path ("/tmp/a=b.net")
// is positional although it holds a '=': a ':' or '/' comes before it.
struct Arg {
  std::string key;
  std::string value;
};

inline Arg split_arg(std::string_view arg) {
  const auto eq = arg.find('=');
  if (eq == std::string_view::npos || arg.find_first_of(":/") < eq) {
    return {std::string(), std::string(arg)};
  }
  return {std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1))};
}

// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    if (comma > at) out.emplace_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

// Parses all of `text` into `out`: a number of T's type and range, or for
// bool "0" / "1". False, with `out` unchanged, for anything else, so that
// "failures=1k" is a usage error rather than a silent 1 (atoi) or 0.
template <class T>
bool parse_value(std::string_view text, T& out) {
  static_assert(std::is_arithmetic_v<T>);
  if constexpr (std::is_same_v<T, bool>) {
    if (text != "0" && text != "1") return false;
    out = text == "1";
    return true;
  } else {
    T v{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return false;
    out = v;
    return true;
  }
}

// "1,2,64" -> {1, 2, 64}: a non-empty list of numbers above 0; false,
// with `out` unchanged, for anything else.
inline bool parse_positive_list(std::string_view text, std::vector<unsigned>& out) {
  std::vector<unsigned> v;
  for (const std::string& t : split_list(text)) {
    unsigned n = 0;
    if (!parse_value(t, n) || n == 0) return false;
    v.push_back(n);
  }
  if (v.empty()) return false;
  out = std::move(v);
  return true;
}

// Prints "what: errc: message" to stderr; returns main's exit code for it.
inline int fail(std::string_view what, const Error& e) {
  fmt::print(stderr, "{}: {}: {}\n", what, errc_name(e.code), e.message);
  return 1;
}

// A fabric from a generator spec ("torus:dims=4x4") or an ibsim net file
// (a path: a '/' before any ':', or no ':').
inline Result<routing::Topology> load_fabric(const std::string& fabric) {
  const auto colon = fabric.find(':');
  const auto slash = fabric.find('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon < slash)) {
    return discovery::topo::generate(fabric);
  }
  return discovery::topo::read_netfile(fabric);
}

// The switch-to-switch links, each once (named by its end with the smaller
// PortRef), in switch and port order. (tests/unit has the same for tests;
// it pulls in GoogleTest, which the benchmark programs do not link.)
inline std::vector<PortRef> switch_links(const routing::Topology& topo) {
  std::vector<PortRef> links;
  for (NodeId sw : topo.switches()) {
    for (unsigned p = 1; p <= topo.node(sw).num_ports; ++p) {
      const routing::Port& port = topo.port(sw, static_cast<PortNum>(p));
      const PortRef here{sw, static_cast<PortNum>(p)};
      if (port.connected() && topo.node(port.remote_node).type == routing::NodeType::kSwitch &&
          here < PortRef{port.remote_node, port.remote_port}) {
        links.push_back(here);
      }
    }
  }
  return links;
}

// Disconnects `percent` % of the switch-to-switch links: all of them
// (switch_links), shuffled with mt19937_64(seed); the first ones go.
// Returns how many.
inline std::size_t cut_switch_links(routing::Topology& topo, double percent, std::uint64_t seed) {
  std::vector<PortRef> links = switch_links(topo);
  std::mt19937_64 rng(seed);
  std::shuffle(links.begin(), links.end(), rng);
  const auto cut = static_cast<std::size_t>(static_cast<double>(links.size()) * percent / 100.0);
  for (std::size_t i = 0; i < cut; ++i) topo.disconnect(links[i]);
  return cut;
}

// A generated fabric with its LIDs and routes: where the benchmarks that
// cut links start. Keep it in place once something refers to its members
// (a Rerouter keeps references to the topology and the LIDs).
struct RoutedFabric {
  routing::Topology topo;
  routing::LidMap lids;
  std::shared_ptr<const routing::Routes> routes;
};

// Generates `spec`, assigns LIDs in a `lid_bits` space and routes with
// `engine` on `pool`, printing a line for the fabric and one for the routes.
// `cut_percent` of its switch links disconnected first (cut_switch_links,
// `cut_seed`).
inline Result<RoutedFabric> routed_fabric(const std::string& spec, int lid_bits,
                                          const std::string& engine, routing::WorkerPool& pool,
                                          const routing::EngineOptions& opts = {},
                                          double cut_percent = 0, std::uint64_t cut_seed = 1) {
  RoutedFabric f;
  auto t0 = Clock::now();
  auto generated = discovery::topo::generate(spec);
  if (!generated.ok()) return generated.error();
  f.topo = std::move(generated).value();
  if (cut_percent > 0) {
    std::printf("fabric: %zu switch links cut (%g%%, seed %llu)\n",
                cut_switch_links(f.topo, cut_percent, cut_seed), cut_percent,
                static_cast<unsigned long long>(cut_seed));
  }
  auto space = routing::LidSpace::from_bits(lid_bits);
  if (!space) return Error{Errc::kInvalidArgument, "lid_bits must be 16, 17 or 24"};
  routing::LidAssignOptions lo;
  lo.space = *space;
  auto assigned = routing::assign_lids(f.topo, lo);
  if (!assigned.ok()) return assigned.error();
  f.lids = std::move(assigned->map);
  std::printf("fabric: %zu switches, %zu CAs, %zu links, max LID %u; generate + LIDs %.2f s\n",
              f.topo.num_switches(), f.topo.num_cas(), f.topo.num_links(), f.lids.max_lid.value,
              seconds_since(t0));
  t0 = Clock::now();
  auto made = routing::make_engine(engine);
  if (!made.ok()) return made.error();
  auto computed = (*made)->compute(f.topo, f.lids, opts, pool, {});
  if (!computed.ok()) return computed.error();
  f.routes = std::make_shared<const routing::Routes>(std::move(computed).value());
  std::printf("routes: engine %s in %.2f s\n", f.routes->engine.c_str(), seconds_since(t0));
  return f;
}

// The switch-to-switch links of a fabric (switch_links) and each switch's level:
// hops from the nearest switch with CAs (0 = edge). How the failure
// benchmarks pick links and name their classes.
struct LeveledLinks {
  std::vector<PortRef> links;
  std::vector<std::uint32_t> level;  // by switch index

  std::uint32_t level_of(const routing::Topology& topo, NodeId sw) const {
    return level[topo.node(sw).switch_index.value];
  }
  // "L0-L1": the levels of the link's two ends, lower first.
  std::string class_of(const routing::Topology& topo, const PortRef& l) const {
    const std::uint32_t x = level_of(topo, l.node);
    const std::uint32_t y = level_of(topo, topo.port(l).remote_node);
    return fmt::format("L{}-L{}", std::min(x, y), std::max(x, y));
  }
};

inline Result<LeveledLinks> leveled_links(const routing::Topology& topo,
                                          const routing::LidMap& lids) {
  auto graph = routing::SwitchGraph::build(topo, lids);
  if (!graph.ok()) return graph.error();
  std::vector<SwitchIndex> leaves;
  for (std::uint32_t s = 0; s < topo.num_switches(); ++s) {
    if (graph->has_endpoints(SwitchIndex{s})) leaves.push_back(SwitchIndex{s});
  }
  LeveledLinks out;
  out.level = routing::hops_to_nearest(*graph, leaves);
  out.links = switch_links(topo);
  return out;
}

// How the benchmarks program a simulator: a bring-up's Programmer with a
// wide window. `activate` false leaves ports in INIT (LID-routed SMPs and
// traps cross INIT ports, IBA); the data plane forwards only over ACTIVE.
inline discovery::ProgramOptions program_options(bool activate) {
  discovery::ProgramOptions popts;
  popts.pipeline.window = 256;
  popts.pipeline.timeout = std::chrono::milliseconds{500};
  popts.activate = activate;
  return popts;
}

// A simulator of `f` with the SM on port 1 of its first CA, programmed by
// SMP as a bring-up would (LIDs, SwitchInfo, every LFT block). `so` brings
// the LID width and the latency model; the SM's place is set here. `sweep`
// is what a sweep would have found (the topology, directed routes from the
// SM), for programming it again.
struct ProgrammedSim {
  std::unique_ptr<discovery::sim::SimFabric> sim;
  discovery::SweepResult sweep;
  discovery::ProgramReport report;
};

inline Result<ProgrammedSim> programmed_sim(const RoutedFabric& f, discovery::sim::SimOptions so,
                                            bool activate) {
  ProgrammedSim out;
  NodeId sm_node;
  for (std::uint32_t i = 0; i < f.topo.num_nodes() && !sm_node.valid(); ++i) {
    if (f.topo.node(NodeId{i}).type != routing::NodeType::kSwitch) sm_node = NodeId{i};
  }
  if (!sm_node.valid()) return Error{Errc::kNotFound, "no CA for the SM"};
  so.sm_guid = f.topo.node(sm_node).guid;
  so.sm_port = 1;
  auto created = discovery::sim::SimFabric::create(f.topo, so);
  if (!created.ok()) return created.error();
  out.sim = std::move(created).value();
  out.sweep.topology = f.topo;
  out.sweep.paths = discovery::bfs_paths(f.topo, sm_node, 1);
  out.sweep.sm_node = sm_node;
  out.sweep.sm_port = 1;
  discovery::Programmer programmer(*out.sim, program_options(activate));
  auto programmed = programmer.program(out.sweep, f.lids, *f.routes, nullptr);
  if (!programmed.ok()) return programmed.error();
  if (!programmed->ok()) {
    return Error{Errc::kIo, fmt::format("{} SMPs failed, first {}", programmed->failures.size(),
                                        programmed->failures.front())};
  }
  out.report = std::move(programmed).value();
  return out;
}

}  // namespace subnetd::bench

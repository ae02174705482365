#include "daemon/dump_files.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace subnetd::daemon {
namespace {

using routing::NodeType;

const char* width_name(std::uint8_t w) {
  switch (w) {
    case 1:
      return "1x";
    case 2:
      return "4x";
    case 4:
      return "8x";
    case 8:
      return "12x";
    case 16:
      return "2x";
    default:
      return "4x";
  }
}

const char* speed_name(std::uint8_t s) {
  switch (s) {
    case 2:
      return "5";
    case 4:
      return "10";
    default:
      return "2.5";
  }
}

const char* state_name(routing::PortState s) {
  switch (s) {
    case routing::PortState::kActive:
      return "ACT";
    case routing::PortState::kArmed:
      return "ARM";
    case routing::PortState::kInit:
      return "INI";
    default:
      return "DWN";
  }
}

// "{ SW Ports:08 SystemGUID:... NodeGUID:... PortGUID:... VenID:000000 DevID:0000
//    Rev:000000A1 {name} LID:0002 PN:01 }"
void port_end(fmt::memory_buffer& out, const routing::Topology& t, const routing::LidMap& lids,
              NodeId n, PortNum p, NodeId sm_node) {
  const routing::Node& node = t.node(n);
  const bool sw = node.type == NodeType::kSwitch;
  const Guid port_guid = sw ? t.port(n, 0).guid : t.port(n, p).guid;
  const Lid lid = sw ? lids.base_lid(t, n, 0) : lids.base_lid(t, n, p);
  fmt::format_to(std::back_inserter(out),
                 "{{ {} Ports:{:02X} SystemGUID:{:016X} NodeGUID:{:016X} PortGUID:{:016X} "
                 "VenID:000000 DevID:0000 Rev:000000A1 {{{}}} LID:{:04X} PN:{:02X} }}",
                 fmt::format("{}{}", sw ? "SW" : "CA", n == sm_node ? "-SM" : ""), node.num_ports,
                 node.system_guid.value, node.guid.value, port_guid.value, node.description,
                 lid.value, p);
}

Result<void> write_atomically(const std::filesystem::path& path, std::string_view text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      return Error{Errc::kIo,
                   fmt::format("{}: cannot write: {}", tmp.string(), std::strerror(errno))};
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!f) return Error{Errc::kIo, fmt::format("{}: write failed", tmp.string())};
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return Error{Errc::kIo, fmt::format("{}: rename failed: {}", path.string(), ec.message())};
  return {};
}

}  // namespace

std::string format_subnet_lst(const routing::Topology& t, const routing::LidMap& lids,
                              NodeId sm_node) {
  fmt::memory_buffer out;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
      const PortNum p = static_cast<PortNum>(pn);
      const routing::Port& port = t.port(n, p);
      if (!port.connected()) continue;
      port_end(out, t, lids, n, p, sm_node);
      out.push_back(' ');
      port_end(out, t, lids, port.remote_node, port.remote_port, sm_node);
      fmt::format_to(std::back_inserter(out), " PHY={} LOG={} SPD={}\n",
                     width_name(port.width_active), state_name(port.state),
                     speed_name(port.speed_active));
    }
  }
  return fmt::to_string(out);
}

std::string format_fdbs(const routing::Topology& t, const routing::LidMap& lids,
                        const routing::Routes& routes) {
  const std::uint32_t max_lid = routes.max_lid.value;
  const std::size_t num_sw = t.num_switches();
  // Least hops between switches over switch-to-switch cables, one BFS per
  // switch (kFar: not connected). S^2 bytes: fine for the 16-bit fabrics
  // these files are meant for.
  constexpr std::uint8_t kFar = 0xFF;
  std::vector<std::uint8_t> dist(num_sw * num_sw, kFar);
  std::vector<std::uint32_t> queue;
  queue.reserve(num_sw);
  for (std::uint32_t h = 0; h < num_sw; ++h) {
    std::uint8_t* row = &dist[std::size_t{h} * num_sw];
    row[h] = 0;
    queue.assign(1, h);
    for (std::size_t q = 0; q < queue.size(); ++q) {
      const NodeId v = t.switch_node(SwitchIndex{queue[q]});
      for (unsigned pn = 1; pn <= t.node(v).num_ports; ++pn) {
        const routing::Port& port = t.port(v, static_cast<PortNum>(pn));
        if (!port.connected() || t.node(port.remote_node).type != NodeType::kSwitch) continue;
        const std::uint32_t w = t.node(port.remote_node).switch_index.value;
        if (row[w] != kFar || row[queue[q]] + 1 >= kFar) continue;
        row[w] = static_cast<std::uint8_t>(row[queue[q]] + 1);
        queue.push_back(w);
      }
    }
  }
  // The switch a LID's packets leave the switch fabric at, and the hops
  // from there (0 for the switch's own LID, 1 down to a CA port).
  struct Home {
    SwitchIndex sw;  // kNoSwitch: none
    std::uint8_t last = 0;
  };
  auto home_of = [&](PortRef owner) {
    Home h;
    if (!owner.node.valid()) return h;
    if (t.node(owner.node).type == NodeType::kSwitch) {
      h.sw = t.node(owner.node).switch_index;
      return h;
    }
    const routing::Port& p = t.port(owner);
    if (p.connected() && t.node(p.remote_node).type == NodeType::kSwitch) {
      h.sw = t.node(p.remote_node).switch_index;
      h.last = 1;
    }
    return h;
  };
  // Links a packet for `lid` crosses from switch `s` following the tables,
  // until it reaches the LID's port; 0 = it never does (drop, dark port,
  // loop, wrong node).
  auto traced_hops = [&](SwitchIndex s, Lid lid, PortRef owner) -> unsigned {
    NodeId cur = t.switch_node(s);
    unsigned hops = 0;
    for (std::size_t guard = 0; guard <= num_sw; ++guard) {
      const std::uint8_t out = routes.lfts[t.node(cur).switch_index.value].get(lid);
      if (out == 0) return owner.node == cur && hops > 0 ? hops : 0;
      if (out > t.node(cur).num_ports) return 0;
      const routing::Port& link = t.port(cur, out);
      if (!link.connected()) return 0;
      ++hops;
      if (t.node(link.remote_node).type != NodeType::kSwitch) {
        return link.remote_node == owner.node && link.remote_port == owner.port ? hops : 0;
      }
      cur = link.remote_node;
    }
    return 0;
  };

  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  for (std::uint32_t s = 0; s < num_sw; ++s) {
    const NodeId n = t.switch_node(SwitchIndex{s});
    const routing::Node& node = t.node(n);
    const routing::Lft& lft = routes.lfts[s];
    fmt::format_to(it, "dump_ucast_routes: Switch 0x{:016x}\nLID    : Port : Hops : Optimal\n",
                   node.guid.value);
    for (std::uint32_t l = 1; l <= max_lid; ++l) {
      fmt::format_to(it, "0x{:04X} : ", l);
      const PortRef owner = lids.owner_of(Lid{l});
      const std::uint8_t port = lft.get(Lid{l});
      if (!owner.node.valid() || port == routing::kDropPort) {
        fmt::format_to(it, "UNREACHABLE\n");
        continue;
      }
      const Home home = home_of(owner);
      const bool own = owner.node == n;  // this switch's own LID
      const unsigned hops =
          own ? (port == 0 ? 0U : 1U) : traced_hops(SwitchIndex{s}, Lid{l}, owner);
      const std::uint8_t to_home = home.sw.valid() ? dist[home.sw.value * num_sw + s] : kFar;
      if ((!own && hops == 0) || to_home == kFar || (own && port != 0)) {
        fmt::format_to(it, "{:03}  : HOPS UNKNOWN\n", port);
        continue;
      }
      const unsigned best = to_home + home.last;
      fmt::format_to(it, "{:03}  : {:02}   : ", port, hops);
      if (hops == best) {
        fmt::format_to(it, "yes\n");
        continue;
      }
      // A port that starts a least-hop path, as OpenSM names one.
      unsigned best_port = 0;
      for (unsigned pn = 1; pn <= node.num_ports && best_port == 0; ++pn) {
        const routing::Port& link = t.port(n, static_cast<PortNum>(pn));
        if (!link.connected()) continue;
        if (t.node(link.remote_node).type != NodeType::kSwitch) {
          if (link.remote_node == owner.node && link.remote_port == owner.port) best_port = pn;
          continue;
        }
        const std::uint32_t w = t.node(link.remote_node).switch_index.value;
        if (dist[home.sw.value * num_sw + w] + 1 == to_home) best_port = pn;
      }
      fmt::format_to(it, "No {} hop path possible via port {}!\n", best, best_port);
    }
  }
  return fmt::to_string(out);
}

std::string format_mcfdbs(const routing::Topology& t, const routing::McastTables* multicast) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  if (multicast == nullptr || multicast->num_switches() != t.num_switches()) return {};
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const auto entries = multicast->entries(SwitchIndex{s});
    if (entries.empty()) continue;
    fmt::format_to(it, "\nSwitch 0x{:016x}\nLID    : Out Port(s)\n",
                   t.node(t.switch_node(SwitchIndex{s})).guid.value);
    for (const routing::McastTables::Entry& e : entries) {
      fmt::format_to(it, "0x{:04X} :", e.mlid);
      e.ports.for_each([&](PortNum p) { fmt::format_to(it, " 0x{:03X} ", p); });
      fmt::format_to(it, "\n");
    }
  }
  return fmt::to_string(out);
}

namespace {

// The path-SL file's sources (CA/router nodes, once per port, with the
// switch that port is cabled to, kNoSwitch for none) and destinations
// (their LIDs, every LMC LID): a line for each pair.
void path_sl_ends(const routing::Topology& t, const routing::LidMap& lids,
                  std::vector<Guid>& sources, std::vector<std::uint32_t>& source_sw,
                  std::vector<std::uint32_t>& dlids) {
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    if (t.node(n).type == routing::NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      const auto port = static_cast<PortNum>(p);
      const Lid base = lids.base_lid(t, n, port);
      if (!base.valid()) continue;
      sources.push_back(t.node(n).guid);  // ibdmchk finds sources by node GUID
      const routing::Port& cable = t.port(n, port);
      source_sw.push_back(cable.connected() && t.node(cable.remote_node).type == NodeType::kSwitch
                              ? t.node(cable.remote_node).switch_index.value
                              : kNoSwitch.value);
      for (std::uint32_t k = 0; k < lids.lids_per_port(t, n); ++k) dlids.push_back(base.value + k);
    }
  }
}

// Each pair's SL: its destination's layer, or its source switch's where
// the layers depend on the source (Routes::path_layers).
std::string path_sl_text(const std::vector<Guid>& sources,
                         const std::vector<std::uint32_t>& source_sw,
                         const std::vector<std::uint32_t>& dlids, const routing::Routes& routes) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::uint32_t sw = source_sw[i];
    for (const std::uint32_t d : dlids) {
      const std::uint8_t sl =
          sw == kNoSwitch.value ? routes.layer(Lid{d}) : routes.path_layer(sw, Lid{d});
      fmt::format_to(it, "0x{:016x} {} {}\n", sources[i].value, d, sl);
    }
  }
  return fmt::to_string(out);
}

}  // namespace

std::string format_path_sl(const routing::Topology& t, const routing::LidMap& lids,
                           const routing::Routes& routes) {
  std::vector<Guid> sources;
  std::vector<std::uint32_t> source_sw, dlids;
  path_sl_ends(t, lids, sources, source_sw, dlids);
  return path_sl_text(sources, source_sw, dlids, routes);
}

std::string format_sl2vl(const routing::Topology& t, const routing::LidMap& lids,
                         const routing::Routes& routes) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const routing::Node& node = t.node(n);
    if (node.type != NodeType::kSwitch) continue;
    fmt::format_to(
        it,
        "Switch 0x{:016x}, base LID {}, \"{}\"\n#in out : 0  1  2  3  4  5  6  7  8  9  10 "
        "11 12 13 14 15\n#{}\n",
        t.port(n, 0).guid.value, lids.base_lid(t, n, 0).value, node.description,
        std::string(56, '-'));
    for (unsigned o = 1; o <= node.num_ports; ++o) {
      if (!t.port(n, static_cast<PortNum>(o)).connected()) continue;
      std::array<std::uint8_t, routing::kNumSls> vl{};
      for (std::uint32_t sl = 0; sl < routing::kNumSls; ++sl) {
        vl[sl] = routes.hop_vl(node.switch_index.value, static_cast<std::uint8_t>(o),
                               static_cast<std::uint8_t>(sl));
      }
      for (unsigned in = 0; in <= node.num_ports; ++in) {
        if (in != 0 && (in == o || !t.port(n, static_cast<PortNum>(in)).connected())) continue;
        fmt::format_to(it, "{:<3} {:<3} :", in, o);
        for (const std::uint8_t v : vl) fmt::format_to(it, " {:<2}", v);
        fmt::format_to(it, "\n");
      }
    }
  }
  return fmt::to_string(out);
}

Result<void> write_dump_files(const std::string& dir, const routing::Topology& t,
                              const routing::LidMap& lids, const routing::Routes& routes,
                              NodeId sm_node, const routing::McastTables* multicast,
                              std::uint64_t path_sl_max_lines) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{Errc::kIo, fmt::format("dump_dir {}: {}", dir, ec.message())};
  const std::filesystem::path d(dir);
  SUBNETD_TRY(write_atomically(d / "opensm-subnet.lst", format_subnet_lst(t, lids, sm_node)));
  SUBNETD_TRY(write_atomically(d / "opensm.fdbs", format_fdbs(t, lids, routes)));
  SUBNETD_TRY(write_atomically(d / "opensm.mcfdbs", format_mcfdbs(t, multicast)));
  // None left from before unless written below, with the path-SL file.
  std::filesystem::remove(d / "opensm-sl2vl.dump", ec);
  if (routes.num_vls <= 1) {
    std::filesystem::remove(d / "opensm-path-sl.dump", ec);
    return {};
  }
  std::vector<Guid> sources;
  std::vector<std::uint32_t> source_sw, dlids;
  path_sl_ends(t, lids, sources, source_sw, dlids);
  const std::uint64_t lines = std::uint64_t{sources.size()} * dlids.size();
  if (lines > path_sl_max_lines) {
    std::filesystem::remove(d / "opensm-path-sl.dump", ec);  // none left from before
    return Error{Errc::kOutOfRange,
                 fmt::format("opensm-path-sl.dump not written: {} CA/router ports x {} LIDs is {} "
                             "lines, over the {} it is written for (ibdmchk -c is a small "
                             "fabric's check; subnetd's verifier checks every VL); the other "
                             "files are written",
                             sources.size(), dlids.size(), lines, path_sl_max_lines)};
  }
  SUBNETD_TRY(
      write_atomically(d / "opensm-path-sl.dump", path_sl_text(sources, source_sw, dlids, routes)));
  if (routes.per_hop_vls()) {
    SUBNETD_TRY(write_atomically(d / "opensm-sl2vl.dump", format_sl2vl(t, lids, routes)));
  }
  return {};
}

}  // namespace subnetd::daemon

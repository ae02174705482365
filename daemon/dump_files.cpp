#include "daemon/dump_files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

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
              NodeId n, PortNum p) {
  const routing::Node& node = t.node(n);
  const bool sw = node.type == NodeType::kSwitch;
  const Guid port_guid = sw ? t.port(n, 0).guid : t.port(n, p).guid;
  const Lid lid = sw ? lids.base_lid(t, n, 0) : lids.base_lid(t, n, p);
  fmt::format_to(std::back_inserter(out),
                 "{{ {} Ports:{:02X} SystemGUID:{:016X} NodeGUID:{:016X} PortGUID:{:016X} "
                 "VenID:000000 DevID:0000 Rev:000000A1 {{{}}} LID:{:04X} PN:{:02X} }}",
                 sw ? "SW" : "CA", node.num_ports, node.system_guid.value, node.guid.value,
                 port_guid.value, node.description, lid.value, p);
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

std::string format_subnet_lst(const routing::Topology& t, const routing::LidMap& lids) {
  fmt::memory_buffer out;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
      const PortNum p = static_cast<PortNum>(pn);
      const routing::Port& port = t.port(n, p);
      if (!port.connected()) continue;
      port_end(out, t, lids, n, p);
      out.push_back(' ');
      port_end(out, t, lids, port.remote_node, port.remote_port);
      fmt::format_to(std::back_inserter(out), " PHY={} LOG={} SPD={}\n",
                     width_name(port.width_active), state_name(port.state),
                     speed_name(port.speed_active));
    }
  }
  return fmt::to_string(out);
}

std::string format_fdbs(const routing::Topology& t, const routing::LidMap& lids,
                        const routing::Routes& routes) {
  fmt::memory_buffer out;
  const std::uint32_t max_lid = routes.max_lid.value;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(s);
    const routing::Node& node = t.node(n);
    const routing::Lft& lft = routes.lfts[s];
    fmt::format_to(std::back_inserter(out),
                   "Unicast lids [0-{}] of switch Lid {} guid 0x{:016x} ('{}'):\n", max_lid,
                   lids.base_lid(t, n, 0).value, node.guid.value, node.description);
    for (std::uint32_t l = 0; l <= max_lid; ++l) {
      const std::uint8_t port = lft.get(Lid{l});
      if (port > node.num_ports) continue;
      fmt::format_to(std::back_inserter(out), "0x{:04x} {:03} # ", l, port);
      const PortRef owner = lids.owner_of(Lid{l});
      if (owner.node.valid()) {
        const routing::Node& dst = t.node(owner.node);
        const Guid g = dst.type == NodeType::kSwitch ? t.port(owner.node, 0).guid
                                                     : t.port(owner.node, owner.port).guid;
        fmt::format_to(std::back_inserter(out), "{} portguid 0x{:016x}: '{}'\n",
                       dst.type == NodeType::kSwitch ? "Switch" : "Channel Adapter", g.value,
                       dst.description);
      } else {
        fmt::format_to(std::back_inserter(out), "unknown node and type\n");
      }
    }
    fmt::format_to(std::back_inserter(out), "{} lids dumped\n", max_lid);
  }
  return fmt::to_string(out);
}

Result<void> write_dump_files(const std::string& dir, const routing::Topology& t,
                              const routing::LidMap& lids, const routing::Routes& routes) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{Errc::kIo, fmt::format("dump_dir {}: {}", dir, ec.message())};
  const std::filesystem::path d(dir);
  SUBNETD_TRY(write_atomically(d / "opensm-subnet.lst", format_subnet_lst(t, lids)));
  SUBNETD_TRY(write_atomically(d / "opensm.fdbs", format_fdbs(t, lids, routes)));
  SUBNETD_TRY(write_atomically(d / "opensm.mcfdbs", ""));
  return {};
}

}  // namespace subnetd::daemon

// The net-file writer (declared in netfile.hpp): one record per node, ids
// ibsim accepts, link modes as annotations; and ibsim's sizing options.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "discovery/topo/netfile.hpp"
#include "discovery/topo/netfile_format.hpp"

namespace subnetd::discovery::topo {
namespace {

using namespace netfile_format;
using routing::Node;
using routing::NodeType;
using routing::Topology;

bool valid_ibsim_id(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength) return false;
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '#' || ch == '@' || ch == '"' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

// A description as it can sit inside the quotes of a header comment.
std::string quotable(std::string_view s) {
  std::string out(s.substr(0, kMaxDescLength));
  for (char& ch : out) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || u < 0x20 || u == 0x7f) ch = '?';
  }
  return out;
}

// Net-file ids: the description when it is a valid id used by no other node,
// else "S-/H-/R-<guid>" as ibnetdiscover names nodes.
std::vector<std::string> choose_ids(const Topology& t) {
  std::unordered_map<std::string_view, std::uint32_t> uses;
  uses.reserve(t.num_nodes());
  for (const Node& n : t.nodes()) ++uses[n.description];
  std::vector<std::string> ids(t.num_nodes());
  std::vector<std::uint32_t> pending;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const Node& n = t.nodes()[i];
    if (uses[n.description] == 1 && valid_ibsim_id(n.description)) {
      ids[i] = n.description;
    } else {
      pending.push_back(i);
    }
  }
  std::unordered_map<std::string_view, std::uint32_t> taken;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    if (!ids[i].empty()) taken.emplace(ids[i], i);
  }
  std::deque<std::string> generated;  // stable storage for the keys of `taken`
  for (std::uint32_t i : pending) {
    const Node& n = t.nodes()[i];
    const char prefix = n.type == NodeType::kSwitch ? 'S' : n.type == NodeType::kRouter ? 'R' : 'H';
    std::string id = fmt::format("{}-{:016x}", prefix, n.guid.value);
    if (taken.count(id) != 0) id += fmt::format("-n{}", i);  // duplicate GUIDs in the input
    generated.push_back(id);
    taken.emplace(generated.back(), i);
    ids[i] = std::move(id);
  }
  return ids;
}

const char* lanes_name(std::uint8_t width) {
  switch (width) {
    case kWidth1x:
      return "1";
    case kWidth2x:
      return "2";
    case kWidth4x:
      return "4";
    case kWidth8x:
      return "8";
    case kWidth12x:
      return "12";
    default:
      return nullptr;
  }
}

const char* speed_name(std::uint8_t speed) {
  switch (speed) {
    case kSpeedSdr:
      return "SDR";
    case kSpeedDdr:
      return "DDR";
    case kSpeedQdr:
      return "QDR";
    default:
      return nullptr;
  }
}

void write_record(fmt::memory_buffer& out, const Topology& t, NodeId id,
                  const std::vector<std::string>& ids) {
  auto it = fmt::appender(out);
  const Node& n = t.node(id);
  if (n.system_guid != n.guid) fmt::format_to(it, "sysimgguid={:#018x}\n", n.system_guid.value);
  const char* keyword = "Hca";
  const char* guid_key = "caguid";
  if (n.type == NodeType::kSwitch) {
    keyword = "Switch";
    guid_key = "switchguid";
  } else if (n.type == NodeType::kRouter) {
    keyword = "Rt";
    guid_key = "rtguid";
  }
  fmt::format_to(it, "{}={:#018x}\n{} {} \"{}\"", guid_key, n.guid.value, keyword, n.num_ports,
                 ids[id.value]);
  if (ids[id.value] != n.description) fmt::format_to(it, "\t# \"{}\"", quotable(n.description));
  out.push_back('\n');
  for (unsigned p = 1; p <= n.num_ports; ++p) {
    const routing::Port& port = t.port(id, static_cast<PortNum>(p));
    if (!port.connected()) continue;
    fmt::format_to(it, "[{}]", p);
    if (n.type != NodeType::kSwitch && port.guid.value != n.guid.value + p) {
      fmt::format_to(it, "({:x})", port.guid.value);
    }
    fmt::format_to(it, "\t\"{}\"[{}]", ids[port.remote_node.value], port.remote_port);
    const char* lanes = lanes_name(port.width_active);
    const char* speed = speed_name(port.speed_active);
    if (lanes != nullptr && speed != nullptr) fmt::format_to(it, "\t# lid 0 {}x{}", lanes, speed);
    out.push_back('\n');
  }
  out.push_back('\n');
}

}  // namespace

std::string write_netfile(const routing::Topology& t) {
  const std::vector<std::string> ids = choose_ids(t);
  const IbsimSizing size = ibsim_sizing(t);
  fmt::memory_buffer out;
  out.reserve(t.num_nodes() * 64 + t.num_ports_total() * 32);
  fmt::format_to(fmt::appender(out),
                 "# subnetd net file: {} switches, {} CAs/routers, {} links\n"
                 "# ibsim sizing: {}\n\n",
                 t.num_switches(), t.num_cas(), t.num_links(), fmt::join(size.args(), " "));
  // ibsim attaches the SM (and the diag tools) to the first port in the file:
  // lead with a CA whose port 1 is linked.
  std::optional<NodeId> lead;
  for (std::uint32_t i = 0; i < t.num_nodes() && !lead; ++i) {
    const Node& n = t.nodes()[i];
    if (n.type == NodeType::kCa && t.port(NodeId{i}, 1).connected()) lead = NodeId{i};
  }
  if (lead) write_record(out, t, *lead, ids);
  for (NodeType type : {NodeType::kCa, NodeType::kRouter, NodeType::kSwitch}) {
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      if (t.nodes()[i].type == type && (!lead || lead->value != i)) {
        write_record(out, t, NodeId{i}, ids);
      }
    }
  }
  return fmt::to_string(out);
}

Result<void> save_netfile(const routing::Topology& topo, const std::string& path) {
  const std::string text = write_netfile(topo);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) {
    return Error{Errc::kIo, fmt::format("cannot create {}: {}", path, std::strerror(errno))};
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  if (!written || std::fclose(f.release()) != 0) {
    return Error{Errc::kIo, fmt::format("cannot write {}: {}", path, std::strerror(errno))};
  }
  return {};
}

std::vector<std::string> IbsimSizing::args() const {
  std::vector<std::string> a{"-N", std::to_string(nodes), "-S", std::to_string(switches),
                             "-P", std::to_string(ports)};
  if (linear_fdb_cap != 0) {
    a.push_back("-L");
    a.push_back(std::to_string(linear_fdb_cap));
  }
  return a;
}

IbsimSizing ibsim_sizing(const routing::Topology& t, unsigned lmc) {
  IbsimSizing s;
  s.nodes = static_cast<std::uint32_t>(t.num_nodes());
  s.switches = static_cast<std::uint32_t>(t.num_switches());
  std::uint64_t ports = 0;
  std::uint64_t endpoints = 0;
  for (const Node& n : t.nodes()) {
    if (n.type == NodeType::kSwitch) {
      ports += n.num_ports + 1u;
      endpoints += 1;
    } else {
      ports += n.num_ports;
      endpoints += n.num_ports;
    }
  }
  s.ports = static_cast<std::uint32_t>(ports);
  s.lids_needed = endpoints << lmc;
  // ibsim indexes its LFTs by LID, so the highest LID must be below the cap.
  if (s.lids_needed >= kIbsimDefaultLinearFdbCap) s.linear_fdb_cap = kIbsimFullLinearFdbCap;
  return s;
}

}  // namespace subnetd::discovery::topo

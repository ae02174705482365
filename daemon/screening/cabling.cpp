#include "daemon/screening/cabling.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "daemon/config_parser.hpp"
#include "discovery/topo/netfile.hpp"
#include "routing/text.hpp"

namespace subnetd::state {

const char* cabling_finding_name(CablingFindingKind k) {
  switch (k) {
    case CablingFindingKind::kMissingNode:
      return "missing node";
    case CablingFindingKind::kUnexpectedNode:
      return "unexpected node";
    case CablingFindingKind::kNodeMismatch:
      return "node mismatch";
    case CablingFindingKind::kDescriptionMismatch:
      return "description mismatch";
    case CablingFindingKind::kMissingCable:
      return "missing cable";
    case CablingFindingKind::kUnexpectedCable:
      return "unexpected cable";
    case CablingFindingKind::kMiswired:
      return "miswired";
    case CablingFindingKind::kSwapped:
      return "swapped";
    case CablingFindingKind::kWidthBelow:
      return "width below plan";
    case CablingFindingKind::kSpeedBelow:
      return "speed below plan";
    case CablingFindingKind::kDuplicateGuid:
      return "duplicate GUID";
  }
  return "?";
}

}  // namespace subnetd::state

namespace subnetd::daemon::screening {

namespace {

using routing::NodeType;
using routing::Topology;
using state::CablingFinding;
using state::CablingFindingKind;
using state::CablingReport;

struct WidthName {
  std::string_view name;
  std::uint8_t bit;
  unsigned lanes;
};
constexpr WidthName kWidths[] = {
    {"1x", 1, 1}, {"2x", 16, 2}, {"4x", 2, 4}, {"8x", 4, 8}, {"12x", 8, 12}};
struct SpeedName {
  std::string_view name;
  std::uint8_t bit;
};
constexpr SpeedName kSpeeds[] = {{"SDR", 1}, {"DDR", 2}, {"QDR", 4}};

unsigned lanes(std::uint8_t bit) {
  for (const WidthName& w : kWidths) {
    if (w.bit == bit) return w.lanes;
  }
  return 0;
}
std::string width_text(std::uint8_t bit) {
  for (const WidthName& w : kWidths) {
    if (w.bit == bit) return std::string(w.name);
  }
  return bit == 0 ? "none" : fmt::format("width bit {:#x}", bit);
}
std::string speed_text(std::uint8_t bit) {
  for (const SpeedName& s : kSpeeds) {
    if (s.bit == bit) return std::string(s.name);
  }
  return bit == 0 ? "none" : fmt::format("speed bit {:#x}", bit);
}
std::string type_text(NodeType t) {
  switch (t) {
    case NodeType::kSwitch:
      return "switch";
    case NodeType::kCa:
      return "ca";
    case NodeType::kRouter:
      return "router";
  }
  return "?";
}

bool yaml_name(std::string_view name) {
  return name.ends_with(".yaml") || name.ends_with(".yml");
}

// --- YAML plans -------------------------------------------------------------

using config_detail::Parser;

struct PendingCable {
  std::string a, b;  // "NAME/PORT"
  std::uint8_t width = 0, speed = 0;
  YAML::Mark mark;
  std::string path;
};

// "NAME/PORT" -> name and port (the last '/' separates them: names may
// contain '/').
std::optional<std::pair<std::string, PortNum>> split_end(std::string_view end) {
  const std::size_t slash = end.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  unsigned port = 0;
  const std::string_view num = end.substr(slash + 1);
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), port);
  if (ec != std::errc{} || p != num.data() + num.size() || port < 1 || port > 254) {
    return std::nullopt;
  }
  return std::pair(std::string(end.substr(0, slash)), static_cast<PortNum>(port));
}

Result<CablingPlan> parse_yaml_plan(std::string_view text, std::string_view name) {
  CablingPlan plan;
  plan.source = std::string(name);
  Parser p(name);
  std::vector<PendingCable> pending;
  static constexpr config_detail::EnumName<NodeType> kTypes[] = {
      {"switch", NodeType::kSwitch}, {"ca", NodeType::kCa}, {"router", NodeType::kRouter}};
  static constexpr config_detail::EnumName<std::uint8_t> kWidthNames[] = {
      {"1x", 1}, {"2x", 16}, {"4x", 2}, {"8x", 4}, {"12x", 8}};
  static constexpr config_detail::EnumName<std::uint8_t> kSpeedNames[] = {
      {"SDR", 1}, {"DDR", 2}, {"QDR", 4}};
  std::unordered_map<std::string, std::uint32_t> by_name;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    const Parser::Key top[] = {
        {"nodes",
         [&](const YAML::Node& list, const std::string& path) {
           if (!list.IsSequence()) {
             p.fail(list.Mark(), path,
                    fmt::format("expected a list, got {}", config_detail::describe(list)));
             return;
           }
           for (std::size_t i = 0; i < list.size(); ++i) {
             const std::string at = fmt::format("{}[{}]", path, i);
             PlanNode n;
             bool named = false;
             const Parser::Key keys[] = {
                 {"name",
                  [&](const YAML::Node& v, const std::string& kp) {
                    if (auto s = p.scalar(v, kp)) {
                      if (s->empty() || s->size() > config_detail::kMaxNodeDescription) {
                        p.fail(v.Mark(), kp, "a node name is 1..64 characters");
                        return;
                      }
                      n.name = *s;
                      named = true;
                    }
                  }},
                 {"guid",
                  [&](const YAML::Node& v, const std::string& kp) {
                    if (auto g = p.guid(v, kp)) n.guid = *g;
                  }},
                 {"type",
                  [&](const YAML::Node& v, const std::string& kp) {
                    if (auto t = p.enumeration<NodeType>(v, kp, "node type", kTypes)) {
                      n.type = *t;
                      n.type_known = true;
                    }
                  }},
                 {"ports",
                  [&](const YAML::Node& v, const std::string& kp) {
                    if (auto c = p.integer(v, kp, 1, 254)) n.ports = static_cast<std::uint8_t>(*c);
                  }},
             };
             p.mapping(list[i], at, keys);
             if (!list[i].IsMap()) continue;
             if (!named) {
               p.fail(list[i].Mark(), at, "a node needs a name");
               continue;
             }
             if (!by_name.emplace(n.name, static_cast<std::uint32_t>(plan.nodes.size())).second) {
               p.fail(list[i].Mark(), at + ".name",
                      fmt::format("node \"{}\" is listed twice", printable(n.name)));
               continue;
             }
             plan.nodes.push_back(std::move(n));
           }
         }},
        {"cables",
         [&](const YAML::Node& list, const std::string& path) {
           if (!list.IsSequence()) {
             p.fail(list.Mark(), path,
                    fmt::format("expected a list, got {}", config_detail::describe(list)));
             return;
           }
           for (std::size_t i = 0; i < list.size(); ++i) {
             const std::string at = fmt::format("{}[{}]", path, i);
             const YAML::Node& c = list[i];
             PendingCable pc;
             pc.mark = c.Mark();
             pc.path = at;
             if (c.IsSequence()) {
               if (c.size() != 2) {
                 p.fail(c.Mark(), at, "a cable as a list is [\"NAME/PORT\", \"NAME/PORT\"]");
                 continue;
               }
               auto a = p.scalar(c[0], at + "[0]");
               auto b = p.scalar(c[1], at + "[1]");
               if (!a || !b) continue;
               pc.a = *a;
               pc.b = *b;
             } else {
               const Parser::Key keys[] = {
                   {"a",
                    [&](const YAML::Node& v, const std::string& kp) {
                      if (auto s = p.scalar(v, kp)) pc.a = *s;
                    }},
                   {"b",
                    [&](const YAML::Node& v, const std::string& kp) {
                      if (auto s = p.scalar(v, kp)) pc.b = *s;
                    }},
                   {"width",
                    [&](const YAML::Node& v, const std::string& kp) {
                      if (auto w = p.enumeration<std::uint8_t>(v, kp, "width", kWidthNames)) {
                        pc.width = *w;
                      }
                    }},
                   {"speed",
                    [&](const YAML::Node& v, const std::string& kp) {
                      if (auto s = p.enumeration<std::uint8_t>(v, kp, "speed", kSpeedNames)) {
                        pc.speed = *s;
                      }
                    }},
               };
               p.mapping(c, at, keys);
               if (!c.IsMap()) continue;
               if (pc.a.empty() || pc.b.empty()) {
                 p.fail(c.Mark(), at, "a cable needs both ends, a and b (\"NAME/PORT\")");
                 continue;
               }
             }
             pending.push_back(std::move(pc));
           }
         }},
    };
    p.mapping(root, "", top);
  } catch (const YAML::Exception& e) {
    return config_detail::yaml_error(e, name);
  }
  // Cable ends name listed nodes; a port is used by one cable.
  std::unordered_map<std::uint64_t, std::string> used;  // (node, port) -> cable path
  for (const PendingCable& pc : pending) {
    PlanCable cable;
    cable.width = pc.width;
    cable.speed = pc.speed;
    bool ok = true;
    for (int side = 0; side < 2; ++side) {
      const std::string& end = side == 0 ? pc.a : pc.b;
      auto split = split_end(end);
      if (!split) {
        p.fail(pc.mark, pc.path,
               fmt::format("bad end \"{}\" (expected \"NAME/PORT\", port 1..254)", printable(end)));
        ok = false;
        continue;
      }
      auto it = by_name.find(split->first);
      if (it == by_name.end()) {
        p.fail(
            pc.mark, pc.path,
            fmt::format("\"{}\" is not a node of the plan's nodes list", printable(split->first)));
        ok = false;
        continue;
      }
      const PlanNode& n = plan.nodes[it->second];
      if (n.ports != 0 && split->second > n.ports) {
        p.fail(pc.mark, pc.path,
               fmt::format("{} has {} ports, not {}", printable(n.name), n.ports, split->second));
        ok = false;
        continue;
      }
      const std::uint64_t key = (std::uint64_t{it->second} << 8) | split->second;
      if (auto [u, fresh] = used.emplace(key, pc.path); !fresh) {
        p.fail(pc.mark, pc.path,
               fmt::format("{} is already cabled by {}", printable(end), u->second));
        ok = false;
        continue;
      }
      (side == 0 ? cable.a : cable.b) = it->second;
      (side == 0 ? cable.pa : cable.pb) = split->second;
    }
    if (ok) plan.cables.push_back(cable);
  }
  SUBNETD_TRY(p.finish());
  return plan;
}

// --- comparison ---------------------------------------------------------------

std::uint64_t port_key(NodeId n, PortNum p) {
  return (std::uint64_t{n.value} << 8) | p;
}

class Checker {
 public:
  Checker(const CablingPlan& plan, const Topology& t) : plan_(plan), t_(t) {}

  CablingReport run() {
    CablingReport r;
    r.plan = plan_.source;
    r.plan_nodes = static_cast<std::uint32_t>(plan_.nodes.size());
    r.plan_cables = static_cast<std::uint32_t>(plan_.cables.size());
    r.found_nodes = static_cast<std::uint32_t>(t_.num_nodes());
    r.found_cables = static_cast<std::uint32_t>(t_.num_links());
    match_nodes();
    check_cables();
    unexpected();
    std::stable_sort(
        out_.begin(), out_.end(), [](const CablingFinding& a, const CablingFinding& b) {
          return std::tie(a.kind, a.node_name, a.port) < std::tie(b.kind, b.node_name, b.port);
        });
    r.findings = std::move(out_);
    return r;
  }

 private:
  std::string found_end(NodeId n, PortNum p) const {
    return fmt::format("{}/{}", printable(t_.node(n).description), p);
  }
  std::string plan_end(std::uint32_t node, PortNum p) const {
    return fmt::format("{}/{}", printable(plan_.nodes[node].name), p);
  }
  void add(CablingFindingKind k, NodeId n, PortNum port, std::string expected, std::string found,
           std::string message) {
    CablingFinding f;
    f.kind = k;
    if (n.valid()) {
      f.node_guid = t_.node(n).guid;
      f.node_name = printable(t_.node(n).description);
    }
    f.port = port;
    f.expected = std::move(expected);
    f.found = std::move(found);
    f.message = std::move(message);
    out_.push_back(std::move(f));
  }

  void match_nodes() {
    // Descriptions that name exactly one found node.
    std::unordered_map<std::string_view, NodeId> by_desc;
    std::unordered_map<std::string_view, int> desc_count;
    for (std::size_t i = 0; i < t_.num_nodes(); ++i) {
      const NodeId n{static_cast<std::uint32_t>(i)};
      ++desc_count[t_.node(n).description];
      by_desc.emplace(t_.node(n).description, n);
    }
    match_.assign(plan_.nodes.size(), kNoNode);
    planned_.assign(t_.num_nodes(), false);
    for (std::uint32_t i = 0; i < plan_.nodes.size(); ++i) {
      const PlanNode& pn = plan_.nodes[i];
      std::optional<NodeId> n;
      if (pn.guid.value != 0) {
        n = t_.find_by_guid(pn.guid);
      } else if (auto it = by_desc.find(pn.name); it != by_desc.end()) {
        if (desc_count[pn.name] == 1) {
          n = it->second;
        } else {
          add(CablingFindingKind::kMissingNode, kNoNode, 0, pn.name,
              fmt::format("{} nodes with that description", desc_count[pn.name]),
              fmt::format("plan node \"{}\" (no GUID) matches {} nodes by description; give its "
                          "GUID",
                          printable(pn.name), desc_count[pn.name]));
          continue;
        }
      }
      if (!n || planned_[n->value]) {
        missing_.push_back(i);
        continue;
      }
      match_[i] = *n;
      planned_[n->value] = true;
      const routing::Node& node = t_.node(*n);
      if ((pn.type_known && pn.type != node.type) ||
          (pn.ports != 0 && pn.ports != node.num_ports)) {
        const std::string expected =
            fmt::format("{}, {} ports", pn.type_known ? type_text(pn.type) : type_text(node.type),
                        pn.ports != 0 ? pn.ports : node.num_ports);
        const std::string found = fmt::format("{}, {} ports", type_text(node.type), node.num_ports);
        add(CablingFindingKind::kNodeMismatch, *n, 0, expected, found,
            fmt::format("{} is a {}; the plan says {}", t_.label(*n), found, expected));
      }
      if (node.description != pn.name) {
        add(CablingFindingKind::kDescriptionMismatch, *n, 0, pn.name, printable(node.description),
            fmt::format("{}: NodeDescription \"{}\", the plan names it \"{}\"", t_.label(*n),
                        printable(node.description), printable(pn.name)));
      }
    }
    // Missing nodes, with how many planned cables they take along.
    std::vector<std::uint32_t> cables_of(plan_.nodes.size(), 0);
    for (const PlanCable& c : plan_.cables) {
      ++cables_of[c.a];
      ++cables_of[c.b];
    }
    for (std::uint32_t i : missing_) {
      const PlanNode& pn = plan_.nodes[i];
      const std::string id =
          pn.guid.value != 0 ? fmt::format(" ({:#018x})", pn.guid.value) : std::string();
      add(CablingFindingKind::kMissingNode, kNoNode, 0, printable(pn.name) + id, "not found",
          fmt::format("plan node \"{}\"{} not found; its {} planned cables neither",
                      printable(pn.name), id, cables_of[i]));
      out_.back().node_guid = pn.guid;
      out_.back().node_name = printable(pn.name);
    }
  }

  void check_cables() {
    // Every planned port of a found node, to its planned peer.
    for (std::uint32_t ci = 0; ci < plan_.cables.size(); ++ci) {
      const PlanCable& c = plan_.cables[ci];
      if (match_[c.a].valid()) planned_port_.emplace(port_key(match_[c.a], c.pa), ci);
      if (match_[c.b].valid()) planned_port_.emplace(port_key(match_[c.b], c.pb), ci);
    }
    std::unordered_map<std::uint64_t, bool> reported;  // found port already in a finding
    for (std::uint32_t ci = 0; ci < plan_.cables.size(); ++ci) {
      const PlanCable& c = plan_.cables[ci];
      const NodeId a = match_[c.a], b = match_[c.b];
      if (!a.valid() || !b.valid()) continue;  // a missing node's finding covers it
      for (int side = 0; side < 2; ++side) {
        const NodeId n = side == 0 ? a : b;
        const PortNum p = side == 0 ? c.pa : c.pb;
        const NodeId peer = side == 0 ? b : a;
        const PortNum peer_port = side == 0 ? c.pb : c.pa;
        if (p > t_.node(n).num_ports) {
          add(CablingFindingKind::kMissingCable, n, p, plan_end(side == 0 ? c.b : c.a, peer_port),
              "no such port",
              fmt::format("{} port {}: planned to {}, but the node has {} ports", t_.label(n), p,
                          plan_end(side == 0 ? c.b : c.a, peer_port), t_.node(n).num_ports));
          reported[port_key(n, p)] = true;
          continue;
        }
        const routing::Port& port = t_.port(n, p);
        if (port.connected() && port.remote_node == peer && port.remote_port == peer_port) {
          if (side == 0) check_training(c, n, p);
          continue;
        }
        if (reported[port_key(n, p)]) continue;
        if (!port.connected()) {
          // Reported once, from the end with no link (both, when both
          // have none: a cable not plugged at all is one finding).
          const routing::Port& other = t_.port(peer, peer_port);
          if (side == 1 && !other.connected() && peer_port <= t_.node(peer).num_ports) continue;
          add(CablingFindingKind::kMissingCable, n, p, found_end(peer, peer_port), "no link",
              fmt::format("cable {} - {} not found: {} port {} has no link", plan_end(c.a, c.pa),
                          plan_end(c.b, c.pb), t_.label(n), p));
          reported[port_key(n, p)] = true;
          continue;
        }
        // Leads elsewhere. Swapped: where it leads is planned (cable cj) to
        // come back to another port q of n, and q leads to our peer.
        const NodeId r = port.remote_node;
        const PortNum rp = port.remote_port;
        auto pj = planned_port_.find(port_key(r, rp));
        if (pj != planned_port_.end()) {
          const PlanCable& d = plan_.cables[pj->second];
          const bool r_is_a = match_[d.a] == r && d.pa == rp;
          const NodeId q_node = r_is_a ? match_[d.b] : match_[d.a];
          const PortNum q = r_is_a ? d.pb : d.pa;
          if (q_node == n && q <= t_.node(n).num_ports) {
            const routing::Port& qp = t_.port(n, q);
            if (qp.connected() && qp.remote_node == peer && qp.remote_port == peer_port) {
              add(CablingFindingKind::kSwapped, n, p,
                  fmt::format("{} to {}, {} to {}", found_end(n, p), found_end(peer, peer_port),
                              found_end(n, q), found_end(r, rp)),
                  fmt::format("{} to {}, {} to {}", found_end(n, p), found_end(r, rp),
                              found_end(n, q), found_end(peer, peer_port)),
                  fmt::format("{} ports {} and {} are swapped: port {} goes to {} (planned {}), "
                              "port {} to {} (planned {})",
                              t_.label(n), p, q, p, found_end(r, rp), found_end(peer, peer_port), q,
                              found_end(peer, peer_port), found_end(r, rp)));
              reported[port_key(n, p)] = reported[port_key(n, q)] = true;
              reported[port_key(r, rp)] = reported[port_key(peer, peer_port)] = true;
              continue;
            }
          }
        }
        add(CablingFindingKind::kMiswired, n, p, found_end(peer, peer_port), found_end(r, rp),
            fmt::format("{} port {} goes to {}; the plan says {}", t_.label(n), p, found_end(r, rp),
                        found_end(peer, peer_port)));
        reported[port_key(n, p)] = true;
      }
    }
  }

  // Both ends of a link train together; a report of one end that differs
  // (a port being retrained) counts the lower.
  void check_training(const PlanCable& c, NodeId n, PortNum p) {
    const routing::Port& port = t_.port(n, p);
    const routing::Port& other = t_.port(port.remote_node, port.remote_port);
    const std::uint8_t width = lanes(other.width_active) < lanes(port.width_active)
                                   ? other.width_active
                                   : port.width_active;
    const std::uint8_t speed = std::min(port.speed_active, other.speed_active);
    if (c.width != 0 && lanes(width) < lanes(c.width)) {
      add(CablingFindingKind::kWidthBelow, n, p, width_text(c.width), width_text(width),
          fmt::format("{} port {} (to {}) trained at {}; the plan says {}", t_.label(n), p,
                      found_end(port.remote_node, port.remote_port), width_text(width),
                      width_text(c.width)));
    }
    if (c.speed != 0 && speed < c.speed) {
      add(CablingFindingKind::kSpeedBelow, n, p, speed_text(c.speed), speed_text(speed),
          fmt::format("{} port {} (to {}) trained at {}; the plan says {}", t_.label(n), p,
                      found_end(port.remote_node, port.remote_port), speed_text(speed),
                      speed_text(c.speed)));
    }
  }

  void unexpected() {
    for (std::size_t i = 0; i < t_.num_nodes(); ++i) {
      const NodeId n{static_cast<std::uint32_t>(i)};
      const routing::Node& node = t_.node(n);
      if (!planned_[i]) {
        add(CablingFindingKind::kUnexpectedNode, n, 0, "not in the plan",
            fmt::format("{}, {} ports", type_text(node.type), node.num_ports),
            fmt::format("{} ({}, {} ports) is not in the plan", t_.label(n), type_text(node.type),
                        node.num_ports));
        continue;
      }
      for (PortNum p = 1; p <= node.num_ports; ++p) {
        const routing::Port& port = t_.port(n, p);
        if (!port.connected() || !planned_[port.remote_node.value]) continue;
        if (std::pair(port.remote_node.value, port.remote_port) < std::pair(n.value, p)) continue;
        if (planned_port_.count(port_key(n, p)) != 0 ||
            planned_port_.count(port_key(port.remote_node, port.remote_port)) != 0) {
          continue;  // a planned port: correct, or miswired (above)
        }
        add(CablingFindingKind::kUnexpectedCable, n, p, "no cable",
            found_end(port.remote_node, port.remote_port),
            fmt::format("{} port {} is cabled to {}, which the plan does not have", t_.label(n), p,
                        found_end(port.remote_node, port.remote_port)));
      }
    }
  }

  const CablingPlan& plan_;
  const Topology& t_;
  std::vector<NodeId> match_;  // plan node -> found node (kNoNode: missing)
  std::vector<bool> planned_;  // found node -> matched by the plan
  std::vector<std::uint32_t> missing_;
  std::unordered_map<std::uint64_t, std::uint32_t> planned_port_;  // found port -> plan cable
  std::vector<CablingFinding> out_;
};

}  // namespace

CablingPlan plan_of(const Topology& t, std::string source) {
  CablingPlan plan;
  plan.source = std::move(source);
  plan.nodes.reserve(t.num_nodes());
  for (std::size_t i = 0; i < t.num_nodes(); ++i) {
    const routing::Node& n = t.node(NodeId{static_cast<std::uint32_t>(i)});
    plan.nodes.push_back(PlanNode{n.description, n.guid, true, n.type, n.num_ports});
  }
  for (std::size_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{static_cast<std::uint32_t>(i)};
    for (PortNum p = 1; p <= t.node(n).num_ports; ++p) {
      const routing::Port& port = t.port(n, p);
      if (!port.connected()) continue;
      if (std::pair(port.remote_node.value, port.remote_port) < std::pair(n.value, p)) continue;
      plan.cables.push_back(PlanCable{n.value, port.remote_node.value, p, port.remote_port,
                                      port.width_active, port.speed_active});
    }
  }
  return plan;
}

Result<CablingPlan> parse_cabling_plan(const state::CablingPlanText& text) {
  using Format = state::CablingPlanText::Format;
  Format f = text.format;
  if (f == Format::kAuto) f = yaml_name(text.name) ? Format::kYaml : Format::kNetFile;
  if (f == Format::kYaml) return parse_yaml_plan(text.text, text.name);
  Topology t;
  SUBNETD_TRY_ASSIGN(t, discovery::topo::parse_netfile(text.text, text.name));
  return plan_of(t, text.name);
}

Result<CablingPlan> read_cabling_plan(const std::string& path) {
  if (!yaml_name(path)) {
    Topology t;
    SUBNETD_TRY_ASSIGN(t, discovery::topo::read_netfile(path));
    return plan_of(t, path);
  }
  std::ifstream in(path);
  if (!in)
    return Error{Errc::kIo, fmt::format("{}: cannot open the cabling plan", printable(path))};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_yaml_plan(text.str(), path);
}

state::CablingReport check_cabling(const CablingPlan& plan, const Topology& found,
                                   std::span<const std::pair<Guid, std::string>> duplicate_guids) {
  state::CablingReport r = Checker(plan, found).run();
  std::vector<std::pair<Guid, std::string>> dups(duplicate_guids.begin(), duplicate_guids.end());
  std::sort(dups.begin(), dups.end());
  for (const auto& [guid, what] : dups) {
    state::CablingFinding f;
    f.kind = CablingFindingKind::kDuplicateGuid;
    f.node_guid = guid;
    if (const auto n = found.find_by_guid(guid))
      f.node_name = printable(found.node(*n).description);
    f.expected = "one node";
    f.found = "two nodes";
    f.message = what;
    r.findings.push_back(std::move(f));
  }
  return r;
}

}  // namespace subnetd::daemon::screening

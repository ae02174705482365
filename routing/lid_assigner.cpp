#include "routing/lid_assigner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "routing/text.hpp"

namespace subnetd::routing {
namespace {

// One port that needs LIDs: a switch's port 0 or a connected CA/router port.
struct Endpoint {
  PortRef ref;
  Guid guid;
  std::uint32_t count;  // LIDs it needs (1 or 2^LMC), also its alignment
};

class Occupancy {
 public:
  explicit Occupancy(std::uint32_t max_lid) : words_(max_lid / 64 + 1, 0), max_(max_lid) {}
  bool range_free(std::uint32_t base, std::uint32_t count) const {
    if (base == 0 || base + count - 1 > max_) return false;
    for (std::uint32_t l = base; l < base + count; ++l) {
      if ((words_[l / 64] >> (l % 64)) & 1U) return false;
    }
    return true;
  }
  void take(std::uint32_t base, std::uint32_t count) {
    for (std::uint32_t l = base; l < base + count; ++l)
      words_[l / 64] |= std::uint64_t{1} << (l % 64);
  }

 private:
  std::vector<std::uint64_t> words_;
  std::uint32_t max_;
};

}  // namespace

Result<LidAssignment> assign_lids(const Topology& topo, const LidAssignOptions& opts) {
  if (opts.lmc > 7) {
    return Error{Errc::kOutOfRange, fmt::format("LMC must be 0..7, got {}", opts.lmc)};
  }
  const std::uint32_t max_unicast = opts.space.max_unicast().value;
  const std::uint32_t ca_count = 1U << opts.lmc;

  std::vector<Endpoint> eps;
  eps.reserve(topo.num_nodes());
  std::uint64_t needed = 0;
  for (std::uint32_t i = 0; i < topo.num_nodes(); ++i) {
    const Node& n = topo.node(NodeId{i});
    if (n.type == NodeType::kSwitch) {
      eps.push_back({PortRef{NodeId{i}, 0}, topo.port(NodeId{i}, 0).guid, 1});
      needed += 1;
      continue;
    }
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      const Port& port = topo.port(NodeId{i}, static_cast<PortNum>(p));
      if (!port.connected()) continue;
      eps.push_back({PortRef{NodeId{i}, static_cast<PortNum>(p)}, port.guid, ca_count});
      needed += ca_count;
    }
  }
  // Alignment can waste LIDs below a CA block, so this is a lower bound; the
  // exact check happens while assigning.
  if (needed > max_unicast) {
    return Error{Errc::kLidsExhausted,
                 fmt::format("{} LIDs needed ({} switches + {} CA/router ports x {} with LMC {}), "
                             "but the {}-bit space holds {} unicast LIDs",
                             needed, topo.num_switches(), eps.size() - topo.num_switches(),
                             ca_count, opts.lmc, opts.space.bits, max_unicast)};
  }

  std::unordered_map<Guid, Lid> remembered;
  remembered.reserve(opts.previous.size());
  for (const LidRecord& r : opts.previous) remembered[r.port_guid] = r.base;

  auto acceptable = [&](std::uint32_t base, std::uint32_t count) {
    return base != 0 && base % count == 0 && base + count - 1 <= max_unicast;
  };
  // Why a remembered base LID cannot be used, for the report.
  auto unusable_because = [&](std::uint32_t base, std::uint32_t count) -> std::string {
    if (base == 0 || base > max_unicast) {
      return fmt::format("is not a unicast LID in the {}-bit space (0x1-{:#x})", opts.space.bits,
                         max_unicast);
    }
    if (base % count != 0) {
      return fmt::format("is not aligned to the {} LIDs a port gets with LMC {}", count, opts.lmc);
    }
    return fmt::format("with its {} LIDs (LMC {}) runs past the last unicast LID {:#x}", count,
                       opts.lmc, max_unicast);
  };

  LidAssignment out;
  out.map.space = opts.space;
  out.map.lmc = opts.lmc;
  out.map.base_by_port.assign(topo.num_ports_total(), Lid{});
  Occupancy occ(max_unicast);
  std::vector<std::uint32_t> assigned(eps.size(), 0);

  // Two claim rounds: remembered LIDs first, then LIDs found on the ports.
  // Within a round, claims are taken in (LID, GUID) order, so the lower GUID
  // wins a contested range — deterministic whatever the discovery order.
  struct Claim {
    std::uint32_t base;
    Guid guid;
    std::uint32_t ep;
  };
  std::vector<std::uint32_t> unusable;  // endpoints whose remembered LID cannot be used
  for (int round = 0; round < 2; ++round) {
    std::vector<Claim> claims;
    for (std::uint32_t e = 0; e < eps.size(); ++e) {
      if (assigned[e] != 0) continue;
      std::uint32_t base = 0;
      if (round == 0) {
        auto it = remembered.find(eps[e].guid);
        if (it != remembered.end()) {
          base = it->second.value;
          if (!acceptable(base, eps[e].count)) unusable.push_back(e);
        }
      } else {
        base = topo.port(eps[e].ref).lid.value;
      }
      if (acceptable(base, eps[e].count)) claims.push_back({base, eps[e].guid, e});
    }
    std::sort(claims.begin(), claims.end(), [](const Claim& a, const Claim& b) {
      return a.base != b.base ? a.base < b.base : a.guid < b.guid;
    });
    for (const Claim& c : claims) {
      const Endpoint& ep = eps[c.ep];
      if (occ.range_free(c.base, ep.count)) {
        occ.take(c.base, ep.count);
        assigned[c.ep] = c.base;
      } else {
        out.conflicts.push_back(fmt::format(
            "port GUID {:#018x} (\"{}\" port {}) {} LID {:#x}, already taken; re-assigned",
            ep.guid.value, printable(topo.node(ep.ref.node).description), ep.ref.port,
            round == 0 ? "remembered" : "holds", c.base));
      }
    }
  }

  // Fresh LIDs for the rest, in GUID order, lowest free aligned range first.
  std::vector<std::uint32_t> rest;
  for (std::uint32_t e = 0; e < eps.size(); ++e) {
    if (assigned[e] == 0) rest.push_back(e);
  }
  std::sort(rest.begin(), rest.end(),
            [&](std::uint32_t a, std::uint32_t b) { return eps[a].guid < eps[b].guid; });
  // Separate cursors per block size keep this linear.
  std::uint32_t cursor_single = 1;
  std::uint32_t cursor_block = ca_count;
  for (std::uint32_t e : rest) {
    const std::uint32_t count = eps[e].count;
    std::uint32_t& cursor = count == 1 ? cursor_single : cursor_block;
    while (cursor + count - 1 <= max_unicast && !occ.range_free(cursor, count)) cursor += count;
    if (cursor + count - 1 > max_unicast) {
      return Error{Errc::kLidsExhausted,
                   fmt::format("ran out of LIDs: {} needed ({} switches + {} CA/router ports x {} "
                               "with LMC {}, aligned), the {}-bit space holds {} unicast LIDs",
                               needed, topo.num_switches(), eps.size() - topo.num_switches(),
                               ca_count, opts.lmc, opts.space.bits, max_unicast)};
    }
    occ.take(cursor, count);
    assigned[e] = cursor;
    cursor += count;
  }

  std::uint32_t max_lid = 0;
  for (std::uint32_t e = 0; e < eps.size(); ++e) {
    max_lid = std::max(max_lid, assigned[e] + eps[e].count - 1);
  }
  out.map.max_lid = Lid{max_lid};
  out.map.owner.assign(std::size_t{max_lid} + 1, PortRef{});
  for (std::uint32_t e = 0; e < eps.size(); ++e) {
    const Endpoint& ep = eps[e];
    out.map.base_by_port[topo.port_index(ep.ref.node, ep.ref.port)] = Lid{assigned[e]};
    for (std::uint32_t l = assigned[e]; l < assigned[e] + ep.count; ++l) out.map.owner[l] = ep.ref;
    auto it = remembered.find(ep.guid);
    if (it == remembered.end() || it->second.value != assigned[e]) {
      out.changed.push_back({ep.guid, Lid{assigned[e]}});
      out.changed_lmc.push_back(ep.count == 1 ? 0 : opts.lmc);
    }
  }
  for (std::uint32_t e : unusable) {
    const Endpoint& ep = eps[e];
    const std::uint32_t stored = remembered.at(ep.guid).value;
    out.unusable_remembered.push_back(fmt::format(
        "port GUID {:#018x} (\"{}\" port {}): stored LID {:#x} {}; assigned {:#x} instead",
        ep.guid.value, printable(topo.node(ep.ref.node).description), ep.ref.port, stored,
        unusable_because(stored, ep.count), assigned[e]));
  }
  out.lids_used = static_cast<std::uint32_t>(needed);
  return out;
}

}  // namespace subnetd::routing

#include "routing/mcast.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <numeric>
#include <unordered_map>

namespace subnetd::routing {
namespace {

constexpr std::uint32_t kNone = UINT32_MAX;
constexpr std::size_t kTopsInTurn = 16;

struct Neighbor {
  std::uint32_t sw;
  PortNum here;   // port on this switch
  PortNum there;  // port on the neighbour
};

// Switch-to-switch cables by switch_index (loopbacks and port 255 left out,
// as the unicast graph leaves them out).
struct Adjacency {
  std::vector<std::uint32_t> first;
  std::vector<Neighbor> links;
  explicit Adjacency(const Topology& t) {
    const std::uint32_t s_count = static_cast<std::uint32_t>(t.num_switches());
    first.assign(s_count + 1, 0);
    for (std::uint32_t s = 0; s < s_count; ++s) {
      first[s] = static_cast<std::uint32_t>(links.size());
      const NodeId n = t.switch_node(SwitchIndex{s});
      for (unsigned p = 1; p <= t.node(n).num_ports && p < 255; ++p) {
        const Port& port = t.port(n, static_cast<PortNum>(p));
        if (!port.connected() || port.remote_node == n || port.remote_port == 255) continue;
        const Node& far = t.node(port.remote_node);
        if (far.type != NodeType::kSwitch) continue;
        links.push_back({far.switch_index.value, static_cast<PortNum>(p), port.remote_port});
      }
    }
    first[s_count] = static_cast<std::uint32_t>(links.size());
  }
  std::span<const Neighbor> of(std::uint32_t s) const {
    return std::span<const Neighbor>(links).subspan(first[s], first[s + 1] - first[s]);
  }
};

// The up/down order: Routes::multicast_rank() (updown_rank, or the order of
// layered routes' VL 0), or hops from the lowest-GUID switch of each
// connected part.
std::vector<std::uint32_t> order_of(const Topology& t, const Routes& routes, const Adjacency& adj) {
  const std::size_t s_count = t.num_switches();
  if (routes.multicast_rank().size() == s_count) return routes.multicast_rank();
  std::vector<std::uint32_t> by_guid(s_count);
  std::iota(by_guid.begin(), by_guid.end(), 0U);
  std::sort(by_guid.begin(), by_guid.end(), [&](std::uint32_t a, std::uint32_t b) {
    return t.node(t.switch_node(SwitchIndex{a})).guid < t.node(t.switch_node(SwitchIndex{b})).guid;
  });
  std::vector<std::uint32_t> rank(s_count, kNone);
  std::deque<std::uint32_t> q;
  for (const std::uint32_t root : by_guid) {
    if (rank[root] != kNone) continue;
    rank[root] = 0;
    q.push_back(root);
    while (!q.empty()) {
      const std::uint32_t s = q.front();
      q.pop_front();
      for (const Neighbor& nb : adj.of(s)) {
        if (rank[nb.sw] == kNone) {
          rank[nb.sw] = rank[s] + 1;
          q.push_back(nb.sw);
        }
      }
    }
  }
  return rank;
}

// A top switch's down-tree: every switch it reaches by down-links only,
// with the cable to its parent.
struct DownTree {
  struct Parent {
    std::uint32_t sw = kNone;  // kNone: not reached; the top: itself
    PortNum up_port = 0;       // on the child, towards the parent
    PortNum down_port = 0;     // on the parent, towards the child
  };
  std::vector<Parent> parent;
};

}  // namespace

PortMask McastTables::ports(SwitchIndex s, Lid mlid) const {
  const auto e = entries(s);
  const auto it = std::lower_bound(e.begin(), e.end(), mlid.value,
                                   [](const Entry& x, std::uint32_t m) { return x.mlid < m; });
  return it != e.end() && it->mlid == mlid.value ? it->ports : PortMask{};
}

McastTables mcast_tables_for_test(std::vector<std::vector<McastTables::Entry>> by_switch) {
  McastTables t;
  t.by_switch_ = std::move(by_switch);
  for (const auto& row : t.by_switch_) {
    for (const auto& e : row) t.max_mlid_ = std::max(t.max_mlid_, e.mlid);
  }
  return t;
}

Result<McastTables> compute_multicast(const Topology& topo, const Routes& routes,
                                      std::span<const McastGroupIn> groups_in, WorkerPool& /*pool*/,
                                      std::stop_token stop) {
  McastTables out;
  const std::uint32_t s_count = static_cast<std::uint32_t>(topo.num_switches());
  out.by_switch_.resize(s_count);
  std::vector<const McastGroupIn*> groups;
  for (const McastGroupIn& g : groups_in) {
    if (g.mlid.value < kMlidBase || g.mlid.value >= kMlidBase + kMlidCount) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("MLID {:#x} is not a multicast LID (0xc000..0xfffe)", g.mlid.value)};
    }
    groups.push_back(&g);
  }
  std::sort(groups.begin(), groups.end(),
            [](const McastGroupIn* a, const McastGroupIn* b) { return a->mlid < b->mlid; });
  for (std::size_t i = 1; i < groups.size(); ++i) {
    if (groups[i]->mlid == groups[i - 1]->mlid) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("MLID {:#x} is given to two groups", groups[i]->mlid.value)};
    }
  }
  if (s_count == 0) return out;
  const Adjacency adj(topo);
  const std::vector<std::uint32_t> rank = order_of(topo, routes, adj);
  auto guid = [&](std::uint32_t s) { return topo.node(topo.switch_node(SwitchIndex{s})).guid; };
  auto above = [&](std::uint32_t n, std::uint32_t s) {
    return std::pair(rank[n], guid(n)) < std::pair(rank[s], guid(s));
  };
  std::vector<std::uint32_t> tops;
  for (std::uint32_t s = 0; s < s_count; ++s) {
    const auto nbs = adj.of(s);
    if (std::none_of(nbs.begin(), nbs.end(), [&](const Neighbor& nb) { return above(nb.sw, s); })) {
      tops.push_back(s);
    }
  }
  std::sort(tops.begin(), tops.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::pair(rank[a], guid(a)) < std::pair(rank[b], guid(b));
  });
  std::unordered_map<std::uint32_t, DownTree> trees;  // by top, built when first used
  auto tree_of = [&](std::uint32_t top) -> const DownTree& {
    auto [it, fresh] = trees.try_emplace(top);
    if (!fresh) return it->second;
    DownTree& d = it->second;
    d.parent.assign(s_count, {});
    d.parent[top].sw = top;
    std::deque<std::uint32_t> q{top};
    while (!q.empty()) {
      const std::uint32_t s = q.front();
      q.pop_front();
      for (const Neighbor& nb : adj.of(s)) {
        if (d.parent[nb.sw].sw != kNone || !above(s, nb.sw)) continue;  // down-links only
        d.parent[nb.sw] = {s, nb.there, nb.here};
        q.push_back(nb.sw);
      }
    }
    return d;
  };

  std::vector<std::uint32_t> stamp(s_count, 0);
  std::vector<std::uint32_t> children(s_count, 0);
  std::vector<PortMask> mask(s_count);
  std::vector<std::uint32_t> marked;
  std::uint32_t group_no = 0;
  struct Attach {
    std::uint32_t sw;
    PortNum port;
  };
  std::vector<Attach> at;
  for (const McastGroupIn* g : groups) {
    if (stop.stop_requested()) return Error{Errc::kCancelled, "multicast routing cancelled"};
    ++group_no;
    ++out.groups_;
    at.clear();
    for (const PortRef& m : g->members) {
      if (!m.node.valid() || m.node.value >= topo.num_nodes() ||
          m.port > topo.node(m.node).num_ports) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("MLID {:#x}: member port {} of node index {} does not exist",
                                 g->mlid.value, m.port, m.node.value)};
      }
      const Node& node = topo.node(m.node);
      if (node.type == NodeType::kSwitch) {
        at.push_back({node.switch_index.value, 0});
        continue;
      }
      const Port& port = topo.port(m.node, m.port);
      if (!port.connected() || topo.node(port.remote_node).type != NodeType::kSwitch) {
        out.notes_.push_back(fmt::format("MLID {:#x}: {} port {} is not cabled to a switch",
                                         g->mlid.value, topo.label(m.node), m.port));
        continue;
      }
      at.push_back({topo.node(port.remote_node).switch_index.value, port.remote_port});
    }
    if (at.empty()) continue;
    // The top: in turn among the first tops, the first whose down-tree
    // reaches every member switch; else the one reaching most.
    const std::size_t turn = std::min(tops.size(), kTopsInTurn);
    const std::size_t start = (g->mlid.value - kMlidBase) % turn;
    std::uint32_t best = kNone;
    std::size_t best_reached = 0;
    for (std::size_t k = 0; k < tops.size(); ++k) {
      const std::uint32_t top = tops[k < turn ? (start + k) % turn : k];
      const DownTree& d = tree_of(top);
      std::size_t reached = 0;
      for (const Attach& a : at) reached += d.parent[a.sw].sw != kNone ? 1 : 0;
      if (reached > best_reached) {
        best = top;
        best_reached = reached;
      }
      if (reached == at.size()) break;
    }
    if (best == kNone) continue;
    const DownTree& d = tree_of(best);
    // Mark the branches from every member switch up to the top.
    marked.clear();
    for (const Attach& a : at) {
      if (d.parent[a.sw].sw == kNone) {
        out.notes_.push_back(fmt::format("MLID {:#x}: {} is beyond every multicast tree top",
                                         g->mlid.value, topo.switch_label(SwitchIndex{a.sw})));
        continue;
      }
      for (std::uint32_t v = a.sw; stamp[v] != group_no; v = d.parent[v].sw) {
        stamp[v] = group_no;
        children[v] = 0;
        mask[v] = PortMask{};
        marked.push_back(v);
        if (v == best) break;
      }
    }
    for (const std::uint32_t v : marked) {
      if (v != best) ++children[d.parent[v].sw];
    }
    for (const Attach& a : at) {
      if (stamp[a.sw] == group_no) mask[a.sw].set(a.port);
    }
    // Trim the top while it only passes packets down one branch.
    std::uint32_t top = best;
    auto is_member_switch = [&](std::uint32_t s) { return !mask[s].none(); };
    while (children[top] == 1 && !is_member_switch(top)) {
      std::uint32_t child = kNone;
      for (const Neighbor& nb : adj.of(top)) {
        if (stamp[nb.sw] == group_no && nb.sw != top && d.parent[nb.sw].sw == top) child = nb.sw;
      }
      stamp[top] = 0;
      top = child;
    }
    for (const std::uint32_t v : marked) {
      if (stamp[v] != group_no || v == top) continue;
      const DownTree::Parent& up = d.parent[v];
      mask[v].set(up.up_port);
      mask[up.sw].set(up.down_port);
    }
    for (const std::uint32_t v : marked) {
      if (stamp[v] != group_no || mask[v].none()) continue;
      out.by_switch_[v].push_back({g->mlid.value, mask[v]});
      out.max_mlid_ = std::max(out.max_mlid_, g->mlid.value);
    }
  }
  return out;
}

Result<McastVerifyReport> verify_multicast(const Topology& topo, const McastTables& tables,
                                           std::span<const McastGroupIn> groups,
                                           std::span<const std::uint32_t> rank) {
  McastVerifyReport report;
  const std::uint32_t s_count = static_cast<std::uint32_t>(topo.num_switches());
  if (tables.num_switches() != s_count) {
    return Error{Errc::kInvalidArgument, "multicast tables are for another fabric"};
  }
  const bool oriented = rank.size() == s_count;
  auto guid = [&](std::uint32_t s) { return topo.node(topo.switch_node(SwitchIndex{s})).guid; };
  // Connected parts of the switch fabric: a member outside the tree's part
  // cannot be reached by any tree.
  const Adjacency adj(topo);
  std::vector<std::uint32_t> part(s_count, kNone);
  for (std::uint32_t s = 0; s < s_count; ++s) {
    if (part[s] != kNone) continue;
    part[s] = s;
    std::deque<std::uint32_t> q{s};
    while (!q.empty()) {
      const std::uint32_t v = q.front();
      q.pop_front();
      for (const Neighbor& nb : adj.of(v)) {
        if (part[nb.sw] == kNone) {
          part[nb.sw] = s;
          q.push_back(nb.sw);
        }
      }
    }
  }
  // Every group's switches.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> by_mlid;
  for (std::uint32_t s = 0; s < s_count; ++s) {
    for (const auto& e : tables.entries(SwitchIndex{s})) by_mlid[e.mlid].push_back(s);
  }
  std::vector<std::uint32_t> uf(s_count);
  auto find = [&](std::uint32_t x) {
    while (uf[x] != x) x = uf[x] = uf[uf[x]];
    return x;
  };
  auto where = [&](std::uint32_t s, PortNum p) {
    return fmt::format("{}[{}]", topo.switch_label(SwitchIndex{s}), p);
  };
  std::vector<std::uint32_t> mlids;
  for (const auto& [m, _] : by_mlid) mlids.push_back(m);
  std::sort(mlids.begin(), mlids.end());
  for (const std::uint32_t mlid : mlids) {
    const std::vector<std::uint32_t>& nodes = by_mlid[mlid];
    for (const std::uint32_t s : nodes) uf[s] = s;
    std::size_t edges = 0;
    for (const std::uint32_t s : nodes) {
      const NodeId sn = topo.switch_node(SwitchIndex{s});
      const PortMask m = tables.ports(SwitchIndex{s}, Lid{mlid});
      unsigned ups = 0;
      Result<void> bad = ok_result();
      m.for_each([&](PortNum p) {
        if (!bad.ok() || p == 0) return;
        if (p > topo.node(sn).num_ports || !topo.port(sn, p).connected()) {
          bad = Error{Errc::kInvalidArgument,
                      fmt::format("MLID {:#x}: {} is not cabled", mlid, where(s, p))};
          return;
        }
        const Port& port = topo.port(sn, p);
        const Node& far = topo.node(port.remote_node);
        if (far.type != NodeType::kSwitch) return;  // delivery to a CA
        const std::uint32_t n = far.switch_index.value;
        if (!tables.ports(SwitchIndex{n}, Lid{mlid}).test(port.remote_port)) {
          bad = Error{Errc::kForwardingLoop,
                      fmt::format("MLID {:#x}: {} forwards to {}, which does not forward back",
                                  mlid, where(s, p), where(n, port.remote_port))};
          return;
        }
        if (oriented && std::pair(rank[n], guid(n)) < std::pair(rank[s], guid(s)) && ++ups > 1) {
          bad = Error{Errc::kCdgCycle,
                      fmt::format("MLID {:#x}: the tree climbs from {} twice (a path through it "
                                  "would go down and then up: a credit loop with the unicast "
                                  "routes)",
                                  mlid, topo.switch_label(SwitchIndex{s}))};
          return;
        }
        if (std::pair(s, p) > std::pair(n, port.remote_port)) return;  // each cable once
        ++edges;
        const std::uint32_t a = find(s), b = find(n);
        if (a == b) {
          bad = Error{Errc::kForwardingLoop,
                      fmt::format("MLID {:#x}: the tree has a cycle through {} - {}", mlid,
                                  where(s, p), where(n, port.remote_port))};
          return;
        }
        uf[a] = b;
      });
      if (!bad.ok()) return bad.error();
    }
    if (edges + 1 != nodes.size()) {
      return Error{Errc::kIncomplete,
                   fmt::format("MLID {:#x}: {} switches forward it but only {} tree links join "
                               "them (not one tree)",
                               mlid, nodes.size(), edges)};
    }
    report.tree_links += edges;
    ++report.groups;
  }
  // Every member reached, where a tree can reach it.
  for (const McastGroupIn& g : groups) {
    const auto it = by_mlid.find(g.mlid.value);
    const std::uint32_t tree_part = it == by_mlid.end() ? kNone : part[it->second.front()];
    for (const PortRef& m : g.members) {
      if (!m.node.valid() || m.node.value >= topo.num_nodes()) continue;
      std::uint32_t sw = kNone;
      PortNum port = 0;
      if (topo.node(m.node).type == NodeType::kSwitch) {
        sw = topo.node(m.node).switch_index.value;
      } else {
        const Port& cp = topo.port(m.node, m.port);
        if (!cp.connected() || topo.node(cp.remote_node).type != NodeType::kSwitch) continue;
        sw = topo.node(cp.remote_node).switch_index.value;
        port = cp.remote_port;
      }
      if (tree_part != kNone && part[sw] != tree_part) continue;
      if (!tables.ports(SwitchIndex{sw}, g.mlid).test(port)) {
        return Error{Errc::kIncomplete,
                     fmt::format("MLID {:#x}: member {} port {} is not delivered ({} lacks it)",
                                 g.mlid.value, topo.label(m.node), m.port, where(sw, port))};
      }
    }
  }
  return report;
}

}  // namespace subnetd::routing

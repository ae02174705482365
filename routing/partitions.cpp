#include "routing/partitions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace subnetd::routing {

PartitionSpec default_partition() {
  PartitionSpec d;
  d.name = "default";
  d.pkey = kDefaultPKey;
  d.ipoib = true;
  d.members.push_back(PartitionMember{});  // all, full
  return d;
}

const PartitionPlan::Partition* PartitionPlan::find(std::uint16_t pkey) const {
  pkey &= kPKeyBaseMask;
  for (const Partition& p : partitions_) {
    if (p.pkey == pkey) return &p;
  }
  return nullptr;
}

std::span<const std::uint16_t> PartitionPlan::table(std::uint32_t port_index) const {
  if (std::size_t{port_index} + 1 >= offsets_.size()) return {};
  return std::span<const std::uint16_t>(keys_).subspan(
      offsets_[port_index], offsets_[port_index + 1] - offsets_[port_index]);
}

std::uint16_t find_pkey(std::span<const std::uint16_t> table, std::uint16_t pkey) {
  pkey &= kPKeyBaseMask;
  for (const std::uint16_t e : table) {
    if ((e & kPKeyBaseMask) == pkey && pkey != 0) return e;
  }
  return 0;
}

std::optional<std::uint16_t> shared_pkey(std::span<const std::uint16_t> a,
                                         std::span<const std::uint16_t> b,
                                         std::optional<std::uint16_t> wanted) {
  auto usable = [&](std::uint16_t entry_a) -> bool {
    const std::uint16_t entry_b = find_pkey(b, entry_a);
    return entry_b != 0 && ((entry_a | entry_b) & kPKeyFullMember) != 0;
  };
  if (wanted) {
    const std::uint16_t entry = find_pkey(a, *wanted);
    if (entry == 0 || !usable(entry)) return std::nullopt;
    return static_cast<std::uint16_t>(entry | kPKeyFullMember);
  }
  for (const std::uint16_t entry : a) {
    if ((entry & kPKeyBaseMask) != 0 && usable(entry)) {
      return static_cast<std::uint16_t>(entry | kPKeyFullMember);
    }
  }
  return std::nullopt;
}

namespace {

bool is_endport(const Topology& t, NodeId n, PortNum p) {
  return t.node(n).type == NodeType::kSwitch ? p == 0 : p != 0;
}

// Warnings that may concern thousands of ports are counted, with the first
// few named.
class Tally {
 public:
  explicit Tally(std::string what) : what_(std::move(what)) {}
  void add(std::string example) {
    if (++count_ <= kNamed) examples_.push_back(std::move(example));
  }
  void flush(std::vector<std::string>& out) const {
    if (count_ == 0) return;
    std::string line = fmt::format("{} {}: {}", count_, what_, fmt::join(examples_, "; "));
    if (count_ > kNamed) line += fmt::format("; and {} more", count_ - kNamed);
    out.push_back(std::move(line));
  }

 private:
  static constexpr std::size_t kNamed = 3;
  std::string what_;
  std::size_t count_ = 0;
  std::vector<std::string> examples_;
};

}  // namespace

PartitionPlan plan_partitions(const Topology& t, std::span<const PartitionSpec> specs,
                              PortRef sm_port) {
  PartitionPlan plan;
  std::vector<PartitionSpec> all(specs.begin(), specs.end());
  if (std::none_of(all.begin(), all.end(),
                   [](const PartitionSpec& s) { return s.pkey == kDefaultPKey; })) {
    all.push_back(default_partition());
  }
  std::stable_sort(all.begin(), all.end(), [](const PartitionSpec& a, const PartitionSpec& b) {
    const bool da = a.pkey == kDefaultPKey;
    const bool db = b.pkey == kDefaultPKey;
    if (da != db) return da;
    return a.pkey < b.pkey;
  });

  // Selectors by GUID or name resolve through maps of our own: the
  // topology's lazy indexes are not safe to build on a shared topology.
  const bool by_guid = std::any_of(all.begin(), all.end(), [](const PartitionSpec& s) {
    return std::any_of(s.members.begin(), s.members.end(), [](const PartitionMember& m) {
      return m.kind == PartitionMember::Kind::kGuid;
    });
  });
  const bool by_name = std::any_of(all.begin(), all.end(), [](const PartitionSpec& s) {
    return std::any_of(s.members.begin(), s.members.end(), [](const PartitionMember& m) {
      return m.kind == PartitionMember::Kind::kName;
    });
  });
  std::unordered_map<Guid, PortRef> port_by_guid;
  std::unordered_multimap<std::string_view, NodeId> node_by_name;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const Node& node = t.node(n);
    if (by_name) node_by_name.emplace(node.description, n);
    if (!by_guid) continue;
    for (unsigned p = 0; p <= node.num_ports; ++p) {
      if (is_endport(t, n, static_cast<PortNum>(p))) {
        port_by_guid.emplace(t.port(n, static_cast<PortNum>(p)).guid,
                             PortRef{n, static_cast<PortNum>(p)});
      }
    }
  }

  // (port index, order of the partition, full) for every membership.
  struct Entry {
    std::uint32_t port;
    std::uint32_t part;
    bool full;
  };
  std::vector<Entry> entries;
  auto add_node = [&](NodeId n, std::uint32_t part, bool full) {
    const Node& node = t.node(n);
    for (unsigned p = 0; p <= node.num_ports; ++p) {
      if (is_endport(t, n, static_cast<PortNum>(p))) {
        entries.push_back({t.port_index(n, static_cast<PortNum>(p)), part, full});
      }
    }
  };
  for (std::uint32_t part = 0; part < all.size(); ++part) {
    const PartitionSpec& s = all[part];
    for (const PartitionMember& m : s.members) {
      switch (m.kind) {
        case PartitionMember::Kind::kAll:
          for (std::uint32_t i = 0; i < t.num_nodes(); ++i) add_node(NodeId{i}, part, m.full);
          break;
        case PartitionMember::Kind::kGuid:
          if (const auto n = t.find_by_guid(m.guid)) {
            add_node(*n, part, m.full);
          } else if (const auto it = port_by_guid.find(m.guid); it != port_by_guid.end()) {
            entries.push_back({t.port_index(it->second.node, it->second.port), part, m.full});
          } else {
            plan.warnings_.push_back(fmt::format(
                "partition {} ({:#06x}): member {:#018x} is no node or port of this fabric", s.name,
                s.pkey, m.guid.value));
          }
          break;
        case PartitionMember::Kind::kName: {
          const auto [first, last] = node_by_name.equal_range(m.name);
          if (first == last) {
            plan.warnings_.push_back(
                fmt::format("partition {} ({:#06x}): member \"{}\" names no node of this fabric",
                            s.name, s.pkey, m.name));
          }
          for (auto it = first; it != last; ++it) add_node(it->second, part, m.full);
          break;
        }
      }
    }
  }
  if (sm_port.node.valid() && sm_port.node.value < t.num_nodes() &&
      sm_port.port <= t.node(sm_port.node).num_ports) {
    for (std::uint32_t part = 0; part < all.size(); ++part) {
      entries.push_back({t.port_index(sm_port.node, sm_port.port), part, true});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.port, a.part) < std::tie(b.port, b.part);
  });

  for (const PartitionSpec& s : all) {
    plan.partitions_.push_back(
        PartitionPlan::Partition{s.name, s.pkey, s.ipoib, s.ipoib_params, 0, 0});
  }
  std::vector<std::uint32_t> part_of(std::size_t{kPKeyBaseMask} + 1, 0);
  for (std::uint32_t k = 0; k < all.size(); ++k) part_of[all[k].pkey & kPKeyBaseMask] = k;
  const std::size_t ports = t.num_ports_total();
  plan.offsets_.assign(ports + 1, 0);
  plan.enforce_.assign(ports, 0);
  Tally cut("ports hold fewer P_Keys than their partitions (the last are left out)");
  std::size_t e = 0;
  std::vector<std::uint16_t> row;
  std::vector<std::uint32_t> row_parts;
  for (std::uint32_t pi = 0; pi < ports; ++pi) {
    plan.offsets_[pi] = static_cast<std::uint32_t>(plan.keys_.size());
    row.clear();
    row_parts.clear();
    for (; e < entries.size() && entries[e].port == pi; ++e) {
      const std::uint16_t key =
          static_cast<std::uint16_t>(all[entries[e].part].pkey | (entries[e].full ? 0x8000 : 0));
      if (!row_parts.empty() && row_parts.back() == entries[e].part) {
        row.back() |= key;  // full wins over limited
      } else {
        row.push_back(key);
        row_parts.push_back(entries[e].part);
      }
    }
    plan.keys_.insert(plan.keys_.end(), row.begin(), row.end());
  }
  plan.offsets_[ports] = static_cast<std::uint32_t>(plan.keys_.size());

  // Capacities, and the switch side of every CA link. Rebuilt in one pass
  // over the nodes (the CSR above is by port index, in node order).
  std::vector<std::uint32_t> offsets(ports + 1, 0);
  std::vector<std::uint16_t> keys;
  keys.reserve(plan.keys_.size() * 2);
  Tally no_enforce("switch ports facing a CA cannot enforce its partitions");
  std::vector<std::uint16_t> copy;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const Node& node = t.node(n);
    const bool sw = node.type == NodeType::kSwitch;
    for (unsigned pn = 0; pn <= node.num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      const std::uint32_t pi = t.port_index(n, p);
      offsets[pi] = static_cast<std::uint32_t>(keys.size());
      std::span<const std::uint16_t> want = plan.table(pi);
      std::size_t cap = node.partition_cap;
      if (sw && p != 0) {
        const Port& port = t.port(n, p);
        if (!port.connected() || t.node(port.remote_node).type == NodeType::kSwitch) continue;
        copy.assign(plan.table(t.port_index(port.remote_node, port.remote_port)).begin(),
                    plan.table(t.port_index(port.remote_node, port.remote_port)).end());
        // The CA side is cut to its own capacity below; cut it the same way
        // here so both sides hold the same keys.
        const std::size_t ca_cap = t.node(port.remote_node).partition_cap;
        if (ca_cap != 0 && copy.size() > ca_cap) copy.resize(ca_cap);
        if (copy.empty()) continue;
        if (copy.size() > node.partition_enforcement_cap) {
          no_enforce.add(fmt::format("{} port {} (holds {}, needs {})", t.label(n), pn,
                                     node.partition_enforcement_cap, copy.size()));
          continue;
        }
        plan.enforce_[pi] = 1;
        keys.insert(keys.end(), copy.begin(), copy.end());
        continue;
      }
      if (cap != 0 && want.size() > cap) {
        cut.add(
            fmt::format("{} port {} (holds {}, member of {})", t.label(n), pn, cap, want.size()));
        want = want.first(cap);
      }
      keys.insert(keys.end(), want.begin(), want.end());
      for (const std::uint16_t k : want) {
        PartitionPlan::Partition& part = plan.partitions_[part_of[k & kPKeyBaseMask]];
        ++((k & kPKeyFullMember) != 0 ? part.full_members : part.limited_members);
      }
    }
  }
  offsets[ports] = static_cast<std::uint32_t>(keys.size());
  plan.offsets_ = std::move(offsets);
  plan.keys_ = std::move(keys);
  cut.flush(plan.warnings_);
  no_enforce.flush(plan.warnings_);
  return plan;
}

}  // namespace subnetd::routing

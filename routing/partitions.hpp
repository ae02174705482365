#pragma once
// Partitions: who may talk to whom (IBA 10.9). A partition is a 15-bit P_Key
// and its members; a member is full or limited, and two ports can
// communicate in a partition when both are members and at least one is
// full. Every port carries its partitions in its P_Key table (entries are
// the P_Key with the membership bit, 0x8000 = full); switches drop packets
// whose P_Key the port's table lacks (enforcement).
//
// plan_partitions turns the configured partitions into a P_Key table for
// every port the SM programs:
//  - every CA/router port, and switch port 0 (the switch's own endpoint);
//  - a switch external port cabled to a CA/router port: a copy of the CA
//    port's table, with enforcement on, when the switch's
//    PartitionEnforcementCap holds it (so a CA cannot inject a P_Key its
//    own table lacks).
// Table order is stable across sweeps: the default partition at index 0
// (IPoIB and the SA use index 0), then ascending P_Key. A table longer than
// the port's capacity (NodeInfo:PartitionCap, or the switch's
// PartitionEnforcementCap) keeps what fits and the plan says what it left
// out. The SM's own port is a full member of every partition whatever the
// configuration says: every port must reach the SA, with whichever P_Key
// it holds.
//
// Pure: a topology and the specs in, tables out.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/topology.hpp"

namespace subnetd::routing {

inline constexpr std::uint16_t kDefaultPKey = 0x7FFF;
inline constexpr std::uint16_t kPKeyFullMember = 0x8000;
inline constexpr std::uint16_t kPKeyBaseMask = 0x7FFF;
inline constexpr std::size_t kPKeyBlockEntries = 32;  // entries per PKeyTable SMP

struct PartitionMember {
  enum class Kind : std::uint8_t {
    kAll,   // every CA/router port and every switch port 0
    kGuid,  // a node GUID (every port of the node) or a port GUID
    kName,  // a node description (every port of the node)
  };
  Kind kind = Kind::kAll;
  Guid guid;
  std::string name;
  bool full = true;  // false: limited membership
  bool operator==(const PartitionMember&) const = default;
};

// What the SM gives the partition's IPoIB broadcast group when it creates
// it (IBA encodings: mtu 4 = 2048 bytes, rate 3 = 10 Gb/s); OpenSM's
// defaults.
struct IpoibParams {
  std::uint8_t mtu = 4;
  std::uint8_t rate = 3;
  std::uint32_t qkey = 0x0B1B;
  std::uint8_t sl = 0;
  bool operator==(const IpoibParams&) const = default;
};

struct PartitionSpec {
  std::string name;
  std::uint16_t pkey = 0;  // 0x0001..0x7FFF, without the membership bit
  bool ipoib = false;
  IpoibParams ipoib_params;
  std::vector<PartitionMember> members;
  bool operator==(const PartitionSpec&) const = default;
};

// The default partition when the configuration names none with P_Key
// 0x7FFF: every port a full member, IPoIB on (what OpenSM does without a
// partitions file).
PartitionSpec default_partition();

class PartitionPlan {
 public:
  struct Partition {
    std::string name;
    std::uint16_t pkey = 0;
    bool ipoib = false;
    IpoibParams ipoib_params;
    std::uint32_t full_members = 0;  // endports (CA ports, switch port 0)
    std::uint32_t limited_members = 0;
  };

  // Default first, then ascending P_Key.
  std::span<const Partition> partitions() const { return partitions_; }
  const Partition* find(std::uint16_t pkey) const;

  // The P_Key table of a port (entries with the membership bit), empty for
  // ports the SM gives none (switch ports between switches, ports outside
  // the topology the plan was made for).
  std::span<const std::uint16_t> table(std::uint32_t port_index) const;
  std::span<const std::uint16_t> table(const Topology& t, NodeId n, PortNum p) const {
    return table(t.port_index(n, p));
  }
  // Enforcement on: a switch external port holding its CA's table.
  bool enforced(std::uint32_t port_index) const {
    return port_index < enforce_.size() && enforce_[port_index] != 0;
  }
  // Problems the configuration has with this fabric, one line each (a
  // member that matches no port, a table cut to the port's capacity, a
  // switch that cannot enforce).
  std::span<const std::string> warnings() const { return warnings_; }
  std::size_t num_ports() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }

 private:
  friend PartitionPlan plan_partitions(const Topology&, std::span<const PartitionSpec>, PortRef);
  std::vector<Partition> partitions_;
  std::vector<std::uint32_t> offsets_;  // by port index, size ports + 1
  std::vector<std::uint16_t> keys_;
  std::vector<std::uint8_t> enforce_;  // by port index
  std::vector<std::string> warnings_;
};

// `specs` as the config parser checked them (distinct P_Keys and names);
// the default partition is added when they lack it. `sm_port` (may be
// invalid) is made a full member of every partition.
PartitionPlan plan_partitions(const Topology& t, std::span<const PartitionSpec> specs,
                              PortRef sm_port);

// The entry of `pkey` (membership bit ignored) in a table, or 0.
std::uint16_t find_pkey(std::span<const std::uint16_t> table, std::uint16_t pkey);

// A P_Key two ports can communicate in: both members, one at least full.
// With `wanted`, that P_Key or nothing; otherwise the first such entry of
// `a`'s table (the default partition when they share it). Returned with the
// membership bit set (the form PathRecords carry).
std::optional<std::uint16_t> shared_pkey(std::span<const std::uint16_t> a,
                                         std::span<const std::uint16_t> b,
                                         std::optional<std::uint16_t> wanted = std::nullopt);

}  // namespace subnetd::routing

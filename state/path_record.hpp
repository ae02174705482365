#pragma once
// What a path between two endports offers, from a published snapshot: the
// route the LFTs take and the MTU and rate along it. One definition for the
// SA's PathRecords (daemon/sa) and gRPC's GetPathRecord (api/), so that
// both answer the same thing.
//
// A path exists when the published tables deliver a packet from the source
// port to the destination LID (routing::trace_path). Its MTU is the smallest
// MTUCap of the ports it leaves and enters (2048 when no port's MTUCap was
// read), its rate the slowest link, each link at the lesser of its two
// ends' width x speed. Its SL is the layer of dlid's traffic when the
// routing uses VL layers (Routes::lid_layer), else 0; its P_Key one that
// both ends share.
//
// Pure function of its arguments: callable from any thread.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "routing/ids.hpp"
#include "routing/result.hpp"
#include "state/fabric_state.hpp"

namespace subnetd::state {

// IBA PathRecord/PortInfo encodings.
inline constexpr std::uint8_t kMtu2048 = 4;
inline constexpr std::uint16_t kDefaultPKey = 0xFFFF;

// Link rate in Gb/s x 10 from PortInfo's LinkWidthActive and
// LinkSpeedActive; a port whose width or speed nobody read counts as
// 4x SDR (10 Gb/s), IBA's baseline.
std::uint16_t link_gbps10(const routing::Port& p);
// The IBA rate code (PathRecord Rate, 2 = 2.5 Gb/s .. 18 = 300 Gb/s) of
// the fastest rate not above `gbps10`; and back (0 for an unknown code).
std::uint8_t rate_code(std::uint16_t gbps10);
std::uint16_t gbps10_of(std::uint8_t rate_code);

struct PathProperties {
  PortRef source;  // a CA/router port, or a switch's port 0
  PortRef destination;
  Lid slid, dlid;
  std::uint8_t mtu = kMtu2048;  // IBA code (1 = 256 .. 5 = 4096)
  std::uint8_t rate = 0;        // IBA rate code
  std::uint16_t gbps10 = 0;     // the same, in Gb/s x 10
  std::uint8_t sl = 0;
  std::uint16_t pkey = kDefaultPKey;
  std::uint8_t switch_hops = 0;  // switches crossed
};

// The endport that answers to `lid` (a CA/router port, or a switch's port
// 0), if it is assigned in this snapshot.
std::optional<PortRef> endport_of_lid(const FabricState& st, Lid lid);

// The path from endport `source` to LID `dlid` (which `destination` owns).
// kUnreachable (naming where the packet is lost) when the tables do not
// deliver it; kInvalidArgument / kNotFound for a malformed question;
// kUnavailable when the snapshot has no routed fabric yet.
Result<PathProperties> path_properties(const FabricState& st, PortRef source, PortRef destination,
                                       Lid dlid);

// The same answer as path_properties() for the SA's hot path: a compact
// table of every switch port's far end and link (MTU, rate), built once per
// topology, so that a walk costs one LFT read per switch rather than the
// node and port records the general trace reads. Whether a path exists, its
// MTU, rate and hops agree with path_properties() for every pair
// (tests/unit/path_record_test.cpp); why a path is missing is
// path_properties()'s to say. Immutable once built: any thread may walk it.
class PathIndex {
 public:
  explicit PathIndex(std::shared_ptr<const routing::Topology> topo);

  const routing::Topology* topology() const { return topo_.get(); }
  // The endport whose port GUID is `port_guid` (a switch's port 0 for its
  // GUID), if it has a LID in `st`. From the index's own map: the
  // topology's GUID index is built lazily and is not for concurrent
  // readers.
  std::optional<PortRef> endport_of_guid(const FabricState& st, Guid port_guid) const;
  // nullopt when the tables do not deliver `dlid` from `source` (or the
  // question is malformed). `st` must hold the topology this index was
  // built from.
  std::optional<PathProperties> walk(const FabricState& st, PortRef source, PortRef destination,
                                     Lid dlid) const;
  // Many walks at once (out[i] answers queries[i]): the same answers, with
  // the LFT reads of up to 16 walks in flight together, which is what a
  // burst of PathRecord queries needs on tables far larger than the cache.
  struct PathQuery {
    PortRef source;
    PortRef destination;
    Lid dlid;
  };
  void walk_many(const FabricState& st, std::span<const PathQuery> queries,
                 std::span<std::optional<PathProperties>> out) const;

 private:
  // One switch port in 4 bytes (the table stays in cache: 2.6 MB at
  // 8,000 switches of 81 ports): the far switch's index (or kEndport,
  // kDead), the link's MTU (the lesser known MTUCap of its ends; 0 = none
  // known) and rate (the lesser end's width x speed, Gb/s x 10 / 5).
  static constexpr std::uint32_t kNextBits = 20;
  static constexpr std::uint32_t kDead = (1U << kNextBits) - 1;  // not cabled, or DOWN
  static constexpr std::uint32_t kEndport = kDead - 1;           // a CA or router port
  static std::uint32_t pack(std::uint32_t next, std::uint8_t mtu, std::uint16_t gbps10) {
    return next | (std::uint32_t{mtu} << kNextBits) | (std::uint32_t{gbps10 / 5U} << 23);
  }
  static std::uint32_t next_of(std::uint32_t l) { return l & kDead; }
  static std::uint8_t mtu_of(std::uint32_t l) { return (l >> kNextBits) & 7U; }
  static std::uint16_t gbps10_of_link(std::uint32_t l) {
    return static_cast<std::uint16_t>((l >> 23) * 5U);
  }
  std::shared_ptr<const routing::Topology> topo_;
  std::unordered_map<Guid, PortRef> by_port_guid_;  // endports by port GUID
  std::vector<std::uint32_t> first_;                // by switch index: its port 1 in links_
  std::vector<std::uint8_t> ports_;                 // by switch index: number of ports
  std::vector<std::uint32_t> links_;                // packed, see pack()
  std::vector<std::uint32_t> far_port_;  // by links_ index: Topology port index of the far end
  bool packed_ = true;  // false past 2^20 - 2 switches: every walk takes the general trace
};

// The PathIndex of a snapshot's topology, built on first use and kept while
// the topology stays the same (snapshots share an unchanged topology).
// Thread-safe.
class PathIndexCache {
 public:
  std::shared_ptr<const PathIndex> get(const FabricState& st);

 private:
  std::mutex mu_;
  std::shared_ptr<const PathIndex> index_;
};

}  // namespace subnetd::state

#pragma once
// Multicast forwarding: one spanning tree per group, as MFT port masks.
//
// A switch forwards a multicast packet out of every port of the group's
// mask but the one it came in by, so a group's masks must form a tree
// (a cycle would circulate packets forever) that reaches every member, and
// the dependencies the tree adds to the unicast routes' must not close a
// credit loop.
//
// The trees follow the unicast routes' up/down order on VL 0
// (Routes::multicast_rank(): updown_rank, or the escape order of layered
// routes on several VLs; for engines without one, an up/down order
// computed here — dimension order leaves VL 0 to multicast alone): a tree is
// grown from a top switch (one with no up-link) down the down-links only,
// then cut to the branches that lead to members, and its top trimmed while
// it forwards to a single branch. Every switch of a tree then has at most
// one tree neighbour above it, so every path through the tree climbs and
// then only descends: up*down*, like the unicast routes, and the channel
// dependency graph of both together stays acyclic with one VL. Groups take
// their top switch in turn (MLID order) among up to 16 tops, so the spines
// share the multicast load; a top whose down-tree misses a member is
// skipped.
//
// verify_multicast trusts none of this: it checks that every group's masks
// are symmetric across each cable, form one tree without cycles spanning
// every member, deliver to every member port, and, with an up/down order,
// climb-then-descend. The plain verifier (verifier.hpp) adds the trees'
// dependencies to its channel dependency graph when given the tables.

#include <cstdint>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "routing/lft.hpp"
#include "routing/port_mask.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

inline constexpr std::uint32_t kMlidBase = 0xC000;   // first multicast LID
inline constexpr std::uint32_t kMlidCount = 0x3FFF;  // 0xC000..0xFFFE (0xFFFF: permissive)
inline constexpr std::uint32_t kMftBlockEntries = 32;
inline constexpr std::uint32_t kMftPortsPerPosition = 16;

struct McastGroupIn {
  Lid mlid;                      // 0xC000..0xFFFE
  std::vector<PortRef> members;  // CA/router ports, or a switch's port 0
};

class McastTables {
 public:
  struct Entry {
    std::uint32_t mlid = 0;
    PortMask ports;
  };
  // By switch_index: the switch's entries, ascending MLID.
  std::span<const Entry> entries(SwitchIndex s) const {
    return s.value < by_switch_.size() ? std::span<const Entry>(by_switch_[s.value])
                                       : std::span<const Entry>();
  }
  // The switch's mask for `mlid` (empty when it has none).
  PortMask ports(SwitchIndex s, Lid mlid) const;
  std::uint32_t num_switches() const { return static_cast<std::uint32_t>(by_switch_.size()); }
  // Highest MLID with an entry anywhere (0 when none).
  std::uint32_t max_mlid() const { return max_mlid_; }
  std::size_t num_groups() const { return groups_; }
  // Members no tree reaches, one line each.
  std::span<const std::string> notes() const { return notes_; }

 private:
  friend Result<McastTables> compute_multicast(const Topology&, const Routes&,
                                               std::span<const McastGroupIn>, WorkerPool&,
                                               std::stop_token);
  friend McastTables mcast_tables_for_test(std::vector<std::vector<Entry>> by_switch);
  std::vector<std::vector<Entry>> by_switch_;
  std::uint32_t max_mlid_ = 0;
  std::size_t groups_ = 0;
  std::vector<std::string> notes_;
};

// Tables from raw entries (tests that hand-craft bad trees).
McastTables mcast_tables_for_test(std::vector<std::vector<McastTables::Entry>> by_switch);

// `routes` gives the up/down order (updown_rank; computed when empty).
// kInvalidArgument for an MLID outside 0xC000..0xFFFE or a member port that
// does not exist; members no switch can reach are noted, not errors.
Result<McastTables> compute_multicast(const Topology& topo, const Routes& routes,
                                      std::span<const McastGroupIn> groups, WorkerPool& pool,
                                      std::stop_token stop = {});

struct McastVerifyReport {
  std::size_t groups = 0;
  std::uint64_t tree_links = 0;  // switch-to-switch links in trees, all groups
};

// `rank` by switch_index (Routes::updown_rank), or empty to skip the
// orientation check (the plain verifier's CDG then has to prove it).
// Errors name the group (MLID), the switches and ports.
Result<McastVerifyReport> verify_multicast(const Topology& topo, const McastTables& tables,
                                           std::span<const McastGroupIn> groups,
                                           std::span<const std::uint32_t> rank);

}  // namespace subnetd::routing

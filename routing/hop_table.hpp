#pragma once
// HopTable: for every switch v and every destination switch t, how many
// switch-to-switch hops v's route to t takes under a routing rule, and (for
// up*/down* routing) whether that route is all-down.
//
// Hop counts depend only on the destination *switch*, never on the LID, so
// engines compute this S x S table once and then fill LFT rows from it. At
// 8,000 switches it is 64 MB of hops plus 8 MB of down bits.
//
// Layout: row v holds v's hops to every t (stride() bytes, a multiple of 64 so
// a 64-destination chunk is one aligned cache line); down_row(v) holds one bit
// per t. Rows are what an engine filling switch v's LFT reads, together with
// the rows of v's neighbours.
//
// Built by one of the functions below on a WorkerPool with bit-parallel BFS:
// 64 destinations per pass, one 64-bit word per switch and frontier, so a pass
// costs (levels x arcs) word operations instead of 64 separate BFS runs.
// Immutable afterwards; read concurrently by the LFT fill.

#include <cstdint>
#include <span>
#include <stop_token>
#include <vector>

#include "routing/result.hpp"
#include "routing/switch_graph.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

class HopTable {
 public:
  static constexpr std::uint8_t kUnreachable = 255;
  // Longest route a table can hold; deeper fabrics are rejected (an LFT-routed
  // IB fabric with a 255-switch path is not something we expect to meet).
  static constexpr std::uint32_t kMaxHops = 254;

  HopTable() = default;
  explicit HopTable(std::uint32_t num_switches);

  std::uint32_t num_switches() const { return n_; }
  std::uint32_t stride() const { return stride_; }

  // Row v, indexed by destination switch index (t.value).
  const std::uint8_t* row(SwitchIndex v) const {
    return hops_.data() + std::size_t{v.value} * stride_;
  }
  std::uint8_t* mutable_row(SwitchIndex v) { return hops_.data() + std::size_t{v.value} * stride_; }
  std::uint8_t hops(SwitchIndex v, SwitchIndex t) const { return row(v)[t.value]; }

  // Bit t of down_row(v): v's route to t goes down only (up*/down* tables;
  // shortest-hop tables mark every reachable pair as down).
  const std::uint64_t* down_row(SwitchIndex v) const {
    return down_.data() + std::size_t{v.value} * (stride_ / 64);
  }
  std::uint64_t* mutable_down_row(SwitchIndex v) {
    return down_.data() + std::size_t{v.value} * (stride_ / 64);
  }
  bool down(SwitchIndex v, SwitchIndex t) const {
    return (down_row(v)[t.value / 64] >> (t.value % 64)) & 1U;
  }

 private:
  std::uint32_t n_ = 0;
  std::uint32_t stride_ = 0;
  std::vector<std::uint8_t> hops_;
  std::vector<std::uint64_t> down_;
};

// Minimum hop counts over the switch graph (symmetric: hops(v,t) == hops(t,v)).
Result<HopTable> shortest_hops(const SwitchGraph& g, WorkerPool& pool, std::stop_token stop);

// Up*/down* hop counts. order_pos is a total order of the switches (distinct
// values); the link s->n is "up" when order_pos[n] < order_pos[s]. For each
// destination t a reverse BFS gives every switch v one hop count and one mode:
// D if v's route to t is all-down, U if it starts upward. v is reached in mode
// D from a D switch over a down-link, in mode U from any switch over an
// up-link, and never over a down-link into a U switch (that would be a
// down->up turn); reached both ways at the same level, D wins. Every route
// that steps to a neighbour one hop closer within these rules is up*down*.
// With one local minimum of the order per component (see UpdnEngine), every
// switch of t's component is reached.
Result<HopTable> updown_hops(const SwitchGraph& g, std::span<const std::uint32_t> order_pos,
                             WorkerPool& pool, std::stop_token stop);

// For each switch, the largest shortest-hop distance to any of `sources` in
// its component (0 when there is none). Bit-parallel like the tables.
Result<std::vector<std::uint32_t>> farthest_hops(const SwitchGraph& g,
                                                 std::span<const SwitchIndex> sources,
                                                 WorkerPool& pool, std::stop_token stop);

// Largest shortest-hop distance from each switch to any switch of its
// component (0 for an isolated switch).
Result<std::vector<std::uint32_t>> eccentricities(const SwitchGraph& g, WorkerPool& pool,
                                                  std::stop_token stop);

}  // namespace subnetd::routing

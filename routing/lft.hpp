#pragma once
// Linear forwarding tables.
//
// Lft: one switch's table, a contiguous uint8_t array indexed by LID value
// (port 255 = drop, i.e. not routed). Block b covers LIDs [64b, 64b+63] as on
// the wire. A dirty-block bitmap records blocks changed through set() since the
// last clear_dirty(), so the Programmer and Rerouter push only those.
//
// Routes: the output of a routing engine — one Lft per switch, indexed by the
// Topology's switch_index, plus load statistics.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "routing/ids.hpp"

namespace subnetd::routing {

inline constexpr std::uint8_t kDropPort = 255;
// Service levels, and the VL an SL2VL table gives an SL whose packets
// are to be dropped (IBA 7.6.6: VL 15 for a data SL).
inline constexpr std::uint32_t kNumSls = 16;
inline constexpr std::uint8_t kDropVl = 15;
inline constexpr std::uint32_t kLftBlockSize = 64;

class Lft {
 public:
  Lft() = default;
  // Table covering LIDs 0..max_lid (rounded up to whole blocks), all drop.
  explicit Lft(Lid max_lid) { resize(max_lid); }

  void resize(Lid max_lid);
  std::uint32_t size() const { return static_cast<std::uint32_t>(ports_.size()); }
  std::uint32_t num_blocks() const { return size() / kLftBlockSize; }

  std::uint8_t get(Lid lid) const { return lid.value < size() ? ports_[lid.value] : kDropPort; }
  // Sets one entry and marks its block dirty if it changed.
  void set(Lid lid, std::uint8_t port) {
    std::uint8_t& e = ports_[lid.value];
    if (e != port) {
      e = port;
      dirty_[lid.value / kLftBlockSize / 64] |= std::uint64_t{1}
                                                << (lid.value / kLftBlockSize % 64);
    }
  }

  std::span<const std::uint8_t> block(std::uint32_t b) const {
    return std::span<const std::uint8_t>(ports_).subspan(b * kLftBlockSize, kLftBlockSize);
  }
  // Raw access for engines that fill whole tables (dirty bits are not tracked).
  std::uint8_t* data() { return ports_.data(); }
  const std::uint8_t* data() const { return ports_.data(); }

  bool block_dirty(std::uint32_t b) const { return (dirty_[b / 64] >> (b % 64)) & 1U; }
  void mark_all_dirty();
  void clear_dirty();
  std::vector<std::uint32_t> dirty_blocks() const;

  bool operator==(const Lft& o) const { return ports_ == o.ports_; }

 private:
  std::vector<std::uint8_t> ports_;
  std::vector<std::uint64_t> dirty_;
};

// Routes carried per directed link, for balance reports.
struct LinkLoad {
  std::uint64_t max_routes = 0;
  double mean_routes = 0.0;
  std::uint64_t links = 0;  // directed switch-to-switch links counted
  // A lower bound on max_routes for the engine's choice of paths: at every
  // switch, the destinations that share one set of candidate links (their
  // shortest legal next hops) divided by the size of that set, and all
  // up-going (down-going) destinations divided by the links their sets
  // cover; the largest such share over the fabric. 0 when the engine does
  // not compute it. On an intact fat tree ftree reaches ceil(ideal_max_routes).
  double ideal_max_routes = 0.0;
};

struct GridPlacement;  // grid_placement.hpp

struct Routes {
  std::string engine;
  Lid max_lid;
  std::vector<Lft> lfts;  // by switch_index
  LinkLoad load;
  // Number of virtual lanes the routing needs (1 for up/down-based engines).
  std::uint8_t num_vls = 1;
  // With num_vls > 1: by LID (0..max_lid), the layer the traffic to it
  // travels on (its SL, and the VL SL2VL maps it to on every port;
  // routing/layers.hpp; with per-hop VLs, below, its SL only). Empty
  // with one VL.
  std::vector<std::uint8_t> lid_layer;
  // The layer (SL) of the traffic to `l`: 0 with one VL.
  std::uint8_t layer(Lid l) const {
    return num_vls > 1 && l.value < lid_layer.size() ? lid_layer[l.value] : 0;
  }
  // With EngineOptions::branch_layers: by LID, empty or the layer of each
  // switch's path to it (by switch_index), where one destination's routes
  // take several layers; else empty. Read by path_layer().
  std::vector<std::vector<std::uint8_t>> path_layers;
  // The layer of the traffic from switch s (its CAs) to `l`.
  std::uint8_t path_layer(std::uint32_t s, Lid l) const {
    if (l.value < path_layers.size() && s < path_layers[l.value].size()) {
      return path_layers[l.value][s];
    }
    return layer(l);
  }
  // Per-hop VLs (dimension order with datelines, engines/dor.hpp): by
  // switch_index, the VL each SL takes out of each of the switch's ports,
  // the same from every input port (what its SL2VL tables hold):
  // hop_vls[s][port * kNumSls + sl], kDropVl for an SL no route uses. Then
  // lid_layer holds each LID's SL, which is not its VL, and num_vls the
  // data VLs the hops use. Empty: SL i travels on VL i on every port.
  std::vector<std::vector<std::uint8_t>> hop_vls;
  bool per_hop_vls() const { return !hop_vls.empty(); }
  // The VL traffic on SL `sl` takes out of switch s's port `out`
  // (kDropVl: none); SL i is VL i without per-hop VLs.
  std::uint8_t hop_vl(std::uint32_t s, std::uint8_t out, std::uint8_t sl) const {
    if (hop_vls.empty()) return sl;
    const std::size_t i = std::size_t{out} * kNumSls + sl;
    return s < hop_vls.size() && i < hop_vls[s].size() ? hop_vls[s][i] : kDropVl;
  }
  // Routes on several VLs, each LID's traffic kept to its layer, with no
  // up/down order (layered, dimension order): the rerouter cannot repair
  // them (it keeps routes up*/down*); fast failover plans them per layer,
  // and the heavy sweep repairs them within their layers (per-hop VLs
  // neither: no plan, and the heavy sweep routes afresh).
  bool layered_without_order() const {
    return num_vls > 1 && !lid_layer.empty() && updown_rank.empty();
  }
  // The up/down orientation the tables obey, for the incremental rerouter
  // (routing/rerouter.hpp): by switch_index, a rank such that the link s->n
  // is "up" iff (updown_rank[n], GUID of n) < (updown_rank[s], GUID of s).
  // Promise: for every CA/router LID, every switch that has an up*down*
  // route to the LID's switch routes it up*down* (so the channel dependency
  // graph of data traffic is acyclic with one VL), and no such route passes
  // a switch that has none. Exempt: entries of switches with no up*down*
  // route to the LID (ftree gives them down-then-up entries that no CA
  // traffic enters). Switch LIDs (management traffic, VL15) need no
  // up*/down* route for deadlock freedom, but the rerouter repairs their
  // entries by the same rules: give them up*/down* routes where one exists
  // (updn's, as ftree and layered on one VL do), or a repair can leave a
  // forwarding loop (found with shortest-path switch LIDs, rerouter_test). updn and ftree
  // export their placement order (distinct values: the GUID never decides).
  // Empty: the engine gives no such guarantee (minhop); failures are then
  // repaired by a full recompute only.
  std::vector<std::uint32_t> updown_rank;
  // Routes on several VLs share VL 0 with multicast (SL 0): the order the
  // multicast trees must climb and descend in (routing/mcast.hpp) so that
  // VL 0 stays acyclic, where updown_rank does not say. Layered routes keep
  // their escape layer on VL 0, whose CDG holds every up*/down* dependency
  // of this order (ranks as updown_rank's: distinct values). Empty: VL 0
  // carries no unicast whose order matters (dimension order leaves it to
  // multicast) or updown_rank rules it.
  std::vector<std::uint32_t> vl0_rank;
  // The order multicast trees follow: updown_rank, else vl0_rank (either
  // may be empty).
  const std::vector<std::uint32_t>& multicast_rank() const {
    return updown_rank.empty() ? vl0_rank : updown_rank;
  }
  // Routes computed on a torus, mesh or hypercube (layered): where each
  // switch sat in that grid, by GUID. The next computation is given it
  // (EngineOptions::previous_grid) and places the grid as this one was, so
  // the coordinates, and the SLs dimension order gives LIDs by them, stay
  // when the switch of least GUID dies. Null: no grid.
  std::shared_ptr<const GridPlacement> grid;
  // What the engine wants the operator to know (a fallback it took, parts of
  // the fabric it could not route), one line each, for the log.
  std::vector<std::string> notes;
};

}  // namespace subnetd::routing

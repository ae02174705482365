#pragma once
// Routing engines: one small interface, chosen by name.
//
// An engine is a pure function of const inputs: it reads the Topology and the
// LidMap and returns Routes (one LFT per switch) or an Error. It keeps no state
// between calls, does no I/O and starts no threads; heavy loops run on the
// WorkerPool it is given, and it checks `stop` between chunks of work
// (Errc::kCancelled). Engines do not promise deadlock freedom by themselves:
// the verifier (routing/verifier.hpp) decides before anything is programmed.
//
// Engines (routing/engines/, one per file):
//   minhop — shortest paths, balanced by per-port route counts; no deadlock
//            guarantee (loops on rings and tori).
//   updn   — up*/down* over a switch order rooted at configured or
//            automatically chosen roots; deadlock-free with one VL.
//   ftree  — balanced fat-tree routing (D-mod-K), up/down by levels, so
//            deadlock-free with one VL; keeps routing degraded trees.
//   layered — balanced shortest-or-near paths on any topology, one VL
//            layer per destination, each layer's dependencies acyclic;
//            never needs more VLs than it is given. Tori, meshes and
//            hypercubes get dimension-order routes (engines/dor.hpp).
//   auto   — ftree on fat trees (degraded ones included), layered on grids
//            and on other fabrics up to kAutoLayeredMaxSwitches switches
//            with two data VLs or more, else updn (engines/auto_engine.hpp).

#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string_view>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

struct EngineOptions {
  // updn: node GUIDs of the root switches (the top of the up/down order).
  // Empty: chosen automatically per connected part of the fabric (see
  // routing/engines/updn.hpp). A GUID that is not a switch is an error.
  std::vector<Guid> root_guids;
  // layered: the data VLs every port offers (the smallest PortInfo
  // OperationalVLs over switch-to-switch links), 1..15; the engine uses at
  // most this many layers.
  std::uint8_t max_vls = 8;
  // layered: a hot-spot tree that no single layer takes off the busiest
  // channel may give each of its branches (the switches behind one
  // neighbour's neighbour of its switch) a layer of its own; the SL then
  // depends on the source as well as the destination (Routes::
  // path_layers; the verifier, the SA, the path-SL dump, fast failover
  // and the layered repair read it), while the busiest channel carries
  // more than 10% over the mean (a split costs fast failover where its
  // branches meet: layered_general.cpp, kBranchExcess). On by default (the
  // daemon's routing.branch_layers); layers_bench compares (branches=0|1).
  bool branch_layers = true;
  // layered, auto: where each switch sat in the grid the previous routes
  // were computed on (Routes::grid). A torus, mesh or hypercube found again
  // is placed the same way (routing/grid_placement.hpp), so its LIDs keep
  // their SLs when the switch of least GUID, which canonical coordinates
  // start from, dies. Null: canonical coordinates.
  std::shared_ptr<const GridPlacement> previous_grid;
  // layered, auto: node GUIDs placing a grid (place_by_seed): the switch
  // at the origin, then its neighbour one step up along each dimension.
  // Applied before previous_grid; a seed that does not fit the grid found
  // is said in the notes. Empty: none.
  std::vector<Guid> grid_seed;
};

class RoutingEngine {
 public:
  virtual ~RoutingEngine() = default;
  virtual std::string_view name() const = 0;
  // Runs on the caller's thread (the SM strand or a test); uses `pool` for
  // parallel loops. Safe to call concurrently: engines hold no mutable state.
  virtual Result<Routes> compute(const Topology& topo, const LidMap& lids,
                                 const EngineOptions& opts, WorkerPool& pool,
                                 std::stop_token stop) const = 0;
};

// The names make_engine() accepts, in a stable order (for help and errors).
std::span<const std::string_view> engine_names();

// Creates an engine by name; an unknown name is kInvalidArgument listing the
// known ones.
Result<std::unique_ptr<RoutingEngine>> make_engine(std::string_view name);

}  // namespace subnetd::routing

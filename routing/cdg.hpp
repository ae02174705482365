#pragma once
// The cycle search of a channel dependency graph, shared by the LFT verifier
// (routing/verifier.hpp) and the fast-failover verifier
// (routing/failover_verify.hpp).
//
// Channels are the arcs of a SwitchGraph (directed switch-to-switch links).
// Dependencies are kept per channel as a 256-bit set of out-ports of the
// switch the channel leads to: bit p of channel a's set means a packet that
// crossed a may go on through port p there.

#include <cstdint>
#include <span>
#include <stop_token>
#include <vector>

#include "routing/result.hpp"
#include "routing/switch_graph.hpp"

namespace subnetd::routing {

inline constexpr std::uint32_t kCdgDepWords = 4;  // 256 out-port bits per channel

// Iterative DFS over the channels. `deps` holds g.num_arcs() x kCdgDepWords
// words. Returns the channels of one cycle in order (arc indices), or an
// empty vector when the graph is acyclic; kCancelled when `stop` is
// requested.
Result<std::vector<std::uint32_t>> find_cdg_cycle(const SwitchGraph& g,
                                                  std::span<const std::uint64_t> deps,
                                                  std::stop_token stop);

// The same over channels on `vls` VLs whose dependencies may change VL
// (per-hop VLs, Routes::hop_vls): `deps` holds vls x vls blocks of
// g.num_arcs() x kCdgDepWords words, block v * vls + w the dependencies of
// channels on VL v onto channels on VL w. The cycle's channels are
// VL * g.num_arcs() + arc. With vls 1 it is find_cdg_cycle.
Result<std::vector<std::uint32_t>> find_cdg_cycle_across(const SwitchGraph& g,
                                                         std::span<const std::uint64_t> deps,
                                                         std::uint32_t vls, std::stop_token stop);

}  // namespace subnetd::routing

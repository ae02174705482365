#pragma once
// The SM's multicast step: the registry's groups (state/mcast_groups.hpp)
// resolved to ports of a topology, their trees computed
// (routing/mcast.hpp) and checked before anything is programmed.
//
// Members are found by port GUID; a member whose port is not in the
// topology (a host that went away without leaving) is skipped and counted.
// The trees are always checked by verify_multicast; with an up/down order
// (Routes::updown_rank) that also proves them deadlock-free together with
// the unicast routes. Without one (minhop) the caller must run the plain
// verifier with VerifyOptions::multicast, as the heavy sweep does.

#include <memory>
#include <span>
#include <stop_token>
#include <vector>

#include "routing/lft.hpp"
#include "routing/mcast.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"
#include "routing/worker_pool.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::daemon {

struct MulticastResult {
  std::shared_ptr<const routing::McastTables> tables;
  std::size_t members_absent = 0;  // member ports not in the topology
};

std::vector<routing::McastGroupIn> mcast_inputs(const routing::Topology& topo,
                                                std::span<const state::McastGroup> groups,
                                                std::size_t* absent = nullptr);

Result<MulticastResult> multicast_step(const routing::Topology& topo, const routing::Routes& routes,
                                       std::span<const state::McastGroup> groups,
                                       routing::WorkerPool& pool, std::stop_token stop);

}  // namespace subnetd::daemon

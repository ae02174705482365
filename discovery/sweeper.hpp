#pragma once
// Sweeper: directed-route breadth-first discovery of the fabric from the SM's
// own port, building a routing::Topology.
//
// Owner: the SubnetManager (or `subnetd --once`), one run at a time. Runs on:
// the MAD engine's strand; many SMPs are kept in flight (one Flow with the
// configured window), and traps keep reaching the engine's handler while the
// sweep runs. Nodes are
// deduplicated by node GUID, so loops, parallel links and dual-ported CAs on
// two switches collapse to one node with several links. A neighbour that
// never answers is recorded as unreachable (not fatal); only the SM's own
// node failing to answer fails the sweep.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/mad_engine.hpp"
#include "discovery/transport.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery {

struct SweepOptions {
  FlowOptions pipeline;
  bool extended_lids = false;  // also read ExtPortInfo (lid_bits 17/24)
};

// Directed-route paths from the SM to every node, stored flat.
class DrPaths {
 public:
  void add(std::span<const std::uint8_t> path) {
    offsets_.push_back(static_cast<std::uint32_t>(ports_.size()));
    ports_.insert(ports_.end(), path.begin(), path.end());
    ends_.push_back(static_cast<std::uint32_t>(ports_.size()));
  }
  std::span<const std::uint8_t> path(NodeId n) const {
    return std::span<const std::uint8_t>(ports_).subspan(offsets_[n.value],
                                                         ends_[n.value] - offsets_[n.value]);
  }
  std::size_t size() const { return offsets_.size(); }

 private:
  std::vector<std::uint8_t> ports_;
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint32_t> ends_;
};

struct SweepResult {
  routing::Topology topology;
  DrPaths paths;  // by NodeId: the path each node was first reached by
  // CA/router ports reached by another path than their node's (a dual-ported
  // CA on two switches), by Topology port index. An SMA answers port-specific
  // Sets only for the port an SMP arrives through (IBA; ibsim enforces it).
  std::unordered_map<std::uint32_t, std::vector<std::uint8_t>> port_paths;
  NodeId sm_node;       // the SM's own CA
  PortNum sm_port = 0;  // the port the SM sends from
  FlowStats smps;
  // MADs that did not decode while the sweep ran (counted by the engine).
  std::uint64_t malformed = 0;
  std::chrono::nanoseconds duration{};  // transport time
  // "switch "sw-3" (0x...) port 7: no answer after 4 tries" — neighbours left out.
  std::vector<std::string> unreachable;
  std::vector<std::string> warnings;
  // Two nodes answering with one node GUID (a board flashed with another's
  // GUID, or a copied virtual machine): the sweep sees one node, reached
  // twice in ways one node cannot be (another type or port count, or a
  // port already cabled elsewhere). The second is left out of the fabric.
  struct GuidClash {
    Guid guid;
    std::string message;  // names both paths
  };
  std::vector<GuidClash> guid_clashes;
  std::uint32_t max_hops = 0;
  // By NodeId, switches only: the LinearFDBTop each switch reported
  // (ExtSwitchInfo's in the 17/24-bit modes); kUnknownTop when it did not
  // answer. A switch that lost its tables (power cycle) reports 0.
  static constexpr std::uint32_t kUnknownTop = UINT32_MAX;
  std::vector<std::uint32_t> lft_top;
  // By Topology port index: the PortInfo attribute each port answered, as
  // read (all zero for a port not read). The SA serves PortInfoRecords from
  // it, with what the SM sets afterwards patched in.
  std::vector<std::array<std::uint8_t, 64>> port_info;
  // By switch_index: each switch's SwitchInfo attribute as read (all zero
  // when not read); the SA's SwitchInfoRecords.
  std::vector<std::array<std::uint8_t, 64>> switch_info;
  std::uint32_t lft_top_of(NodeId n) const {
    return n.value < lft_top.size() ? lft_top[n.value] : kUnknownTop;
  }

  // The directed route to use for an SMP about port `p` of node `n`.
  std::span<const std::uint8_t> path_to_port(NodeId n, PortNum p) const {
    auto it = port_paths.find(topology.port_index(n, p));
    return it != port_paths.end() ? std::span<const std::uint8_t>(it->second) : paths.path(n);
  }
};

// Directed routes from the SM's port to every node, breadth first over the
// cabled ports `usable` accepts (all when empty): to route around links
// found down after a sweep. Nodes no route reaches get an empty path and
// `reached` (if given) says which did.
DrPaths bfs_paths(const routing::Topology& t, NodeId sm_node, PortNum sm_port,
                  const std::function<bool(NodeId, PortNum)>& usable = {},
                  std::vector<std::uint8_t>* reached = nullptr);

class Sweeper {
 public:
  explicit Sweeper(SweepOptions opts) : opts_(opts) {}
  // For run() without an engine of the caller's.
  Sweeper(Transport& transport, SweepOptions opts) : transport_(&transport), opts_(opts) {}

  // One sweep over `engine` (on its strand). Fails only when the SM's own
  // node does not answer, there is no subnet behind the SM's port, or the
  // engine stops (kCancelled, or its transport error).
  boost::asio::awaitable<Result<SweepResult>> run(MadEngine& engine);
  // The same on a private event loop over the transport given at
  // construction (tools, tests, `subnetd --once`).
  Result<SweepResult> run();

 private:
  Transport* transport_ = nullptr;
  SweepOptions opts_;
};

}  // namespace subnetd::discovery

#pragma once
// Sweeper: directed-route breadth-first discovery of the fabric from the SM's
// own port, building a routing::Topology.
//
// Owner: the SubnetManager (or `subnetd --once`), one run at a time, on the
// SM strand. Many SMPs are kept in flight (SmpPipeline window). Nodes are
// deduplicated by node GUID, so loops, parallel links and dual-ported CAs on
// two switches collapse to one node with several links. A neighbour that
// never answers is recorded as unreachable (not fatal); only the SM's own
// node failing to answer fails the sweep.

#include <chrono>
#include <cstdint>
#include <span>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/smp_pipeline.hpp"
#include "discovery/transport.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery {

struct SweepOptions {
  PipelineOptions pipeline;
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
  DrPaths paths;        // by NodeId: the path each node was first reached by
  // CA/router ports reached by another path than their node's (a dual-ported
  // CA on two switches), by Topology port index. An SMA answers port-specific
  // Sets only for the port an SMP arrives through (IBA; ibsim enforces it).
  std::unordered_map<std::uint32_t, std::vector<std::uint8_t>> port_paths;
  NodeId sm_node;       // the SM's own CA
  PortNum sm_port = 0;  // the port the SM sends from
  PipelineStats smps;
  std::chrono::nanoseconds duration{};  // transport time
  // "switch "sw-3" (0x...) port 7: no answer after 4 tries" — neighbours left out.
  std::vector<std::string> unreachable;
  std::vector<std::string> warnings;
  std::uint32_t max_hops = 0;

  // The directed route to use for an SMP about port `p` of node `n`.
  std::span<const std::uint8_t> path_to_port(NodeId n, PortNum p) const {
    auto it = port_paths.find(topology.port_index(n, p));
    return it != port_paths.end() ? std::span<const std::uint8_t>(it->second) : paths.path(n);
  }
};

class Sweeper {
 public:
  Sweeper(Transport& transport, SweepOptions opts) : transport_(transport), opts_(opts) {}
  Result<SweepResult> run(std::stop_token stop = {});

 private:
  Transport& transport_;
  SweepOptions opts_;
};

}  // namespace subnetd::discovery

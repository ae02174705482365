#pragma once
// Seeded random numbers and the Jellyfish random regular graph used by the
// `random:` topology family.
//
// Determinism: the same (n, degree, seed) gives the same graph on every
// platform and library version. std::mt19937_64 is specified bit-exactly by the
// standard; the std:: distributions are not, so bounded draws use our own
// rejection sampler (SeededRng::below).

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "routing/result.hpp"

namespace subnetd::discovery::topo {

// A 64-bit Mersenne Twister with an unbiased, portable bounded draw.
// Owned by one generator call; not thread-safe.
class SeededRng {
 public:
  explicit SeededRng(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, bound); bound must be > 0.
  std::uint64_t below(std::uint64_t bound);

 private:
  std::mt19937_64 engine_;
};

// An undirected simple graph on switches 0..n-1, as a list of edges (u < v).
struct SwitchGraph {
  std::uint32_t num_switches = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
};

// Jellyfish construction (Singla et al., NSDI'12): join random pairs of
// switches that still have free ports and are not yet adjacent; when no such
// pair is left but a switch x has two or more free ports, break a random link
// (u,v) with u,v not adjacent to x and link x-u, x-v (or, for two adjacent
// switches x,y with one free port each, x-u and y-v). Then, if the graph is not
// connected, double-edge swaps between components ((u,v),(x,y) -> (u,x),(v,y))
// join them while keeping every switch's degree.
//
// Every switch ends with `degree` links, except one switch with degree-1 when
// n*degree is odd (the splices leave no other port free in practice; the
// generator tests check the exact count). Requires 1 <= degree < n, and degree >= 2 when n > 2 (the
// caller validates; a violation returns kInvalidArgument). Returns kInternal if
// the repair cannot connect the graph (not observed for degree >= 2).
Result<SwitchGraph> jellyfish_graph(std::uint32_t n, std::uint32_t degree, std::uint64_t seed);

}  // namespace subnetd::discovery::topo

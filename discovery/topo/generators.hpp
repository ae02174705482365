#pragma once
// Topology generators: a spec string -> the physical fabric as a
// routing::Topology (what the simulator is built from and what the Sweeper
// must rediscover).
//
// Spec grammar:  family:key=value,key=value,...   (numbers are decimal)
//
//   fat-tree:levels=2,radix=R[,hosts_per_edge=H|hosts=T][,ca_ports=1|2]
//       Leaf/spine. R leaves ("leafI") and R/2 spines ("spineI"), every leaf
//       linked once to every spine; H CAs per leaf (default R/2). R even, 2..254.
//   fat-tree:levels=3,k=K[,hosts_per_edge=H|hosts=T][,ca_ports=1|2]
//       k-ary fat tree: K pods of K/2 edge ("edge-pP-E") and K/2 aggregation
//       ("agg-pP-A") switches, (K/2)^2 cores ("core-C"), H CAs per edge switch
//       (default K/2). Every switch has K ports. K even, 2..254.
//       hosts=T spreads T CAs over all edge switches as evenly as possible
//       (edge i gets floor(T(i+1)/E) - floor(Ti/E)).
//   pgft:h=H,m=m1.m2...mH,w=w1...wH[,p=p1...pH]
//       Zahavi's parallel-ports generalized fat tree PGFT(h; m; w; p) (XGFT
//       when all p are 1): level 0 are the CAs, levels 1..h switches. A
//       level-l node has m_l children with p_l parallel links to each, and
//       w_{l+1} parents with p_{l+1} links to each. Level l has
//       prod(m_{l+1..h}) * prod(w_1..w_l) nodes. p defaults to all 1.
//       CAs ("h-I") have w1*p1 ports; switches are "sw-lL-I".
//   torus:dims=AxB[xC][,hosts=H][,ca_ports=1|2]
//   mesh:dims=AxB[xC][,hosts=H][,ca_ports=1|2]
//       A 1-3 dimensional grid of switches ("sw-x-y-z"), H CAs per switch
//       (default 1). torus wraps around, mesh does not. A torus dimension of
//       size 2 gets ONE link between its two switches (not two parallel ones);
//       size 1 gets none.
//   ring:switches=N[,hosts=H][,ca_ports=1|2]
//       A torus of one dimension.
//   hypercube:dim=D[,hosts=H][,ca_ports=1|2]
//       2^D switches ("sw-b-b-...", one bit per dimension), each linked to
//       the D that differ from it in one bit: a mesh of D dimensions of
//       size 2, D <= 16 (ports as a mesh's, the "-" port of each dimension
//       on one end and the "+" port on the other).
//   dragonfly:a=A,p=P,h=H,g=G[,ca_ports=1|2]
//       G groups ("sw-gG-S") of A fully connected switches, P CAs per switch,
//       H global links per switch, G <= A*H+1. Global links follow the
//       circulant ("palm tree") arrangement: group i's global slot k (slot k is
//       switch k/H, global port k%H) goes to group i+d (mod G); every pair of
//       groups gets floor(A*H/(G-1)) links, and the remaining slots are paired
//       as a circulant (offsets d and G-d, plus G/2) so link counts differ by
//       at most one between group pairs. Slots that cannot be paired stay free.
//   random:switches=N,degree=D[,hosts=H][,seed=S][,ca_ports=1|2]
//       Jellyfish random D-regular switch graph ("rswI"), H CAs per switch
//       (default 1), seed default 1. Connected (swap repair). Deterministic for
//       a given seed on every platform.
//
// ca_ports=2 gives dual-port CAs: host switches are paired in order (0,1),
// (2,3), ...; CA j of a pair has port 1 on the first switch's host port j+1
// and port 2 on the second's, so there are half as many CAs as host ports.
// It needs an even number of host switches with equal host counts, so it
// cannot be combined with fat-tree's hosts= total.
//
// Port numbering: CA-facing ports first (1..hosts), then ports towards lower
// levels, then up-ports (fat trees); torus/mesh: hosts, then per dimension d
// the "+" port hosts+1+2d and the "-" port hosts+2+2d; dragonfly: hosts,
// local ports (to the group's other switches in order), global ports.
//
// GUIDs: switch i (creation order) has node GUID kSwitchGuidBase + i; CA c has
// kCaGuidBase + c*stride with port GUIDs node GUID + port (stride 4, or the
// next power of two above the port count for PGFT CAs with more ports).
// Switches are created first, then CAs; node descriptions are the names above
// (valid ibsim node ids). Linked ports are in state INIT, 4x QDR.
//
// Bad specs (unknown family or key, missing key, non-numbers, impossible
// values, more than 254 ports on a node) return Errc::kInvalidArgument with a
// message that starts with the family and names the key.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery::topo {

inline constexpr std::uint64_t kSwitchGuidBase = 0x0002c90000000000ULL;
inline constexpr std::uint64_t kCaGuidBase = 0x0002c90100000000ULL;
// Largest fabric a spec may ask for (nodes); guards against typos like k=2540.
inline constexpr std::size_t kMaxGeneratedNodes = std::size_t{1} << 24;
// Port 255 is reserved on the wire (and is the LFT's drop port).
inline constexpr unsigned kMaxNodePorts = 254;

Result<routing::Topology> generate(std::string_view spec);

// Checks a spec as generate() would (family, keys, values, sizes, port
// counts) without building the fabric, so a config parser can refuse a bad
// one cheaply. A spec that passes can still fail in generate() only for a
// reason found while wiring (a random graph that cannot be connected).
Result<void> check_spec(std::string_view spec);

// The rule that tells a spec from a net-file path in fabric.topology: a ':'
// before any '/' and no file of that name.
bool looks_like_spec(std::string_view spec_or_path);

}  // namespace subnetd::discovery::topo

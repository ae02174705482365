#pragma once
// Programmer: writes a verified routing result into the fabric.
//
// Order (DESIGN.md step 5): PortInfo LIDs (LID, LMC, MasterSMLID, GID prefix)
// on every endpoint port whose values differ, LinearFDBTop on every switch,
// the P_Key table blocks that differ from what each port is known to hold,
// partition enforcement on switch ports facing CAs where it differs from
// what the sweep read, the LFT blocks and then the MFT blocks that differ from what each switch is
// known to hold, then every live port INIT -> ARMED -> ACTIVE. Each phase completes before the next
// starts, so no port goes ACTIVE before the tables are in place.
//
// Owner: the SubnetManager / `subnetd --once`. Runs on: the MAD engine's
// strand (one Flow; traps are heard while it programs). It never sees
// unverified tables: callers program only Routes that passed the verifier.
// All SMPs are directed-route, so programming works before any LFT exists.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/mad_engine.hpp"
#include "discovery/sweeper.hpp"
#include "discovery/vl_tables.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/mcast.hpp"
#include "routing/partitions.hpp"
#include "routing/rerouter.hpp"

namespace subnetd::discovery {

// What the Programmer writes into a port's PortInfo besides LIDs and
// state (the SA reports the same in its PortInfoRecords):
//  - NeighborMTU on a cabled physical port: the lesser MTUCap of the two
//    ends (IBA 14.2.5.6, the SM's to set), so every link carries the MTU
//    PathRecords promise;
//  - OperationalVLs on a cabled physical port: as many data VLs as the
//    routing's layers need (Routes::num_vls; 1, 2, 4, 8 or 15, no more
//    than the lesser VLCap of the link's two ends), so SL i maps to VL i
//    for every layer i on every switch-to-switch link
//    (vl_tables.hpp) and the arbitration table shares the link among
//    them; one VL (VL0) for single-layer routing;
//  - VLCap, and OperationalVLs elsewhere, echoed as the sweep read them
//    (an SMA may check OperationalVLs against the VLCap of the Set; ibsim
//    does, and stores whatever OperationalVLs it is sent).
// 0 = unknown (not read): the field is sent as 0.
struct PortLinkSettings {
  std::uint8_t neighbor_mtu = 0;
  std::uint8_t vl_cap = 0;
  std::uint8_t operational_vls = 0;
};
PortLinkSettings port_link_settings(const routing::Topology& t,
                                    std::span<const std::array<std::uint8_t, 64>> port_info_read,
                                    NodeId n, PortNum p, unsigned routing_vls);
// The OperationalVLs code (1 -> 1 VL, 2 -> 2, 3 -> 4, 4 -> 8, 5 -> 15) of
// the fewest data VLs that hold `vls` layers.
std::uint8_t operational_vls_for(unsigned vls);
// The data VLs every switch-to-switch link offers: the least VLCap the
// sweep read on their ports (data_vls of it), 1 when none was read. What
// the layered routing engine may use.
unsigned fabric_data_vls(const routing::Topology& t,
                         std::span<const std::array<std::uint8_t, 64>> port_info_read);

struct ProgramOptions {
  FlowOptions pipeline;
  std::uint64_t subnet_prefix = 0xfe80000000000000ULL;
  std::uint8_t subnet_timeout = 18;
  bool activate = true;  // move live ports to ARMED and ACTIVE
  // Only the MFT phase (the SM re-programming trees after joins/leaves).
  bool only_multicast = false;
  // Set PortInfo:ClientReregister on every CA port that supports it, so
  // its clients (IPoIB, librdmacm) join their multicast groups and
  // register their services again: what an SM that starts or takes over
  // does, since it does not know what they had joined (IBA 14.4.11).
  bool client_reregister = false;
};

// What the switches are known to hold, from earlier programming and repairs:
// `row(switch GUID)` is that switch's whole LFT (64 entries a block), or an
// empty span when what it holds is unknown (never programmed by us, a
// programming that failed half-way, a switch that rebooted).
struct HeldTables {
  std::function<std::span<const std::uint8_t>(Guid switch_guid)> row;
};

// Table blocks the switches and ports are known to hold, by (node GUID,
// slot, block): P_Key tables (slot = port, 32 entries a block) and
// multicast forwarding tables (slot = position, 32 MLIDs a block). The
// Programmer records each block a node acknowledged and sends only blocks
// that differ or are unknown. Owned by the SM (whose strand the Programmer
// runs on); forget() a node that rebooted or whose programming is in doubt.
class HeldBlocks {
 public:
  using Block = std::array<std::uint16_t, 32>;
  // The block, or null when unknown.
  const Block* block(Guid node, unsigned slot, unsigned block) const;
  void set_block(Guid node, unsigned slot, unsigned block, const Block& keys);
  // Blocks 0 .. n-1 of the slot have been written at some time (n = 0: none).
  unsigned extent(Guid node, unsigned slot) const;
  void forget(Guid node) { held_.erase(node); }
  void clear() { held_.clear(); }
  std::size_t nodes() const { return held_.size(); }

 private:
  struct Held {
    std::vector<Block> blocks;
    std::vector<bool> known;
  };
  std::unordered_map<Guid, std::vector<Held>> held_;  // by node, then slot
};
using HeldPKeys = HeldBlocks;

// The blocks of a port's P_Key table the Programmer writes: enough for its
// capacity (NodeInfo:PartitionCap, or the switch's
// PartitionEnforcementCap on an external port; at least one block, at most
// 32), so that entries an earlier SM left beyond ours are cleared.
unsigned pkey_blocks(const routing::Topology& t, NodeId n, PortNum p);

// Optional inputs of a programming pass that the SM changes while it runs.
struct ProgramLive {
  // The LFT row of switch `sw` (of the sweep's topology) to program,
  // instead of the Routes' own. Blocks are read from it when they
  // are handed to the engine, so a table the fast path repairs while the
  // pass runs is programmed as repaired.
  std::function<std::span<const std::uint8_t>(SwitchIndex sw)> want_row;
  // Blocks repaired after the pass may already have sent them: the SM
  // appends them here, and the pass sends them (again) once its LFT phase is
  // through, until the list stays empty.
  std::vector<routing::DirtyBlock>* resend = nullptr;
  // Bumped by the SM whenever it replaces the sweep's directed routes
  // (SweepResult::paths, read at each submission) to go around links found
  // down while the pass runs: an SMP that failed on a route since replaced
  // is sent once more, on the new one.
  const std::uint32_t* paths_version = nullptr;
  // Ports to leave alone: their link was found down while the pass runs, or
  // no route reaches them any more (not counted as failures).
  std::function<bool(NodeId, PortNum)> skip;
  // Partitions (of the sweep's topology): every port's P_Key table and
  // the enforcement bits of switch ports facing CAs. Null: P_Keys are left
  // as they are. `held_pkeys` (may be null: every block is sent) is read
  // and updated.
  const routing::PartitionPlan* partitions = nullptr;
  HeldPKeys* held_pkeys = nullptr;
  // Multicast trees (of the sweep's topology): every switch's MFT blocks
  // up to the highest MLID in use or ever written (so a group that went
  // away is cleared). Null: MFTs are left as they are. `held_mfts` as
  // held_pkeys.
  const routing::McastTables* multicast = nullptr;
  HeldBlocks* held_mfts = nullptr;
  // Directed routes to the switches to use instead of the sweep's (by
  // NodeId of its topology): a pass after links failed since the sweep
  // goes around them. Null: the sweep's.
  const DrPaths* switch_paths = nullptr;
  // What each port's SL2VL and VLArb tables hold (vl_tables.hpp), read
  // and updated. Null: every port's tables are sent.
  HeldVls* held_vls = nullptr;
};

struct ProgramReport {
  std::uint64_t port_lid_sets = 0;
  std::uint64_t switch_info_sets = 0;
  std::uint64_t lft_blocks_sent = 0;
  std::uint64_t lft_blocks_unchanged = 0;
  std::uint64_t lft_blocks_resent = 0;  // ProgramLive::resend
  std::uint64_t pkey_blocks_sent = 0;
  std::uint64_t pkey_blocks_unchanged = 0;
  // PortInfo Sets on ACTIVE switch ports (phase 1c), by what changed (a
  // Set may count in both).
  std::uint64_t enforcement_sets = 0;      // partition enforcement
  std::uint64_t operational_vls_sets = 0;  // OperationalVLs (the routing's layers)
  std::uint64_t client_reregisters = 0;    // PortInfo Sets with ClientReregister
  std::uint64_t sl2vl_sets = 0;
  std::uint64_t vlarb_sets = 0;
  std::uint64_t vl_ports_unchanged = 0;  // SL2VL and VLArb already held
  std::uint64_t mft_blocks_sent = 0;
  std::uint64_t mft_blocks_unchanged = 0;
  std::uint64_t resubmitted = 0;  // failed SMPs sent again on a new route
  std::uint64_t skipped = 0;      // SMPs left out (ProgramLive::skip)
  std::uint64_t ports_armed = 0;
  std::uint64_t ports_activated = 0;
  FlowStats smps;
  std::chrono::nanoseconds duration{};
  std::vector<std::string> failures;  // SMPs that failed after retries, with the target
  // Switches that did not acknowledge every SwitchInfo and LFT block sent
  // (what they hold is unknown), by GUID, sorted.
  std::vector<Guid> switches_failed;
  bool ok() const { return failures.empty(); }
};

class Programmer {
 public:
  explicit Programmer(ProgramOptions opts) : opts_(opts) {}
  // For the blocking program() without an engine of the caller's.
  Programmer(Transport& transport, ProgramOptions opts) : transport_(&transport), opts_(opts) {}

  // `held` may be null (nothing known: every block up to max_lid is sent).
  // Fails only when the engine stops (kCancelled or its transport error);
  // SMPs that fail are listed in the report.
  boost::asio::awaitable<Result<ProgramReport>> program(MadEngine& engine, const SweepResult& sweep,
                                                        const routing::LidMap& lids,
                                                        const routing::Routes& routes,
                                                        const HeldTables* held,
                                                        ProgramLive live = {});
  // The same on a private event loop over the transport given at construction.
  Result<ProgramReport> program(const SweepResult& sweep, const routing::LidMap& lids,
                                const routing::Routes& routes, const HeldTables* held);

 private:
  Transport* transport_ = nullptr;
  ProgramOptions opts_;
};

}  // namespace subnetd::discovery

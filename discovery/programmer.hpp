#pragma once
// Programmer: writes a verified routing result into the fabric.
//
// Order (DESIGN.md step 5): PortInfo LIDs (LID, LMC, MasterSMLID, GID prefix)
// on every endpoint port whose values differ, LinearFDBTop on every switch,
// the LFT blocks that differ from what each switch is known to hold, then
// every live port INIT -> ARMED -> ACTIVE. Each phase completes before the
// next starts, so no port goes ACTIVE before the tables are in place.
//
// Owner: the SubnetManager / `subnetd --once`, on the SM strand. It never sees
// unverified tables: callers program only Routes that passed the verifier.
// All SMPs are directed-route, so programming works before any LFT exists.

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/smp_pipeline.hpp"
#include "discovery/sweeper.hpp"
#include "routing/lft.hpp"
#include "routing/lid_map.hpp"

namespace subnetd::discovery {

struct ProgramOptions {
  PipelineOptions pipeline;
  std::uint64_t subnet_prefix = 0xfe80000000000000ULL;
  std::uint8_t subnet_timeout = 18;
  bool activate = true;  // move live ports to ARMED and ACTIVE
};

// What the switches are known to hold, from an earlier successful run.
struct HeldTables {
  std::shared_ptr<const routing::Routes> routes;
  std::unordered_map<Guid, std::uint32_t> switch_index_by_guid;  // into routes->lfts
  const routing::Lft* find(Guid switch_guid) const {
    if (!routes) return nullptr;
    auto it = switch_index_by_guid.find(switch_guid);
    return it == switch_index_by_guid.end() ? nullptr : &routes->lfts[it->second];
  }
};

struct ProgramReport {
  std::uint64_t port_lid_sets = 0;
  std::uint64_t switch_info_sets = 0;
  std::uint64_t lft_blocks_sent = 0;
  std::uint64_t lft_blocks_unchanged = 0;
  std::uint64_t ports_armed = 0;
  std::uint64_t ports_activated = 0;
  PipelineStats smps;
  std::chrono::nanoseconds duration{};
  std::vector<std::string> failures;  // SMPs that failed after retries, with the target
  bool ok() const { return failures.empty(); }
};

class Programmer {
 public:
  Programmer(Transport& transport, ProgramOptions opts) : transport_(transport), opts_(opts) {}

  // `held` may be null (nothing known: every block up to max_lid is sent).
  Result<ProgramReport> program(const SweepResult& sweep, const routing::LidMap& lids,
                                const routing::Routes& routes, const HeldTables* held,
                                std::stop_token stop = {});

 private:
  Transport& transport_;
  ProgramOptions opts_;
};

}  // namespace subnetd::discovery

#include "discovery/programmer.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace subnetd::discovery {
namespace {

using routing::NodeType;
using routing::PortState;

std::string target(const routing::Topology& t, NodeId n, PortNum p) {
  return fmt::format("\"{}\" ({:#018x}) port {}", t.node(n).description, t.node(n).guid.value, p);
}

}  // namespace

Result<ProgramReport> Programmer::program(const SweepResult& sweep, const routing::LidMap& lids,
                                          const routing::Routes& routes, const HeldTables* held,
                                          std::stop_token stop) {
  const routing::Topology& t = sweep.topology;
  const bool extended = lids.space.extended();
  const std::uint32_t sm_lid = lids.base_lid(t, sweep.sm_node, sweep.sm_port).value;
  ProgramReport report;
  const auto start = transport_.now();
  PipelineOptions popts = opts_.pipeline;
  popts.sm_lid = sm_lid;
  SmpPipeline pipeline(transport_, popts);
  // Requests are handed to the pipeline in batches: each queued SMP holds
  // its MAD and callback, and a full-scale fabric has ~17 million LFT blocks
  // (5+ GB queued at once). A batch boundary costs one round trip.
  constexpr std::uint32_t kBatch = 16384;
  std::uint32_t batched = 0;
  auto run_if_full = [&]() -> Result<void> {
    if (++batched < kBatch) return {};
    batched = 0;
    return pipeline.run(stop);
  };

  auto fail_to = [&report, &t](NodeId n, PortNum p) {
    return [&report, &t, n, p](Result<mad::Smp> r) {
      if (!r.ok()) report.failures.push_back(target(t, n, p) + ": " + r.error().message);
    };
  };
  auto path = [&sweep](NodeId n) { return sweep.paths.path(n); };
  auto is_endpoint = [&t](NodeId n, PortNum p) {
    return t.node(n).type == NodeType::kSwitch ? p == 0 : t.port(n, p).connected();
  };

  // The PortInfo we write: our values where we set them, 0 ("no change")
  // in the enable/state fields we leave alone.
  auto port_info = [&](NodeId n, PortNum p, PortState state) {
    mad::PortInfo pi;
    pi.gid_prefix = opts_.subnet_prefix;
    pi.local_port_num = p;
    pi.port_state = static_cast<std::uint8_t>(state);
    pi.subnet_timeout = opts_.subnet_timeout;
    if (is_endpoint(n, p)) {
      const std::uint32_t lid = lids.base_lid(t, n, p).value;
      pi.lid = static_cast<std::uint16_t>(extended ? std::min<std::uint32_t>(lid, 0xFFFF) : lid);
      pi.master_sm_lid =
          static_cast<std::uint16_t>(extended ? std::min<std::uint32_t>(sm_lid, 0xFFFF) : sm_lid);
      pi.lmc = t.node(n).type == NodeType::kSwitch ? 0 : lids.lmc;
    }
    return pi;
  };
  auto send_port_info = [&](NodeId n, PortNum p, PortState state) {
    mad::Smp smp =
        mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kPortInfo, p, sweep.path_to_port(n, p), 0);
    port_info(n, p, state).encode(mad::data_of(smp));
    pipeline.submit(smp, 0, fail_to(n, p));
  };

  // Phase 1: LIDs on endpoint ports, LinearFDBTop on switches.
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const routing::Node& node = t.node(n);
    const bool sw = node.type == NodeType::kSwitch;
    for (unsigned pn = sw ? 0 : 1; pn <= (sw ? 0U : node.num_ports); ++pn) {
      const PortNum p = static_cast<PortNum>(pn);
      if (!is_endpoint(n, p)) continue;
      const routing::Port& port = t.port(n, p);
      const Lid want = lids.base_lid(t, n, p);
      const std::uint8_t want_lmc = sw ? 0 : lids.lmc;
      if (port.lid == want && port.lmc == want_lmc && port.master_sm_lid.value == sm_lid) continue;
      ++report.port_lid_sets;
      if (extended) {
        mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kExtPortInfo, p,
                                        sweep.path_to_port(n, p), 0);
        mad::ExtPortInfo e;
        e.lid = want.value;
        e.master_sm_lid = sm_lid;
        e.lmc = want_lmc;
        e.lid_bits = static_cast<std::uint8_t>(lids.space.bits);
        e.encode(mad::data_of(smp));
        pipeline.submit(smp, 0, fail_to(n, p));
      } else {
        send_port_info(n, p, PortState::kNoChange);
      }
    }
    if (sw) {
      // SwitchInfo: LinearFDBTop (16-bit mode) and a write of 1 to
      // PortStateChange, which clears it: this sweep has seen the changes.
      ++report.switch_info_sets;
      mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kSwitchInfo, 0, path(n), 0);
      mad::SwitchInfo si;
      si.linear_fdb_top =
          static_cast<std::uint16_t>(std::min<std::uint32_t>(routes.max_lid.value, 0xFFFF));
      si.life_time_value = 18;
      si.port_state_change = true;
      si.encode(mad::data_of(smp));
      pipeline.submit(smp, 0, fail_to(n, 0));
      if (extended) {
        mad::Smp ext =
            mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kExtSwitchInfo, 0, path(n), 0);
        mad::ExtSwitchInfo e;
        e.linear_fdb_top = routes.max_lid.value;
        e.encode(mad::data_of(ext));
        pipeline.submit(ext, 0, fail_to(n, 0));
      }
    }
  }
  SUBNETD_TRY(pipeline.run(stop));

  // Phase 2: LFT blocks that differ from what the switch holds.
  auto lft_failure = [&report, &t](NodeId n, std::uint32_t b, const Error& e) {
    report.failures.push_back(fmt::format("{}: LFT block {}: {}", target(t, n, 0), b, e.message));
  };
  const mad::AttrId lft_attr =
      extended ? mad::AttrId::kExtLinearForwardingTable : mad::AttrId::kLinearForwardingTable;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(s);
    const routing::Lft& lft = routes.lfts[s];
    const routing::Lft* old = held != nullptr ? held->find(t.node(n).guid) : nullptr;
    const std::uint32_t blocks = routes.max_lid.value / routing::kLftBlockSize + 1;
    for (std::uint32_t b = 0; b < blocks; ++b) {
      auto want = lft.block(b);
      if (old != nullptr && b < old->num_blocks()) {
        auto have = old->block(b);
        if (std::equal(want.begin(), want.end(), have.begin())) {
          ++report.lft_blocks_unchanged;
          continue;
        }
      }
      mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, lft_attr, b, path(n), 0);
      mad::LinearForwardingTable block;
      std::copy(want.begin(), want.end(), block.ports.begin());
      block.encode(mad::data_of(smp));
      ++report.lft_blocks_sent;
      // Two words of capture: std::function keeps them inline (no heap
      // allocation for each of the millions of blocks).
      const std::uint64_t node_block = (std::uint64_t{n.value} << 32) | b;
      pipeline.submit(smp, 0, [&lft_failure, node_block](Result<mad::Smp> r) {
        if (!r.ok()) {
          lft_failure(NodeId{static_cast<std::uint32_t>(node_block >> 32)},
                      static_cast<std::uint32_t>(node_block), r.error());
        }
      });
      SUBNETD_TRY(run_if_full());
    }
  }
  SUBNETD_TRY(pipeline.run(stop));

  // Phase 3: INIT -> ARMED -> ACTIVE on every live port.
  if (opts_.activate && report.failures.empty()) {
    for (PortState step : {PortState::kArmed, PortState::kActive}) {
      for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
        const NodeId n{i};
        for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
          const PortNum p = static_cast<PortNum>(pn);
          const routing::Port& port = t.port(n, p);
          if (!port.connected() || port.state == PortState::kActive) continue;
          if (step == PortState::kArmed && port.state != PortState::kInit) continue;
          ++(step == PortState::kArmed ? report.ports_armed : report.ports_activated);
          send_port_info(n, p, step);
          SUBNETD_TRY(run_if_full());
        }
      }
      SUBNETD_TRY(pipeline.run(stop));
    }
  }
  report.smps = pipeline.stats();
  report.duration = transport_.now() - start;
  return report;
}

}  // namespace subnetd::discovery

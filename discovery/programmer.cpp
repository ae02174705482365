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
                                          const routing::Routes& routes, const HeldTables* held) {
  return run_blocking<Result<ProgramReport>>(
      *transport_, [&](MadEngine& engine) { return program(engine, sweep, lids, routes, held); });
}

boost::asio::awaitable<Result<ProgramReport>> Programmer::program(
    MadEngine& engine, const SweepResult& sweep, const routing::LidMap& lids,
    const routing::Routes& routes, const HeldTables* held, ProgramLive live) {
  Transport& transport = engine.transport();
  const routing::Topology& t = sweep.topology;
  const bool extended = lids.space.extended();
  const std::uint32_t sm_lid = lids.base_lid(t, sweep.sm_node, sweep.sm_port).value;
  ProgramReport report;
  const auto start = transport.now();
  FlowOptions popts = opts_.pipeline;
  popts.sm_lid = sm_lid;
  Flow pipeline(engine, popts);
  // Requests are handed to the flow a bounded number at a time: each queued
  // SMP holds its MAD and callback, and a full-scale fabric has ~17 million
  // LFT blocks (5+ GB queued at once). Refilled at half, so the window
  // never runs dry.
  constexpr std::size_t kQueued = 16384;
  auto stopped = [&engine]() -> Error {
    return engine.error()
               ? *engine.error()
               : Error{Errc::kCancelled, "programming cancelled: the MAD engine stopped"};
  };

  auto fail_to = [&report, &t](NodeId n, PortNum p) {
    return [&report, &t, n, p](Result<mad::Smp> r) {
      if (r.ok()) return;
      report.failures.push_back(target(t, n, p) + ": " + r.error().message);
      if (t.node(n).type == NodeType::kSwitch && p == 0) {
        report.switches_failed.push_back(t.node(n).guid);
      }
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
  co_await pipeline.drained();
  if (engine.stopped()) co_return stopped();

  // Phase 2: LFT blocks that differ from what the switch holds.
  auto lft_failure = [&report, &t](NodeId n, std::uint32_t b, const Error& e) {
    report.failures.push_back(fmt::format("{}: LFT block {}: {}", target(t, n, 0), b, e.message));
    report.switches_failed.push_back(t.node(n).guid);
  };
  const mad::AttrId lft_attr =
      extended ? mad::AttrId::kExtLinearForwardingTable : mad::AttrId::kLinearForwardingTable;
  auto want_row = [&](std::uint32_t s) -> std::span<const std::uint8_t> {
    if (live.want_row) return live.want_row(s);
    const routing::Lft& lft = routes.lfts[s];
    return {lft.data(), lft.size()};
  };
  auto send_block = [&](NodeId n, std::uint32_t b, std::span<const std::uint8_t> want) {
    mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, lft_attr, b, path(n), 0);
    mad::LinearForwardingTable block;
    std::copy(want.begin(), want.end(), block.ports.begin());
    block.encode(mad::data_of(smp));
    // Two words of capture: std::function keeps them inline (no heap
    // allocation for each of the millions of blocks).
    const std::uint64_t node_block = (std::uint64_t{n.value} << 32) | b;
    pipeline.submit(smp, 0, [&lft_failure, node_block](Result<mad::Smp> r) {
      if (!r.ok()) {
        lft_failure(NodeId{static_cast<std::uint32_t>(node_block >> 32)},
                    static_cast<std::uint32_t>(node_block), r.error());
      }
    });
  };
  const std::uint32_t blocks = routes.max_lid.value / routing::kLftBlockSize + 1;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId n = t.switch_node(s);
    const std::span<const std::uint8_t> have_row =
        held != nullptr && held->row ? held->row(t.node(n).guid) : std::span<const std::uint8_t>{};
    for (std::uint32_t b = 0; b < blocks; ++b) {
      const std::size_t at = std::size_t{b} * routing::kLftBlockSize;
      // Read now: the row may have been repaired since the last block.
      const auto want = want_row(s).subspan(at, routing::kLftBlockSize);
      if (have_row.size() >= at + routing::kLftBlockSize &&
          std::equal(want.begin(), want.end(),
                     have_row.begin() + static_cast<std::ptrdiff_t>(at))) {
        ++report.lft_blocks_unchanged;
        continue;
      }
      ++report.lft_blocks_sent;
      send_block(n, b, want);
      if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
      if (engine.stopped()) co_return stopped();
    }
  }
  co_await pipeline.drained();
  if (engine.stopped()) co_return stopped();
  // Blocks a repair changed while this pass ran, as they stand now.
  while (live.resend != nullptr && !live.resend->empty()) {
    std::vector<routing::DirtyBlock> again;
    again.swap(*live.resend);
    for (const routing::DirtyBlock& d : again) {
      if (d.sw >= t.num_switches() || d.block >= blocks) continue;
      ++report.lft_blocks_resent;
      send_block(t.switch_node(d.sw), d.block,
                 want_row(d.sw).subspan(std::size_t{d.block} * routing::kLftBlockSize,
                                        routing::kLftBlockSize));
    }
    co_await pipeline.drained();
    if (engine.stopped()) co_return stopped();
  }

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
          if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
          if (engine.stopped()) co_return stopped();
        }
      }
      co_await pipeline.drained();
      if (engine.stopped()) co_return stopped();
    }
  }
  report.smps = pipeline.stats();
  report.duration = transport.now() - start;
  std::sort(report.switches_failed.begin(), report.switches_failed.end());
  report.switches_failed.erase(
      std::unique(report.switches_failed.begin(), report.switches_failed.end()),
      report.switches_failed.end());
  co_return report;
}

}  // namespace subnetd::discovery

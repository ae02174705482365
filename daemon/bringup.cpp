#include "daemon/bringup.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "routing/engines/layered_repair.hpp"

namespace subnetd::daemon {
namespace {

using Steady = std::chrono::steady_clock;

double ms(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Whether `now` has only switches `before` had, and only switch-to-switch
// links it had (same ports, same neighbours); else a description of the
// first that is new.
std::string new_in(const routing::Topology& before, const routing::Topology& now) {
  for (const NodeId sw : now.switches()) {
    const routing::Node& node = now.node(sw);
    const std::optional<NodeId> was = before.find_by_guid(node.guid);
    if (!was || before.node(*was).type != routing::NodeType::kSwitch) {
      return fmt::format("switch {} is new", now.label(sw));
    }
    for (unsigned p = 1; p <= node.num_ports; ++p) {
      const auto pn = static_cast<PortNum>(p);
      const routing::Port& port = now.port(sw, pn);
      if (!port.connected() || now.node(port.remote_node).type != routing::NodeType::kSwitch) {
        continue;
      }
      const routing::Port& old =
          p <= before.node(*was).num_ports ? before.port(*was, pn) : routing::Port{};
      if (!old.connected() ||
          before.node(old.remote_node).guid != now.node(port.remote_node).guid ||
          old.remote_port != port.remote_port) {
        return fmt::format("the link at {} port {} is new", now.label(sw), p);
      }
    }
  }
  return {};
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kSweep:
      return "sweep";
    case Phase::kLids:
      return "LID assignment";
    case Phase::kRoute:
      return "routing";
    case Phase::kVerify:
      return "verification";
    case Phase::kProgram:
      return "programming";
  }
  return "?";
}

Error phase_error(Phase p, const Error& e) {
  return Error{e.code, fmt::format("{} failed: {}", phase_name(p), e.message)};
}

boost::asio::awaitable<Result<discovery::SweepResult>> sweep_step(discovery::MadEngine& engine,
                                                                  const BringUpOptions& opts) {
  discovery::Sweeper sweeper(opts.sweep);
  auto swept = co_await sweeper.run(engine);
  if (!swept.ok()) co_return phase_error(Phase::kSweep, swept.error());
  co_return std::move(swept).value();
}

Result<routing::LidAssignment> lids_step(const discovery::SweepResult& sweep,
                                         const BringUpOptions& opts) {
  auto lids = routing::assign_lids(
      sweep.topology, routing::LidAssignOptions{opts.space, opts.lmc, opts.remembered_lids});
  if (!lids.ok()) return phase_error(Phase::kLids, lids.error());
  return lids;
}

Result<std::shared_ptr<const routing::Routes>> route_step(const discovery::SweepResult& sweep,
                                                          const routing::LidMap& lids,
                                                          const BringUpOptions& opts,
                                                          routing::WorkerPool& pool,
                                                          std::stop_token stop) {
  const routing::Topology& topo = sweep.topology;
  routing::EngineOptions eopts = opts.engine_options;
  const unsigned offered = discovery::fabric_data_vls(topo, sweep.port_info);
  // A grid found again is placed as the last routes' was (their LIDs keep
  // their SLs: routing/grid_placement.hpp), or before a restart.
  eopts.previous_grid = opts.previous_routes ? opts.previous_routes->grid : opts.previous_grid;
  eopts.max_vls = static_cast<std::uint8_t>(
      std::clamp(opts.max_vls != 0 ? std::min<unsigned>(opts.max_vls, offered) : offered, 1U, 15U));
  auto run = [&](const std::string& name) -> Result<routing::Routes> {
    auto engine = routing::make_engine(name);
    if (!engine.ok()) return engine.error();
    return (*engine)->compute(topo, lids, eopts, pool, stop);
  };
  // Layered routes on several VLs: repaired in their layers if the fabric
  // only lost links.
  std::string repair_note;
  const routing::Routes* prev = opts.previous_routes.get();
  if (prev != nullptr && opts.previous_topology && prev->layered_without_order() &&
      (opts.engine == "layered" || opts.engine == "auto")) {
    const std::string grown = new_in(*opts.previous_topology, topo);
    if (prev->per_hop_vls()) {
      repair_note =
          "dimension-order routes on per-hop dateline VLs routed afresh around the change (a "
          "LID's SL follows its switch's grid coordinates, so it stays; only LIDs no detour fits "
          "there move to a free SL or VL 0)";
    } else if (opts.rebalance) {
      repair_note =
          "layered routes routed afresh to re-balance them, as requested (subnetctl sweep "
          "--rebalance): LIDs may change layer, and a host must resolve its PathRecord (SL) "
          "again";
    } else if (grown.empty()) {
      auto repaired =
          routing::repair_layered(topo, lids, *opts.previous_topology, *prev, eopts, stop, nullptr,
                                  routing::RepairBalance::kHotSpotsInLayer);
      if (repaired.ok()) {
        return std::make_shared<const routing::Routes>(std::move(repaired).value());
      }
      if (repaired.error().code == Errc::kCancelled) {
        return phase_error(Phase::kRoute, repaired.error());
      }
      repair_note = fmt::format(
          "{}: routed afresh, and LIDs may change layer: a host must resolve its PathRecord "
          "(SL) again",
          repaired.error().message);
    } else {
      repair_note = fmt::format(
          "layered routes routed afresh to use what the fabric gained ({}): LIDs may change "
          "layer, and a host must resolve its PathRecord (SL) again",
          grown);
    }
  }
  auto routes = run(opts.engine);
  if (routes.ok() && !repair_note.empty()) routes->notes.insert(routes->notes.begin(), repair_note);
  if (!routes.ok() && routes.error().code != Errc::kCancelled && !opts.fallback_engine.empty() &&
      opts.fallback_engine != opts.engine) {
    const std::string why = routes.error().message;
    routes = run(opts.fallback_engine);
    if (routes.ok()) {
      routes->notes.insert(routes->notes.begin(),
                           fmt::format("engine {} could not route ({}); routed with the fallback "
                                       "engine {} (routing.fallback)",
                                       opts.engine, why, opts.fallback_engine));
    } else {
      routes = Error{routes.error().code,
                     fmt::format("engine {}: {}; fallback engine {}: {}", opts.engine, why,
                                 opts.fallback_engine, routes.error().message)};
    }
  }
  if (!routes.ok()) return phase_error(Phase::kRoute, routes.error());
  return std::make_shared<const routing::Routes>(std::move(routes).value());
}

Result<routing::VerifyReport> verify_step(const routing::Topology& topo,
                                          const routing::LidMap& lids,
                                          const routing::Routes& routes, routing::WorkerPool& pool,
                                          std::stop_token stop,
                                          const routing::McastTables* multicast) {
  routing::VerifyOptions vo;
  vo.multicast = multicast;
  auto verdict = routing::verify(topo, lids, routes, vo, pool, stop);
  if (!verdict.ok()) {
    Error e = verdict.error();
    e.message += "; nothing was programmed";
    return phase_error(Phase::kVerify, e);
  }
  return verdict;
}

boost::asio::awaitable<Result<void>> program_step(discovery::MadEngine& engine,
                                                  const BringUpOptions& opts, BringUpResult& out,
                                                  const discovery::HeldTables* held,
                                                  discovery::ProgramLive live) {
  if (live.multicast == nullptr) live.multicast = out.multicast.get();
  if (live.partitions == nullptr && out.partitions) live.partitions = out.partitions.get();
  if (live.partitions == nullptr) {
    out.partitions = std::make_shared<const routing::PartitionPlan>(routing::plan_partitions(
        out.sweep.topology, opts.partitions, PortRef{out.sweep.sm_node, out.sweep.sm_port}));
    live.partitions = out.partitions.get();
  }
  discovery::Programmer programmer(opts.program);
  auto programmed =
      co_await programmer.program(engine, out.sweep, out.lids.map, *out.routes, held, live);
  if (!programmed.ok()) co_return phase_error(Phase::kProgram, programmed.error());
  out.program = std::move(programmed).value();
  if (!out.program.ok()) {
    const std::string& first = out.program.failures.front();
    co_return phase_error(Phase::kProgram,
                          Error{Errc::kTimeout, fmt::format("{} SMPs failed, first: {}",
                                                            out.program.failures.size(), first)});
  }
  // The topology we publish says what the fabric now is: the Programmer
  // moved every cabled port to ACTIVE and wrote the LIDs.
  routing::Topology& topo = out.sweep.topology;
  for (std::uint32_t i = 0; i < topo.num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = topo.node(n).type == routing::NodeType::kSwitch;
    for (unsigned p = 0; p <= topo.node(n).num_ports; ++p) {
      const PortNum pn = static_cast<PortNum>(p);
      if (p > 0 && opts.program.activate && topo.port(n, pn).connected()) {
        topo.mutable_port(n, pn).state = routing::PortState::kActive;
      }
      if ((sw && p == 0) || (!sw && p > 0 && topo.port(n, pn).connected())) {
        routing::Port& port = topo.mutable_port(n, pn);
        port.lid = out.lids.map.base_lid(topo, n, pn);
        port.lmc = sw ? 0 : out.lids.map.lmc;
        port.master_sm_lid = out.lids.map.base_lid(topo, out.sweep.sm_node, out.sweep.sm_port);
      }
    }
  }
  co_return Result<void>{};
}

boost::asio::awaitable<Result<BringUpResult>> BringUp::run(const BringUpOptions& opts,
                                                           const discovery::HeldTables* held) {
  BringUpResult out;
  const auto t0 = Steady::now();

  auto t = Steady::now();
  auto swept = co_await sweep_step(engine_, opts);
  if (!swept.ok()) co_return failed(Phase::kSweep, swept.error());
  out.sweep = std::move(swept).value();
  out.times.sweep = Steady::now() - t;

  t = Steady::now();
  auto assign = [&] { return lids_step(out.sweep, opts); };
  auto lids = co_await compute_.run(assign);
  if (!lids.ok()) co_return failed(Phase::kLids, lids.error());
  out.lids = std::move(lids).value();
  if (opts.persist_lids) {
    if (auto saved = opts.persist_lids(out.lids); !saved.ok()) {
      co_return failed(Phase::kLids, phase_error(Phase::kLids, Error{saved.error().code,
                                                                     "saving the LIDs failed: " +
                                                                         saved.error().message}));
    }
  }
  out.times.lids = Steady::now() - t;

  t = Steady::now();
  auto route = [&] { return route_step(out.sweep, out.lids.map, opts, pool_, {}); };
  auto routes = co_await compute_.run(route);
  if (!routes.ok()) co_return failed(Phase::kRoute, routes.error());
  out.routes = std::move(routes).value();
  out.times.route = Steady::now() - t;

  t = Steady::now();
  auto check = [&] {
    return verify_step(out.sweep.topology, out.lids.map, *out.routes, pool_, {});
  };
  auto verdict = co_await compute_.run(check);
  if (!verdict.ok()) co_return failed(Phase::kVerify, verdict.error());
  out.verify = std::move(verdict).value();
  out.times.verify = Steady::now() - t;

  t = Steady::now();
  if (auto programmed = co_await program_step(engine_, opts, out, held); !programmed.ok()) {
    co_return failed(Phase::kProgram, programmed.error());
  }
  out.times.program = Steady::now() - t;
  out.times.total = Steady::now() - t0;
  co_return out;
}

Result<BringUpResult> BringUp::run_blocking(discovery::Transport& transport,
                                            routing::WorkerPool& pool, const BringUpOptions& opts,
                                            const discovery::HeldTables* held, Phase* failed) {
  ComputeRunner compute;
  return discovery::run_blocking<Result<BringUpResult>>(
      transport,
      [&](discovery::MadEngine& engine) -> boost::asio::awaitable<Result<BringUpResult>> {
        BringUp bring_up(engine, compute, pool);
        auto r = co_await bring_up.run(opts, held);
        if (failed != nullptr) *failed = bring_up.failed_phase();
        co_return r;
      });
}

BringUpOptions bring_up_options(const Config& cfg) {
  BringUpOptions o;
  discovery::FlowOptions pipe;
  pipe.window = cfg.sweep.smp_window;
  // At most this many SMPs queued at one switch's SMA (real SMAs hold a few
  // dozen; a full queue drops the next SMP, a sweep's or the fast path's).
  pipe.per_destination = std::min(cfg.sweep.smp_window, kSmpsPerSwitch);
  pipe.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg.sweep.timeout);
  pipe.retries = cfg.sweep.retries;
  o.space = *routing::LidSpace::from_bits(cfg.addressing.lid_bits);
  o.sweep.pipeline = pipe;
  o.sweep.extended_lids = o.space.extended();
  o.program.pipeline = pipe;
  o.lmc = cfg.addressing.lmc;
  o.engine = std::string(to_string(cfg.routing.engine));
  o.engine_options.root_guids = cfg.routing.root_guids;
  o.engine_options.grid_seed = cfg.routing.grid_seed;
  o.engine_options.branch_layers = cfg.routing.branch_layers;
  o.fallback_engine = std::string(to_string(cfg.routing.fallback));
  o.max_vls = cfg.routing.max_vls;
  o.partitions = cfg.partitions;
  return o;
}

std::string summarize(const BringUpResult& r, std::string_view transport_name) {
  const routing::Topology& t = r.sweep.topology;
  std::size_t ca_ports = 0;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const routing::Node& n = t.node(NodeId{i});
    if (n.type == routing::NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      ca_ports += t.port(NodeId{i}, static_cast<PortNum>(p)).connected() ? 1 : 0;
    }
  }
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "subnet up on {}: {} switches, {} CAs ({} ports), {} links\n", transport_name,
                 t.num_switches(), t.num_cas(), ca_ports, t.num_links());
  fmt::format_to(
      out, "  LIDs: {} used, max LID {:#x} ({}-bit space, LMC {}), {} changed, {} conflicts\n",
      r.lids.lids_used, r.lids.map.max_lid.value, r.lids.map.space.bits, r.lids.map.lmc,
      r.lids.changed.size(), r.lids.conflicts.size());
  fmt::format_to(out,
                 "  routing: engine {}, {} VL(s), routes per link max {} mean {:.1f} over {} links",
                 r.routes->engine, r.routes->num_vls, r.routes->load.max_routes,
                 r.routes->load.mean_routes, r.routes->load.links);
  if (r.routes->load.ideal_max_routes > 0) {
    fmt::format_to(out, " (lower bound for the max {:.1f})", r.routes->load.ideal_max_routes);
  }
  fmt::format_to(out, "\n");
  for (const std::string& note : r.routes->notes) fmt::format_to(out, "  routing note: {}\n", note);
  fmt::format_to(out,
                 "  verified: complete, loop-free, deadlock-free ({} switch/LID pairs, {} VL(s), "
                 "{} channels, {} dependencies)\n",
                 r.verify.pairs_checked, r.verify.num_vls, r.verify.channels,
                 r.verify.dependencies);
  fmt::format_to(
      out,
      "  programmed: {} port LID sets, {} LFT blocks sent ({} unchanged), {} ports armed, "
      "{} activated, {} SMPs\n",
      r.program.port_lid_sets, r.program.lft_blocks_sent, r.program.lft_blocks_unchanged,
      r.program.ports_armed, r.program.ports_activated, r.program.smps.sent);
  fmt::format_to(out, "  sweep: {} SMPs ({} retries, {} timeouts), max {} hops, {} unreachable\n",
                 r.sweep.smps.sent, r.sweep.smps.retries, r.sweep.smps.timeouts, r.sweep.max_hops,
                 r.sweep.unreachable.size());
  fmt::format_to(out,
                 "  phases (ms): sweep {:.1f}, lids {:.1f}, route {:.1f}, verify {:.1f}, program "
                 "{:.1f}, total {:.1f}\n",
                 ms(r.times.sweep), ms(r.times.lids), ms(r.times.route), ms(r.times.verify),
                 ms(r.times.program), ms(r.times.total));
  return s;
}

}  // namespace subnetd::daemon

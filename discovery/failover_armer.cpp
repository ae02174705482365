#include "discovery/failover_armer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "discovery/coro.hpp"
#include "discovery/mad/failover.hpp"
#include "discovery/mad/smp.hpp"

namespace subnetd::discovery {
namespace asio = boost::asio;
using routing::FailoverPlan;
using routing::PortMask;

namespace {

// SMPs queued in the flow before the pass waits for half of them (as the
// Programmer does: a slot stays in the cache between encoding and sending).
constexpr std::size_t kQueued = 1024;

mad::WirePortMask to_wire(const PortMask& m) {
  mad::WirePortMask w{};
  m.for_each([&w](PortNum p) { mad::mask_set(w, p); });
  return w;
}

const PortMask& group_at(const FailoverPlan* plan, SwitchIndex s, std::size_t id) {
  static const PortMask kNone;
  if (plan == nullptr) return kNone;
  const auto groups = plan->groups(s);
  return id < groups.size() ? groups[id] : kNone;
}

std::uint8_t lid_group_at(const FailoverPlan* plan, SwitchIndex s, std::uint32_t lid) {
  if (plan == nullptr || lid > plan->max_lid().value) return 0;
  return plan->lid_group(s, Lid{lid});
}

std::string name_of(const routing::Topology& t, NodeId n) {
  return t.label(n);
}

// What a pass's callbacks share (a pointer to it keeps each callback within
// std::function's inline storage).
struct PassState {
  PassState(const routing::Topology& t, ArmReport& r)
      : topo(&t), report(&r), failed(t.num_switches(), 0) {
    r.switches = static_cast<std::uint32_t>(t.num_switches());
  }
  const routing::Topology* topo;
  ArmReport* report;
  std::vector<std::uint8_t> failed;  // by switch index
  void fail(SwitchIndex s, std::string_view what, const Error& e) {
    failed[s.value] = 1;
    if (report->failures.size() < 64) {
      report->failures.push_back(
          fmt::format("{}: {}: {}", name_of(*topo, topo->switch_node(s)), what, e.message));
    }
  }
};

}  // namespace

std::size_t FailoverArmer::armed_switches() const {
  return static_cast<std::size_t>(std::count_if(known_.begin(), known_.end(), [](const auto& kv) {
    return kv.second.cap == Capability::kCapable && kv.second.plan != nullptr;
  }));
}

asio::awaitable<Result<ArmReport>> FailoverArmer::arm(MadEngine& engine, const SweepResult& sweep,
                                                      std::shared_ptr<const FailoverPlan> plan,
                                                      FlowOptions pipeline) {
  ArmReport report;
  const routing::Topology& t = sweep.topology;
  if (plan == nullptr || plan->num_switches() != t.num_switches()) {
    co_return Error{Errc::kInvalidArgument, "failover plan is not for this sweep's fabric"};
  }
  Transport& transport = engine.transport();
  const auto start = transport.now();
  Flow flow(engine, pipeline);
  PassState ps(t, report);
  auto stopped = [&engine]() -> Error {
    return engine.error() ? *engine.error() : Error{Errc::kCancelled, "MAD engine stopped"};
  };

  // 1. Which switches have the feature (asked once per daemon run).
  std::vector<std::uint32_t> ours;
  for (std::uint32_t si = 0; si < t.num_switches(); ++si) {
    const routing::Node& node = t.node(t.switch_node(SwitchIndex{si}));
    if (node.vendor_id != mad::kSubnetdVendorId) {
      ++report.foreign;
      continue;
    }
    ours.push_back(si);
    known_.try_emplace(node.guid);  // every key exists before a callback looks it up
  }
  std::vector<std::uint16_t> group_cap(t.num_switches(), 0);
  for (const std::uint32_t si : ours) {
    const NodeId n = t.switch_node(SwitchIndex{si});
    const Guid guid = t.node(n).guid;
    if (known_[guid].cap != Capability::kUnknown && known_[guid].plan) {
      group_cap[si] = FailoverPlan::kMaxGroups;  // armed before: it fits
      continue;
    }
    if (known_[guid].cap == Capability::kSilent || known_[guid].cap == Capability::kNotCapable) {
      continue;
    }
    ++report.info_gets;
    const mad::Smp smp =
        mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kFailoverInfo, 0, sweep.paths.path(n), 0);
    auto done = [this, guid, si, &ps, &group_cap](Result<mad::Smp> r) {
      Known& k = known_.find(guid)->second;
      if (!r.ok()) {
        if (r.error().code == Errc::kTimeout) {
          k.cap = Capability::kSilent;
          ++ps.report->newly_silent;
        } else {
          ps.fail(SwitchIndex{si}, "FailoverInfo", r.error());
        }
        return;
      }
      if (r->status != 0) {
        k.cap = Capability::kNotCapable;
        return;
      }
      const auto info = mad::FailoverInfo::decode(mad::data_of(*r));
      k.cap = info.cap_local && info.cap_notify ? Capability::kCapable : Capability::kNotCapable;
      group_cap[si] = info.group_cap;
      // Armed by someone (a previous run, another SM): its tables are not known.
      k.plan.reset();
    };
    flow.submit(smp, 0, done, dest_of(n));
  }
  co_await flow.drained();
  if (engine.stopped()) co_return stopped();

  // 2. The tables that differ, on the capable switches.
  std::vector<std::uint8_t> needs_info(t.num_switches(), 0);
  const std::uint32_t lid_top = plan->max_lid().value;
  const std::uint32_t lid_blocks = lid_top / mad::kFailoverLidsPerBlock + 1;
  auto checked = [&ps](SwitchIndex s, const char* what) {
    return [&ps, s, what](Result<void> r) {
      if (!r.ok()) ps.fail(s, what, r.error());
    };
  };
  // The capable switches whose LID group tables are compared and sent.
  struct LidTable {
    SwitchIndex s;
    NodeId n;
    const FailoverPlan* old = nullptr;
    SwitchIndex oi;
  };
  std::vector<LidTable> lid_tables;
  for (const std::uint32_t si : ours) {
    const SwitchIndex s{si};
    const NodeId n = t.switch_node(s);
    Known& k = known_[t.node(n).guid];
    if (k.cap == Capability::kSilent) ++report.silent;
    if (k.cap == Capability::kNotCapable) ++report.not_capable;
    if (k.cap != Capability::kCapable) continue;
    ++report.capable;
    const auto groups = plan->groups(s);
    if (groups.size() - 1 > group_cap[si]) {
      ps.fail(s, "FailoverInfo",
              Error{Errc::kOutOfRange, fmt::format("it supports {} groups, the plan needs {}",
                                                   group_cap[si], groups.size() - 1)});
      continue;
    }
    const FailoverPlan* old = k.plan.get();
    const SwitchIndex oi = k.index;
    const std::span<const std::uint8_t> path = sweep.paths.path(n);
    for (std::size_t first = 0; first < groups.size(); first += mad::kFailoverGroupsPerBlock) {
      mad::FailoverGroupBlock want, have;
      for (std::size_t i = 0; i < mad::kFailoverGroupsPerBlock; ++i) {
        want.groups[i] = to_wire(group_at(plan.get(), s, first + i));
        have.groups[i] = to_wire(group_at(old, oi, first + i));
      }
      if (old != nullptr && want == have) {
        ++report.blocks_unchanged;
        continue;
      }
      mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kFailoverGroupTable,
                                      static_cast<std::uint32_t>(first / 2), path, 0);
      want.encode(mad::data_of(smp));
      ++report.group_blocks_sent;
      flow.submit_checked(smp, 0, checked(s, "failover group block"), dest_of(n));
    }
    if (old == nullptr || old->notify(oi) != plan->notify(s)) {
      mad::Smp smp =
          mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kFailoverNotifyConfig, 0, path, 0);
      mad::FailoverNotifyConfig nc;
      nc.notify = to_wire(plan->notify(s));
      nc.encode(mad::data_of(smp));
      ++report.notify_sets;
      flow.submit_checked(smp, 0, checked(s, "failover notify config"), dest_of(n));
    }
    needs_info[si] = old == nullptr || old->groups(oi).size() != groups.size() ||
                             old->max_lid() != plan->max_lid()
                         ? 1
                         : 0;
    lid_tables.push_back(LidTable{s, n, old, oi});
    if (flow.pending() >= kQueued) co_await flow.drained(kQueued / 2);
    if (engine.stopped()) co_return stopped();
  }
  // The LID group tables (2,125 blocks a switch at k=80), block by block
  // across the switches: switch by switch, the queue held one switch at a
  // time and its SMA served the window in turn (26.6 s of fabric time to
  // arm k=80; the other order spreads the window over many SMAs). A
  // switch's SMPs still arrive in the order sent: its groups first.
  for (std::uint32_t b = 0; b < lid_blocks; ++b) {
    for (const LidTable& lt : lid_tables) {
      mad::FailoverLidGroupBlock want, have;
      for (std::uint32_t i = 0; i < mad::kFailoverLidsPerBlock; ++i) {
        const std::uint32_t lid = b * mad::kFailoverLidsPerBlock + i;
        want.groups[i] = lid_group_at(plan.get(), lt.s, lid);
        have.groups[i] = lid_group_at(lt.old, lt.oi, lid);
      }
      if (lt.old != nullptr && want == have) {
        ++report.blocks_unchanged;
        continue;
      }
      mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kFailoverLidGroupTable, b,
                                      sweep.paths.path(lt.n), 0);
      want.encode(mad::data_of(smp));
      ++report.lid_blocks_sent;
      flow.submit_checked(smp, 0, checked(lt.s, "failover LID group block"), dest_of(lt.n));
      if (flow.pending() >= kQueued) co_await flow.drained(kQueued / 2);
      if (engine.stopped()) co_return stopped();
    }
  }
  co_await flow.drained();
  if (engine.stopped()) co_return stopped();

  // 3. Enable, once a switch's tables are in place.
  for (const std::uint32_t si : ours) {
    if (needs_info[si] == 0 || ps.failed[si] != 0) continue;
    const SwitchIndex s{si};
    const NodeId n = t.switch_node(s);
    mad::Smp smp =
        mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kFailoverInfo, 0, sweep.paths.path(n), 0);
    mad::FailoverInfo info;
    info.enabled = true;
    info.group_top = static_cast<std::uint16_t>(plan->groups(s).size() - 1);
    info.lid_top = lid_top;
    info.encode(mad::data_of(smp));
    ++report.info_sets;
    flow.submit_checked(smp, 0, checked(s, "FailoverInfo"), dest_of(n));
    if (flow.pending() >= kQueued) co_await flow.drained(kQueued / 2);
    if (engine.stopped()) co_return stopped();
  }
  co_await flow.drained();
  if (engine.stopped()) co_return stopped();

  for (const std::uint32_t si : ours) {
    const SwitchIndex s{si};
    Known& k = known_[t.node(t.switch_node(s)).guid];
    if (k.cap != Capability::kCapable) continue;
    if (ps.failed[si] != 0) {
      k.plan.reset();  // what it holds is unknown: all of it next time
      continue;
    }
    k.plan = plan;
    k.index = s;
    ++report.armed;
  }
  report.smps = flow.stats();
  report.duration = transport.now() - start;
  co_return report;
}

Result<ArmReport> FailoverArmer::arm_blocking(Transport& transport, const SweepResult& sweep,
                                              std::shared_ptr<const FailoverPlan> plan,
                                              FlowOptions pipeline) {
  return run_blocking<Result<ArmReport>>(
      transport, [&](MadEngine& engine) { return arm(engine, sweep, plan, pipeline); });
}

asio::awaitable<Result<ArmReport>> FailoverArmer::clear_notifications(MadEngine& engine,
                                                                      const SweepResult& sweep,
                                                                      FlowOptions pipeline) {
  ArmReport report;
  const routing::Topology& t = sweep.topology;
  Transport& transport = engine.transport();
  const auto start = transport.now();
  Flow flow(engine, pipeline);
  PassState ps(t, report);
  for (std::uint32_t si = 0; si < t.num_switches(); ++si) {
    const SwitchIndex s{si};
    const NodeId n = t.switch_node(s);
    auto it = known_.find(t.node(n).guid);
    if (it == known_.end() || it->second.cap != Capability::kCapable || !it->second.plan) continue;
    ++report.armed;
    mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kFailoverNotifyConfig, 0,
                                    sweep.paths.path(n), 0);
    mad::FailoverNotifyConfig nc;
    nc.notify = to_wire(it->second.plan->notify(it->second.index));
    nc.clear_state = true;
    nc.encode(mad::data_of(smp));
    ++report.notify_sets;
    auto done = [&ps, s](Result<void> r) {
      if (!r.ok()) ps.fail(s, "failover notify config (clear)", r.error());
    };
    flow.submit_checked(smp, 0, done, dest_of(n));
    if (flow.pending() >= kQueued) co_await flow.drained(kQueued / 2);
    if (engine.stopped()) break;
  }
  co_await flow.drained();
  if (engine.stopped()) {
    co_return engine.error() ? *engine.error() : Error{Errc::kCancelled, "MAD engine stopped"};
  }
  report.smps = flow.stats();
  report.duration = transport.now() - start;
  co_return report;
}

}  // namespace subnetd::discovery

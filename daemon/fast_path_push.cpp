// FastPath::repair_and_push and push: the repaired LFT blocks onto the
// switches (see fast_path.hpp).

#include <fmt/format.h>

#include <algorithm>

#include "daemon/fast_path.hpp"

namespace subnetd::daemon {
namespace {

namespace mad = discovery::mad;

}  // namespace

boost::asio::awaitable<void> PushInFlight::confirmed() {
  co_await flow.drained();
  confirmed_at = std::chrono::steady_clock::now();
  transport_confirmed_at = flow.engine().transport().now();
  std::sort(failed_switches.begin(), failed_switches.end());
  failed_switches.erase(std::unique(failed_switches.begin(), failed_switches.end()),
                        failed_switches.end());
}

Result<routing::RepairReport> FastPath::repair(std::span<const routing::FailedLink> failed) {
  affinity_.check();
  auto repaired = rerouter_->repair(failed);
  suspect_.clear();
  return repaired;
}

boost::asio::awaitable<Result<PushOutcome>> FastPath::repair_and_push(
    discovery::MadEngine& engine, std::span<const routing::FailedLink> failed,
    Clock::time_point start) {
  PushOutcome o;
  auto repaired = repair(failed);
  if (!repaired.ok()) co_return repaired.error();
  const routing::RepairReport& rep = *repaired;
  o.repaired = Clock::now() - start;
  o.compute = rep.t_total;
  o.compute_route = rep.t_route;
  o.compute_check = rep.t_check;
  o.verdict = rep.verdict;
  o.reason = rep.reason;
  o.switch_links = rep.switch_links_failed;
  o.ca_links = rep.ca_links_failed;
  o.changed_entries = rep.changes.size();
  o.blocks = rep.blocks.size();
  o.orphans = rep.orphans;
  o.dead_ends = rep.dead_ends;
  if (rep.verdict != routing::RepairReport::Verdict::kRepaired) co_return o;
  if (rep.blocks.empty()) {
    o.latency = Clock::now() - start;
    co_return o;
  }
  o.in_flight = push(engine, rep.blocks);
  o.switches_programmed = static_cast<std::uint32_t>(o.in_flight->switches);
  co_await o.in_flight->flow.all_sent();
  if (engine.stopped()) {
    co_return engine.error() ? *engine.error()
                             : Error{Errc::kCancelled, "fast path: the MAD engine stopped"};
  }
  // No block sent (no switch that has one is reachable): the push ended
  // when it found that out, not at the flow's unset "all sent" time.
  const Clock::time_point sent = o.in_flight->flow.all_sent_at();
  o.latency = (sent == Clock::time_point{} ? Clock::now() : sent) - start;
  co_return o;
}

std::shared_ptr<PushInFlight> FastPath::push(discovery::MadEngine& engine,
                                             std::span<const routing::DirtyBlock> blocks) {
  SUBNETD_ASSERT_ON(engine.strand());
  affinity_.check();
  discovery::FlowOptions fo;
  // Every block at once, as far as each switch's window allows.
  fo.window = UINT32_MAX;
  fo.per_destination = config_.switch_window;
  fo.timeout = config_.timeout;
  fo.retries = config_.retries;
  fo.urgent = true;  // a sweep's or a programming pass's SMPs wait meanwhile
  auto pending = std::make_shared<PushInFlight>(engine, fo);
  if (blocks.empty()) return pending;
  PushInFlight& state = *pending;

  // One encoded LFT Set per switch being programmed, directed route and
  // all: a tree path (or one hop off one), else the repaired tables' own
  // route to the switch's LID, which avoids every failed link.
  if (++epoch_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    epoch_ = 1;
  }
  const mad::AttrId attr = config_.extended_lids ? mad::AttrId::kExtLinearForwardingTable
                                                 : mad::AttrId::kLinearForwardingTable;
  std::array<std::uint8_t, 64> route{};
  std::uint32_t switches = 0;
  std::uint32_t reachable = 0;
  for (const routing::DirtyBlock& b : blocks) {
    const std::uint32_t s = b.sw.value;
    if (stamp_[s] == epoch_) continue;
    stamp_[s] = epoch_;
    if (tmpl_buf_.size() <= switches) tmpl_buf_.resize(switches + 1);
    path_slot_[s] = switches++;
    std::size_t len = path(b.sw, route);
    if (len == 0) len = table_path(b.sw, route);
    path_len_[s] = static_cast<std::uint8_t>(len);
    if (len != 0) {
      ++reachable;
      const mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, attr, 0,
                                            std::span<const std::uint8_t>(route.data(), len), 0);
      mad::encode_smp(smp, std::span<std::uint8_t, discovery::kMadSize>(tmpl_buf_[path_slot_[s]]));
    }
  }
  // Switches the push can reach; the others' blocks fail at once (a sweep
  // programs them).
  state.switches = reachable;

  auto give_up = [weak = std::weak_ptr<PushInFlight>(pending)](SwitchIndex s) {
    auto st = weak.lock();
    if (!st) return;
    ++st->blocks_failed;
    st->failed_switches.push_back(s);
  };
  discovery::Mad m;
  m.dlid = mad::kPermissiveLid;
  m.slid = mad::kPermissiveLid;
  for (const routing::DirtyBlock& b : blocks) {
    const SwitchIndex s = b.sw;
    if (path_len_[s.value] == 0) {  // no directed route to it
      give_up(s);
      continue;
    }
    m.data = tmpl_buf_[path_slot_[s.value]];
    // An LFT block's data is its 64 port bytes as they stand (LinearForwardingTable).
    mad::patch_smp(m.data, 0, b.block,
                   std::span<const std::uint8_t, mad::kSmpDataSize>(
                       rerouter_->block(s, b.block).data(), mad::kSmpDataSize));
    const discovery::DestKey dest{std::uint64_t{s.value} + 1};
    state.flow.submit_raw(m, dest, [give_up, s](Result<const discovery::Mad*> r) {
      if (!r.ok()) {
        give_up(s);
        return;
      }
      const auto peek = mad::peek_smp((*r)->data);
      if (!peek || peek->status != mad::status::kOk) give_up(s);
    });
  }
  return pending;
}

}  // namespace subnetd::daemon

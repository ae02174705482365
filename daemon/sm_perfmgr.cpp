// SubnetManager: the performance manager's counter sweeps (issue 16). Every
// perfmgr.interval, every connected port's PMA counters are read through
// the MAD engine (one windowed Flow, like the sweeps': the strand awaits,
// traps and SA keep flowing), folded into totals (perfmgr/perf_manager.hpp)
// and published on the CounterBoard; ports whose error counters rose become
// events.
//
// Per node, once per daemon run, ClassPortInfo says whether its PMA has
// 64-bit PortCountersExtended; a node that does not answer it is asked again
// at the next sweep. Then per port PortCounters (and PortCountersExtended);
// a port near saturation is cleared after its reading.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <unordered_set>

#include "daemon/subnet_manager.hpp"
#include "discovery/mad/pma.hpp"
#include "routing/text.hpp"

namespace subnetd::daemon {

namespace asio = boost::asio;
namespace pma = discovery::mad::pma;
using Steady = std::chrono::steady_clock;

namespace {

// Error events per sweep: the ports with the most new errors; the rest are
// counted in the last one.
constexpr std::size_t kMaxCounterEvents = 20;

constexpr std::uint8_t kGet = 0x01;

std::string error_text(const state::CounterSet& d) {
  std::string out;
  auto add = [&out](std::uint64_t v, const char* what) {
    if (v == 0) return;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", v, what);
  };
  add(d.symbol_errors, "symbol errors");
  add(d.link_recovers, "link error recoveries");
  add(d.link_downed, "link downed");
  add(d.rcv_errors, "receive errors");
  add(d.rcv_remote_phys, "remote physical errors");
  add(d.rcv_switch_relay, "switch relay errors");
  add(d.xmit_discards, "transmit discards");
  add(d.xmit_constraint, "transmit constraint errors");
  add(d.rcv_constraint, "receive constraint errors");
  add(d.link_integrity, "local link integrity errors");
  add(d.buffer_overrun, "excessive buffer overruns");
  add(d.vl15_dropped, "VL15 dropped");
  return out;
}

}  // namespace

// The store's history: a row per sweep for every port whose errors rose,
// and the hour's sums for those and the busiest kHourlyBusiest ports.
void SubnetManager::record_counter_history(
    const state::PortCounterSnapshot& snap,
    const std::vector<const state::PortCounterEntry*>& erring) {
  if (store_ == nullptr) return;
  constexpr std::size_t kHourlyBusiest = 1000;
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(snap.at.time_since_epoch()).count();
  const std::int64_t hour = now - now % 3600;
  std::vector<CounterRow> rows;
  std::unordered_set<const state::PortCounterEntry*> hourly;
  for (const state::PortCounterEntry* e : erring) {
    if (e->interval_s == 0) continue;  // a first reading: no interval to record
    rows.push_back(CounterRow{e->node_guid, e->port, 0, now, e->interval_s, e->delta});
    hourly.insert(e);
  }
  std::vector<const state::PortCounterEntry*> busy;
  for (const state::PortCounterEntry& e : snap.ports) {
    if (e.interval_s > 0 && e.delta.xmit_bytes > 0) busy.push_back(&e);
  }
  const std::size_t n = std::min(kHourlyBusiest, busy.size());
  std::partial_sort(
      busy.begin(), busy.begin() + static_cast<std::ptrdiff_t>(n), busy.end(),
      [](const auto* a, const auto* b) { return a->delta.xmit_bytes > b->delta.xmit_bytes; });
  busy.resize(n);
  hourly.insert(busy.begin(), busy.end());
  for (const state::PortCounterEntry* e : hourly) {
    rows.push_back(CounterRow{e->node_guid, e->port, 1, hour, e->interval_s, e->delta});
  }
  const auto secs = [](std::chrono::milliseconds d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d).count();
  };
  store_->record_counters(std::move(rows), now - secs(cfg_.perfmgr.retention),
                          now - secs(cfg_.perfmgr.hourly_retention));
}

void SubnetManager::attach_counters(state::CounterBoard* board) {
  counter_board_ = board;
}

void SubnetManager::schedule_counter_sweep() {
  SUBNETD_ASSERT_ON(strand_);
  if (stopped_ || counter_board_ == nullptr || cfg_.perfmgr.interval.count() == 0) return;
  if (standing_by()) return;  // the master's counters
  if (perf_timer_.pending() || perf_running_ || perf_starting_) return;
  perf_timer_.start(cfg_.perfmgr.interval, [this] {
    perf_starting_ = true;
    asio::co_spawn(strand_, periodic_counter_sweep(), asio::detached);
  });
}

asio::awaitable<void> SubnetManager::periodic_counter_sweep() {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  perf_starting_ = false;
  // Counters of a fabric being brought up mean little; the next period
  // reads them.
  if (current_ && !heavy_running_) co_await counter_sweep();
  if (alive.expired() || stopped_) co_return;
  schedule_counter_sweep();
  check_idle();
}

asio::awaitable<void> SubnetManager::counter_sweep() {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  perf_running_ = true;
  const auto t0 = Steady::now();
  const std::shared_ptr<const BringUpResult> c = current_;  // kept alive across the awaits
  const routing::Topology& t = c->sweep.topology;
  const std::vector<perfmgr::Target> targets = perfmgr::targets_of(t, c->lids.map);
  discovery::FlowOptions opts;
  opts.window = cfg_.sweep.smp_window;
  opts.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
  opts.retries = cfg_.sweep.retries;
  discovery::Flow flow(engine_, opts);
  // Requests are queued a few windows at a time, the strand given back in
  // between: submitting a whole sweep's (140,000 at k=36, 1.5M at k=80) in
  // one strand turn held a trap that came meanwhile for that long.
  const std::size_t queued_max = std::size_t{4} * std::max(1U, opts.window);
  std::string first_error;
  auto note_error = [&first_error, &t](const perfmgr::Target& tg, const std::string& what) {
    if (first_error.empty()) {
      first_error = fmt::format("{} port {}: {}", t.label(tg.node), tg.port, what);
    }
  };

  // 1. What each node's PMA offers (once per node and daemon run).
  for (const perfmgr::Target& tg : targets) {
    if (pma_extended_.count(tg.node_guid.value) != 0) continue;
    pma_extended_.emplace(tg.node_guid.value, std::nullopt);  // asked
    flow.submit_raw(pma::make_request(kGet, pma::Attr::kClassPortInfo, 0, tg.lid, 0),
                    discovery::dest_of(tg.node),
                    [this, guid = tg.node_guid.value](Result<const discovery::Mad*> r) {
                      std::optional<bool> ext;
                      if (r.ok()) {
                        auto h = pma::decode_header((*r)->data);
                        if (h.ok() && h->status == 0) {
                          const std::uint16_t cap =
                              pma::capability_mask(std::span((*r)->data).subspan(pma::kDataOffset));
                          ext =
                              (cap & (pma::kCapExtendedWidth | pma::kCapExtendedWidthNoIetf)) != 0;
                        } else if (h.ok()) {
                          ext = false;  // a PMA without ClassPortInfo: PortCounters only
                        }
                      }
                      if (ext) {
                        pma_extended_[guid] = ext;
                      } else {
                        pma_extended_.erase(guid);  // ask again next time
                      }
                    });
    if (flow.pending() >= queued_max) co_await flow.drained(queued_max / 2);
    if (alive.expired() || stopped_) co_return;
  }
  co_await flow.drained();
  if (alive.expired() || stopped_) co_return;

  // 2. The counters.
  std::vector<perfmgr::Reading> readings(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const perfmgr::Target& tg = targets[i];
    auto read = [&readings, &note_error, &tg, i](Result<const discovery::Mad*> r, bool ext) {
      if (!r.ok()) {
        note_error(tg, r.error().message);
        return;
      }
      auto h = pma::decode_header((*r)->data);
      if (!h.ok() || h->status != 0) {
        note_error(tg, h.ok() ? fmt::format("PMA status {:#06x}", h->status) : h.error().message);
        return;
      }
      const auto data = std::span((*r)->data).subspan(pma::kDataOffset);
      if (ext) {
        readings[i].extended = pma::decode_port_counters_ext(data);
      } else {
        readings[i].counters = pma::decode_port_counters(data);
      }
    };
    flow.submit_raw(pma::make_request(kGet, pma::Attr::kPortCounters, tg.port, tg.lid, 0),
                    discovery::dest_of(tg.node),
                    [read](Result<const discovery::Mad*> r) mutable { read(r, false); });
    auto cap = pma_extended_.find(tg.node_guid.value);
    if (cap != pma_extended_.end() && cap->second.value_or(false)) {
      flow.submit_raw(pma::make_request(kGet, pma::Attr::kPortCountersExtended, tg.port, tg.lid, 0),
                      discovery::dest_of(tg.node),
                      [read](Result<const discovery::Mad*> r) mutable { read(r, true); });
    }
    if (flow.pending() >= queued_max) co_await flow.drained(queued_max / 2);
    if (alive.expired() || stopped_) co_return;
  }
  co_await flow.drained();
  if (alive.expired() || stopped_) co_return;

  // 3. Clears near saturation.
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!readings[i].counters || !perfmgr_.wants_clear(*readings[i].counters)) continue;
    const perfmgr::Target& tg = targets[i];
    flow.submit_raw(pma::make_clear(tg.port, tg.lid, 0), discovery::dest_of(tg.node),
                    [&readings, i](Result<const discovery::Mad*> r) {
                      if (!r.ok()) return;
                      auto h = pma::decode_header((*r)->data);
                      readings[i].cleared = h.ok() && h->status == 0;
                    });
    if (flow.pending() >= queued_max) co_await flow.drained(queued_max / 2);
    if (alive.expired() || stopped_) co_return;
  }
  co_await flow.drained();
  if (alive.expired() || stopped_) co_return;

  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(Steady::now() - t0);
  // The bookkeeping of every port (1.5M readings at k=80) runs on the
  // compute thread; the strand does not touch perfmgr_ meanwhile
  // (perf_running_ keeps other counter sweeps out).
  const auto t_ingest = Steady::now();
  auto ingest = [this, &targets, &readings, took, first = std::move(first_error)]() mutable {
    return perfmgr_.ingest(targets, readings, std::chrono::system_clock::now(), took,
                           std::move(first));
  };
  std::shared_ptr<state::PortCounterSnapshot> ingested = co_await compute_.run(ingest);
  if (alive.expired() || stopped_) co_return;
  ingested->ingest_took =
      std::chrono::duration_cast<std::chrono::microseconds>(Steady::now() - t_ingest);
  std::shared_ptr<const state::PortCounterSnapshot> snap = std::move(ingested);
  counter_board_->publish(snap);
  // Ports whose errors rose: events (the worst first).
  const auto& erring = perfmgr_.erring();
  for (std::size_t i = 0; i < erring.size() && i < kMaxCounterEvents; ++i) {
    const state::PortCounterEntry& e = *erring[i];
    const std::optional<NodeId> n = t.find_by_guid(e.node_guid);
    const std::string who = n ? t.label(*n) : fmt::format("{:#018x}", e.node_guid.value);
    // Errors a port already shows when first read are reported once too.
    const bool first = e.interval_s == 0 && e.delta.errors() == 0;
    const state::CounterSet& seen = first ? e.total : e.delta;
    const std::string when =
        first ? std::string(" (first reading)") : fmt::format(" in {:.0f} s", e.interval_s);
    const std::string more =
        i + 1 == kMaxCounterEvents && erring.size() > kMaxCounterEvents
            ? fmt::format(" ({} more ports with new errors)", erring.size() - kMaxCounterEvents)
            : std::string();
    events_.append(
        state::EventKind::kCounters, e.node_guid, e.port,
        fmt::format("counters: {} port {}: {}{}{}", who, e.port, error_text(seen), when, more),
        fmt::format("{{\"errors\":{},\"symbol_errors\":{},\"link_downed\":{},"
                    "\"rcv_errors\":{},\"xmit_discards\":{},\"interval_s\":{:.1f},"
                    "\"first_reading\":{}}}",
                    seen.errors(), seen.symbol_errors, seen.link_downed, seen.rcv_errors,
                    seen.xmit_discards, e.interval_s, first ? "true" : "false"));
  }
  record_counter_history(*snap, erring);
  health_port_errors(erring, t);
  spdlog::debug("counters: {} ports read, {} failed, {} with new errors in {:.1f} ms",
                snap->ports_read, snap->ports_failed, erring.size(),
                static_cast<double>(took.count()) / 1000.0);
  if (snap->ports_failed != 0) {
    spdlog::info("counters: {} of {} ports unanswered ({})", snap->ports_failed, targets.size(),
                 snap->last_error);
  }
  perf_running_ = false;
}

}  // namespace subnetd::daemon

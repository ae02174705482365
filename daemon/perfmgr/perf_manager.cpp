// The performance manager's bookkeeping; see perf_manager.hpp.

#include "daemon/perfmgr/perf_manager.hpp"

#include <algorithm>

namespace subnetd::daemon::perfmgr {

namespace {

namespace pma = discovery::mad::pma;

// The change of a counter that stops at its maximum: a lower reading
// means it was cleared since.
std::uint64_t step(std::uint64_t now, std::uint64_t before) {
  return now >= before ? now - before : now;
}

state::CounterSet delta_of(const pma::PortCounters& now, const pma::PortCounters& before) {
  state::CounterSet d;
  d.symbol_errors = step(now.symbol_errors, before.symbol_errors);
  d.link_recovers = step(now.link_recovers, before.link_recovers);
  d.link_downed = step(now.link_downed, before.link_downed);
  d.rcv_errors = step(now.rcv_errors, before.rcv_errors);
  d.rcv_remote_phys = step(now.rcv_remote_phys, before.rcv_remote_phys);
  d.rcv_switch_relay = step(now.rcv_switch_relay, before.rcv_switch_relay);
  d.xmit_discards = step(now.xmit_discards, before.xmit_discards);
  d.xmit_constraint = step(now.xmit_constraint, before.xmit_constraint);
  d.rcv_constraint = step(now.rcv_constraint, before.rcv_constraint);
  d.link_integrity = step(now.link_integrity, before.link_integrity);
  d.buffer_overrun = step(now.buffer_overrun, before.buffer_overrun);
  d.vl15_dropped = step(now.vl15_dropped, before.vl15_dropped);
  d.xmit_wait = step(now.xmit_wait, before.xmit_wait);
  d.xmit_bytes = 4 * step(now.xmit_words, before.xmit_words);
  d.rcv_bytes = 4 * step(now.rcv_words, before.rcv_words);
  d.xmit_pkts = step(now.xmit_pkts, before.xmit_pkts);
  d.rcv_pkts = step(now.rcv_pkts, before.rcv_pkts);
  return d;
}

// 64-bit data counters wrap (in centuries); no clear touches them.
void data_from_extended(state::CounterSet& d, const pma::PortCountersExtended& now,
                        const pma::PortCountersExtended& before) {
  d.xmit_bytes = 4 * (now.xmit_words - before.xmit_words);
  d.rcv_bytes = 4 * (now.rcv_words - before.rcv_words);
  d.xmit_pkts = now.xmit_pkts - before.xmit_pkts;
  d.rcv_pkts = now.rcv_pkts - before.rcv_pkts;
}

// Targets and snapshot entries alike are ordered by (node GUID, port).
constexpr auto by_key = [](const auto& a, const auto& b) {
  return std::pair(a.node_guid.value, a.port) < std::pair(b.node_guid.value, b.port);
};

}  // namespace

std::vector<Target> targets_of(const routing::Topology& t, const routing::LidMap& lids) {
  std::vector<Target> out;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const routing::Node& node = t.node(n);
    const bool sw = node.type == routing::NodeType::kSwitch;
    for (PortNum p = 1; p <= node.num_ports; ++p) {
      if (!t.port(n, p).connected()) continue;
      const Lid lid = lids.base_lid(t, n, sw ? PortNum{0} : p);
      if (lid.value == 0) continue;
      out.push_back(Target{n, node.guid, p, lid.value});
    }
  }
  std::sort(out.begin(), out.end(), by_key);
  return out;
}

void PerfManager::realign(const std::vector<Target>& targets) {
  const bool same =
      keys_.size() == targets.size() &&
      std::equal(keys_.begin(), keys_.end(), targets.begin(), [](const Key& k, const Target& t) {
        return k.guid == t.node_guid.value && k.port == t.port;
      });
  if (same) return;
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (lasts_[i].known) gone_[keys_[i]] = lasts_[i];
  }
  keys_.clear();
  lasts_.assign(targets.size(), Last{});
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Key k{targets[i].node_guid.value, targets[i].port};
    keys_.push_back(k);
    if (auto it = gone_.find(k); it != gone_.end()) {
      lasts_[i] = it->second;
      gone_.erase(it);
    }
  }
}

std::shared_ptr<state::PortCounterSnapshot> PerfManager::ingest(
    const std::vector<Target>& targets, const std::vector<Reading>& readings,
    std::chrono::system_clock::time_point now, std::chrono::microseconds took,
    std::string first_error) {
  realign(targets);
  auto snap = std::make_shared<state::PortCounterSnapshot>();
  snap->sweep = ++sweeps_;
  snap->at = now;
  snap->took = took;
  snap->last_error = std::move(first_error);
  snap->ports.reserve(targets.size());
  for (std::size_t i = 0; i < targets.size() && i < readings.size(); ++i) {
    const Target& tg = targets[i];
    const Reading& r = readings[i];
    Last& l = lasts_[i];
    if (!r.counters) {
      ++snap->ports_failed;
      // Keep what is known of it; no new delta.
      if (l.known) {
        state::PortCounterEntry& e = snap->ports.emplace_back();
        e.node_guid = tg.node_guid;
        e.port = tg.port;
        e.total = l.total;
        e.read_at = l.read_at;
        e.extended = l.extended.has_value();
        e.clears = l.clears;
      }
      continue;
    }
    ++snap->ports_read;
    state::PortCounterEntry& e = snap->ports.emplace_back();
    e.node_guid = tg.node_guid;
    e.port = tg.port;
    e.read_at = now;
    e.extended = r.extended.has_value();
    if (!l.known) {
      // First reading: what the port shows is the total so far.
      e.total = delta_of(*r.counters, pma::PortCounters{});
      if (r.extended) data_from_extended(e.total, *r.extended, pma::PortCountersExtended{});
    } else {
      e.delta = delta_of(*r.counters, l.counters);
      if (r.extended && l.extended) data_from_extended(e.delta, *r.extended, *l.extended);
      e.interval_s = std::chrono::duration<double>(now - l.read_at).count();
      e.total = l.total;
      e.total += e.delta;
      e.clears = l.clears;
    }
    if (r.cleared) ++e.clears;
    l.counters = r.cleared ? pma::PortCounters{} : *r.counters;
    l.extended = r.extended;
    l.total = e.total;
    l.read_at = e.read_at;
    l.clears = e.clears;
    l.known = true;
  }
  // targets_of() gives them in key order; a caller's own list may not.
  if (!std::is_sorted(snap->ports.begin(), snap->ports.end(), by_key)) {
    std::sort(snap->ports.begin(), snap->ports.end(), by_key);
  }
  // New errors: a rise since the last reading, or errors a port shows the
  // first time it is read (the operator hears of them once either way).
  erring_.clear();
  for (const state::PortCounterEntry& e : snap->ports) {
    if (new_errors(e) != 0) erring_.push_back(&e);
  }
  std::stable_sort(erring_.begin(), erring_.end(),
                   [](const auto* a, const auto* b) { return new_errors(*a) > new_errors(*b); });
  current_ = snap;
  return snap;
}

}  // namespace subnetd::daemon::perfmgr

// Rerouter::check_changes(): proves a repair legal from its changes alone
// (see rerouter.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "routing/rerouter.hpp"
#include "routing/rerouter_internal.hpp"

namespace subnetd::routing {
namespace {

using namespace rerouter_internal;

}  // namespace

Result<void> Rerouter::check_changes() const {
  Impl& m = *impl_;  // check_mark is scratch
  auto where = [this](std::uint32_t s) { return topo_.switch_label(SwitchIndex{s}); };
  auto entry_of = [this](std::uint32_t s, std::uint32_t d) { return row(SwitchIndex{s})[d]; };
  // Every failed port is gone from its switch's table (cut-off switches
  // aside: nothing reaches them).
  for (const FailedLink& f : m.new_failed) {
    const std::uint32_t s = f.sw.value;
    if ((m.slot(s, f.port).flags & kSwitchLink) && m.live_links[s] == 0) continue;
    const std::uint8_t* r = row(f.sw);
    const void* hit = std::memchr(r, f.port, stride_);
    if (hit != nullptr) {
      const auto d = static_cast<std::uint32_t>(static_cast<const std::uint8_t*>(hit) - r);
      return Error{Errc::kIncomplete, fmt::format("switch {} still sends LID {} to failed port {}",
                                                  where(s), d, f.port)};
    }
  }
  // No entry of a switch with an up*/down* route leads into a switch that
  // lost its own in this repair (unchanged entries included: the repair
  // moved them off). The repair listed those entries (for_entries_into_lost,
  // the same enumeration): read what each holds now. Without that list
  // (apply_for_test), enumerate them again.
  auto into_lost = [&](std::uint32_t y, std::uint32_t d) -> Result<void> {
    if (m.explicit_orphan(y, d)) return {};  // an orphan may lead into an orphan
    const std::uint8_t e = entry_of(y, d);
    const std::uint32_t t = m.lid0[d].sw;
    if (e == kDropPort || !m.has_port(y, e) || !m.slot(y, e).live_switch()) return {};
    if (m.slot(y, e).peer == t || m.legal_bit_by_dest(m.slot(y, e).peer, t)) return {};
    return Error{Errc::kCdgCycle,
                 fmt::format("LID {}: switch {} leads into a switch that has no up*/down* "
                             "route to it left",
                             d, where(y))};
  };
  if (m.lost_scanned) {
    for (std::uint32_t r : m.lost_recs) SUBNETD_TRY(into_lost(m.recs[r].sw, m.recs[r].lid));
  } else {
    Result<void> bad;
    for_entries_into_lost(m, table_.get(), stride_, [&](std::uint32_t y, std::uint32_t d) {
      bad = into_lost(y, d);
      return bad.ok();
    });
    SUBNETD_TRY(bad);
  }
  if (++m.check_epoch == 0) {
    std::fill(m.check_mark.begin(), m.check_mark.end(), 0);
    m.check_epoch = 1;
  }
  for (const LftChange& c : m.changes) m.check_mark[c.sw.value] = m.check_epoch;
  for (std::size_t ci = 0; ci < m.changes.size(); ++ci) {
    if (ci + kPrefetchAhead < m.changes.size()) {
      const LftChange& ahead = m.changes[ci + kPrefetchAhead];
      __builtin_prefetch(&m.ports[m.port_base[ahead.sw.value] + ahead.new_port]);
    }
    const LftChange& c = m.changes[ci];
    const std::uint32_t s = c.sw.value, d = c.lid.value;
    const std::uint32_t t = m.lid[d].sw;
    if (t == kNoSwitch.value || c.new_port == kDropPort) continue;  // nothing left to route
    if (s == t) {
      if (c.new_port != m.lid[d].port) {
        return Error{
            Errc::kIncomplete,
            fmt::format("switch {} delivers LID {} on port {}, its owner hangs off port {}",
                        where(s), d, c.new_port, m.lid[d].port)};
      }
      continue;
    }
    if (!m.has_port(s, c.new_port) || !m.slot(s, c.new_port).live_switch()) {
      return Error{Errc::kIncomplete,
                   fmt::format("switch {} sends LID {} to port {}, which is no live switch link",
                               where(s), d, c.new_port)};
    }
    const PortSlot& sl = m.slot(s, c.new_port);
    const std::uint32_t nb = sl.peer;
    if (m.is_orphan(s, d)) {
      if (m.has_endpoints[s] != 0 && m.lid0[d].data != 0) {
        return Error{Errc::kCdgCycle,
                     fmt::format("switch {} carries CAs, and its orphan route to LID {} may turn "
                                 "down->up",
                                 where(s), d)};
      }
      // No legal route may enter an orphan. At an implicit orphan (no
      // up*/down* route to the LID's switch) that is proven already: a
      // changed entry into it is refused on its own (below), and an
      // unchanged one either was there before (impossible: s had no route
      // then either) or is the into-lost case above. An explicit orphan
      // has a route in principle: read who enters it.
      for (std::uint32_t si = m.port_base[s] + 1;
           !m.implicit_orphan(s, d) && si < m.port_base[s + 1]; ++si) {
        const PortSlot& in = m.ports[si];
        if (!in.live_switch() || entry_of(in.peer, d) != in.peer_port) continue;
        if (!m.is_orphan(in.peer, d)) {
          return Error{Errc::kCdgCycle,
                       fmt::format("switch {} routes LID {} into orphan switch {}, whose route "
                                   "may turn down->up",
                                   where(in.peer), d, where(s))};
        }
      }
      std::uint32_t x = nb;
      for (std::uint32_t steps = 0; m.is_orphan(x, d); ++steps) {
        const std::uint8_t e = entry_of(x, d);
        if (steps == kMaxOrphanWalk || !m.has_port(x, e) || !m.slot(x, e).live_switch()) {
          return Error{Errc::kForwardingLoop,
                       fmt::format("orphan route of switch {} to LID {} does not reach a legal "
                                   "route (stuck at {})",
                                   where(s), d, where(x))};
        }
        x = m.slot(x, e).peer;
      }
      continue;
    }
    if (sl.down()) {
      if (nb == t) continue;
      const std::uint8_t e = entry_of(nb, d);
      if (!m.has_port(nb, e) || !m.slot(nb, e).live_switch() || !m.slot(nb, e).down() ||
          m.is_orphan(nb, d)) {
        return Error{Errc::kCdgCycle,
                     fmt::format("LID {}: switch {} sends down to {}, whose entry (port {}) does "
                                 "not continue down: a down->up turn",
                                 d, where(s), where(nb), e)};
      }
      continue;
    }
    // Up-link: the neighbour must route on, not straight back, and not as an
    // orphan. A neighbour with no change and no orphan holds its entry from
    // before, which was legal, names no failed port (checked above) and does
    // not lead down into s unless s went down before (then the scan below
    // finds it): no need to read it.
    if (nb != t && m.is_orphan(nb, d)) {
      return Error{Errc::kCdgCycle, fmt::format("LID {}: switch {} sends up into orphan switch {}",
                                                d, where(s), where(nb))};
    }
    const bool read = nb != t && (m.check_mark[nb] == m.check_epoch || m.orphan_count[nb] != 0);
    const std::uint8_t e = read ? entry_of(nb, d) : std::uint8_t{0};
    if (read && (e == kDropPort || e == sl.peer_port || m.is_orphan(nb, d) || !m.has_port(nb, e) ||
                 !m.slot(nb, e).live_switch())) {
      return Error{Errc::kForwardingLoop,
                   fmt::format("LID {}: switch {} sends up to {}, whose entry (port {}) leads "
                               "nowhere or straight back",
                               d, where(s), where(nb), e)};
    }
    // s used to go down: neighbours above may still send d down into it.
    const bool old_down =
        c.old_port != kDropPort && m.has_port(s, c.old_port) && m.slot(s, c.old_port).down();
    if (!old_down) continue;
    for (std::uint32_t i = m.up_first[s]; i < m.up_first[s + 1]; ++i) {
      const PortSlot& in = m.slot(s, m.up_list[i]);
      if ((in.flags & kLive) == 0) continue;
      if (entry_of(in.peer, d) == in.peer_port && !m.is_orphan(in.peer, d)) {
        return Error{Errc::kCdgCycle,
                     fmt::format("LID {}: {} sends down into {}, which now turns up (port {}): a "
                                 "down->up turn",
                                 d, where(in.peer), where(s), c.new_port)};
      }
    }
  }
  return {};
}

}  // namespace subnetd::routing

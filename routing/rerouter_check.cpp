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
  if (++m.check_epoch == 0) {
    std::fill(m.check_mark.begin(), m.check_mark.end(), 0);
    m.check_epoch = 1;
  }
  for (const LftChange& c : m.changes) m.check_mark[c.sw.value] = m.check_epoch;
  for (const LftChange& c : m.changes) {
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
      for (std::uint32_t si = m.port_base[s] + 1; si < m.port_base[s + 1]; ++si) {
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

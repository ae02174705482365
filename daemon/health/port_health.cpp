#include "daemon/health/port_health.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace subnetd::daemon::health {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {

// What the SM did with a verdict, on the link's track.
void mark(PortHealth::Track& t, const PortHealth::Verdict& v, state::HealthStatus status,
          PortHealth::Time since, PortHealth::Time until) {
  t.node = v.node;
  t.port = v.port;
  t.pending = false;
  t.status = status;
  t.cause = v.cause;
  t.reason = v.reason;
  t.since = since;
  t.until = until;
}

}  // namespace

LinkEnds LinkEnds::of(Guid x, PortNum px, Guid y, PortNum py) {
  if (std::pair(y, py) < std::pair(x, px)) return LinkEnds{y, py, x, px};
  return LinkEnds{x, px, y, py};
}

std::string human_duration(milliseconds d) {
  const auto ms = d.count();
  if (ms < 1000) return fmt::format("{} ms", ms);
  if (ms < 120'000) return fmt::format("{:.0f} s", static_cast<double>(ms) / 1e3);
  if (ms < 7'200'000) return fmt::format("{:.0f} min", static_cast<double>(ms) / 6e4);
  return fmt::format("{:.1f} h", static_cast<double>(ms) / 3.6e6);
}

void PortHealth::trim(Track& t, Time now) const {
  while (!t.downs.empty() && now - t.downs.front() > policy_.flap_window) t.downs.pop_front();
}

std::optional<PortHealth::Verdict> PortHealth::flag(const LinkEnds& l, Track& t,
                                                    state::HealthCause cause, std::string reason,
                                                    Time now) {
  if (t.pending || t.status == state::HealthStatus::kIsolated) return std::nullopt;
  if (t.status == state::HealthStatus::kRefused) {
    // Still over the limit: the flag stays up, with the newer evidence,
    // and the SM is not asked again (no event per flap).
    t.reason = std::move(reason);
    t.cause = cause;
    t.until = now + policy_.hold_down;
    return std::nullopt;
  }
  t.pending = true;
  Verdict v;
  v.link = l;
  v.cause = cause;
  v.reason = std::move(reason);
  return v;
}

std::optional<PortHealth::Verdict> PortHealth::link_down(const LinkEnds& l, Time now) {
  Track& t = tracks_[l];
  if (t.down || t.operator_disabled || t.status == state::HealthStatus::kIsolated) {
    t.down = true;
    return std::nullopt;
  }
  t.down = true;
  t.downs.push_back(now);
  trim(t, now);
  // The window never holds more than the limit needs.
  while (t.downs.size() > std::max<std::uint32_t>(policy_.flap_count, 1)) t.downs.pop_front();
  if (!policy_.enabled || policy_.flap_count == 0 || t.downs.size() < policy_.flap_count) {
    return std::nullopt;
  }
  const auto span = duration_cast<milliseconds>(t.downs.back() - t.downs.front());
  return flag(
      l, t, state::HealthCause::kFlapping,
      fmt::format("{} link downs in {} (limit {} in {})", t.downs.size(), human_duration(span),
                  policy_.flap_count, human_duration(policy_.flap_window)),
      now);
}

void PortHealth::link_up(const LinkEnds& l) {
  auto it = tracks_.find(l);
  if (it != tracks_.end()) it->second.down = false;
}

std::optional<PortHealth::Verdict> PortHealth::port_errors(const LinkEnds& l, std::uint64_t errors,
                                                           double seconds, Time now) {
  if (seconds <= 0) return std::nullopt;
  const double per_minute = static_cast<double>(errors) * 60.0 / seconds;
  auto it = tracks_.find(l);
  if (it != tracks_.end()) it->second.errors_per_minute = per_minute;
  if (!policy_.enabled || policy_.error_rate == 0 ||
      per_minute <= static_cast<double>(policy_.error_rate)) {
    return std::nullopt;
  }
  Track& t = it != tracks_.end() ? it->second : tracks_[l];
  t.errors_per_minute = per_minute;
  if (t.operator_disabled) return std::nullopt;
  return flag(l, t, state::HealthCause::kErrors,
              fmt::format("{} errors in {} ({:.0f} per minute, limit {})", errors,
                          human_duration(milliseconds{static_cast<std::int64_t>(seconds * 1e3)}),
                          per_minute, policy_.error_rate),
              now);
}

void PortHealth::isolated(const Verdict& v, Time now) {
  Track& t = tracks_[v.link];
  mark(t, v, state::HealthStatus::kIsolated, now, now + policy_.hold_down);
  ++t.isolations;
}

void PortHealth::refused(const Verdict& v, Time now, std::string note) {
  Track& t = tracks_[v.link];
  mark(t, v, state::HealthStatus::kRefused, now, now + policy_.hold_down);
  t.note = std::move(note);
}

void PortHealth::postpone(const LinkEnds& l, Time until) {
  auto it = tracks_.find(l);
  if (it != tracks_.end()) it->second.until = until;
}

void PortHealth::failed(const LinkEnds& l) {
  auto it = tracks_.find(l);
  if (it != tracks_.end()) it->second.pending = false;
}

void PortHealth::restored(const LinkEnds& l) {
  auto it = tracks_.find(l);
  if (it == tracks_.end()) return;
  Track& t = it->second;
  const std::uint32_t isolations = t.isolations;
  const bool down = t.down;
  t = Track{};
  t.isolations = isolations;
  t.down = down;  // it comes up by itself; that up is not a flap either
}

void PortHealth::operator_disabled(const LinkEnds& l) {
  Track& t = tracks_[l];
  t.operator_disabled = true;
  t.pending = false;
  t.status.reset();
  t.downs.clear();
}

void PortHealth::remember_isolated(const Verdict& v, Time since, Time until) {
  Track& t = tracks_[v.link];
  mark(t, v, state::HealthStatus::kIsolated, since, until);
  t.down = true;
  ++t.isolations;
}

bool PortHealth::is_isolated(const LinkEnds& l) const {
  auto it = tracks_.find(l);
  return it != tracks_.end() && it->second.status == state::HealthStatus::kIsolated;
}

std::optional<LinkEnds> PortHealth::link_of(Guid node, PortNum port) const {
  for (const auto& [l, t] : tracks_) {
    if ((l.a == node && l.pa == port) || (l.b == node && l.pb == port)) return l;
  }
  return std::nullopt;
}

std::vector<LinkEnds> PortHealth::due(Time now) const {
  std::vector<LinkEnds> out;
  for (const auto& [l, t] : tracks_) {
    if (t.status == state::HealthStatus::kIsolated && t.until <= now) out.push_back(l);
  }
  return out;
}

std::optional<PortHealth::Time> PortHealth::next_deadline() const {
  std::optional<Time> next;
  for (const auto& [l, t] : tracks_) {
    if (!t.status) continue;
    if (!next || t.until < *next) next = t.until;
  }
  return next;
}

void PortHealth::expire(Time now) {
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    Track& t = it->second;
    trim(t, now);
    if (t.status == state::HealthStatus::kRefused && t.until <= now) t.status.reset();
    const bool keep = t.status || t.pending || t.operator_disabled || !t.downs.empty() ||
                      t.isolations != 0 || t.down;
    it = keep ? std::next(it) : tracks_.erase(it);
  }
}

std::size_t endpoints_cut_off(const routing::Topology& t, NodeId from, NodeId a, PortNum pa) {
  const routing::Port& link = t.port(a, pa);
  const NodeId b = link.remote_node;
  const PortNum pb = link.remote_port;
  auto is_link = [&](NodeId n, PortNum p) {
    return (n == a && p == pa) || (link.connected() && n == b && p == pb);
  };
  std::vector<std::uint8_t> seen(t.num_nodes(), 0);
  std::vector<NodeId> queue{from};
  seen[from.value] = 1;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const NodeId n = queue[i];
    if (n != from && t.node(n).type != routing::NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      const auto port = static_cast<PortNum>(p);
      const routing::Port& pt = t.port(n, port);
      if (!pt.connected() || is_link(n, port) || seen[pt.remote_node.value] != 0) continue;
      seen[pt.remote_node.value] = 1;
      queue.push_back(pt.remote_node);
    }
  }
  std::size_t cut = 0;
  for (std::size_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{static_cast<std::uint32_t>(i)};
    if (t.node(n).type == routing::NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      const auto port = static_cast<PortNum>(p);
      if (!t.port(n, port).connected()) continue;
      if (seen[i] == 0 || is_link(n, port)) ++cut;
    }
  }
  return cut;
}

}  // namespace subnetd::daemon::health

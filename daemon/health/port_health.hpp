#pragma once
// PortHealth: the fault-handling policy's bookkeeping (issue 16, item 4).
//
// The SM tells it what happens to links: a link went down (fast path or
// heavy sweep), came up, or showed an error rate (performance manager).
// It answers with a verdict when a link crosses a limit:
//  - flapping: `flap_count` downs within `flap_window` (a down counts only
//    after the link was seen up again, so the fast path and the next sweep
//    reporting the same failure count once);
//  - errors: a port of the link with more than `error_rate` errors a minute
//    over one counter interval.
// The SM then isolates the link (disables its port by SMP; the fast path
// routes around it) or refuses to (it would cut endpoints off) and reports
// which. An isolated link comes back when its hold-down ends (due()) or an
// operator enables it; its history then starts again.
//
// Pure and deterministic (time is passed in); tested alone. Threading: the
// owner's (the SM strand). Memory: one entry per link with a down or a
// flag in its window; expire() drops the rest.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/topology.hpp"
#include "state/port_health.hpp"

namespace subnetd::daemon::health {

struct HealthPolicy {
  bool enabled = true;
  // Flapping: this many link downs within the window isolate the link.
  std::uint32_t flap_count = 5;
  std::chrono::milliseconds flap_window{std::chrono::minutes{10}};
  // Errors (every PortCounters error counter together) per minute on one
  // port of the link, over one counter interval; 0 = not a cause.
  std::uint64_t error_rate = 0;
  // How long an isolated link stays out of service.
  std::chrono::milliseconds hold_down{std::chrono::minutes{15}};
  // Isolate even links whose removal cuts endpoints off from the SM.
  bool isolate_disconnecting = false;
  bool operator==(const HealthPolicy&) const = default;
};

// A link by its ends, `a` the smaller (GUID, port).
struct LinkEnds {
  Guid a;
  PortNum pa = 0;
  Guid b;
  PortNum pb = 0;
  static LinkEnds of(Guid x, PortNum px, Guid y, PortNum py);
  auto operator<=>(const LinkEnds&) const = default;
};

class PortHealth {
 public:
  using Time = std::chrono::steady_clock::time_point;

  // What the policy asks the SM to do with a link.
  struct Verdict {
    LinkEnds link;
    state::HealthCause cause = state::HealthCause::kFlapping;
    std::string reason;
    // The end the SM disables (it fills these in before isolated()).
    Guid node;
    PortNum port = 0;
  };

  // What it holds on one link.
  struct Track {
    std::deque<Time> downs;  // within the flap window, oldest first
    bool down = false;       // last seen down
    bool operator_disabled = false;
    bool pending = false;  // a verdict the SM has not answered yet
    std::optional<state::HealthStatus> status;
    state::HealthCause cause = state::HealthCause::kFlapping;
    std::string reason;
    std::string note;  // refused: why it was not isolated
    Time since{};
    Time until{};  // isolated: the hold-down's end; refused: when the flag lapses
    double errors_per_minute = 0;
    std::uint32_t isolations = 0;
    Guid node;  // isolated: the end disabled
    PortNum port = 0;
  };

  explicit PortHealth(HealthPolicy policy = {}) : policy_(policy) {}
  void set_policy(const HealthPolicy& policy) { policy_ = policy; }
  const HealthPolicy& policy() const { return policy_; }

  // Inputs.
  std::optional<Verdict> link_down(const LinkEnds& l, Time now);
  void link_up(const LinkEnds& l);
  // One port of `l` had `errors` errors over `seconds`.
  std::optional<Verdict> port_errors(const LinkEnds& l, std::uint64_t errors, double seconds,
                                     Time now);

  // What the SM did with a verdict.
  void isolated(const Verdict& v, Time now);
  // `note` says why (shown after the evidence while the flag stays up).
  void refused(const Verdict& v, Time now, std::string note);
  void failed(const LinkEnds& l);  // the SMP failed: the next crossing tries again
  // Moves an isolation's hold-down end (a restore that failed, or runs).
  void postpone(const LinkEnds& l, Time until);
  // Back in service (hold-down over, or an operator): history starts again.
  void restored(const LinkEnds& l);
  // An operator disabled the link: its downs are not flaps until it is
  // enabled again (restored).
  void operator_disabled(const LinkEnds& l);
  // An isolation the store remembers from an earlier run.
  void remember_isolated(const Verdict& v, Time since, Time until);

  bool is_isolated(const LinkEnds& l) const;
  // The link `port` of `node` is an end of, among those it remembers.
  std::optional<LinkEnds> link_of(Guid node, PortNum port) const;
  // Isolated links whose hold-down is over at `now`.
  std::vector<LinkEnds> due(Time now) const;
  // The earliest hold-down end or flag lapse (nullopt: none).
  std::optional<Time> next_deadline() const;
  // Drops lapsed refusals, downs older than the window and links with
  // nothing left to remember.
  void expire(Time now);

  const std::map<LinkEnds, Track>& tracks() const { return tracks_; }

 private:
  void trim(Track& t, Time now) const;
  std::optional<Verdict> flag(const LinkEnds& l, Track& t, state::HealthCause cause,
                              std::string reason, Time now);

  HealthPolicy policy_;
  std::map<LinkEnds, Track> tracks_;
};

// How many endpoint (CA and router) ports lose every path to node `from`
// when the link at port `pa` of `a` goes: the endpoint end of that link
// itself, and every endpoint port beyond it. Paths run through switches
// only (and out of `from`). O(nodes + ports).
std::size_t endpoints_cut_off(const routing::Topology& t, NodeId from, NodeId a, PortNum pa);

// "42 s", "10 min", "2 h": a duration as an operator reads it.
std::string human_duration(std::chrono::milliseconds d);

}  // namespace subnetd::daemon::health

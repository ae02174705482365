// SubnetManager: the fault-handling policy (issue 16, item 4; see
// daemon/health/port_health.hpp for the rules).
//
// Link downs (fast path, heavy sweeps) and error rates (counter sweeps)
// go to PortHealth; a verdict starts isolate(): unless the link's removal
// would cut endpoints off from the SM (and health.isolate_disconnecting is
// off), the end nearer the SM is disabled by SMP (PortPhysicalState
// Disabled, as ibportstate does) and the fast path routes around it (the
// switches' trap 128, and one the SM queues itself in case it is lost).
// The hold-down timer enables the port again. Every action is audited in
// the store, streamed as a `health` event and published on the HealthBoard.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "daemon/sm_text.hpp"
#include "daemon/subnet_manager.hpp"

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;
namespace mad = discovery::mad;
using Steady = std::chrono::steady_clock;
using health::LinkEnds;
using health::PortHealth;

constexpr std::uint8_t kPhysPolling = 2;
constexpr std::uint8_t kPhysDisabled = 3;
// A port that did not take its re-enable is tried again this much later.
constexpr std::chrono::minutes kRetryRestore{1};

std::string label_of(const routing::Topology& t, Guid g) {
  auto n = t.find_by_guid(g);
  return n ? t.label(*n) : guid_str(g);
}

std::string link_text(const routing::Topology& t, const LinkEnds& l) {
  return fmt::format("{}[{}] - {}[{}]", label_of(t, l.a), l.pa, label_of(t, l.b), l.pb);
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    out += ch;
  }
  return out;
}

}  // namespace

void SubnetManager::attach_health(state::HealthBoard* board, std::vector<HealthAction> isolated) {
  health_board_ = board;
  health_.set_policy(cfg_.health);
  const auto now = clock_.now();
  const state::WallTime wall_now = wall_clock_now();
  for (const HealthAction& a : isolated) {
    PortHealth::Verdict v;
    v.link = LinkEnds::of(a.node_guid, a.port, a.peer_guid, a.peer_port);
    v.cause = a.cause == "errors" ? state::HealthCause::kErrors : state::HealthCause::kFlapping;
    v.reason = a.reason;
    v.node = a.node_guid;
    v.port = a.port;
    const state::WallTime until = a.until.value_or(wall_now);
    health_.remember_isolated(v, now - (wall_now - a.at), now + (until - wall_now));
  }
}

state::WallTime SubnetManager::wall_clock_now() const {
  return std::chrono::time_point_cast<state::WallTime::duration>(std::chrono::system_clock::now());
}

state::WallTime SubnetManager::wall_of(Clock::time_point t) const {
  return wall_clock_now() + std::chrono::duration_cast<state::WallTime::duration>(t - clock_.now());
}

void SubnetManager::health_link_down(Guid a, PortNum pa, Guid b, PortNum pb) {
  SUBNETD_ASSERT_ON(strand_);
  if (health_board_ == nullptr || stopped_) return;
  auto v = health_.link_down(LinkEnds::of(a, pa, b, pb), clock_.now());
  if (v) spawn_health(isolate(std::move(*v)));
}

void SubnetManager::health_link_up(Guid a, PortNum pa, Guid b, PortNum pb) {
  SUBNETD_ASSERT_ON(strand_);
  if (health_board_ == nullptr) return;
  health_.link_up(LinkEnds::of(a, pa, b, pb));
}

void SubnetManager::health_port_errors(const std::vector<const state::PortCounterEntry*>& erring,
                                       const routing::Topology& t) {
  SUBNETD_ASSERT_ON(strand_);
  if (health_board_ == nullptr || stopped_) return;
  for (const state::PortCounterEntry* e : erring) {
    if (e->interval_s <= 0) continue;  // a first reading has no rate
    auto n = t.find_by_guid(e->node_guid);
    if (!n || e->port == 0 || e->port > t.node(*n).num_ports) continue;
    const routing::Port& p = t.port(*n, e->port);
    if (!p.connected()) continue;
    const LinkEnds l =
        LinkEnds::of(e->node_guid, e->port, t.node(p.remote_node).guid, p.remote_port);
    auto v = health_.port_errors(l, e->delta.errors(), e->interval_s, clock_.now());
    if (v) spawn_health(isolate(std::move(*v)));
  }
}

void SubnetManager::health_operator(Guid node_guid, PortNum port, bool enabled,
                                    const std::string& who) {
  SUBNETD_ASSERT_ON(strand_);
  if (health_board_ == nullptr || !current_) return;
  const routing::Topology& t = current_->sweep.topology;
  std::optional<LinkEnds> l = health_.link_of(node_guid, port);
  if (!l) {
    auto n = t.find_by_guid(node_guid);
    if (!n || port == 0 || port > t.node(*n).num_ports || !t.port(*n, port).connected()) return;
    const routing::Port& p = t.port(*n, port);
    l = LinkEnds::of(node_guid, port, t.node(p.remote_node).guid, p.remote_port);
  }
  if (!enabled) {
    health_.operator_disabled(*l);
  } else if (health_.is_isolated(*l)) {
    health_.restored(*l);
    ++health_restored_total_;
    audit_health("restore", *l, node_guid, port, "", "returned to service by the operator", who,
                 std::nullopt);
  } else {
    health_.restored(*l);  // an operator's enable ends an operator's disable
  }
  publish_health();
}

void SubnetManager::spawn_health(asio::awaitable<void> task) {
  SUBNETD_ASSERT_ON(strand_);
  // Counted from now, not from when the coroutine starts: idle() must not
  // see a moment between the two.
  ++health_tasks_;
  auto run = [this, alive = std::weak_ptr<int>(life_),
              task = std::move(task)]() mutable -> asio::awaitable<void> {
    co_await std::move(task);
    if (alive.expired()) co_return;
    --health_tasks_;
    check_idle();
  };
  asio::co_spawn(strand_, std::move(run), asio::detached);
}

asio::awaitable<Result<void>> SubnetManager::send_port_phys(std::shared_ptr<const BringUpResult> c,
                                                            NodeId node, PortNum port,
                                                            bool enabled) {
  SUBNETD_ASSERT_ON(strand_);
  const routing::Topology& t = c->sweep.topology;
  // Disabling via PortPhysicalState (as ibportstate does); keep the LID
  // fields of an endpoint port as they are.
  mad::PortInfo pi;
  pi.local_port_num = port;
  pi.port_phys_state = enabled ? kPhysPolling : kPhysDisabled;
  if (t.node(node).type != routing::NodeType::kSwitch) {
    pi.lid = static_cast<std::uint16_t>(
        std::min<std::uint32_t>(c->lids.map.base_lid(t, node, port).value, 0xFFFF));
    pi.master_sm_lid = static_cast<std::uint16_t>(std::min<std::uint32_t>(
        c->lids.map.base_lid(t, c->sweep.sm_node, c->sweep.sm_port).value, 0xFFFF));
    pi.lmc = c->lids.map.lmc;
  }
  mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kPortInfo, port,
                                  c->sweep.path_to_port(node, port), 0);
  pi.encode(mad::data_of(smp));
  discovery::FlowOptions fo;
  fo.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
  fo.retries = cfg_.sweep.retries;
  // The flow and the outcome live in the coroutine frame: nothing of the
  // SM is touched after the answer unless the caller finds it alive.
  discovery::Flow flow(engine_, fo);
  Result<void> outcome;
  bool answered = false;
  flow.submit(smp, 0, [&outcome, &answered](Result<mad::Smp> r) {
    answered = true;
    if (!r.ok()) outcome = r.error();
  });
  co_await flow.drained();
  if (!answered) outcome = Error{Errc::kCancelled, "subnetd is stopping"};
  co_return outcome;
}

asio::awaitable<void> SubnetManager::isolate(PortHealth::Verdict v) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  if (stopped_ || !current_) {
    health_.failed(v.link);
    co_return;
  }
  const std::shared_ptr<const BringUpResult> c = current_;
  const routing::Topology& bt = c->sweep.topology;
  const routing::Topology& live = topology_now_ ? *topology_now_ : bt;
  const std::string what = link_text(bt, v.link);

  // The end to disable: a switch (a CA may be out of reach once its link
  // is down), the one nearer the SM, so the SMP and its answer never cross
  // the link itself.
  auto switch_of = [&bt](Guid g) -> std::optional<NodeId> {
    auto n = bt.find_by_guid(g);
    if (n && bt.node(*n).type == routing::NodeType::kSwitch) return n;
    return std::nullopt;
  };
  const std::optional<NodeId> na = switch_of(v.link.a);
  const std::optional<NodeId> nb = switch_of(v.link.b);
  std::optional<std::pair<NodeId, PortNum>> end;
  if (na && nb) {
    const bool a_nearer = c->sweep.path_to_port(*na, v.link.pa).size() <=
                          c->sweep.path_to_port(*nb, v.link.pb).size();
    end = a_nearer ? std::pair(*na, v.link.pa) : std::pair(*nb, v.link.pb);
  } else if (na) {
    end = std::pair(*na, v.link.pa);
  } else if (nb) {
    end = std::pair(*nb, v.link.pb);
  }
  const Guid sm_guid = bt.node(c->sweep.sm_node).guid;
  const bool sm_link = (v.link.a == sm_guid && v.link.pa == c->sweep.sm_port) ||
                       (v.link.b == sm_guid && v.link.pb == c->sweep.sm_port);
  if (!end || sm_link) {
    health_.failed(v.link);
    const std::string msg =
        fmt::format("health: link {} is {} ({}), but {}", what, to_string(v.cause), v.reason,
                    sm_link ? "it is the SM's own link: left in service"
                            : "neither end is a switch the SM reaches: left in service");
    spdlog::warn("{}", msg);
    events_.append(state::EventKind::kHealth, v.link.a, v.link.pa, msg);
    co_return;
  }
  v.node = bt.node(end->first).guid;
  v.port = end->second;

  // Whom its removal cuts off, on the topology the switches forward on,
  // without the links already isolated or being isolated on another
  // verdict: two isolations decided together must not cut off together
  // what neither would alone (one of them is refused).
  std::vector<LinkEnds> others;
  for (const auto& [l, tr] : health_.tracks()) {
    if (l != v.link && (tr.pending || tr.status == state::HealthStatus::kIsolated)) {
      others.push_back(l);
    }
  }
  auto cut_off = [&others](const routing::Topology& t, NodeId from, NodeId n, PortNum p) {
    if (others.empty()) return health::endpoints_cut_off(t, from, n, p);
    routing::Topology without = t;
    for (const LinkEnds& o : others) {
      const auto x = without.find_by_guid(o.a);
      if (!x || o.pa == 0 || o.pa > without.node(*x).num_ports) continue;
      const routing::Port& op = without.port(*x, o.pa);
      if (op.connected() && without.node(op.remote_node).guid == o.b)
        without.disconnect({*x, o.pa});
    }
    return health::endpoints_cut_off(without, from, n, p);
  };
  std::size_t cut = 0;
  bool was_up = false;
  const auto ln = live.find_by_guid(v.node);
  const auto lsm = live.find_by_guid(sm_guid);
  if (ln && lsm && live.port(*ln, v.port).connected()) {
    was_up = true;
    cut = cut_off(live, *lsm, *ln, v.port);
  } else if (bt.port(end->first, v.port).connected()) {
    cut = cut_off(bt, c->sweep.sm_node, end->first, v.port);
  } else {
    // Down since the last sweep: an end that is not a switch is an
    // endpoint it keeps cut off.
    cut = (na ? 0 : 1) + (nb ? 0 : 1);
  }
  if (cut > 0 && !health_.policy().isolate_disconnecting) {
    const std::string note = fmt::format(
        "; not isolated: it would disconnect {} endpoint port{} "
        "(health.isolate_disconnecting is off)",
        cut, cut == 1 ? "" : "s");
    health_.refused(v, clock_.now(), note);
    ++health_refused_total_;
    audit_health("refuse", v.link, v.node, v.port, to_string(v.cause), v.reason + note, "policy",
                 std::nullopt);
    publish_health();
    schedule_health_timer();
    co_return;
  }

  const Result<void> r = co_await send_port_phys(c, end->first, end->second, false);
  if (alive.expired() || stopped_) co_return;
  if (!r.ok()) {
    health_.failed(v.link);
    const std::string msg =
        fmt::format("health: isolating {} ({}) failed: disabling port {} of {}: {}", what, v.reason,
                    v.port, label_of(bt, v.node), r.error().message);
    spdlog::warn("{}", msg);
    events_.append(state::EventKind::kError, v.node, v.port, msg);
    co_return;
  }
  health_.isolated(v, clock_.now());
  ++health_isolated_total_;
  const auto until = clock_.now() + health_.policy().hold_down;
  audit_health("isolate", v.link, v.node, v.port, to_string(v.cause),
               fmt::format("{}; port {} of {} disabled for {}{}", v.reason, v.port,
                           label_of(bt, v.node), health::human_duration(health_.policy().hold_down),
                           cut > 0 ? fmt::format(", cutting off {} endpoint port(s)", cut) : ""),
               "policy", wall_of(until));
  publish_health();
  schedule_health_timer();
  if (was_up) {
    // The switches at its ends trap (PortStateChange); in case a trap is
    // lost, the fast path probes them now too. A repeat finds nothing new.
    for (const auto& sw : {na, nb}) {
      if (!sw) continue;
      TrapEvent ev;
      ev.trap_number = 128;
      ev.issuer_lid = c->lids.map.base_lid(bt, *sw, 0).value;
      ev.received_at = transport_->now();
      ev.received_wall = Steady::now();
      pending_traps_.push_back(ev);
    }
    if (!trap_worker_running_ && !pending_traps_.empty()) {
      trap_worker_running_ = true;
      asio::co_spawn(strand_, trap_worker(), asio::detached);
    }
  }
}

asio::awaitable<void> SubnetManager::restore(LinkEnds l) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  auto it = health_.tracks().find(l);
  if (it == health_.tracks().end() || it->second.status != state::HealthStatus::kIsolated) {
    co_return;
  }
  const Guid node = it->second.node;
  const PortNum port = it->second.port;
  std::string failure;
  if (!current_) {
    failure = "no fabric yet";
  } else {
    const std::shared_ptr<const BringUpResult> c = current_;
    const auto n = c->sweep.topology.find_by_guid(node);
    if (!n || port == 0 || port > c->sweep.topology.node(*n).num_ports) {
      failure = fmt::format("{} is not in the fabric", guid_str(node));
    } else {
      const Result<void> r = co_await send_port_phys(c, *n, port, true);
      if (alive.expired() || stopped_) co_return;
      if (!r.ok()) failure = r.error().message;
    }
  }
  if (!health_.is_isolated(l)) co_return;  // an operator was quicker
  const routing::Topology* t = current_ ? &current_->sweep.topology : nullptr;
  const std::string what = t ? link_text(*t, l) : fmt::format("{}[{}]", guid_str(node), port);
  if (!failure.empty()) {
    health_.postpone(l, clock_.now() + kRetryRestore);
    const std::string msg =
        fmt::format("health: returning {} to service failed ({}); trying again in {}", what,
                    failure, health::human_duration(kRetryRestore));
    spdlog::warn("{}", msg);
    events_.append(state::EventKind::kError, node, port, msg);
    schedule_health_timer();
    co_return;
  }
  health_.restored(l);
  ++health_restored_total_;
  audit_health("restore", l, node, port, "", "hold-down over: returned to service", "hold-down",
               std::nullopt);
  publish_health();
  request_heavy_sweep(std::chrono::milliseconds{0},
                      fmt::format("link {} returned to service", what));
}

void SubnetManager::audit_health(std::string_view action, const LinkEnds& l, Guid node,
                                 PortNum port, std::string_view cause, const std::string& reason,
                                 const std::string& who, std::optional<state::WallTime> until) {
  SUBNETD_ASSERT_ON(strand_);
  const bool a_end = l.a == node && l.pa == port;
  const Guid peer = a_end ? l.b : l.a;
  const PortNum peer_port = a_end ? l.pb : l.pa;
  const routing::Topology* t = current_ ? &current_->sweep.topology : nullptr;
  const std::string what = t ? link_text(*t, l) : fmt::format("{}[{}]", guid_str(node), port);
  const std::string msg = fmt::format("health: {} {}: {} (by {})",
                                      action == "isolate"  ? "isolated"
                                      : action == "refuse" ? "refused to isolate"
                                                           : "returned",
                                      what, reason, who);
  spdlog::warn("{}", msg);
  events_.append(state::EventKind::kHealth, node, port, msg,
                 fmt::format("{{\"action\":\"{}\",\"cause\":\"{}\",\"peer_guid\":\"{}\","
                             "\"peer_port\":{},\"who\":\"{}\"}}",
                             action, cause, guid_str(peer), peer_port, json_escape(who)));
  if (store_ == nullptr) return;
  HealthAction a;
  a.at = wall_clock_now();
  a.node_guid = node;
  a.port = port;
  a.peer_guid = peer;
  a.peer_port = peer_port;
  a.action = std::string(action);
  a.cause = std::string(cause);
  a.reason = reason;
  a.who = who;
  a.until = until;
  store_->record_health_action(std::move(a));
}

void SubnetManager::schedule_health_timer() {
  SUBNETD_ASSERT_ON(strand_);
  if (health_board_ == nullptr || stopped_) return;
  const auto next = health_.next_deadline();
  if (!next) {
    health_timer_.cancel();
    return;
  }
  if (health_timer_.pending() && health_timer_.expiry() <= *next) return;
  const auto now = clock_.now();
  health_timer_.start(*next > now ? *next - now : Clock::duration{0}, [this] {
    // A standby touches no port: the master owns the links now. What fell
    // due waits until we are master again (enter_role schedules it).
    if (stopped_ || standing_by()) return;
    const auto at = clock_.now();
    for (const LinkEnds& l : health_.due(at)) {
      // Marked so the next deadline is not this one again while it runs.
      health_.postpone(l, at + kRetryRestore);
      spawn_health(restore(l));
    }
    health_.expire(at);
    publish_health();
    schedule_health_timer();
  });
}

void SubnetManager::publish_health() {
  SUBNETD_ASSERT_ON(strand_);
  if (health_board_ == nullptr) return;
  auto snap = std::make_shared<state::HealthSnapshot>();
  const routing::Topology* t = current_ ? &current_->sweep.topology : nullptr;
  auto label = [t](Guid g) { return t ? label_of(*t, g) : guid_str(g); };
  for (const auto& [l, tr] : health_.tracks()) {
    if (!tr.status) continue;
    state::UnhealthyPort u;
    // The end the policy disables (isolated) or would have (refused).
    const bool b_end = tr.node == l.b && tr.port == l.pb;
    u.node_guid = b_end ? l.b : l.a;
    u.port = b_end ? l.pb : l.pa;
    u.peer_guid = b_end ? l.a : l.b;
    u.peer_port = b_end ? l.pa : l.pb;
    u.node_label = label(u.node_guid);
    u.peer_label = label(u.peer_guid);
    u.status = *tr.status;
    u.cause = tr.cause;
    u.reason = tr.reason + tr.note;
    for (const auto d : tr.downs) u.downs.push_back(wall_of(d));
    u.errors_per_minute = tr.errors_per_minute;
    u.since = wall_of(tr.since);
    if (tr.status == state::HealthStatus::kIsolated) u.until = wall_of(tr.until);
    u.isolations = tr.isolations;
    snap->ports.push_back(std::move(u));
  }
  std::sort(snap->ports.begin(), snap->ports.end(), [](const auto& x, const auto& y) {
    return std::pair(x.node_guid, x.port) < std::pair(y.node_guid, y.port);
  });
  snap->isolated_total = health_isolated_total_;
  snap->restored_total = health_restored_total_;
  snap->refused_total = health_refused_total_;
  snap->policy_enabled = health_.policy().enabled;
  health_board_->publish(std::move(snap));
}

}  // namespace subnetd::daemon

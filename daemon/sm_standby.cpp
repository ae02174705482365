// SubnetManager: the SM election (IBA 14.4) — other SMs, polling the
// master, handover. The rules are discovery/sm_election.hpp's; this file
// asks the peers, carries out what the rules decide and keeps the SM's own
// work (sweeps, programming) to the master.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "daemon/sm_text.hpp"
#include "daemon/subnet_manager.hpp"

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;
namespace mad = discovery::mad;
using discovery::PeerSm;
using discovery::SmState;

PeerSm peer_of(const mad::SmInfo& info) {
  PeerSm p;
  p.guid = Guid{info.guid};
  p.priority = info.priority;
  p.state = static_cast<SmState>(info.sm_state & 0x3);
  p.sm_key = info.sm_key;
  return p;
}

// What the published state says for an election state; MASTER only once
// a sweep has programmed the subnet (the caller's to publish).
state::SmState published_state(SmState s) {
  switch (s) {
    case SmState::kStandby:
      return state::SmState::kStandby;
    case SmState::kNotActive:
      return state::SmState::kNotActive;
    case SmState::kDiscovering:
    case SmState::kMaster:
      return state::SmState::kDiscovering;
  }
  return state::SmState::kDiscovering;
}

}  // namespace

bool SubnetManager::standing_by() const {
  const SmState s = election_.state();
  return s == SmState::kStandby || s == SmState::kNotActive;
}

mad::SmInfo SubnetManager::own_sm_info(SmState as) const {
  mad::SmInfo info = agent_->sm_info(static_cast<std::uint32_t>(engine_.stats().sent), true);
  info.sm_state = static_cast<std::uint8_t>(as);
  return info;
}

state::SmRoleView SubnetManager::role_view() const {
  state::SmRoleView v;
  v.priority = election_.self().priority;
  v.ib_state = static_cast<std::uint8_t>(election_.state());
  if (auto m = election_.master()) {
    v.master_guid = *m;
    if (*m == election_.self().guid) {
      v.master_lid = own_lid_;
    } else if (auto it = sm_peers_.find(*m); it != sm_peers_.end()) {
      v.master_lid = it->second.lid;
    }
  }
  for (const auto& [guid, e] : sm_peers_) {
    if (!e.last) continue;
    state::SmPeerView p;
    p.guid = guid;
    p.lid = e.lid;
    p.priority = e.last->priority;
    p.ib_state = static_cast<std::uint8_t>(e.last->state);
    p.last_contact = e.last_contact;
    v.peers.push_back(p);
  }
  return v;
}

void SubnetManager::republish_role() {
  SUBNETD_ASSERT_ON(strand_);
  const auto now = publisher_.current();
  if (now->sm_role == role_view()) return;
  publish(now->state, now->last_error);
}

// ---------------------------------------------------------------- asking

asio::awaitable<Result<mad::SmInfo>> SubnetManager::ask_peer(
    Guid to, std::optional<discovery::SmControl> ctl, SmState as, unsigned retries) {
  SUBNETD_ASSERT_ON(strand_);
  auto it = sm_peers_.find(to);
  if (it == sm_peers_.end() || (!it->second.have_path && !it->second.lid.valid())) {
    co_return Error{Errc::kNotFound, fmt::format("no route to SM {} known", guid_str(to))};
  }
  // Copied: the book may change while the answer is awaited.
  const std::vector<std::uint8_t> path =
      it->second.have_path ? it->second.path : std::vector<std::uint8_t>{};
  const bool directed = it->second.have_path;
  const std::uint32_t dlid = it->second.lid.value;
  co_return co_await ask_sminfo(directed, path, dlid, ctl, as, retries);
}

asio::awaitable<Result<mad::SmInfo>> SubnetManager::ask_sminfo(
    bool directed, std::vector<std::uint8_t> path, std::uint32_t dlid,
    std::optional<discovery::SmControl> ctl, SmState as, unsigned retries) {
  SUBNETD_ASSERT_ON(strand_);
  const auto method = ctl ? mad::Method::kSet : mad::Method::kGet;
  const std::uint32_t attr_mod = ctl ? static_cast<std::uint32_t>(*ctl) : 0;
  mad::Smp smp = directed ? mad::make_dr_smp(method, mad::AttrId::kSmInfo, attr_mod, path, 0)
                          : mad::make_lr_smp(method, mad::AttrId::kSmInfo, attr_mod, 0);
  // A Get carries our key too: a peer with the same key shows its own.
  own_sm_info(as).encode(mad::data_of(smp));
  discovery::FlowOptions fo;
  fo.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
  fo.retries = retries;
  fo.sm_lid = own_lid_.valid() ? own_lid_.value : 0xFFFF;
  // The flow and the outcome live in the coroutine frame (see send_port_phys).
  discovery::Flow flow(engine_, fo);
  Result<mad::SmInfo> outcome = Error{Errc::kCancelled, "subnetd is stopping"};
  flow.submit(smp, dlid, [&outcome](Result<mad::Smp> r) {
    if (!r.ok()) {
      outcome = r.error();
    } else {
      outcome = mad::SmInfo::decode(mad::data_of(*r));
    }
  });
  co_await flow.drained();
  co_return outcome;
}

asio::awaitable<std::vector<PeerSm>> SubnetManager::query_sms(const discovery::SweepResult& sweep) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  const routing::Topology& t = sweep.topology;
  // Every port whose CapabilityMask says IsSM: CA and router ports, and a
  // switch's port 0 (an SM on the switch's management port).
  std::vector<std::pair<NodeId, PortNum>> sm_ports;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = t.node(n).type == routing::NodeType::kSwitch;
    const unsigned first = sw ? 0 : 1;
    const unsigned last = sw ? 0 : t.node(n).num_ports;
    for (unsigned p = first; p <= last; ++p) {
      const std::uint32_t at = t.port_index(n, static_cast<PortNum>(p));
      if (at >= sweep.port_info.size()) continue;
      const auto pi = mad::PortInfo::decode(mad::ConstSmpData(sweep.port_info[at]));
      if (n == sweep.sm_node && p == sweep.sm_port) {
        own_capability_mask_ = pi.capability_mask;
        continue;
      }
      if ((pi.capability_mask & mad::kCapIsSm) != 0) sm_ports.emplace_back(n, p);
    }
  }
  // One SMInfo Get each, all at once; a peer is known by the GUID it
  // answers with (its port GUID).
  struct Asked {
    NodeId node;
    PortNum port = 0;
    std::optional<mad::SmInfo> info;
  };
  std::vector<Asked> asked;
  asked.reserve(sm_ports.size());
  for (const auto& [n, p] : sm_ports) asked.push_back(Asked{n, p, std::nullopt});
  if (!asked.empty()) {
    discovery::FlowOptions fo;
    fo.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
    fo.retries = std::min(cfg_.sweep.retries, 1U);  // a dead SM must not hold the sweep
    fo.window = cfg_.sweep.smp_window;
    discovery::Flow flow(engine_, fo);
    for (Asked& a : asked) {
      mad::Smp smp = mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kSmInfo, 0,
                                      sweep.path_to_port(a.node, a.port), 0);
      own_sm_info(election_.state()).encode(mad::data_of(smp));
      flow.submit(smp, 0, [&a](Result<mad::Smp> r) {
        if (r.ok()) a.info = mad::SmInfo::decode(mad::data_of(*r));
      });
    }
    co_await flow.drained();
    if (alive.expired()) co_return std::vector<PeerSm>{};
  }
  std::vector<PeerSm> peers;
  std::map<Guid, SmPeerEntry> book;
  const auto now = std::chrono::system_clock::now();
  for (const Asked& a : asked) {
    SmPeerEntry e;
    const auto path = sweep.path_to_port(a.node, a.port);
    e.path.assign(path.begin(), path.end());
    e.have_path = true;
    e.lid = t.port(a.node, a.port).lid;
    Guid guid = t.port(a.node, a.port).guid;
    if (a.info) {
      const PeerSm p = peer_of(*a.info);
      guid = p.guid;
      e.last = p;
      e.last_contact = now;
      peers.push_back(p);
    } else if (auto old = sm_peers_.find(guid); old != sm_peers_.end()) {
      // Silent now (killed, hung, its port still IsSM): what it said last,
      // but not active, so that no one reads a dead master as master.
      e.last = old->second.last;
      if (e.last) e.last->state = SmState::kNotActive;
      e.last_contact = old->second.last_contact;
    }
    book[guid] = std::move(e);
  }
  sm_peers_ = std::move(book);
  co_return peers;
}

// ---------------------------------------------------------------- deciding

asio::awaitable<bool> SubnetManager::elect_after_discovery(const discovery::SweepResult& sweep) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  // Our LID as a master gave it (a standby keeps it; a master sets its own
  // once LIDs are assigned).
  own_lid_ = sweep.topology.port(sweep.sm_node, sweep.sm_port).lid;
  const std::vector<PeerSm> peers = co_await query_sms(sweep);
  if (alive.expired() || stopped_) co_return false;
  if (ack_owed_) asio::co_spawn(strand_, send_acknowledge(*ack_owed_), asio::detached);
  if (election_.state() != SmState::kDiscovering) co_return !standing_by();
  discovery::ElectionActions a = election_.discovery_done(peers);
  a.sweep = false;  // this is the sweep
  apply_election(std::move(a));
  co_return election_.state() == SmState::kMaster;
}

asio::awaitable<void> SubnetManager::elect_after_master_sweep(const discovery::SweepResult& sweep) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  const std::vector<PeerSm> peers = co_await query_sms(sweep);
  if (alive.expired() || stopped_) co_return;
  if (ack_owed_) asio::co_spawn(strand_, send_acknowledge(*ack_owed_), asio::detached);
  apply_election(election_.master_sweep_done(peers));
  republish_role();  // the peers as now seen
}

void SubnetManager::enter_role(SmState s, const std::string& why) {
  SUBNETD_ASSERT_ON(strand_);
  const SmState was = agent_->state();
  agent_->set_state(s);
  const std::string msg =
      fmt::format("SM {} -> {}: {}", discovery::sm_state_name(was), discovery::sm_state_name(s),
                  why.empty() ? std::string("election") : why);
  spdlog::info("{}", msg);
  events_.append(state::EventKind::kSmState, std::nullopt, std::nullopt, msg);
  if (s == SmState::kMaster) schedule_health_timer();  // hold-downs that ended meanwhile
  if (s == SmState::kStandby || s == SmState::kNotActive) {
    // The switches will hold another SM's tables when we take over: the
    // takeover reads them first and sends only what differs.
    adopt_tables_ = true;
    // Nor is anything we programmed as a master still known to be there.
    held_pkeys_.clear();
    held_vls_.clear();
    held_mfts_.clear();
    if (current_) {
      const routing::Topology& t = current_->sweep.topology;
      for (std::uint32_t sw = 0; sw < t.num_switches(); ++sw) {
        armer_.forget(t.node(t.switch_node(SwitchIndex{sw})).guid);
      }
    }
    // The master's work is someone else's now.
    heavy_timer_.cancel();
    light_timer_.cancel();
    perf_timer_.cancel();
    health_timer_.cancel();
    heavy_again_ = false;
    std::vector<state::Completion<state::SweepReply>> waiters;
    waiters.swap(heavy_waiters_);
    for (auto& done : waiters) {
      done(state::SweepReply{false, generation_, "this SM is no longer master: " + why, {}});
    }
  }
  // Entering MASTER, a heavy sweep is running or comes next: it publishes
  // MASTER once the subnet is programmed.
  const state::SmState shown = published_state(s);
  if (publisher_.current()->state != shown) publish(shown, {});
}

void SubnetManager::apply_election(discovery::ElectionActions a) {
  SUBNETD_ASSERT_ON(strand_);
  if (a.empty()) {
    if (!a.why.empty()) spdlog::info("SM election: {}", a.why);
    return;
  }
  if (a.enter) {
    enter_role(*a.enter, a.why);
  } else if (!a.why.empty()) {
    spdlog::info("SM election: {}", a.why);
  }
  if (a.handover_to) asio::co_spawn(strand_, send_handover(*a.handover_to), asio::detached);
  if (a.acknowledge_to) {
    asio::co_spawn(strand_, send_acknowledge(*a.acknowledge_to), asio::detached);
  }
  if (a.trap144_to) send_trap144(*a.trap144_to);
  if (a.stop_polling) poll_timer_.cancel();
  if (a.poll) schedule_poll();
  if (a.sweep) request_heavy_sweep(std::chrono::milliseconds{0}, "SM election: " + a.why);
}

// ---------------------------------------------------------------- SMInfo Set

void SubnetManager::on_sminfo_set(const mad::Smp& smp, const discovery::Mad& m) {
  SUBNETD_ASSERT_ON(strand_);
  const mad::SmInfo info = mad::SmInfo::decode(mad::data_of(smp));
  const PeerSm from = peer_of(info);
  // The answer carries our SMInfo as it was when the Set came (as OpenSM's).
  const mad::SmInfo ours =
      agent_->sm_info(static_cast<std::uint32_t>(engine_.stats().sent), election_.accepts(from));
  discovery::SmElection::SetReply r = election_.set_received(smp.attr_mod, from);
  const discovery::Mad reply = discovery::SmAgent::reply(smp, m, r.status, &ours);
  if (auto sent = engine_.send_unsolicited(reply); !sent.ok()) {
    spdlog::warn("SMInfo Set answer: {}", sent.error().message);
  }
  const char* ctl = discovery::sm_control_name(smp.attr_mod);
  if (r.status != mad::status::kOk) {
    // Why, as the election decided: who sent it before what it asked.
    const std::string why = from.guid == election_.self().guid
                                ? std::string("it carries our own GUID")
                            : !election_.accepts(from)
                                ? std::string("its SM_Key is not ours")
                                : fmt::format("not valid from a peer in that state while we are {}",
                                              discovery::sm_state_name(election_.state()));
    const std::string msg =
        fmt::format("SMInfo Set {} from SM {} (priority {}, {}) refused: {}", ctl,
                    guid_str(from.guid), from.priority, discovery::sm_state_name(from.state), why);
    spdlog::warn("{}", msg);
    events_.append(state::EventKind::kSmState, std::nullopt, std::nullopt, msg);
    return;
  }
  // Where to reach it for the ACKNOWLEDGE and the polls.
  SmPeerEntry& e = sm_peers_[from.guid];
  if (!smp.directed() && m.slid != 0 && m.slid != mad::kPermissiveLid) e.lid = Lid{m.slid};
  e.last = from;
  e.last_contact = std::chrono::system_clock::now();
  spdlog::info("SMInfo Set {} from SM {}", ctl, guid_str(from.guid));
  // Handed the subnet: the switches hold the old master's tables.
  if (smp.attr_mod == static_cast<std::uint32_t>(discovery::SmControl::kHandover)) {
    adopt_tables_ = true;
  }
  apply_election(std::move(r.actions));
  // An ACKNOWLEDGE says STANDBY (the state its sender took the handover
  // from), but it comes from the master now.
  if (election_.master() == from.guid) e.last->state = SmState::kMaster;
  republish_role();
}

asio::awaitable<void> SubnetManager::trap144_received(std::uint32_t lid) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  if (lid == 0 || lid == own_lid_.value) {
    check_idle();
    co_return;
  }
  const std::vector<std::uint8_t> lid_routed;  // named before the co_await (discovery/coro.hpp)
  auto info = co_await ask_sminfo(false, lid_routed, lid, std::nullopt, election_.state(),
                                  std::min(cfg_.sweep.retries, 1U));
  if (alive.expired() || stopped_) co_return;
  const PeerSm p = info.ok() ? peer_of(info.value()) : PeerSm{};
  // Not an SM (any more), or not one of ours: nothing to learn.
  if (info.ok() && election_.accepts(p) && p.state != SmState::kNotActive) {
    SmPeerEntry& e = sm_peers_[p.guid];
    if (!e.have_path) e.lid = Lid{lid};
    e.last = p;
    e.last_contact = std::chrono::system_clock::now();
    if (p.state == SmState::kMaster || discovery::outranks(p.rank(), election_.self())) {
      request_heavy_sweep(
          std::chrono::milliseconds{0},
          fmt::format("trap 144: SM {} (priority {}, {}) at LID {:#x}", guid_str(p.guid),
                      p.priority, discovery::sm_state_name(p.state), lid));
    }
    republish_role();
  }
  // Every way out: a test waiting for idle is not left waiting for the
  // next event.
  check_idle();
}

asio::awaitable<void> SubnetManager::send_handover(Guid to) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  auto r =
      co_await ask_peer(to, discovery::SmControl::kHandover, SmState::kMaster, cfg_.sweep.retries);
  if (alive.expired() || stopped_) co_return;
  if (r.ok() && r.value().guid == to.value) {
    apply_election(election_.handover_answered(to));
  } else {
    spdlog::warn("HANDOVER to SM {}: {}", guid_str(to),
                 r.ok() ? std::string("answered by another SM") : r.error().message);
    apply_election(election_.handover_failed(to));
  }
}

asio::awaitable<void> SubnetManager::send_acknowledge(Guid to) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  auto it = sm_peers_.find(to);
  if (it == sm_peers_.end() || (!it->second.have_path && !it->second.lid.valid())) {
    // A handover by directed route from an SM our sweeps have not met
    // yet: the sweep under way finds it, and the acknowledgement follows.
    ack_owed_ = to;
    co_return;
  }
  ack_owed_.reset();
  // Sent as STANDBY: the state we took the handover from, which is what
  // the old master checks (OpenSM refuses an ACKNOWLEDGE from a non-standby).
  auto r = co_await ask_peer(to, discovery::SmControl::kAcknowledge, SmState::kStandby,
                             cfg_.sweep.retries);
  if (alive.expired() || stopped_) co_return;
  if (!r.ok()) spdlog::warn("ACKNOWLEDGE to SM {}: {}", guid_str(to), r.error().message);
}

void SubnetManager::send_trap144(Guid to) {
  SUBNETD_ASSERT_ON(strand_);
  auto it = sm_peers_.find(to);
  if (it == sm_peers_.end() || !it->second.lid.valid() || !own_lid_.valid()) {
    spdlog::debug("trap 144 to SM {}: its LID or ours is not known", guid_str(to));
    return;
  }
  mad::Smp smp = mad::make_lr_smp(mad::Method::kTrap, mad::AttrId::kNotice, 0, 0);
  mad::Notice::trap144(static_cast<std::uint16_t>(own_lid_.value), own_capability_mask_)
      .encode(mad::data_of(smp));
  discovery::Mad m;
  mad::encode_smp(smp, std::span<std::uint8_t, discovery::kMadSize>(m.data));
  m.dlid = it->second.lid.value;
  m.slid = own_lid_.value;
  if (auto sent = engine_.send_unsolicited(m); !sent.ok()) {
    spdlog::warn("trap 144 to SM {}: {}", guid_str(to), sent.error().message);
  }
}

// ---------------------------------------------------------------- takeover

asio::awaitable<std::shared_ptr<SubnetManager::AdoptedTables>> SubnetManager::read_held_lfts(
    std::shared_ptr<const BringUpResult> r) {
  SUBNETD_ASSERT_ON(strand_);
  const routing::Topology& t = r->sweep.topology;
  const routing::Routes& routes = *r->routes;
  auto out = std::make_shared<AdoptedTables>();
  // Rows by switch index; a switch with a block unread is left unknown.
  std::vector<std::vector<std::uint8_t>> rows(t.num_switches());
  for (std::uint32_t sw = 0; sw < t.num_switches(); ++sw) {
    rows[sw].assign(routes.lfts[sw].size(), routing::kDropPort);
  }
  const std::uint32_t blocks = t.num_switches() == 0 ? 0 : routes.lfts[0].num_blocks();
  auto path_to = [&t, &r](SwitchIndex sw) {
    const auto p = r->sweep.paths.path(t.switch_node(sw));
    return std::vector<std::uint8_t>(p.begin(), p.end());
  };
  auto keep = [&rows, &out](std::uint32_t sw, std::uint32_t b, std::span<const std::uint8_t> held) {
    ++out->blocks_read;
    std::copy(held.begin(), held.end(),
              rows[sw].begin() + static_cast<std::ptrdiff_t>(b * routing::kLftBlockSize));
  };
  // Named before the co_await (see discovery/coro.hpp).
  std::function<std::vector<std::uint8_t>(SwitchIndex)> paths = path_to;
  LftBlockFn each = keep;
  const std::vector<std::uint8_t> failed =
      co_await read_lft_blocks(t, r->lids.map.space.extended(), blocks, paths, each);
  for (std::uint32_t sw = 0; sw < t.num_switches(); ++sw) {
    if (failed[sw] != 0) continue;
    out->rows.emplace(t.node(t.switch_node(SwitchIndex{sw})).guid, std::move(rows[sw]));
  }
  co_return out;
}

// ---------------------------------------------------------------- polling

void SubnetManager::schedule_poll() {
  SUBNETD_ASSERT_ON(strand_);
  if (stopped_ || !election_.polled()) return;
  poll_timer_.start(cfg_.sm.poll_period, [this] {
    if (poll_running_) return;
    poll_running_ = true;
    asio::co_spawn(strand_, poll_once(), asio::detached);
  });
}

asio::awaitable<void> SubnetManager::poll_once() {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  const std::optional<Guid> polled = election_.polled();
  if (!polled || stopped_) {
    poll_running_ = false;
    co_return;
  }
  // One SMP, no retries of its own: the polls are the retries
  // (sm.poll_retries in a row unanswered lose the master).
  auto r = co_await ask_peer(*polled, std::nullopt, election_.state(), 0);
  if (alive.expired()) co_return;
  poll_running_ = false;
  if (stopped_ || election_.polled() != polled) {
    check_idle();
    co_return;
  }
  if (r.ok()) {
    const PeerSm p = peer_of(r.value());
    SmPeerEntry& e = sm_peers_[p.guid];
    const bool changed = !e.last || e.last->state != p.state || e.last->priority != p.priority;
    e.last = p;
    e.last_contact = std::chrono::system_clock::now();
    apply_election(election_.poll_answered(p));
    if (changed) republish_role();
  } else {
    spdlog::info("poll of SM {}: {} ({} in a row)", guid_str(*polled), r.error().message,
                 election_.missed_polls() + 1);
    discovery::ElectionActions a = election_.poll_missed();
    if (election_.polled() != polled) {
      // Given up on: it shows as not active (with its last contact) until
      // a sweep hears from it again.
      if (auto it = sm_peers_.find(*polled); it != sm_peers_.end() && it->second.last) {
        it->second.last->state = SmState::kNotActive;
      }
    }
    apply_election(std::move(a));
  }
  schedule_poll();
  check_idle();
}

}  // namespace subnetd::daemon

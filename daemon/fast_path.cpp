#include "daemon/fast_path.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "discovery/smp_pipeline.hpp"

namespace subnetd::daemon {
namespace {

namespace mad = discovery::mad;

constexpr std::uint8_t kPortStateDown = 1;
constexpr std::uint8_t kPhysLinkUp = 5;
constexpr std::uint32_t kTidFirst = 0x40000000;
constexpr std::uint32_t kTidLast = 0x7FFFFFFF;

}  // namespace

FastPath::FastPath(discovery::Transport& transport, const routing::Topology& topo,
                   const routing::LidMap& lids, NodeId sm_node, PortNum sm_port,
                   FastPathConfig config)
    : transport_(transport),
      topo_(topo),
      lids_(lids),
      sm_node_(sm_node),
      sm_port_(sm_port),
      config_(config) {}

FastPath::~FastPath() = default;

Result<std::unique_ptr<FastPath>> FastPath::build(
    discovery::Transport& transport, const routing::Topology& topo, const routing::LidMap& lids,
    std::shared_ptr<const routing::Routes> routes, NodeId sm_node, PortNum sm_port,
    FastPathConfig config, routing::WorkerPool& pool) {
  if (!sm_node.valid() || sm_node.value >= topo.num_nodes() || sm_port == 0 ||
      sm_port > topo.node(sm_node).num_ports) {
    return Error{Errc::kInvalidArgument, "fast path: the SM's port is not in the topology"};
  }
  const routing::Port& own = topo.port(sm_node, sm_port);
  if (!own.connected() || topo.node(own.remote_node).type != routing::NodeType::kSwitch) {
    return Error{Errc::kUnsupported,
                 fmt::format("fast path: the SM's port \"{}\" port {} is not cabled to a switch",
                             topo.node(sm_node).description, sm_port)};
  }
  std::unique_ptr<FastPath> fp(new FastPath(transport, topo, lids, sm_node, sm_port, config));
  auto rr = routing::Rerouter::build(topo, lids, std::move(routes), pool);
  if (!rr.ok()) return rr.error();
  fp->rerouter_ = std::move(rr).value();
  const std::size_t n = topo.num_switches();
  fp->root_ = topo.node(own.remote_node).switch_index;
  fp->parent_.assign(n, kNone);
  fp->parent_port_.assign(n, 0);
  fp->depth_.assign(n, 0);
  fp->head_.assign(n, kNone);
  fp->tail_.assign(n, kNone);
  fp->in_flight_.assign(n, 0);
  fp->stamp_.assign(n, 0);
  fp->links_first_.assign(n + 1, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    fp->links_first_[s] = static_cast<std::uint32_t>(fp->links_.size());
    const NodeId node = topo.switch_node(s);
    for (unsigned pn = 1; pn <= topo.node(node).num_ports; ++pn) {
      const routing::Port& port = topo.port(node, static_cast<PortNum>(pn));
      if (!port.connected() || topo.node(port.remote_node).type != routing::NodeType::kSwitch)
        continue;
      fp->links_.push_back(
          {topo.node(port.remote_node).switch_index, static_cast<PortNum>(pn), port.remote_port});
    }
  }
  fp->links_first_[n] = static_cast<std::uint32_t>(fp->links_.size());
  fp->seen_.assign(n, 0);
  fp->queue_.reserve(n);
  fp->trap_mark_.assign(n, 0);
  fp->near_mark_.assign(n, 0);
  fp->near_count_.assign(n, 0);
  // Push scratch sized now (the rerouter's warm-up repair gives a typical
  // block count), so the first push allocates nothing.
  fp->path_len_.assign(n, 0);
  fp->path_slot_.assign(n, 0);
  const std::size_t blocks = std::max<std::size_t>(1024, 2 * fp->rerouter_->stats().warmup_blocks);
  fp->next_in_switch_.resize(blocks);
  fp->attempts_.resize(blocks);
  fp->answered_.resize(blocks);
  fp->order_.reserve(n);
  fp->tmpl_buf_.resize(std::min<std::size_t>(n, blocks));
  fp->refresh_paths();
  return fp;
}

bool FastPath::link_up_now(std::uint32_t sw, PortNum port) const {
  if (!rerouter_->link_live(sw, port)) return false;
  return std::none_of(suspect_.begin(), suspect_.end(),
                      [&](const routing::FailedLink& f) { return f.sw == sw && f.port == port; });
}

void FastPath::refresh_paths() {
  std::fill(parent_.begin(), parent_.end(), kNone);
  std::fill(depth_.begin(), depth_.end(), 0);
  std::vector<std::uint8_t>& seen = seen_;
  std::fill(seen.begin(), seen.end(), 0);
  std::vector<std::uint32_t>& queue = queue_;
  queue.assign(1, root_);
  seen[root_] = 1;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const std::uint32_t s = queue[i];
    // The path to s holds the SM's port plus depth_[s] hops; a child needs
    // one more, within the 63 a directed route can hold.
    if (depth_[s] + 2U > mad::kMaxHopCount) continue;
    for (const SwitchLink& l : links_of(s)) {
      if (seen[l.peer] != 0 || !link_up_now(s, l.port)) continue;
      seen[l.peer] = 1;
      parent_[l.peer] = s;
      parent_port_[l.peer] = l.port;
      depth_[l.peer] = static_cast<std::uint8_t>(depth_[s] + 1);
      queue.push_back(l.peer);
    }
  }
}

bool FastPath::intact(std::uint32_t sw) const {
  for (std::uint32_t x = sw; x != root_; x = parent_[x]) {
    if (parent_[x] == kNone || !link_up_now(parent_[x], parent_port_[x])) return false;
  }
  return true;
}

bool FastPath::descends_from(std::uint32_t sw, std::uint32_t ancestor) const {
  for (std::uint32_t x = sw; x != kNone; x = x == root_ ? kNone : parent_[x]) {
    if (x == ancestor) return true;
  }
  return false;
}

std::size_t FastPath::tree_path(std::uint32_t sw, std::array<std::uint8_t, 64>& out) const {
  const std::size_t len = std::size_t{depth_[sw]} + 1;
  out[0] = sm_port_;
  std::size_t i = len;
  for (std::uint32_t x = sw; x != root_; x = parent_[x]) out[--i] = parent_port_[x];
  return len;
}

template <class Accept>
std::size_t FastPath::one_hop_off(std::uint32_t sw, Accept&& accept,
                                  std::array<std::uint8_t, 64>& out) const {
  std::uint32_t best = kNone;
  PortNum best_port = 0;
  for (const SwitchLink& l : links_of(sw)) {
    const std::uint32_t nb = l.peer;
    if (!link_up_now(sw, l.port) || depth_[nb] + 2U > mad::kMaxHopCount || !accept(nb)) continue;
    if (best == kNone || depth_[nb] < depth_[best]) {
      best = nb;
      best_port = l.peer_port;
    }
  }
  if (best == kNone) return 0;
  const std::size_t len = tree_path(best, out);
  out[len] = best_port;
  return len + 1;
}

std::size_t FastPath::path(std::uint32_t sw, std::array<std::uint8_t, 64>& out) const {
  if (sw == root_ || (parent_[sw] != kNone && intact(sw))) return tree_path(sw, out);
  // A failed link on sw's tree path: one hop from a neighbour whose own path
  // is intact and does not run through sw.
  return one_hop_off(
      sw,
      [&](std::uint32_t nb) {
        return (nb == root_ || (parent_[nb] != kNone && intact(nb))) && !descends_from(nb, sw);
      },
      out);
}

std::size_t FastPath::table_path(std::uint32_t sw, std::array<std::uint8_t, 64>& out) const {
  const NodeId node = topo_.switch_node(sw);
  const std::uint32_t idx = topo_.port_index(node, 0);
  if (idx >= lids_.base_by_port.size() || !lids_.base_by_port[idx].valid()) return 0;
  const Lid lid = lids_.base_by_port[idx];
  std::size_t len = 0;
  out[len++] = sm_port_;
  for (std::uint32_t x = root_; x != sw;) {
    const PortNum e = rerouter_->entry(x, lid);
    if (e == 0 || e == routing::kDropPort || !link_up_now(x, e) || len == mad::kMaxHopCount)
      return 0;
    const routing::Port& port = topo_.port(topo_.switch_node(x), e);
    if (!port.connected() || topo_.node(port.remote_node).type != routing::NodeType::kSwitch)
      return 0;
    out[len++] = e;
    x = topo_.node(port.remote_node).switch_index;
  }
  return len;
}

std::vector<std::uint8_t> FastPath::path_to(std::uint32_t sw) const {
  std::array<std::uint8_t, 64> buf{};
  std::size_t len = path(sw, buf);
  if (len == 0) len = table_path(sw, buf);
  return std::vector<std::uint8_t>(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(len));
}

void FastPath::deliver_unsolicited(const discovery::Mad& m, const Unsolicited& unsolicited) {
  auto smp = mad::decode_smp(m.data);
  if (smp.ok() && !smp->is_response() && unsolicited) unsolicited(*smp, m);
}

Result<Identified> FastPath::identify(std::span<const std::uint32_t> issuer_lids,
                                      const Unsolicited& unsolicited) {
  const auto t0 = Clock::now();
  Identified out;
  suspect_.clear();
  std::vector<std::uint32_t> sws;
  for (std::uint32_t lid : issuer_lids) {
    const PortRef owner = lids_.owner_of(Lid{lid});
    if (!owner.node.valid() || owner.node.value >= topo_.num_nodes() ||
        topo_.node(owner.node).type != routing::NodeType::kSwitch) {
      ++out.not_switches;
      continue;
    }
    sws.push_back(topo_.node(owner.node).switch_index);
  }
  std::sort(sws.begin(), sws.end());
  sws.erase(std::unique(sws.begin(), sws.end()), sws.end());
  discovery::PipelineOptions popts;
  popts.window = config_.probe_window;
  popts.timeout = config_.timeout;
  popts.retries = config_.retries;
  popts.sm_lid = config_.sm_lid;

  // What a PortInfo answer of port p of switch s means (both kinds of probe).
  auto judge = [this, &out](std::uint32_t s, PortNum p, const mad::Smp& answer) {
    const mad::PortInfo pi = mad::PortInfo::decode(mad::data_of(answer));
    const bool down = pi.port_state == kPortStateDown || pi.port_phys_state != kPhysLinkUp;
    const bool believed_up = rerouter_->link_live(s, p);
    if (!down && !believed_up) out.link_up = true;
    if (!down || !link_up_now(s, p)) return;
    suspect_.push_back({s, p});
    // The far end of a switch link is down with it; keep it off the paths
    // of later probes.
    const routing::Port& port = topo_.port(topo_.switch_node(s), p);
    if (topo_.node(port.remote_node).type == routing::NodeType::kSwitch) {
      suspect_.push_back({topo_.node(port.remote_node).switch_index, port.remote_port});
    }
  };

  // Targeted probes (see fast_path.hpp).
  if (++mark_epoch_ == 0) {
    std::fill(trap_mark_.begin(), trap_mark_.end(), 0);
    std::fill(near_mark_.begin(), near_mark_.end(), 0);
    mark_epoch_ = 1;
  }
  const std::uint32_t epoch = mark_epoch_;
  for (std::uint32_t s : sws) trap_mark_[s] = epoch;
  auto trapped = [&](std::uint32_t s) { return trap_mark_[s] == epoch; };
  // Live switch links of s.
  auto for_each_live = [this](std::uint32_t s, auto&& f) {
    for (const SwitchLink& l : links_of(s)) {
      if (link_up_now(s, l.port)) f(l);
    }
  };
  const auto n_trapped = sws.size();
  if (n_trapped >= 2) {
    // A trapping switch with no trapping neighbour ("lonely") points at a
    // neighbour that did not trap; one that two or more lonely switches point
    // at is suspicious (a dead switch sends no trap).
    std::vector<std::uint8_t> lonely(n_trapped, 1);
    for (std::size_t i = 0; i < n_trapped; ++i) {
      for_each_live(sws[i], [&](const SwitchLink& l) { lonely[i] &= trapped(l.peer) ? 0 : 1; });
    }
    std::uint32_t most = 0;
    for (std::size_t i = 0; i < n_trapped; ++i) {
      if (lonely[i] == 0) continue;
      for_each_live(sws[i], [&](const SwitchLink& l) {
        const std::uint32_t x = l.peer;
        if (near_mark_[x] != epoch) {
          near_mark_[x] = epoch;
          near_count_[x] = 0;
        }
        most = std::max(most, ++near_count_[x]);
      });
    }
    // Only the switches most lonely trappers point at: a dead switch's
    // neighbours all trap, while a switch that merely shares some of them
    // (a sibling in a fat tree's pod) has fewer.
    auto suspicious = [&](std::uint32_t x) {
      return most >= 2 && near_mark_[x] == epoch && near_count_[x] == most;
    };
    // A tree path that crosses no link between two trapping switches and no
    // suspicious switch: no failure the traps point at can be on it.
    auto safe = [&](std::uint32_t s) {
      if (s != root_ && parent_[s] == kNone) return false;
      for (std::uint32_t x = s; x != root_; x = parent_[x]) {
        const std::uint32_t up = parent_[x];
        if (up == kNone || !link_up_now(up, parent_port_[x])) return false;  // tree out of date
        if ((trapped(x) && trapped(up)) || suspicious(up)) return false;
      }
      return true;
    };
    // A safe directed route to each trapping switch: its tree path, or one
    // hop from a neighbour with a safe tree path over a link the traps do
    // not point at (a dead switch's neighbours often hang below it in the
    // tree).
    auto safe_route = [&](std::uint32_t s, std::array<std::uint8_t, 64>& buf) -> std::size_t {
      if (safe(s)) return tree_path(s, buf);
      return one_hop_off(
          s, [&](std::uint32_t y) { return !trapped(y) && !suspicious(y) && safe(y); }, buf);
    };
    std::vector<std::array<std::uint8_t, 64>> paths(n_trapped);
    std::vector<std::size_t> lens(n_trapped, 0);
    for (std::size_t i = 0; i < n_trapped; ++i) {
      const std::uint32_t s = sws[i];
      lens[i] = safe_route(s, paths[i]);
      // None safe (every way in passes a suspicious switch, e.g. when they
      // tie): the route the whole-port probes below would take, if its
      // tree parent did not trap.
      if (lens[i] == 0 && (s == root_ || (parent_[s] != kNone && !trapped(parent_[s])))) {
        lens[i] = path(s, paths[i]);
      }
    }
    auto index_of = [&](std::uint32_t x) {
      return static_cast<std::size_t>(std::lower_bound(sws.begin(), sws.end(), x) - sws.begin());
    };
    auto probe_at = [&](discovery::SmpPipeline& pipe, std::uint32_t s, PortNum p,
                        std::span<const std::uint8_t> route) {
      pipe.submit(mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kPortInfo, p, route, 0), 0,
                  [&judge, s, p](Result<mad::Smp> r) {
                    // Unanswered: a trapping switch is probed whole below.
                    if (r.ok()) judge(s, p, *r);
                  });
    };
    auto probe = [&](discovery::SmpPipeline& pipe, std::size_t i, PortNum p) {
      probe_at(pipe, sws[i], p, std::span<const std::uint8_t>(paths[i].data(), lens[i]));
    };
    // Round 1: each link between two trapping switches, at one end (here
    // unless the other end has a route too and the smaller index); each
    // suspicious switch through one lonely neighbour's link to it.
    discovery::SmpPipeline round1(transport_, popts);
    round1.set_unsolicited_handler(unsolicited);
    std::vector<std::uint32_t> asked;  // suspicious switches asked about
    for (std::size_t i = 0; i < n_trapped; ++i) {
      if (lens[i] == 0) continue;
      const std::uint32_t s = sws[i];
      for_each_live(s, [&](const SwitchLink& l) {
        const PortNum p = l.port;
        const std::uint32_t x = l.peer;
        if (trapped(x)) {
          if (x > s || lens[index_of(x)] == 0) probe(round1, i, p);
        } else if (lonely[i] != 0 && suspicious(x) &&
                   std::find(asked.begin(), asked.end(), x) == asked.end()) {
          asked.push_back(x);  // asked once
          probe(round1, i, p);
        }
      });
    }
    SUBNETD_TRY(round1.run());
    out.targeted_smps = round1.stats().sent;
    // Round 2: a suspicious switch whose link was found down is likely dead:
    // every other link of it, read at the neighbour's end — also at
    // neighbours whose own trap was lost (its route to us ran through the
    // dead switch), so their links are not left for the trap's repeat.
    std::vector<std::uint32_t> dead;
    for (const routing::FailedLink& f : suspect_) {
      if (std::find(asked.begin(), asked.end(), f.sw) != asked.end()) dead.push_back(f.sw);
    }
    if (!dead.empty()) {
      std::sort(dead.begin(), dead.end());
      dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
      discovery::SmpPipeline round2(transport_, popts);
      round2.set_unsolicited_handler(unsolicited);
      std::vector<std::array<std::uint8_t, 64>> extra;  // routes of neighbours that did not trap
      for (std::uint32_t x : dead) {
        for_each_live(x, [&](const SwitchLink& l) {
          const std::uint32_t y = l.peer;
          const PortNum p = l.peer_port;
          if (trapped(y)) {
            const std::size_t i = index_of(y);
            if (lens[i] != 0) probe(round2, i, p);
            return;
          }
          extra.emplace_back();
          const std::size_t len = safe_route(y, extra.back());
          if (len != 0) {
            probe_at(round2, y, p, std::span<const std::uint8_t>(extra.back().data(), len));
          }
        });
      }
      SUBNETD_TRY(round2.run());
      out.targeted_smps += round2.stats().sent;
    }
    out.smps += out.targeted_smps;
    // Explained: an end of a link found down.
    if (!suspect_.empty()) {
      const auto explained = [&](std::uint32_t s) {
        return std::any_of(suspect_.begin(), suspect_.end(),
                           [s](const routing::FailedLink& f) { return f.sw == s; });
      };
      std::erase_if(sws, explained);
      out.explained = static_cast<std::uint32_t>(n_trapped - sws.size());
    }
  }

  // Every port of the rest. Phase 1: switches whose tree parent did not
  // trap; phase 2: the rest, with what was found so far avoided on their
  // paths.
  std::vector<std::uint32_t> phases[2];
  for (std::uint32_t s : sws) {
    const bool late = s != root_ && parent_[s] != kNone && trapped(parent_[s]);
    phases[late ? 1 : 0].push_back(s);
  }
  for (const auto& phase : phases) {
    if (phase.empty()) continue;
    discovery::SmpPipeline pipe(transport_, popts);
    pipe.set_unsolicited_handler(unsolicited);
    std::array<std::uint8_t, 64> buf{};
    for (std::uint32_t s : phase) {
      const NodeId node = topo_.switch_node(s);
      const std::size_t len = path(s, buf);
      if (len == 0) {
        // Cut off from us for now. If phase 1 found one of its links down,
        // that explains its trap; otherwise the heavy sweep must look.
        const bool explained = std::any_of(suspect_.begin(), suspect_.end(),
                                           [s](const routing::FailedLink& f) { return f.sw == s; });
        if (!explained) ++out.unanswered;
        continue;
      }
      for (unsigned pn = 1; pn <= topo_.node(node).num_ports; ++pn) {
        // Every port: a cable that was not there at the last sweep shows up
        // as a port that is up although no link is known on it (link_up).
        const auto p = static_cast<PortNum>(pn);
        pipe.submit(mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kPortInfo, p,
                                     std::span<const std::uint8_t>(buf.data(), len), 0),
                    0, [&judge, &out, s, p](Result<mad::Smp> r) {
                      if (!r.ok()) {
                        ++out.unanswered;
                        return;
                      }
                      judge(s, p, *r);
                    });
      }
    }
    SUBNETD_TRY(pipe.run());
    out.smps += pipe.stats().sent;
  }
  out.failed = suspect_;
  out.duration = Clock::now() - t0;
  return out;
}

Result<PushOutcome> FastPath::repair_and_push(std::span<const routing::FailedLink> failed,
                                              Clock::time_point start,
                                              std::chrono::nanoseconds start_transport,
                                              const Unsolicited& unsolicited) {
  PushOutcome o;
  auto repaired = rerouter_->repair(failed);
  suspect_.clear();
  if (!repaired.ok()) return repaired.error();
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
  if (rep.verdict != routing::RepairReport::Verdict::kRepaired) return o;
  const std::span<const routing::DirtyBlock> blocks = rep.blocks;
  const auto n = static_cast<std::uint32_t>(blocks.size());
  if (n == 0) {
    o.latency = o.confirmed = Clock::now() - start;
    o.transport_confirmed = transport_.now() - start_transport;
    return o;
  }

  // Per-switch queues of blocks (linked through next_in_switch_).
  if (++epoch_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    epoch_ = 1;
  }
  if (next_in_switch_.size() < n) {
    next_in_switch_.resize(n);
    attempts_.resize(n);
    answered_.resize(n);
  }
  std::vector<std::uint32_t>& order = order_;
  order.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t s = blocks[i].sw;
    next_in_switch_[i] = kNone;
    attempts_[i] = 0;
    answered_[i] = 0;
    if (stamp_[s] != epoch_) {
      stamp_[s] = epoch_;
      head_[s] = tail_[s] = i;
      in_flight_[s] = 0;
      order.push_back(s);
    } else {
      next_in_switch_[tail_[s]] = i;
      tail_[s] = i;
    }
  }
  o.switches_programmed = static_cast<std::uint32_t>(order.size());
  if (next_tid_ > kTidLast - n) next_tid_ = kTidFirst;
  const std::uint32_t tid0 = next_tid_;
  next_tid_ += n;
  const mad::AttrId attr = config_.extended_lids ? mad::AttrId::kExtLinearForwardingTable
                                                 : mad::AttrId::kLinearForwardingTable;
  // Paths of the switches being programmed, computed once per push.
  if (path_len_.size() < topo_.num_switches()) {
    path_len_.resize(topo_.num_switches());
    path_slot_.resize(topo_.num_switches());
  }
  if (tmpl_buf_.size() < order.size()) tmpl_buf_.resize(order.size());
  std::array<std::uint8_t, 64> route{};
  for (std::uint32_t k = 0; k < order.size(); ++k) {
    path_slot_[order[k]] = k;
    // A tree path (or one hop off one), else the repaired tables' own route
    // to the switch's LID, which avoids every failed link.
    std::size_t len = path(order[k], route);
    if (len == 0) len = table_path(order[k], route);
    path_len_[order[k]] = static_cast<std::uint8_t>(len);
    if (len != 0) {
      const mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, attr, 0,
                                            std::span<const std::uint8_t>(route.data(), len), 0);
      mad::encode_smp(smp, std::span<std::uint8_t, discovery::kMadSize>(tmpl_buf_[k]));
    }
  }

  std::uint32_t unsent = n, outstanding = 0, done = 0;
  Clock::time_point handed = start;
  auto send = [&](std::uint32_t i) -> Result<void> {
    const std::uint32_t s = blocks[i].sw;
    discovery::Mad m;
    m.data = tmpl_buf_[path_slot_[s]];
    // An LFT block's data is its 64 port bytes as they stand (LinearForwardingTable).
    mad::patch_smp(m.data, tid0 + i, blocks[i].block,
                   std::span<const std::uint8_t, mad::kSmpDataSize>(
                       rerouter_->block(s, blocks[i].block).data(), mad::kSmpDataSize));
    m.dlid = mad::kPermissiveLid;
    m.slid = mad::kPermissiveLid;
    SUBNETD_TRY(transport_.send(m));
    if (attempts_[i]++ == 0) {
      --unsent;
      if (unsent == 0) handed = Clock::now();
    }
    return {};
  };
  auto give_up = [&](std::uint32_t i) {
    ++o.blocks_failed;
    const std::uint32_t s = blocks[i].sw;
    if (o.failed_switches.empty() || o.failed_switches.back() != s) o.failed_switches.push_back(s);
  };
  // Sends the next queued blocks of switch s while its window allows.
  auto feed = [&](std::uint32_t s) -> Result<void> {
    while (in_flight_[s] < config_.switch_window && head_[s] != kNone) {
      const std::uint32_t i = head_[s];
      head_[s] = next_in_switch_[i];
      if (path_len_[s] == 0) {  // no directed route to it
        answered_[i] = 1;
        ++done;
        --unsent;
        if (unsent == 0) handed = Clock::now();
        give_up(i);
        continue;
      }
      SUBNETD_TRY(send(i));
      ++in_flight_[s];
      ++outstanding;
    }
    return {};
  };
  for (std::uint32_t s : order) SUBNETD_TRY(feed(s));

  auto deadline = transport_.now() + config_.timeout;
  while (done < n) {
    const auto now = transport_.now();
    std::chrono::microseconds wait{0};
    if (deadline > now) {
      wait = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now) +
             std::chrono::microseconds{1};
    }
    auto got = transport_.receive(outstanding == 0 ? std::chrono::microseconds{0} : wait);
    if (!got.ok()) return got.error();
    if (got->has_value()) {
      const discovery::Mad& m = **got;
      const auto peek = mad::peek_smp(m.data);
      if (!peek) continue;
      if (!peek->response) {
        deliver_unsolicited(m, unsolicited);
        continue;
      }
      const auto tid = static_cast<std::uint32_t>(peek->tid);
      if (tid < tid0 || tid - tid0 >= n || answered_[tid - tid0] != 0) continue;  // not ours
      const std::uint32_t i = tid - tid0;
      const std::uint32_t s = blocks[i].sw;
      answered_[i] = 1;
      ++done;
      --in_flight_[s];
      --outstanding;
      if (peek->status != mad::status::kOk) give_up(i);
      SUBNETD_TRY(feed(s));
      deadline = transport_.now() + config_.timeout;
      continue;
    }
    if (transport_.now() < deadline) continue;
    // Nothing for a whole timeout: resend what is in flight, or give up.
    for (std::uint32_t i = 0; i < n; ++i) {
      if (answered_[i] != 0 || attempts_[i] == 0) continue;
      const std::uint32_t s = blocks[i].sw;
      if (attempts_[i] > config_.retries) {
        answered_[i] = 1;
        ++done;
        --in_flight_[s];
        --outstanding;
        give_up(i);
        SUBNETD_TRY(feed(s));
        continue;
      }
      SUBNETD_TRY(send(i));
    }
    deadline = transport_.now() + config_.timeout;
  }
  o.latency = handed - start;
  o.confirmed = Clock::now() - start;
  o.transport_confirmed = transport_.now() - start_transport;
  return o;
}

void FastPath::reset() {
  rerouter_->reset();
  suspect_.clear();
  refresh_paths();
}

routing::Topology FastPath::live_topology() const {
  routing::Topology t = topo_;
  for (std::uint32_t s = 0; s < t.num_switches(); ++s) {
    const NodeId node = t.switch_node(s);
    for (unsigned pn = 1; pn <= t.node(node).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      if (!rerouter_->link_known(s, p) || rerouter_->link_live(s, p)) continue;
      const routing::Port& port = t.port(node, p);
      if (!port.connected()) continue;
      const PortRef far{port.remote_node, port.remote_port};
      t.disconnect({node, p});
      t.mutable_port(node, p).state = routing::PortState::kDown;
      t.mutable_port(far.node, far.port).state = routing::PortState::kDown;
    }
  }
  return t;
}

}  // namespace subnetd::daemon

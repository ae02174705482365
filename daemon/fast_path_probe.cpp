// FastPath::identify: which ports explain the traps (see fast_path.hpp).

#include <fmt/format.h>

#include <algorithm>

#include "daemon/fast_path.hpp"

namespace subnetd::daemon {
namespace {

namespace mad = discovery::mad;

constexpr std::uint8_t kPortStateDown = 1;
constexpr std::uint8_t kPhysLinkUp = 5;

Error stopped(const discovery::MadEngine& engine) {
  return engine.error() ? *engine.error()
                        : Error{Errc::kCancelled, "fast path: the MAD engine stopped"};
}

}  // namespace

boost::asio::awaitable<Result<Identified>> FastPath::identify(
    discovery::MadEngine& engine, std::span<const std::uint32_t> issuer_lids) {
  SUBNETD_ASSERT_ON(engine.strand());
  affinity_.check();
  const auto t0 = Clock::now();
  Identified out;
  suspect_.clear();
  std::vector<SwitchIndex> sws;
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
  discovery::FlowOptions popts;
  popts.window = config_.probe_window;
  popts.timeout = config_.timeout;
  popts.retries = config_.retries;
  popts.sm_lid = config_.sm_lid;
  popts.urgent = true;  // a sweep's or a programming pass's SMPs wait meanwhile

  // What a PortInfo answer of port p of switch s means (both kinds of probe).
  auto judge = [this, &out](SwitchIndex s, PortNum p, const mad::Smp& answer) {
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
  for (const SwitchIndex s : sws) trap_mark_[s.value] = epoch;
  auto trapped = [&](SwitchIndex s) { return trap_mark_[s.value] == epoch; };
  // Live switch links of s.
  auto for_each_live = [this](SwitchIndex s, auto&& f) {
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
        const std::uint32_t x = l.peer.value;
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
    auto suspicious = [&](SwitchIndex x) {
      return most >= 2 && near_mark_[x.value] == epoch && near_count_[x.value] == most;
    };
    // A tree path that crosses no link between two trapping switches and no
    // suspicious switch: no failure the traps point at can be on it.
    auto safe = [&](SwitchIndex s) {
      if (s != root_ && parent_[s.value] == kNoSwitch) return false;
      for (SwitchIndex x = s; x != root_; x = parent_[x.value]) {
        const SwitchIndex up = parent_[x.value];
        if (up == kNoSwitch || !link_up_now(up, parent_port_[x.value])) {
          return false;  // tree out of date
        }
        if ((trapped(x) && trapped(up)) || suspicious(up)) return false;
      }
      return true;
    };
    // A safe directed route to each trapping switch: its tree path, or one
    // hop from a neighbour with a safe tree path over a link the traps do
    // not point at (a dead switch's neighbours often hang below it in the
    // tree).
    auto safe_route = [&](SwitchIndex s, std::array<std::uint8_t, 64>& buf) -> std::size_t {
      if (safe(s)) return tree_path(s, buf);
      return one_hop_off(
          s, [&](SwitchIndex y) { return !trapped(y) && !suspicious(y) && safe(y); }, buf);
    };
    std::vector<std::array<std::uint8_t, 64>> paths(n_trapped);
    std::vector<std::size_t> lens(n_trapped, 0);
    for (std::size_t i = 0; i < n_trapped; ++i) {
      const SwitchIndex s = sws[i];
      lens[i] = safe_route(s, paths[i]);
      // None safe (every way in passes a suspicious switch, e.g. when they
      // tie): the route the whole-port probes below would take, if its
      // tree parent did not trap.
      if (lens[i] == 0 &&
          (s == root_ || (parent_[s.value] != kNoSwitch && !trapped(parent_[s.value])))) {
        lens[i] = path(s, paths[i]);
      }
    }
    auto index_of = [&](SwitchIndex x) {
      return static_cast<std::size_t>(std::lower_bound(sws.begin(), sws.end(), x) - sws.begin());
    };
    auto probe_at = [&](discovery::Flow& pipe, SwitchIndex s, PortNum p,
                        std::span<const std::uint8_t> route) {
      pipe.submit(probe_smp(p, route), 0, [&judge, s, p](Result<mad::Smp> r) {
        // Unanswered: a trapping switch is probed whole below.
        if (r.ok()) judge(s, p, *r);
      });
    };
    auto probe = [&](discovery::Flow& pipe, std::size_t i, PortNum p) {
      probe_at(pipe, sws[i], p, std::span<const std::uint8_t>(paths[i].data(), lens[i]));
    };
    // Round 1: each link between two trapping switches, at one end (here
    // unless the other end has a route too and the smaller index); each
    // suspicious switch through one lonely neighbour's link to it.
    discovery::Flow round1(engine, popts);
    std::vector<SwitchIndex> asked;  // suspicious switches asked about
    for (std::size_t i = 0; i < n_trapped; ++i) {
      if (lens[i] == 0) continue;
      const SwitchIndex s = sws[i];
      for_each_live(s, [&](const SwitchLink& l) {
        const PortNum p = l.port;
        const SwitchIndex x = l.peer;
        if (trapped(x)) {
          if (x > s || lens[index_of(x)] == 0) probe(round1, i, p);
        } else if (lonely[i] != 0 && suspicious(x) &&
                   std::find(asked.begin(), asked.end(), x) == asked.end()) {
          asked.push_back(x);  // asked once
          probe(round1, i, p);
        }
      });
    }
    co_await round1.drained();
    if (engine.stopped()) co_return stopped(engine);
    out.targeted_smps = round1.stats().sent;
    // Round 2: a suspicious switch whose link was found down is likely dead:
    // every other link of it, read at the neighbour's end — also at
    // neighbours whose own trap was lost (its route to us ran through the
    // dead switch), so their links are not left for the trap's repeat.
    std::vector<SwitchIndex> dead;
    for (const routing::FailedLink& f : suspect_) {
      if (std::find(asked.begin(), asked.end(), f.sw) != asked.end()) dead.push_back(f.sw);
    }
    if (!dead.empty()) {
      std::sort(dead.begin(), dead.end());
      dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
      discovery::Flow round2(engine, popts);
      std::vector<std::array<std::uint8_t, 64>> extra;  // routes of neighbours that did not trap
      for (const SwitchIndex x : dead) {
        for_each_live(x, [&](const SwitchLink& l) {
          const SwitchIndex y = l.peer;
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
      co_await round2.drained();
      if (engine.stopped()) co_return stopped(engine);
      out.targeted_smps += round2.stats().sent;
    }
    out.smps += out.targeted_smps;
    // Explained: an end of a link found down.
    if (!suspect_.empty()) {
      const auto explained = [&](SwitchIndex s) {
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
  std::vector<SwitchIndex> phases[2];
  for (const SwitchIndex s : sws) {
    const bool late = s != root_ && parent_[s.value] != kNoSwitch && trapped(parent_[s.value]);
    phases[late ? 1 : 0].push_back(s);
  }
  for (const auto& phase : phases) {
    if (phase.empty()) continue;
    discovery::Flow pipe(engine, popts);
    std::array<std::uint8_t, 64> buf{};
    for (const SwitchIndex s : phase) {
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
        pipe.submit(probe_smp(p, std::span<const std::uint8_t>(buf.data(), len)), 0,
                    [&judge, &out, s, p](Result<mad::Smp> r) {
                      if (!r.ok()) {
                        ++out.unanswered;
                        return;
                      }
                      judge(s, p, *r);
                    });
      }
    }
    co_await pipe.drained();
    if (engine.stopped()) co_return stopped(engine);
    out.smps += pipe.stats().sent;
  }
  out.failed = suspect_;
  out.duration = Clock::now() - t0;
  co_return out;
}

}  // namespace subnetd::daemon

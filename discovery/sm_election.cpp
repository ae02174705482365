// SmElection; see sm_election.hpp.

#include "discovery/sm_election.hpp"

#include <fmt/format.h>

#include "discovery/mad/smp.hpp"

namespace subnetd::discovery {

namespace {

std::string who(const PeerSm& p) {
  return fmt::format("SM {:#018x} (priority {}, {})", p.guid.value, p.priority,
                     sm_state_name(p.state));
}

}  // namespace

const char* sm_state_name(SmState s) {
  switch (s) {
    case SmState::kNotActive:
      return "NOTACTIVE";
    case SmState::kDiscovering:
      return "DISCOVERING";
    case SmState::kStandby:
      return "STANDBY";
    case SmState::kMaster:
      return "MASTER";
  }
  return "?";
}

const char* sm_control_name(std::uint32_t attr_mod) {
  switch (static_cast<SmControl>(attr_mod)) {
    case SmControl::kHandover:
      return "HANDOVER";
    case SmControl::kAcknowledge:
      return "ACKNOWLEDGE";
    case SmControl::kDisable:
      return "DISABLE";
    case SmControl::kStandby:
      return "STANDBY";
    case SmControl::kDiscover:
      return "DISCOVER";
  }
  return "?";
}

bool outranks(SmRank a, SmRank b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.guid.value < b.guid.value;
}

SmElection::SmElection(ElectionOptions opts) : opts_(opts) {
  if (opts_.poll_retries == 0) opts_.poll_retries = 1;
}

bool SmElection::accepts(const PeerSm& p) const {
  if (p.guid == opts_.self.guid) return false;
  return opts_.sm_key == 0 || p.sm_key == opts_.sm_key;
}

template <class Pred>
std::optional<PeerSm> SmElection::highest(std::span<const PeerSm> peers, Pred pred) const {
  std::optional<PeerSm> best;
  for (const PeerSm& p : peers) {
    if (!accepts(p) || p.state == SmState::kNotActive || !pred(p)) continue;
    if (!best || outranks(p.rank(), best->rank())) best = p;
  }
  return best;
}

ElectionActions SmElection::follow(const PeerSm& p, std::string why) {
  ElectionActions a;
  if (state_ != SmState::kStandby) a.enter = SmState::kStandby;
  state_ = SmState::kStandby;
  master_ = p.guid;
  polled_ = p.guid;
  missed_ = 0;
  handover_pending_.reset();
  a.poll = p.guid;
  a.trap144_to = p.guid;  // it learns of us; if we outrank it, it hands over
  a.why = std::move(why);
  return a;
}

ElectionActions SmElection::lose_master(std::string why) {
  ElectionActions a;
  a.enter = SmState::kDiscovering;
  a.stop_polling = true;
  a.sweep = true;
  a.why = std::move(why);
  state_ = SmState::kDiscovering;
  master_.reset();
  polled_.reset();
  missed_ = 0;
  return a;
}

ElectionActions SmElection::discovery_done(std::span<const PeerSm> peers) {
  if (state_ != SmState::kDiscovering) return {};
  if (auto m = highest(peers, [](const PeerSm& p) { return p.state == SmState::kMaster; })) {
    return follow(*m, fmt::format("{} is master", who(*m)));
  }
  const SmRank self = opts_.self;
  if (auto h = highest(peers, [self](const PeerSm& p) { return outranks(p.rank(), self); })) {
    return follow(*h, fmt::format("{} outranks us (priority {})", who(*h), self.priority));
  }
  ElectionActions a;
  a.enter = SmState::kMaster;
  a.sweep = true;
  std::size_t others = 0;
  for (const PeerSm& p : peers) others += accepts(p) ? 1 : 0;
  a.why = others == 0 ? std::string("no other SM found")
                      : fmt::format("no master, and we outrank the {} other SM(s)", others);
  state_ = SmState::kMaster;
  master_ = opts_.self.guid;
  polled_.reset();
  return a;
}

ElectionActions SmElection::master_sweep_done(std::span<const PeerSm> peers) {
  if (state_ != SmState::kMaster || handover_pending_) return {};
  const SmRank self = opts_.self;
  ElectionActions a;
  if (auto h = highest(peers, [self](const PeerSm& p) { return outranks(p.rank(), self); })) {
    handover_pending_ = h->guid;
    a.handover_to = h->guid;
    a.why = fmt::format("{} outranks us (priority {}): handing over", who(*h), self.priority);
    return a;
  }
  if (auto m = highest(peers, [](const PeerSm& p) { return p.state == SmState::kMaster; })) {
    // Two masters (a partition healed): we outrank it; it hands over to us
    // once its sweep finds us. Poll it meanwhile.
    if (polled_ != m->guid) {
      polled_ = m->guid;
      missed_ = 0;
      a.poll = m->guid;
      a.why = fmt::format("{} is master too; we outrank it and wait for its handover", who(*m));
    }
    return a;
  }
  if (polled_) {
    // The other master is gone from the fabric.
    polled_.reset();
    a.stop_polling = true;
    a.why = "the other master is no longer in the fabric";
  }
  return a;
}

ElectionActions SmElection::handover_answered(Guid to) {
  if (state_ != SmState::kMaster || handover_pending_ != to) return {};
  PeerSm p;
  p.guid = to;
  ElectionActions a = follow(p, fmt::format("handed over to SM {:#018x}", to.value));
  a.trap144_to.reset();  // it knows us: it just took over from us
  return a;
}

ElectionActions SmElection::handover_failed(Guid to) {
  if (handover_pending_ != to) return {};
  handover_pending_.reset();
  ElectionActions a;
  a.why = fmt::format("SM {:#018x} did not take the handover; we stay master", to.value);
  return a;
}

ElectionActions SmElection::poll_answered(const PeerSm& p) {
  if (!polled_ || p.guid != *polled_ || !accepts(p)) return {};
  missed_ = 0;
  ElectionActions a;
  if (state_ == SmState::kStandby) {
    if (p.state == SmState::kMaster) {
      // Alive. A master we outrank is reminded until it hands over.
      if (outranks(opts_.self, p.rank())) a.trap144_to = p.guid;
      return a;
    }
    if (p.state == SmState::kNotActive ||
        (p.state == SmState::kStandby && outranks(opts_.self, p.rank()))) {
      return lose_master(fmt::format("{} is no longer master", who(p)));
    }
    return a;  // a higher SM still discovering, or standing by for another
  }
  if (state_ == SmState::kMaster && p.state == SmState::kMaster) {
    if (outranks(p.rank(), opts_.self)) {
      a.sweep = true;  // the sweep's end hands over to it
      a.why = fmt::format("{} outranks us", who(p));
    } else {
      a.trap144_to = p.guid;
    }
  }
  return a;
}

ElectionActions SmElection::poll_missed() {
  if (!polled_) return {};
  if (++missed_ < opts_.poll_retries) return {};
  const Guid lost = *polled_;
  if (state_ == SmState::kStandby) {
    return lose_master(
        fmt::format("master SM {:#018x} lost: {} polls unanswered", lost.value, missed_));
  }
  ElectionActions a;
  polled_.reset();
  missed_ = 0;
  a.stop_polling = true;
  a.sweep = true;
  a.why = fmt::format("SM {:#018x}, another master, stopped answering", lost.value);
  return a;
}

SmElection::SetReply SmElection::set_received(std::uint32_t attr_mod, const PeerSm& from) {
  SetReply r;
  r.status = mad::status::kInvalidField;
  if (!accepts(from)) return r;
  const auto ctl = static_cast<SmControl>(attr_mod);
  const bool from_master = from.state == SmState::kMaster;
  const bool from_standby = from.state == SmState::kStandby;
  ElectionActions& a = r.actions;
  switch (ctl) {
    case SmControl::kHandover:
      if (!from_master || state_ == SmState::kNotActive) return r;
      if (state_ == SmState::kMaster) {
        // The other master hands its part of the fabric over: sweep it.
        a.sweep = true;
        if (polled_ == from.guid) {
          polled_.reset();
          a.stop_polling = true;
        }
      } else {
        a.enter = SmState::kMaster;
        a.sweep = true;
        a.stop_polling = polled_.has_value();
        a.acknowledge_to = from.guid;
        state_ = SmState::kMaster;
        polled_.reset();
      }
      master_ = opts_.self.guid;
      missed_ = 0;
      a.why = fmt::format("handover from {}", who(from));
      break;
    case SmControl::kAcknowledge:
      if (!from_standby) return r;
      if (state_ == SmState::kMaster && handover_pending_ == from.guid) {
        // The acknowledgement overtook the answer to our HANDOVER (both
        // come from the new master, the answer first, but the answer's
        // waiter may run later): the handover is done either way.
        r.status = mad::status::kOk;
        r.actions = handover_answered(from.guid);
        return r;
      }
      if (state_ != SmState::kStandby) return r;
      break;  // nothing to do: we moved to STANDBY when the handover was answered
    case SmControl::kDisable:
      if (!from_master || state_ != SmState::kStandby) return r;
      a.enter = SmState::kNotActive;
      a.stop_polling = true;
      a.why = fmt::format("disabled by {}", who(from));
      state_ = SmState::kNotActive;
      polled_.reset();
      break;
    case SmControl::kStandby:
      if (!from_master || state_ != SmState::kNotActive) return r;
      return SetReply{mad::status::kOk,
                      follow(from, fmt::format("told to stand by by {}", who(from)))};
    case SmControl::kDiscover:
      if (!from_master || state_ != SmState::kStandby) return r;
      r.status = mad::status::kOk;
      r.actions = lose_master(fmt::format("told to discover by {}", who(from)));
      return r;
    default:
      return r;
  }
  r.status = mad::status::kOk;
  return r;
}

ElectionActions SmElection::set_priority(std::uint8_t priority) {
  opts_.self.priority = priority;
  ElectionActions a;
  if (state_ == SmState::kStandby && master_) {
    a.trap144_to = *master_;  // it compares again, and hands over if we outrank it
    a.why = fmt::format("priority now {}", priority);
  } else if (state_ == SmState::kMaster) {
    a.sweep = true;  // its end hands over to a peer that now outranks us
    a.why = fmt::format("priority now {}", priority);
  }
  return a;
}

}  // namespace subnetd::discovery

#pragma once
// SmElection: which SM is master, by IBA 14.4's SMInfo rules, as a pure
// state machine (issue 17). It sends nothing and keeps no time: the SM core
// feeds it what the sweeps, the polls and incoming SMInfo Sets say, and
// carries out the actions it returns (state changes, SMInfo Sets to send,
// trap 144, polling, sweeps). Tested alone (sm_election_test.cpp).
//
// Rank (IBA 14.4.1.1): the higher priority wins; between equal priorities
// the lower port GUID. Peers are the SMs the sweep found (SM-capable ports
// answering SMInfo Get) whose SM_Key equals ours, or all when ours is 0 (as
// OpenSM: an SM with another key is ignored). NOTACTIVE peers take no part.
//
// DISCOVERING (at start, and after a master is lost): after the first
// sweep, a peer in MASTER is followed (STANDBY, polled, and told with trap
// 144 that we exist: a master that finds us higher hands over). Without
// one, a higher peer still DISCOVERING or STANDBY is followed the same way;
// else we become MASTER.
// MASTER: after each heavy sweep, the highest peer that outranks us gets a
// HANDOVER; once it answers we are STANDBY, polling it. Another MASTER that
// we outrank (a healed split brain) is polled until it hands over to us
// (its own sweep finds us higher); if it stops answering, we sweep again.
// STANDBY: the master is polled; `poll_retries` polls in a row unanswered
// and it is lost: DISCOVERING, and a sweep decides again. A master we
// outrank gets a trap 144 at each answered poll, until it hands over.
// NOTACTIVE (after DISABLE): only STANDBY from a master brings us back.
//
// SMInfo Set from a peer (IBA 14.4.3; OpenSM's legality rules): HANDOVER,
// DISABLE, STANDBY and DISCOVER only from a sender in MASTER, ACKNOWLEDGE
// only from one in STANDBY, and each only in the states that accept it
// (HANDOVER: DISCOVERING, STANDBY, MASTER; DISABLE, DISCOVER, ACKNOWLEDGE:
// STANDBY; STANDBY: NOTACTIVE). An ACKNOWLEDGE from the SM we handed over
// to is also taken while we still wait for its answer to the HANDOVER: it
// completes the handover. Anything else is refused with status
// "invalid field" and changes nothing: a bogus Set from a non-master is
// ignored.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "discovery/sm_agent.hpp"
#include "routing/ids.hpp"

namespace subnetd::discovery {

// SMInfo Set attribute modifiers (IBA 14.2.5.13).
enum class SmControl : std::uint32_t {
  kHandover = 1,
  kAcknowledge = 2,
  kDisable = 3,
  kStandby = 4,
  kDiscover = 5,
};
const char* sm_state_name(SmState s);
const char* sm_control_name(std::uint32_t attr_mod);

struct SmRank {
  std::uint8_t priority = 0;  // 0..15
  Guid guid;                  // the SM's port GUID
};
// `a` outranks `b`: higher priority, or equal priority and lower GUID.
bool outranks(SmRank a, SmRank b);

// What a peer's SMInfo (an answer to our Get, or the data of its Set) says.
struct PeerSm {
  Guid guid;
  std::uint8_t priority = 0;
  SmState state = SmState::kNotActive;
  std::uint64_t sm_key = 0;
  SmRank rank() const { return SmRank{priority, guid}; }
};

struct ElectionOptions {
  SmRank self;
  std::uint64_t sm_key = 0;
  // Polls of the master in a row without an answer before it is lost.
  unsigned poll_retries = 3;
};

// What the caller does, in this order: enter the state, send the SMInfo
// Sets and the trap, change what it polls, sweep.
struct ElectionActions {
  std::optional<SmState> enter;
  std::optional<Guid> handover_to;  // SMInfo Set(HANDOVER) to this SM
  // SMInfo Set(ACKNOWLEDGE) to this SM, its SMInfo in STANDBY: the state
  // we acknowledged from (OpenSM refuses an ACKNOWLEDGE whose sender is not
  // STANDBY, and has left MASTER itself when our answer reached it).
  std::optional<Guid> acknowledge_to;
  std::optional<Guid> trap144_to;  // trap 144 (SM priority) to this master
  std::optional<Guid> poll;        // poll this SM from now on
  bool stop_polling = false;
  bool sweep = false;  // a heavy sweep
  std::string why;     // one line, for the log and the role event
  bool empty() const {
    return !enter && !handover_to && !acknowledge_to && !trap144_to && !poll && !stop_polling &&
           !sweep;
  }
};

class SmElection {
 public:
  explicit SmElection(ElectionOptions opts);

  SmState state() const { return state_; }
  const SmRank& self() const { return opts_.self; }
  // The master we follow (STANDBY), or our own GUID as master.
  std::optional<Guid> master() const { return master_; }
  // The SM we poll: the master we follow, or another master we wait for.
  std::optional<Guid> polled() const { return polled_; }
  // A handover we sent and wait to be answered.
  std::optional<Guid> handover_pending() const { return handover_pending_; }
  unsigned missed_polls() const { return missed_; }

  // Whether a peer takes part (SM_Key, not ourselves).
  bool accepts(const PeerSm& p) const;

  // The first sweep in DISCOVERING ended; `peers`: every SM it found.
  ElectionActions discovery_done(std::span<const PeerSm> peers);
  // A heavy sweep as MASTER ended; `peers`: every SM it found.
  ElectionActions master_sweep_done(std::span<const PeerSm> peers);
  // Our HANDOVER to `to` was answered with status 0.
  ElectionActions handover_answered(Guid to);
  // Our HANDOVER to `to` failed (timeout, or refused).
  ElectionActions handover_failed(Guid to);
  // A poll of polled() answered with `p`.
  ElectionActions poll_answered(const PeerSm& p);
  // A poll of polled() unanswered (after the transport's own retries).
  ElectionActions poll_missed();

  struct SetReply {
    std::uint16_t status = 0;  // MAD status for the GetResp: 0, or "invalid field"
    ElectionActions actions;
  };
  // An SMInfo Set with `attr_mod` from `from` (its SMInfo as sent).
  SetReply set_received(std::uint32_t attr_mod, const PeerSm& from);

  // Our priority changed (SIGHUP).
  ElectionActions set_priority(std::uint8_t priority);
  // The SM_Key and the poll limit changed (SIGHUP); they apply to what
  // comes next.
  void set_sm_key(std::uint64_t key) { opts_.sm_key = key; }
  void set_poll_retries(unsigned n) { opts_.poll_retries = n == 0 ? 1 : n; }

 private:
  // The highest accepted peer not NOTACTIVE that satisfies `pred`, if any.
  template <class Pred>
  std::optional<PeerSm> highest(std::span<const PeerSm> peers, Pred pred) const;
  ElectionActions follow(const PeerSm& p, std::string why);
  ElectionActions lose_master(std::string why);

  ElectionOptions opts_;
  SmState state_ = SmState::kDiscovering;
  std::optional<Guid> master_;
  std::optional<Guid> polled_;
  std::optional<Guid> handover_pending_;
  unsigned missed_ = 0;
};

}  // namespace subnetd::discovery

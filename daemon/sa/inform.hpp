#pragma once
// Event subscriptions (InformInfo, IBA 13.4.8.3 and 15.2.5.12) and the
// Reports that deliver notices to subscribers (IBA 13.4.8.2, 15.2.2).
//
//  - InformInfo Set with Subscribe 1: the requester's port (found by the
//    request's source LID) subscribes to the notices the InformInfo
//    selects; the answer (GetResp) echoes the InformInfo. IsGeneric must
//    be 1 (vendor notices are not produced here) and QPN non-zero (the QP
//    the Reports go to, QP1 in practice), else ERR_REQ_INVALID. A second
//    identical subscription replaces the first (a client re-subscribing
//    after an SM change gets no duplicates).
//  - InformInfo Set with Subscribe 0: removes the requester's subscription
//    with the same GID, LID range, IsGeneric, Type, TrapNumber, QPN and
//    ProducerType; ERR_REQ_INVALID when there is none, as OpenSM.
//  - InformInfoRecord Get/GetTable: one record per subscription whose
//    subscriber shares a partition with the requester, Enum numbering a
//    subscriber's subscriptions from 0.
//
// Matching a notice (OpenSM's rules, from IBA o13-17.1.x): the InformInfo
// GID, when not zero, must be the notice's IssuerGID; with GID zero, a
// LIDRangeBegin other than 0xFFFF must bracket the IssuerLID (LIDRangeEnd
// 0 means the begin alone); IsGeneric must agree; Type, TrapNumber and
// ProducerType agree or are all-ones. For GID in/out of service the
// subscriber must also share a partition with the port the notice names;
// for a multicast group created or deleted it must be a member of the
// group's partition.
//
// The notices produced (notices_between): comparing two published
// snapshots, trap 64 (GID in service) for every endport (a CA or router
// port that is ACTIVE with a LID, or a switch's port 0 with a LID) that is
// new, trap 65 (GID out of service) for every one gone, both issued by the
// SM (type 3, subnet management; producer 4, class manager; the SM's LID
// and GID), as OpenSM sends them; and trap 128 (link state change) for
// every switch a port of which changed state, issued by that switch; and
// trap 66 (multicast group created) and 67 (deleted) for every group, by
// MGID, that is new or gone, issued by the SM as 64 and 65 with the MGID
// where their GID goes. Traps the SMAs send the SM are forwarded as
// received (forwarded_notice). A subscriber that went out of service loses its
// subscriptions (it subscribes again when it comes back, as IBA asks of
// clients).
//
// Reports are sent once, not resent until a ReportResp arrives: a client
// that misses one reads the state again (every client re-queries on
// reconnect anyway); ReportResps are counted.
//
// Threading: InformRegistry is locked inside; everything here runs on any
// thread.

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"
#include "discovery/mad/smp.hpp"
#include "state/path_record.hpp"

namespace subnetd::daemon::sa {

inline constexpr std::size_t kInformInfoSize = 36;
inline constexpr std::size_t kNoticeSize = 80;  // the SA's Notice: 64 bytes + IssuerGID
inline constexpr std::size_t kMaxSubscriptions = 65536;

using Gid = std::array<std::uint8_t, 16>;

struct Subscription {
  Gid subscriber{};
  std::array<std::uint8_t, kInformInfoSize> info{};
  // The generation of the snapshot the subscription was answered against:
  // it hears of changes published after it only (SaAgent::reports()).
  std::uint64_t since = 0;
};

class InformRegistry {
 public:
  // Adds (or replaces an identical one, which keeps its `since`: the
  // subscriber was listening already) subscription; false when full.
  bool subscribe(const Subscription& s);
  // Removes the subscription of `subscriber` that `info` names; false when
  // there is none.
  bool unsubscribe(const Gid& subscriber, std::span<const std::uint8_t> info);
  // Every subscription of `subscriber` goes (its port left the subnet).
  void drop_subscriber(const Gid& subscriber);
  std::vector<Subscription> snapshot() const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<Subscription> subs_;  // in subscription order
};

// A notice the SA delivers: the generic Notice and its IssuerGID.
struct SaNotice {
  discovery::mad::Notice notice;
  Gid issuer_gid{};
  // The 80 bytes of the Notice attribute.
  std::array<std::uint8_t, kNoticeSize> bytes() const;
  // The GID of a trap 64/65/66/67 (DataDetails bytes 6..21).
  Gid subject_gid() const;
  // Trap 66/67: the group's P_Key (its partition's subscribers only).
  std::uint16_t group_pkey = 0;
  // A trap an SMA sent (forwarded_notice): its partitions' subscribers only.
  bool forwarded = false;
};

AttrAnswer answer_inform(const discovery::mad::sa::SaMad& req, Lid requester,
                         const state::FabricState& st, const SaAgentOptions& opts,
                         const state::PathIndex& index, InformRegistry& registry);

// The notices that tell the change from `before` to `after` (see above).
std::vector<SaNotice> notices_between(const state::FabricState& before,
                                      const state::FabricState& after, std::uint64_t subnet_prefix);

// A trap an SMA sent the SM, as the SA forwards it to subscribers (as
// OpenSM does): the notice as received, with the IssuerGID of the port that
// has its IssuerLID in `st` (zero when none has). Only subscribers that
// share a partition with that port hear it (a port's errors and bad keys
// are its partition's business). The SM forwards every received trap but
// 128, which notices_between tells from the snapshots (a switch whose trap
// was lost included), and a resent copy of one (the same issuer and TID).
SaNotice forwarded_notice(const discovery::mad::Notice& n, const state::FabricState& st,
                          std::uint64_t subnet_prefix);

// Whether `s` asks for `n` (the matching rules above), `st` the snapshot
// the notice was made from.
bool wants(const Subscription& s, const SaNotice& n, const state::FabricState& st,
           const state::PathIndex& index, std::uint64_t subnet_prefix);

}  // namespace subnetd::daemon::sa

#pragma once
// SaAgent: subnetd's Subnet Administration (IBA vol. 1, ch. 15). It answers
// SA queries (management class 0x03) from a published FabricState, so it
// never blocks the SM and never sees a half-programmed fabric.
//
// Served today: ClassPortInfo (Get); NodeRecord, PortInfoRecord,
// LinkRecord, PathRecord, LinearForwardingTableRecord, P_KeyTableRecord,
// SwitchInfoRecord, MulticastForwardingTableRecord, SMInfoRecord,
// GuidInfoRecord, SLtoVLMappingTableRecord and VLArbitrationTableRecord
// (Get and GetTable; the tables are built in
// daemon/sa/records.hpp); MCMemberRecord (Get, GetTable, Set, Delete:
// daemon/sa/mcmember.hpp); ServiceRecord (the same, with leases:
// daemon/sa/service_record.hpp); InformInfo (Set: subscribe and
// unsubscribe) and InformInfoRecord (Get, GetTable), with Reports of GID
// in/out of service and link state changes to subscribers
// (daemon/sa/inform.hpp); MultiPathRecord (GetMulti, see multipath() in
// sa_agent.cpp). Every other attribute or method is answered with the IBA
// status for it (method/attribute unsupported), never dropped; malformed
// MADs and responses are counted and dropped (ReportResps are counted as
// acknowledgements).
//
// Semantics, as OpenSM and the Linux SA clients expect them:
//  - a request with a non-zero SM_Key is trusted, and answered only when
//    the key is ours (ERR_REQ_INVALID otherwise); P_KeyTableRecords go to
//    trusted requests only, and others' multicast memberships are shown
//    to them alone (daemon/sa/mcmember.hpp);
//  - a query is a template record plus a ComponentMask; a record answers it
//    when it agrees on every selected component (sa::matches);
//  - Get answers exactly one record: none is ERR_NO_RECORDS, more is
//    ERR_TOO_MANY_RECORDS; GetTable answers any number, an empty table
//    included, in RMPP segments;
//  - NodeRecord: one per switch (its port-0 LID) and one per CA/router port
//    with a LID (LID, PortGUID and LocalPortNum of that port);
//  - PortInfoRecord: one per port the sweep read (a switch's 0..N, a CA's
//    1..N) under its endport's LID: the PortInfo as read, with the
//    PortState, and on endports the LID, LMC, MasterSMLID and GID prefix
//    the SM programmed, patched in;
//  - LinkRecord: one per direction of every switch-attached cable, from
//    the LID of the node at each end (a switch's port-0 LID, a CA port's
//    own);
//  - LinearForwardingTableRecord: the published tables (what the SM
//    programmed), blocks 0 .. highest LID in use / 64, for switches with a
//    16-bit LID;
//  - PathRecord: the source is the SGID or SLID given, else the requester;
//    the destination the DGID or DLID given, else every endport (GetTable).
//    A path exists when the LFTs deliver it (routing::trace_path). MTU is
//    the smallest MTUCap on the way, rate the slowest link (width x speed),
//    both "exactly"; PacketLifeTime is the configured one; SL 0, P_Key
//    0xFFFF (the default partition) and Reversible until partitions and
//    QoS exist; NumbPath 0 (a question, not an answer, as OpenSM has it).
//    tests/interop/sa_compare.py compares every field with OpenSM's. Selectors in the query
//    (greater, less, exactly, largest) filter what is offered; a P_Key or SL the path cannot give
//    yields no record. GIDs outside the subnet prefix, or naming no port, are ERR_REQ_INVALID_GID.
//    A multicast DGID (and no DLID) asks for the path to that group: its
//    MLID and the group's properties, NumbPath 1, not reversible, for a
//    source that holds the group's P_Key (and is a member when named).
//
// PathRecords walk the tables through a state::PathIndex of the snapshot's
// topology (built on the first query after the topology changes), which
// answers exactly what state::path_properties() and gRPC's GetPathRecord
// answer, at one LFT read per switch.
//
// Threading: answer() reads its arguments, its counters (atomics) and the
// PathIndex cache (a mutex held to fetch the index): callable from any
// thread, for any snapshot.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "discovery/mad/sa.hpp"
#include "discovery/mad/smp.hpp"
#include "state/fabric_state.hpp"
#include "state/mcast_groups.hpp"
#include "state/path_record.hpp"
#include "state/sa_info.hpp"

namespace subnetd::daemon::sa {

struct SaAgentOptions {
  std::uint64_t subnet_prefix = 0xFE80'0000'0000'0000ULL;
  // PathRecord PacketLifeTime (IBA encoding: 4.096 us x 2^v); OpenSM's
  // default subnet timeout, 18 (~1 s).
  std::uint8_t packet_life_time = 18;
  // SMInfoRecord:Priority of subnetd's own record (what its port answers
  // to SMInfo Get).
  std::uint8_t sm_priority = 15;
  // The SM_Key a trusted request carries in its SA header (0 there means
  // untrusted; any other key must be this one, as OpenSM checks it).
  // OpenSM's default, 1, until the SM key is configured (issue 17).
  std::uint64_t sm_key = 1;
  // The time ServiceRecord leases run on (steady_clock::now when empty;
  // tests move a manual one).
  std::function<std::chrono::steady_clock::time_point()> now;
};

class ServiceRegistry;
class InformRegistry;
struct SaNotice;

// What the handler of one attribute answers (MCMemberRecord,
// ServiceRecord): the status and the records, back to back, each the
// record's size rounded up to 8 bytes.
struct AttrAnswer {
  std::uint16_t status = 0;
  std::vector<std::uint8_t> records;
  std::size_t count = 0;
};

using SaStats = state::SaStats;

using MadBytes = std::array<std::uint8_t, discovery::mad::sa::kMadSize>;

// A Report (a notice for a subscriber) to send: to `dlid`, queue pair
// `qpn`, with the GSI Q_Key 0x80010000.
struct Report {
  std::uint32_t dlid = 0;
  std::uint32_t qpn = 1;
  MadBytes mad{};
};

class SaAgent final : public state::SaInfo {
 public:
  // `mcast` (may be null: MCMemberRecord is unsupported): the multicast
  // groups joins and leaves change (daemon/sa/mcmember.hpp).
  explicit SaAgent(SaAgentOptions opts = {}, state::McastRegistry* mcast = nullptr);
  ~SaAgent() override;

  // The MADs that answer `request` (sent by the port with LID
  // `requester_lid`): one GetResp, or the RMPP segments of a GetTableResp;
  // empty when nothing is to be sent.
  std::vector<MadBytes> answer(std::span<const std::uint8_t> request, Lid requester_lid,
                               const state::FabricState& state);

  // Many requests at once (answers[i] for requests[i]), as a transport
  // drains its queue: the same answers, with the PathRecord walks of all
  // of them run together (state::PathIndex::walk_many), so that a burst
  // of queries (an MPI job starting) overlaps its reads of the tables.
  struct SaRequest {
    std::span<const std::uint8_t> bytes;
    Lid requester;
  };
  std::vector<std::vector<MadBytes>> answer_many(std::span<const SaRequest> requests,
                                                 const state::FabricState& state);

  SaStats stats() const;

  // The Reports that tell InformInfo subscribers what changed from one
  // published snapshot to the next (daemon/sa/inform.hpp: GID in and out
  // of service, link state changes); nothing (and no work) without
  // subscribers, and nothing to a subscription answered against `after`
  // or a later snapshot. For one thread at a time (the daemon's reporter).
  std::vector<Report> reports(const state::FabricState& before, const state::FabricState& after);
  // The Reports that forward `notice`, a trap an SMA sent the SM, to the
  // subscriptions that want it (daemon/sa/inform.hpp: forwarded_notice),
  // judged on snapshot `st`; nothing without subscribers. For the same
  // thread as reports().
  std::vector<Report> forward(const discovery::mad::Notice& notice, const state::FabricState& st);

  // state::SaInfo, for the API.
  SaStats sa_stats() const override { return stats(); }
  std::uint8_t packet_life_time() const override { return opts_.packet_life_time; }
  std::uint64_t subnet_prefix() const override { return opts_.subnet_prefix; }

 private:
  // Reports of `notices` (made from `st`) to every subscription that wants
  // them; `changes`: snapshot changes, which a subscription answered
  // against `st` or later has seen already.
  std::vector<Report> reports_for(std::span<const SaNotice> notices, const state::FabricState& st,
                                  bool changes);

  SaAgentOptions opts_;
  state::PathIndexCache paths_;  // PathRecords walk the tables through it
  state::McastRegistry* mcast_;
  std::unique_ptr<ServiceRegistry> services_;  // ServiceRecords registered
  std::unique_ptr<InformRegistry> informs_;    // InformInfo subscriptions
  std::atomic<std::uint64_t> reports_{0}, report_acks_{0};
  std::atomic<std::uint64_t> next_report_tid_{1};
  std::atomic<std::uint64_t> requests_{0}, errors_{0}, records_{0}, malformed_{0}, ignored_{0};
};

}  // namespace subnetd::daemon::sa

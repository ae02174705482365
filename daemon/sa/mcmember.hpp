#pragma once
// MCMemberRecord (IBA 15.2.5.17): the SA's multicast joins, leaves and
// queries over a state::McastRegistry.
//
//  - Set (join): PortGID and JoinState are required (else
//    ERR_INSUFFICIENT_COMPONENTS). The port must be the requester's (or the
//    SM's own port asks) and hold the group's P_Key (ERR_REQ_INVALID). An
//    existing group is joined when every component the request gives
//    agrees with it (Q_Key, P_Key, MLID, SL, FlowLabel, TClass, HopLimit,
//    Scope exactly; MTU, Rate, PacketLifeTime by their selectors). A
//    missing group is created by a full-member join that gives at least
//    Q_Key and P_Key (MTU and rate by their selectors, 2048 bytes and
//    10 Gb/s by default); an all-zero MGID asks the SA to choose one
//    (ff12:a01b:<P_Key>::<MLID>). The answer is the group's record with the
//    port's JoinState after the join.
//  - Delete (leave): PortGID and JoinState; the bits are removed, the
//    member goes when none remain, the group when its last member leaves
//    (not the IPoIB broadcast groups the SM keeps).
//  - Get/GetTable (groups whose P_Key the requester holds): a trusted
//    request (SM_Key set) without a PortGID gets one record per (group,
//    member), and one with a zero PortGID for a group without members;
//    any other query one record per group (the PortGID's when given, if
//    it is a member), with PortGID, JoinState and ProxyJoin zeroed unless
//    trusted (IBA 15.2.5.17, as OpenSM); filtered by the component mask.
//    (That a Get answers exactly one record the SA agent enforces for
//    every attribute.)

#include <cstdint>
#include <vector>

#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"
#include "state/mcast_groups.hpp"

namespace subnetd::daemon::sa {

AttrAnswer answer_mcmember(const discovery::mad::sa::SaMad& req, Lid requester,
                           const state::FabricState& st, const SaAgentOptions& opts,
                           const state::PathIndex& index, state::McastRegistry& registry);

}  // namespace subnetd::daemon::sa

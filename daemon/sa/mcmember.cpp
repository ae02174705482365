// MCMemberRecord joins, leaves and queries; see mcmember.hpp.

#include "daemon/sa/mcmember.hpp"

#include <algorithm>
#include <cstring>

#include "routing/partitions.hpp"

namespace subnetd::daemon::sa {
namespace {

namespace mad = discovery::mad::sa;
using mad::Method;

constexpr std::uint8_t kSelGreater = 0, kSelLess = 1, kSelExactly = 2;  // 3: largest

// Component bits, in the order of sa.cpp's kMcMemberRecord.
enum McBit : unsigned {
  kMgid = 0,
  kPortGid = 1,
  kQKey = 2,
  kMlid = 3,
  kMtuSel = 4,
  kMtu = 5,
  kTClass = 6,
  kPKey = 7,
  kRateSel = 8,
  kRate = 9,
  kPltSel = 10,
  kPlt = 11,
  kSl = 12,
  kFlowLabel = 13,
  kHopLimit = 14,
  kScope = 15,
  kJoinState = 16,
};

class McRequest {
 public:
  McRequest(const mad::SaMad& req, Lid requester, const state::FabricState& st,
            const SaAgentOptions& opts, const state::PathIndex& index,
            state::McastRegistry& registry)
      : req_(req),
        requester_(requester),
        st_(st),
        opts_(opts),
        index_(index),
        registry_(registry),
        layout_(*mad::layout_of(static_cast<std::uint16_t>(mad::Attr::kMcMemberRecord))),
        query_(req.data.data(), layout_.size) {}

  AttrAnswer run() {
    switch (static_cast<Method>(req_.method)) {
      case Method::kGet:
      case Method::kGetTable:
        query();  // a Get's one-record rule is the agent's (Answer::finish)
        break;
      case Method::kSet:
        join();
        break;
      case Method::kDelete:
        leave();
        break;
      default:
        out_.status = mad::status::kMethodAttrUnsupported;
        break;
    }
    return std::move(out_);
  }

 private:
  bool has(unsigned bit) const { return ((req_.comp_mask >> bit) & 1U) != 0; }
  std::uint64_t field(unsigned bit) const {
    return mad::get_field(query_, layout_.components[bit]);
  }
  state::Mgid gid_field(unsigned bit) const {
    state::Mgid g{};
    std::memcpy(g.data(), query_.data() + layout_.components[bit].offset / 8, g.size());
    return g;
  }
  std::uint64_t guid_of(const state::Mgid& gid) const {
    std::uint64_t v = 0;
    for (std::size_t i = 8; i < 16; ++i) v = (v << 8) | gid[i];
    return v;
  }
  std::uint64_t prefix_of(const state::Mgid& gid) const {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | gid[i];
    return v;
  }
  void fail(std::uint16_t s) { out_.status = s; }

  // The group's record for a member (zero PortGID and JoinState: none).
  std::vector<std::uint8_t> record(const state::McastGroup& g, Guid port, std::uint8_t join) const {
    std::vector<std::uint8_t> r(layout_.size, 0);
    std::memcpy(r.data(), g.mgid.data(), g.mgid.size());
    if (port.value != 0) {
      mad::set_field(std::span(r).subspan(16, 8), {"prefix", 0, 64}, opts_.subnet_prefix);
      mad::set_field(std::span(r).subspan(24, 8), {"guid", 0, 64}, port.value);
    }
    auto set = [&](unsigned bit, std::uint64_t v) {
      mad::set_field(r, layout_.components[bit], v);
    };
    set(kQKey, g.qkey);
    set(kMlid, g.mlid.value);
    set(kMtuSel, kSelExactly);
    set(kMtu, g.mtu);
    set(kTClass, g.tclass);
    set(kPKey, g.pkey);
    set(kRateSel, kSelExactly);
    set(kRate, g.rate);
    set(kPltSel, kSelExactly);
    set(kPlt, g.packet_life_time);
    set(kSl, g.sl);
    set(kFlowLabel, g.flow_label);
    set(kHopLimit, g.hop_limit);
    set(kScope, g.scope);
    set(kJoinState, join);
    return r;
  }
  void emit(const std::vector<std::uint8_t>& r) {
    const std::size_t stride = std::size_t{layout_.attr_offset()} * 8;
    const std::size_t at = out_.records.size();
    out_.records.resize(at + stride, 0);
    std::memcpy(&out_.records[at], r.data(), r.size());
    ++out_.count;
  }

  // IBA 15.2.5.17 (p923): PortGID, JoinState and ProxyJoin are zero in
  // the answer unless the request is trusted (carries the SM_Key, checked
  // by the agent); a trusted query without a PortGID gets every member's
  // record, any other one record per group (the named port's, if it is a
  // member). Groups whose P_Key the requester does not hold are not
  // shown. As OpenSM answers.
  void query() {
    const bool trusted = req_.sm_key != 0;
    const auto requester = state::endport_of_lid(st_, requester_);
    for (const state::McastGroup& g : registry_.groups()) {
      if (requester && !holds(*requester, g.pkey)) continue;
      if (trusted && !has(kPortGid)) {
        if (g.members.empty()) offer(record(g, Guid{}, 0), true);
        for (const auto& [port, join] : g.members) offer(record(g, port, join), true);
        continue;
      }
      if (has(kPortGid)) {
        const Guid port{guid_of(gid_field(kPortGid))};
        const auto member = g.members.find(port);
        if (member == g.members.end()) continue;
        offer(record(g, port, member->second), trusted);
      } else {
        offer(record(g, Guid{}, 0), trusted);
      }
    }
  }
  // Emits `r` when it matches the query, its member fields zeroed unless
  // `trusted`.
  void offer(std::vector<std::uint8_t> r, bool trusted) {
    if (!mad::matches(layout_, req_.comp_mask, query_, r)) return;
    if (!trusted) {
      std::fill(r.begin() + 16, r.begin() + 32, 0);  // PortGID
      mad::set_field(r, layout_.components[kJoinState], 0);
      mad::set_field(r, layout_.components[kJoinState + 1], 0);  // ProxyJoin
    }
    emit(r);
  }

  // Whether a group's value passes the request's selector on it.
  bool agrees(unsigned sel_bit, unsigned value_bit, std::uint32_t group_value) const {
    if (!has(value_bit)) return true;
    const auto want = static_cast<std::uint32_t>(field(value_bit));
    switch (has(sel_bit) ? static_cast<unsigned>(field(sel_bit)) : kSelExactly) {
      case kSelGreater:
        return group_value > want;
      case kSelLess:
        return group_value < want;
      case kSelExactly:
        return group_value == want;
      default:
        return true;
    }
  }
  // What a new group gets for a selector and value (IBA codes ascend with
  // size/speed for MTU; for rates the request's code is kept).
  std::uint8_t chosen(unsigned sel_bit, unsigned value_bit, std::uint8_t fallback) const {
    if (!has(value_bit)) return fallback;
    const auto want = static_cast<std::uint8_t>(field(value_bit));
    switch (has(sel_bit) ? static_cast<unsigned>(field(sel_bit)) : kSelExactly) {
      case kSelGreater:
        return static_cast<std::uint8_t>(want + 1);
      case kSelLess:
        return static_cast<std::uint8_t>(want - 1);
      default:
        return want;
    }
  }

  // The port a join or leave is for: the PortGID's, which must be the
  // requester's own (or the SM's port asks).
  std::optional<PortRef> member_port(Guid& guid) {
    if (!has(kPortGid) || !has(kJoinState) || field(kJoinState) == 0) {
      fail(mad::status::kInsufficientComponents);
      return std::nullopt;
    }
    const state::Mgid gid = gid_field(kPortGid);
    guid = Guid{guid_of(gid)};
    std::optional<PortRef> port;
    if (prefix_of(gid) == opts_.subnet_prefix) port = index_.endport_of_guid(st_, guid);
    if (!port) {
      fail(mad::status::kInvalidGid);
      return std::nullopt;
    }
    const routing::Topology& t = *st_.topology;
    const Lid lid = st_.lids->base_lid(t, port->node, port->port);
    const std::uint32_t span =
        1U << (t.node(port->node).type == routing::NodeType::kSwitch ? 0 : st_.lids->lmc);
    const bool own = requester_.value >= lid.value && requester_.value < lid.value + span;
    if (!own && requester_ != st_.sm_lid) {
      fail(mad::status::kReqInvalid);
      return std::nullopt;
    }
    return port;
  }
  // The port's P_Key table holds `pkey`.
  bool holds(PortRef port, std::uint16_t pkey) const {
    if (st_.partitions == nullptr) return (pkey & 0x7FFF) == 0x7FFF;
    return routing::find_pkey(st_.partitions->table(*st_.topology, port.node, port.port), pkey) !=
           0;
  }

  void join() {
    Guid guid;
    const auto port = member_port(guid);
    if (!port) return;
    const auto join_state = static_cast<std::uint8_t>(field(kJoinState) & 0x7);
    state::Mgid mgid = gid_field(kMgid);
    const bool zero = std::all_of(mgid.begin(), mgid.end(), [](std::uint8_t b) { return b == 0; });
    std::optional<state::McastGroup> g;
    if (!zero) g = registry_.find(mgid);
    if (g) {
      const bool same =
          (!has(kQKey) || field(kQKey) == g->qkey) &&
          (!has(kPKey) || (field(kPKey) & 0x7FFF) == (g->pkey & 0x7FFF)) &&
          (!has(kMlid) || field(kMlid) == g->mlid.value) && (!has(kSl) || field(kSl) == g->sl) &&
          (!has(kFlowLabel) || field(kFlowLabel) == g->flow_label) &&
          (!has(kTClass) || field(kTClass) == g->tclass) &&
          (!has(kHopLimit) || field(kHopLimit) == g->hop_limit) &&
          (!has(kScope) || field(kScope) == g->scope) && agrees(kMtuSel, kMtu, g->mtu) &&
          agrees(kRateSel, kRate, g->rate) && agrees(kPltSel, kPlt, g->packet_life_time);
      if (!same || !holds(*port, g->pkey)) {
        fail(mad::status::kReqInvalid);
        return;
      }
    } else {
      // Creation: a full member, with the group's Q_Key and P_Key.
      if (!has(kQKey) || !has(kPKey)) {
        fail(mad::status::kInsufficientComponents);
        return;
      }
      const auto pkey = static_cast<std::uint16_t>(field(kPKey) | routing::kPKeyFullMember);
      if ((join_state & state::kJoinFull) == 0 || !holds(*port, pkey)) {
        fail(mad::status::kReqInvalid);
        return;
      }
      state::McastGroup n;
      n.mgid = mgid;
      n.mlid = Lid{has(kMlid) ? static_cast<std::uint32_t>(field(kMlid)) : 0};
      n.qkey = static_cast<std::uint32_t>(field(kQKey));
      n.pkey = pkey;
      n.mtu = chosen(kMtuSel, kMtu, 4);
      n.rate = chosen(kRateSel, kRate, 3);
      n.packet_life_time = opts_.packet_life_time;
      n.sl = static_cast<std::uint8_t>(has(kSl) ? field(kSl) : 0);
      // With VL layers SL i is VL i, and multicast's trees are kept
      // deadlock-free on VL 0 only (routing/mcast.hpp): another SL would
      // put the group's traffic in a unicast layer its trees never joined.
      if (n.sl != 0 && st_.routes != nullptr && st_.routes->num_vls > 1) {
        fail(mad::status::kReqInvalid);
        return;
      }
      n.flow_label = static_cast<std::uint32_t>(has(kFlowLabel) ? field(kFlowLabel) : 0);
      n.tclass = static_cast<std::uint8_t>(has(kTClass) ? field(kTClass) : 0);
      n.hop_limit = static_cast<std::uint8_t>(has(kHopLimit) ? field(kHopLimit) : 0);
      n.scope = static_cast<std::uint8_t>(has(kScope) ? field(kScope) : 2);
      if (n.mtu < 1 || n.mtu > 5 || n.rate < 2) {
        fail(mad::status::kReqInvalid);
        return;
      }
      if (zero) {
        // ff12:a01b:<P_Key>:0:0:0:0:<MLID>, with the MLID once known.
        n.mgid = {0xff,
                  0x12,
                  0xa0,
                  0x1b,
                  static_cast<std::uint8_t>(pkey >> 8),
                  static_cast<std::uint8_t>(pkey),
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0};
        for (std::uint32_t tries = 0; tries < 0x4000; ++tries) {
          const std::uint32_t tag = 0xC000 + tries;
          n.mgid[14] = static_cast<std::uint8_t>(tag >> 8);
          n.mgid[15] = static_cast<std::uint8_t>(tag);
          if (!registry_.find(n.mgid)) break;
        }
      }
      auto made = registry_.create(n);
      if (!made.ok() && made.error().code != Errc::kConflict) {
        fail(mad::status::kNoResources);
        return;
      }
      mgid = n.mgid;  // a concurrent creator wins the race: we join its group
    }
    auto joined = registry_.join(mgid, guid, join_state);
    if (!joined.ok()) {
      fail(mad::status::kReqInvalid);
      return;
    }
    emit(record(*joined, guid, joined->members.at(guid)));
  }

  void leave() {
    Guid guid;
    const auto port = member_port(guid);
    if (!port) return;
    auto left =
        registry_.leave(gid_field(kMgid), guid, static_cast<std::uint8_t>(field(kJoinState) & 0x7));
    if (!left.ok()) {
      fail(mad::status::kReqInvalid);
      return;
    }
    emit(record(*left, guid, static_cast<std::uint8_t>(field(kJoinState) & 0x7)));
  }

  const mad::SaMad& req_;
  Lid requester_;
  const state::FabricState& st_;
  const SaAgentOptions& opts_;
  const state::PathIndex& index_;
  state::McastRegistry& registry_;
  const mad::RecordLayout& layout_;
  std::span<const std::uint8_t> query_;
  AttrAnswer out_;
};

}  // namespace

AttrAnswer answer_mcmember(const mad::SaMad& req, Lid requester, const state::FabricState& st,
                           const SaAgentOptions& opts, const state::PathIndex& index,
                           state::McastRegistry& registry) {
  return McRequest(req, requester, st, opts, index, registry).run();
}

}  // namespace subnetd::daemon::sa

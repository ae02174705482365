// InformInfo subscriptions, InformInfoRecords and the notices Reports
// carry; see inform.hpp.

#include "daemon/sa/inform.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>

#include "daemon/sa/records.hpp"
#include "discovery/mad/bytes.hpp"
#include "routing/partitions.hpp"

namespace subnetd::daemon::sa {

namespace mad = discovery::mad::sa;
using discovery::mad::load_be16;
using discovery::mad::load_be24;
using discovery::mad::load_be32;
using discovery::mad::store_be16;
using discovery::mad::store_be64;
using mad::Method;

namespace {

// InformInfo byte offsets (IBA 13.4.8.3).
constexpr std::size_t kIiGid = 0, kIiLidBegin = 16, kIiLidEnd = 18, kIiGeneric = 22,
                      kIiSubscribe = 23, kIiType = 24, kIiTrap = 26, kIiQpn = 28, kIiProducer = 33;
constexpr std::uint16_t kAllLids = 0xFFFF;
constexpr std::uint16_t kAny16 = 0xFFFF;
constexpr std::uint32_t kAny24 = 0xFFFFFF;
// Notice types and producers of the SM's own traps (OpenSM's values).
constexpr std::uint8_t kTypeSubnetManagement = 3;
constexpr std::uint8_t kTypeUrgent = 1;
constexpr std::uint32_t kProducerClassManager = 4;
constexpr std::uint32_t kProducerSwitch = 2;

std::uint32_t qpn_of(std::span<const std::uint8_t> info) {
  return load_be24(info.data() + kIiQpn);
}

// Whether two InformInfos name the same subscription: every field but
// Subscribe, RespTimeValue and the reserved ones.
bool same_subscription(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  return std::memcmp(a.data() + kIiGid, b.data() + kIiGid, 20) == 0 &&
         a[kIiGeneric] == b[kIiGeneric] &&
         std::memcmp(a.data() + kIiType, b.data() + kIiType, 4) == 0 && qpn_of(a) == qpn_of(b) &&
         load_be24(a.data() + kIiProducer) == load_be24(b.data() + kIiProducer);
}

Gid gid_of(std::uint64_t prefix, Guid guid) {
  Gid g{};
  store_be64(g.data(), prefix);
  store_be64(g.data() + 8, guid.value);
  return g;
}

std::span<const std::uint16_t> pkeys_of(const state::FabricState& st, PortRef p) {
  return st.partitions->table(*st.topology, p.node, p.port);
}

// Whether two endports share a partition (always, without partitions).
bool share_partition(const state::FabricState& st, PortRef a, PortRef b) {
  if (st.partitions == nullptr) return true;
  return routing::shared_pkey(pkeys_of(st, a), pkeys_of(st, b)).has_value();
}

class InformRequest {
 public:
  InformRequest(const mad::SaMad& req, Lid requester, const state::FabricState& st,
                const SaAgentOptions& opts, const state::PathIndex& index, InformRegistry& registry)
      : req_(req),
        requester_(requester),
        st_(st),
        opts_(opts),
        index_(index),
        registry_(registry) {}

  AttrAnswer run() {
    const auto method = static_cast<Method>(req_.method);
    if (req_.attr_id == static_cast<std::uint16_t>(mad::Attr::kInformInfo)) {
      if (method != Method::kSet) return fail(mad::status::kMethodAttrUnsupported);
      return set();
    }
    if (method != Method::kGet && method != Method::kGetTable) {
      return fail(mad::status::kMethodAttrUnsupported);
    }
    return records();
  }

 private:
  AttrAnswer fail(std::uint16_t status) {
    out_.status = status;
    return std::move(out_);
  }

  AttrAnswer set() {
    const std::span<const std::uint8_t> info(req_.data.data(), kInformInfoSize);
    const auto asking = state::endport_of_lid(st_, requester_);
    if (!asking) return fail(mad::status::kReqInvalid);
    Subscription s;
    s.subscriber = gid_of(opts_.subnet_prefix, st_.topology->port(*asking).guid);
    std::memcpy(s.info.data(), info.data(), kInformInfoSize);
    s.since = st_.generation;
    if (info[kIiSubscribe] == 1) {
      if (info[kIiGeneric] != 1 || qpn_of(info) == 0) return fail(mad::status::kReqInvalid);
      if (!registry_.subscribe(s)) return fail(mad::status::kNoResources);
    } else if (!registry_.unsubscribe(s.subscriber, info)) {
      return fail(mad::status::kReqInvalid);
    }
    out_.records.assign(info.begin(), info.end());
    out_.records.resize(40, 0);
    out_.count = 1;
    return std::move(out_);
  }

  AttrAnswer records() {
    const mad::RecordLayout& layout =
        *mad::layout_of(static_cast<std::uint16_t>(mad::Attr::kInformInfoRecord));
    RecordSet set(layout, std::span<const std::uint8_t>(req_.data.data(), layout.size),
                  req_.comp_mask);
    const auto asking = state::endport_of_lid(st_, requester_);
    std::unordered_map<std::uint64_t, std::uint16_t> enums;  // by subscriber GUID
    for (const Subscription& s : registry_.snapshot()) {
      const Guid guid{discovery::mad::load_be64(s.subscriber.data() + 8)};
      const std::uint16_t e = enums[guid.value]++;
      const auto port = index_.endport_of_guid(st_, guid);
      if (!asking || !port || !share_partition(st_, *asking, *port)) continue;
      std::span<std::uint8_t> r = set.fresh();
      std::memcpy(r.data(), s.subscriber.data(), 16);
      store_be16(r.data() + 16, e);
      std::memcpy(r.data() + 24, s.info.data(), kInformInfoSize);
      set.offer();
    }
    out_.records = std::move(set.records);
    out_.count = set.count;
    return std::move(out_);
  }

  const mad::SaMad& req_;
  Lid requester_;
  const state::FabricState& st_;
  const SaAgentOptions& opts_;
  const state::PathIndex& index_;
  InformRegistry& registry_;
  AttrAnswer out_;
};

// Endports in service, by port GUID: a switch's port 0 with a LID, a CA or
// router port ACTIVE with a LID.
std::unordered_map<std::uint64_t, PortRef> in_service(const state::FabricState& st) {
  std::unordered_map<std::uint64_t, PortRef> out;
  if (st.topology == nullptr || st.lids == nullptr) return out;
  const routing::Topology& t = *st.topology;
  for_each_endport(st, [&](PortRef p, Lid) {
    const routing::Port& port = t.port(p);
    if (p.port != 0 && port.state != routing::PortState::kActive) return;
    out.emplace(port.guid.value, p);
  });
  return out;
}

SaNotice sm_notice(const state::FabricState& st, std::uint16_t trap, const Gid& subject,
                   std::uint64_t prefix) {
  SaNotice n;
  n.notice.is_generic = true;
  n.notice.type = kTypeSubnetManagement;
  n.notice.producer_type = kProducerClassManager;
  n.notice.trap_number = trap;
  n.notice.issuer_lid = static_cast<std::uint16_t>(st.sm_lid.value);
  std::memcpy(n.notice.data_details.data() + 6, subject.data(), 16);
  if (st.topology != nullptr && st.sm_node.valid()) {
    n.issuer_gid = gid_of(prefix, st.topology->port(st.sm_node, st.sm_port).guid);
  }
  return n;
}

}  // namespace

bool InformRegistry::subscribe(const Subscription& s) {
  std::lock_guard lock(mu_);
  for (Subscription& have : subs_) {
    if (have.subscriber == s.subscriber && same_subscription(have.info, s.info)) {
      const std::uint64_t since = std::min(have.since, s.since);
      have = s;
      have.since = since;
      return true;
    }
  }
  if (subs_.size() >= kMaxSubscriptions) return false;
  subs_.push_back(s);
  return true;
}

bool InformRegistry::unsubscribe(const Gid& subscriber, std::span<const std::uint8_t> info) {
  std::lock_guard lock(mu_);
  const auto gone = std::erase_if(subs_, [&](const Subscription& have) {
    return have.subscriber == subscriber && same_subscription(have.info, info);
  });
  return gone != 0;
}

void InformRegistry::drop_subscriber(const Gid& subscriber) {
  std::lock_guard lock(mu_);
  std::erase_if(subs_, [&](const Subscription& s) { return s.subscriber == subscriber; });
}

std::vector<Subscription> InformRegistry::snapshot() const {
  std::lock_guard lock(mu_);
  return subs_;
}

std::size_t InformRegistry::size() const {
  std::lock_guard lock(mu_);
  return subs_.size();
}

std::array<std::uint8_t, kNoticeSize> SaNotice::bytes() const {
  std::array<std::uint8_t, kNoticeSize> out{};
  std::array<std::uint8_t, discovery::mad::kSmpDataSize> head{};
  notice.encode(discovery::mad::SmpData(head));
  std::memcpy(out.data(), head.data(), head.size());
  std::memcpy(out.data() + 64, issuer_gid.data(), 16);
  return out;
}

Gid SaNotice::subject_gid() const {
  Gid g{};
  std::memcpy(g.data(), notice.data_details.data() + 6, 16);
  return g;
}

AttrAnswer answer_inform(const mad::SaMad& req, Lid requester, const state::FabricState& st,
                         const SaAgentOptions& opts, const state::PathIndex& index,
                         InformRegistry& registry) {
  return InformRequest(req, requester, st, opts, index, registry).run();
}

namespace {

// Traps 64, 65 and 128 (see inform.hpp) between two topologies.
void port_notices(const state::FabricState& before, const state::FabricState& after,
                  std::uint64_t subnet_prefix, std::vector<SaNotice>& out) {
  const auto was = in_service(before);
  const auto now = in_service(after);
  for (const auto& [guid, p] : now) {
    if (!was.contains(guid)) {
      out.push_back(sm_notice(after, 64, gid_of(subnet_prefix, Guid{guid}), subnet_prefix));
    }
  }
  for (const auto& [guid, p] : was) {
    if (!now.contains(guid)) {
      out.push_back(sm_notice(after, 65, gid_of(subnet_prefix, Guid{guid}), subnet_prefix));
    }
  }
  // Trap 128 for every switch (in both snapshots) a port of which changed
  // state, as the switch itself sends it.
  if (before.topology == nullptr) return;
  const routing::Topology& tb = *before.topology;
  const routing::Topology& ta = *after.topology;
  for (const NodeId sw : ta.switches()) {
    const routing::Node& node = ta.node(sw);
    const auto old = tb.find_by_guid(node.guid);
    if (!old || tb.node(*old).num_ports != node.num_ports) continue;
    bool changed = false;
    for (PortNum p = 1; p <= node.num_ports && !changed; ++p) {
      changed = ta.port(sw, p).state != tb.port(*old, p).state;
    }
    if (!changed) continue;
    SaNotice n;
    n.notice.is_generic = true;
    n.notice.type = kTypeUrgent;
    n.notice.producer_type = kProducerSwitch;
    n.notice.trap_number = 128;
    const Lid lid = after.lids ? after.lids->base_lid(ta, sw, 0) : Lid{};
    n.notice.issuer_lid = static_cast<std::uint16_t>(lid.value > 0xBFFF ? 0xFFFF : lid.value);
    store_be16(n.notice.data_details.data(), n.notice.issuer_lid);
    n.issuer_gid = gid_of(subnet_prefix, ta.port(sw, 0).guid);
    out.push_back(n);
  }
}

// Traps 66 and 67: the multicast groups, by MGID, created and deleted.
void group_notices(const state::FabricState& before, const state::FabricState& after,
                   std::uint64_t subnet_prefix, std::vector<SaNotice>& out) {
  using Groups = std::vector<state::McastGroup>;
  const Groups none;
  const Groups& was = before.mcast_groups ? *before.mcast_groups : none;
  const Groups& now = after.mcast_groups ? *after.mcast_groups : none;
  // The MGIDs before; those also in `after` are taken out, so what stays
  // is what was deleted.
  std::set<state::Mgid> gone;
  for (const state::McastGroup& g : was) gone.insert(g.mgid);
  auto notice = [&](std::uint16_t trap, const state::McastGroup& g) {
    SaNotice n = sm_notice(after, trap, g.mgid, subnet_prefix);
    n.group_pkey = g.pkey;
    out.push_back(n);
  };
  for (const state::McastGroup& g : now) {
    if (gone.erase(g.mgid) == 0) notice(66, g);
  }
  for (const state::McastGroup& g : was) {
    if (gone.contains(g.mgid)) notice(67, g);
  }
}

}  // namespace

std::vector<SaNotice> notices_between(const state::FabricState& before,
                                      const state::FabricState& after,
                                      std::uint64_t subnet_prefix) {
  std::vector<SaNotice> out;
  if (after.topology == nullptr) return out;
  if (before.topology != after.topology) port_notices(before, after, subnet_prefix, out);
  if (before.mcast_groups != after.mcast_groups) group_notices(before, after, subnet_prefix, out);
  return out;
}

SaNotice forwarded_notice(const discovery::mad::Notice& n, const state::FabricState& st,
                          std::uint64_t subnet_prefix) {
  SaNotice out;
  out.notice = n;
  out.forwarded = true;
  if (st.topology != nullptr && st.lids != nullptr) {
    if (const auto p = state::endport_of_lid(st, Lid{n.issuer_lid})) {
      out.issuer_gid = gid_of(subnet_prefix, st.topology->port(*p).guid);
    }
  }
  return out;
}

bool wants(const Subscription& s, const SaNotice& n, const state::FabricState& st,
           const state::PathIndex& index, std::uint64_t subnet_prefix) {
  const std::span<const std::uint8_t> ii(s.info);
  const bool any_gid = std::all_of(ii.begin() + kIiGid, ii.begin() + kIiGid + 16,
                                   [](std::uint8_t b) { return b == 0; });
  if (!any_gid) {
    if (std::memcmp(ii.data() + kIiGid, n.issuer_gid.data(), 16) != 0) return false;
  } else if (const std::uint16_t begin = load_be16(ii.data() + kIiLidBegin); begin != kAllLids) {
    const std::uint16_t end = load_be16(ii.data() + kIiLidEnd);
    const std::uint16_t last = end == 0 ? begin : end;
    if (n.notice.issuer_lid < begin || n.notice.issuer_lid > last) return false;
  }
  if ((ii[kIiGeneric] != 0) != n.notice.is_generic) return false;
  const std::uint16_t type = load_be16(ii.data() + kIiType);
  if (type != kAny16 && type != n.notice.type) return false;
  const std::uint16_t trap = load_be16(ii.data() + kIiTrap);
  if (trap != kAny16 && trap != n.notice.trap_number) return false;
  const std::uint32_t producer = load_be24(ii.data() + kIiProducer);
  if (producer != kAny24 && producer != n.notice.producer_type) return false;
  if (n.notice.trap_number == 64 || n.notice.trap_number == 65) {
    // The subscriber sees only ports it shares a partition with. A port
    // gone (65) is judged by the partitions it had: the snapshot may no
    // longer know it, and then nothing is withheld.
    const Gid subject = n.subject_gid();
    const auto sub =
        index.endport_of_guid(st, Guid{discovery::mad::load_be64(s.subscriber.data() + 8)});
    const auto port =
        index.endport_of_guid(st, Guid{discovery::mad::load_be64(subject.data() + 8)});
    if (discovery::mad::load_be64(subject.data()) != subnet_prefix) return false;
    if (sub && port && !share_partition(st, *sub, *port)) return false;
  }
  if (n.forwarded) {
    // The issuer's partitions' subscribers (an issuer the snapshot does
    // not know withholds nothing, as for trap 65).
    const auto sub =
        index.endport_of_guid(st, Guid{discovery::mad::load_be64(s.subscriber.data() + 8)});
    const auto issuer =
        index.endport_of_guid(st, Guid{discovery::mad::load_be64(n.issuer_gid.data() + 8)});
    if (sub && issuer && !share_partition(st, *sub, *issuer)) return false;
  }
  if ((n.notice.trap_number == 66 || n.notice.trap_number == 67) && st.partitions != nullptr) {
    // A group only its partition's members may join.
    const auto sub =
        index.endport_of_guid(st, Guid{discovery::mad::load_be64(s.subscriber.data() + 8)});
    if (sub && routing::find_pkey(pkeys_of(st, *sub), n.group_pkey) == 0) return false;
  }
  return true;
}

}  // namespace subnetd::daemon::sa

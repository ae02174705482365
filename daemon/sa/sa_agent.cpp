// The SA agent: decode, dispatch by attribute and method, build the records
// from the snapshot, filter them by the query, answer. See sa_agent.hpp.

#include "daemon/sa/sa_agent.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "daemon/sa/inform.hpp"
#include "daemon/sa/mcmember.hpp"
#include "daemon/sa/records.hpp"
#include "daemon/sa/service_record.hpp"
#include "discovery/mad/bytes.hpp"
#include "discovery/programmer.hpp"
#include "state/path_record.hpp"

namespace subnetd::daemon::sa {
namespace {

namespace mad = discovery::mad::sa;
using mad::Attr;
using mad::Method;
using mad::RecordLayout;

constexpr std::uint32_t kGsiQKey = 0x80010000;  // IBA's well-known Q_Key of QP1
// SA ClassPortInfo capability bits (IBA 15.2.1.1, umad_sa.h).
constexpr std::uint16_t kCapUdMulticast = 1U << 9;
constexpr std::uint32_t kCap2MulticastTop = 1U << 3;
constexpr std::uint8_t kSelGreater = 0, kSelLess = 1, kSelExactly = 2, kSelLargest = 3;

// PathRecord component bits (the order of sa.cpp's kPathRecord).
enum PrBit : unsigned {
  kPrServiceIdMsb = 0,
  kPrServiceIdLsb = 1,
  kPrDgid = 2,
  kPrSgid = 3,
  kPrDlid = 4,
  kPrSlid = 5,
  kPrRawTraffic = 6,
  kPrFlowLabel = 8,
  kPrHopLimit = 9,
  kPrTClass = 10,
  kPrReversible = 11,
  kPrNumbPath = 12,
  kPrPKey = 13,
  kPrSl = 15,
  kPrMtuSelector = 16,
  kPrMtu = 17,
  kPrRateSelector = 18,
  kPrRate = 19,
  kPrPltSelector = 20,
  kPrPlt = 21,
};
// MultiPathRecord component bits (sa.cpp's kMultiPathRecord) that a
// PathRecord query has too, with the PathRecord bit they become.
constexpr std::pair<unsigned, unsigned> kMprToPr[] = {
    {0, kPrRawTraffic}, {2, kPrFlowLabel},     {3, kPrHopLimit}, {4, kPrTClass},
    {5, kPrReversible}, {7, kPrPKey},          {9, kPrSl},       {10, kPrMtuSelector},
    {11, kPrMtu},       {12, kPrRateSelector}, {13, kPrRate},    {14, kPrPltSelector},
    {15, kPrPlt},
};
constexpr unsigned kMprNumbPath = 6, kMprSgidCount = 19, kMprDgidCount = 20;
constexpr std::size_t kMprGids = 24;     // byte offset of the first GID
constexpr std::size_t kMprMaxGids = 11;  // what one MAD carries

// Whether an offered value passes the query's selector on it.
bool selected(std::uint32_t offered, unsigned selector, std::uint32_t wanted) {
  switch (selector) {
    case kSelGreater:
      return offered > wanted;
    case kSelLess:
      return offered < wanted;
    case kSelExactly:
      return offered == wanted;
    case kSelLargest:
    default:
      return true;  // what we offer is the largest available
  }
}

class Answer;

// The walks of a batch of requests, run together (PathIndex::walk_many):
// queries[i] belongs to owners[i].
struct PathBatch {
  std::vector<state::PathIndex::PathQuery> queries;
  std::vector<Answer*> owners;
  void add(Answer* a, const state::PathIndex::PathQuery& q) {
    owners.push_back(a);
    queries.push_back(q);
  }
};

class Answer {
 public:
  // `batch`: where path_records() leaves its walks for the caller to run
  // together (then emit_path() for each); null to walk at once.
  Answer(const mad::SaMad& req, Lid requester, const state::FabricState& st,
         const SaAgentOptions& opts, state::PathIndexCache& paths, PathBatch* batch,
         state::McastRegistry* mcast, ServiceRegistry* services, InformRegistry* informs)
      : req_(req),
        requester_(requester),
        st_(st),
        opts_(opts),
        paths_(paths),
        batch_(batch),
        mcast_(mcast),
        services_(services),
        informs_(informs) {}

  // Status and the records (back to back, `stride` bytes each).
  std::uint16_t status = mad::status::kOk;
  std::vector<std::uint8_t> records;
  std::size_t count = 0;

  void run() {
    const auto attr = static_cast<Attr>(req_.attr_id);
    const auto method = static_cast<Method>(req_.method);
    if (req_.class_version != mad::kClassVersion) {
      status = mad::status::kBadVersion;
      return;
    }
    if (method != Method::kGet && method != Method::kGetTable && method != Method::kSet &&
        method != Method::kDelete && method != Method::kGetMulti &&
        method != Method::kGetTraceTable) {
      status = mad::status::kMethodUnsupported;
      return;
    }
    // A non-zero SM_Key in the SA header makes a request trusted (it may
    // see P_Key tables and others' multicast memberships), and must be
    // ours, as OpenSM has it.
    if (req_.sm_key != 0 && req_.sm_key != opts_.sm_key) {
      status = mad::status::kReqInvalid;
      return;
    }
    if (attr == Attr::kClassPortInfo) {
      if (method != Method::kGet) {
        status = mad::status::kMethodAttrUnsupported;
        return;
      }
      class_port_info();
      return;
    }
    layout_ = mad::layout_of(req_.attr_id);
    // Attributes with joins and registrations (Set and Delete too) have a
    // handler of their own.
    if ((attr == Attr::kMcMemberRecord && mcast_ != nullptr) || attr == Attr::kServiceRecord ||
        attr == Attr::kInformInfo || attr == Attr::kInformInfoRecord) {
      if (st_.topology == nullptr || st_.lids == nullptr) {
        status = mad::status::kNoResources;
        return;
      }
      const std::shared_ptr<const state::PathIndex> index = paths_.get(st_);
      AttrAnswer a;
      if (attr == Attr::kServiceRecord) {
        a = answer_service(req_, requester_, st_, opts_, *index, *services_,
                           opts_.now ? opts_.now() : std::chrono::steady_clock::now());
      } else if (attr == Attr::kMcMemberRecord) {
        a = answer_mcmember(req_, requester_, st_, opts_, *index, *mcast_);
      } else {
        a = answer_inform(req_, requester_, st_, opts_, *index, *informs_);
      }
      status = a.status;
      records = std::move(a.records);
      count = a.count;
      return;
    }
    using Builder = void (*)(const RecordContext&, RecordSet&);
    Builder build = nullptr;
    switch (attr) {
      case Attr::kNodeRecord:
        build = node_records;
        break;
      case Attr::kPortInfoRecord:
        build = port_info_records;
        break;
      case Attr::kLinkRecord:
        build = link_records;
        break;
      case Attr::kLftRecord:
        build = lft_records;
        break;
      case Attr::kPKeyTableRecord:
        if (req_.sm_key == 0) {  // trusted requests only, as OpenSM
          status = mad::status::kReqInvalid;
          return;
        }
        build = pkey_table_records;
        break;
      case Attr::kSwitchInfoRecord:
        build = switch_info_records;
        break;
      case Attr::kMftRecord:
        build = mft_records;
        break;
      case Attr::kSmInfoRecord:
        build = sm_info_records;
        break;
      case Attr::kGuidInfoRecord:
        build = guid_info_records;
        break;
      case Attr::kSlToVlTableRecord:
        build = sl2vl_records;
        break;
      case Attr::kVlArbTableRecord:
        build = vlarb_records;
        break;
      default:
        break;
    }
    if (attr == Attr::kMultiPathRecord) {
      multipath();
      return;
    }
    const bool served = build != nullptr || attr == Attr::kPathRecord;
    if (layout_ == nullptr || !served || (method != Method::kGet && method != Method::kGetTable)) {
      status = mad::status::kMethodAttrUnsupported;
      return;
    }
    if (st_.topology == nullptr || st_.lids == nullptr || st_.routes == nullptr) {
      status = mad::status::kNoResources;  // no fabric yet: ask again later
      return;
    }
    query_ = std::span<const std::uint8_t>(req_.data.data(), layout_->size);
    set_.emplace(*layout_, query_, req_.comp_mask);
    if (build != nullptr) {
      build(RecordContext{st_, opts_, requester_}, *set_);
      return;
    }
    path_records();
  }

  // After run() and, for PathRecords in a batch, every emit_path(): a Get
  // answers exactly one record.
  void finish() {
    if (set_) {
      records = std::move(set_->records);
      count = set_->count;
    }
    if (status != mad::status::kOk) return;
    if (req_.method == static_cast<std::uint8_t>(Method::kGet) && count != 1) {
      status = count == 0 ? mad::status::kNoRecords : mad::status::kTooManyRecords;
    }
  }

  std::uint16_t attr_offset() const { return layout_ ? layout_->attr_offset() : 0; }

 private:
  void set_gid(std::span<std::uint8_t> r, const mad::Component& c, std::uint64_t guid) {
    const std::size_t at = c.offset / 8;
    mad::set_field(r.subspan(at, 8), {"prefix", 0, 64}, opts_.subnet_prefix);
    mad::set_field(r.subspan(at + 8, 8), {"guid", 0, 64}, guid);
  }

  void class_port_info() {
    // ClassPortInfo (IBA 13.4.8.1): versions, the capabilities served,
    // RespTimeValue 16 (4.096 us x 2^16 = 268 ms, what OpenSM reports, so
    // clients keep the timeouts they use with it), requests and traps on
    // QP1 with the GSI Q_Key, as OpenSM fills them.
    records.assign(72, 0);
    records[0] = 1;
    records[1] = mad::kClassVersion;
    // CapabilityMask: IsUDMulticastSupported (MCMemberRecords and the
    // trees behind them). CapabilityMask2 (27 bits above RespTimeValue):
    // IsMulticastFDBTopSupported (SwitchInfoRecords carry it).
    discovery::mad::store_be16(&records[2], kCapUdMulticast);
    discovery::mad::store_be32(&records[4], (kCap2MulticastTop << 5) | 16);
    records[35] = 1;                                     // RedirectQP
    discovery::mad::store_be32(&records[36], kGsiQKey);  // RedirectQ_Key
    discovery::mad::store_be32(&records[68], kGsiQKey);  // TrapQ_Key
    count = 1;
  }

  // The endport a GID names; nullopt (and the status set) when none.
  std::optional<PortRef> endport_of_gid(std::span<const std::uint8_t> gid) {
    const std::uint64_t prefix = mad::get_field(gid, {"prefix", 0, 64});
    const std::uint64_t guid = mad::get_field(gid.subspan(8), {"guid", 0, 64});
    std::optional<PortRef> port;
    if (prefix == opts_.subnet_prefix) port = index_->endport_of_guid(st_, Guid{guid});
    if (!port) status = mad::status::kInvalidGid;
    return port;
  }

  // MultiPathRecord (GetMulti, IBA 15.2.5.20): the PathRecords from every
  // SGID to every DGID the request lists, SGIDCount and DGIDCount
  // required (ERR_INSUFFICIENT_COMPONENTS), at most NumbPath of them when
  // it is given and not 0. Each pair is answered as a PathRecord GetTable
  // with that SGID and DGID and the request's other components would be
  // (selectors, P_Key, SL, Reversible), so the two never disagree. The
  // request is one MAD (11 GIDs at most, as OpenSM takes it).
  void multipath() {
    if (static_cast<Method>(req_.method) != Method::kGetMulti) {
      status = mad::status::kMethodAttrUnsupported;
      return;
    }
    if (st_.topology == nullptr || st_.lids == nullptr || st_.routes == nullptr) {
      status = mad::status::kNoResources;
      return;
    }
    const std::span<const std::uint8_t> q(req_.data.data(), layout_->size);
    auto has = [&](unsigned bit) { return ((req_.comp_mask >> bit) & 1U) != 0; };
    auto field = [&](unsigned bit) { return mad::get_field(q, layout_->components[bit]); };
    if (!has(kMprSgidCount) || !has(kMprDgidCount)) {
      status = mad::status::kInsufficientComponents;
      return;
    }
    const std::size_t ns = field(kMprSgidCount), nd = field(kMprDgidCount);
    if (ns == 0 || nd == 0 || ns + nd > kMprMaxGids) {
      status = mad::status::kReqInvalid;
      return;
    }
    const std::size_t limit =
        has(kMprNumbPath) && field(kMprNumbPath) != 0 ? field(kMprNumbPath) : ns * nd;
    const RecordLayout& prl = *mad::layout_of(static_cast<std::uint16_t>(Attr::kPathRecord));
    layout_ = &prl;  // the answer is PathRecords
    mad::SaMad sub = req_;
    sub.attr_id = static_cast<std::uint16_t>(Attr::kPathRecord);
    sub.method = static_cast<std::uint8_t>(Method::kGetTable);
    sub.comp_mask = (1ULL << kPrSgid) | (1ULL << kPrDgid);
    sub.data.fill(0);
    for (const auto& [from, to] : kMprToPr) {
      if (!has(from)) continue;
      sub.comp_mask |= 1ULL << to;
      mad::set_field(sub.data, prl.components[to], field(from));
    }
    const std::size_t sgid_at = prl.components[kPrSgid].offset / 8;
    const std::size_t dgid_at = prl.components[kPrDgid].offset / 8;
    for (std::size_t i = 0; i < ns && count < limit; ++i) {
      for (std::size_t j = 0; j < nd && count < limit; ++j) {
        std::memcpy(&sub.data[sgid_at], &req_.data[kMprGids + 16 * i], 16);
        std::memcpy(&sub.data[dgid_at], &req_.data[kMprGids + 16 * (ns + j)], 16);
        Answer one(sub, requester_, st_, opts_, paths_, nullptr, mcast_, services_, informs_);
        one.run();
        one.finish();
        if (one.status != mad::status::kOk) {
          status = one.status;  // a GID that names no port: the whole request
          records.clear();
          count = 0;
          return;
        }
        const std::size_t take = std::min(one.count, limit - count);
        records.insert(
            records.end(), one.records.begin(),
            one.records.begin() + static_cast<std::ptrdiff_t>(take * prl.attr_offset() * 8));
        count += take;
      }
    }
  }

  // PathRecord components by their bit in the ComponentMask (their index).
  const mad::Component& pr(unsigned bit) const { return layout_->components[bit]; }

  void path_records() {
    index_ = paths_.get(st_);  // once: GID lookups and walks use it
    const routing::Topology& t = *st_.topology;
    const std::uint64_t mask = req_.comp_mask;
    auto has = [&](unsigned bit) { return ((mask >> bit) & 1U) != 0; };
    auto field = [&](unsigned bit) { return mad::get_field(query_, pr(bit)); };
    auto gid_span = [&](unsigned bit) { return query_.subspan(pr(bit).offset / 8, 16); };
    // The source.
    // A SLID names the source; with LMC > 0 it may be any LID of the
    // port's range, and the record carries it as asked.
    std::optional<PortRef> src;
    Lid slid;
    if (has(kPrSlid)) {
      slid = Lid{static_cast<std::uint32_t>(field(kPrSlid))};
      src = state::endport_of_lid(st_, slid);
    } else if (has(kPrSgid)) {
      src = endport_of_gid(gid_span(kPrSgid));
      if (src) slid = st_.lids->base_lid(t, src->node, src->port);
    } else {
      slid = requester_;
      src = state::endport_of_lid(st_, slid);
    }
    if (status != mad::status::kOk || !src) return;
    // A multicast group (a multicast DGID, no DLID).
    if (!has(kPrDlid) && has(kPrDgid) && gid_span(kPrDgid)[0] == 0xFF) {
      group_path(*src, slid);
      return;
    }
    // The destinations.
    std::vector<std::pair<PortRef, Lid>> dsts;
    if (has(kPrDlid)) {
      const Lid dlid{static_cast<std::uint32_t>(field(kPrDlid))};
      if (auto d = state::endport_of_lid(st_, dlid)) dsts.emplace_back(*d, dlid);
    } else if (has(kPrDgid)) {
      auto d = endport_of_gid(gid_span(kPrDgid));
      if (!d) return;
      dsts.emplace_back(*d, st_.lids->base_lid(t, d->node, d->port));
    } else {
      for_each_endport(st_, [&](PortRef end, Lid lid) { dsts.emplace_back(end, lid); });
    }
    // What the query asks of the path (its SL is its layer's: emit_path).
    auto selector = [&](unsigned sel_bit, unsigned value_bit) {
      if (!has(value_bit)) return -1;
      return has(sel_bit) ? static_cast<int>(field(sel_bit)) : static_cast<int>(kSelExactly);
    };
    ask_.src = *src;
    ask_.slid = slid;
    ask_.want_pkey = has(kPrPKey) ? std::optional<std::uint16_t>(field(kPrPKey)) : std::nullopt;
    ask_.requester = state::endport_of_lid(st_, requester_);
    ask_.mtu_sel = selector(kPrMtuSelector, kPrMtu);
    ask_.rate_sel = selector(kPrRateSelector, kPrRate);
    ask_.plt_sel = selector(kPrPltSelector, kPrPlt);
    ask_.want_mtu = static_cast<std::uint32_t>(has(kPrMtu) ? field(kPrMtu) : 0);
    ask_.want_rate = state::gbps10_of(static_cast<std::uint8_t>(has(kPrRate) ? field(kPrRate) : 0));
    ask_.want_plt = static_cast<std::uint32_t>(has(kPrPlt) ? field(kPrPlt) : 0);
    if (batch_ != nullptr) {
      for (const auto& [dst, dlid] : dsts) batch_->add(this, {*src, dst, dlid});
      return;
    }
    for (const auto& [dst, dlid] : dsts) emit_path(index_->walk(st_, *src, dst, dlid));
  }

  // The path to a multicast group (IBA 15.2.5.16: DLID the MLID, the
  // group's MTU, rate, SL, P_Key, flow label, hop limit and TClass; not
  // reversible), for a source and a requester that hold the group's
  // P_Key, and a source that is a member when the query names it; no
  // record for a group the SM does not know. The query's
  // selectors and fixed SL/P_Key apply as to unicast paths.
  void group_path(PortRef src, Lid slid) {
    const routing::Topology& t = *st_.topology;
    const std::uint64_t mask = req_.comp_mask;
    auto has = [&](unsigned bit) { return ((mask >> bit) & 1U) != 0; };
    auto field = [&](unsigned bit) { return mad::get_field(query_, pr(bit)); };
    if (st_.mcast_groups == nullptr || slid.value > 0xFFFF) return;
    state::Mgid mgid{};
    std::memcpy(mgid.data(), query_.data() + pr(kPrDgid).offset / 8, mgid.size());
    const auto g = std::find_if(st_.mcast_groups->begin(), st_.mcast_groups->end(),
                                [&](const state::McastGroup& x) { return x.mgid == mgid; });
    if (g == st_.mcast_groups->end() || g->mlid.value == 0) return;
    auto holds = [&](PortRef port) {
      if (st_.partitions == nullptr) return (g->pkey & 0x7FFF) == 0x7FFF;
      return routing::find_pkey(st_.partitions->table(t, port.node, port.port), g->pkey) != 0;
    };
    const auto requester = state::endport_of_lid(st_, requester_);
    if (!holds(src) || (requester && !holds(*requester))) return;
    // A source the query names must be a member (as OpenSM has it); the
    // requester asking for its own path need not be (a send-only join
    // comes after).
    if ((has(kPrSgid) || has(kPrSlid)) && g->members.count(t.port(src.node, src.port).guid) == 0) {
      return;
    }
    if (has(kPrSl) && field(kPrSl) != g->sl) return;
    if (has(kPrPKey) && (field(kPrPKey) & 0x7FFF) != (g->pkey & 0x7FFFU)) return;
    auto pass = [&](unsigned sel_bit, unsigned value_bit, std::uint32_t offered,
                    std::uint32_t as_wanted) {
      if (!has(value_bit)) return true;
      const unsigned sel = has(sel_bit) ? static_cast<unsigned>(field(sel_bit)) : kSelExactly;
      return selected(offered, sel, as_wanted);
    };
    if (!pass(kPrMtuSelector, kPrMtu, g->mtu, static_cast<std::uint32_t>(field(kPrMtu))) ||
        !pass(kPrRateSelector, kPrRate, state::gbps10_of(g->rate),
              state::gbps10_of(static_cast<std::uint8_t>(field(kPrRate)))) ||
        !pass(kPrPltSelector, kPrPlt, g->packet_life_time,
              static_cast<std::uint32_t>(field(kPrPlt)))) {
      return;
    }
    std::span<std::uint8_t> r = set_->fresh();
    for (const unsigned keep : {kPrServiceIdMsb, kPrServiceIdLsb}) {
      mad::set_field(r, pr(keep), field(keep));
    }
    set_gid(r, pr(kPrSgid), t.port(src.node, src.port).guid.value);
    std::memcpy(r.data() + pr(kPrDgid).offset / 8, mgid.data(), mgid.size());
    mad::set_field(r, pr(kPrSlid), slid.value);
    mad::set_field(r, pr(kPrDlid), g->mlid.value);
    mad::set_field(r, pr(kPrNumbPath), 1);  // one path, as OpenSM answers (IBA 1.2 erratum)
    set_->set("FlowLabel", g->flow_label);
    set_->set("HopLimit", g->hop_limit);
    set_->set("TClass", g->tclass);
    mad::set_field(r, pr(kPrPKey), g->pkey);
    mad::set_field(r, pr(kPrSl), g->sl);
    mad::set_field(r, pr(kPrMtuSelector), kSelExactly);
    mad::set_field(r, pr(kPrMtu), g->mtu);
    mad::set_field(r, pr(kPrRateSelector), kSelExactly);
    mad::set_field(r, pr(kPrRate), g->rate);
    mad::set_field(r, pr(kPrPltSelector), kSelExactly);
    mad::set_field(r, pr(kPrPlt), g->packet_life_time);
    const std::uint64_t judged =
        (1ULL << kPrMtuSelector) | (1ULL << kPrMtu) | (1ULL << kPrRateSelector) |
        (1ULL << kPrRate) | (1ULL << kPrPltSelector) | (1ULL << kPrPlt) | (1ULL << kPrPKey) |
        (1ULL << kPrSl) | (1ULL << kPrReversible) | (1ULL << kPrNumbPath) | (1ULL << kPrSgid);
    set_->offer(req_.comp_mask & ~judged);
  }

  // One walk's outcome: a record when there is a path that the query's
  // selectors accept.
 public:
  void emit_path(const std::optional<state::PathProperties>& path) {
    if (!path) return;
    const routing::Topology& t = *st_.topology;
    const std::uint64_t mask = req_.comp_mask;
    auto has = [&](unsigned bit) { return ((mask >> bit) & 1U) != 0; };
    auto field = [&](unsigned bit) { return mad::get_field(query_, pr(bit)); };
    const PortRef src = ask_.src, dst = path->destination;
    const Lid slid = ask_.slid, dlid = path->dlid;
    // The SA speaks IBA's 16-bit LIDs: a path to or from an extended LID
    // (subnetd's simulator-only addressing) has no PathRecord.
    if (slid.value > 0xFFFF || dlid.value > 0xFFFF) return;
    // The SL is the routing's (the layer dlid's traffic is on, 0 without
    // layers): a path on another SL would not be deadlock-free.
    if (has(kPrSl) && field(kPrSl) != path->sl) return;
    if (ask_.mtu_sel >= 0 &&
        !selected(path->mtu, static_cast<unsigned>(ask_.mtu_sel), ask_.want_mtu))
      return;
    if (ask_.rate_sel >= 0 &&
        !selected(path->gbps10, static_cast<unsigned>(ask_.rate_sel), ask_.want_rate))
      return;
    if (ask_.plt_sel >= 0 &&
        !selected(opts_.packet_life_time, static_cast<unsigned>(ask_.plt_sel), ask_.want_plt))
      return;
    // Partitions: a P_Key both ends hold, one of them as a full member (the
    // one asked for, if any), that the requester holds too (IBA 15.4.1: an
    // SA answers only what the requester may use).
    std::uint16_t pkey = path->pkey;
    if (st_.partitions != nullptr) {
      const routing::PartitionPlan& plan = *st_.partitions;
      const auto key = routing::shared_pkey(plan.table(t, src.node, src.port),
                                            plan.table(t, dst.node, dst.port), ask_.want_pkey);
      if (!key) return;
      if (ask_.requester &&
          routing::find_pkey(plan.table(t, ask_.requester->node, ask_.requester->port), *key) ==
              0) {
        return;
      }
      pkey = *key;
    } else if (ask_.want_pkey && (*ask_.want_pkey & 0x7FFF) != 0x7FFF) {
      return;  // no plan: the default partition alone
    }
    std::span<std::uint8_t> r = set_->fresh();
    // Echo what the query fixed that a path does not decide.
    for (const unsigned keep : {kPrServiceIdMsb, kPrServiceIdLsb}) {
      mad::set_field(r, pr(keep), field(keep));
    }
    set_gid(r, pr(kPrSgid), t.port(src.node, src.port).guid.value);
    set_gid(r, pr(kPrDgid), t.port(dst.node, dst.port).guid.value);
    mad::set_field(r, pr(kPrSlid), slid.value);
    mad::set_field(r, pr(kPrDlid), dlid.value);
    mad::set_field(r, pr(kPrReversible), 1);
    // NumbPath is a question (how many paths at most), not part of the
    // answer: OpenSM answers 0 there too.
    mad::set_field(r, pr(kPrPKey), has(kPrPKey) ? field(kPrPKey) : pkey);
    mad::set_field(r, pr(kPrSl), path->sl);
    mad::set_field(r, pr(kPrMtuSelector), kSelExactly);
    mad::set_field(r, pr(kPrMtu), path->mtu);
    mad::set_field(r, pr(kPrRateSelector), kSelExactly);
    mad::set_field(r, pr(kPrRate), path->rate);
    mad::set_field(r, pr(kPrPltSelector), kSelExactly);
    mad::set_field(r, pr(kPrPlt), opts_.packet_life_time);
    // The selectors and their values were matched above; the generic
    // compare must not ask the record to repeat the query's selector.
    const std::uint64_t judged =
        (1ULL << kPrMtuSelector) | (1ULL << kPrMtu) | (1ULL << kPrRateSelector) |
        (1ULL << kPrRate) | (1ULL << kPrPltSelector) | (1ULL << kPrPlt) | (1ULL << kPrSgid) |
        (1ULL << kPrDgid) | (1ULL << kPrPKey) | (1ULL << kPrReversible) | (1ULL << kPrNumbPath);
    set_->offer(req_.comp_mask & ~judged);
  }

 private:
  // What a PathRecord query asks, between path_records() and emit_path().
  struct PathAsk {
    PortRef src;
    Lid slid;
    int mtu_sel = -1, rate_sel = -1, plt_sel = -1;
    std::uint32_t want_mtu = 0, want_rate = 0, want_plt = 0;
    std::optional<std::uint16_t> want_pkey;
    std::optional<PortRef> requester;  // the endport that asked, if its LID is known
  };
  PathAsk ask_;

  const mad::SaMad& req_;
  Lid requester_;
  const state::FabricState& st_;
  const SaAgentOptions& opts_;
  state::PathIndexCache& paths_;
  std::shared_ptr<const state::PathIndex> index_;  // the snapshot's, for PathRecords
  PathBatch* batch_;
  state::McastRegistry* mcast_;
  ServiceRegistry* services_;
  InformRegistry* informs_;
  const RecordLayout* layout_ = nullptr;
  std::span<const std::uint8_t> query_;
  std::optional<RecordSet> set_;  // the records a table query (PathRecords too) answers
};

}  // namespace

SaAgent::SaAgent(SaAgentOptions opts, state::McastRegistry* mcast)
    : opts_(std::move(opts)),
      mcast_(mcast),
      services_(std::make_unique<ServiceRegistry>()),
      informs_(std::make_unique<InformRegistry>()) {}

SaAgent::~SaAgent() = default;

std::vector<MadBytes> SaAgent::answer(std::span<const std::uint8_t> request, Lid requester_lid,
                                      const state::FabricState& state) {
  const SaRequest one{request, requester_lid};
  return std::move(answer_many(std::span(&one, 1), state).front());
}

std::vector<std::vector<MadBytes>> SaAgent::answer_many(std::span<const SaRequest> requests,
                                                        const state::FabricState& state) {
  std::vector<std::vector<MadBytes>> out(requests.size());
  std::vector<mad::SaMad> decoded(requests.size());
  // Not moved once built: the batch points at them.
  std::vector<std::optional<Answer>> answers(requests.size());
  PathBatch batch;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto d = mad::decode_sa(requests[i].bytes);
    if (!d.ok()) {
      malformed_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    decoded[i] = *d;
    const mad::SaMad& req = decoded[i];
    if (req.method == static_cast<std::uint8_t>(Method::kReportResp)) {
      report_acks_.fetch_add(1, std::memory_order_relaxed);  // a subscriber got a Report
      continue;
    }
    if (req.is_response() || req.method == static_cast<std::uint8_t>(Method::kReport)) {
      // Responses, and Reports (the SA sends those; it does not take them).
      ignored_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    requests_.fetch_add(1, std::memory_order_relaxed);
    answers[i].emplace(req, requests[i].requester, state, opts_, paths_, &batch, mcast_,
                       services_.get(), informs_.get());
    answers[i]->run();
  }
  if (!batch.queries.empty()) {
    const std::shared_ptr<const state::PathIndex> index = paths_.get(state);
    std::vector<std::optional<state::PathProperties>> paths(batch.queries.size());
    index->walk_many(state, batch.queries, paths);
    for (std::size_t k = 0; k < paths.size(); ++k) batch.owners[k]->emit_path(paths[k]);
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!answers[i]) continue;
    Answer& a = *answers[i];
    a.finish();
    const mad::SaMad& req = decoded[i];
    mad::SaMad resp = req;
    // A Set is answered with GetResp (IBA 15.2.2), everything else with
    // its own response method.
    resp.method = req.method == static_cast<std::uint8_t>(Method::kSet)
                      ? static_cast<std::uint8_t>(Method::kGetResp)
                      : static_cast<std::uint8_t>(req.method | 0x80);
    resp.status = a.status;
    resp.rmpp = {};
    resp.sm_key = 0;
    resp.data.fill(0);
    if (a.status != mad::status::kOk) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      out[i].push_back(mad::encode_sa(resp));
      continue;
    }
    records_.fetch_add(a.count, std::memory_order_relaxed);
    if (req.method == static_cast<std::uint8_t>(Method::kGetTable) ||
        req.method == static_cast<std::uint8_t>(Method::kGetMulti)) {
      resp.attr_offset = a.attr_offset();
      out[i] = mad::segment_table(resp, a.records);
      continue;
    }
    std::memcpy(resp.data.data(), a.records.data(), std::min(a.records.size(), resp.data.size()));
    out[i].push_back(mad::encode_sa(resp));
  }
  return out;
}

SaStats SaAgent::stats() const {
  SaStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.errors = errors_.load(std::memory_order_relaxed);
  s.records = records_.load(std::memory_order_relaxed);
  s.malformed = malformed_.load(std::memory_order_relaxed);
  s.ignored = ignored_.load(std::memory_order_relaxed);
  s.subscriptions = informs_->size();
  s.reports = reports_.load(std::memory_order_relaxed);
  s.report_acks = report_acks_.load(std::memory_order_relaxed);
  return s;
}

std::vector<Report> SaAgent::reports(const state::FabricState& before,
                                     const state::FabricState& after) {
  if (informs_->size() == 0 || after.topology == nullptr || after.lids == nullptr) return {};
  const std::vector<SaNotice> notices = notices_between(before, after, opts_.subnet_prefix);
  if (notices.empty()) return {};
  // A subscriber that left the subnet loses its subscriptions.
  for (const SaNotice& n : notices) {
    if (n.notice.trap_number == 65) informs_->drop_subscriber(n.subject_gid());
  }
  return reports_for(notices, after, /*changes=*/true);
}

std::vector<Report> SaAgent::forward(const discovery::mad::Notice& notice,
                                     const state::FabricState& st) {
  if (informs_->size() == 0 || st.topology == nullptr || st.lids == nullptr) return {};
  const SaNotice n = forwarded_notice(notice, st, opts_.subnet_prefix);
  return reports_for(std::span<const SaNotice>(&n, 1), st, /*changes=*/false);
}

std::vector<Report> SaAgent::reports_for(std::span<const SaNotice> notices,
                                         const state::FabricState& st, bool changes) {
  std::vector<Report> out;
  const std::shared_ptr<const state::PathIndex> index = paths_.get(st);
  const std::vector<Subscription> subs = informs_->snapshot();
  for (const SaNotice& n : notices) {
    const auto body = n.bytes();
    for (const Subscription& s : subs) {
      // A change the subscriber could have seen when it subscribed.
      if (changes && st.generation <= s.since) continue;
      if (!wants(s, n, st, *index, opts_.subnet_prefix)) continue;
      const Guid guid{discovery::mad::load_be64(s.subscriber.data() + 8)};
      const auto port = index->endport_of_guid(st, guid);
      if (!port) continue;  // not reachable now
      mad::SaMad m;
      m.method = static_cast<std::uint8_t>(Method::kReport);
      m.tid = next_report_tid_.fetch_add(1, std::memory_order_relaxed);
      m.attr_id = static_cast<std::uint16_t>(Attr::kNotice);
      std::memcpy(m.data.data(), body.data(), body.size());
      Report r;
      r.dlid = st.lids->base_lid(*st.topology, port->node, port->port).value;
      r.qpn = discovery::mad::load_be24(s.info.data() + 28);
      r.mad = mad::encode_sa(m);
      out.push_back(r);
    }
  }
  reports_.fetch_add(out.size(), std::memory_order_relaxed);
  return out;
}

}  // namespace subnetd::daemon::sa

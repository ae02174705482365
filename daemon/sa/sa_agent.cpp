// The SA agent: decode, dispatch by attribute and method, build the records
// from the snapshot, filter them by the query, answer. See sa_agent.hpp.

#include "daemon/sa/sa_agent.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "daemon/sa/mcmember.hpp"
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
constexpr std::uint8_t kSelGreater = 0, kSelLess = 1, kSelExactly = 2, kSelLargest = 3;

// PathRecord component bits (the order of sa.cpp's kPathRecord).
enum PrBit : unsigned {
  kPrServiceIdMsb = 0,
  kPrServiceIdLsb = 1,
  kPrDgid = 2,
  kPrSgid = 3,
  kPrDlid = 4,
  kPrSlid = 5,
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
         state::McastRegistry* mcast)
      : req_(req),
        requester_(requester),
        st_(st),
        opts_(opts),
        paths_(paths),
        batch_(batch),
        mcast_(mcast) {}

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
    if (attr == Attr::kClassPortInfo) {
      if (method != Method::kGet) {
        status = mad::status::kMethodAttrUnsupported;
        return;
      }
      class_port_info();
      return;
    }
    layout_ = mad::layout_of(req_.attr_id);
    if (attr == Attr::kMcMemberRecord && mcast_ != nullptr) {
      if (st_.topology == nullptr || st_.lids == nullptr) {
        status = mad::status::kNoResources;
        return;
      }
      McAnswer a = answer_mcmember(req_, requester_, st_, opts_, *paths_.get(st_), *mcast_);
      status = a.status;
      records = std::move(a.records);
      count = a.count;
      return;
    }
    const bool served = attr == Attr::kNodeRecord || attr == Attr::kPortInfoRecord ||
                        attr == Attr::kLinkRecord || attr == Attr::kPathRecord ||
                        attr == Attr::kLftRecord || attr == Attr::kPKeyTableRecord;
    if (layout_ == nullptr || !served || (method != Method::kGet && method != Method::kGetTable)) {
      status = mad::status::kMethodAttrUnsupported;
      return;
    }
    if (st_.topology == nullptr || st_.lids == nullptr || st_.routes == nullptr) {
      status = mad::status::kNoResources;  // no fabric yet: ask again later
      return;
    }
    stride_ = std::size_t{layout_->attr_offset()} * 8;
    query_ = std::span<const std::uint8_t>(req_.data.data(), layout_->size);
    switch (attr) {
      case Attr::kNodeRecord:
        node_records();
        break;
      case Attr::kLinkRecord:
        link_records();
        break;
      case Attr::kLftRecord:
        lft_records();
        break;
      case Attr::kPortInfoRecord:
        port_info_records();
        break;
      case Attr::kPKeyTableRecord:
        pkey_table_records();
        break;
      default:
        path_records();
        break;
    }
  }

  // After run() and, for PathRecords in a batch, every emit_path(): a Get
  // answers exactly one record.
  void finish() {
    if (status != mad::status::kOk) return;
    if (req_.method == static_cast<std::uint8_t>(Method::kGet) && count != 1) {
      status = count == 0 ? mad::status::kNoRecords : mad::status::kTooManyRecords;
    }
  }

  std::uint16_t attr_offset() const { return layout_ ? layout_->attr_offset() : 0; }

 private:
  // A record buffer the builders fill; offer() keeps it when it matches
  // the query on the components of `mask` (by default the query's own).
  std::span<std::uint8_t> fresh() {
    scratch_.assign(layout_->size, 0);
    return scratch_;
  }
  void offer() { offer(req_.comp_mask); }
  void offer(std::uint64_t mask) {
    if (!mad::matches(*layout_, mask, query_, scratch_)) return;
    const std::size_t at = records.size();
    records.resize(at + stride_, 0);
    std::memcpy(&records[at], scratch_.data(), layout_->size);
    ++count;
  }
  void set(std::span<std::uint8_t> r, const char* name, std::uint64_t v) {
    mad::set_field(r, mad::component(*layout_, name), v);
  }
  void set_gid(std::span<std::uint8_t> r, const mad::Component& c, std::uint64_t guid) {
    const std::size_t at = c.offset / 8;
    mad::set_field(r.subspan(at, 8), {"prefix", 0, 64}, opts_.subnet_prefix);
    mad::set_field(r.subspan(at + 8, 8), {"guid", 0, 64}, guid);
  }

  void class_port_info() {
    // ClassPortInfo (IBA 13.4.8.1): versions, no optional capabilities yet,
    // RespTimeValue 16 (4.096 us x 2^16 = 268 ms, what OpenSM reports, so
    // clients keep the timeouts they use with it), requests and traps on
    // QP1 with the GSI Q_Key, as OpenSM fills them.
    records.assign(72, 0);
    records[0] = 1;
    records[1] = mad::kClassVersion;
    records[7] = 16;
    records[35] = 1;                                     // RedirectQP
    discovery::mad::store_be32(&records[36], kGsiQKey);  // RedirectQ_Key
    discovery::mad::store_be32(&records[68], kGsiQKey);  // TrapQ_Key
    count = 1;
  }

  // The LID a node answers by at port p: a switch's port-0 LID, a CA port's
  // own.
  Lid lid_at(NodeId n, PortNum p) const {
    const routing::Topology& t = *st_.topology;
    const PortNum at = t.node(n).type == routing::NodeType::kSwitch ? PortNum{0} : p;
    return st_.lids->base_lid(t, n, at);
  }

  // Calls f(port, its base LID) for every endport with a LID: a switch's
  // port 0, every CA/router port.
  template <class F>
  void for_each_endport(F&& f) const {
    const routing::Topology& t = *st_.topology;
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      const NodeId n{i};
      const bool sw = t.node(n).type == routing::NodeType::kSwitch;
      for (unsigned pi = sw ? 0 : 1; pi <= (sw ? 0U : t.node(n).num_ports); ++pi) {
        const auto p = static_cast<PortNum>(pi);
        const Lid lid = st_.lids->base_lid(t, n, p);
        if (lid.value != 0) f(PortRef{n, p}, lid);
      }
    }
  }

  void node_records() {
    const routing::Topology& t = *st_.topology;
    for_each_endport([&](PortRef end, Lid lid) {
      const NodeId n = end.node;
      const PortNum p = end.port;
      const routing::Node& node = t.node(n);
      std::span<std::uint8_t> r = fresh();
      set(r, "LID", lid.value);
      set(r, "BaseVersion", 1);
      set(r, "ClassVersion", 1);
      set(r, "NodeType", static_cast<std::uint8_t>(node.type));
      set(r, "NumPorts", node.num_ports);
      set(r, "SystemImageGUID", node.system_guid.value);
      set(r, "NodeGUID", node.guid.value);
      set(r, "PortGUID", t.port(n, p).guid.value);
      set(r, "PartitionCap", node.partition_cap);
      set(r, "DeviceID", node.device_id);
      set(r, "Revision", node.revision);
      set(r, "LocalPortNum", p);
      set(r, "VendorID", node.vendor_id);
      const std::size_t desc = mad::component(*layout_, "NodeDescription").offset / 8;
      std::memcpy(&r[desc], node.description.data(),
                  std::min<std::size_t>(64, node.description.size()));
      offer();
    });
  }

  // One record per port the sweep read (a switch's ports 0..N, a CA's
  // 1..N), under the LID of its endport (a switch's port-0 LID): the
  // PortInfo as read, with what the SM set since patched in from the
  // topology (PortState; on endports the LID, LMC, MasterSMLID and GID
  // prefix it programmed; NeighborMTU and OperationalVLs on ports the
  // Programmer wrote, by discovery::port_link_settings). A query naming
  // the LID is answered from that node alone.
  void port_info_records() {
    const routing::Topology& t = *st_.topology;
    if (st_.port_info == nullptr) return;
    const auto& read = *st_.port_info;
    const std::uint32_t lid_bit = 0;
    const auto& lid_c = layout_->components[lid_bit];
    std::vector<NodeId> nodes;
    if ((req_.comp_mask >> lid_bit) & 1U) {
      const PortRef owner =
          st_.lids->owner_of(Lid{static_cast<std::uint32_t>(mad::get_field(query_, lid_c))});
      if (owner.node.valid()) nodes.push_back(owner.node);
    } else {
      nodes.reserve(t.num_nodes());
      for (std::uint32_t i = 0; i < t.num_nodes(); ++i) nodes.push_back(NodeId{i});
    }
    constexpr std::array<std::uint8_t, 64> kNotRead{};
    for (const NodeId n : nodes) {
      const bool sw = t.node(n).type == routing::NodeType::kSwitch;
      for (unsigned pi = sw ? 0 : 1; pi <= t.node(n).num_ports; ++pi) {
        const auto p = static_cast<PortNum>(pi);
        const std::uint32_t at = t.port_index(n, p);
        if (at >= read.size() || read[at] == kNotRead) continue;
        const Lid lid = lid_at(n, p);
        if (lid.value == 0 || lid.value > 0xFFFF) continue;
        const routing::Port& port = t.port(n, p);
        auto info = discovery::mad::PortInfo::decode(read[at]);
        const bool endport = !sw || p == 0;
        // Whether the Programmer wrote this PortInfo since the sweep read it:
        // it moves every port that was not ACTIVE, and sets an endport whose
        // LID, LMC or MasterSMLID differ; each Set carries its link settings.
        const bool written =
            info.port_state != static_cast<std::uint8_t>(routing::PortState::kActive) ||
            (endport && (info.lid != port.lid.value || info.lmc != port.lmc ||
                         info.master_sm_lid != port.master_sm_lid.value));
        if (port.state != routing::PortState::kNoChange) {
          info.port_state = static_cast<std::uint8_t>(port.state);
        }
        if (written) {
          const discovery::PortLinkSettings link = discovery::port_link_settings(t, read, n, p);
          info.neighbor_mtu = link.neighbor_mtu != 0 ? link.neighbor_mtu : info.neighbor_mtu;
          info.operational_vls = link.operational_vls;
        }
        if (endport) {  // what the SM programmed
          if (port.lid.value != 0 && port.lid.value <= 0xFFFF) {
            info.lid = static_cast<std::uint16_t>(port.lid.value);
            info.lmc = port.lmc;
            info.gid_prefix = opts_.subnet_prefix;
          }
          if (port.master_sm_lid.value != 0 && port.master_sm_lid.value <= 0xFFFF) {
            info.master_sm_lid = static_cast<std::uint16_t>(port.master_sm_lid.value);
          }
        }
        std::span<std::uint8_t> r = fresh();
        mad::set_field(r, lid_c, lid.value);
        mad::set_field(r, layout_->components[1], p);  // PortNum
        info.encode(discovery::mad::SmpData(r.subspan(4, 64)));
        offer();
      }
    }
  }

  void link_records() {
    const routing::Topology& t = *st_.topology;
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      const NodeId n{i};
      for (unsigned pi = 1; pi <= t.node(n).num_ports; ++pi) {
        const auto p = static_cast<PortNum>(pi);
        const routing::Port& port = t.port(n, p);
        if (!port.connected()) continue;
        const Lid from = lid_at(n, p), to = lid_at(port.remote_node, port.remote_port);
        if (from.value == 0 || to.value == 0) continue;
        std::span<std::uint8_t> r = fresh();
        set(r, "FromLID", from.value);
        set(r, "FromPort", p);
        set(r, "ToPort", port.remote_port);
        set(r, "ToLID", to.value);
        offer();
      }
    }
  }

  // The tables the SM programmed (the published routes), block by block up
  // to the highest LID in use. A query naming the LID or the block is
  // answered from that switch or block alone: every block of every switch
  // is 17 million records at k=80.
  void lft_records() {
    const routing::Topology& t = *st_.topology;
    const routing::Routes& routes = *st_.routes;
    const std::uint64_t mask = req_.comp_mask;
    const auto& lid_c = mad::component(*layout_, "LID");
    const auto& block_c = mad::component(*layout_, "BlockNum");
    const auto& table_c = mad::component(*layout_, "LinearForwardingTable");
    const std::uint32_t lid_bit = 0, block_bit = 1;
    std::vector<NodeId> switches;
    if ((mask >> lid_bit) & 1U) {
      const PortRef owner =
          st_.lids->owner_of(Lid{static_cast<std::uint32_t>(mad::get_field(query_, lid_c))});
      if (owner.node.valid() && t.node(owner.node).type == routing::NodeType::kSwitch) {
        switches.push_back(owner.node);
      }
    } else {
      switches.assign(t.switches().begin(), t.switches().end());
    }
    const std::uint32_t blocks = routes.max_lid.value / routing::kLftBlockSize + 1;
    std::uint32_t first = 0, last = blocks;
    if ((mask >> block_bit) & 1U) {
      first = static_cast<std::uint32_t>(mad::get_field(query_, block_c));
      last = std::min(blocks, first + 1);
    }
    for (const NodeId n : switches) {
      const Lid lid = st_.lids->base_lid(t, n, 0);
      const std::uint32_t sw = t.node(n).switch_index.value;
      // The SA speaks IBA's 16-bit LIDs; extended ones have no record.
      if (lid.value == 0 || lid.value > 0xFFFF || sw >= routes.lfts.size()) continue;
      const routing::Lft& lft = routes.lfts[sw];
      for (std::uint32_t b = first; b < last && b < lft.num_blocks(); ++b) {
        std::span<std::uint8_t> r = fresh();
        mad::set_field(r, lid_c, lid.value);
        mad::set_field(r, block_c, b);
        std::memcpy(&r[table_c.offset / 8], lft.block(b).data(), routing::kLftBlockSize);
        offer();
      }
    }
  }

  // The P_Key tables the SM programmed (the published plan), every block of
  // each port's capacity, under the LID of the port's node.
  void pkey_table_records() {
    if (st_.partitions == nullptr) return;
    const routing::Topology& t = *st_.topology;
    const routing::PartitionPlan& plan = *st_.partitions;
    const std::uint64_t mask = req_.comp_mask;
    const auto& lid_c = mad::component(*layout_, "LID");
    const auto& block_c = mad::component(*layout_, "BlockNum");
    const auto& port_c = mad::component(*layout_, "PortNum");
    const auto& table_c = mad::component(*layout_, "P_KeyTable");
    auto emit = [&](NodeId n, PortNum p) {
      const Lid lid = lid_at(n, p);
      const auto table = plan.table(t, n, p);
      if (lid.value == 0 || lid.value > 0xFFFF || table.empty()) return;
      for (unsigned b = 0; b < discovery::pkey_blocks(t, n, p); ++b) {
        std::span<std::uint8_t> r = fresh();
        mad::set_field(r, lid_c, lid.value);
        mad::set_field(r, block_c, b);
        mad::set_field(r, port_c, p);
        for (std::size_t k = 0; k < routing::kPKeyBlockEntries; ++k) {
          const std::size_t at = b * routing::kPKeyBlockEntries + k;
          discovery::mad::store_be16(&r[table_c.offset / 8 + 2 * k],
                                     at < table.size() ? table[at] : 0);
        }
        offer();
      }
    };
    // By LID: that node's ports (a switch's all, a CA's port with the LID).
    if ((mask & 1U) != 0) {
      const PortRef owner =
          st_.lids->owner_of(Lid{static_cast<std::uint32_t>(mad::get_field(query_, lid_c))});
      if (!owner.node.valid()) return;
      if (t.node(owner.node).type != routing::NodeType::kSwitch) {
        emit(owner.node, owner.port);
        return;
      }
      for (unsigned p = 0; p <= t.node(owner.node).num_ports; ++p) {
        emit(owner.node, static_cast<PortNum>(p));
      }
      return;
    }
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      for (unsigned p = 0; p <= t.node(NodeId{i}).num_ports; ++p) {
        emit(NodeId{i}, static_cast<PortNum>(p));
      }
    }
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
      for_each_endport([&](PortRef end, Lid lid) { dsts.emplace_back(end, lid); });
    }
    // What the query asks of the path.
    if (has(kPrSl) && field(kPrSl) != 0) return;
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
    std::span<std::uint8_t> r = fresh();
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
    offer(req_.comp_mask & ~judged);
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
  const RecordLayout* layout_ = nullptr;
  std::size_t stride_ = 0;
  std::span<const std::uint8_t> query_;
  std::vector<std::uint8_t> scratch_;
};

}  // namespace

SaAgent::SaAgent(SaAgentOptions opts, state::McastRegistry* mcast) : opts_(opts), mcast_(mcast) {}

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
    if (req.is_response() || req.method == static_cast<std::uint8_t>(Method::kReport)) {
      // Responses, and Reports (the SA sends those; it does not take them).
      ignored_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    requests_.fetch_add(1, std::memory_order_relaxed);
    answers[i].emplace(req, requests[i].requester, state, opts_, paths_, &batch, mcast_);
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
    if (req.method == static_cast<std::uint8_t>(Method::kGetTable)) {
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
  return {requests_.load(std::memory_order_relaxed), errors_.load(std::memory_order_relaxed),
          records_.load(std::memory_order_relaxed), malformed_.load(std::memory_order_relaxed),
          ignored_.load(std::memory_order_relaxed)};
}

}  // namespace subnetd::daemon::sa

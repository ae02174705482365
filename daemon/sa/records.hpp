#pragma once
// The SA's record tables: the records of one attribute built from a
// published FabricState and filtered by a query (a template record and its
// ComponentMask, IBA 15.2.4). sa_agent.cpp decodes, dispatches and answers;
// the builders here only say which records exist:
//
//  - records.cpp: NodeRecord, PortInfoRecord, LinkRecord,
//    LinearForwardingTableRecord, P_KeyTableRecord;
//  - records_switch.cpp: SwitchInfoRecord, MulticastForwardingTableRecord,
//    SMInfoRecord, GuidInfoRecord;
//  - records_vl.cpp: SLtoVLMappingTableRecord, VLArbitrationTableRecord.
//
// Every builder reads only the snapshot it is given (never the SM's live
// state), so it runs on any thread. A query naming the LID (and the block,
// where there is one) is answered from that node (block) alone: the tables
// hold millions of records at k=80.

#include <cstdint>
#include <span>
#include <vector>

#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"
#include "routing/topology.hpp"
#include "state/fabric_state.hpp"

namespace subnetd::daemon::sa {

// The records that answer one query: each is built into a fresh buffer
// and kept (appended, `stride` bytes apart) when it matches the query on the
// components of the mask.
class RecordSet {
 public:
  RecordSet(const discovery::mad::sa::RecordLayout& layout, std::span<const std::uint8_t> query,
            std::uint64_t comp_mask)
      : layout_(layout), query_(query), mask_(comp_mask) {}

  const discovery::mad::sa::RecordLayout& layout() const { return layout_; }
  std::uint64_t mask() const { return mask_; }
  bool has(unsigned bit) const { return bit < 64 && ((mask_ >> bit) & 1U) != 0; }
  // A component of the query, by name or by its bit.
  std::uint64_t query(const char* name) const {
    return discovery::mad::sa::get_field(query_, comp(name));
  }
  std::uint64_t query(unsigned bit) const {
    return discovery::mad::sa::get_field(query_, layout_.components[bit]);
  }
  std::span<const std::uint8_t> query_bytes() const { return query_; }
  const discovery::mad::sa::Component& comp(const char* name) const {
    return discovery::mad::sa::component(layout_, name);
  }
  // Whether the query selects component `name`.
  bool has(const char* name) const;

  // A zeroed record to fill, then offer() it: it is kept when it matches
  // the query on the components of `mask` (the query's own by default).
  std::span<std::uint8_t> fresh() {
    scratch_.assign(layout_.size, 0);
    return scratch_;
  }
  void set(const char* name, std::uint64_t v) {
    discovery::mad::sa::set_field(scratch_, comp(name), v);
  }
  void set(unsigned bit, std::uint64_t v) {
    discovery::mad::sa::set_field(scratch_, layout_.components[bit], v);
  }
  void offer() { offer(mask_); }
  void offer(std::uint64_t mask);

  std::vector<std::uint8_t> records;
  std::size_t count = 0;

 private:
  const discovery::mad::sa::RecordLayout& layout_;
  std::span<const std::uint8_t> query_;
  std::uint64_t mask_;
  std::vector<std::uint8_t> scratch_;
};

// What every builder reads.
struct RecordContext {
  const state::FabricState& st;  // topology, lids and routes are non-null
  const SaAgentOptions& opts;
  Lid requester;
};

// The LID a node answers by at port p: a switch's port-0 LID, a CA port's
// own (0 when none).
Lid lid_at(const state::FabricState& st, NodeId n, PortNum p);
// The nodes a query selects by the LID component `lid_name` when the query
// sets it (the node holding that LID, if any), else every node.
std::vector<NodeId> nodes_of_query(const RecordContext& cx, const RecordSet& set,
                                   const char* lid_name);
// Calls f(port, its base LID) for every endport with a LID: a switch's
// port 0, every CA/router port.
template <class F>
void for_each_endport(const state::FabricState& st, F&& f) {
  const routing::Topology& t = *st.topology;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const bool sw = t.node(n).type == routing::NodeType::kSwitch;
    for (unsigned pi = sw ? 0 : 1; pi <= (sw ? 0U : t.node(n).num_ports); ++pi) {
      const auto p = static_cast<PortNum>(pi);
      const Lid lid = st.lids->base_lid(t, n, p);
      if (lid.value != 0) f(PortRef{n, p}, lid);
    }
  }
}

void node_records(const RecordContext& cx, RecordSet& out);
void port_info_records(const RecordContext& cx, RecordSet& out);
void link_records(const RecordContext& cx, RecordSet& out);
void lft_records(const RecordContext& cx, RecordSet& out);
void pkey_table_records(const RecordContext& cx, RecordSet& out);

void switch_info_records(const RecordContext& cx, RecordSet& out);
void mft_records(const RecordContext& cx, RecordSet& out);
void sm_info_records(const RecordContext& cx, RecordSet& out);
void guid_info_records(const RecordContext& cx, RecordSet& out);
void sl2vl_records(const RecordContext& cx, RecordSet& out);
void vlarb_records(const RecordContext& cx, RecordSet& out);

}  // namespace subnetd::daemon::sa

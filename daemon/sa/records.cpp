// The SA's tables of what the sweep found and the SM programmed: nodes,
// ports, links, LFTs and P_Key tables. See records.hpp.

#include "daemon/sa/records.hpp"

#include <algorithm>
#include <cstring>

#include "discovery/mad/bytes.hpp"
#include "discovery/programmer.hpp"

namespace subnetd::daemon::sa {

namespace mad = discovery::mad::sa;

bool RecordSet::has(const char* name) const {
  for (std::size_t i = 0; i < layout_.components.size() && i < 64; ++i) {
    if (std::strcmp(layout_.components[i].name, name) == 0) return has(static_cast<unsigned>(i));
  }
  return false;
}

void RecordSet::offer(std::uint64_t mask) {
  if (!mad::matches(layout_, mask, query_, scratch_)) return;
  const std::size_t stride = std::size_t{layout_.attr_offset()} * 8;
  const std::size_t at = records.size();
  records.resize(at + stride, 0);
  std::memcpy(&records[at], scratch_.data(), layout_.size);
  ++count;
}

Lid lid_at(const state::FabricState& st, NodeId n, PortNum p) {
  const routing::Topology& t = *st.topology;
  const PortNum at = t.node(n).type == routing::NodeType::kSwitch ? PortNum{0} : p;
  return st.lids->base_lid(t, n, at);
}

std::vector<NodeId> nodes_of_query(const RecordContext& cx, const RecordSet& set,
                                   const char* lid_name) {
  const routing::Topology& t = *cx.st.topology;
  std::vector<NodeId> nodes;
  if (set.has(lid_name)) {
    const PortRef owner =
        cx.st.lids->owner_of(Lid{static_cast<std::uint32_t>(set.query(lid_name))});
    if (owner.node.valid()) nodes.push_back(owner.node);
    return nodes;
  }
  nodes.reserve(t.num_nodes());
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) nodes.push_back(NodeId{i});
  return nodes;
}

void node_records(const RecordContext& cx, RecordSet& out) {
  const routing::Topology& t = *cx.st.topology;
  for_each_endport(cx.st, [&](PortRef end, Lid lid) {
    const NodeId n = end.node;
    const PortNum p = end.port;
    const routing::Node& node = t.node(n);
    std::span<std::uint8_t> r = out.fresh();
    out.set("LID", lid.value);
    out.set("BaseVersion", 1);
    out.set("ClassVersion", 1);
    out.set("NodeType", static_cast<std::uint8_t>(node.type));
    out.set("NumPorts", node.num_ports);
    out.set("SystemImageGUID", node.system_guid.value);
    out.set("NodeGUID", node.guid.value);
    out.set("PortGUID", t.port(n, p).guid.value);
    out.set("PartitionCap", node.partition_cap);
    out.set("DeviceID", node.device_id);
    out.set("Revision", node.revision);
    out.set("LocalPortNum", p);
    out.set("VendorID", node.vendor_id);
    const std::size_t desc = out.comp("NodeDescription").offset / 8;
    std::memcpy(&r[desc], node.description.data(),
                std::min<std::size_t>(64, node.description.size()));
    out.offer();
  });
}

// One record per port the sweep read (a switch's ports 0..N, a CA's 1..N),
// under the LID of its endport (a switch's port-0 LID): the PortInfo as
// read, with what the SM set since patched in from the topology
// (PortState; on endports the LID, LMC, MasterSMLID and GID prefix it
// programmed; NeighborMTU and OperationalVLs on ports the Programmer wrote,
// by discovery::port_link_settings).
void port_info_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  const routing::Topology& t = *st.topology;
  if (st.port_info == nullptr) return;
  const auto& read = *st.port_info;
  constexpr std::array<std::uint8_t, 64> kNotRead{};
  for (const NodeId n : nodes_of_query(cx, out, "EndportLID")) {
    const bool sw = t.node(n).type == routing::NodeType::kSwitch;
    for (unsigned pi = sw ? 0 : 1; pi <= t.node(n).num_ports; ++pi) {
      const auto p = static_cast<PortNum>(pi);
      const std::uint32_t at = t.port_index(n, p);
      if (at >= read.size() || read[at] == kNotRead) continue;
      const Lid lid = lid_at(st, n, p);
      if (lid.value == 0 || lid.value > 0xFFFF) continue;
      const routing::Port& port = t.port(n, p);
      auto info = discovery::mad::PortInfo::decode(read[at]);
      const bool endport = !sw || p == 0;
      // Whether the Programmer wrote this PortInfo since the sweep read it:
      // it moves every port that was not ACTIVE, and sets an endport whose
      // LID, LMC or MasterSMLID differ; each Set carries its link settings.
      const discovery::PortLinkSettings link = discovery::port_link_settings(
          t, read, n, p, st.routes != nullptr ? st.routes->num_vls : 1U);
      // ... and a switch port whose OperationalVLs the routing's layers
      // changed (the Programmer's phase 1c).
      const bool written =
          info.port_state != static_cast<std::uint8_t>(routing::PortState::kActive) ||
          (endport && (info.lid != port.lid.value || info.lmc != port.lmc ||
                       info.master_sm_lid != port.master_sm_lid.value)) ||
          (sw && p != 0 && port.connected() && link.operational_vls != 0 &&
           link.operational_vls != info.operational_vls);
      if (port.state != routing::PortState::kNoChange) {
        info.port_state = static_cast<std::uint8_t>(port.state);
      }
      if (written) {
        info.neighbor_mtu = link.neighbor_mtu != 0 ? link.neighbor_mtu : info.neighbor_mtu;
        info.operational_vls = link.operational_vls;
      }
      if (endport) {  // what the SM programmed
        if (port.lid.value != 0 && port.lid.value <= 0xFFFF) {
          info.lid = static_cast<std::uint16_t>(port.lid.value);
          info.lmc = port.lmc;
          info.gid_prefix = cx.opts.subnet_prefix;
        }
        if (port.master_sm_lid.value != 0 && port.master_sm_lid.value <= 0xFFFF) {
          info.master_sm_lid = static_cast<std::uint16_t>(port.master_sm_lid.value);
        }
      }
      std::span<std::uint8_t> r = out.fresh();
      out.set("EndportLID", lid.value);
      out.set("PortNum", p);
      info.encode(discovery::mad::SmpData(r.subspan(4, 64)));
      out.offer();
    }
  }
}

void link_records(const RecordContext& cx, RecordSet& out) {
  const routing::Topology& t = *cx.st.topology;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    for (unsigned pi = 1; pi <= t.node(n).num_ports; ++pi) {
      const auto p = static_cast<PortNum>(pi);
      const routing::Port& port = t.port(n, p);
      if (!port.connected()) continue;
      const Lid from = lid_at(cx.st, n, p), to = lid_at(cx.st, port.remote_node, port.remote_port);
      if (from.value == 0 || to.value == 0) continue;
      out.fresh();
      out.set("FromLID", from.value);
      out.set("FromPort", p);
      out.set("ToPort", port.remote_port);
      out.set("ToLID", to.value);
      out.offer();
    }
  }
}

// The tables the SM programmed (the published routes), block by block up to
// the highest LID in use.
void lft_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  const routing::Topology& t = *st.topology;
  const routing::Routes& routes = *st.routes;
  const std::uint32_t blocks = routes.max_lid.value / routing::kLftBlockSize + 1;
  std::uint32_t first = 0, last = blocks;
  if (out.has("BlockNum")) {
    first = static_cast<std::uint32_t>(out.query("BlockNum"));
    last = std::min(blocks, first + 1);
  }
  const auto& table_c = out.comp("LinearForwardingTable");
  for (const NodeId n : nodes_of_query(cx, out, "LID")) {
    if (t.node(n).type != routing::NodeType::kSwitch) continue;
    const Lid lid = st.lids->base_lid(t, n, 0);
    const std::uint32_t sw = t.node(n).switch_index.value;
    // The SA speaks IBA's 16-bit LIDs; extended ones have no record.
    if (lid.value == 0 || lid.value > 0xFFFF || sw >= routes.lfts.size()) continue;
    const routing::Lft& lft = routes.lfts[sw];
    for (std::uint32_t b = first; b < last && b < lft.num_blocks(); ++b) {
      std::span<std::uint8_t> r = out.fresh();
      out.set("LID", lid.value);
      out.set("BlockNum", b);
      std::memcpy(&r[table_c.offset / 8], lft.block(b).data(), routing::kLftBlockSize);
      out.offer();
    }
  }
}

// The P_Key tables the SM programmed (the published plan), every block of
// each port's capacity, under the LID of the port's node; by LID, that
// node's ports (a switch's all, a CA's port with the LID).
void pkey_table_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  if (st.partitions == nullptr) return;
  const routing::Topology& t = *st.topology;
  const routing::PartitionPlan& plan = *st.partitions;
  const auto& table_c = out.comp("P_KeyTable");
  auto emit = [&](NodeId n, PortNum p) {
    const Lid lid = lid_at(st, n, p);
    const auto table = plan.table(t, n, p);
    if (lid.value == 0 || lid.value > 0xFFFF || table.empty()) return;
    for (unsigned b = 0; b < discovery::pkey_blocks(t, n, p); ++b) {
      std::span<std::uint8_t> r = out.fresh();
      out.set("LID", lid.value);
      out.set("BlockNum", b);
      out.set("PortNum", p);
      for (std::size_t k = 0; k < routing::kPKeyBlockEntries; ++k) {
        const std::size_t at = b * routing::kPKeyBlockEntries + k;
        discovery::mad::store_be16(&r[table_c.offset / 8 + 2 * k],
                                   at < table.size() ? table[at] : 0);
      }
      out.offer();
    }
  };
  if (out.has("LID")) {
    const PortRef owner = st.lids->owner_of(Lid{static_cast<std::uint32_t>(out.query("LID"))});
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

}  // namespace subnetd::daemon::sa

// The SA's tables of switch state, SMs and GUIDs: SwitchInfoRecord,
// MulticastForwardingTableRecord, SMInfoRecord and GuidInfoRecord. See
// records.hpp.

#include <algorithm>
#include <cstring>

#include "daemon/sa/records.hpp"
#include "discovery/mad/bytes.hpp"
#include "discovery/sm_agent.hpp"
#include "routing/mcast.hpp"

namespace subnetd::daemon::sa {

namespace {
constexpr std::array<std::uint8_t, 64> kNotRead{};

// An SMP attribute as the tail of a record that starts with LID and 16
// reserved bits (SwitchInfoRecord, SMInfoRecord): as much of it as the
// record holds.
template <class Attribute>
void put_attribute(std::span<std::uint8_t> record, const Attribute& a) {
  std::array<std::uint8_t, 64> wire{};
  a.encode(discovery::mad::SmpData(wire));
  std::memcpy(&record[4], wire.data(), std::min<std::size_t>(wire.size(), record.size() - 4));
}
}  // namespace

// One record per switch with a 16-bit LID whose SwitchInfo the sweep read:
// the attribute as read, with what the Programmer writes at every pass
// patched in (LinearFDBTop in the 16-bit mode, MulticastFDBTop,
// LifeTimeValue, PortStateChange cleared), as OpenSM answers from its own
// copy of what it set.
void switch_info_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  if (st.switch_info == nullptr) return;
  const routing::Topology& t = *st.topology;
  const auto& read = *st.switch_info;
  for (const NodeId n : nodes_of_query(cx, out, "LID")) {
    if (t.node(n).type != routing::NodeType::kSwitch) continue;
    const std::uint32_t sw = t.node(n).switch_index.value;
    const Lid lid = st.lids->base_lid(t, n, 0);
    if (sw >= read.size() || read[sw] == kNotRead || lid.value == 0 || lid.value > 0xFFFF) {
      continue;
    }
    auto si = discovery::mad::SwitchInfo::decode(read[sw]);
    if (st.routes->max_lid.value <= 0xFFFF) {
      si.linear_fdb_top = static_cast<std::uint16_t>(st.routes->max_lid.value);
    }
    si.multicast_fdb_top = 0xBFFF;
    if (st.multicast != nullptr && st.multicast->max_mlid() >= routing::kMlidBase) {
      si.multicast_fdb_top = static_cast<std::uint16_t>(st.multicast->max_mlid());
    }
    si.life_time_value = 18;
    si.port_state_change = false;
    std::span<std::uint8_t> r = out.fresh();
    out.set("LID", lid.value);
    put_attribute(r, si);
    out.offer();
  }
}

// The multicast trees the SM programmed: per switch with a 16-bit LID,
// blocks of 32 MLIDs from 0xC000 up to the highest in use, one record per
// position (16 ports) that the switch has.
void mft_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  if (st.multicast == nullptr || st.multicast->max_mlid() < routing::kMlidBase) return;
  const routing::Topology& t = *st.topology;
  const routing::McastTables& mc = *st.multicast;
  const std::uint32_t blocks = (mc.max_mlid() - routing::kMlidBase) / routing::kMftBlockEntries + 1;
  std::uint32_t first = 0, last = blocks;
  if (out.has("BlockNum")) {
    first = static_cast<std::uint32_t>(out.query("BlockNum"));
    last = std::min(blocks, first + 1);
  }
  const auto& table_c = out.comp("MulticastForwardingTable");
  for (const NodeId n : nodes_of_query(cx, out, "LID")) {
    if (t.node(n).type != routing::NodeType::kSwitch) continue;
    const Lid lid = st.lids->base_lid(t, n, 0);
    if (lid.value == 0 || lid.value > 0xFFFF) continue;
    const SwitchIndex s = t.node(n).switch_index;
    const std::uint32_t positions =
        (t.node(n).num_ports + routing::kMftPortsPerPosition) / routing::kMftPortsPerPosition;
    for (std::uint32_t pos = 0; pos < positions; ++pos) {
      if (out.has("Position") && out.query("Position") != pos) continue;
      for (std::uint32_t b = first; b < last; ++b) {
        std::span<std::uint8_t> r = out.fresh();
        out.set("LID", lid.value);
        out.set("Position", pos);
        out.set("BlockNum", b);
        for (std::uint32_t i = 0; i < routing::kMftBlockEntries; ++i) {
          const routing::PortMask m =
              mc.ports(s, Lid{routing::kMlidBase + b * routing::kMftBlockEntries + i});
          std::uint16_t bits = 0;
          for (unsigned k = 0; k < routing::kMftPortsPerPosition; ++k) {
            if (m.test(static_cast<PortNum>(pos * routing::kMftPortsPerPosition + k))) {
              bits = static_cast<std::uint16_t>(bits | (1U << k));
            }
          }
          discovery::mad::store_be16(&r[table_c.offset / 8 + 2 * i], bits);
        }
        out.offer();
      }
    }
  }
}

// The SMs of the subnet: subnetd itself, as its port answers SMInfo (the
// master while it has published a programmed fabric), under the LID of
// its port. SM_Key reads 0: subnetd does not use one, and IBA has the SA
// hide it from requesters that do not know it anyway.
void sm_info_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  if (!st.sm_node.valid() || st.sm_lid.value == 0 || st.sm_lid.value > 0xFFFF) return;
  const routing::Topology& t = *st.topology;
  discovery::mad::SmInfo info;
  info.guid = t.port(st.sm_node, st.sm_port).guid.value;
  info.sm_key = 0;
  // ActCount grows while the SM is active: one for every snapshot it
  // published (bring-ups, repairs, multicast changes).
  info.act_count = static_cast<std::uint32_t>(st.generation);
  info.priority = cx.opts.sm_priority;
  info.sm_state = static_cast<std::uint8_t>(st.state == state::SmState::kDiscovering ||
                                                    st.state == state::SmState::kStarting
                                                ? discovery::SmState::kDiscovering
                                                : discovery::SmState::kMaster);
  std::span<std::uint8_t> r = out.fresh();
  out.set("LID", st.sm_lid.value);
  put_attribute(r, info);
  out.offer();
}

// Every endport's GUIDInfo: block 0 holds the port GUID at index 0 (subnetd
// assigns no alias GUIDs), the other entries and blocks up to the port's
// GUIDCap are 0.
void guid_info_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  const routing::Topology& t = *st.topology;
  const auto* read = st.port_info.get();
  auto emit = [&](PortRef end, Lid lid) {
    if (lid.value > 0xFFFF) return;
    unsigned cap = 1;
    const std::uint32_t at = t.port_index(end.node, end.port);
    if (read != nullptr && at < read->size() && (*read)[at] != kNotRead) {
      cap = std::max<unsigned>(1, discovery::mad::PortInfo::decode((*read)[at]).guid_cap);
    }
    const unsigned blocks = (cap + 7) / 8;
    const auto& table_c = out.comp("GUIDInfo");
    for (unsigned b = 0; b < blocks; ++b) {
      if (out.has("BlockNum") && out.query("BlockNum") != b) continue;
      std::span<std::uint8_t> r = out.fresh();
      out.set("LID", lid.value);
      out.set("BlockNum", b);
      if (b == 0) {
        discovery::mad::store_be64(&r[table_c.offset / 8], t.port(end).guid.value);
      }
      out.offer();
    }
  };
  if (out.has("LID")) {
    const Lid lid{static_cast<std::uint32_t>(out.query("LID"))};
    const PortRef owner = st.lids->owner_of(lid);
    if (!owner.node.valid()) return;
    const bool sw = t.node(owner.node).type == routing::NodeType::kSwitch;
    const PortRef end{owner.node, sw ? PortNum{0} : owner.port};
    const Lid base = st.lids->base_lid(t, end.node, end.port);
    if (base.value != 0) emit(end, base);
    return;
  }
  for_each_endport(st, emit);
}

}  // namespace subnetd::daemon::sa

// The SA's tables of virtual lanes: SLtoVLMappingTableRecord and
// VLArbitrationTableRecord, the tables the Programmer writes
// (discovery/vl_tables.hpp). See records.hpp.

#include <cstring>
#include <optional>

#include "daemon/sa/records.hpp"
#include "discovery/programmer.hpp"
#include "discovery/vl_tables.hpp"

namespace subnetd::daemon::sa {

namespace {

// The data VLs the Programmer writes a port's tables for, and the PortInfo
// the sweep read of it (nullopt when it did not).
struct PortVls {
  unsigned vls = 1;
  discovery::mad::PortInfo read;
};
std::optional<PortVls> port_vls(const state::FabricState& st, NodeId n, PortNum p) {
  if (st.port_info == nullptr) return std::nullopt;
  const routing::Topology& t = *st.topology;
  const std::uint32_t at = t.port_index(n, p);
  constexpr std::array<std::uint8_t, 64> kNotRead{};
  if (at >= st.port_info->size() || (*st.port_info)[at] == kNotRead) return std::nullopt;
  PortVls out;
  out.read = discovery::mad::PortInfo::decode((*st.port_info)[at]);
  out.vls = discovery::data_vls(
      discovery::port_link_settings(t, *st.port_info, n, p,
                                    st.routes != nullptr ? st.routes->num_vls : 1U)
          .operational_vls);
  return out;
}

// The value the query fixes component `name` to, if it does.
std::optional<unsigned> fixed(const RecordSet& out, const char* name) {
  if (!out.has(name)) return std::nullopt;
  return static_cast<unsigned>(out.query(name));
}

}  // namespace

// A CA port's table (under its own LID), every (input, output) pair of a
// switch's cabled output ports, on nodes that claim IsSLMappingSupported.
void sl2vl_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  const routing::Topology& t = *st.topology;
  const auto want_in = fixed(out, "InputPortNum");
  const auto want_out = fixed(out, "OutputPortNum");
  const auto& table_c = out.comp("SLtoVLMappingTable");
  // An endport's record has input and output port 0, and a query's ports
  // do not select it (its LID names the port), as OpenSM answers.
  const std::uint64_t ports_mask = (1ULL << 1) | (1ULL << 2);
  const routing::Routes no_routes;
  const routing::Routes& routes = st.routes != nullptr ? *st.routes : no_routes;
  auto emit = [&](NodeId n, Lid lid, unsigned in, unsigned outp, unsigned vls, bool endport) {
    std::span<std::uint8_t> r = out.fresh();
    out.set("LID", lid.value);
    out.set("InputPortNum", in);
    out.set("OutputPortNum", outp);
    std::array<std::uint8_t, 64> wire{};
    discovery::port_sl2vl_table(routes, t.node(n), static_cast<PortNum>(outp), vls)
        .encode(discovery::mad::SmpData(wire));
    std::memcpy(&r[table_c.offset / 8], wire.data(), 8);
    out.offer(endport ? out.mask() & ~ports_mask : out.mask());
  };
  for (const NodeId n : nodes_of_query(cx, out, "LID")) {
    const routing::Node& node = t.node(n);
    const bool sw = node.type == routing::NodeType::kSwitch;
    for (unsigned pn = 1; pn <= node.num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      if (!t.port(n, p).connected() || (sw && want_out && *want_out != pn)) continue;
      const Lid lid = lid_at(st, n, p);
      if (lid.value == 0 || lid.value > 0xFFFF) continue;
      const auto vls = port_vls(st, n, p);
      const auto cap = port_vls(st, n, sw ? PortNum{0} : p);
      if (!vls || !cap || (cap->read.capability_mask & discovery::kCapIsSlMappingSupported) == 0) {
        continue;
      }
      if (!sw) {
        emit(n, lid, 0, 0, vls->vls, true);
        continue;
      }
      for (unsigned in = 0; in <= node.num_ports; ++in) {
        if (!want_in || *want_in == in) emit(n, lid, in, pn, vls->vls, false);
      }
    }
  }
}

// Every cabled port's arbitration blocks, as far as its caps reach.
void vlarb_records(const RecordContext& cx, RecordSet& out) {
  const state::FabricState& st = cx.st;
  const routing::Topology& t = *st.topology;
  const auto want_port = fixed(out, "OutputPortNum");
  const auto want_block = fixed(out, "BlockNum");
  const auto& table_c = out.comp("VLArbitrationTable");
  for (const NodeId n : nodes_of_query(cx, out, "LID")) {
    for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      if (!t.port(n, p).connected() || (want_port && *want_port != pn)) continue;
      const Lid lid = lid_at(st, n, p);
      const auto vls = port_vls(st, n, p);
      if (lid.value == 0 || lid.value > 0xFFFF || !vls) continue;
      for (unsigned b = 1; b <= 4; ++b) {
        if (want_block && *want_block != b) continue;
        const auto block = discovery::vlarb_block(vls->vls, b, vls->read.vl_arbitration_low_cap,
                                                  vls->read.vl_arbitration_high_cap);
        if (!block) continue;
        std::span<std::uint8_t> r = out.fresh();
        out.set("LID", lid.value);
        out.set("OutputPortNum", pn);
        out.set("BlockNum", b);
        std::array<std::uint8_t, 64> wire{};
        block->encode(discovery::mad::SmpData(wire));
        std::memcpy(&r[table_c.offset / 8], wire.data(), 64);
        out.offer();
      }
    }
  }
}

}  // namespace subnetd::daemon::sa

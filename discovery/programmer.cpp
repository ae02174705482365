#include "discovery/programmer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "discovery/vl_tables.hpp"

namespace subnetd::discovery {
namespace {

using routing::NodeType;
using routing::PortState;

std::string target(const routing::Topology& t, NodeId n, PortNum p) {
  return fmt::format("{} port {}", t.label(n), p);
}

}  // namespace

PortLinkSettings port_link_settings(const routing::Topology& t,
                                    std::span<const std::array<std::uint8_t, 64>> port_info_read,
                                    NodeId n, PortNum p, unsigned routing_vls) {
  PortLinkSettings out;
  const std::uint32_t at = t.port_index(n, p);
  if (at < port_info_read.size()) {
    const auto read = mad::PortInfo::decode(port_info_read[at]);
    out.vl_cap = read.vl_cap;
    out.operational_vls = read.operational_vls;
  }
  const routing::Port& here = t.port(n, p);
  if (p == 0 || !here.connected()) return out;
  const routing::Port& far = t.port(here.remote_node, here.remote_port);
  if (here.mtu_cap != 0 && far.mtu_cap != 0) out.neighbor_mtu = std::min(here.mtu_cap, far.mtu_cap);
  if (out.vl_cap != 0) {
    // Both ends of a link run the same VLs: the lesser VLCap of the two
    // (when the far end's was read), no more than the layers need.
    std::uint8_t cap = out.vl_cap;
    const std::uint32_t far_at = t.port_index(here.remote_node, here.remote_port);
    if (far_at < port_info_read.size()) {
      const std::uint8_t far_cap = mad::PortInfo::decode(port_info_read[far_at]).vl_cap;
      if (far_cap != 0) cap = std::min(cap, far_cap);
    }
    out.operational_vls = std::min(cap, operational_vls_for(routing_vls));
  }
  return out;
}

std::uint8_t operational_vls_for(unsigned vls) {
  if (vls <= 1) return 1;
  if (vls == 2) return 2;
  if (vls <= 4) return 3;
  if (vls <= 8) return 4;
  return 5;
}

unsigned fabric_data_vls(const routing::Topology& t,
                         std::span<const std::array<std::uint8_t, 64>> port_info_read) {
  unsigned least = 0;
  for (const NodeId sw : t.switches()) {
    for (unsigned pi = 1; pi <= t.node(sw).num_ports; ++pi) {
      const auto p = static_cast<PortNum>(pi);
      const routing::Port& port = t.port(sw, p);
      if (!port.connected() || t.node(port.remote_node).type != NodeType::kSwitch) continue;
      const std::uint32_t at = t.port_index(sw, p);
      if (at >= port_info_read.size()) continue;
      const std::uint8_t cap = mad::PortInfo::decode(port_info_read[at]).vl_cap;
      if (cap == 0) continue;  // not read
      const unsigned vls = data_vls(cap);
      least = least == 0 ? vls : std::min(least, vls);
    }
  }
  return least == 0 ? 1 : least;
}

const HeldBlocks::Block* HeldBlocks::block(Guid node, unsigned slot, unsigned block) const {
  const auto it = held_.find(node);
  if (it == held_.end() || slot >= it->second.size()) return nullptr;
  const Held& h = it->second[slot];
  if (block >= h.blocks.size() || !h.known[block]) return nullptr;
  return &h.blocks[block];
}

void HeldBlocks::set_block(Guid node, unsigned slot, unsigned block, const Block& keys) {
  std::vector<Held>& slots = held_[node];
  if (slots.size() <= slot) slots.resize(std::size_t{slot} + 1);
  Held& h = slots[slot];
  if (h.blocks.size() <= block) {
    h.blocks.resize(std::size_t{block} + 1);
    h.known.resize(std::size_t{block} + 1, false);
  }
  h.blocks[block] = keys;
  h.known[block] = true;
}

unsigned HeldBlocks::extent(Guid node, unsigned slot) const {
  const auto it = held_.find(node);
  if (it == held_.end() || slot >= it->second.size()) return 0;
  return static_cast<unsigned>(it->second[slot].blocks.size());
}

unsigned pkey_blocks(const routing::Topology& t, NodeId n, PortNum p) {
  const routing::Node& node = t.node(n);
  const unsigned cap = node.type == NodeType::kSwitch && p != 0 ? node.partition_enforcement_cap
                                                                : node.partition_cap;
  const unsigned blocks =
      (cap + routing::kPKeyBlockEntries - 1) / static_cast<unsigned>(routing::kPKeyBlockEntries);
  return std::clamp(blocks, 1U, 32U);
}

Result<ProgramReport> Programmer::program(const SweepResult& sweep, const routing::LidMap& lids,
                                          const routing::Routes& routes, const HeldTables* held) {
  return run_blocking<Result<ProgramReport>>(
      *transport_, [&](MadEngine& engine) { return program(engine, sweep, lids, routes, held); });
}

namespace {

// SwitchInfo:MulticastFDBTop for the trees: the highest MLID in use, 0xBFFF
// (no valid entry) when there is none.
std::uint16_t multicast_fdb_top(const routing::McastTables* mcast) {
  if (mcast == nullptr || mcast->max_mlid() < routing::kMlidBase) return 0xBFFF;
  return static_cast<std::uint16_t>(std::min<std::uint32_t>(mcast->max_mlid(), 0xFFFF));
}

// One request of a pass, packed into a word so that its callback fits
// std::function's inline storage (no heap allocation for each of the
// millions of LFT blocks): what, to which node, the port or block, the
// port state, and the directed-route version it was sent on.
enum class Kind : std::uint8_t {
  kPortLid,
  kExtPortLid,
  kSwitchInfo,
  kExtSwitchInfo,
  kBlock,
  kState,
  kPKeys,  // arg: port | block << 8
  kMft,    // arg: block | position << 16
  kSl2Vl,  // arg: attr_mod (a switch's; a CA's port) | data VLs << 20
  kVlArb   // arg: port | block << 8 | data VLs << 20
};
static_assert(static_cast<unsigned>(Kind::kVlArb) < 16, "Req packs the kind in 4 bits");
struct Req {
  Kind kind;
  NodeId node;
  std::uint32_t arg;  // port, or LFT block
  PortState state = PortState::kNoChange;
  std::uint32_t version = 0;

  static constexpr std::uint32_t kVersionMask = 0xFFF;  // 12 bits
  std::uint64_t pack() const {
    return (std::uint64_t{static_cast<std::uint8_t>(kind)} << 60) |
           (std::uint64_t{node.value & 0xFFFFF} << 40) | (std::uint64_t{arg & 0xFFFFFF} << 16) |
           (static_cast<std::uint64_t>(static_cast<std::uint8_t>(state) & 0xF) << 12) |
           (version & kVersionMask);
  }
  static Req unpack(std::uint64_t w) {
    return Req{static_cast<Kind>(w >> 60), NodeId{static_cast<std::uint32_t>((w >> 40) & 0xFFFFF)},
               static_cast<std::uint32_t>((w >> 16) & 0xFFFFFF),
               static_cast<PortState>((w >> 12) & 0xF),
               static_cast<std::uint32_t>(w & kVersionMask)};
  }
};

}  // namespace

boost::asio::awaitable<Result<ProgramReport>> Programmer::program(
    MadEngine& engine, const SweepResult& sweep, const routing::LidMap& lids,
    const routing::Routes& routes, const HeldTables* held, ProgramLive live) {
  SUBNETD_ASSERT_ON(engine.strand());
  Transport& transport = engine.transport();
  const routing::Topology& t = sweep.topology;
  const bool extended = lids.space.extended();
  const std::uint32_t sm_lid = lids.base_lid(t, sweep.sm_node, sweep.sm_port).value;
  ProgramReport report;
  if (t.num_nodes() > 0xFFFFF) {
    co_return Error{
        Errc::kOutOfRange,
        fmt::format("programming handles up to 1,048,575 nodes, not {}", t.num_nodes())};
  }
  const auto start = transport.now();
  FlowOptions popts = opts_.pipeline;
  popts.sm_lid = sm_lid;
  Flow pipeline(engine, popts);
  // Requests are handed to the flow a bounded number at a time: each queued
  // SMP holds its MAD and callback, and a full-scale fabric has ~17 million
  // LFT blocks (5+ GB queued at once). Refilled at half, so the window
  // never runs dry; few enough that the queued slots stay in the CPU's
  // cache between their encoding and their transmission (16k queued cost
  // a cache miss or more per SMP at k=80).
  constexpr std::size_t kQueued = 1024;
  // LFT blocks go to this many switches at a time, interleaved, so that
  // the per-switch window (SMA queues) leaves the flow's window full.
  constexpr std::uint32_t kSwitchesAtOnce = 8;
  auto stopped = [&engine]() -> Error {
    return engine.error()
               ? *engine.error()
               : Error{Errc::kCancelled, "programming cancelled: the MAD engine stopped"};
  };
  auto version = [&live] {
    return live.paths_version != nullptr ? *live.paths_version & Req::kVersionMask : 0;
  };
  auto is_endpoint = [&t](NodeId n, PortNum p) {
    return t.node(n).type == NodeType::kSwitch ? p == 0 : t.port(n, p).connected();
  };
  const mad::AttrId lft_attr =
      extended ? mad::AttrId::kExtLinearForwardingTable : mad::AttrId::kLinearForwardingTable;
  auto want_row = [&](SwitchIndex s) -> std::span<const std::uint8_t> {
    if (live.want_row) return live.want_row(s);
    const routing::Lft& lft = routes.lfts[s.value];
    return {lft.data(), lft.size()};
  };

  const routing::PartitionPlan* parts = live.partitions;
  auto enforced = [&](NodeId n, PortNum p) {
    return parts != nullptr && parts->enforced(t.port_index(n, p));
  };
  const routing::McastTables* mcast = live.multicast;
  // Block b, position pos of the MFT we want on switch n.
  auto mft_block = [&](NodeId n, std::uint32_t b, std::uint32_t pos) {
    HeldBlocks::Block out{};
    const SwitchIndex s = t.node(n).switch_index;
    for (std::uint32_t i = 0; i < routing::kMftBlockEntries; ++i) {
      const routing::PortMask m =
          mcast->ports(s, Lid{routing::kMlidBase + b * routing::kMftBlockEntries + i});
      std::uint16_t bits = 0;
      for (unsigned k = 0; k < routing::kMftPortsPerPosition; ++k) {
        if (m.test(static_cast<PortNum>(pos * routing::kMftPortsPerPosition + k))) {
          bits = static_cast<std::uint16_t>(bits | (1U << k));
        }
      }
      out[i] = bits;
    }
    return out;
  };
  // Block b of the P_Key table we want on a port: 32 entries, 0 past the end.
  auto pkey_block = [&](NodeId n, PortNum p, unsigned b) {
    std::array<std::uint16_t, routing::kPKeyBlockEntries> out{};
    const auto table = parts->table(t, n, p);
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::size_t at = std::size_t{b} * routing::kPKeyBlockEntries + k;
      if (at < table.size()) out[k] = table[at];
    }
    return out;
  };

  // A CA port that supports ClientReregister, when the pass asks for it.
  auto reregister = [&](NodeId n, PortNum p) {
    if (!opts_.client_reregister || t.node(n).type == NodeType::kSwitch) return false;
    const std::uint32_t at = t.port_index(n, p);
    return at < sweep.port_info.size() &&
           (mad::PortInfo::decode(sweep.port_info[at]).capability_mask &
            mad::kCapIsClientReregistrationSupported) != 0;
  };
  // The PortInfo we write: our values where we set them, 0 ("no change")
  // in the enable/state fields we leave alone.
  auto port_info = [&](NodeId n, PortNum p, PortState state, bool reregister_now) {
    mad::PortInfo pi;
    pi.client_reregister = reregister_now;
    pi.gid_prefix = opts_.subnet_prefix;
    pi.local_port_num = p;
    pi.port_state = static_cast<std::uint8_t>(state);
    pi.subnet_timeout = opts_.subnet_timeout;
    const PortLinkSettings link = port_link_settings(t, sweep.port_info, n, p, routes.num_vls);
    pi.neighbor_mtu = link.neighbor_mtu;
    pi.vl_cap = link.vl_cap;
    pi.operational_vls = link.operational_vls;
    if (enforced(n, p)) {
      pi.partition_enforcement_inbound = true;
      pi.partition_enforcement_outbound = true;
    }
    if (is_endpoint(n, p)) {
      const std::uint32_t lid = lids.base_lid(t, n, p).value;
      pi.lid = static_cast<std::uint16_t>(extended ? std::min<std::uint32_t>(lid, 0xFFFF) : lid);
      pi.master_sm_lid =
          static_cast<std::uint16_t>(extended ? std::min<std::uint32_t>(sm_lid, 0xFFFF) : sm_lid);
      pi.lmc = t.node(n).type == NodeType::kSwitch ? 0 : lids.lmc;
    }
    return pi;
  };

  const DrPaths& dr = live.switch_paths != nullptr ? *live.switch_paths : sweep.paths;
  // The PortInfo the sweep read (all zero when it did not).
  auto port_info_read = [&](NodeId n, PortNum p) {
    const std::uint32_t at = t.port_index(n, p);
    return at < sweep.port_info.size() ? mad::PortInfo::decode(sweep.port_info[at])
                                       : mad::PortInfo{};
  };
  auto port_sl2vl = [&](NodeId n, PortNum p, unsigned vls) {
    return port_sl2vl_table(routes, t.node(n), p, vls);
  };
  // The SMP a request stands for, on the directed route known now.
  auto build = [&](const Req& q) {
    const NodeId n = q.node;
    const PortNum p = static_cast<PortNum>(q.arg);
    switch (q.kind) {
      case Kind::kMft: {
        const std::uint32_t block = q.arg & 0xFFFF;
        const std::uint32_t pos = q.arg >> 16;
        mad::Smp smp =
            mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kMulticastForwardingTable,
                             mad::MulticastForwardingTable::attr_mod(block, pos), dr.path(n), 0);
        mad::MulticastForwardingTable m;
        m.masks = mft_block(n, block, pos);
        m.encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kSl2Vl: {
        const bool sw = t.node(n).type == NodeType::kSwitch;
        const std::uint32_t mod = q.arg & 0x3FFFF;
        mad::Smp smp = mad::make_dr_smp(
            mad::Method::kSet, mad::AttrId::kSlToVlMappingTable, sw ? mod : 0,
            sw ? dr.path(n) : sweep.path_to_port(n, static_cast<PortNum>(mod & 0xFF)), 0);
        port_sl2vl(n, static_cast<PortNum>(mod & 0xFF), q.arg >> 20).encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kVlArb: {
        const bool sw = t.node(n).type == NodeType::kSwitch;
        const auto port = static_cast<PortNum>(q.arg & 0xFF);
        const unsigned block = (q.arg >> 8) & 0xF;
        mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kVlArbitrationTable,
                                        (block << 16) | (sw ? port : 0U),
                                        sw ? dr.path(n) : sweep.path_to_port(n, port), 0);
        const auto read = port_info_read(n, port);
        vlarb_block(q.arg >> 20, block, read.vl_arbitration_low_cap, read.vl_arbitration_high_cap)
            .value_or(mad::VlArbitrationTable{})
            .encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kPKeys: {
        const auto port = static_cast<PortNum>(q.arg & 0xFF);
        const std::uint32_t block = q.arg >> 8;
        const bool sw = t.node(n).type == NodeType::kSwitch;
        mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kPKeyTable,
                                        block | (sw ? std::uint32_t{port} << 16 : 0),
                                        sw ? dr.path(n) : sweep.path_to_port(n, port), 0);
        mad::PKeyTable keys;
        keys.keys = pkey_block(n, port, block);
        keys.encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kPortLid:
      case Kind::kState: {  // with kNoChange: enforcement bits, OperationalVLs
        mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kPortInfo, p,
                                        sweep.path_to_port(n, p), 0);
        port_info(n, p, q.state, q.kind == Kind::kPortLid && reregister(n, p))
            .encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kExtPortLid: {
        mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kExtPortInfo, p,
                                        sweep.path_to_port(n, p), 0);
        mad::ExtPortInfo e;
        e.lid = lids.base_lid(t, n, p).value;
        e.master_sm_lid = sm_lid;
        e.lmc = t.node(n).type == NodeType::kSwitch ? 0 : lids.lmc;
        e.lid_bits = static_cast<std::uint8_t>(lids.space.bits);
        e.encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kSwitchInfo: {
        // LinearFDBTop (16-bit mode), MulticastFDBTop (the highest MLID
        // the trees use, 0xBFFF for none: IBA 1.3 switches that honour it
        // forward no MLID above it, so it must never stay 0) and, after a
        // sweep (arg 0), a write of 1 to PortStateChange, which clears it:
        // this sweep has seen the changes. A multicast-only pass (arg 1)
        // writes 0 there, which leaves it as it is.
        mad::Smp smp =
            mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kSwitchInfo, 0, dr.path(n), 0);
        mad::SwitchInfo si;
        si.linear_fdb_top =
            static_cast<std::uint16_t>(std::min<std::uint32_t>(routes.max_lid.value, 0xFFFF));
        si.multicast_fdb_top = multicast_fdb_top(mcast);
        si.life_time_value = 18;
        si.port_state_change = q.arg == 0;
        si.encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kExtSwitchInfo: {
        mad::Smp smp =
            mad::make_dr_smp(mad::Method::kSet, mad::AttrId::kExtSwitchInfo, 0, dr.path(n), 0);
        mad::ExtSwitchInfo e;
        e.linear_fdb_top = routes.max_lid.value;
        e.encode(mad::data_of(smp));
        return smp;
      }
      case Kind::kBlock:
        break;
    }
    // Read now: the row may have been repaired since the pass began.
    const std::uint32_t b = q.arg;
    mad::Smp smp = mad::make_dr_smp(mad::Method::kSet, lft_attr, b, dr.path(n), 0);
    const auto want = want_row(t.node(n).switch_index)
                          .subspan(std::size_t{b} * routing::kLftBlockSize, routing::kLftBlockSize);
    mad::LinearForwardingTable block;
    std::copy(want.begin(), want.end(), block.ports.begin());
    block.encode(mad::data_of(smp));
    return smp;
  };
  auto record_failure = [&report, &t, &live](const Req& q, const Error& e) {
    const NodeId n = q.node;
    if (q.kind == Kind::kBlock) {
      report.failures.push_back(
          fmt::format("{}: LFT block {}: {}", target(t, n, 0), q.arg, e.message));
    } else if (q.kind == Kind::kMft) {
      report.failures.push_back(fmt::format("{}: MFT block {} position {}: {}", target(t, n, 0),
                                            q.arg & 0xFFFF, q.arg >> 16, e.message));
    } else if (q.kind == Kind::kSl2Vl || q.kind == Kind::kVlArb) {
      // The error names the attribute and its modifier.
      report.failures.push_back(target(t, n, static_cast<PortNum>(q.arg & 0xFF)) + ": " +
                                e.message);
      if (live.held_vls != nullptr) live.held_vls->forget(t.node(n).guid);
    } else if (q.kind == Kind::kPKeys) {
      report.failures.push_back(fmt::format("{}: P_Key table block {}: {}",
                                            target(t, n, static_cast<PortNum>(q.arg & 0xFF)),
                                            q.arg >> 8, e.message));
    } else {
      report.failures.push_back(target(t, n, static_cast<PortNum>(q.arg)) + ": " + e.message);
    }
    if (t.node(n).type == NodeType::kSwitch &&
        (q.kind == Kind::kBlock || q.kind == Kind::kSwitchInfo || q.kind == Kind::kExtSwitchInfo ||
         (q.kind != Kind::kPKeys && q.kind != Kind::kSl2Vl && q.kind != Kind::kVlArb &&
          q.arg == 0))) {
      report.switches_failed.push_back(t.node(n).guid);
    }
  };
  // Failed: once more on the new route if the SM replaced the routes since
  // it went out; else a failure. Acknowledged P_Key blocks are held.
  std::function<void(std::uint64_t, const Error&)> failed;
  auto acked = [&](std::uint64_t word) {
    const Req q = Req::unpack(word);
    if (q.kind == Kind::kMft && live.held_mfts != nullptr) {
      live.held_mfts->set_block(t.node(q.node).guid, q.arg >> 16, q.arg & 0xFFFF,
                                mft_block(q.node, q.arg & 0xFFFF, q.arg >> 16));
      return;
    }
    if (q.kind == Kind::kVlArb && ((q.arg >> 8) & 0xF) == 1 && live.held_vls != nullptr) {
      // The low-priority table goes last to a port: it and its SL2VL held.
      const auto port = static_cast<PortNum>(q.arg & 0xFF);
      live.held_vls->set(
          t.node(q.node).guid, port,
          PortVlTables{q.arg >> 20, sl2vl_bits(port_sl2vl(q.node, port, q.arg >> 20))});
      return;
    }
    if (q.kind != Kind::kPKeys || live.held_pkeys == nullptr) return;
    const auto port = static_cast<PortNum>(q.arg & 0xFF);
    live.held_pkeys->set_block(t.node(q.node).guid, port, q.arg >> 8,
                               pkey_block(q.node, port, q.arg >> 8));
  };
  auto issue = [&](Req q) {
    const bool by_low_byte =
        q.kind == Kind::kPKeys || q.kind == Kind::kSl2Vl || q.kind == Kind::kVlArb;
    const PortNum skip_port = q.kind == Kind::kBlock ? PortNum{0}
                              : by_low_byte          ? static_cast<PortNum>(q.arg & 0xFF)
                                                     : static_cast<PortNum>(q.arg);
    if (live.skip && live.skip(q.node, skip_port)) {
      ++report.skipped;
      return;
    }
    q.version = version();
    const std::uint64_t word = q.pack();
    // Keyed by node for the flow's per-destination window: a switch's SMA
    // queue is finite, and a pass that filled it would have the fast
    // path's SMPs to that switch dropped.
    pipeline.submit_checked(
        build(q), 0,
        [&failed, &acked, word](Result<void> r) {
          if (r.ok()) {
            acked(word);
          } else {
            failed(word, r.error());
          }
        },
        dest_of(q.node));
  };
  // The SL2VL and VLArb requests node n needs (vl_tables.hpp): ports whose
  // data VLs differ from what they are known to hold. A switch that claims
  // OptimizedSLtoVLMappingProgramming gets one SL2VL Set for all its ports
  // (or one per output port when their VLs differ); others one per input
  // and output port pair. VLArb block 1 goes last to a port: its answer
  // marks the port held.
  auto plan_vl_tables = [&](NodeId n, std::vector<Req>& out) {
    const routing::Node& node = t.node(n);
    const bool sw = node.type == NodeType::kSwitch;
    const Guid guid = node.guid;
    auto want_vls = [&](PortNum p) {
      return data_vls(port_link_settings(t, sweep.port_info, n, p, routes.num_vls).operational_vls);
    };
    auto want = [&](PortNum p) {
      const unsigned vls = want_vls(p);
      return PortVlTables{vls, sl2vl_bits(port_sl2vl(n, p, vls))};
    };
    auto held_now = [&](PortNum p) {
      return live.held_vls != nullptr ? live.held_vls->held(guid, p) : PortVlTables{};
    };
    auto vlarb = [&](PortNum p, unsigned vls) {
      const auto read = port_info_read(n, p);
      for (const unsigned b : {2U, 3U, 4U, 1U}) {
        if (vlarb_block(vls, b, read.vl_arbitration_low_cap, read.vl_arbitration_high_cap)) {
          ++report.vlarb_sets;
          out.push_back(Req{Kind::kVlArb, n, p | (b << 8) | (vls << 20)});
        }
      }
    };
    auto sl_map = [&](PortNum p) {
      return (port_info_read(n, p).capability_mask & kCapIsSlMappingSupported) != 0;
    };
    if (!sw) {
      for (unsigned pn = 1; pn <= node.num_ports; ++pn) {
        const auto p = static_cast<PortNum>(pn);
        if (!t.port(n, p).connected()) continue;
        const PortVlTables tables = want(p);
        const unsigned vls = tables.vls;
        if (held_now(p) == tables) {
          ++report.vl_ports_unchanged;
          continue;
        }
        if (sl_map(p)) {
          ++report.sl2vl_sets;
          out.push_back(Req{Kind::kSl2Vl, n, p | (vls << 20)});
        }
        vlarb(p, vls);
      }
      return;
    }
    const std::uint32_t si = node.switch_index.value;
    const bool optimized = si < sweep.switch_info.size() &&
                           mad::SwitchInfo::decode(sweep.switch_info[si]).optimized_sl2vl != 0;
    std::vector<PortNum> changed;
    unsigned common = 0;
    // One table for every port, unless routes change VL hop by hop (their
    // tables differ by output port, and port 0's from the links').
    bool uniform = !routes.per_hop_vls();
    for (unsigned pn = 1; pn <= node.num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      if (!t.port(n, p).connected()) continue;
      const PortVlTables tables = want(p);
      uniform = uniform && (common == 0 || common == tables.vls);
      common = tables.vls;
      if (held_now(p) == tables) {
        ++report.vl_ports_unchanged;
      } else {
        changed.push_back(p);
      }
    }
    if (changed.empty()) return;
    if (sl_map(0)) {
      if (optimized && uniform) {
        ++report.sl2vl_sets;
        out.push_back(Req{Kind::kSl2Vl, n, kSl2VlAllInputs | kSl2VlAllOutputs | (common << 20)});
      } else {
        for (const PortNum p : changed) {
          const unsigned vls = want_vls(p);
          if (optimized) {
            ++report.sl2vl_sets;
            out.push_back(Req{Kind::kSl2Vl, n, kSl2VlAllInputs | p | (vls << 20)});
            continue;
          }
          for (unsigned in = 0; in <= node.num_ports; ++in) {
            ++report.sl2vl_sets;
            out.push_back(Req{Kind::kSl2Vl, n, (in << 8) | p | (vls << 20)});
          }
        }
      }
    }
    for (const PortNum p : changed) vlarb(p, want_vls(p));
  };
  failed = [&](std::uint64_t word, const Error& e) {
    const Req q = Req::unpack(word);
    if (e.code == Errc::kTimeout && q.version != version()) {
      ++report.resubmitted;
      issue(q);
      return;
    }
    record_failure(q, e);
  };

  if (!opts_.only_multicast) {
    // Phase 1: LIDs on endpoint ports, LinearFDBTop on switches.
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      const NodeId n{i};
      const routing::Node& node = t.node(n);
      const bool sw = node.type == NodeType::kSwitch;
      for (unsigned pn = sw ? 0 : 1; pn <= (sw ? 0U : node.num_ports); ++pn) {
        const PortNum p = static_cast<PortNum>(pn);
        if (!is_endpoint(n, p)) continue;
        const routing::Port& port = t.port(n, p);
        const Lid want = lids.base_lid(t, n, p);
        const std::uint8_t want_lmc = sw ? 0 : lids.lmc;
        const bool same =
            port.lid == want && port.lmc == want_lmc && port.master_sm_lid.value == sm_lid;
        const bool rereg = reregister(n, p);
        if (!same) {
          ++report.port_lid_sets;
          issue(Req{extended ? Kind::kExtPortLid : Kind::kPortLid, n, p});
        }
        if (rereg) {
          ++report.client_reregisters;
          // The LID Set carries the bit; alone (or beside ExtPortInfo) otherwise.
          if (same || extended) issue(Req{Kind::kPortLid, n, p});
        }
      }
      if (sw) {
        ++report.switch_info_sets;
        issue(Req{Kind::kSwitchInfo, n, 0});
        if (extended) issue(Req{Kind::kExtSwitchInfo, n, 0});
      }
    }
    co_await pipeline.drained();
    if (engine.stopped()) co_return stopped();

    // Phase 1b: P_Key tables.
    if (parts != nullptr) {
      for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
        const NodeId n{i};
        const routing::Node& node = t.node(n);
        const Guid guid = node.guid;
        for (unsigned pn = 0; pn <= node.num_ports; ++pn) {
          const auto p = static_cast<PortNum>(pn);
          const std::uint32_t at = t.port_index(n, p);
          if (parts->table(at).empty() || (p != 0 && !t.port(n, p).connected())) continue;
          for (unsigned b = 0; b < pkey_blocks(t, n, p); ++b) {
            const auto* have =
                live.held_pkeys != nullptr ? live.held_pkeys->block(guid, p, b) : nullptr;
            if (have != nullptr && *have == pkey_block(n, p, b)) {
              ++report.pkey_blocks_unchanged;
              continue;
            }
            ++report.pkey_blocks_sent;
            issue(Req{Kind::kPKeys, n, pn | (b << 8)});
          }
          if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
          if (engine.stopped()) co_return stopped();
        }
      }
      co_await pipeline.drained();
      if (engine.stopped()) co_return stopped();
    }
    // Phase 1c: one PortInfo Set on each ACTIVE port whose partition
    // enforcement (switch ports; after the P_Key tables it enforces) or
    // OperationalVLs (the routing's layers, on both ends of every link;
    // before the SL2VL and VLArb tables that use them) differ from what the
    // sweep read. Ports coming up get both with their state change (phase
    // 3).
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      const NodeId n{i};
      const bool sw = t.node(n).type == NodeType::kSwitch;
      for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
        const auto p = static_cast<PortNum>(pn);
        const std::uint32_t at = t.port_index(n, p);
        if (!t.port(n, p).connected() || t.port(n, p).state != PortState::kActive ||
            at >= sweep.port_info.size()) {
          continue;
        }
        const auto read = mad::PortInfo::decode(sweep.port_info[at]);
        const bool enforce = sw && parts != nullptr && parts->enforced(at);
        const bool enforcement = sw && parts != nullptr &&
                                 (read.partition_enforcement_inbound != enforce ||
                                  read.partition_enforcement_outbound != enforce);
        const std::uint8_t vls =
            port_link_settings(t, sweep.port_info, n, p, routes.num_vls).operational_vls;
        const bool op_vls = vls != 0 && read.operational_vls != vls;
        if (!enforcement && !op_vls) continue;
        if (enforcement) ++report.enforcement_sets;
        if (op_vls) ++report.operational_vls_sets;
        issue(Req{Kind::kState, n, p, PortState::kNoChange});
        if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
        if (engine.stopped()) co_return stopped();
      }
    }
    co_await pipeline.drained();
    if (engine.stopped()) co_return stopped();

    // Phase 1d: SL-to-VL and VL arbitration tables (vl_tables.hpp) on the
    // ports whose data VLs changed or were never written.
    std::vector<Req> vl_reqs;
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      vl_reqs.clear();
      plan_vl_tables(NodeId{i}, vl_reqs);
      for (const Req& q : vl_reqs) issue(q);
      if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
      if (engine.stopped()) co_return stopped();
    }
    co_await pipeline.drained();
    if (engine.stopped()) co_return stopped();

    // Phase 2: LFT blocks that differ from what the switch holds.
    const std::uint32_t blocks = routes.max_lid.value / routing::kLftBlockSize + 1;
    for (std::uint32_t first = 0; first < t.num_switches(); first += kSwitchesAtOnce) {
      const std::uint32_t end = std::min<std::uint32_t>(t.num_switches(), first + kSwitchesAtOnce);
      std::array<std::span<const std::uint8_t>, kSwitchesAtOnce> have_rows{};
      for (std::uint32_t si = first; si < end; ++si) {
        const NodeId n = t.switch_node(SwitchIndex{si});
        if (held != nullptr && held->row) have_rows[si - first] = held->row(t.node(n).guid);
      }
      for (std::uint32_t b = 0; b < blocks; ++b) {
        const std::size_t at = std::size_t{b} * routing::kLftBlockSize;
        for (std::uint32_t si = first; si < end; ++si) {
          const SwitchIndex s{si};
          const std::span<const std::uint8_t> have_row = have_rows[si - first];
          const auto want = want_row(s).subspan(at, routing::kLftBlockSize);
          if (have_row.size() >= at + routing::kLftBlockSize &&
              std::equal(want.begin(), want.end(),
                         have_row.begin() + static_cast<std::ptrdiff_t>(at))) {
            ++report.lft_blocks_unchanged;
            continue;
          }
          ++report.lft_blocks_sent;
          issue(Req{Kind::kBlock, t.switch_node(s), b});
        }
        if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
        if (engine.stopped()) co_return stopped();
      }
    }
    co_await pipeline.drained();
    if (engine.stopped()) co_return stopped();
    // Blocks a repair changed while this pass ran, as they stand now.
    while (live.resend != nullptr && !live.resend->empty()) {
      std::vector<routing::DirtyBlock> again;
      again.swap(*live.resend);
      for (const routing::DirtyBlock& d : again) {
        if (d.sw.value >= t.num_switches() || d.block >= blocks) continue;
        ++report.lft_blocks_resent;
        issue(Req{Kind::kBlock, t.switch_node(d.sw), d.block});
      }
      co_await pipeline.drained();
      if (engine.stopped()) co_return stopped();
    }

  }  // !only_multicast

  // Phase 2b: MFT blocks that differ from what the switch holds, up to the
  // highest MLID in use or ever written there.
  if (mcast != nullptr && mcast->num_switches() == t.num_switches()) {
    const std::uint32_t want_blocks =
        mcast->max_mlid() >= routing::kMlidBase
            ? (mcast->max_mlid() - routing::kMlidBase) / routing::kMftBlockEntries + 1
            : 0;
    for (const NodeId n : t.switches()) {
      const Guid guid = t.node(n).guid;
      const std::uint32_t positions =
          (t.node(n).num_ports + routing::kMftPortsPerPosition) / routing::kMftPortsPerPosition;
      const std::uint64_t sent_before = report.mft_blocks_sent;
      for (std::uint32_t pos = 0; pos < positions; ++pos) {
        const std::uint32_t held_blocks =
            live.held_mfts != nullptr ? live.held_mfts->extent(guid, pos) : 0;
        for (std::uint32_t b = 0; b < std::max(want_blocks, held_blocks); ++b) {
          const auto* have =
              live.held_mfts != nullptr ? live.held_mfts->block(guid, pos, b) : nullptr;
          if (have != nullptr && *have == mft_block(n, b, pos)) {
            ++report.mft_blocks_unchanged;
            continue;
          }
          ++report.mft_blocks_sent;
          issue(Req{Kind::kMft, n, b | (pos << 16)});
        }
      }
      // A multicast-only pass moves MulticastFDBTop itself (a full pass
      // wrote it in phase 1), after the blocks.
      if (opts_.only_multicast && report.mft_blocks_sent != sent_before) {
        ++report.switch_info_sets;
        issue(Req{Kind::kSwitchInfo, n, 1});
      }
      if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
      if (engine.stopped()) co_return stopped();
    }
    co_await pipeline.drained();
    if (engine.stopped()) co_return stopped();
  }

  // Phase 3: INIT -> ARMED -> ACTIVE on every live port.
  if (opts_.activate && report.failures.empty()) {
    for (PortState step : {PortState::kArmed, PortState::kActive}) {
      for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
        const NodeId n{i};
        for (unsigned pn = 1; pn <= t.node(n).num_ports; ++pn) {
          const PortNum p = static_cast<PortNum>(pn);
          const routing::Port& port = t.port(n, p);
          if (!port.connected() || port.state == PortState::kActive) continue;
          if (step == PortState::kArmed && port.state != PortState::kInit) continue;
          ++(step == PortState::kArmed ? report.ports_armed : report.ports_activated);
          issue(Req{Kind::kState, n, p, step});
          if (pipeline.pending() >= kQueued) co_await pipeline.drained(kQueued / 2);
          if (engine.stopped()) co_return stopped();
        }
      }
      co_await pipeline.drained();
      if (engine.stopped()) co_return stopped();
    }
  }
  report.smps = pipeline.stats();
  report.duration = transport.now() - start;
  std::sort(report.switches_failed.begin(), report.switches_failed.end());
  report.switches_failed.erase(
      std::unique(report.switches_failed.begin(), report.switches_failed.end()),
      report.switches_failed.end());
  co_return report;
}

}  // namespace subnetd::discovery

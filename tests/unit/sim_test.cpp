// SimFabric at the SMP level: directed-route hop-pointer semantics, the SMA's
// attributes and state machine, LID-routed forwarding through the switches'
// own tables, traps, faults, extended LIDs, the latency model and bad input.
//
// The fixture is a hand-wired two-level fat tree so that every expected port
// number below can be checked against the drawing:
//
//   spine0, spine1   4 ports each: port l+1 goes to leaf l
//   leaf0..leaf3     5 ports each: 1, 2 to hosts; 3 to spine0; 4 to spine1;
//                    5 unconnected
//   host0..host7     1 port: host i on leaf i/2, port i%2 + 1
//
// The SM sits on host0 (the first CA), port 1.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <functional>
#include <random>
#include <set>
#include <thread>

#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/topo/generators.hpp"

namespace subnetd::discovery::sim {
namespace {

using namespace std::chrono_literals;
using mad::AttrId;
using mad::Method;
using routing::NodeType;
using routing::PortState;
using Path = std::vector<std::uint8_t>;

struct SmallFabric {
  routing::Topology topo;
  NodeId spine[2];
  NodeId leaf[4];
  NodeId host[8];
};

SmallFabric build_small() {
  SmallFabric f;
  routing::Topology& t = f.topo;
  for (int i = 0; i < 2; ++i) {
    f.spine[i] = t.add_node(NodeType::kSwitch, Guid{0x1000U + i}, 4, fmt::format("spine{}", i));
  }
  for (int i = 0; i < 4; ++i) {
    f.leaf[i] = t.add_node(NodeType::kSwitch, Guid{0x1100U + i}, 5, fmt::format("leaf{}", i));
  }
  for (int i = 0; i < 8; ++i) {
    f.host[i] = t.add_node(NodeType::kCa, Guid{0x2000U + 0x10U * i}, 1, fmt::format("host{}", i));
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(t.connect({f.host[i], 1}, {f.leaf[i / 2], static_cast<PortNum>(i % 2 + 1)}).ok());
  }
  for (int l = 0; l < 4; ++l) {
    EXPECT_TRUE(t.connect({f.leaf[l], 3}, {f.spine[0], static_cast<PortNum>(l + 1)}).ok());
    EXPECT_TRUE(t.connect({f.leaf[l], 4}, {f.spine[1], static_cast<PortNum>(l + 1)}).ok());
  }
  return f;
}

// Directed-route paths from the SM (host0 on leaf0 port 1).
const Path kToHost0{};
const Path kToLeaf0{1};
const Path kToSpine0{1, 3};
const Path kToSpine1{1, 4};
const Path kToLeaf2{1, 3, 3};
const Path kToHost4{1, 3, 3, 1};  // host4 = leaf2 port 1

// LIDs the tests give out.
constexpr std::uint32_t kSmLid = 1;
constexpr std::uint32_t kLeafLid[4] = {10, 11, 12, 13};
constexpr std::uint32_t kSpineLid[2] = {20, 21};
constexpr std::uint32_t kHost4Lid = 104;

// Plays the SM: sends SMPs with fresh TIDs and waits for the matching
// response; everything else received (traps) is kept in `unsolicited`.
class Sm {
 public:
  explicit Sm(SimFabric& fabric) : f_(fabric) {}

  std::optional<mad::Smp> exchange(mad::Smp req, std::uint32_t dlid = mad::kPermissiveLid,
                                   Mad* raw = nullptr) {
    req.tid = next_tid_++;
    Mad m;
    mad::encode_smp(req, std::span<std::uint8_t, kMadSize>(m.data));
    m.dlid = dlid;
    EXPECT_TRUE(f_.send(m).ok());
    for (;;) {
      auto got = f_.receive(100ms);
      EXPECT_TRUE(got.ok());
      if (!got.ok() || !got->has_value()) return std::nullopt;
      auto d = mad::decode_smp((*got)->data, mad::DecodeOptions{.allow_unknown_attribute = true});
      EXPECT_TRUE(d.ok());
      if (!d.ok()) return std::nullopt;
      if (d->is_response() && d->tid == req.tid) {
        if (raw != nullptr) *raw = **got;
        return *d;
      }
      unsolicited.push_back(**got);
    }
  }

  std::optional<mad::Smp> dr(Method m, AttrId a, std::uint32_t mod, const Path& path,
                             const std::function<void(mad::SmpData)>& fill = {}) {
    mad::Smp s = mad::make_dr_smp(m, a, mod, path, 0);
    if (fill) fill(mad::data_of(s));
    return exchange(s);
  }

  std::optional<mad::Smp> lr(Method m, AttrId a, std::uint32_t mod, std::uint32_t dlid,
                             Mad* raw = nullptr,
                             const std::function<void(mad::SmpData)>& fill = {}) {
    mad::Smp s = mad::make_lr_smp(m, a, mod, 0);
    if (fill) fill(mad::data_of(s));
    return exchange(s, dlid, raw);
  }

  // Typed Get / Set; nullopt when no answer or a non-zero status.
  template <class A>
  std::optional<A> get(AttrId a, std::uint32_t mod, const Path& path) {
    auto r = dr(Method::kGet, a, mod, path);
    if (!r || r->status != 0) return std::nullopt;
    return A::decode(mad::data_of(*r));
  }
  template <class A>
  std::uint16_t set_status(AttrId a, std::uint32_t mod, const Path& path, const A& value) {
    auto r = dr(Method::kSet, a, mod, path, [&](mad::SmpData d) { value.encode(d); });
    return r ? r->status : 0xFFFF;
  }

  // PortInfo Set of LID/MasterSMLID (LMC 0) on an end port, no state change.
  void set_lid(const Path& path, PortNum port, std::uint32_t lid, std::uint32_t sm_lid = kSmLid) {
    mad::PortInfo pi;
    pi.lid = static_cast<std::uint16_t>(lid);
    pi.master_sm_lid = static_cast<std::uint16_t>(sm_lid);
    ASSERT_EQ(set_status(AttrId::kPortInfo, port, path, pi), 0) << "LID " << lid;
  }
  void set_top(const Path& path, std::uint16_t top) {
    mad::SwitchInfo si;
    si.linear_fdb_top = top;
    ASSERT_EQ(set_status(AttrId::kSwitchInfo, 0, path, si), 0);
  }
  // Read-modify-write of one LFT entry.
  void route(const Path& sw, std::uint32_t lid, PortNum port,
             AttrId attr = AttrId::kLinearForwardingTable) {
    auto block = get<mad::LinearForwardingTable>(attr, lid / 64, sw);
    ASSERT_TRUE(block.has_value());
    block->ports[lid % 64] = port;
    ASSERT_EQ(set_status(attr, lid / 64, sw, *block), 0);
  }
  // Read-modify-write, as an SM does: a PortInfo Set writes every field.
  void set_state(const Path& path, PortNum port, PortState state, std::uint8_t phys = 0,
                 std::uint16_t want_status = 0) {
    auto cur = get<mad::PortInfo>(AttrId::kPortInfo, port, path);
    ASSERT_TRUE(cur.has_value());
    mad::PortInfo pi = *cur;
    pi.port_state = static_cast<std::uint8_t>(state);
    pi.port_phys_state = phys;
    EXPECT_EQ(set_status(AttrId::kPortInfo, port, path, pi), want_status)
        << "port " << int{port} << " -> " << routing::port_state_name(state);
  }

  std::vector<Mad> unsolicited;

 private:
  SimFabric& f_;
  std::uint64_t next_tid_ = 0x100;
};

std::unique_ptr<SimFabric> make_fabric(const SimOptions& opts = {}, SmallFabric* out = nullptr) {
  SmallFabric f = build_small();
  if (out != nullptr) *out = f;
  auto r = SimFabric::create(std::move(f.topo), opts);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : nullptr;
}

// LIDs on the SM, leaves, spines and host4, MasterSMLID = the SM everywhere,
// LinearFDBTop 127 on every switch; no LFT entries.
void program_lids(Sm& sm) {
  sm.set_lid(kToHost0, 1, kSmLid);
  const Path leaves[4] = {{1}, {1, 3, 2}, {1, 3, 3}, {1, 3, 4}};
  for (int l = 0; l < 4; ++l) {
    sm.set_lid(leaves[l], 0, kLeafLid[l]);
    sm.set_top(leaves[l], 127);
  }
  sm.set_lid(kToSpine0, 0, kSpineLid[0]);
  sm.set_top(kToSpine0, 127);
  sm.set_lid(kToSpine1, 0, kSpineLid[1]);
  sm.set_top(kToSpine1, 127);
  sm.set_lid(kToHost4, 1, kHost4Lid);
}

// Routes between the SM's leaf0 and leaf2/host4 over spine0, both ways.
void program_routes_sm_host4(Sm& sm) {
  sm.route(kToLeaf0, kHost4Lid, 3);
  sm.route(kToSpine0, kHost4Lid, 3);
  sm.route(kToLeaf2, kHost4Lid, 1);
  sm.route(kToLeaf2, kSmLid, 3);
  sm.route(kToSpine0, kSmLid, 1);
  sm.route(kToLeaf0, kSmLid, 1);
}

// ------------------------------------------------------------------ directed route

TEST(SimDirectedRoute, NodeInfoAlongMultiHopPaths) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);

  struct Case {
    Path path;
    NodeId node;
    std::uint8_t local_port;
    std::vector<std::uint8_t> return_path;  // expected ReturnPath[1..n]
  };
  const Case cases[] = {
      {kToHost0, f.host[0], 1, {}},
      {kToLeaf0, f.leaf[0], 1, {1}},
      {kToSpine0, f.spine[0], 1, {1, 1}},
      {kToSpine1, f.spine[1], 1, {1, 1}},
      {kToLeaf2, f.leaf[2], 3, {1, 1, 3}},
      {{1, 4, 3}, f.leaf[2], 4, {1, 1, 4}},
      {kToHost4, f.host[4], 1, {1, 1, 3, 1}},
      {{1, 4, 4, 2}, f.host[7], 1, {1, 1, 4, 1}},
      // Out of leaf0's spine port and straight back: DR may reverse.
      {{1, 3, 1}, f.leaf[0], 3, {1, 1, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("path [{}]", fmt::join(c.path, ",")));
    auto r = sm.dr(Method::kGet, AttrId::kNodeInfo, 0, c.path);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 0);
    EXPECT_EQ(r->method, Method::kGetResp);
    EXPECT_TRUE(r->direction);
    EXPECT_EQ(r->hop_pointer, 0) << "the hop pointer counts back down to 0 at the SM";
    EXPECT_EQ(r->hop_count, c.path.size());
    for (std::size_t i = 0; i < c.path.size(); ++i) {
      EXPECT_EQ(r->initial_path[i + 1], c.path[i]) << "initial path is untouched";
      EXPECT_EQ(r->return_path[i + 1], c.return_path[i]) << "return path hop " << i + 1;
    }
    const auto ni = mad::NodeInfo::decode(mad::data_of(*r));
    const routing::Node& node = fabric->topology().node(c.node);
    EXPECT_EQ(ni.node_guid, node.guid.value);
    EXPECT_EQ(ni.node_type, static_cast<std::uint8_t>(node.type));
    EXPECT_EQ(ni.num_ports, node.num_ports);
    EXPECT_EQ(ni.local_port_num, c.local_port);
    const std::uint64_t port_guid =
        node.type == NodeType::kSwitch ? node.guid.value : node.guid.value + c.local_port;
    EXPECT_EQ(ni.port_guid, port_guid);
  }
  const SimStats st = fabric->stats();
  EXPECT_EQ(st.drops_total(), 0U);
  EXPECT_EQ(st.smps_handled, std::size(cases));
  // Every hop is crossed twice.
  std::uint64_t hops = 0;
  for (const Case& c : cases) hops += 2 * c.path.size();
  EXPECT_EQ(st.link_traversals, hops);
}

TEST(SimDirectedRoute, BadPathsAreDroppedAndCounted) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  const auto before = fabric->now();
  // Through a CA: leaf0 port 2 is host1, which must not forward.
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 2, 1}));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kDrThroughCa), 1U);
  EXPECT_EQ(fabric->now() - before, 100ms) << "a timeout advances the virtual clock";
  // Out of an unconnected port (leaf0 port 5).
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 5}));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kUnconnectedPort), 1U);
  // A port the switch does not have, and port 0 as an exit.
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 9, 1}));
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {1, 0, 1}));
  // The SM's CA can only send out of the SM's port.
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, {2}));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kDrBadPath), 3U);
  // A hop pointer the SM should not have set.
  mad::Smp odd = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf2, 0);
  odd.hop_pointer = 2;
  EXPECT_FALSE(sm.exchange(odd));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kDrBadPath), 4U);
  EXPECT_EQ(fabric->stats().smps_handled, 0U);
}

TEST(SimDirectedRoute, LidRoutedStartAndEnd) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  sm.route(kToLeaf0, kLeafLid[2], 3);
  sm.route(kToSpine0, kLeafLid[2], 3);
  sm.route(kToLeaf2, kLeafLid[0], 3);
  sm.route(kToSpine0, kLeafLid[0], 1);

  // DrSLID = the SM: LID-routed to leaf2, then directed out of its port 1.
  mad::Smp s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, Path{1}, 0);
  s.dr_slid = kSmLid;
  Mad raw;
  auto r = sm.exchange(s, kLeafLid[2], &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2040U);  // host4
  EXPECT_EQ(r->hop_pointer, 0);
  EXPECT_EQ(r->return_path[1], 1);
  EXPECT_EQ(raw.dlid, kSmLid) << "the last part back is LID-routed to DrSLID";
  EXPECT_EQ(raw.slid, kLeafLid[2]);

  // DrDLID = host4: directed to leaf0, then LID-routed on; the response
  // comes LID-routed back to leaf0 and directed from there.
  s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, Path{1}, 0);
  s.dr_dlid = kHost4Lid;
  sm.route(kToLeaf2, kLeafLid[0], 3);
  r = sm.exchange(s, mad::kPermissiveLid, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2040U);
  EXPECT_EQ(r->hop_pointer, 0);
  EXPECT_EQ(raw.dlid, mad::kPermissiveLid) << "arrived directed";
  EXPECT_EQ(fabric->stats().drops_total(), 0U);
}

// ------------------------------------------------------------------ the SMA

TEST(SimSma, PortInfoLidLmcSmLidAndCapabilities) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);

  mad::PortInfo pi;
  pi.lid = 0x40;
  pi.lmc = 2;
  pi.master_sm_lid = 0x7;
  pi.gid_prefix = 0xfe80000000001234ULL;
  pi.subnet_timeout = 18;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, pi), 0);
  auto got = sm.get<mad::PortInfo>(AttrId::kPortInfo, 0, kToHost4);  // 0: the receiving port
  ASSERT_TRUE(got);
  EXPECT_EQ(got->lid, 0x40);
  EXPECT_EQ(got->lmc, 2);
  EXPECT_EQ(got->master_sm_lid, 0x7);
  EXPECT_EQ(got->gid_prefix, 0xfe80000000001234ULL);
  EXPECT_EQ(got->subnet_timeout, 18);
  EXPECT_EQ(got->local_port_num, 1);
  EXPECT_EQ(got->port_state, static_cast<std::uint8_t>(PortState::kInit));
  EXPECT_EQ(got->port_phys_state, kPhysLinkUp);
  EXPECT_EQ(got->link_width_active, 2);  // 4x, from the topology default
  EXPECT_TRUE(got->capability_mask & mad::kCapIsTrapSupported);
  EXPECT_FALSE(got->capability_mask & mad::kCapIsSm);
  auto own = sm.get<mad::PortInfo>(AttrId::kPortInfo, 1, kToHost0);
  ASSERT_TRUE(own);
  EXPECT_TRUE(own->capability_mask & mad::kCapIsSm) << "the SM's port says IsSM";

  // Switch port 0 holds the switch's LID; LMC is not applied there (base
  // SP0); external ports have none and report the state of their link.
  pi.lid = 0x50;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 0, kToSpine0, pi), 0);
  auto p0 = sm.get<mad::PortInfo>(AttrId::kPortInfo, 0, kToSpine0);
  ASSERT_TRUE(p0);
  EXPECT_EQ(p0->lid, 0x50);
  EXPECT_EQ(p0->lmc, 0);
  EXPECT_EQ(p0->port_state, static_cast<std::uint8_t>(PortState::kActive));
  EXPECT_EQ(p0->local_port_num, 1);
  auto p4 = sm.get<mad::PortInfo>(AttrId::kPortInfo, 4, kToSpine0);
  ASSERT_TRUE(p4);
  EXPECT_EQ(p4->lid, 0);
  EXPECT_EQ(p4->capability_mask, 0U);
  EXPECT_EQ(p4->port_state, static_cast<std::uint8_t>(PortState::kInit));
  auto unconnected = sm.get<mad::PortInfo>(AttrId::kPortInfo, 5, kToLeaf0);
  ASSERT_TRUE(unconnected);
  EXPECT_EQ(unconnected->port_state, static_cast<std::uint8_t>(PortState::kDown));
  EXPECT_EQ(unconnected->port_phys_state, kPhysPolling);

  // Bad values change nothing.
  pi.lid = 0xC000;  // multicast range
  EXPECT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, pi), mad::status::kInvalidField);
  EXPECT_EQ(sm.get<mad::PortInfo>(AttrId::kPortInfo, 1, kToHost4)->lid, 0x40);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kPortInfo, 6, kToLeaf0)->status,
            mad::status::kInvalidField);
  EXPECT_EQ(fabric->port_view({f.host[4], 1})->lid.value, 0x40U);
}

TEST(SimSma, PortStateTransitions) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  const auto state = [&](const Path& p, PortNum port) {
    return static_cast<PortState>(sm.get<mad::PortInfo>(AttrId::kPortInfo, port, p)->port_state);
  };
  const std::uint16_t bad = mad::status::kInvalidField;

  // leaf0 port 3 <-> spine0 port 1, both INIT.
  sm.set_state(kToLeaf0, 3, PortState::kActive, 0, bad);  // INIT -> ACTIVE skips ARMED
  sm.set_state(kToLeaf0, 3, PortState::kInit, 0, bad);    // INIT is not settable
  sm.set_state(kToLeaf0, 3, PortState::kArmed);
  EXPECT_EQ(state(kToLeaf0, 3), PortState::kArmed);
  sm.set_state(kToLeaf0, 3, PortState::kActive, 0, bad);  // neighbour still INIT
  sm.set_state(kToSpine0, 1, PortState::kArmed);
  sm.set_state(kToLeaf0, 3, PortState::kActive);
  EXPECT_EQ(state(kToLeaf0, 3), PortState::kActive);
  sm.set_state(kToLeaf0, 3, PortState::kArmed, 0, bad);  // no way back but Down
  EXPECT_FALSE(*fabric->port_state_change(f.leaf[0])) << "SubnSet transitions set no flag";

  // Down: the link drops and retrains to INIT at both ends; both switches
  // notice (PortStateChange).
  sm.set_state(kToLeaf0, 3, PortState::kDown);
  EXPECT_EQ(state(kToLeaf0, 3), PortState::kInit);
  EXPECT_EQ(state(kToSpine0, 1), PortState::kInit);
  EXPECT_TRUE(*fabric->port_state_change(f.leaf[0]));
  EXPECT_TRUE(*fabric->port_state_change(f.spine[0]));
  // Cleared by writing 1.
  auto si = sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToLeaf0);
  ASSERT_TRUE(si);
  EXPECT_TRUE(si->port_state_change);
  ASSERT_EQ(sm.set_status(AttrId::kSwitchInfo, 0, kToLeaf0, *si), 0);
  EXPECT_FALSE(sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToLeaf0)->port_state_change);

  // PortPhysicalState Disabled takes the link down until Polling.
  sm.set_state(kToLeaf0, 4, PortState::kNoChange, kPhysDisabled);
  auto pi = sm.get<mad::PortInfo>(AttrId::kPortInfo, 4, kToLeaf0);
  EXPECT_EQ(pi->port_state, static_cast<std::uint8_t>(PortState::kDown));
  EXPECT_EQ(pi->port_phys_state, kPhysDisabled);
  EXPECT_EQ(fabric->port_view({f.spine[1], 1})->phys_state, kPhysPolling);
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToSpine1));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kLinkDown), 1U);
  sm.set_state(kToLeaf0, 4, PortState::kArmed, 0, bad);  // a DOWN port arms nothing
  sm.set_state(kToLeaf0, 4, PortState::kNoChange, kPhysPolling);
  EXPECT_EQ(state(kToLeaf0, 4), PortState::kInit);
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToSpine1));

  // Switch port 0 is ACTIVE and stays so; other physical states are refused.
  EXPECT_EQ(state(kToSpine0, 0), PortState::kActive);
  sm.set_state(kToSpine0, 0, PortState::kArmed, 0, bad);
  sm.set_state(kToSpine0, 0, PortState::kNoChange, kPhysDisabled, bad);
  sm.set_state(kToSpine0, 0, PortState::kActive);
  // A refused Set applies nothing, not even its other fields.
  mad::PortInfo lid_and_bad_state;
  lid_and_bad_state.lid = 77;
  lid_and_bad_state.port_state = static_cast<std::uint8_t>(PortState::kActive);
  EXPECT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, lid_and_bad_state), bad);
  EXPECT_EQ(fabric->port_view({f.host[4], 1})->lid.value, 0U);
}

TEST(SimSma, LinearForwardingTableBlocks) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  EXPECT_EQ(fabric->lft_bytes(), 0U) << "no table until one is written";

  auto fresh = sm.get<mad::LinearForwardingTable>(AttrId::kLinearForwardingTable, 5, kToSpine0);
  ASSERT_TRUE(fresh);
  for (std::uint8_t p : fresh->ports) EXPECT_EQ(p, 255);

  mad::LinearForwardingTable block;
  for (int i = 0; i < 64; ++i) block.ports[i] = static_cast<std::uint8_t>(i % 4 + 1);
  ASSERT_EQ(sm.set_status(AttrId::kLinearForwardingTable, 5, kToSpine0, block), 0);
  EXPECT_EQ(*sm.get<mad::LinearForwardingTable>(AttrId::kLinearForwardingTable, 5, kToSpine0),
            block);
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{5 * 64 + 6}), 3);
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{4 * 64}), 255) << "blocks below stay unset";
  EXPECT_EQ(*fabric->lft_entry(f.spine[1], Lid{5 * 64}), 255) << "tables are per switch";
  EXPECT_GE(fabric->lft_bytes(), 6U * 64U);

  // LinearFDBCap is 0xC000: blocks 0..767.
  auto si = sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToSpine0);
  ASSERT_TRUE(si);
  EXPECT_EQ(si->linear_fdb_cap, 0xC000);
  EXPECT_EQ(sm.set_status(AttrId::kLinearForwardingTable, 767, kToSpine0, block), 0);
  EXPECT_EQ(sm.set_status(AttrId::kLinearForwardingTable, 768, kToSpine0, block),
            mad::status::kInvalidField);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kLinearForwardingTable, 768, kToSpine0)->status,
            mad::status::kInvalidField);
  // LinearFDBTop beyond the cap is refused.
  si->linear_fdb_top = 0xC000;
  EXPECT_EQ(sm.set_status(AttrId::kSwitchInfo, 0, kToSpine0, *si), mad::status::kInvalidField);
  // A CA has no LFT; ExtLFT does not exist in 16-bit mode.
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kLinearForwardingTable, 0, kToHost4)->status,
            mad::status::kMethodAttrUnsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kExtLinearForwardingTable, 0, kToSpine0)->status,
            mad::status::kMethodAttrUnsupported);
}

TEST(SimSma, UnsupportedAttributesAndMethodsGetStatus) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  const std::uint16_t unsupported = mad::status::kMethodAttrUnsupported;
  // An attribute the codec does not know (GUIDInfo, 0x0014) and one no SMA has.
  for (std::uint16_t raw : {0x0014, 0x1234}) {
    mad::Smp s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf0, 0);
    s.attr_id = static_cast<AttrId>(raw);
    auto r = sm.exchange(s);
    ASSERT_TRUE(r.has_value()) << raw;
    EXPECT_EQ(r->status, unsupported) << raw;
    EXPECT_EQ(static_cast<std::uint16_t>(r->attr_id), raw);
  }
  EXPECT_EQ(sm.dr(Method::kSet, AttrId::kNodeInfo, 0, kToLeaf0)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kSet, AttrId::kNodeDescription, 0, kToLeaf0)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kSwitchInfo, 0, kToHost4)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kSmInfo, 0, kToLeaf0)->status, unsupported);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kExtPortInfo, 0, kToLeaf0)->status, unsupported);
  auto nd = sm.dr(Method::kGet, AttrId::kNodeDescription, 0, kToLeaf2);
  ASSERT_TRUE(nd);
  EXPECT_EQ(mad::NodeDescription::decode(mad::data_of(*nd)).text, "leaf2");
  // An SMA does not answer a response or a trap sent to it.
  EXPECT_FALSE(sm.dr(Method::kGetResp, AttrId::kNodeInfo, 0, kToHost0));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kUnexpected), 1U);
}

TEST(SimSma, SlToVlAndVlArbitrationTables) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  mad::SlToVlMappingTable t;
  for (int sl = 0; sl < 16; ++sl) t.vl[sl] = static_cast<std::uint8_t>((sl * 3) % 8);
  const std::uint32_t in3_out4 = (3U << 8) | 4U;
  ASSERT_EQ(sm.set_status(AttrId::kSlToVlMappingTable, in3_out4, kToLeaf0, t), 0);
  EXPECT_EQ(*sm.get<mad::SlToVlMappingTable>(AttrId::kSlToVlMappingTable, in3_out4, kToLeaf0), t);
  EXPECT_EQ(
      sm.get<mad::SlToVlMappingTable>(AttrId::kSlToVlMappingTable, (4U << 8) | 3U, kToLeaf0)->vl[1],
      0)
      << "another (in, out) pair is untouched";
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kSlToVlMappingTable, (6U << 8) | 1U, kToLeaf0)->status,
            mad::status::kInvalidField);
  ASSERT_EQ(sm.set_status(AttrId::kSlToVlMappingTable, 0, kToHost4, t), 0);  // CA: its port
  EXPECT_EQ(*sm.get<mad::SlToVlMappingTable>(AttrId::kSlToVlMappingTable, 1, kToHost4), t);

  mad::VlArbitrationTable arb;
  for (int e = 0; e < 32; ++e) arb.entries[e] = {static_cast<std::uint8_t>(e % 8), 1};
  const std::uint32_t high_port2 = (3U << 16) | 2U;
  ASSERT_EQ(sm.set_status(AttrId::kVlArbitrationTable, high_port2, kToLeaf0, arb), 0);
  EXPECT_EQ(*sm.get<mad::VlArbitrationTable>(AttrId::kVlArbitrationTable, high_port2, kToLeaf0),
            arb);
  EXPECT_EQ(sm.get<mad::VlArbitrationTable>(AttrId::kVlArbitrationTable, (1U << 16) | 2U, kToLeaf0)
                ->entries[0]
                .weight,
            0);
  // Blocks 2 and 4 (entries 32-63) exist only beyond a capacity of 32.
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kVlArbitrationTable, (2U << 16) | 2U, kToLeaf0)->status,
            mad::status::kInvalidField);
  EXPECT_EQ(sm.dr(Method::kGet, AttrId::kVlArbitrationTable, (5U << 16) | 2U, kToLeaf0)->status,
            mad::status::kInvalidField);
}

// ------------------------------------------------------------------ LID routing

TEST(SimLidRouted, DeliveredOnlyWhenEverySwitchRoutesIt) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  sm.set_lid(kToHost0, 1, kSmLid);
  sm.set_lid(kToHost4, 1, kHost4Lid);
  const auto drops = [&](DropReason r) { return fabric->stats().drops_of(r); };

  // LinearFDBTop is 0 after power-on: leaf0 discards everything.
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kLftBeyondTop), 1U);
  for (const Path& p : {kToLeaf0, kToSpine0, kToLeaf2}) sm.set_top(p, 127);
  // No entry for the LID.
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kLftUnset), 1U);
  // The way there but not the way back: host4's SMA answers, the answer dies
  // at leaf2.
  sm.route(kToLeaf0, kHost4Lid, 3);
  sm.route(kToSpine0, kHost4Lid, 3);
  sm.route(kToLeaf2, kHost4Lid, 1);
  const auto handled = fabric->stats().smps_handled;
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->stats().smps_handled, handled + 1);
  EXPECT_EQ(drops(DropReason::kLftUnset), 2U);
  // Both ways.
  sm.route(kToLeaf2, kSmLid, 3);
  sm.route(kToSpine0, kSmLid, 1);
  sm.route(kToLeaf0, kSmLid, 1);
  Mad raw;
  auto r = sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->directed());
  const auto ni = mad::NodeInfo::decode(mad::data_of(*r));
  EXPECT_EQ(ni.node_guid, fabric->topology().node(f.host[4]).guid.value);
  EXPECT_EQ(ni.local_port_num, 1);
  EXPECT_EQ(raw.dlid, kSmLid);
  EXPECT_EQ(raw.slid, kHost4Lid);
  // A wrong turn: spine0 sends host4's LID to leaf1, whose table has no entry.
  sm.route(kToSpine0, kHost4Lid, 2);
  sm.set_top({1, 3, 2}, 127);
  const auto total = fabric->stats().drops_total();
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->stats().drops_total(), total + 1);
  EXPECT_EQ(drops(DropReason::kLftUnset), 3U);
  // A loop (spine0 -> leaf1 -> spine0 ...) ends at the hop limit.
  sm.route({1, 3, 2}, kHost4Lid, 3);
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kHopLimit), 1U);
  // An entry naming a port the switch lacks.
  sm.route({1, 3, 2}, kHost4Lid, 9);
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(drops(DropReason::kLftBadPort), 1U);
  // LID 0 and LIDs beyond the 16-bit unicast space never leave the SM.
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, 0));
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, 0xC000));
  EXPECT_EQ(drops(DropReason::kBadLid), 2U);
  // The SM's own LID loops back inside its HCA.
  r = sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kSmLid, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2000U);
}

TEST(SimLidRouted, ReachesSwitchPortZeroAndHonoursLmc) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  sm.route(kToLeaf0, kLeafLid[2], 3);
  sm.route(kToSpine0, kLeafLid[2], 3);
  auto r = sm.lr(Method::kGet, AttrId::kSwitchInfo, 0, kLeafLid[2]);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(mad::SwitchInfo::decode(mad::data_of(*r)).linear_fdb_top, 127);

  // LMC 2 on host4: LIDs 104..107 all reach it once routed.
  mad::PortInfo pi;
  pi.lid = kHost4Lid;
  pi.lmc = 2;
  pi.master_sm_lid = kSmLid;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, pi), 0);
  for (std::uint32_t lid = kHost4Lid + 1; lid < kHost4Lid + 4; ++lid) {
    sm.route(kToLeaf0, lid, 3);
    sm.route(kToSpine0, lid, 3);
    sm.route(kToLeaf2, lid, 1);
    EXPECT_TRUE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, lid)) << lid;
  }
  EXPECT_EQ(fabric->stats().drops_total(), 0U);
}

TEST(SimLidRouted, StrictModeNeedsActivePorts) {
  SimOptions opts;
  opts.lid_routed_needs_active = true;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  EXPECT_FALSE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kPortNotActive), 1U);
  // Activate the links on the way: host0-leaf0, leaf0-spine0, spine0-leaf2, leaf2-host4.
  const std::pair<Path, PortNum> ends[][2] = {
      {{kToHost0, 1}, {kToLeaf0, 1}},
      {{kToLeaf0, 3}, {kToSpine0, 1}},
      {{kToSpine0, 3}, {kToLeaf2, 3}},
      {{kToLeaf2, 1}, {kToHost4, 1}},
  };
  for (const auto& link : ends) {
    for (const auto& [path, port] : link) sm.set_state(path, port, PortState::kArmed);
    for (const auto& [path, port] : link) sm.set_state(path, port, PortState::kActive);
  }
  EXPECT_TRUE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
}

// ------------------------------------------------------------------ traps and faults

TEST(SimTraps, LinkDownSendsTrap128UntilRepressed) {
  SimOptions opts;
  opts.trap_resend_interval = 100ms;
  opts.trap_max_sends = 5;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);  // includes leaf2 -> SM
  sm.route(kToLeaf0, kLeafLid[2], 3);
  sm.route(kToSpine0, kLeafLid[2], 3);

  // host5 hangs off leaf2 port 2: cut that cable.
  ASSERT_TRUE(fabric->link_down("leaf2", 2).ok());
  EXPECT_EQ(fabric->port_view({f.leaf[2], 2})->state, PortState::kDown);
  EXPECT_EQ(fabric->port_view({f.host[5], 1})->state, PortState::kDown);
  EXPECT_EQ(fabric->port_view({f.host[5], 1})->phys_state, kPhysPolling);
  EXPECT_TRUE(*fabric->port_state_change(f.leaf[2]));

  pollfd pfd{fabric->event_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 0), 1) << "the trap wakes the event fd";
  auto got = fabric->receive(0us);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(::poll(&pfd, 1, 0), 0) << "drained";
  const Mad trap = **got;
  auto t = mad::decode_smp(trap.data);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->method, Method::kTrap);
  EXPECT_EQ(t->attr_id, AttrId::kNotice);
  EXPECT_FALSE(t->directed());
  EXPECT_EQ(trap.slid, kLeafLid[2]);
  EXPECT_EQ(trap.dlid, kSmLid);
  const auto notice = mad::Notice::decode(mad::data_of(*t));
  EXPECT_EQ(notice.trap_number, 128);
  EXPECT_EQ(notice.issuer_lid, kLeafLid[2]);
  EXPECT_EQ(notice.trap128_lid(false), kLeafLid[2]);

  // Repeated with the same TID every 100 ms of transport time.
  const auto t0 = fabric->now();
  got = fabric->receive(1s);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(fabric->now() - t0, 100ms);
  EXPECT_EQ(mad::decode_smp((*got)->data)->tid, t->tid);

  // TrapRepress (LID-routed back to the issuer) stops the repeats.
  mad::Smp repress = *t;
  repress.method = Method::kTrapRepress;
  Mad m;
  mad::encode_smp(repress, std::span<std::uint8_t, kMadSize>(m.data));
  m.dlid = kLeafLid[2];
  ASSERT_TRUE(fabric->send(m).ok());
  EXPECT_EQ(fabric->stats().traps_repressed, 1U);
  got = fabric->receive(1s);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(fabric->stats().traps_sent, 2U);

  // A new event raises a new trap (new TID); unrepressed it stops after
  // trap_max_sends copies.
  ASSERT_TRUE(fabric->link_up("leaf2", 2).ok());
  EXPECT_EQ(fabric->port_view({f.leaf[2], 2})->state, PortState::kInit);
  std::set<std::uint64_t> tids;
  int copies = 0;
  for (;;) {
    got = fabric->receive(1s);
    ASSERT_TRUE(got.ok());
    if (!got->has_value()) break;
    tids.insert(mad::decode_smp((*got)->data)->tid);
    ++copies;
  }
  EXPECT_EQ(copies, 5);
  ASSERT_EQ(tids.size(), 1U);
  EXPECT_NE(*tids.begin(), t->tid);
}

TEST(SimTraps, NoTrapWithoutLidOrRoute) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  // Unconfigured switches notice (PortStateChange) but have nowhere to send.
  ASSERT_TRUE(fabric->link_down({f.leaf[1], 1}).ok());
  EXPECT_TRUE(*fabric->port_state_change(f.leaf[1]));
  EXPECT_EQ(fabric->stats().traps_sent, 0U);
  // Configured but without a route to the SM: sent, and lost in the tables.
  Sm sm(*fabric);
  program_lids(sm);
  ASSERT_TRUE(fabric->link_up({f.leaf[1], 1}).ok());
  EXPECT_EQ(fabric->stats().traps_sent, 1U);
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kLftUnset), 1U);
  auto got = fabric->receive(0us);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  // Errors name what is wrong.
  auto bad = fabric->link_down("leaf0", 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("no cable"), std::string::npos);
  EXPECT_FALSE(fabric->link_down("nosuch", 1).ok());
  EXPECT_FALSE(fabric->switch_down(f.host[3]).ok());
}

TEST(SimFaults, SwitchDownAndUp) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  sm.route(kToSpine0, 5, 2);
  ASSERT_TRUE(fabric->switch_down("spine0").ok());
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(fabric->port_view({f.leaf[l], 3})->state, PortState::kDown) << l;
    EXPECT_TRUE(*fabric->port_state_change(f.leaf[l]));
  }
  EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToSpine0));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kLinkDown), 1U);
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, Path{1, 4, 3})) << "leaf2 via spine1";
  // Back on: as after a power cycle.
  ASSERT_TRUE(fabric->switch_up(f.spine[0]).ok());
  EXPECT_EQ(fabric->port_view({f.leaf[0], 3})->state, PortState::kInit);
  auto p0 = sm.get<mad::PortInfo>(AttrId::kPortInfo, 0, kToSpine0);
  ASSERT_TRUE(p0);
  EXPECT_EQ(p0->lid, 0) << "LIDs are lost with the power";
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{5}), 255);
  EXPECT_EQ(sm.get<mad::SwitchInfo>(AttrId::kSwitchInfo, 0, kToSpine0)->linear_fdb_top, 0);
}

TEST(SimFaults, DropProbabilityOneTimesEverythingOut) {
  SimOptions opts;
  opts.seed = 42;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  ASSERT_TRUE(fabric->set_drop_probability(1.0).ok());
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost0))
      << "the SM's own node is reached without a link";
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf0));
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kRandomLoss), 5U);
  EXPECT_FALSE(fabric->set_drop_probability(1.5).ok());
  EXPECT_FALSE(fabric->set_drop_probability(-0.1).ok());
  // A lossy fabric loses some, not all (seeded: deterministic).
  ASSERT_TRUE(fabric->set_drop_probability(0.3).ok());
  int answered = 0;
  for (int i = 0; i < 200; ++i)
    answered += sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToLeaf2) ? 1 : 0;
  // Six traversals per exchange: P(all survive) = 0.7^6 ~ 0.118.
  EXPECT_GT(answered, 5);
  EXPECT_LT(answered, 60);
}

TEST(SimFaults, FaultsFromAnotherThreadWakeTheEventFd) {
  SmallFabric f;
  auto fabric = make_fabric({}, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  program_lids(sm);
  program_routes_sm_host4(sm);
  std::thread injector([&] {
    for (int i = 0; i < 50; ++i) {
      EXPECT_TRUE(fabric->link_down({f.host[5], 1}).ok());
      EXPECT_TRUE(fabric->link_up({f.host[5], 1}).ok());
      (void)fabric->stats();
    }
  });
  // Meanwhile the SM keeps working.
  int answered = 0;
  for (int i = 0; i < 50; ++i)
    answered += sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4) ? 1 : 0;
  injector.join();
  EXPECT_EQ(answered, 50);
  // leaf2's trap 128 came in among the answers or is waiting; the event fd
  // is readable exactly while something waits.
  std::size_t traps = 0;
  for (const Mad& m : sm.unsolicited) traps += mad::decode_smp(m.data)->method == Method::kTrap;
  for (;;) {
    pollfd pfd{fabric->event_fd(), POLLIN, 0};
    const bool readable = ::poll(&pfd, 1, 0) == 1;
    auto got = fabric->receive(0us);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(readable, got->has_value());
    if (!got->has_value()) break;
    traps += mad::decode_smp((*got)->data)->method == Method::kTrap;
  }
  EXPECT_GE(traps, 1U);
}

// ------------------------------------------------------------------ extended LIDs

TEST(SimExtended, TwentyFourBitLidsEndToEnd) {
  SimOptions opts;
  opts.lid_bits = 24;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  constexpr std::uint32_t kSm24 = 0x100001;
  constexpr std::uint32_t kHost24 = 0x123456;
  const auto set_ext = [&](const Path& p, PortNum port, std::uint32_t lid) {
    mad::ExtPortInfo e;
    e.lid = lid;
    e.master_sm_lid = kSm24;
    e.lid_bits = 24;
    ASSERT_EQ(sm.set_status(AttrId::kExtPortInfo, port, p, e), 0);
  };
  set_ext(kToHost0, 1, kSm24);
  set_ext(kToHost4, 1, kHost24);
  auto e = sm.get<mad::ExtPortInfo>(AttrId::kExtPortInfo, 1, kToHost4);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->lid, kHost24);
  EXPECT_EQ(e->lid_bits, 24);
  auto pi = sm.get<mad::PortInfo>(AttrId::kPortInfo, 1, kToHost4);
  EXPECT_EQ(pi->lid, 0xFFFF) << "a 16-bit field cannot show it";
  EXPECT_EQ(pi->master_sm_lid, 0xFFFF);
  // PortInfo Set leaves an extended port's LID alone.
  mad::PortInfo small;
  small.lid = 5;
  ASSERT_EQ(sm.set_status(AttrId::kPortInfo, 1, kToHost4, small), 0);
  EXPECT_EQ(sm.get<mad::ExtPortInfo>(AttrId::kExtPortInfo, 1, kToHost4)->lid, kHost24);
  // Out of range for the port's mode.
  mad::ExtPortInfo too_big;
  too_big.lid = 0x1C000;
  too_big.lid_bits = 17;
  EXPECT_EQ(sm.set_status(AttrId::kExtPortInfo, 1, kToHost4, too_big), mad::status::kInvalidField);

  auto esi = sm.get<mad::ExtSwitchInfo>(AttrId::kExtSwitchInfo, 0, kToLeaf0);
  ASSERT_TRUE(esi);
  EXPECT_EQ(esi->linear_fdb_cap, 0xF00000U);
  for (const Path& p : {kToLeaf0, kToSpine0, kToLeaf2}) {
    mad::ExtSwitchInfo top;
    top.linear_fdb_top = kHost24;
    ASSERT_EQ(sm.set_status(AttrId::kExtSwitchInfo, 0, p, top), 0);
  }
  const AttrId ext_lft = AttrId::kExtLinearForwardingTable;
  sm.route(kToLeaf0, kHost24, 3, ext_lft);
  sm.route(kToSpine0, kHost24, 3, ext_lft);
  sm.route(kToLeaf2, kHost24, 1, ext_lft);
  sm.route(kToLeaf2, kSm24, 3, ext_lft);
  sm.route(kToSpine0, kSm24, 1, ext_lft);
  sm.route(kToLeaf0, kSm24, 1, ext_lft);
  EXPECT_EQ(*fabric->lft_entry(f.spine[0], Lid{kHost24}), 3);

  Mad raw;
  auto r = sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost24, &raw);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(mad::NodeInfo::decode(mad::data_of(*r)).node_guid, 0x2040U);
  EXPECT_EQ(raw.slid, kHost24);
  EXPECT_EQ(raw.dlid, kSm24);
  // Beyond LinearFDBCap.
  EXPECT_EQ(sm.dr(Method::kGet, ext_lft, 0xF00000 / 64, kToLeaf0)->status,
            mad::status::kInvalidField);
  EXPECT_EQ(fabric->stats().drops_total(), 0U);
}

TEST(SimExtended, Trap128CarriesTheFullLid) {
  SimOptions opts;
  opts.lid_bits = 17;
  SmallFabric f;
  auto fabric = make_fabric(opts, &f);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  constexpr std::uint32_t kSm17 = 0x10001;
  constexpr std::uint32_t kLeaf17 = 0x1A000;
  mad::ExtPortInfo e;
  e.lid = kSm17;
  e.master_sm_lid = kSm17;
  e.lid_bits = 17;
  ASSERT_EQ(sm.set_status(AttrId::kExtPortInfo, 1, kToHost0, e), 0);
  e.lid = kLeaf17;
  ASSERT_EQ(sm.set_status(AttrId::kExtPortInfo, 0, kToLeaf0, e), 0);
  mad::ExtSwitchInfo top;
  top.linear_fdb_top = kLeaf17;
  ASSERT_EQ(sm.set_status(AttrId::kExtSwitchInfo, 0, kToLeaf0, top), 0);
  sm.route(kToLeaf0, kSm17, 1, AttrId::kExtLinearForwardingTable);
  ASSERT_TRUE(fabric->link_down({f.leaf[0], 2}).ok());
  auto got = fabric->receive(0us);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->slid, kLeaf17);
  const auto n = mad::Notice::decode(mad::data_of(*mad::decode_smp((*got)->data)));
  EXPECT_EQ(n.issuer_lid, 0xFFFF);
  EXPECT_EQ(n.trap128_lid(true), kLeaf17);
}

// ------------------------------------------------------------------ time

TEST(SimLatency, NowAdvancesByHopsAndSmaTime) {
  SimOptions opts;
  opts.latency = LatencyModel{};
  opts.latency->hop_delay = 1us;
  opts.latency->sma_processing = 5us;
  opts.latency->dr_relay = 0ns;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  for (const Path& p : {kToHost0, kToLeaf0, kToLeaf2, kToHost4}) {
    const auto t0 = fabric->now();
    ASSERT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, p));
    EXPECT_EQ(fabric->now() - t0, 2 * p.size() * 1us + 5us) << p.size() << " hops";
  }
}

TEST(SimLatency, DrRelayAndLidRoutedTiming) {
  SimOptions opts;
  opts.latency = LatencyModel{};
  opts.latency->hop_delay = 100ns;
  opts.latency->sma_processing = 2us;
  opts.latency->dr_relay = 700ns;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  Sm sm(*fabric);
  auto t0 = fabric->now();
  ASSERT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4));
  // 8 link crossings; leaf0, spine0, leaf2 relay each way.
  EXPECT_EQ(fabric->now() - t0, 8 * 100ns + 2us + 6 * 700ns);
  program_lids(sm);
  program_routes_sm_host4(sm);
  t0 = fabric->now();
  ASSERT_TRUE(sm.lr(Method::kGet, AttrId::kNodeInfo, 0, kHost4Lid));
  EXPECT_EQ(fabric->now() - t0, 8 * 100ns + 2us) << "switches forward LID-routed SMPs in hardware";
}

TEST(SimLatency, SmaQueueOverflowDrops) {
  SimOptions opts;
  opts.latency = LatencyModel{};
  opts.latency->sma_processing = 1ms;
  opts.latency->sma_queue_depth = 2;
  auto fabric = make_fabric(opts);
  ASSERT_TRUE(fabric);
  for (int i = 0; i < 5; ++i) {
    mad::Smp s = mad::make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, kToHost0, 0x10U + i);
    Mad m;
    mad::encode_smp(s, std::span<std::uint8_t, kMadSize>(m.data));
    ASSERT_TRUE(fabric->send(m).ok());
  }
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kSmaQueueFull), 3U);
  int answers = 0;
  for (;;) {
    auto got = fabric->receive(10ms);
    ASSERT_TRUE(got.ok());
    if (!got->has_value()) break;
    ++answers;
  }
  EXPECT_EQ(answers, 2);
}

TEST(SimTime, ZeroLatencyReceiveTimeoutAdvancesTheClock) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  EXPECT_EQ(fabric->now(), 0ns);
  auto got = fabric->receive(250ms);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(fabric->now(), 250ms);
  Sm sm(*fabric);
  ASSERT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4));
  EXPECT_EQ(fabric->now(), 250ms) << "answers take no time without a latency model";
}

// ------------------------------------------------------------------ bad input

TEST(SimBadInput, MalformedMadsAreCountedAndDropped) {
  auto fabric = make_fabric();
  ASSERT_TRUE(fabric);
  Mad m;
  m.data[0] = 2;  // base version
  ASSERT_TRUE(fabric->send(m).ok());
  EXPECT_EQ(fabric->stats().drops_of(DropReason::kMalformed), 1U);

  // Random bytes and randomly corrupted valid SMPs (fixed seed): nothing
  // crashes, every MAD is accounted for, and the fabric still works.
  const std::uint64_t seed = 20261130;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  const mad::Smp valid = mad::make_dr_smp(Method::kGet, AttrId::kPortInfo, 3, kToLeaf2, 7);
  const auto valid_bytes = mad::encode_smp(valid);
  for (int i = 0; i < 4000; ++i) {
    if (i % 2 == 0) {
      for (auto& b : m.data) b = static_cast<std::uint8_t>(rng());
    } else {
      std::copy(valid_bytes.begin(), valid_bytes.end(), m.data.begin());
      for (int k = 0; k < 3; ++k) m.data[rng() % 64] = static_cast<std::uint8_t>(rng());
      if (rng() % 2 == 0) m.data[128 + rng() % 128] = static_cast<std::uint8_t>(rng() % 8);
    }
    m.dlid = static_cast<std::uint32_t>(rng() % 0x20000);
    ASSERT_TRUE(fabric->send(m).ok());
  }
  for (;;) {
    auto got = fabric->receive(0us);
    ASSERT_TRUE(got.ok());
    if (!got->has_value()) break;
  }
  const SimStats st = fabric->stats();
  EXPECT_EQ(st.sent_by_sm, 4001U);
  EXPECT_GT(st.drops_of(DropReason::kMalformed), 2000U);
  Sm sm(*fabric);
  EXPECT_TRUE(sm.dr(Method::kGet, AttrId::kNodeInfo, 0, kToHost4));
}

TEST(SimBadInput, CreateRejectsBadOptions) {
  SimOptions opts;
  opts.lid_bits = 20;
  EXPECT_FALSE(SimFabric::create(build_small().topo, opts).ok());
  opts = {};
  opts.sm_node = "leaf0";
  auto r = SimFabric::create(build_small().topo, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("CA port"), std::string::npos);
  opts.sm_node = "host3";
  opts.sm_port = 2;
  EXPECT_FALSE(SimFabric::create(build_small().topo, opts).ok());
  opts.sm_port = 1;
  r = SimFabric::create(build_small().topo, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->local_port().node_guid.value, 0x2030U);
  EXPECT_EQ((*r)->local_port().port_guid.value, 0x2031U);
  opts = {};
  opts.sm_guid = Guid{0x2051};  // host5's port GUID
  r = SimFabric::create(build_small().topo, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->local_port().ca_name, "host5");
  opts = {};
  opts.drop_probability = 2;
  EXPECT_FALSE(SimFabric::create(build_small().topo, opts).ok());
}

// ------------------------------------------------------------------ generated fabrics

TEST(SimGenerated, EveryNodeOfAFatTreeAnswersAlongABfsPath) {
  auto topo = topo::generate("fat-tree:levels=3,k=8");
  ASSERT_TRUE(topo.ok()) << topo.error().message;
  const routing::Topology copy = *topo;
  auto fabric = SimFabric::create(std::move(topo).value(), {});
  ASSERT_TRUE(fabric.ok());
  SimFabric& sim = **fabric;
  Sm sm(sim);
  // BFS over the wiring from the SM; every node must answer NodeInfo with
  // its own GUID and the port it was entered by.
  const PortRef sm_port{*copy.find_by_guid(sim.local_port().node_guid), sim.local_port().port_num};
  std::vector<Path> path(copy.num_nodes());
  std::vector<PortNum> entered(copy.num_nodes(), 0);
  std::vector<bool> seen(copy.num_nodes(), false);
  std::vector<NodeId> queue{sm_port.node};
  seen[sm_port.node.value] = true;
  entered[sm_port.node.value] = sm_port.port;
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const NodeId n = queue[q];
    const routing::Node& node = copy.node(n);
    if (node.type != NodeType::kSwitch && n != sm_port.node) continue;
    for (unsigned p = 1; p <= node.num_ports; ++p) {
      if (n == sm_port.node && p != sm_port.port) continue;
      const routing::Port& port = copy.port(n, static_cast<PortNum>(p));
      if (!port.connected() || seen[port.remote_node.value]) continue;
      seen[port.remote_node.value] = true;
      path[port.remote_node.value] = path[n.value];
      path[port.remote_node.value].push_back(static_cast<std::uint8_t>(p));
      entered[port.remote_node.value] = port.remote_port;
      queue.push_back(port.remote_node);
    }
  }
  ASSERT_EQ(queue.size(), copy.num_nodes());
  for (NodeId n : queue) {
    auto ni = sm.get<mad::NodeInfo>(AttrId::kNodeInfo, 0, path[n.value]);
    ASSERT_TRUE(ni) << copy.node(n).description;
    EXPECT_EQ(ni->node_guid, copy.node(n).guid.value);
    EXPECT_EQ(ni->local_port_num, entered[n.value]);
  }
  EXPECT_EQ(sim.stats().drops_total(), 0U);
}

}  // namespace
}  // namespace subnetd::discovery::sim

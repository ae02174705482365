#pragma once
// What the SimFabric SMP-level tests share (sim_test, sim_faults_test): a
// hand-wired two-level fat tree so that every expected port number can be
// checked against the drawing, and a scripted SM.
//
//   spine0, spine1   4 ports each: port l+1 goes to leaf l
//   leaf0..leaf3     5 ports each: 1, 2 to hosts; 3 to spine0; 4 to spine1;
//                    5 unconnected
//   host0..host7     1 port: host i on leaf i/2, port i%2 + 1
//
// The SM sits on host0 (the first CA), port 1.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_fabric.hpp"

namespace subnetd::discovery::sim::simtest {

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

inline SmallFabric build_small() {
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
inline const Path kToHost0{};
inline const Path kToLeaf0{1};
inline const Path kToSpine0{1, 3};
inline const Path kToSpine1{1, 4};
inline const Path kToLeaf2{1, 3, 3};
inline const Path kToHost4{1, 3, 3, 1};  // host4 = leaf2 port 1

// LIDs the tests give out.
inline constexpr std::uint32_t kSmLid = 1;
inline constexpr std::uint32_t kLeafLid[4] = {10, 11, 12, 13};
inline constexpr std::uint32_t kSpineLid[2] = {20, 21};
inline constexpr std::uint32_t kHost4Lid = 104;

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

inline std::unique_ptr<SimFabric> make_fabric(const SimOptions& opts = {},
                                              SmallFabric* out = nullptr) {
  SmallFabric f = build_small();
  if (out != nullptr) *out = f;
  auto r = SimFabric::create(std::move(f.topo), opts);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : nullptr;
}

// LIDs on the SM, leaves, spines and host4, MasterSMLID = the SM everywhere,
// LinearFDBTop 127 on every switch; no LFT entries.
inline void program_lids(Sm& sm) {
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
inline void program_routes_sm_host4(Sm& sm) {
  sm.route(kToLeaf0, kHost4Lid, 3);
  sm.route(kToSpine0, kHost4Lid, 3);
  sm.route(kToLeaf2, kHost4Lid, 1);
  sm.route(kToLeaf2, kSmLid, 3);
  sm.route(kToSpine0, kSmLid, 1);
  sm.route(kToLeaf0, kSmLid, 1);
}

}  // namespace subnetd::discovery::sim::simtest

#pragma once
// The SA agent tests' fixture: a generated, routed fat tree (every port's
// MTUCap 4096, the PortInfo a sweep read) published as a FabricState, and
// helpers to build queries and read answers.

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"
#include "discovery/mad/smp.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::daemon::sa {

namespace mad = discovery::mad::sa;
using mad::Attr;
using mad::Method;

// A query: method, attribute, component mask, an all-zero template.
inline mad::SaMad sa_query(Method m, Attr a, std::uint64_t mask = 0) {
  mad::SaMad q;
  q.method = static_cast<std::uint8_t>(m);
  q.attr_id = static_cast<std::uint16_t>(a);
  q.comp_mask = mask;
  q.tid = 0x77;
  return q;
}
// Sets component `name` of the query's template.
inline void sa_set(mad::SaMad& q, const char* name, std::uint64_t v) {
  mad::set_field(q.data, mad::component(*mad::layout_of(q.attr_id), name), v);
}

// An InformInfo Set: (un)subscribe to the generic notices `trap` names
// (0xFFFF: every trap) of every type, producer and issuer, Reports to QP 1.
inline mad::SaMad sa_inform(bool subscribe = true, std::uint16_t trap = 0xFFFF) {
  mad::SaMad q = sa_query(Method::kSet, Attr::kInformInfo);
  sa_set(q, "LIDRangeBegin", 0xFFFF);
  sa_set(q, "IsGeneric", 1);
  sa_set(q, "Subscribe", subscribe ? 1 : 0);
  sa_set(q, "Type", 0xFFFF);
  sa_set(q, "TrapNumber", trap);
  sa_set(q, "QPN", 1);
  sa_set(q, "ProducerType", 0xFFFFFF);
  return q;
}

class SaAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto topo = discovery::topo::generate("fat-tree:levels=2,radix=4");
    ASSERT_TRUE(topo.ok()) << topo.error().message;
    topo_ = std::make_shared<routing::Topology>(std::move(topo).value());
    for (std::uint32_t i = 0; i < topo_->num_nodes(); ++i) {
      for (PortNum p = 0; p <= topo_->node(NodeId{i}).num_ports; ++p) {
        topo_->mutable_port(NodeId{i}, p).mtu_cap = 5;  // 4096
      }
    }
    topo_->mutable_node(NodeId{0}).device_id = 0xCAFE;
    routing::LidAssignOptions lo;
    auto lids = routing::assign_lids(*topo_, lo);
    ASSERT_TRUE(lids.ok()) << lids.error().message;
    lids_ = std::make_shared<routing::LidMap>(std::move(lids->map));
    auto engine = routing::make_engine("updn");
    ASSERT_TRUE(engine.ok());
    routing::WorkerPool pool(1);
    auto routes = (*engine)->compute(*topo_, *lids_, {}, pool, {});
    ASSERT_TRUE(routes.ok()) << routes.error().message;
    state_.topology = topo_;
    state_.lids = lids_;
    state_.routes = std::make_shared<const routing::Routes>(std::move(routes).value());
    // What a sweep read: every port's PortInfo, before the SM set LIDs.
    auto read = std::make_shared<std::vector<std::array<std::uint8_t, 64>>>();
    for (std::uint32_t i = 0; i < topo_->num_nodes(); ++i) {
      for (PortNum p = 0; p <= topo_->node(NodeId{i}).num_ports; ++p) {
        if (topo_->node(NodeId{i}).type != routing::NodeType::kSwitch && p == 0) continue;
        discovery::mad::PortInfo pi;
        pi.local_port_num = p;
        pi.mtu_cap = 5;
        pi.port_state = 2;  // INIT
        pi.link_width_active = 2;
        pi.capability_mask = 0x02010048;
        const std::uint32_t at = topo_->port_index(NodeId{i}, p);
        if (read->size() <= at) read->resize(at + 1);
        pi.encode(discovery::mad::SmpData((*read)[at]));
      }
    }
    state_.port_info = read;
    for (std::uint32_t i = 0; i < topo_->num_nodes(); ++i) {
      const NodeId n{i};
      if (topo_->node(n).type == routing::NodeType::kSwitch) {
        ++switches_;
        continue;
      }
      for (PortNum p = 1; p <= topo_->node(n).num_ports; ++p) {
        if (lids_->base_lid(*topo_, n, p).value != 0) ca_ports_.push_back({n, p});
      }
    }
    ASSERT_GE(ca_ports_.size(), 4u);
  }

  Lid lid_of(PortRef r) const { return lids_->base_lid(*topo_, r.node, r.port); }

  mad::SaMad request(Method m, Attr a, std::uint64_t mask = 0) const {
    return sa_query(m, a, mask);
  }
  void set(mad::SaMad& q, const char* name, std::uint64_t v) const { sa_set(q, name, v); }
  std::vector<MadBytes> ask(const mad::SaMad& q, Lid requester = Lid{1}) {
    return agent_.answer(mad::encode_sa(q), requester, state_);
  }
  // A GetTable answer's records, each `size` bytes (stride from the header).
  std::vector<std::vector<std::uint8_t>> table(const std::vector<MadBytes>& segs) {
    auto first = mad::decode_sa(segs.front());
    EXPECT_TRUE(first.ok());
    EXPECT_EQ(first->status, 0) << std::hex << first->status;
    EXPECT_EQ(first->method, static_cast<std::uint8_t>(Method::kGetTableResp));
    auto bytes = mad::reassemble(segs);
    EXPECT_TRUE(bytes.ok()) << bytes.error().message;
    const std::size_t stride = std::size_t{first->attr_offset} * 8;
    std::vector<std::vector<std::uint8_t>> out;
    for (std::size_t at = 0; stride != 0 && at + stride <= bytes->size(); at += stride) {
      out.emplace_back(bytes->begin() + static_cast<std::ptrdiff_t>(at),
                       bytes->begin() + static_cast<std::ptrdiff_t>(at + stride));
    }
    return out;
  }
  std::uint64_t get(Attr a, const std::vector<std::uint8_t>& r, const char* name) const {
    return mad::get_field(r, mad::component(*mad::layout_of(static_cast<std::uint16_t>(a)), name));
  }
  std::uint16_t status_of(const std::vector<MadBytes>& answer) const {
    EXPECT_EQ(answer.size(), 1u);
    return mad::decode_sa(answer.front())->status;
  }

  std::shared_ptr<routing::Topology> topo_;
  std::shared_ptr<routing::LidMap> lids_;
  state::FabricState state_;
  SaAgent agent_;
  std::size_t switches_ = 0;
  std::vector<PortRef> ca_ports_;
};

}  // namespace subnetd::daemon::sa

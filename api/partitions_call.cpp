// subnet.v1.SubnetManager.ListPartitions and ListMulticastGroups: the
// published partition plan and multicast groups.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <tuple>
#include <unordered_map>

#include "api/service_internal.hpp"
#include "routing/mcast.hpp"
#include "routing/partitions.hpp"
#include "state/path_record.hpp"

namespace subnetd::api {
namespace {

using grpc::Status;
using grpc::StatusCode;

// Page tokens: "m1.<node guid hex>.<port hex>", the last member returned.
std::string member_token(Guid g, PortNum p) {
  return fmt::format("m1.{:016x}.{:02x}", g.value, p);
}

Result<std::pair<Guid, PortNum>> parse_member_token(std::string_view t) {
  std::uint64_t g = 0;
  unsigned p = 0;
  auto hex = [](std::string_view s, auto& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
    return ec == std::errc{} && end == s.data() + s.size();
  };
  if (t.size() != 22 || t.substr(0, 3) != "m1." || t[19] != '.' || !hex(t.substr(3, 16), g) ||
      !hex(t.substr(20), p)) {
    return Error{Errc::kInvalidArgument, "page_token: not a token ListPartitions returned"};
  }
  return std::pair{Guid{g}, static_cast<PortNum>(p)};
}

void fill_partition(const routing::PartitionPlan::Partition& p, v1::Partition* out) {
  out->set_name(p.name);
  out->set_pkey(p.pkey);
  out->set_ipoib(p.ipoib);
  out->set_full_members(p.full_members);
  out->set_limited_members(p.limited_members);
  if (p.ipoib) {
    out->set_ipoib_mtu(128U << p.ipoib_params.mtu);
    out->set_ipoib_rate_gbps(state::gbps10_of(p.ipoib_params.rate) / 10.0);
    out->set_ipoib_qkey(p.ipoib_params.qkey);
    out->set_ipoib_sl(p.ipoib_params.sl);
  }
}

}  // namespace

grpc::ServerUnaryReactor* SubnetManagerService::ListPartitions(grpc::CallbackServerContext* ctx,
                                                               const v1::ListPartitionsRequest* req,
                                                               v1::ListPartitionsResponse* resp) {
  auto size = page_size(req->page_size());
  if (!size.ok()) return reply(ctx, to_status(size.error()));
  if (req->pkey() > 0xFFFF) {
    return reply(ctx, invalid(fmt::format("pkey: {:#x} is not a P_Key (16 bits)", req->pkey())));
  }
  std::optional<std::pair<Guid, PortNum>> after;
  if (!req->page_token().empty()) {
    if (req->pkey() == 0) return reply(ctx, invalid("page_token: members are listed by pkey"));
    auto t = parse_member_token(req->page_token());
    if (!t.ok()) return reply(ctx, to_status(t.error()));
    after = *t;
  }
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  const state::FabricState& st = view->state();
  if (st.partitions == nullptr) {
    return reply(ctx, Status(StatusCode::FAILED_PRECONDITION,
                             "no partitions programmed yet: the first bring-up has not finished"));
  }
  const routing::PartitionPlan& plan = *st.partitions;
  resp->set_generation(st.generation);
  for (const std::string& w : plan.warnings()) resp->add_warnings(w);
  if (req->pkey() == 0) {
    for (const auto& p : plan.partitions()) fill_partition(p, resp->add_partitions());
    return reply(ctx, Status::OK);
  }
  const auto* part = plan.find(static_cast<std::uint16_t>(req->pkey()));
  if (part == nullptr) {
    return reply(ctx,
                 Status(StatusCode::NOT_FOUND, fmt::format("no partition has P_Key {:#06x}",
                                                           req->pkey() & routing::kPKeyBaseMask)));
  }
  fill_partition(*part, resp->add_partitions());
  // Members: endports holding the P_Key, by (node GUID, port).
  const routing::Topology& t = view->topo();
  struct Member {
    Guid guid;
    PortNum port;
    NodeId node;
    std::uint16_t entry;
    std::uint32_t index;
  };
  std::vector<Member> members;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId n{i};
    const routing::Node& node = t.node(n);
    const bool sw = node.type == routing::NodeType::kSwitch;
    for (unsigned pn = sw ? 0 : 1; pn <= (sw ? 0U : node.num_ports); ++pn) {
      const auto p = static_cast<PortNum>(pn);
      const auto table = plan.table(t, n, p);
      for (std::uint32_t k = 0; k < table.size(); ++k) {
        if ((table[k] & routing::kPKeyBaseMask) == part->pkey) {
          members.push_back({node.guid, p, n, table[k], k});
          break;
        }
      }
    }
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return std::tie(a.guid, a.port) < std::tie(b.guid, b.port);
  });
  resp->set_total_members(static_cast<std::uint32_t>(members.size()));
  auto it = members.begin();
  if (after) {
    it = std::upper_bound(members.begin(), members.end(), *after,
                          [](const std::pair<Guid, PortNum>& key, const Member& m) {
                            return key < std::pair{m.guid, m.port};
                          });
  }
  for (; it != members.end() && static_cast<std::uint32_t>(resp->members_size()) < *size; ++it) {
    v1::PartitionMember* m = resp->add_members();
    m->set_node_guid(it->guid.value);
    m->set_node_name(t.node(it->node).description);
    m->set_port(it->port);
    m->set_port_guid(t.port(it->node, it->port).guid.value);
    m->set_lid(view->port_lid(it->node, it->port).value);
    m->set_full((it->entry & routing::kPKeyFullMember) != 0);
    m->set_pkey_index(it->index);
  }
  if (it != members.end()) {
    const Member& last = *(it - 1);
    resp->set_next_page_token(member_token(last.guid, last.port));
  }
  return reply(ctx, Status::OK);
}

grpc::ServerUnaryReactor* SubnetManagerService::ListMulticastGroups(
    grpc::CallbackServerContext* ctx, const v1::ListMulticastGroupsRequest* req,
    v1::ListMulticastGroupsResponse* resp) {
  auto view = core_.view();
  if (!view->has_fabric()) return reply(ctx, no_fabric(*view));
  const state::FabricState& st = view->state();
  if (st.mcast_groups == nullptr) {
    return reply(ctx, Status(StatusCode::FAILED_PRECONDITION,
                             "no multicast groups published: multicast is off or the first "
                             "bring-up has not finished"));
  }
  const routing::Topology& t = view->topo();
  // Port GUID -> port, for the members' names and LIDs.
  std::unordered_map<Guid, PortRef> ports;
  if (req->members()) {
    for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
      const NodeId n{i};
      const bool sw = t.node(n).type == routing::NodeType::kSwitch;
      for (unsigned p = sw ? 0 : 1; p <= (sw ? 0U : t.node(n).num_ports); ++p) {
        ports.emplace(t.port(n, static_cast<PortNum>(p)).guid, PortRef{n, static_cast<PortNum>(p)});
      }
    }
  }
  std::vector<const state::McastGroup*> groups;
  for (const auto& g : *st.mcast_groups) groups.push_back(&g);
  std::sort(groups.begin(), groups.end(),
            [](const auto* a, const auto* b) { return a->mlid < b->mlid; });
  for (const state::McastGroup* g : groups) {
    v1::MulticastGroup* out = resp->add_groups();
    out->set_mgid(state::mgid_text(g->mgid));
    out->set_mlid(g->mlid.value);
    out->set_pkey(g->pkey);
    out->set_qkey(g->qkey);
    out->set_mtu(128U << g->mtu);
    out->set_rate_gbps(state::gbps10_of(g->rate) / 10.0);
    out->set_sl(g->sl);
    out->set_well_known(g->well_known);
    out->set_member_count(static_cast<std::uint32_t>(g->members.size()));
    std::uint32_t tree = 0;
    if (st.multicast != nullptr) {
      for (std::uint32_t s = 0; s < st.multicast->num_switches(); ++s) {
        tree += st.multicast->ports(SwitchIndex{s}, g->mlid).none() ? 0 : 1;
      }
    }
    out->set_tree_switches(tree);
    if (!req->members()) continue;
    for (const auto& [guid, join] : g->members) {
      v1::MulticastMember* m = out->add_members();
      m->set_port_guid(guid.value);
      m->set_join_state(join);
      const auto it = ports.find(guid);
      if (it == ports.end()) continue;
      m->set_node_name(t.node(it->second.node).description);
      m->set_port(it->second.port);
      m->set_lid(view->port_lid(it->second.node, it->second.port).value);
    }
  }
  resp->set_generation(st.generation);
  return reply(ctx, Status::OK);
}

}  // namespace subnetd::api

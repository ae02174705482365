// subnetctl: subnetd's command-line client (gRPC subnet.v1).
//
//   subnetctl status | nodes | node X | links | lft SWITCH | trace SRC DST | path SRC DST
//   subnetctl events [--follow] [--from ID] | sweep [--light|--rebalance] | verify [--read-back]
//   subnetctl port disable|enable NODE PORT | ports --unhealthy | counters | top | errors
//   subnetctl sim link-down|link-up NODE PORT | sim switch-down|switch-up NODE | sim stats
//
// Tables for people by default, --json for scripts (one JSON document per
// command, protobuf's JSON mapping with the proto field names; `events
// --follow --json` prints one document per line). Exit codes: see
// api/cli.hpp (0 ok, 1 RPC error, 2 usage, 3 not found, 4 permission
// denied, 5 unavailable). Exceptions stop here: protobuf's JSON printer and
// CLI11 are the only code that may throw, and main() catches everything.

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/subnetctl_client.hpp"

namespace subnetd::api::ctl {
namespace {

// ---------------------------------------------------------------------------
// Commands

// GetStatus into `r`; with --json it is printed here and `printed` set.
Outcome fetch_status(Client& c, v1::GetStatusResponse& r, bool& printed) {
  auto ctx = c.ctx();
  if (auto s = c.sm().GetStatus(ctx.get(), {}, &r); !s.ok()) return c.fail(s);
  printed = c.opts().json;
  if (printed) print_json(r);
  return std::nullopt;
}

Outcome cmd_status(Client& c) {
  v1::GetStatusResponse r;
  bool printed = false;
  if (Outcome o = fetch_status(c, r, printed); o || printed) return o;
  const std::string state =
      v1::SmState_Name(r.state()).substr(std::string_view("SM_STATE_").size());
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto up =
      std::chrono::duration_cast<std::chrono::seconds>(now).count() - r.started_at().seconds();
  cli::Table t({"", ""});
  t.add({"State", fmt::format("{} (generation {}){}", state, r.generation(),
                              r.message().empty() ? "" : ": " + r.message())});
  t.add({"Version", fmt::format("subnetd {}, up {}", r.version(), cli::format_uptime(up))});
  t.add({"Fabric", fmt::format("{} CAs, {} switches, {} routers; {} ports, {} links", r.cas(),
                               r.switches(), r.routers(), r.ports(), r.links())});
  t.add({"LIDs", fmt::format("{} in use ({}-bit, LMC {})", r.lids(), r.lid_bits(), r.lmc())});
  t.add({"SM port", fmt::format("{} LID {}", cli::format_guid(r.sm_port_guid()), r.sm_lid())});
  t.add({"Election", fmt::format("priority {}; master {}; {} other SM(s) seen", r.sm_priority(),
                                 r.master_guid() == 0
                                     ? std::string("none known")
                                     : fmt::format("{} LID {}", cli::format_guid(r.master_guid()),
                                                   r.master_lid()),
                                 r.sm_peers_size())});
  t.add({"Routing",
         fmt::format("{}, {} VL(s), full routing {}, last reroute {} ({} reroutes)",
                     r.routing_engine().empty() ? "-" : r.routing_engine(), r.routing_vls(),
                     cli::format_duration_us(r.last_routing_us()),
                     r.last_reroute_us() ? cli::format_duration_us(r.last_reroute_us()) : "-",
                     r.reroutes())});
  for (const std::string& note : r.routing_notes()) t.add({"", note});
  if (r.has_last_sweep()) {
    const auto& sw = r.last_sweep();
    std::string phases;
    std::uint64_t total = 0;
    for (const auto& p : sw.phases()) {
      phases += fmt::format("{}{} {}", phases.empty() ? "" : ", ", p.name(),
                            cli::format_duration_us(p.duration_us()));
      total += p.duration_us();
    }
    t.add({"Last sweep", fmt::format("{} {} in {} ({}); {} sweeps", local_time(sw.ended_at()),
                                     v1::SweepOutcome_Name(sw.outcome()).substr(14),
                                     cli::format_duration_us(total), phases, r.sweeps())});
  } else {
    t.add({"Last sweep", "none yet"});
  }
  const std::string verdict = v1::Verdict_Name(r.verdict()).substr(8);
  t.add({"Verification",
         r.verdict_message().empty() ? verdict : verdict + ": " + r.verdict_message()});
  if (r.has_sa()) {
    const auto& sa = r.sa();
    t.add({"SA", fmt::format("{} requests ({} errors), {} records; {} malformed, {} ignored; "
                             "{} subscriptions, {} reports ({} acknowledged)",
                             sa.requests(), sa.errors(), sa.records(), sa.malformed(), sa.ignored(),
                             sa.subscriptions(), sa.reports(), sa.report_acks())});
  }
  t.add({"Events", fmt::format("last id {}", r.last_event_id())});
  // Two columns without a header line.
  const std::string text = t.render();
  std::fputs(text.substr(text.find('\n') + 1).c_str(), stdout);
  return std::nullopt;
}

// The SM election: our role and every other SM seen.
Outcome cmd_sm(Client& c) {
  v1::GetStatusResponse r;
  bool printed = false;
  if (Outcome o = fetch_status(c, r, printed); o || printed) return o;
  const auto name = [](v1::SmState s) {
    return v1::SmState_Name(s).substr(std::string_view("SM_STATE_").size());
  };
  cli::Table t({"SM", "PORT GUID", "LID", "PRIORITY", "STATE", "LAST CONTACT"});
  t.add({"this", cli::format_guid(r.sm_port_guid()), std::to_string(r.sm_lid()),
         std::to_string(r.sm_priority()), name(r.state()), "-"});
  for (const v1::SmPeer& p : r.sm_peers()) {
    t.add({p.guid() == r.master_guid() ? "master" : "peer", cli::format_guid(p.guid()),
           p.lid() ? std::to_string(p.lid()) : "-", std::to_string(p.priority()), name(p.state()),
           local_time(p.last_contact())});
  }
  std::fputs(t.render().c_str(), stdout);
  return std::nullopt;
}

// Calls `rpc` page after page until the server has no next page, moving each
// page's items (the repeated field `items` picks) into `all`.
template <class Req, class Resp, class Rpc, class Items>
Outcome fetch_all_pages(Client& c, Req& req, Resp& all, Rpc rpc, Items items) {
  for (;;) {
    Resp page;
    auto ctx = c.ctx();
    if (auto s = rpc(ctx.get(), req, &page); !s.ok()) return c.fail(s);
    for (auto& x : *items(page)) *items(all)->Add() = std::move(x);
    all.set_total_size(page.total_size());
    all.set_generation(page.generation());
    if (page.next_page_token().empty()) return std::nullopt;
    req.set_page_token(page.next_page_token());
  }
}

Outcome cmd_nodes(Client& c, const std::string& type, const std::string& name) {
  v1::ListNodesRequest req;
  req.set_page_size(1000);
  if (type == "switch") req.set_type(v1::NODE_TYPE_SWITCH);
  if (type == "ca") req.set_type(v1::NODE_TYPE_CA);
  if (type == "router") req.set_type(v1::NODE_TYPE_ROUTER);
  req.set_name_contains(name);
  v1::ListNodesResponse all;
  if (auto f = fetch_all_pages(
          c, req, all,
          [&](grpc::ClientContext* ctx, const auto& r, auto* page) {
            return c.sm().ListNodes(ctx, r, page);
          },
          [](v1::ListNodesResponse& r) { return r.mutable_nodes(); })) {
    return f;
  }
  if (c.opts().json) {
    print_json(all);
    return std::nullopt;
  }
  cli::Table t({"GUID", "TYPE", "LID", "PORTS", "NAME"}, {false, false, true, true, false});
  for (const auto& n : all.nodes()) {
    t.add({cli::format_guid(n.guid()), std::string(cli::node_type_word(n.type())),
           n.lid() ? std::to_string(n.lid()) : "-", std::to_string(n.num_ports()), n.name()});
  }
  t.print(stdout);
  std::printf("%d nodes\n", all.nodes_size());
  return std::nullopt;
}

std::string link_end_text(const v1::LinkEnd& e) {
  return fmt::format("{}[{}]", e.node_name(), e.port());
}

Outcome cmd_node(Client& c, const std::string& word) {
  v1::GetNodeRequest req;
  if (auto f = node_ref(word, req.mutable_node())) return f;
  v1::GetNodeResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().GetNode(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  const auto& n = r.node();
  std::printf("%s %s \"%s\" LID %s, %u ports, system image %s\n",
              std::string(cli::node_type_word(n.type())).c_str(),
              cli::format_guid(n.guid()).c_str(), n.name().c_str(),
              n.lid() ? std::to_string(n.lid()).c_str() : "-", n.num_ports(),
              cli::format_guid(n.system_image_guid()).c_str());
  cli::Table t({"PORT", "STATE", "PHYS", "WIDTH", "SPEED", "LID", "PORT GUID", "REMOTE"},
               {true, false, true, false, false, true, false, false});
  for (const auto& p : r.ports()) {
    std::string remote = p.connected()
                             ? fmt::format("{} {}", cli::format_guid(p.remote().node_guid()),
                                           link_end_text(p.remote()))
                             : "-";
    if (p.admin_disabled()) remote += " (disabled)";
    t.add({std::to_string(p.number()), std::string(cli::port_state_word(p.state())),
           std::to_string(p.phys_state()),
           p.width_lanes() ? fmt::format("{}x", p.width_lanes()) : "-",
           std::string(cli::speed_word(p.speed())), cli::format_lid_range(p.lid(), p.lmc()),
           cli::format_guid(p.guid()), remote});
  }
  t.print(stdout);
  return std::nullopt;
}

Outcome cmd_links(Client& c, const std::string& node) {
  v1::ListLinksRequest req;
  req.set_page_size(1000);
  if (!node.empty()) {
    if (auto f = node_ref(node, req.mutable_node())) return f;
  }
  v1::ListLinksResponse all;
  if (auto f = fetch_all_pages(
          c, req, all,
          [&](grpc::ClientContext* ctx, const auto& r, auto* page) {
            return c.sm().ListLinks(ctx, r, page);
          },
          [](v1::ListLinksResponse& r) { return r.mutable_links(); })) {
    return f;
  }
  if (c.opts().json) {
    print_json(all);
    return std::nullopt;
  }
  cli::Table t({"A", "A GUID", "B", "B GUID", "STATE", "WIDTH", "SPEED"});
  for (const auto& l : all.links()) {
    t.add({link_end_text(l.a()), cli::format_guid(l.a().node_guid()), link_end_text(l.b()),
           cli::format_guid(l.b().node_guid()), std::string(cli::port_state_word(l.state())),
           l.width_lanes() ? fmt::format("{}x", l.width_lanes()) : "-",
           std::string(cli::speed_word(l.speed()))});
  }
  t.print(stdout);
  std::printf("%d links\n", all.links_size());
  return std::nullopt;
}

Outcome cmd_lft(Client& c, const std::string& word) {
  v1::GetForwardingTableRequest req;
  if (auto f = node_ref(word, req.mutable_node())) return f;
  auto ctx = c.ctx();
  auto reader = c.sm().GetForwardingTable(ctx.get(), req);
  std::vector<v1::ForwardingTableBlock> blocks;
  v1::ForwardingTableBlock b;
  while (reader->Read(&b)) blocks.push_back(b);
  if (auto s = reader->Finish(); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    std::string out = "[";
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      out += (i ? ",\n" : "\n") + to_json_line(blocks[i]);
    }
    out += "\n]\n";
    std::fputs(out.c_str(), stdout);
    return std::nullopt;
  }
  // Names of LID owners, as ibroute prints them.
  v1::GetStatusResponse status;
  auto sctx = c.ctx();
  if (auto s = c.sm().GetStatus(sctx.get(), {}, &status); !s.ok()) return c.fail(s);
  std::map<std::uint32_t, v1::Node> by_lid;
  v1::ListNodesRequest nreq;
  nreq.set_page_size(1000);
  for (;;) {
    v1::ListNodesResponse page;
    auto nctx = c.ctx();
    if (auto s = c.sm().ListNodes(nctx.get(), nreq, &page); !s.ok()) return c.fail(s);
    for (const auto& n : page.nodes()) {
      if (n.lid() == 0) continue;
      const std::uint32_t count = n.type() == v1::NODE_TYPE_SWITCH ? 1 : (1U << status.lmc());
      for (std::uint32_t k = 0; k < count; ++k) by_lid[n.lid() + k] = n;
    }
    if (page.next_page_token().empty()) break;
    nreq.set_page_token(page.next_page_token());
  }
  if (blocks.empty()) return Failure{cli::kExitRpcError, "the daemon sent no LFT blocks"};
  const std::uint32_t top = blocks.front().linear_fdb_top();
  std::printf("Unicast lids [0x0-0x%x] of switch %s (LinearFDBTop %u):\n", top,
              cli::format_guid(blocks.front().switch_guid()).c_str(), top);
  cli::Table t({"LID", "OUT", "DESTINATION"}, {false, true, false});
  std::size_t valid = 0;
  for (const auto& blk : blocks) {
    for (std::uint32_t i = 0; i < blk.ports().size(); ++i) {
      const std::uint32_t lid = blk.block() * 64 + i;
      const auto port = static_cast<std::uint8_t>(blk.ports()[i]);
      if (port == 255 || lid > top) continue;
      ++valid;
      std::string dest = "-";
      if (auto it = by_lid.find(lid); it != by_lid.end()) {
        dest = fmt::format("{} {} \"{}\"", cli::node_type_word(it->second.type()),
                           cli::format_guid(it->second.guid()), it->second.name());
      }
      t.add({fmt::format("{:#06x}", lid), fmt::format("{:03}", port), dest});
    }
  }
  t.print(stdout);
  std::printf("%zu valid lids dumped\n", valid);
  return std::nullopt;
}

Outcome cmd_trace(Client& c, const std::string& src, const std::string& dst) {
  v1::TracePathRequest req;
  if (auto f = node_ref(src, req.mutable_source())) return f;
  if (auto f = node_ref(dst, req.mutable_destination())) return f;
  v1::TracePathResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().TracePath(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return r.complete() ? Outcome{} : Failure{cli::kExitRpcError, ""};
  }
  // ibtracert's layout: the first and last lines name the end points; each
  // hop line is "[out port] -> type {GUID}[in port] lid L "name"".
  const auto type_word = [](v1::NodeType t) { return std::string(cli::node_type_word(t)); };
  if (r.hops_size() > 0) {
    const auto& first = r.hops(0);
    std::printf("From %s {%s} portnum %u lid %u \"%s\"\n", type_word(first.node_type()).c_str(),
                cli::format_guid(first.node_guid()).c_str(), first.out_port(), first.lid(),
                first.node_name().c_str());
    for (int i = 1; i < r.hops_size(); ++i) {
      const auto& prev = r.hops(i - 1);
      const auto& h = r.hops(i);
      std::printf("[%u] -> %s port {%s}[%u] lid %u \"%s\"\n", prev.out_port(),
                  type_word(h.node_type()).c_str(), cli::format_guid(h.node_guid()).c_str(),
                  h.in_port(), h.lid(), h.node_name().c_str());
    }
    if (r.complete()) {
      const auto& last = r.hops(r.hops_size() - 1);
      // A switch is reached at its port 0, the port its LID belongs to.
      const unsigned port = last.node_type() == v1::NODE_TYPE_SWITCH ? 0 : last.in_port();
      std::printf("To %s {%s} portnum %u lid %u \"%s\"\n", type_word(last.node_type()).c_str(),
                  cli::format_guid(last.node_guid()).c_str(), port, last.lid(),
                  last.node_name().c_str());
    }
  }
  if (!r.complete()) {
    return Failure{cli::kExitRpcError,
                   fmt::format("trace to LID {} stopped: {}", r.destination_lid(), r.message())};
  }
  return std::nullopt;
}

void print_event(const v1::Event& e, bool json) {
  if (json) {
    std::printf("%s\n", to_json_line(e).c_str());
  } else {
    std::string where;
    if (e.node_guid() != 0) {
      where = e.node_name().empty() ? cli::format_guid(e.node_guid()) : e.node_name();
      if (e.has_port()) where += fmt::format("[{}]", e.port());
    }
    std::printf("%6lld  %s  %-13s  %-16s  %s\n", static_cast<long long>(e.id()),
                local_time(e.time()).c_str(), std::string(cli::event_kind_word(e.kind())).c_str(),
                where.empty() ? "-" : where.c_str(), e.message().c_str());
  }
  std::fflush(stdout);
}

Outcome cmd_events(Client& c, bool follow, std::int64_t from, std::int64_t last) {
  v1::GetStatusResponse status;
  auto sctx = c.ctx();
  if (auto s = c.sm().GetStatus(sctx.get(), {}, &status); !s.ok()) return c.fail(s);
  const std::int64_t newest = status.last_event_id();
  v1::WatchEventsRequest req;
  if (from > 0) {
    req.set_from_event_id(from);
  } else if (newest > 0) {
    req.set_from_event_id(std::max<std::int64_t>(1, newest - last + 1));
  }
  const bool json_array = c.opts().json && !follow;
  if (!follow && (newest == 0 || req.from_event_id() > newest)) {
    if (json_array) std::printf("[]\n");
    return std::nullopt;
  }
  // Without --follow the stream is read up to the newest id the status
  // reported, under the usual deadline; with it, until the daemon stops.
  auto ctx = c.ctx(false, !follow);
  auto reader = c.sm().WatchEvents(ctx.get(), req);
  v1::Event e;
  std::vector<std::string> docs;
  while (reader->Read(&e)) {
    if (json_array) {
      docs.push_back(to_json_line(e));
    } else {
      print_event(e, c.opts().json);
    }
    if (!follow && e.id() >= newest) {
      ctx->TryCancel();
      break;
    }
  }
  const grpc::Status s = reader->Finish();
  if (json_array) {
    std::string out = "[";
    for (std::size_t i = 0; i < docs.size(); ++i) out += (i ? ",\n" : "\n") + docs[i];
    out += docs.empty() ? "]\n" : "\n]\n";
    std::fputs(out.c_str(), stdout);
  }
  if (!follow && s.error_code() == grpc::StatusCode::CANCELLED) return std::nullopt;
  if (!s.ok()) return c.fail(s);
  if (follow) std::fprintf(stderr, "subnetctl: the daemon ended the event stream (stopping)\n");
  return std::nullopt;
}

Outcome cmd_sweep(Client& c, bool no_wait, bool light, bool rebalance) {
  v1::TriggerSweepRequest req;
  req.set_kind(light ? v1::SWEEP_KIND_LIGHT : v1::SWEEP_KIND_HEAVY);
  req.set_wait(!no_wait);
  req.set_rebalance(rebalance);
  v1::TriggerSweepResponse r;
  auto ctx = c.ctx(/*mutating=*/true);
  if (auto s = c.sm().TriggerSweep(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  const bool ok = no_wait || r.sweep().outcome() == v1::SWEEP_OUTCOME_OK;
  if (c.opts().json) {
    print_json(r);
  } else if (no_wait) {
    std::printf("%s queued\n", light ? "light sweep" : "sweep");
  } else if (ok) {
    std::fputs(cli::format_sweep(r).c_str(), stdout);
  }
  if (!ok) {
    return Failure{cli::kExitRpcError, fmt::format("sweep failed: {}", r.sweep().message())};
  }
  return std::nullopt;
}

Outcome cmd_verify(Client& c, bool read_back) {
  v1::VerifyRoutingRequest req;
  req.set_read_back(read_back);
  v1::VerifyRoutingResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().VerifyRouting(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
  } else {
    std::fputs(cli::format_verify(r).c_str(), stdout);
  }
  if (r.verdict() != v1::VERDICT_OK) {
    return Failure{cli::kExitRpcError,
                   "verification failed: " + v1::Verdict_Name(r.verdict()).substr(8)};
  }
  return std::nullopt;
}

Outcome cmd_port(Client& c, const std::string& action, const std::string& node, unsigned port) {
  v1::SetPortStateRequest req;
  if (auto f = node_ref(node, req.mutable_node())) return f;
  req.set_port(port);
  req.set_state(action == "disable" ? v1::PORT_ADMIN_STATE_DISABLED : v1::PORT_ADMIN_STATE_ENABLED);
  v1::SetPortStateResponse r;
  auto ctx = c.ctx(/*mutating=*/true);
  if (auto s = c.sm().SetPortState(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
  } else {
    std::printf("%s port %u: %sd%s (now %s)\n", node.c_str(), port, action.c_str(),
                r.changed() ? "" : ", no change",
                std::string(cli::port_state_word(r.port().state())).c_str());
  }
  return std::nullopt;
}

Outcome cmd_sim_link(Client& c, bool up, const std::string& node, unsigned port) {
  v1::SetLinkStateRequest req;
  if (auto f = node_ref(node, req.mutable_node())) return f;
  req.set_port(port);
  req.set_state(up ? v1::SIM_STATE_UP : v1::SIM_STATE_DOWN);
  v1::SetLinkStateResponse r;
  auto ctx = c.ctx(/*mutating=*/true);
  if (auto s = c.sim().SetLinkState(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
  } else {
    std::printf("cable %s[%u]%s %s%s\n", node.c_str(), port,
                r.has_peer() ? (" - " + link_end_text(r.peer())).c_str() : "", up ? "up" : "down",
                r.changed() ? "" : " (no change)");
  }
  return std::nullopt;
}

Outcome cmd_sim_switch(Client& c, bool up, const std::string& node) {
  v1::SetSwitchStateRequest req;
  if (auto f = node_ref(node, req.mutable_node())) return f;
  req.set_state(up ? v1::SIM_STATE_UP : v1::SIM_STATE_DOWN);
  v1::SetSwitchStateResponse r;
  auto ctx = c.ctx(/*mutating=*/true);
  if (auto s = c.sim().SetSwitchState(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
  } else {
    std::printf("switch %s powered %s%s, %u cables\n", node.c_str(), up ? "on" : "off",
                r.changed() ? "" : " (no change)", r.links_affected());
  }
  return std::nullopt;
}

Outcome cmd_sim_stats(Client& c) {
  v1::GetStatsResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sim().GetStats(ctx.get(), {}, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  cli::Table t({"COUNTER", "VALUE"}, {false, true});
  t.add({"smps_handled", std::to_string(r.smps_handled())});
  t.add({"drops_total", std::to_string(r.drops_total())});
  t.add({"lid_routed_drops", std::to_string(r.lid_routed_drops())});
  t.add({"traps_sent", std::to_string(r.traps_sent())});
  for (const auto& [reason, n] : r.drops_by_reason()) t.add({"drops." + reason, std::to_string(n)});
  t.print(stdout);
  return std::nullopt;
}

}  // namespace
}  // namespace subnetd::api::ctl

int main(int argc, char** argv) {
  using namespace subnetd::api::ctl;
  Options o;
  if (const char* env = std::getenv("SUBNETD_SOCKET"); env != nullptr && *env != '\0') {
    o.socket = env;
  } else {
    o.socket = "/run/subnetd/subnetd.sock";
  }

  CLI::App app{"subnetctl: query and control subnetd (gRPC subnet.v1)", "subnetctl"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("subnetctl ") + SUBNETD_VERSION);
  app.add_option("--socket", o.socket, "unix socket of subnetd (env SUBNETD_SOCKET)")
      ->capture_default_str();
  app.add_option("--addr", o.addr, "connect over TCP to host:port instead of the unix socket");
  app.add_option("--token-file", o.token_file,
                 "file with the bearer token for mutating calls over TCP");
  app.add_option("--tls-ca", o.tls_ca, "PEM CA bundle: use TLS with --addr, verifying the server");
  app.add_flag("--json", o.json, "print JSON (protobuf field names) instead of tables");
  app.add_option("--timeout", o.timeout_s, "seconds to wait for an answer")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  Client client(o);
  Outcome outcome;
  const auto run = [&](auto fn) {
    return [&, fn] {
      if (auto f = client.init()) {
        outcome = f;
        return;
      }
      outcome = fn();
    };
  };

  app.add_subcommand("sm", "the SM election: this SM's role and every other SM seen")
      ->callback(run([&] { return cmd_sm(client); }));
  app.add_subcommand("status", "SM state, counts, timings, verification")->callback(run([&] {
    return cmd_status(client);
  }));

  std::string node_type, name_filter;
  auto* nodes = app.add_subcommand("nodes", "list nodes (ordered by GUID)");
  nodes->add_option("--type", node_type, "only nodes of this type")
      ->check(CLI::IsMember({"switch", "ca", "router"}));
  nodes->add_option("--name", name_filter, "only nodes whose name contains this");
  nodes->callback(run([&] { return cmd_nodes(client, node_type, name_filter); }));

  std::string node_word;
  auto* node = app.add_subcommand("node", "one node with its ports and links");
  node->add_option("NODE", node_word, "GUID (0x...), LID, or name")->required();
  node->callback(run([&] { return cmd_node(client, node_word); }));

  std::string links_node;
  auto* links = app.add_subcommand("links", "list cables");
  links->add_option("--node", links_node, "only cables of this node");
  links->callback(run([&] { return cmd_links(client, links_node); }));

  std::string lft_node;
  auto* lft = app.add_subcommand("lft", "a switch's linear forwarding table, as ibroute prints it");
  lft->add_option("SWITCH", lft_node, "GUID, LID or name of a switch")->required();
  lft->callback(run([&] { return cmd_lft(client, lft_node); }));

  std::string src, dst;
  auto* trace = app.add_subcommand("trace", "the path between two ports, as ibtracert prints it");
  trace->add_option("SRC", src, "source: GUID, LID or name")->required();
  trace->add_option("DST", dst, "destination: GUID, LID or name")->required();
  trace->callback(run([&] { return cmd_trace(client, src, dst); }));

  std::string path_src, path_dst;
  auto* path = app.add_subcommand("path", "the PathRecord the SA answers for two ports");
  path->add_option("SRC", path_src, "source: GUID, LID or name")->required();
  path->add_option("DST", path_dst, "destination: GUID, LID or name")->required();
  path->callback(run([&] { return cmd_path(client, path_src, path_dst); }));

  std::string pkey_word;
  auto* partitions = app.add_subcommand("partitions", "partitions (P_Keys) and their members");
  partitions->add_option("PKEY", pkey_word, "list this partition's member ports (e.g. 0x7fff)");
  partitions->callback(run([&] { return cmd_partitions(client, pkey_word); }));

  bool mcast_members = false;
  auto* mcast = app.add_subcommand("mcast", "multicast groups, their members and trees");
  mcast->add_flag("--members,-m", mcast_members, "list every group's member ports");
  mcast->callback(run([&] { return cmd_mcast(client, mcast_members); }));

  bool follow = false;
  std::int64_t from = 0, last = 20;
  auto* events = app.add_subcommand("events", "the event log");
  events->add_flag("--follow,-f", follow, "keep printing new events until interrupted");
  events->add_option("--from", from, "start at this event id (resume: last id seen + 1)")
      ->check(CLI::NonNegativeNumber);
  events->add_option("--last", last, "without --from: how many recent events to show")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  events->callback(run([&] { return cmd_events(client, follow, from, last); }));

  bool no_wait = false, light = false, rebalance = false;
  auto* sweep = app.add_subcommand("sweep", "run a heavy sweep now, or a light one (mutating)");
  sweep->add_flag("--no-wait", no_wait, "return once the sweep is queued");
  sweep->add_flag("--light", light,
                  "read every switch's SwitchInfo; sweep heavily only if a port changed or a "
                  "switch is silent");
  auto* rebalance_flag =
      sweep->add_flag("--rebalance", rebalance,
                      "route afresh: re-balance layered routes that failures left repaired in "
                      "their layers (LIDs may change SL; hosts resolve their paths again)");
  rebalance_flag->excludes(sweep->get_option("--light"));
  sweep->callback(run([&] { return cmd_sweep(client, no_wait, light, rebalance); }));

  std::string counters_node;
  unsigned counters_port = 0;
  auto* counters = app.add_subcommand("counters", "a node's port counters (performance manager)");
  counters->add_option("NODE", counters_node, "GUID, LID or name")->required();
  counters->add_option("PORT", counters_port, "one port (default: every port)")
      ->check(CLI::Range(1, 254));
  counters->callback(run([&] { return cmd_counters(client, counters_node, counters_port); }));

  unsigned top_limit = 10;
  auto* top = app.add_subcommand("top", "the busiest ports and those with the most new errors");
  top->add_option("-n,--limit", top_limit, "ports per list")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  top->callback(run([&] { return cmd_top(client, top_limit); }));

  unsigned errors_limit = 100;
  bool errors_all = false;
  auto* errors = app.add_subcommand("errors", "ports whose error counters rose");
  errors->add_option("-n,--limit", errors_limit, "at most this many")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  errors->add_flag("--since-start", errors_all, "any errors since the daemon started");
  errors->callback(run([&] { return cmd_errors(client, errors_limit, errors_all); }));

  bool ports_unhealthy = false;
  auto* ports = app.add_subcommand(
      "ports", "links the fault policy isolated or would have, with the evidence (--unhealthy)");
  ports->add_flag("--unhealthy", ports_unhealthy, "links the fault policy holds against")
      ->required();
  ports->callback(run([&] { return cmd_unhealthy(client); }));

  std::string plan_file;
  auto* check = app.add_subcommand("check", "operations checks");
  check->require_subcommand(1);
  auto* cabling = check->add_subcommand(
      "cabling", "compare the fabric with a cabling plan; exit 1 when it differs");
  cabling->add_option("--plan", plan_file,
                      "a net file or a YAML plan (*.yaml); default: the daemon's "
                      "screening.cabling_plan");
  cabling->callback(run([&] { return cmd_check_cabling(client, plan_file); }));

  bool read_back = false;
  auto* verify = app.add_subcommand("verify", "re-verify the programmed tables");
  verify->add_flag("--read-back", read_back,
                   "also read every LFT block back from the switches and print where they differ "
                   "from the published tables");
  verify->callback(run([&] { return cmd_verify(client, read_back); }));

  std::string port_action, port_node;
  unsigned port_num = 0;
  auto* port = app.add_subcommand("port", "disable or re-enable a port (mutating)");
  port->add_option("ACTION", port_action, "disable or enable")
      ->required()
      ->check(CLI::IsMember({"disable", "enable"}));
  port->add_option("NODE", port_node, "GUID, LID or name")->required();
  port->add_option("PORT", port_num, "port number")->required()->check(CLI::Range(1, 254));
  port->callback(run([&] { return cmd_port(client, port_action, port_node, port_num); }));

  auto* sim = app.add_subcommand("sim", "control the simulated fabric (mutating)");
  sim->require_subcommand(1);
  std::string sim_node;
  unsigned sim_port = 0;
  for (const char* verb : {"link-down", "link-up"}) {
    const bool up = std::string_view(verb) == "link-up";
    auto* s = sim->add_subcommand(verb, up ? "plug a cable back in" : "pull a cable");
    s->add_option("NODE", sim_node, "either end of the cable: GUID, LID or name")->required();
    s->add_option("PORT", sim_port, "port number on NODE")->required()->check(CLI::Range(1, 254));
    s->callback(run([&, up] { return cmd_sim_link(client, up, sim_node, sim_port); }));
  }
  for (const char* verb : {"switch-down", "switch-up"}) {
    const bool up = std::string_view(verb) == "switch-up";
    auto* s = sim->add_subcommand(verb, up ? "power a switch on" : "power a switch off");
    s->add_option("NODE", sim_node, "the switch: GUID, LID or name")->required();
    s->callback(run([&, up] { return cmd_sim_switch(client, up, sim_node); }));
  }
  SimErrorCounts inject;
  auto* inj = sim->add_subcommand("errors", "add to a port's error counters");
  inj->add_option("NODE", sim_node, "GUID, LID or name")->required();
  inj->add_option("PORT", sim_port, "port number on NODE")->required()->check(CLI::Range(1, 254));
  inj->add_option("--symbol", inject.symbol, "symbol errors");
  inj->add_option("--link-downed", inject.link_downed, "link downed");
  inj->add_option("--rcv", inject.rcv, "receive errors");
  inj->add_option("--xmit-discards", inject.xmit_discards, "transmit discards");
  inj->add_option("--xmit-wait", inject.xmit_wait, "congestion ticks (PortXmitWait)");
  inj->callback(run([&] { return cmd_sim_errors(client, sim_node, sim_port, inject); }));
  sim->add_subcommand("stats", "simulator packet counters")->callback(run([&] {
    return cmd_sim_stats(client);
  }));

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return cli::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "subnetctl: %s\n", e.what());
    return cli::kExitRpcError;
  }
  if (outcome) {
    if (!outcome->message.empty())
      std::fprintf(stderr, "subnetctl: %s\n", outcome->message.c_str());
    return outcome->code;
  }
  return cli::kExitOk;
}

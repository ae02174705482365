// subnetctl's operations commands: check cabling (CheckCabling), counters
// (GetPortCounters), top (TopPorts), errors (ListPortErrors), sim errors
// (Simulator.InjectPortErrors).

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "api/subnetctl_client.hpp"

namespace subnetd::api::ctl {

namespace {

const char* finding_name(v1::CablingFindingKind k) {
  switch (k) {
    case v1::CABLING_FINDING_KIND_MISSING_NODE:
      return "missing node";
    case v1::CABLING_FINDING_KIND_UNEXPECTED_NODE:
      return "unexpected node";
    case v1::CABLING_FINDING_KIND_NODE_MISMATCH:
      return "node mismatch";
    case v1::CABLING_FINDING_KIND_DESCRIPTION_MISMATCH:
      return "description";
    case v1::CABLING_FINDING_KIND_MISSING_CABLE:
      return "missing cable";
    case v1::CABLING_FINDING_KIND_UNEXPECTED_CABLE:
      return "unexpected cable";
    case v1::CABLING_FINDING_KIND_MISWIRED:
      return "miswired";
    case v1::CABLING_FINDING_KIND_SWAPPED:
      return "swapped";
    case v1::CABLING_FINDING_KIND_WIDTH_BELOW:
      return "width below";
    case v1::CABLING_FINDING_KIND_SPEED_BELOW:
      return "speed below";
    case v1::CABLING_FINDING_KIND_DUPLICATE_GUID:
      return "duplicate GUID";
    default:
      return "?";
  }
}

std::string bytes_text(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000.0 && u < 5) {
    b /= 1000.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, units[u]);
}

std::string port_name(const v1::PortCountersEntry& e) {
  return fmt::format(
      "{}/{}", e.node_name().empty() ? cli::format_guid(e.node_guid()) : e.node_name(), e.port());
}

// The error counters that are not zero, "12 symbol, 1 link downed".
std::string errors_text(const v1::PortCounters& c) {
  std::string out;
  auto add = [&out](std::uint64_t v, const char* what) {
    if (v == 0) return;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", v, what);
  };
  add(c.symbol_errors(), "symbol");
  add(c.link_error_recoveries(), "link recovery");
  add(c.link_downed(), "link downed");
  add(c.rcv_errors(), "receive");
  add(c.rcv_remote_physical_errors(), "remote physical");
  add(c.rcv_switch_relay_errors(), "switch relay");
  add(c.xmit_discards(), "transmit discard");
  add(c.xmit_constraint_errors(), "transmit constraint");
  add(c.rcv_constraint_errors(), "receive constraint");
  add(c.local_link_integrity_errors(), "link integrity");
  add(c.excessive_buffer_overruns(), "buffer overrun");
  add(c.vl15_dropped(), "VL15 dropped");
  return out.empty() ? "-" : out;
}

void print_entries(const google::protobuf::RepeatedPtrField<v1::PortCountersEntry>& list) {
  cli::Table t({"PORT", "PEER", "TX/s", "RX/s", "NEW ERRORS", "ERRORS (TOTAL)", "XMIT_WAIT"},
               {false, false, true, true, false, true, true});
  for (const auto& e : list) {
    t.add({port_name(e), e.peer().empty() ? "-" : e.peer(),
           e.interval_s() > 0 ? bytes_text(e.xmit_bytes_per_s()) : "-",
           e.interval_s() > 0 ? bytes_text(e.rcv_bytes_per_s()) : "-", errors_text(e.delta()),
           std::to_string(e.total().errors()), std::to_string(e.delta().xmit_wait())});
  }
  t.print(stdout);
}

}  // namespace

Outcome cmd_counters(Client& c, const std::string& node, unsigned port) {
  v1::GetPortCountersRequest req;
  if (auto f = node_ref(node, req.mutable_node())) return f;
  req.set_port(port);
  v1::GetPortCountersResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().GetPortCounters(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  for (const auto& e : r.ports()) {
    std::printf("%s -> %s  (read %s, over %.0f s%s%s)\n", port_name(e).c_str(),
                e.peer().empty() ? "-" : e.peer().c_str(), local_time(e.read_at()).c_str(),
                e.interval_s(), e.extended() ? ", 64-bit data counters" : "",
                e.clears() != 0 ? fmt::format(", cleared {} times", e.clears()).c_str() : "");
    cli::Table t({"COUNTER", "TOTAL", "LAST INTERVAL"}, {false, true, true});
    auto row = [&t](const char* name, std::uint64_t total, std::uint64_t delta) {
      t.add({name, std::to_string(total), std::to_string(delta)});
    };
    const v1::PortCounters& a = e.total();
    const v1::PortCounters& d = e.delta();
    row("xmit_bytes", a.xmit_bytes(), d.xmit_bytes());
    row("rcv_bytes", a.rcv_bytes(), d.rcv_bytes());
    row("xmit_packets", a.xmit_packets(), d.xmit_packets());
    row("rcv_packets", a.rcv_packets(), d.rcv_packets());
    row("xmit_wait", a.xmit_wait(), d.xmit_wait());
    row("symbol_errors", a.symbol_errors(), d.symbol_errors());
    row("link_error_recoveries", a.link_error_recoveries(), d.link_error_recoveries());
    row("link_downed", a.link_downed(), d.link_downed());
    row("rcv_errors", a.rcv_errors(), d.rcv_errors());
    row("rcv_remote_physical_errors", a.rcv_remote_physical_errors(),
        d.rcv_remote_physical_errors());
    row("rcv_switch_relay_errors", a.rcv_switch_relay_errors(), d.rcv_switch_relay_errors());
    row("xmit_discards", a.xmit_discards(), d.xmit_discards());
    row("xmit_constraint_errors", a.xmit_constraint_errors(), d.xmit_constraint_errors());
    row("rcv_constraint_errors", a.rcv_constraint_errors(), d.rcv_constraint_errors());
    row("local_link_integrity_errors", a.local_link_integrity_errors(),
        d.local_link_integrity_errors());
    row("excessive_buffer_overruns", a.excessive_buffer_overruns(), d.excessive_buffer_overruns());
    row("vl15_dropped", a.vl15_dropped(), d.vl15_dropped());
    t.print(stdout);
    std::printf("\n");
  }
  return std::nullopt;
}

Outcome cmd_top(Client& c, unsigned limit) {
  v1::TopPortsRequest req;
  req.set_limit(limit);
  v1::TopPortsResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().TopPorts(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  std::printf("busiest ports (counter sweep %llu, %s)\n",
              static_cast<unsigned long long>(r.sweep()), local_time(r.sweep_at()).c_str());
  print_entries(r.busiest());
  std::printf("\nports with new errors\n");
  if (r.erring_size() == 0) {
    std::printf("none\n");
  } else {
    print_entries(r.erring());
  }
  return std::nullopt;
}

Outcome cmd_errors(Client& c, unsigned limit, bool since_start) {
  v1::ListPortErrorsRequest req;
  req.set_limit(limit);
  req.set_since_start(since_start);
  v1::ListPortErrorsResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().ListPortErrors(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  if (r.ports_size() != 0) print_entries(r.ports());
  std::printf("%u port(s) with %s errors; counter sweep %llu read %u ports, %u unanswered%s%s\n",
              r.matching(), since_start ? "any" : "new", static_cast<unsigned long long>(r.sweep()),
              r.ports_read(), r.ports_failed(), r.last_error().empty() ? "" : ": ",
              r.last_error().c_str());
  return std::nullopt;
}

Outcome cmd_unhealthy(Client& c) {
  v1::ListUnhealthyPortsResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().ListUnhealthyPorts(ctx.get(), v1::ListUnhealthyPortsRequest{}, &r); !s.ok()) {
    return c.fail(s);
  }
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  for (const v1::UnhealthyPort& u : r.ports()) {
    const bool isolated = u.status() == v1::HEALTH_STATUS_ISOLATED;
    std::printf("%s/%u - %s/%u  %s (%s) since %s%s\n", u.node_name().c_str(), u.port(),
                u.peer_name().c_str(), u.peer_port(), isolated ? "ISOLATED" : "REFUSED",
                u.cause() == v1::HEALTH_CAUSE_ERRORS ? "errors" : "flapping",
                local_time(u.since()).c_str(),
                isolated ? (", until " + local_time(u.until())).c_str() : "");
    std::printf("    %s\n", u.reason().c_str());
    if (u.link_downs_size() != 0) {
      std::string downs;
      for (const auto& t : u.link_downs()) downs += (downs.empty() ? "" : ", ") + local_time(t);
      std::printf("    link downs: %s\n", downs.c_str());
    }
    if (u.errors_per_minute() > 0) {
      std::printf("    errors: %.0f per minute at the last counter sweep\n", u.errors_per_minute());
    }
  }
  std::printf("%d unhealthy link(s); since start: %llu isolated, %llu returned, %llu refused%s\n",
              r.ports_size(), static_cast<unsigned long long>(r.isolated_total()),
              static_cast<unsigned long long>(r.restored_total()),
              static_cast<unsigned long long>(r.refused_total()),
              r.policy_enabled() ? "" : " (the fault policy is off: health.enabled)");
  return std::nullopt;
}

Outcome cmd_sim_errors(Client& c, const std::string& node, unsigned port, const SimErrorCounts& n) {
  v1::InjectPortErrorsRequest req;
  if (auto f = node_ref(node, req.mutable_node())) return f;
  req.set_port(port);
  req.set_symbol_errors(n.symbol);
  req.set_link_downed(n.link_downed);
  req.set_rcv_errors(n.rcv);
  req.set_xmit_discards(n.xmit_discards);
  req.set_xmit_wait(n.xmit_wait);
  v1::InjectPortErrorsResponse r;
  auto ctx = c.ctx(/*mutating=*/true);
  if (auto s = c.sim().InjectPortErrors(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (!c.opts().json) std::printf("injected on %s port %u\n", node.c_str(), port);
  return std::nullopt;
}

Outcome cmd_check_cabling(Client& c, const std::string& plan_file) {
  v1::CheckCablingRequest req;
  if (!plan_file.empty()) {
    std::ifstream in(plan_file, std::ios::binary);
    if (!in) return Failure{cli::kExitUsage, fmt::format("--plan {}: cannot open", plan_file)};
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().empty())
      return Failure{cli::kExitUsage, fmt::format("--plan {}: empty", plan_file)};
    req.set_plan(text.str());
    req.set_plan_name(plan_file);
  }
  v1::CheckCablingResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().CheckCabling(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
  } else {
    if (r.findings_size() != 0) {
      cli::Table t({"FINDING", "NODE", "PORT", "EXPECTED", "FOUND"},
                   {false, false, true, false, false});
      for (const auto& f : r.findings()) {
        t.add({finding_name(f.kind()),
               f.node_name().empty() ? cli::format_guid(f.node_guid()) : f.node_name(),
               f.port() != 0 ? std::to_string(f.port()) : "-", f.expected(), f.found()});
      }
      t.print(stdout);
      std::printf("\n");
    }
    std::printf(
        "plan %s: %u nodes, %u cables; fabric (generation %llu): %u nodes, %u cables; "
        "%d finding(s) in %.1f ms\n",
        r.plan().c_str(), r.plan_nodes(), r.plan_cables(),
        static_cast<unsigned long long>(r.generation()), r.found_nodes(), r.found_cables(),
        r.findings_size(), static_cast<double>(r.duration_us()) / 1000.0);
  }
  if (r.findings_size() != 0) {
    return Failure{
        cli::kExitRpcError,
        fmt::format("the fabric differs from the plan in {} place(s)", r.findings_size())};
  }
  return std::nullopt;
}

}  // namespace subnetd::api::ctl

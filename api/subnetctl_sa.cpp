// subnetctl's commands over what the SA serves: path (GetPathRecord),
// partitions (ListPartitions), mcast (ListMulticastGroups).

#include <charconv>

#include "api/subnetctl_client.hpp"

namespace subnetd::api::ctl {
namespace {

// "fe80::2c9:0:0:1a" style GID of a subnet prefix and a port GUID.
std::string format_gid(std::uint64_t prefix, std::uint64_t guid) {
  return fmt::format("{:04x}:{:04x}:{:04x}:{:04x}:{:04x}:{:04x}:{:04x}:{:04x}", prefix >> 48,
                     (prefix >> 32) & 0xFFFF, (prefix >> 16) & 0xFFFF, prefix & 0xFFFF, guid >> 48,
                     (guid >> 32) & 0xFFFF, (guid >> 16) & 0xFFFF, guid & 0xFFFF);
}

// P_Key text: "0x7fff", or a number; 0 = not given.
std::optional<std::uint32_t> parse_pkey(const std::string& word) {
  if (word.empty()) return 0;
  std::uint32_t v = 0;
  const bool hex = word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X');
  const char* first = word.data() + (hex ? 2 : 0);
  const char* last = word.data() + word.size();
  auto [end, ec] = std::from_chars(first, last, v, hex ? 16 : 10);
  if (ec != std::errc{} || end != last || first == last || v == 0 || v > 0xFFFF) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

Outcome cmd_path(Client& c, const std::string& src, const std::string& dst) {
  v1::GetPathRecordRequest req;
  if (auto f = node_ref(src, req.mutable_source())) return f;
  if (auto f = node_ref(dst, req.mutable_destination())) return f;
  v1::GetPathRecordResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().GetPathRecord(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  const v1::PathRecord& p = r.path();
  // The picture of saquery -p: what a client's PathRecord query gets.
  cli::Table t({"", ""});
  t.add({"Source", fmt::format("\"{}\" LID {} GID {}", p.source_name(), p.slid(),
                               format_gid(p.subnet_prefix(), p.source_guid()))});
  t.add({"Destination", fmt::format("\"{}\" LID {} GID {}", p.destination_name(), p.dlid(),
                                    format_gid(p.subnet_prefix(), p.destination_guid()))});
  t.add({"SL / P_Key", fmt::format("{} / {:#06x}", p.sl(), p.pkey())});
  t.add({"MTU", fmt::format("{}", p.mtu())});
  t.add({"Rate", fmt::format("{} Gb/s (code {})", p.rate_gbps(), p.rate_code())});
  t.add({"PacketLifeTime",
         fmt::format("{} (4.096 us x 2^{})", p.packet_life_time(), p.packet_life_time())});
  t.add({"Switch hops", fmt::format("{}", p.switch_hops())});
  t.add({"Reversible", p.reversible() ? "yes" : "no"});
  const std::string text = t.render();
  std::fputs(text.substr(text.find('\n') + 1).c_str(), stdout);
  return std::nullopt;
}

Outcome cmd_partitions(Client& c, const std::string& word) {
  const auto pkey = parse_pkey(word);
  if (!pkey) {
    return Failure{cli::kExitUsage, fmt::format("bad P_Key \"{}\" (expected e.g. 0x7fff)", word)};
  }
  v1::ListPartitionsRequest req;
  req.set_pkey(*pkey);
  req.set_page_size(1000);
  v1::ListPartitionsResponse all;
  for (;;) {
    v1::ListPartitionsResponse page;
    auto ctx = c.ctx();
    if (auto s = c.sm().ListPartitions(ctx.get(), req, &page); !s.ok()) return c.fail(s);
    if (all.partitions_size() == 0) {
      *all.mutable_partitions() = page.partitions();
      *all.mutable_warnings() = page.warnings();
    }
    for (auto& m : *page.mutable_members()) *all.add_members() = std::move(m);
    all.set_total_members(page.total_members());
    all.set_generation(page.generation());
    if (page.next_page_token().empty()) break;
    req.set_page_token(page.next_page_token());
  }
  if (c.opts().json) {
    print_json(all);
    return std::nullopt;
  }
  cli::Table t({"P_KEY", "NAME", "FULL", "LIMITED", "IPOIB"}, {false, false, true, true, false});
  for (const auto& p : all.partitions()) {
    t.add({fmt::format("{:#06x}", p.pkey()), p.name(), std::to_string(p.full_members()),
           std::to_string(p.limited_members()),
           p.ipoib() ? fmt::format("mtu {} rate {} Gb/s qkey {:#x} sl {}", p.ipoib_mtu(),
                                   p.ipoib_rate_gbps(), p.ipoib_qkey(), p.ipoib_sl())
                     : "-"});
  }
  t.print(stdout);
  if (*pkey != 0) {
    cli::Table m({"NODE", "PORT", "LID", "MEMBER", "INDEX"}, {false, true, true, false, true});
    for (const auto& x : all.members()) {
      m.add({x.node_name().empty() ? cli::format_guid(x.node_guid()) : x.node_name(),
             std::to_string(x.port()), x.lid() ? std::to_string(x.lid()) : "-",
             x.full() ? "full" : "limited", std::to_string(x.pkey_index())});
    }
    std::printf("\n");
    m.print(stdout);
    std::printf("%d members\n", all.members_size());
  }
  for (const auto& w : all.warnings()) std::printf("warning: %s\n", w.c_str());
  return std::nullopt;
}

Outcome cmd_mcast(Client& c, bool members) {
  v1::ListMulticastGroupsRequest req;
  req.set_members(members);
  v1::ListMulticastGroupsResponse r;
  auto ctx = c.ctx();
  if (auto s = c.sm().ListMulticastGroups(ctx.get(), req, &r); !s.ok()) return c.fail(s);
  if (c.opts().json) {
    print_json(r);
    return std::nullopt;
  }
  cli::Table t({"MLID", "MGID", "P_KEY", "Q_KEY", "MTU", "RATE", "MEMBERS", "SWITCHES"},
               {false, false, false, false, true, true, true, true});
  for (const auto& g : r.groups()) {
    t.add({fmt::format("{:#06x}", g.mlid()), g.mgid() + (g.well_known() ? " *" : ""),
           fmt::format("{:#06x}", g.pkey()), fmt::format("{:#x}", g.qkey()),
           std::to_string(g.mtu()), fmt::format("{}", g.rate_gbps()),
           std::to_string(g.member_count()), std::to_string(g.tree_switches())});
  }
  t.print(stdout);
  std::printf("%d groups (* created by the SM)\n", r.groups_size());
  if (!members) return std::nullopt;
  cli::Table m({"MLID", "NODE", "PORT", "LID", "JOIN"}, {false, false, true, true, false});
  for (const auto& g : r.groups()) {
    for (const auto& x : g.members()) {
      std::string join;
      if (x.join_state() & 1) join += "full ";
      if (x.join_state() & 2) join += "non ";
      if (x.join_state() & 4) join += "send-only ";
      m.add({fmt::format("{:#06x}", g.mlid()),
             x.node_name().empty() ? cli::format_guid(x.port_guid()) : x.node_name(),
             std::to_string(x.port()), x.lid() ? std::to_string(x.lid()) : "-", join});
    }
  }
  std::printf("\n");
  m.print(stdout);
  return std::nullopt;
}

}  // namespace subnetd::api::ctl

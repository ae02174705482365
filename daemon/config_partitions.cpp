// The `partitions` section of the YAML config:
//
//   partitions:
//     - name: default          # 1..64 bytes, unique
//       pkey: 0x7fff           # 0x0001..0x7fff, unique (no membership bit)
//       ipoib: true            # pre-create the IPoIB broadcast group
//       members: all           # shorthand for [all]
//     - name: storage
//       pkey: 0x0010
//       ipoib: true
//       mtu: 4096              # IPoIB group: bytes 256..4096 (default 2048)
//       rate: 100              # Gb/s, an IBA rate (default 10)
//       qkey: 0x0b1b           # default 0x0b1b
//       sl: 0                  # 0..15, default 0 (0 whatever it says with
//                              # routes on several VLs: SubnetManager::keep_multicast_on_vl0)
//       members:
//         - all                             # every port, full member
//         - 0x0002c90300a1b2c3              # a node or port GUID, full
//         - "storage-01 HCA-1"              # a node description, full
//         - {node: "login-01 HCA-1", membership: limited}
//         - {guid: 0x0002c90300a1b2c4, membership: limited}
//         - {all: true, membership: limited}
//
// A member matching no port of the fabric is not an error (fabrics change);
// the plan warns about it at each sweep.

#include <fmt/format.h>

#include "daemon/config_parser.hpp"
#include "state/path_record.hpp"

namespace subnetd::daemon::config_detail {
namespace {

bool looks_like_guid(std::string_view v) {
  const bool hex = v.size() > 1 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
  const bool digits =
      !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  return hex || digits;
}

std::optional<std::string> node_name(Parser& p, const YAML::Node& n, const std::string& path) {
  auto v = p.scalar(n, path, "a node name");
  if (!v) return std::nullopt;
  if (v->empty()) {
    p.fail(n.Mark(), path, "empty node name");
    return std::nullopt;
  }
  if (v->size() > kMaxNodeDescription) {
    p.fail(n.Mark(), path,
           fmt::format("node name \"{}\" has {} bytes, but a NodeDescription holds {}: no node "
                       "can match it",
                       printable(*v, 64), v->size(), kMaxNodeDescription));
    return std::nullopt;
  }
  return v;
}

std::optional<routing::PartitionMember> member(Parser& p, const YAML::Node& n,
                                               const std::string& path) {
  using Kind = routing::PartitionMember::Kind;
  routing::PartitionMember m;
  if (n.IsScalar()) {
    const std::string& v = n.Scalar();
    if (v == "all") return m;
    if (looks_like_guid(v)) {
      auto g = p.guid(n, path);
      if (!g) return std::nullopt;
      m.kind = Kind::kGuid;
      m.guid = *g;
      return m;
    }
    auto name = node_name(p, n, path);
    if (!name) return std::nullopt;
    m.kind = Kind::kName;
    m.name = *name;
    return m;
  }
  if (!n.IsMap()) {
    p.fail(n.Mark(), path,
           fmt::format("expected \"all\", a GUID, a node name or a mapping, got {}", describe(n)));
    return std::nullopt;
  }
  int selectors = 0;
  bool ok = true;
  static constexpr EnumName<bool> kMembership[] = {{"full", true}, {"limited", false}};
  const Parser::Key keys[] = {
      {"all",
       [&](const YAML::Node& v, const std::string& at) {
         ++selectors;
         auto b = p.boolean(v, at);
         if (!b) {
           ok = false;
         } else if (!*b) {
           p.fail(v.Mark(), at, "all: false selects nothing (remove the member)");
           ok = false;
         }
       }},
      {"guid",
       [&](const YAML::Node& v, const std::string& at) {
         ++selectors;
         auto g = p.guid(v, at);
         if (!g) {
           ok = false;
           return;
         }
         m.kind = Kind::kGuid;
         m.guid = *g;
       }},
      {"node",
       [&](const YAML::Node& v, const std::string& at) {
         ++selectors;
         auto name = node_name(p, v, at);
         if (!name) {
           ok = false;
           return;
         }
         m.kind = Kind::kName;
         m.name = *name;
       }},
      {"membership",
       [&](const YAML::Node& v, const std::string& at) {
         auto full = p.enumeration<bool>(v, at, "membership", kMembership);
         if (!full) {
           ok = false;
           return;
         }
         m.full = *full;
       }},
  };
  p.mapping(n, path, keys);
  if (selectors != 1) {
    p.fail(n.Mark(), path,
           selectors == 0 ? "names no member (give one of all, guid, node)"
                          : "names more than one member (give one of all, guid, node)");
    return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return m;
}

void members(Parser& p, const YAML::Node& n, const std::string& path,
             std::vector<routing::PartitionMember>& out) {
  if (n.IsScalar()) {
    if (auto m = member(p, n, path)) out.push_back(*m);
    return;
  }
  if (!n.IsSequence()) {
    p.fail(n.Mark(), path, fmt::format("expected a list of members, got {}", describe(n)));
    return;
  }
  std::size_t i = 0;
  for (const auto& item : n) {
    const std::string at = fmt::format("{}[{}]", path, i++);
    auto m = member(p, item, at);
    if (!m) continue;
    if (std::find_if(out.begin(), out.end(), [&](const routing::PartitionMember& o) {
          return o.kind == m->kind && o.guid == m->guid && o.name == m->name;
        }) != out.end()) {
      p.fail(item.Mark(), at, "names a member already listed", Errc::kConflict);
      continue;
    }
    out.push_back(*m);
  }
  if (i == 0) p.fail(n.Mark(), path, "empty list (a partition needs members)");
}

void partition(Parser& p, const YAML::Node& n, const std::string& path,
               std::vector<routing::PartitionSpec>& out) {
  routing::PartitionSpec s;
  bool has_pkey = false;
  bool has_members = false;
  std::vector<std::string> ipoib_keys;  // given: need ipoib: true
  YAML::Mark ipoib_mark;
  auto ipoib_key = [&](const YAML::Node& v, const std::string& at) {
    ipoib_keys.push_back(at);
    if (ipoib_mark.is_null()) ipoib_mark = v.Mark();
  };
  const Parser::Key keys[] = {
      {"name",
       [&](const YAML::Node& v, const std::string& at) {
         auto name = p.scalar(v, at);
         if (!name) return;
         if (name->empty() || name->size() > 64) {
           p.fail(v.Mark(), at,
                  fmt::format("a partition name has 1..64 bytes, not {}", name->size()));
           return;
         }
         s.name = *name;
       }},
      {"pkey",
       [&](const YAML::Node& v, const std::string& at) {
         auto text = p.scalar(v, at, "a P_Key");
         if (!text) return;
         std::uint32_t key = 0;
         const bool hex =
             text->size() > 2 && (*text)[0] == '0' && ((*text)[1] == 'x' || (*text)[1] == 'X');
         const char* first = text->data() + (hex ? 2 : 0);
         const char* last = text->data() + text->size();
         auto [end, ec] = std::from_chars(first, last, key, hex ? 16 : 10);
         if (ec != std::errc{} || end != last || first == last) {
           p.fail(v.Mark(), at,
                  fmt::format("bad P_Key \"{}\" (expected 0x0001..0x7fff)", printable(*text)));
           return;
         }
         if (key > 0x7FFF && key <= 0xFFFF && key != 0x8000) {
           p.fail(v.Mark(), at,
                  fmt::format("{:#06x} has the membership bit set: give the 15-bit P_Key "
                              "{:#06x} and set membership per member",
                              key, key & 0x7FFF),
                  Errc::kOutOfRange);
           return;
         }
         if (key == 0 || key > 0x7FFF) {
           p.fail(v.Mark(), at, fmt::format("{:#x} is not a P_Key (expected 0x0001..0x7fff)", key),
                  Errc::kOutOfRange);
           return;
         }
         s.pkey = static_cast<std::uint16_t>(key);
         has_pkey = true;
       }},
      {"ipoib",
       [&](const YAML::Node& v, const std::string& at) {
         if (auto b = p.boolean(v, at)) s.ipoib = *b;
       }},
      {"mtu",
       [&](const YAML::Node& v, const std::string& at) {
         ipoib_key(v, at);
         auto bytes = p.integer(v, at, 256, 4096);
         if (!bytes) return;
         for (std::uint8_t code = 1; code <= 5; ++code) {
           if ((128 << code) == *bytes) {
             s.ipoib_params.mtu = code;
             return;
           }
         }
         p.fail(v.Mark(), at,
                fmt::format("{} is not an MTU (expected 256, 512, 1024, 2048 or 4096)", *bytes),
                Errc::kOutOfRange);
       }},
      {"rate",
       [&](const YAML::Node& v, const std::string& at) {
         ipoib_key(v, at);
         auto text = p.scalar(v, at, "a rate in Gb/s");
         if (!text) return;
         double gbps = 0;
         auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), gbps);
         const auto gbps10 = static_cast<long>(gbps * 10 + 0.5);
         const std::uint8_t code = ec == std::errc{} && end == text->data() + text->size() &&
                                           gbps10 > 0 && gbps10 <= 0xFFFF
                                       ? state::rate_code(static_cast<std::uint16_t>(gbps10))
                                       : 0;
         if (code == 0 || state::gbps10_of(code) != gbps10) {
           p.fail(v.Mark(), at,
                  fmt::format("\"{}\" is not an IBA rate in Gb/s (e.g. 10, 40, 56, 100, 200)",
                              printable(*text)),
                  Errc::kOutOfRange);
           return;
         }
         s.ipoib_params.rate = code;
       }},
      {"qkey",
       [&](const YAML::Node& v, const std::string& at) {
         ipoib_key(v, at);
         auto text = p.scalar(v, at, "a Q_Key");
         if (!text) return;
         std::uint64_t q = 0;
         const bool hex =
             text->size() > 2 && (*text)[0] == '0' && ((*text)[1] == 'x' || (*text)[1] == 'X');
         const char* first = text->data() + (hex ? 2 : 0);
         const char* last = text->data() + text->size();
         auto [end, ec] = std::from_chars(first, last, q, hex ? 16 : 10);
         if (ec != std::errc{} || end != last || first == last || q > 0xFFFFFFFF) {
           p.fail(v.Mark(), at,
                  fmt::format("bad Q_Key \"{}\" (expected a 32-bit value)", printable(*text)));
           return;
         }
         s.ipoib_params.qkey = static_cast<std::uint32_t>(q);
       }},
      {"sl",
       [&](const YAML::Node& v, const std::string& at) {
         ipoib_key(v, at);
         if (auto sl = p.integer(v, at, 0, 15)) s.ipoib_params.sl = static_cast<std::uint8_t>(*sl);
       }},
      {"members",
       [&](const YAML::Node& v, const std::string& at) {
         has_members = true;
         members(p, v, at, s.members);
       }},
  };
  if (!n.IsMap()) {
    p.fail(n.Mark(), path,
           fmt::format("expected a mapping (name, pkey, members), got {}", describe(n)));
    return;
  }
  p.mapping(n, path, keys);
  if (s.name.empty() && !p.seen(path + ".name")) p.fail(n.Mark(), path + ".name", "required");
  if (!has_pkey && !p.seen(path + ".pkey")) p.fail(n.Mark(), path + ".pkey", "required");
  if (!has_members && !p.seen(path + ".members")) {
    p.fail(n.Mark(), path + ".members", "required (\"all\", or a list of members)");
  }
  if (!s.ipoib && !ipoib_keys.empty()) {
    p.fail(ipoib_mark, ipoib_keys.front(),
           "configures the IPoIB broadcast group, but the partition has no ipoib: true");
  }
  for (const routing::PartitionSpec& o : out) {
    if (has_pkey && o.pkey == s.pkey) {
      p.fail(p.mark_of(path + ".pkey"), path + ".pkey",
             fmt::format("P_Key {:#06x} is already partition \"{}\"'s", s.pkey, printable(o.name)),
             Errc::kConflict);
      return;
    }
    if (!s.name.empty() && o.name == s.name) {
      p.fail(p.mark_of(path + ".name"), path + ".name",
             fmt::format("partition \"{}\" is already defined", printable(s.name)),
             Errc::kConflict);
      return;
    }
  }
  out.push_back(std::move(s));
}

}  // namespace

void walk_partitions(Parser& p, const YAML::Node& n, const std::string& path,
                     std::vector<routing::PartitionSpec>& out) {
  if (!n.IsSequence()) {
    p.fail(n.Mark(), path, fmt::format("expected a list of partitions, got {}", describe(n)));
    return;
  }
  std::size_t i = 0;
  for (const auto& item : n) partition(p, item, fmt::format("{}[{}]", path, i++), out);
}

}  // namespace subnetd::daemon::config_detail

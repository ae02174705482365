#include "discovery/topo/generators.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "discovery/topo/random_graph.hpp"
#include "routing/text.hpp"

namespace subnetd::discovery::topo {
namespace {

using routing::NodeType;
using routing::PortState;
using routing::Topology;

// IBA LinkWidthActive 4x and LinkSpeedActive QDR.
constexpr std::uint8_t kWidth4x = 2;
constexpr std::uint8_t kSpeedQdr = 4;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const std::size_t at = s.find(sep);
    out.push_back(trim(s.substr(0, at)));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::optional<std::uint64_t> to_number(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// ---------------------------------------------------------------------------
// The parsed spec: a family and its key=value pairs. Every error it makes
// starts with the family name and names the key.
class Spec {
 public:
  static Result<Spec> parse(std::string_view text) {
    text = trim(text);
    Spec spec;
    const std::size_t colon = text.find(':');
    spec.family_ = std::string(trim(text.substr(0, colon)));
    if (spec.family_.empty()) {
      return Error{Errc::kInvalidArgument,
                   fmt::format("topology spec '{}' has no family (e.g. fat-tree:levels=2,radix=8)",
                               printable(text))};
    }
    if (colon == std::string_view::npos || trim(text.substr(colon + 1)).empty()) return spec;
    for (std::string_view item : split(text.substr(colon + 1), ',')) {
      const std::size_t eq = item.find('=');
      const std::string_view key = trim(item.substr(0, eq));
      if (eq == std::string_view::npos || key.empty()) {
        return spec.error(fmt::format("expected key=value, got '{}'", printable(item)));
      }
      if (spec.find(key) != nullptr)
        return spec.error(fmt::format("key {} given twice", printable(key)));
      spec.kv_.emplace_back(std::string(key), std::string(trim(item.substr(eq + 1))));
    }
    return spec;
  }

  const std::string& family() const { return family_; }

  // Set by check_spec(): the family functions stop once every value is
  // checked, before building anything.
  bool dry_run = false;

  Error error(std::string_view what) const {
    return Error{Errc::kInvalidArgument, fmt::format("{}: {}", printable(family_), what)};
  }

  Result<void> allow_only(std::initializer_list<std::string_view> keys) const {
    for (const auto& [k, v] : kv_) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        return error(fmt::format("unknown key {} (expected one of: {})", printable(k),
                                 fmt::join(keys, ", ")));
      }
    }
    return {};
  }

  bool has(std::string_view key) const { return find(key) != nullptr; }

  Result<std::string_view> text(std::string_view key) const {
    const std::string* v = find(key);
    if (v == nullptr) return error(fmt::format("missing key {}", key));
    return std::string_view(*v);
  }

  // A required decimal number in [lo, hi].
  Result<std::uint64_t> number(std::string_view key, std::uint64_t lo, std::uint64_t hi) const {
    const std::string* v = find(key);
    if (v == nullptr) return error(fmt::format("missing key {}", key));
    return check_number(key, *v, lo, hi);
  }

  Result<std::uint64_t> number_or(std::string_view key, std::uint64_t dflt, std::uint64_t lo,
                                  std::uint64_t hi) const {
    const std::string* v = find(key);
    if (v == nullptr) return dflt;
    return check_number(key, *v, lo, hi);
  }

  Result<std::uint64_t> check_number(std::string_view key, std::string_view v, std::uint64_t lo,
                                     std::uint64_t hi) const {
    const std::optional<std::uint64_t> n = to_number(v);
    if (!n)
      return error(fmt::format("{} must be a non-negative integer, got '{}'", key, printable(v)));
    if (*n < lo || *n > hi) {
      return error(fmt::format("{} must be between {} and {}, got {}", key, lo, hi, *n));
    }
    return *n;
  }

 private:
  const std::string* find(std::string_view key) const {
    for (const auto& [k, v] : kv_) {
      if (k == key) return &v;
    }
    return nullptr;
  }

  std::string family_;
  std::vector<std::pair<std::string, std::string>> kv_;
};

// Multiplies without overflowing: saturates past kMaxGeneratedNodes so size
// checks stay meaningful for absurd specs.
std::uint64_t capped_mul(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kCap = std::uint64_t{1} << 40;
  if (a == 0 || b == 0) return 0;
  if (a > kCap / b) return kCap;
  return a * b;
}

Result<void> check_size(const Spec& spec, std::uint64_t nodes) {
  if (nodes > kMaxGeneratedNodes) {
    return spec.error(
        fmt::format("the fabric would have {} nodes, more than the {} a generator "
                    "builds",
                    nodes, kMaxGeneratedNodes));
  }
  return {};
}

Result<void> check_ports(const Spec& spec, std::string_view what, std::uint64_t ports) {
  if (ports > kMaxNodePorts) {
    return spec.error(
        fmt::format("{} would need {} ports, at most {} are possible", what, ports, kMaxNodePorts));
  }
  if (ports == 0) return spec.error(fmt::format("{} would have no ports", what));
  return {};
}

// ---------------------------------------------------------------------------
// Builds the Topology: hands out GUIDs, links ports as a freshly cabled fabric
// (INIT, 4x QDR). Owned by one generate() call.
class FabricBuilder {
 public:
  FabricBuilder(std::uint64_t nodes, std::uint64_t ports, unsigned ca_guid_stride)
      : ca_guid_stride_(ca_guid_stride) {
    topo_.reserve(nodes, ports);
  }

  NodeId add_switch(std::string name, unsigned ports) {
    return topo_.add_node(NodeType::kSwitch, Guid{kSwitchGuidBase + switches_++},
                          static_cast<std::uint8_t>(ports), std::move(name));
  }

  NodeId add_ca(std::string name, unsigned ports) {
    return topo_.add_node(NodeType::kCa, Guid{kCaGuidBase + ca_guid_stride_ * cas_++},
                          static_cast<std::uint8_t>(ports), std::move(name));
  }

  Result<void> link(NodeId a, unsigned pa, NodeId b, unsigned pb) {
    const PortRef ra{a, static_cast<PortNum>(pa)};
    const PortRef rb{b, static_cast<PortNum>(pb)};
    Result<void> r = topo_.connect(ra, rb);
    if (!r.ok()) return Error{Errc::kInternal, "generator wiring bug: " + r.error().message};
    for (const PortRef& end : {ra, rb}) {
      routing::Port& port = topo_.mutable_port(end.node, end.port);
      port.state = PortState::kInit;
      port.width_active = kWidth4x;
      port.speed_active = kSpeedQdr;
    }
    return {};
  }

  Topology take() { return std::move(topo_); }

 private:
  Topology topo_;
  std::uint64_t ca_guid_stride_;
  std::uint64_t switches_ = 0;
  std::uint64_t cas_ = 0;
};

// CAs hang off ports 1..count of a switch; they are named "<prefix>-<j>".
struct HostGroup {
  NodeId sw;
  std::uint32_t count = 0;
  std::string prefix;
};

Result<std::uint32_t> read_ca_ports(const Spec& spec) {
  std::uint64_t v = 0;
  SUBNETD_TRY_ASSIGN(v, spec.number_or("ca_ports", 1, 1, 2));
  return static_cast<std::uint32_t>(v);
}

// Checks what ca_ports=2 needs of the host groups (their counts).
Result<void> check_host_pairs(const Spec& spec, std::span<const std::uint32_t> counts,
                              std::uint32_t ca_ports) {
  if (ca_ports == 1) return {};
  if (spec.has("hosts") && spec.family() == "fat-tree") {
    return spec.error("ca_ports=2 cannot be combined with hosts= (use hosts_per_edge)");
  }
  if (counts.size() % 2 != 0) {
    return spec.error(
        fmt::format("ca_ports=2 pairs neighbouring host switches and needs an even "
                    "number of them, got {}",
                    counts.size()));
  }
  for (std::size_t i = 0; i < counts.size(); i += 2) {
    if (counts[i] != counts[i + 1]) {
      return spec.error("ca_ports=2 needs the same number of hosts on paired switches");
    }
  }
  return {};
}

std::uint64_t num_cas(std::span<const std::uint32_t> counts, std::uint32_t ca_ports) {
  std::uint64_t sum = 0;
  for (std::uint32_t c : counts) sum += c;
  return ca_ports == 2 ? sum / 2 : sum;
}

Result<void> attach_hosts(FabricBuilder& b, std::span<const HostGroup> groups,
                          std::uint32_t ca_ports) {
  if (ca_ports == 1) {
    for (const HostGroup& g : groups) {
      for (std::uint32_t j = 0; j < g.count; ++j) {
        const NodeId ca = b.add_ca(fmt::format("{}-{}", g.prefix, j), 1);
        SUBNETD_TRY(b.link(ca, 1, g.sw, j + 1));
      }
    }
    return {};
  }
  for (std::size_t i = 0; i + 1 < groups.size(); i += 2) {
    const HostGroup& first = groups[i];
    const HostGroup& second = groups[i + 1];
    for (std::uint32_t j = 0; j < first.count; ++j) {
      const NodeId ca = b.add_ca(fmt::format("{}-{}", first.prefix, j), 2);
      SUBNETD_TRY(b.link(ca, 1, first.sw, j + 1));
      SUBNETD_TRY(b.link(ca, 2, second.sw, j + 1));
    }
  }
  return {};
}

// ---------------------------------------------------------------------------
// XGFT / PGFT wiring. Level l (1..h) holds prod(m_{l+1..h}) * prod(w_1..w_l)
// nodes. A node's label is (a_h..a_{l+1} ; b_1..b_l), a_i < m_i, b_i < w_i;
// its index reads the label as a mixed-radix number, a_h most significant.
// The child (a_h..a_l ; b_1..b_{l-1}) at level l-1 links to the w_l parents
// (a_h..a_{l+1} ; b_1..b_{l-1}, b_l) with p_l parallel links each. With this
// order a k-ary fat tree comes out pod-major (edge index = pod*k/2 + e).
struct Xgft {
  std::vector<std::uint32_t> m, w, p;  // [l-1] holds level l's value
  std::uint32_t height() const { return static_cast<std::uint32_t>(m.size()); }

  std::uint64_t level_size(std::uint32_t l) const {
    std::uint64_t n = 1;
    for (std::uint32_t i = l + 1; i <= height(); ++i) n = capped_mul(n, m[i - 1]);
    for (std::uint32_t i = 1; i <= l; ++i) n = capped_mul(n, w[i - 1]);
    return n;
  }
  std::uint64_t down_ports(std::uint32_t l) const { return std::uint64_t{m[l - 1]} * p[l - 1]; }
  std::uint64_t up_ports(std::uint32_t l) const {
    return l < height() ? std::uint64_t{w[l]} * p[l] : 0;
  }
  // Switch ports at level l >= 1; CA ports at level 0.
  std::uint64_t ports(std::uint32_t l) const {
    return l == 0 ? up_ports(0) : down_ports(l) + up_ports(l);
  }
};

// Links level l-1 (children) to level l (parents).
Result<void> link_xgft_level(FabricBuilder& b, const Xgft& x, std::uint32_t l,
                             std::span<const NodeId> children, std::span<const NodeId> parents) {
  std::uint64_t w_below = 1;  // prod(w_1..w_{l-1})
  for (std::uint32_t i = 1; i < l; ++i) w_below *= x.w[i - 1];
  const std::uint32_t ml = x.m[l - 1], wl = x.w[l - 1], pl = x.p[l - 1];
  const std::uint64_t child_up_base = l == 1 ? 0 : x.down_ports(l - 1);
  for (std::uint64_t c = 0; c < children.size(); ++c) {
    const std::uint64_t low = c % w_below;
    const std::uint64_t high = c / w_below;
    const std::uint64_t a = high % ml;
    const std::uint64_t upper = high / ml;
    for (std::uint32_t bl = 0; bl < wl; ++bl) {
      const std::uint64_t parent = (upper * w_below + low) * wl + bl;
      for (std::uint32_t q = 0; q < pl; ++q) {
        const auto child_port =
            static_cast<unsigned>(child_up_base + std::uint64_t{bl} * pl + q + 1);
        const auto parent_port = static_cast<unsigned>(a * pl + q + 1);
        SUBNETD_TRY(b.link(children[c], child_port, parents[parent], parent_port));
      }
    }
  }
  return {};
}

using LevelNamer = std::function<std::string(std::uint32_t level, std::uint64_t index)>;

// Creates and links switch levels 1..h. Returns the node ids per level
// (index 0 = level 1).
Result<std::vector<std::vector<NodeId>>> build_xgft_switches(FabricBuilder& b, const Xgft& x,
                                                             const LevelNamer& name) {
  std::vector<std::vector<NodeId>> levels(x.height());
  for (std::uint32_t l = 1; l <= x.height(); ++l) {
    const std::uint64_t n = x.level_size(l);
    levels[l - 1].reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      levels[l - 1].push_back(b.add_switch(name(l, i), static_cast<unsigned>(x.ports(l))));
    }
  }
  for (std::uint32_t l = 2; l <= x.height(); ++l) {
    SUBNETD_TRY(link_xgft_level(b, x, l, levels[l - 2], levels[l - 1]));
  }
  return levels;
}

std::uint64_t xgft_switch_count(const Xgft& x) {
  std::uint64_t n = 0;
  for (std::uint32_t l = 1; l <= x.height(); ++l) n += x.level_size(l);
  return n;
}

std::uint64_t xgft_switch_port_slots(const Xgft& x) {
  std::uint64_t n = 0;
  for (std::uint32_t l = 1; l <= x.height(); ++l) n += x.level_size(l) * (x.ports(l) + 1);
  return n;
}

// ---------------------------------------------------------------------------
Result<Topology> fat_tree(const Spec& spec) {
  SUBNETD_TRY(spec.allow_only({"levels", "radix", "k", "hosts_per_edge", "hosts", "ca_ports"}));
  std::uint64_t levels = 0;
  {
    Result<std::string_view> t = spec.text("levels");
    if (!t.ok()) return t.error();
    const std::optional<std::uint64_t> n = to_number(*t);
    if (!n || (*n != 2 && *n != 3)) {
      return spec.error(fmt::format("levels must be 2 or 3, got '{}'", printable(*t)));
    }
    levels = *n;
  }
  const char* size_key = levels == 2 ? "radix" : "k";
  const char* other_key = levels == 2 ? "k" : "radix";
  if (spec.has(other_key)) {
    return spec.error(fmt::format("levels={} takes {}, not {}", levels, size_key, other_key));
  }
  std::uint64_t radix = 0;
  SUBNETD_TRY_ASSIGN(radix, spec.number(size_key, 2, kMaxNodePorts));
  if (radix % 2 != 0) return spec.error(fmt::format("{} must be even, got {}", size_key, radix));
  const auto half = static_cast<std::uint32_t>(radix / 2);
  const auto r = static_cast<std::uint32_t>(radix);

  Xgft x;
  if (levels == 2) {
    x = Xgft{{half, r}, {1, half}, {1, 1}};
  } else {
    x = Xgft{{half, half, r}, {1, half, half}, {1, 1, 1}};
  }
  const std::uint64_t edges = x.level_size(1);

  if (spec.has("hosts_per_edge") && spec.has("hosts")) {
    return spec.error("give hosts_per_edge or hosts, not both");
  }
  std::vector<std::uint32_t> counts(edges, half);
  if (spec.has("hosts")) {
    std::uint64_t total = 0;
    SUBNETD_TRY_ASSIGN(total, spec.number("hosts", 0, edges * half));
    for (std::uint64_t i = 0; i < edges; ++i) {
      counts[i] = static_cast<std::uint32_t>(total * (i + 1) / edges - total * i / edges);
    }
  } else {
    std::uint64_t per_edge = 0;
    SUBNETD_TRY_ASSIGN(per_edge, spec.number_or("hosts_per_edge", half, 0, half));
    std::fill(counts.begin(), counts.end(), static_cast<std::uint32_t>(per_edge));
  }
  std::uint32_t ca_ports = 1;
  SUBNETD_TRY_ASSIGN(ca_ports, read_ca_ports(spec));
  SUBNETD_TRY(check_host_pairs(spec, counts, ca_ports));

  if (spec.dry_run) return Topology{};
  const std::uint64_t cas = num_cas(counts, ca_ports);
  FabricBuilder b(xgft_switch_count(x) + cas, xgft_switch_port_slots(x) + cas * (ca_ports + 1), 4);
  LevelNamer name;
  if (levels == 2) {
    name = [](std::uint32_t l, std::uint64_t i) {
      return fmt::format("{}{}", l == 1 ? "leaf" : "spine", i);
    };
  } else {
    name = [half](std::uint32_t l, std::uint64_t i) {
      if (l == 3) return fmt::format("core-{}", i);
      return fmt::format("{}-p{}-{}", l == 1 ? "edge" : "agg", i / half, i % half);
    };
  }
  std::vector<std::vector<NodeId>> sw;
  SUBNETD_TRY_ASSIGN(sw, build_xgft_switches(b, x, name));
  std::vector<HostGroup> groups(edges);
  for (std::uint64_t i = 0; i < edges; ++i) {
    groups[i].sw = sw[0][i];
    groups[i].count = counts[i];
    groups[i].prefix =
        levels == 2 ? fmt::format("h-l{}", i) : fmt::format("h-p{}-e{}", i / half, i % half);
  }
  SUBNETD_TRY(attach_hosts(b, groups, ca_ports));
  return b.take();
}

Result<std::vector<std::uint32_t>> read_level_list(const Spec& spec, std::string_view key,
                                                   std::uint32_t h) {
  std::string_view text;
  SUBNETD_TRY_ASSIGN(text, spec.text(key));
  std::vector<std::string_view> items = split(text, '.');
  if (items.size() != h) {
    return spec.error(
        fmt::format("{} must list {} values (one per level, h={}) separated by "
                    "'.', got '{}'",
                    key, h, h, printable(text)));
  }
  std::vector<std::uint32_t> out;
  for (std::string_view item : items) {
    std::uint64_t v = 0;
    SUBNETD_TRY_ASSIGN(v, spec.check_number(key, item, 1, kMaxNodePorts));
    out.push_back(static_cast<std::uint32_t>(v));
  }
  return out;
}

Result<Topology> pgft(const Spec& spec) {
  SUBNETD_TRY(spec.allow_only({"h", "m", "w", "p"}));
  std::uint64_t h = 0;
  SUBNETD_TRY_ASSIGN(h, spec.number("h", 1, 16));
  const auto height = static_cast<std::uint32_t>(h);
  std::vector<std::uint32_t> m, w, p(height, 1);
  SUBNETD_TRY_ASSIGN(m, read_level_list(spec, "m", height));
  SUBNETD_TRY_ASSIGN(w, read_level_list(spec, "w", height));
  if (spec.has("p")) {
    SUBNETD_TRY_ASSIGN(p, read_level_list(spec, "p", height));
  }
  const Xgft x{std::move(m), std::move(w), std::move(p)};
  for (std::uint32_t l = 0; l <= height; ++l) {
    SUBNETD_TRY(
        check_ports(spec, l == 0 ? std::string("CAs (w1*p1)") : fmt::format("level-{} switches", l),
                    x.ports(l)));
  }
  std::uint64_t nodes = x.level_size(0);
  for (std::uint32_t l = 1; l <= height; ++l) nodes += x.level_size(l);
  SUBNETD_TRY(check_size(spec, nodes));

  if (spec.dry_run) return Topology{};
  const std::uint64_t ca_ports = x.ports(0);
  const auto stride = std::max<std::uint64_t>(4, std::bit_ceil(ca_ports + 1));
  const std::uint64_t cas = x.level_size(0);
  FabricBuilder b(nodes, xgft_switch_port_slots(x) + cas * (ca_ports + 1),
                  static_cast<unsigned>(stride));
  std::vector<std::vector<NodeId>> sw;
  SUBNETD_TRY_ASSIGN(sw, build_xgft_switches(b, x, [](std::uint32_t l, std::uint64_t i) {
                       return fmt::format("sw-l{}-{}", l, i);
                     }));
  std::vector<NodeId> hosts;
  hosts.reserve(cas);
  for (std::uint64_t i = 0; i < cas; ++i) {
    hosts.push_back(b.add_ca(fmt::format("h-{}", i), static_cast<unsigned>(ca_ports)));
  }
  SUBNETD_TRY(link_xgft_level(b, x, 1, hosts, sw[0]));
  return b.take();
}

// Torus, mesh and ring share one grid builder.
Result<Topology> grid(const Spec& spec, std::vector<std::uint32_t> dims, bool wrap,
                      std::uint32_t hosts, std::uint32_t ca_ports) {
  const auto nd = static_cast<std::uint32_t>(dims.size());
  SUBNETD_TRY(check_ports(spec, "each switch", std::uint64_t{hosts} + 2 * nd));
  std::uint64_t n = 1;
  for (std::uint32_t d : dims) n = capped_mul(n, d);
  SUBNETD_TRY(check_size(spec, n + capped_mul(n, hosts)));
  const std::vector<std::uint32_t> counts(n, hosts);
  SUBNETD_TRY(check_host_pairs(spec, counts, ca_ports));
  if (spec.dry_run) return Topology{};

  // stride[d]: index distance between neighbours in dimension d (first dim most significant).
  std::vector<std::uint64_t> stride(nd, 1);
  for (std::uint32_t d = nd - 1; d > 0; --d) stride[d - 1] = stride[d] * dims[d];
  auto coords = [&](std::uint64_t i) {
    std::string s;
    for (std::uint32_t d = 0; d < nd; ++d) {
      if (d > 0) s += '-';
      s += fmt::to_string(i / stride[d] % dims[d]);
    }
    return s;
  };

  const unsigned ports = hosts + 2 * nd;
  const std::uint64_t cas = num_cas(counts, ca_ports);
  FabricBuilder b(n + cas, n * (ports + 1) + cas * (ca_ports + 1), 4);
  std::vector<NodeId> sw;
  sw.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) sw.push_back(b.add_switch("sw-" + coords(i), ports));
  for (std::uint64_t i = 0; i < n; ++i) {
    for (std::uint32_t d = 0; d < nd; ++d) {
      const std::uint64_t c = i / stride[d] % dims[d];
      if (dims[d] < 2) continue;
      if (c + 1 == dims[d]) {
        // The wrap-around link; a size-2 ring already has its one link.
        if (!wrap || dims[d] == 2) continue;
      }
      const std::uint64_t next = i - c * stride[d] + (c + 1) % dims[d] * stride[d];
      SUBNETD_TRY(b.link(sw[i], hosts + 1 + 2 * d, sw[next], hosts + 2 + 2 * d));
    }
  }
  std::vector<HostGroup> groups(n);
  for (std::uint64_t i = 0; i < n; ++i) groups[i] = {sw[i], hosts, "h-" + coords(i)};
  SUBNETD_TRY(attach_hosts(b, groups, ca_ports));
  return b.take();
}

Result<Topology> torus_or_mesh(const Spec& spec, bool wrap) {
  SUBNETD_TRY(spec.allow_only({"dims", "hosts", "ca_ports"}));
  std::string_view text;
  SUBNETD_TRY_ASSIGN(text, spec.text("dims"));
  std::vector<std::string_view> items = split(text, 'x');
  if (items.size() > 3) {
    return spec.error(fmt::format("dims takes 1 to 3 sizes like 4x4x4, got '{}'", printable(text)));
  }
  std::vector<std::uint32_t> dims;
  for (std::string_view item : items) {
    const std::optional<std::uint64_t> v = to_number(item);
    if (!v)
      return spec.error(fmt::format("dims must look like 4x4 or 4x4x4, got '{}'", printable(text)));
    if (*v == 0)
      return spec.error(fmt::format("dims must be positive, got 0 in '{}'", printable(text)));
    if (*v > kMaxGeneratedNodes)
      return spec.error(fmt::format("dims too large: '{}'", printable(text)));
    dims.push_back(static_cast<std::uint32_t>(*v));
  }
  std::uint64_t hosts = 0;
  SUBNETD_TRY_ASSIGN(hosts, spec.number_or("hosts", 1, 0, kMaxNodePorts));
  std::uint32_t ca_ports = 1;
  SUBNETD_TRY_ASSIGN(ca_ports, read_ca_ports(spec));
  return grid(spec, std::move(dims), wrap, static_cast<std::uint32_t>(hosts), ca_ports);
}

Result<Topology> ring(const Spec& spec) {
  SUBNETD_TRY(spec.allow_only({"switches", "hosts", "ca_ports"}));
  std::uint64_t n = 0, hosts = 0;
  SUBNETD_TRY_ASSIGN(n, spec.number("switches", 1, kMaxGeneratedNodes));
  SUBNETD_TRY_ASSIGN(hosts, spec.number_or("hosts", 1, 0, kMaxNodePorts));
  std::uint32_t ca_ports = 1;
  SUBNETD_TRY_ASSIGN(ca_ports, read_ca_ports(spec));
  return grid(spec, {static_cast<std::uint32_t>(n)}, true, static_cast<std::uint32_t>(hosts),
              ca_ports);
}

Result<Topology> hypercube(const Spec& spec) {
  SUBNETD_TRY(spec.allow_only({"dim", "hosts", "ca_ports"}));
  std::uint64_t dim = 0, hosts = 0;
  SUBNETD_TRY_ASSIGN(dim, spec.number("dim", 1, 16));
  SUBNETD_TRY_ASSIGN(hosts, spec.number_or("hosts", 1, 0, kMaxNodePorts));
  std::uint32_t ca_ports = 1;
  SUBNETD_TRY_ASSIGN(ca_ports, read_ca_ports(spec));
  return grid(spec, std::vector<std::uint32_t>(dim, 2), false, static_cast<std::uint32_t>(hosts),
              ca_ports);
}

// The circulant offsets of one group's global slots: full rounds use every
// offset 1..g-1 once; the last partial round uses pairs (d, g-d) and, for even
// g, g/2 — so the global graph is regular. Also returns, per slot, the slot of
// the same link at the far group.
struct GlobalPlan {
  std::vector<std::uint32_t> offset;   // per used slot
  std::vector<std::uint32_t> partner;  // slot at group (i + offset) % g
};

GlobalPlan plan_global_links(std::uint32_t slots, std::uint32_t g) {
  GlobalPlan plan;
  if (g < 2) return plan;
  const std::uint32_t peers = g - 1;
  const std::uint32_t rounds = slots / peers;
  const std::uint32_t rest = slots % peers;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    for (std::uint32_t d = 1; d <= peers; ++d) {
      plan.offset.push_back(d);
      plan.partner.push_back(r * peers + (g - d) - 1);
    }
  }
  const auto base = static_cast<std::uint32_t>(plan.offset.size());
  for (std::uint32_t d = 1; 2 * d <= rest; ++d) {  // 2d <= rest < g-1, so d < g-d
    const auto at = static_cast<std::uint32_t>(plan.offset.size());
    plan.offset.push_back(d);
    plan.partner.push_back(at + 1);
    plan.offset.push_back(g - d);
    plan.partner.push_back(at);
  }
  if ((plan.offset.size() - base) < rest && g % 2 == 0) {
    const auto at = static_cast<std::uint32_t>(plan.offset.size());
    plan.offset.push_back(g / 2);
    plan.partner.push_back(at);
  }
  return plan;
}

Result<Topology> dragonfly(const Spec& spec) {
  SUBNETD_TRY(spec.allow_only({"a", "p", "h", "g", "ca_ports"}));
  std::uint64_t a = 0, p = 0, h = 0, g = 0;
  SUBNETD_TRY_ASSIGN(a, spec.number("a", 1, kMaxNodePorts));
  SUBNETD_TRY_ASSIGN(p, spec.number("p", 0, kMaxNodePorts));
  SUBNETD_TRY_ASSIGN(h, spec.number("h", 0, kMaxNodePorts));
  SUBNETD_TRY_ASSIGN(g, spec.number("g", 1, kMaxGeneratedNodes));
  if (g > a * h + 1) {
    return spec.error(fmt::format("g must be at most a*h+1 = {}, got {}", a * h + 1, g));
  }
  SUBNETD_TRY(check_ports(spec, "each switch (p + a-1 + h)", p + a - 1 + h));
  std::uint32_t ca_ports = 1;
  SUBNETD_TRY_ASSIGN(ca_ports, read_ca_ports(spec));
  const std::uint64_t n = a * g;
  SUBNETD_TRY(check_size(spec, n + n * p));
  const std::vector<std::uint32_t> counts(n, static_cast<std::uint32_t>(p));
  SUBNETD_TRY(check_host_pairs(spec, counts, ca_ports));
  if (spec.dry_run) return Topology{};

  const auto ports = static_cast<unsigned>(p + a - 1 + h);
  const std::uint64_t cas = num_cas(counts, ca_ports);
  FabricBuilder b(n + cas, n * (ports + 1) + cas * (ca_ports + 1), 4);
  std::vector<NodeId> sw;
  sw.reserve(n);
  for (std::uint64_t grp = 0; grp < g; ++grp) {
    for (std::uint64_t s = 0; s < a; ++s) {
      sw.push_back(b.add_switch(fmt::format("sw-g{}-{}", grp, s), ports));
    }
  }
  const auto local_port = [&](std::uint64_t from, std::uint64_t to) {
    return static_cast<unsigned>(p + 1 + (to < from ? to : to - 1));
  };
  for (std::uint64_t grp = 0; grp < g; ++grp) {
    for (std::uint64_t s = 0; s < a; ++s) {
      for (std::uint64_t t = s + 1; t < a; ++t) {
        SUBNETD_TRY(b.link(sw[grp * a + s], local_port(s, t), sw[grp * a + t], local_port(t, s)));
      }
    }
  }
  const GlobalPlan plan =
      plan_global_links(static_cast<std::uint32_t>(a * h), static_cast<std::uint32_t>(g));
  const auto slot_end = [&](std::uint64_t grp, std::uint32_t slot) {
    return std::pair{sw[grp * a + slot / h], static_cast<unsigned>(p + a + slot % h)};
  };
  for (std::uint64_t grp = 0; grp < g; ++grp) {
    for (std::uint32_t slot = 0; slot < plan.offset.size(); ++slot) {
      const std::uint64_t far = (grp + plan.offset[slot]) % g;
      const std::uint32_t far_slot = plan.partner[slot];
      // Each link is seen from both groups; create it from the lower (group, slot).
      if (std::pair{far, far_slot} < std::pair{grp, slot}) continue;
      const auto [x, xp] = slot_end(grp, slot);
      const auto [y, yp] = slot_end(far, far_slot);
      SUBNETD_TRY(b.link(x, xp, y, yp));
    }
  }
  std::vector<HostGroup> groups(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    groups[i] = {sw[i], static_cast<std::uint32_t>(p), fmt::format("h-g{}-{}", i / a, i % a)};
  }
  SUBNETD_TRY(attach_hosts(b, groups, ca_ports));
  return b.take();
}

Result<Topology> random_fabric(const Spec& spec) {
  SUBNETD_TRY(spec.allow_only({"switches", "degree", "hosts", "seed", "ca_ports"}));
  std::uint64_t n = 0, degree = 0, hosts = 0, seed = 0;
  SUBNETD_TRY_ASSIGN(n, spec.number("switches", 2, kMaxGeneratedNodes));
  SUBNETD_TRY_ASSIGN(degree, spec.number("degree", 1, kMaxNodePorts));
  if (degree >= n) {
    return spec.error(fmt::format("degree must be less than switches ({}), got {}", n, degree));
  }
  if (n > 2 && degree < 2) {
    return spec.error(fmt::format("degree must be at least 2 to connect {} switches, got 1", n));
  }
  SUBNETD_TRY_ASSIGN(hosts, spec.number_or("hosts", 1, 0, kMaxNodePorts));
  SUBNETD_TRY_ASSIGN(seed, spec.number_or("seed", 1, 0, UINT64_MAX));
  SUBNETD_TRY(check_ports(spec, "each switch (hosts + degree)", hosts + degree));
  SUBNETD_TRY(check_size(spec, n + n * hosts));
  std::uint32_t ca_ports = 1;
  SUBNETD_TRY_ASSIGN(ca_ports, read_ca_ports(spec));
  const std::vector<std::uint32_t> counts(n, static_cast<std::uint32_t>(hosts));
  SUBNETD_TRY(check_host_pairs(spec, counts, ca_ports));

  if (spec.dry_run) return Topology{};
  SwitchGraph graph;
  SUBNETD_TRY_ASSIGN(graph, jellyfish_graph(static_cast<std::uint32_t>(n),
                                            static_cast<std::uint32_t>(degree), seed));
  const auto ports = static_cast<unsigned>(hosts + degree);
  const std::uint64_t cas = num_cas(counts, ca_ports);
  FabricBuilder b(n + cas, n * (ports + 1) + cas * (ca_ports + 1), 4);
  std::vector<NodeId> sw;
  sw.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) sw.push_back(b.add_switch(fmt::format("rsw{}", i), ports));
  // Edges come sorted by (u, v): each switch's links take its next free port.
  std::vector<unsigned> next_port(n, static_cast<unsigned>(hosts) + 1);
  for (const auto& [u, v] : graph.edges) {
    SUBNETD_TRY(b.link(sw[u], next_port[u]++, sw[v], next_port[v]++));
  }
  std::vector<HostGroup> groups(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    groups[i] = {sw[i], static_cast<std::uint32_t>(hosts), fmt::format("h-r{}", i)};
  }
  SUBNETD_TRY(attach_hosts(b, groups, ca_ports));
  return b.take();
}

}  // namespace

namespace {

Result<routing::Topology> run(const Spec& spec) {
  const std::string& f = spec.family();
  if (f == "fat-tree") return fat_tree(spec);
  if (f == "pgft") return pgft(spec);
  if (f == "torus") return torus_or_mesh(spec, true);
  if (f == "mesh") return torus_or_mesh(spec, false);
  if (f == "ring") return ring(spec);
  if (f == "hypercube") return hypercube(spec);
  if (f == "dragonfly") return dragonfly(spec);
  if (f == "random") return random_fabric(spec);
  return Error{Errc::kInvalidArgument,
               fmt::format("unknown topology family '{}' (expected fat-tree, pgft, torus, mesh, "
                           "ring, hypercube, dragonfly or random)",
                           printable(f))};
}

}  // namespace

Result<routing::Topology> generate(std::string_view text) {
  Spec spec;
  SUBNETD_TRY_ASSIGN(spec, Spec::parse(text));
  return run(spec);
}

bool looks_like_spec(std::string_view spec_or_path) {
  const std::size_t colon = spec_or_path.find(':');
  const std::size_t slash = spec_or_path.find('/');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && slash < colon)) {
    return false;
  }
  std::error_code ec;
  return !std::filesystem::exists(std::filesystem::path(spec_or_path), ec);
}

Result<void> check_spec(std::string_view text) {
  Spec spec;
  SUBNETD_TRY_ASSIGN(spec, Spec::parse(text));
  spec.dry_run = true;
  SUBNETD_TRY(run(spec));
  return {};
}

}  // namespace subnetd::discovery::topo

#include "discovery/topo/netfile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <unordered_map>

#include "discovery/topo/netfile_format.hpp"
#include "routing/text.hpp"

namespace subnetd::discovery::topo {
namespace {

using routing::Node;
using routing::NodeType;
using routing::PortState;
using routing::Topology;

using namespace netfile_format;

constexpr unsigned kMaxPorts = 254;  // 255 is reserved on the wire
constexpr int kMaxIncludeDepth = 8;  // ibsim nests at most 9 files
constexpr std::uint32_t kNoDecl = UINT32_MAX;
constexpr std::uint8_t kDefaultWidthEnabled = kWidth4x;   // ibsim DEFAULT_LINKWIDTH
constexpr std::uint8_t kDefaultSpeedEnabled = kSpeedSdr;  // ibsim DEFAULT_LINKSPEED

std::uint8_t best_width(unsigned common) {
  for (std::uint8_t w : {kWidth12x, kWidth8x, kWidth4x, kWidth2x, kWidth1x}) {
    if (common & w) return w;
  }
  return 0;
}

std::uint8_t best_speed(unsigned common) {
  for (std::uint8_t s : {kSpeedQdr, kSpeedDdr, kSpeedSdr}) {
    if (common & s) return s;
  }
  return 0;
}

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t") == std::string_view::npos;
}

// A cursor over one line. Numbers follow strtoull(..., 0): 0x.. hex, a
// leading 0 octal, otherwise decimal.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool done() const { return pos_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[pos_]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip_ws() {
    while (!done() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  std::string_view rest() const { return s_.substr(pos_); }

  std::string_view word() {
    const std::size_t start = pos_;
    while (!done() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }

  std::optional<std::uint64_t> number() {
    int base = 10;
    std::size_t start = pos_;
    if (rest().size() >= 3 && s_[pos_] == '0' && (s_[pos_ + 1] == 'x' || s_[pos_ + 1] == 'X') &&
        std::isxdigit(static_cast<unsigned char>(s_[pos_ + 2]))) {
      base = 16;
      start += 2;
    } else if (peek() == '0') {
      base = 8;
    }
    return digits(start, base);
  }

  // Bare hex digits (no 0x), as ibnetdiscover prints GUIDs in parentheses.
  std::optional<std::uint64_t> hex() { return digits(pos_, 16); }

  // "(hex)" as in [1](2c90300001235).
  std::optional<std::uint64_t> hex_in_parens() {
    if (!eat('(')) return std::nullopt;
    std::optional<std::uint64_t> v = hex();
    if (!v || !eat(')')) return std::nullopt;
    return v;
  }

  std::optional<std::string_view> quoted() {
    if (!eat('"')) return std::nullopt;
    const std::size_t end = s_.find('"', pos_);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view v = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return v;
  }

 private:
  std::optional<std::uint64_t> digits(std::size_t start, int base) {
    std::uint64_t v = 0;
    const char* first = s_.data() + start;
    const auto [end, ec] = std::from_chars(first, s_.data() + s_.size(), v, base);
    if (ec != std::errc{} || end == first) return std::nullopt;
    pos_ = static_cast<std::size_t>(end - s_.data());
    return v;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// The first "<key> N" in `text` that is not inside double quotes.
std::optional<std::uint64_t> keyed_number_outside_quotes(std::string_view text,
                                                         std::string_view key) {
  bool in_quotes = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') in_quotes = !in_quotes;
    if (in_quotes || text.compare(i, key.size(), key) != 0) continue;
    if (i > 0 && text[i - 1] != ' ' && text[i - 1] != '\t') continue;
    Cursor c(text.substr(i + key.size()));
    if (!c.eat(' ')) continue;
    c.skip_ws();
    if (std::optional<std::uint64_t> v = c.number()) return v;
  }
  return std::nullopt;
}

// ibnetdiscover's link annotation "lid L <w>x<SPEED>" after the last quote of
// a port-line comment; returns the enabled (width, speed) ibsim derives from it.
std::optional<std::pair<std::uint8_t, std::uint8_t>> link_annotation(std::string_view comment) {
  const std::size_t last_quote = comment.rfind('"');
  std::string_view tail =
      last_quote == std::string_view::npos ? comment : comment.substr(last_quote + 1);
  const std::size_t at = tail.find("lid ");
  if (at == std::string_view::npos) return std::nullopt;
  Cursor c(tail.substr(at + 4));
  c.skip_ws();
  if (!c.number()) return std::nullopt;
  c.skip_ws();
  const std::optional<std::uint64_t> lanes = c.number();
  if (!lanes || !c.eat('x')) return std::nullopt;
  const std::string_view speed = c.word();
  std::uint8_t width = 0;
  switch (*lanes) {
    case 1:
      width = kWidth1x;
      break;
    case 2:
      width = kWidth2x;
      break;
    case 4:
      width = kWidth1x | kWidth4x;
      break;
    case 8:
      width = kWidth8x;
      break;
    case 12:
      width = kWidth1x | kWidth4x | kWidth12x;
      break;
    default:
      return std::nullopt;
  }
  std::uint8_t speeds = 0;
  if (speed == "SDR") {
    speeds = kSpeedSdr;
  } else if (speed == "DDR") {
    speeds = kSpeedSdr | kSpeedDdr;
  } else if (speed == "QDR" || speed == "FDR" || speed == "FDR10" || speed == "EDR" ||
             speed == "HDR" || speed == "NDR") {
    // Extended speeds are not modelled; ibsim too reports them as QDR in
    // LinkSpeedActive and puts the rest in LinkSpeedExtActive.
    speeds = kSpeedSdr | kSpeedDdr | kSpeedQdr;
  } else {
    return std::nullopt;
  }
  return std::pair{width, speeds};
}

// Reads a whole file (stdio: GCC 12 flags istreambuf_iterator under -Wnull-dereference).
Result<std::string> read_whole_file(const std::string& path, std::string_view what) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    return Error{Errc::kIo,
                 fmt::format("cannot open {} {}: {}", what, printable(path), std::strerror(errno))};
  }
  std::string text;
  std::array<char, 1 << 16> buf;
  for (;;) {
    const std::size_t got = std::fread(buf.data(), 1, buf.size(), f.get());
    text.append(buf.data(), got);
    if (got < buf.size()) break;
  }
  if (std::ferror(f.get())) {
    return Error{Errc::kIo, fmt::format("cannot read {} {}", what, printable(path))};
  }
  return text;
}

struct Location {
  std::uint32_t file = 0;
  std::uint32_t line = 0;
};

// One "[p] "remote"[q]" line: half of a link, as declared.
struct PortDecl {
  NodeId node;
  PortNum port = 0;
  std::string_view remote_id;
  PortNum remote_port = 0;
  Location loc;
};

struct NodeEntry {
  NodeId node;
  Location loc;
};

// Builds a Topology from one or more net-file texts. Owned by one
// read_netfile/parse_netfile call. Node ids are views into the texts, which
// live in texts_ (or the caller's buffer) until finish().
class NetfileParser {
 public:
  explicit NetfileParser(bool allow_include) : allow_include_(allow_include) {}

  Result<void> parse(std::string_view text, std::string name, const std::filesystem::path* dir,
                     int depth);
  Result<Topology> finish();

 private:
  Error fail(Errc code, Location loc, std::string_view what) const {
    return Error{code, fmt::format("{}: {}", where(loc), what)};
  }
  std::string where(Location loc) const {
    return fmt::format("{}:{}", printable(files_[loc.file]), loc.line);
  }

  Result<void> top_level(std::string_view line, Location loc, const std::filesystem::path* dir,
                         int depth, NodeId* current);
  Result<void> header(NodeType type, Cursor& c, Location loc, NodeId* current);
  Result<void> port_line(std::string_view line, NodeId node, Location loc);
  Result<void> guid_base(NodeType type, Cursor& c, Location loc);
  Result<std::uint64_t> assigned_number(Cursor& c, Location loc, std::string_view key);
  Result<void> include(Cursor& c, Location loc, const std::filesystem::path* dir, int depth);

  static std::size_t type_slot(NodeType t) { return static_cast<std::size_t>(t); }

  bool allow_include_;
  std::deque<std::string> texts_;   // included files' contents (ids point into them)
  std::vector<std::string> files_;  // names for error locations
  Topology topo_;
  std::unordered_map<std::string_view, NodeEntry> ids_;
  std::vector<std::string_view> id_of_;  // by NodeId
  std::unordered_map<std::uint64_t, NodeEntry> guids_;
  std::vector<PortDecl> decls_;
  std::vector<std::uint32_t> decl_of_port_;  // by flat port index
  std::vector<std::uint8_t> width_enabled_;  // by flat port index
  std::vector<std::uint8_t> speed_enabled_;  // by flat port index
  // ibsim's GUID bases, indexed by NodeType (CA 1, switch 2, router 3).
  std::array<std::uint64_t, 4> guid_abs_{0, 0x100000, 0x200000, 0x300000};
  std::array<std::uint64_t, 4> guid_next_{0, 0x100000, 0x200000, 0x300000};
  std::optional<std::uint64_t> next_node_guid_;
  std::optional<std::uint64_t> next_system_guid_;
  std::uint8_t width_default_ = kDefaultWidthEnabled;
  std::uint8_t speed_default_ = kDefaultSpeedEnabled;
};

Result<void> NetfileParser::parse(std::string_view text, std::string name,
                                  const std::filesystem::path* dir, int depth) {
  const auto file = static_cast<std::uint32_t>(files_.size());
  files_.push_back(std::move(name));
  NodeId current = kNoNode;  // the node whose record is open
  std::uint32_t lineno = 0;
  while (!text.empty() || lineno == 0) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const Location loc{file, lineno};
    if (current.valid()) {
      // Inside a record, as ibsim reads it: comments are skipped, '[' lines
      // are ports, and the first other line ends the record.
      if (!line.empty() && line[0] == '#') continue;
      if (!line.empty() && line[0] == '[') {
        SUBNETD_TRY(port_line(line, current, loc));
        continue;
      }
      if (!line.empty() && line[0] == '@') {
        return fail(Errc::kUnsupported, loc, "port aliases ('@') are not supported");
      }
      if (is_blank(line)) {
        current = kNoNode;
        continue;
      }
      return fail(Errc::kParse, loc,
                  fmt::format("expected a port line like [1] \"id\"[2] or a blank line ending "
                              "the record of \"{}\" (ibsim would swallow this line)",
                              printable(id_of_[current.value])));
    }
    SUBNETD_TRY(top_level(line, loc, dir, depth, &current));
    if (nl == std::string_view::npos) break;
  }
  return {};
}

Result<void> NetfileParser::top_level(std::string_view line, Location loc,
                                      const std::filesystem::path* dir, int depth,
                                      NodeId* current) {
  if (is_blank(line) || line[0] == '#') return {};
  if (line[0] == '[') {
    return fail(Errc::kParse, loc,
                "port line outside a node record (no Switch/Hca header above it, or a blank "
                "line ended the record)");
  }
  if (line[0] == '@') return fail(Errc::kUnsupported, loc, "port aliases ('@') are not supported");
  Cursor c(line);
  const std::string_view kw = c.word();
  if (kw == "Switch") return header(NodeType::kSwitch, c, loc, current);
  if (kw == "Hca" || kw == "Ca") return header(NodeType::kCa, c, loc, current);
  if (kw == "Rt") return header(NodeType::kRouter, c, loc, current);
  if (kw == "switchguid") return guid_base(NodeType::kSwitch, c, loc);
  if (kw == "caguid" || kw == "hcaguids") return guid_base(NodeType::kCa, c, loc);
  if (kw == "rtguid") return guid_base(NodeType::kRouter, c, loc);
  if (kw == "nodeguid" || kw == "sysimgguid") {
    std::uint64_t g = 0;
    SUBNETD_TRY_ASSIGN(g, assigned_number(c, loc, kw));
    if (g == 0) return fail(Errc::kParse, loc, fmt::format("{} must not be 0", kw));
    (kw == "nodeguid" ? next_node_guid_ : next_system_guid_) = g;
    return {};
  }
  if (kw == "vendid" || kw == "devid") {
    // Identify the hardware model; the Topology does not keep them.
    std::uint64_t v = 0;
    SUBNETD_TRY_ASSIGN(v, assigned_number(c, loc, kw));
    if (v > (kw == "vendid" ? 0xFFFFFFu : 0xFFFFu)) {
      return fail(Errc::kParse, loc, fmt::format("{} {:#x} is out of range", kw, v));
    }
    return {};
  }
  if (kw == "width") {
    std::uint64_t v = 0;
    SUBNETD_TRY_ASSIGN(v, assigned_number(c, loc, kw));
    if (v < 1 || v > 31) return fail(Errc::kParse, loc, "width must be a LinkWidth mask 1..31");
    width_default_ = static_cast<std::uint8_t>(v);
    return {};
  }
  if (kw == "speed") {
    std::uint64_t v = 0;
    SUBNETD_TRY_ASSIGN(v, assigned_number(c, loc, kw));
    if (v < 1 || v > 7) return fail(Errc::kParse, loc, "speed must be a LinkSpeed mask 1..7");
    speed_default_ = static_cast<std::uint8_t>(v);
    return {};
  }
  if (kw == "extspeed") {
    std::uint64_t v = 0;
    SUBNETD_TRY_ASSIGN(v, assigned_number(c, loc, kw));
    if (v > 15) return fail(Errc::kParse, loc, "extspeed must be a LinkSpeedExt mask 0..15");
    return {};  // extended speeds are not modelled
  }
  if (kw == "include") return include(c, loc, dir, depth);
  if (kw == "pdebug") return {};  // ibsim's parser tracing switch
  if (kw == "do") {
    return fail(Errc::kUnsupported, loc,
                "'do' runs an ibsim console command while parsing; not part of a topology");
  }
  if (kw == "module") {
    return fail(Errc::kUnsupported, loc, "'module' node-id prefixes are not supported");
  }
  return fail(Errc::kParse, loc, fmt::format("unrecognised line '{}'", printable(line)));
}

Result<std::uint64_t> NetfileParser::assigned_number(Cursor& c, Location loc,
                                                     std::string_view key) {
  c.skip_ws();
  if (!c.eat('=')) return fail(Errc::kParse, loc, fmt::format("expected '=' after {}", key));
  c.skip_ws();
  const std::optional<std::uint64_t> v = c.number();
  if (!v) return fail(Errc::kParse, loc, fmt::format("{} needs a number", key));
  c.hex_in_parens();  // ibnetdiscover repeats the GUID in parentheses
  c.skip_ws();
  if (!c.done() && c.peek() != '#') {
    return fail(Errc::kParse, loc,
                fmt::format("unexpected text after {}: '{}'", key, printable(c.rest())));
  }
  return *v;
}

Result<void> NetfileParser::guid_base(NodeType type, Cursor& c, Location loc) {
  c.skip_ws();
  const bool relative = c.peek() == '+';
  std::uint64_t v = 0;
  if (relative) {
    c.eat('+');
    c.skip_ws();
    const std::optional<std::uint64_t> n = c.number();
    if (!n) return fail(Errc::kParse, loc, "expected a number after '+'");
    v = *n;
    c.skip_ws();
    if (!c.done() && c.peek() != '#') {
      return fail(Errc::kParse, loc, fmt::format("unexpected text: '{}'", printable(c.rest())));
    }
  } else {
    SUBNETD_TRY_ASSIGN(v, assigned_number(c, loc, "a GUID line"));
  }
  const std::size_t t = type_slot(type);
  if (relative) {
    guid_next_[t] = guid_abs_[t] + v;
  } else {
    guid_abs_[t] = v;
    guid_next_[t] = v;
  }
  return {};
}

Result<void> NetfileParser::include(Cursor& c, Location loc, const std::filesystem::path* dir,
                                    int depth) {
  if (!allow_include_ || dir == nullptr) {
    return fail(Errc::kUnsupported, loc, "include needs a file on disk (use read_netfile)");
  }
  c.skip_ws();
  const std::optional<std::string_view> name = c.quoted();
  if (!name || name->empty()) return fail(Errc::kParse, loc, "expected include \"file\"");
  if (depth >= kMaxIncludeDepth) {
    return fail(Errc::kParse, loc,
                fmt::format("includes nested deeper than {} files", kMaxIncludeDepth));
  }
  std::filesystem::path path(*name);
  if (path.is_relative()) path = *dir / path;
  Result<std::string> text = read_whole_file(path.string(), "included file");
  if (!text.ok()) return fail(Errc::kIo, loc, text.error().message);
  texts_.push_back(std::move(text).value());
  const std::filesystem::path sub_dir = path.parent_path();
  return parse(texts_.back(), path.string(), &sub_dir, depth + 1);
}

Result<void> NetfileParser::header(NodeType type, Cursor& c, Location loc, NodeId* current) {
  c.skip_ws();
  const std::optional<std::uint64_t> ports = c.number();
  if (!ports) return fail(Errc::kParse, loc, "expected the number of ports after the node type");
  if (*ports < 1 || *ports > kMaxPorts) {
    return fail(Errc::kParse, loc,
                fmt::format("a node has 1 to {} ports, got {}", kMaxPorts, *ports));
  }
  c.skip_ws();
  const std::optional<std::string_view> id = c.quoted();
  if (!id) return fail(Errc::kParse, loc, "expected a quoted node id like \"sw1\"");
  if (id->empty() || id->size() > kMaxIdLength || id->find_first_of("#@") != std::string::npos) {
    return fail(Errc::kParse, loc,
                fmt::format("bad node id \"{}\": 1 to {} characters, no '#' or '@'", printable(*id),
                            kMaxIdLength));
  }
  c.skip_ws();
  std::string_view comment;
  if (!c.done()) {
    if (!c.eat('#')) {
      return fail(Errc::kParse, loc,
                  fmt::format("unexpected text after the node id: '{}'", printable(c.rest())));
    }
    comment = c.rest();
  }
  if (auto it = ids_.find(*id); it != ids_.end()) {
    return fail(Errc::kConflict, loc,
                fmt::format("duplicate node id \"{}\" (first defined at {})", printable(*id),
                            where(it->second.loc)));
  }

  // The description as ibsim takes it from the header comment: a quoted
  // string, or the text up to the "enhanced port"/"base port"/"lid"/"lmc" tail.
  std::string_view desc;
  std::string_view tail = comment;
  {
    Cursor d(comment);
    d.skip_ws();
    if (d.peek() == '"') {
      const std::optional<std::string_view> q = d.quoted();
      if (!q) return fail(Errc::kParse, loc, "unterminated quoted description");
      desc = *q;
      tail = d.rest();
    } else {
      desc = d.rest();
      for (std::string_view stop : {" enhanced port ", " base port ", " lid ", " lmc "}) {
        const std::size_t at = desc.find(stop);
        if (at != std::string_view::npos) {
          tail = desc.substr(at);
          desc = desc.substr(0, at);
          break;
        }
      }
      while (!desc.empty() && (desc.back() == ' ' || desc.back() == '\t')) desc.remove_suffix(1);
    }
  }
  if (desc.size() > kMaxDescLength) {
    return fail(Errc::kParse, loc,
                fmt::format("description of \"{}\" has {} bytes; NodeDescription holds {}",
                            printable(*id), desc.size(), kMaxDescLength));
  }

  const std::size_t t = type_slot(type);
  std::uint64_t guid = 0;
  if (next_node_guid_) {
    guid = *next_node_guid_;
  } else {
    guid = guid_next_[t];
    guid_next_[t] += type == NodeType::kSwitch ? 1 : *ports + 1;
  }
  if (guid == 0) {
    return fail(Errc::kParse, loc, fmt::format("\"{}\" would get GUID 0", printable(*id)));
  }
  if (auto it = guids_.find(guid); it != guids_.end()) {
    return fail(
        Errc::kConflict, loc,
        fmt::format("GUID {:#018x} of \"{}\" is already used by \"{}\" ({})", guid, printable(*id),
                    printable(id_of_[it->second.node.value]), where(it->second.loc)));
  }

  const NodeId n = topo_.add_node(type, Guid{guid}, static_cast<std::uint8_t>(*ports),
                                  std::string(desc.empty() ? *id : desc));
  if (next_system_guid_) topo_.mutable_node(n).system_guid = Guid{*next_system_guid_};
  next_node_guid_.reset();
  next_system_guid_.reset();
  ids_.emplace(*id, NodeEntry{n, loc});
  guids_.emplace(guid, NodeEntry{n, loc});
  id_of_.push_back(*id);
  decl_of_port_.resize(topo_.num_ports_total(), kNoDecl);
  width_enabled_.resize(topo_.num_ports_total(), width_default_);
  speed_enabled_.resize(topo_.num_ports_total(), speed_default_);
  if (type == NodeType::kSwitch) {
    routing::Port& p0 = topo_.mutable_port(n, 0);
    if (auto lid = keyed_number_outside_quotes(tail, "lid"))
      p0.lid = Lid{static_cast<std::uint32_t>(*lid)};
    if (auto lmc = keyed_number_outside_quotes(tail, "lmc"))
      p0.lmc = static_cast<std::uint8_t>(*lmc);
  }
  *current = n;
  return {};
}

Result<void> NetfileParser::port_line(std::string_view line, NodeId node, Location loc) {
  const Node& nd = topo_.node(node);
  const auto id = [&] { return printable(id_of_[node.value]); };  // for messages
  Cursor c(line);
  c.eat('[');
  const std::optional<std::uint64_t> port = c.number();
  if (!port || !c.eat(']')) return fail(Errc::kParse, loc, "expected a port number like [3]");
  if (*port == 0) {
    return fail(Errc::kParse, loc, "port 0 (the switch management port) cannot be linked");
  }
  if (*port > nd.num_ports) {
    return fail(Errc::kOutOfRange, loc,
                fmt::format("port {} is beyond \"{}\"'s {} ports", *port, id(), nd.num_ports));
  }
  const auto pn = static_cast<PortNum>(*port);
  if (c.peek() == '(') {
    const std::optional<std::uint64_t> pg = c.hex_in_parens();
    if (!pg || *pg == 0) return fail(Errc::kParse, loc, "bad port GUID in parentheses");
    // Switch ports all carry the node's GUID; CA and router ports have their own.
    if (nd.type != NodeType::kSwitch) topo_.mutable_port(node, pn).guid = Guid{*pg};
  }
  c.skip_ws();
  const std::optional<std::string_view> remote = c.quoted();
  if (!remote || remote->empty()) {
    return fail(Errc::kParse, loc, "expected the quoted id of the remote node");
  }
  std::uint64_t remote_port = 1;  // ibsim's default when "[q]" is left out
  if (c.eat('[')) {
    const std::optional<std::uint64_t> q = c.number();
    if (!q || !c.eat(']')) return fail(Errc::kParse, loc, "expected a remote port like [3]");
    if (*q < 1 || *q > kMaxPorts) {
      return fail(Errc::kParse, loc,
                  fmt::format("remote port must be 1..{}, got {}", kMaxPorts, *q));
    }
    remote_port = *q;
    if (c.peek() == '(' && !c.hex_in_parens()) {
      return fail(Errc::kParse, loc, "bad remote port GUID in parentheses");
    }
  }
  const std::uint32_t idx = topo_.port_index(node, pn);
  for (;;) {
    c.skip_ws();
    if (c.done() || c.peek() == '#') break;
    const std::string_view here = c.rest();
    const std::string_view opt = c.word();
    if (opt.size() != 1 || !c.eat('=')) {
      return fail(Errc::kParse, loc, fmt::format("unexpected text '{}'", printable(here)));
    }
    const std::optional<std::uint64_t> v = c.number();
    if (!v) return fail(Errc::kParse, loc, fmt::format("option {}= needs a number", opt));
    if (opt == "w") {
      if (*v < 1 || *v > 31) return fail(Errc::kParse, loc, "w= must be a LinkWidth mask 1..31");
      width_enabled_[idx] = static_cast<std::uint8_t>(*v);
    } else if (opt == "s") {
      if (*v < 1 || *v > 7) return fail(Errc::kParse, loc, "s= must be a LinkSpeed mask 1..7");
      speed_enabled_[idx] = static_cast<std::uint8_t>(*v);
    } else if (opt == "e") {
      if (*v > 15) return fail(Errc::kParse, loc, "e= must be a LinkSpeedExt mask 0..15");
    } else {
      return fail(Errc::kParse, loc, fmt::format("unknown port option {}=", opt));
    }
  }
  if (c.eat('#')) {
    const std::string_view comment = c.rest();
    if (auto modes = link_annotation(comment)) {
      width_enabled_[idx] = modes->first;
      speed_enabled_[idx] = modes->second;
    }
    if (nd.type != NodeType::kSwitch) {
      routing::Port& p = topo_.mutable_port(node, pn);
      if (auto lid = keyed_number_outside_quotes(comment, "lid")) {
        p.lid = Lid{static_cast<std::uint32_t>(*lid)};
      }
      if (auto lmc = keyed_number_outside_quotes(comment, "lmc")) {
        p.lmc = static_cast<std::uint8_t>(*lmc);
      }
    }
  }
  if (decl_of_port_[idx] != kNoDecl) {
    return fail(Errc::kConflict, loc,
                fmt::format("port {} of \"{}\" is listed twice (first at {})", pn, id(),
                            where(decls_[decl_of_port_[idx]].loc)));
  }
  decl_of_port_[idx] = static_cast<std::uint32_t>(decls_.size());
  decls_.push_back(PortDecl{node, pn, *remote, static_cast<PortNum>(remote_port), loc});
  return {};
}

Result<Topology> NetfileParser::finish() {
  // Which declaration created the link on a port (for "claimed twice" errors).
  std::vector<std::uint32_t> linked_by(topo_.num_ports_total(), kNoDecl);
  for (std::uint32_t i = 0; i < decls_.size(); ++i) {
    const PortDecl& d = decls_[i];
    if (topo_.port(d.node, d.port).connected()) continue;  // the other side made it
    // For messages only (escaped, cut): built when needed, not per port.
    const auto id = [&] { return printable(id_of_[d.node.value]); };
    const auto remote_id = [&] { return printable(d.remote_id); };
    const auto it = ids_.find(d.remote_id);
    if (it == ids_.end()) {
      return fail(
          Errc::kNotFound, d.loc,
          fmt::format("\"{}\"[{}] links to unknown node \"{}\"", id(), d.port, remote_id()));
    }
    const NodeId r = it->second.node;
    const Node& rn = topo_.node(r);
    if (d.remote_port > rn.num_ports) {
      return fail(Errc::kOutOfRange, d.loc,
                  fmt::format("\"{}\"[{}] links to \"{}\"[{}], but \"{}\" has {} ports", id(),
                              d.port, remote_id(), d.remote_port, remote_id(), rn.num_ports));
    }
    if (r == d.node && d.remote_port == d.port) {
      return fail(Errc::kConflict, d.loc,
                  fmt::format("\"{}\"[{}] is linked to itself", id(), d.port));
    }
    const std::uint32_t ridx = topo_.port_index(r, d.remote_port);
    const std::uint32_t back = decl_of_port_[ridx];
    if (back != kNoDecl) {
      const PortDecl& b = decls_[back];
      if (b.remote_id != id_of_[d.node.value] || b.remote_port != d.port) {
        return fail(
            Errc::kConflict, d.loc,
            fmt::format("inconsistent link: \"{}\"[{}] says \"{}\"[{}], but \"{}\"[{}] "
                        "says \"{}\"[{}] ({})",
                        id(), d.port, remote_id(), d.remote_port, remote_id(), d.remote_port,
                        printable(b.remote_id), b.remote_port, where(b.loc)));
      }
    } else if (topo_.port(r, d.remote_port).connected()) {
      const PortDecl& other = decls_[linked_by[ridx]];
      return fail(Errc::kConflict, d.loc,
                  fmt::format("\"{}\"[{}] is claimed by both \"{}\"[{}] and \"{}\"[{}] ({})",
                              remote_id(), d.remote_port, id(), d.port,
                              printable(id_of_[other.node.value]), other.port, where(other.loc)));
    }
    const std::uint32_t lidx = topo_.port_index(d.node, d.port);
    const std::uint8_t width = best_width(width_enabled_[lidx] & width_enabled_[ridx]);
    const std::uint8_t speed = best_speed(speed_enabled_[lidx] & speed_enabled_[ridx]);
    if (width == 0 || speed == 0) {
      return fail(
          Errc::kConflict, d.loc,
          fmt::format("\"{}\"[{}] and \"{}\"[{}] enable no common link {} "
                      "({:#x} vs {:#x})",
                      id(), d.port, remote_id(), d.remote_port, width == 0 ? "width" : "speed",
                      width == 0 ? width_enabled_[lidx] : speed_enabled_[lidx],
                      width == 0 ? width_enabled_[ridx] : speed_enabled_[ridx]));
    }
    const PortRef a{d.node, d.port};
    const PortRef b{r, d.remote_port};
    if (Result<void> res = topo_.connect(a, b); !res.ok()) {
      return fail(res.error().code, d.loc, res.error().message);
    }
    linked_by[lidx] = i;
    linked_by[ridx] = i;
    for (const PortRef& end : {a, b}) {
      routing::Port& p = topo_.mutable_port(end.node, end.port);
      p.state = PortState::kInit;
      p.width_active = width;
      p.speed_active = speed;
    }
  }
  return std::move(topo_);
}

}  // namespace

Result<routing::Topology> parse_netfile(std::string_view text, std::string_view name) {
  NetfileParser parser(/*allow_include=*/false);
  SUBNETD_TRY(parser.parse(text, std::string(name), nullptr, 0));
  return parser.finish();
}

Result<routing::Topology> read_netfile(const std::string& path) {
  std::string text;
  SUBNETD_TRY_ASSIGN(text, read_whole_file(path, "net file"));
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  NetfileParser parser(/*allow_include=*/true);
  SUBNETD_TRY(parser.parse(text, path, &dir, 0));
  return parser.finish();
}

}  // namespace subnetd::discovery::topo

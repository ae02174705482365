#pragma once
// The YAML walker behind parse_config (daemon/config.hpp), shared by the
// files that parse a section each (config.cpp, config_partitions.cpp).
// Internal to daemon/config*.cpp.

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/config.hpp"
#include "routing/text.hpp"

namespace subnetd::daemon::config_detail {

struct Issue {
  int line;  // 0-based, -1 when unknown
  int column;
  Errc code;
  std::string text;
};

inline std::string_view describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

template <class E>
struct EnumName {
  std::string_view name;
  E value;
};

// Walks one YAML document into a Config, collecting every problem instead of
// stopping at the first, so an operator fixes a file in one pass.
class Parser {
 public:
  using Handler = std::function<void(const YAML::Node& value, const std::string& path)>;
  struct Key {
    std::string_view name;
    Handler handle;
  };

  explicit Parser(std::string_view file) : file_(printable(file)) {}

  // `path` and `msg` may carry text from the file (key names, values): they
  // are escaped here or by the caller with printable(), so a control byte
  // or a megabyte of text never reaches a terminal or the journal raw.
  void fail(const YAML::Mark& m, std::string_view path, std::string_view msg,
            Errc code = Errc::kInvalidArgument) {
    std::string where = m.is_null() ? fmt::format("{}", file_)
                                    : fmt::format("{}:{}:{}", file_, m.line + 1, m.column + 1);
    issues_.push_back(Issue{m.is_null() ? -1 : m.line, m.is_null() ? -1 : m.column, code,
                            fmt::format("{}: {}: {}", where, printable(path), msg)});
  }

  // A problem that belongs to no key (e.g. a second YAML document).
  void fail_at(int line, int column, std::string_view msg, Errc code = Errc::kInvalidArgument) {
    issues_.push_back(
        Issue{line, column, code, fmt::format("{}:{}:{}: {}", file_, line + 1, column + 1, msg)});
  }

  // Mark of a key seen in the file (for cross-key checks), or a null mark.
  YAML::Mark mark_of(const std::string& path) const {
    auto it = marks_.find(path);
    return it == marks_.end() ? YAML::Mark::null_mark() : it->second;
  }
  bool seen(const std::string& path) const { return marks_.count(path) != 0; }
  bool clean() const { return issues_.empty(); }

  // Dispatches each key of a mapping to its handler; unknown and duplicate
  // keys are errors at the key's position. A null value keeps the default.
  void mapping(const YAML::Node& node, const std::string& path, std::span<const Key> keys) {
    if (node.IsNull()) return;
    if (!node.IsMap()) {
      fail(node.Mark(), path.empty() ? "(top level)" : path,
           fmt::format("expected a mapping, got {}", describe(node)));
      return;
    }
    std::vector<std::string> seen_here;
    for (const auto& kv : node) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) {
        fail(key.Mark(), path.empty() ? "(top level)" : path,
             fmt::format("keys must be scalars, got {}", describe(key)));
        continue;
      }
      const std::string& name = key.Scalar();
      const std::string child = path.empty() ? name : path + "." + name;
      if (std::find(seen_here.begin(), seen_here.end(), name) != seen_here.end()) {
        fail(key.Mark(), child, "duplicate key");
        continue;
      }
      seen_here.push_back(name);
      auto it =
          std::find_if(keys.begin(), keys.end(), [&](const Key& k) { return k.name == name; });
      if (it == keys.end()) {
        std::string expected;
        for (const Key& k : keys) {
          if (!expected.empty()) expected += ", ";
          expected += k.name;
        }
        fail(key.Mark(), child, fmt::format("unknown key (expected one of: {})", expected));
        continue;
      }
      marks_.emplace(child, key.Mark());
      if (kv.second.IsNull()) continue;
      it->handle(kv.second, child);
    }
  }

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& path,
                                    std::string_view what = "a string") {
    if (!n.IsScalar()) {
      fail(n.Mark(), path, fmt::format("expected {}, got {}", what, describe(n)));
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<std::int64_t> integer(const YAML::Node& n, const std::string& path, std::int64_t lo,
                                      std::int64_t hi) {
    auto s = scalar(n, path, "an integer");
    if (!s) return std::nullopt;
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec == std::errc::result_out_of_range) {
      fail(n.Mark(), path, fmt::format("{} is out of range ({}..{})", printable(*s), lo, hi),
           Errc::kOutOfRange);
      return std::nullopt;
    }
    if (ec != std::errc{} || end != s->data() + s->size() || s->empty()) {
      fail(n.Mark(), path, fmt::format("expected an integer, got \"{}\"", printable(*s)));
      return std::nullopt;
    }
    if (v < lo || v > hi) {
      fail(n.Mark(), path, fmt::format("{} is out of range ({}..{})", v, lo, hi),
           Errc::kOutOfRange);
      return std::nullopt;
    }
    return v;
  }

  // YAML 1.2 core booleans only: a typo ("ture", "yes") is an error, not false.
  std::optional<bool> boolean(const YAML::Node& n, const std::string& path) {
    auto s = scalar(n, path, "true or false");
    if (!s) return std::nullopt;
    if (*s == "true" || *s == "True" || *s == "TRUE") return true;
    if (*s == "false" || *s == "False" || *s == "FALSE") return false;
    fail(n.Mark(), path, fmt::format("expected true or false, got \"{}\"", printable(*s)));
    return std::nullopt;
  }

  template <class E>
  std::optional<E> enumeration(const YAML::Node& n, const std::string& path, std::string_view what,
                               std::span<const EnumName<E>> names) {
    auto s = scalar(n, path);
    if (!s) return std::nullopt;
    for (const auto& e : names) {
      if (e.name == *s) return e.value;
    }
    std::string expected;
    for (const auto& e : names) {
      if (!expected.empty()) expected += ", ";
      expected += e.name;
    }
    fail(n.Mark(), path,
         fmt::format("unknown {} \"{}\" (expected {})", what, printable(*s), expected));
    return std::nullopt;
  }

  std::optional<std::chrono::milliseconds> duration(const YAML::Node& n, const std::string& path,
                                                    std::chrono::milliseconds lo,
                                                    std::chrono::milliseconds hi,
                                                    bool zero_allowed) {
    auto s = scalar(n, path, "a duration");
    if (!s) return std::nullopt;
    auto d = parse_duration(*s);
    if (!d) {
      fail(n.Mark(), path,
           fmt::format("bad duration \"{}\" (expected e.g. \"500ms\", \"10s\", \"2m\", or a "
                       "number of seconds; millisecond resolution)",
                       printable(*s)));
      return std::nullopt;
    }
    if (zero_allowed && d->count() == 0) return d;
    if (*d < lo || *d > hi) {
      fail(n.Mark(), path,
           fmt::format("{} is out of range ({}{}ms..{}ms)", printable(*s),
                       zero_allowed ? "0 or " : "", lo.count(), hi.count()),
           Errc::kOutOfRange);
      return std::nullopt;
    }
    return d;
  }

  // A 64-bit value such as a key: 0x-prefixed hex of up to 16 digits, or
  // a decimal integer; zero allowed.
  std::optional<std::uint64_t> u64(const YAML::Node& n, const std::string& path,
                                   std::string_view what) {
    auto s = scalar(n, path, what);
    if (!s) return std::nullopt;
    std::string_view t = *s;
    int base = 10;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
      t.remove_prefix(2);
      base = 16;
    }
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
    if (t.empty() || ec != std::errc{} || end != t.data() + t.size()) {
      fail(n.Mark(), path,
           fmt::format("bad {} \"{}\" (expected 0x-prefixed hex of up to 16 digits or a "
                       "decimal integer)",
                       what, printable(*s)));
      return std::nullopt;
    }
    return v;
  }

  std::optional<Guid> guid(const YAML::Node& n, const std::string& path) {
    auto s = scalar(n, path, "a GUID");
    if (!s) return std::nullopt;
    auto g = parse_guid(*s);
    if (!g) {
      fail(n.Mark(), path,
           fmt::format("bad GUID \"{}\" (expected 0x-prefixed hex of up to 16 digits or a "
                       "decimal integer, not zero)",
                       printable(*s)));
    }
    return g;
  }

  std::optional<std::string> path_value(const YAML::Node& n, const std::string& path) {
    auto s = scalar(n, path, "a path");
    if (s && s->empty()) {
      fail(n.Mark(), path, "empty path (omit the key for the default)");
      return std::nullopt;
    }
    return s;
  }

  Result<void> finish() {
    if (issues_.empty()) return ok_result();
    std::stable_sort(issues_.begin(), issues_.end(), [](const Issue& a, const Issue& b) {
      return std::pair(a.line, a.column) < std::pair(b.line, b.column);
    });
    std::string all;
    for (const Issue& i : issues_) {
      if (!all.empty()) all += '\n';
      all += i.text;
    }
    return Error{issues_.front().code, std::move(all)};
  }

 private:
  std::string file_;
  std::vector<Issue> issues_;
  std::map<std::string, YAML::Mark> marks_;
};

// A yaml-cpp exception (a syntax error, carrying its position when it has
// one) as a kParse error naming the file.
inline Error yaml_error(const YAML::Exception& e, std::string_view name) {
  if (e.mark.is_null()) {
    return Error{Errc::kParse,
                 fmt::format("{}: YAML error: {}", printable(name), printable(e.msg))};
  }
  return Error{Errc::kParse, fmt::format("{}:{}:{}: YAML syntax error: {}", printable(name),
                                         e.mark.line + 1, e.mark.column + 1, printable(e.msg))};
}

// NodeDescription is 64 bytes on the wire; a longer node name matches nothing.
inline constexpr std::size_t kMaxNodeDescription = 64;

// The `partitions` section (config_partitions.cpp).
void walk_partitions(Parser& p, const YAML::Node& n, const std::string& path,
                     std::vector<routing::PartitionSpec>& out);

}  // namespace subnetd::daemon::config_detail

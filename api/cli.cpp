#include "api/cli.hpp"

#include <fmt/format.h>
#include <grpcpp/support/status.h>

#include <algorithm>
#include <charconv>

#include "routing/text.hpp"

namespace subnetd::api::cli {

namespace v1 = ::subnet::v1;

int exit_code_for(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return kExitUsage;
    case grpc::StatusCode::NOT_FOUND:
      return kExitNotFound;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return kExitPermission;
    case grpc::StatusCode::UNAVAILABLE:
      return kExitUnavailable;
    default:
      return kExitRpcError;
  }
}

namespace {

bool parse_u64(std::string_view s, int base, std::uint64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

Result<v1::NodeRef> guid_ref(std::string_view text, std::string_view word) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  std::uint64_t g = 0;
  if (text.size() > 16 || !parse_u64(text, 16, g) || g == 0) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("\"{}\": a GUID is 1 to 16 hex digits and not zero", printable(word))};
  }
  v1::NodeRef ref;
  ref.set_guid(g);
  return ref;
}

Result<v1::NodeRef> lid_ref(std::string_view text, std::string_view word) {
  std::uint64_t l = 0;
  if (!parse_u64(text, 10, l) || l == 0 || l > 0xFFFFFF) {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("\"{}\": a LID is a decimal number from 1 to 16777215", printable(word))};
  }
  v1::NodeRef ref;
  ref.set_lid(static_cast<std::uint32_t>(l));
  return ref;
}

}  // namespace

Result<v1::NodeRef> parse_node_ref(std::string_view word) {
  if (word.empty()) return Error{Errc::kInvalidArgument, "empty node name"};
  if (word.starts_with("guid:")) return guid_ref(word.substr(5), word);
  if (word.starts_with("lid:")) return lid_ref(word.substr(4), word);
  if (word.starts_with("name:")) {
    if (word.size() == 5) return Error{Errc::kInvalidArgument, "\"name:\": empty name"};
    v1::NodeRef ref;
    ref.set_name(std::string(word.substr(5)));
    return ref;
  }
  if (word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X')) {
    return guid_ref(word, word);
  }
  if (std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return lid_ref(word, word);
  }
  v1::NodeRef ref;
  ref.set_name(std::string(word));
  return ref;
}

std::string format_guid(std::uint64_t guid) {
  return fmt::format("{:#018x}", guid);
}

std::string format_duration_us(std::uint64_t us) {
  if (us < 1000) return fmt::format("{} us", us);
  if (us < 1'000'000) return fmt::format("{:.1f} ms", static_cast<double>(us) / 1e3);
  return fmt::format("{:.2f} s", static_cast<double>(us) / 1e6);
}

std::string format_uptime(std::int64_t s) {
  if (s < 0) s = 0;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

std::string format_lid_range(std::uint32_t lid, std::uint32_t lmc) {
  if (lid == 0) return "-";
  if (lmc == 0) return std::to_string(lid);
  return fmt::format("{}-{}", lid, lid + (1U << lmc) - 1);
}

std::string_view node_type_word(v1::NodeType t) {
  switch (t) {
    case v1::NODE_TYPE_SWITCH:
      return "switch";
    case v1::NODE_TYPE_CA:
      return "ca";
    case v1::NODE_TYPE_ROUTER:
      return "router";
    default:
      return "?";
  }
}

std::string_view port_state_word(v1::PortState s) {
  switch (s) {
    case v1::PORT_STATE_DOWN:
      return "Down";
    case v1::PORT_STATE_INIT:
      return "Init";
    case v1::PORT_STATE_ARMED:
      return "Armed";
    case v1::PORT_STATE_ACTIVE:
      return "Active";
    default:
      return "-";
  }
}

std::string_view speed_word(v1::LinkSpeed s) {
  switch (s) {
    case v1::LINK_SPEED_SDR:
      return "SDR";
    case v1::LINK_SPEED_DDR:
      return "DDR";
    case v1::LINK_SPEED_QDR:
      return "QDR";
    case v1::LINK_SPEED_FDR10:
      return "FDR10";
    case v1::LINK_SPEED_FDR:
      return "FDR";
    case v1::LINK_SPEED_EDR:
      return "EDR";
    case v1::LINK_SPEED_HDR:
      return "HDR";
    case v1::LINK_SPEED_NDR:
      return "NDR";
    case v1::LINK_SPEED_XDR:
      return "XDR";
    default:
      return "-";
  }
}

std::string_view event_kind_word(v1::EventKind k) {
  switch (k) {
    case v1::EVENT_KIND_LINK_DOWN:
      return "link_down";
    case v1::EVENT_KIND_LINK_UP:
      return "link_up";
    case v1::EVENT_KIND_REROUTE:
      return "reroute";
    case v1::EVENT_KIND_SWEEP:
      return "sweep";
    case v1::EVENT_KIND_CONFIG_RELOAD:
      return "config_reload";
    case v1::EVENT_KIND_ERROR:
      return "error";
    case v1::EVENT_KIND_PORT_DISABLE:
      return "port_disable";
    case v1::EVENT_KIND_PORT_ENABLE:
      return "port_enable";
    case v1::EVENT_KIND_SWITCH_DOWN:
      return "switch_down";
    case v1::EVENT_KIND_SWITCH_UP:
      return "switch_up";
    case v1::EVENT_KIND_SM_STATE:
      return "sm_state";
    case v1::EVENT_KIND_FAILOVER:
      return "failover";
    case v1::EVENT_KIND_MULTICAST:
      return "multicast";
    case v1::EVENT_KIND_CABLING:
      return "cabling";
    case v1::EVENT_KIND_COUNTERS:
      return "counters";
    case v1::EVENT_KIND_PORT_HEALTH:
      return "health";
    default:
      return "?";
  }
}

std::string format_sweep(const v1::TriggerSweepResponse& r) {
  const v1::SweepSummary& sw = r.sweep();
  std::uint64_t total = 0;
  for (const auto& p : sw.phases()) total += p.duration_us();
  const auto generation = static_cast<unsigned long long>(r.generation());
  if (sw.kind() == v1::SWEEP_KIND_LIGHT) {
    return fmt::format("light sweep OK: no change; {} switches answered in {}; generation {}\n",
                       sw.switches(), format_duration_us(total), generation);
  }
  std::string out = sw.message().empty() ? std::string{} : sw.message() + "\n";
  out += fmt::format("sweep OK: {} nodes ({} switches, {} CAs), {} LIDs, {}; generation {}\n",
                     sw.nodes(), sw.switches(), sw.cas(), sw.lids(), format_duration_us(total),
                     generation);
  return out;
}

std::string format_verify(const v1::VerifyRoutingResponse& r) {
  const std::string verdict = v1::Verdict_Name(r.verdict()).substr(8);  // after "VERDICT_"
  std::string out = fmt::format("{}: {}\n", verdict, r.message());
  out += fmt::format("{} switches, {} VLs, {} pairs checked, generation {}, {}{}\n", r.switches(),
                     r.virtual_lanes(), static_cast<unsigned long long>(r.pairs_checked()),
                     static_cast<unsigned long long>(r.generation()),
                     format_duration_us(r.duration_us()),
                     r.shared() ? " (shared with a verification another caller asked for)" : "");
  if (r.has_read_back()) {
    const v1::ReadBack& rb = r.read_back();
    out += fmt::format("read back: {} switches{}, {} LFT blocks read, {} differ{}\n", rb.switches(),
                       rb.switches_silent() == 0
                           ? std::string{}
                           : fmt::format(" ({} did not answer every block)", rb.switches_silent()),
                       static_cast<unsigned long long>(rb.blocks_read()),
                       static_cast<unsigned long long>(rb.blocks_differ()),
                       rb.differences_size() == 0 ? "" : ":");
    // The SM's lines name switches by their description, which comes from
    // the wire.
    for (const std::string& d : rb.differences()) out += "  " + printable(d) + "\n";
  }
  return out;
}

Table::Table(std::vector<std::string> headers, std::vector<bool> right_aligned)
    : headers_(std::move(headers)), right_(std::move(right_aligned)) {
  right_.resize(headers_.size(), false);
}

void Table::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  rows_.push_back(std::move(row));
}

std::string Table::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& r : rows_) {
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      if (c > 0) l += "  ";
      if (right_[c]) {
        l += fmt::format("{:>{}}", cells[c], width[c]);
      } else if (last) {
        l += cells[c];  // no trailing blanks
      } else {
        l += fmt::format("{:<{}}", cells[c], width[c]);
      }
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l;
    out += '\n';
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
  return out;
}

void Table::print(std::FILE* out) const {
  std::fputs(render().c_str(), out);
}

}  // namespace subnetd::api::cli

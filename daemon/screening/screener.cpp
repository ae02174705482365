// Bring-up screening at every sweep; see screener.hpp.

#include "daemon/screening/screener.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <tuple>

namespace subnetd::daemon::screening {

namespace {

using state::CablingFinding;
using state::CablingReport;

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A finding's identity across comparisons: what it is about, not its text.
auto key_of(const CablingFinding& f) {
  return std::tuple(f.kind, f.node_guid.value, f.node_name, f.port, f.expected, f.found);
}
using Key = decltype(key_of(CablingFinding{}));

std::string counts_text(const CablingReport& r) {
  std::map<state::CablingFindingKind, std::size_t> by_kind;
  for (const CablingFinding& f : r.findings) ++by_kind[f.kind];
  std::string out;
  for (const auto& [k, n] : by_kind) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", n, state::cabling_finding_name(k));
  }
  return out;
}

Result<CablingReport> compare(const CablingPlan& plan, const state::FabricState& s) {
  if (!s.topology) {
    return Error{Errc::kUnreachable, "no fabric to compare yet: the first sweep has not finished"};
  }
  const auto start = std::chrono::steady_clock::now();
  static const std::vector<std::pair<Guid, std::string>> kNone;
  CablingReport r =
      check_cabling(plan, *s.topology, s.duplicate_guids ? *s.duplicate_guids : kNone);
  r.generation = s.generation;
  r.took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  return r;
}

}  // namespace

Screener::Screener(const state::StatePublisher& publisher, state::EventLog& events,
                   std::optional<CablingPlan> plan)
    : publisher_(publisher), events_(events) {
  if (plan) plan_ = std::make_shared<const CablingPlan>(std::move(*plan));
  thread_ = std::thread([this] { loop(); });
}

Screener::~Screener() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Screener::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void Screener::set_plan(std::optional<CablingPlan> plan) {
  {
    std::lock_guard lock(mu_);
    plan_ = plan ? std::make_shared<const CablingPlan>(std::move(*plan)) : nullptr;
    ++plan_version_;
    if (!plan_) last_ = nullptr;
    woken_ = true;
  }
  cv_.notify_all();
}

std::shared_ptr<const CablingReport> Screener::last() const {
  std::lock_guard lock(mu_);
  return last_;
}

Result<CablingReport> Screener::check_cabling(const state::CablingPlanText* text) const {
  std::shared_ptr<const CablingPlan> plan;
  if (text != nullptr) {
    CablingPlan parsed;
    SUBNETD_TRY_ASSIGN(parsed, parse_cabling_plan(*text));
    plan = std::make_shared<const CablingPlan>(std::move(parsed));
  } else {
    std::lock_guard lock(mu_);
    plan = plan_;
  }
  if (!plan) {
    return Error{Errc::kNotFound, "no cabling plan: give one, or configure screening.cabling_plan"};
  }
  return compare(*plan, *publisher_.current());
}

void Screener::loop() {
  // The topology of the last comparison. Weak, not its address: a later
  // topology allocated where a freed one was would look unchanged.
  std::weak_ptr<const routing::Topology> checked;
  std::uint64_t checked_version = 0;
  for (;;) {
    std::shared_ptr<const CablingPlan> plan;
    std::uint64_t version = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return woken_ || stop_; });
      if (stop_) return;
      woken_ = false;
      plan = plan_;
      version = plan_version_;
    }
    const std::shared_ptr<const state::FabricState> s = publisher_.current();
    if (!plan || !s->topology || s->state != state::SmState::kMaster) continue;
    if (checked.lock() == s->topology && version == checked_version) continue;
    auto report = compare(*plan, *s);
    if (!report.ok()) continue;
    checked = s->topology;
    checked_version = version;
    auto now = std::make_shared<const CablingReport>(std::move(report).value());
    std::shared_ptr<const CablingReport> before;
    {
      std::lock_guard lock(mu_);
      if (plan_version_ != version) continue;  // replaced meanwhile: compare again
      before = last_;
      last_ = now;
    }
    announce(before ? *before : CablingReport{}, *now);
  }
}

void Screener::announce(const CablingReport& before, const CablingReport& now) {
  std::set<Key> old_keys, new_keys;
  for (const CablingFinding& f : before.findings) old_keys.insert(key_of(f));
  for (const CablingFinding& f : now.findings) new_keys.insert(key_of(f));
  std::size_t sent = 0, left_out = 0, added = 0, cleared = 0;
  auto event = [&](const CablingFinding& f, bool gone) {
    if (sent == kMaxEvents) {
      ++left_out;
      return;
    }
    ++sent;
    const std::string details =
        fmt::format("{{\"finding\":{},\"expected\":{},\"found\":{},\"cleared\":{},\"plan\":{}}}",
                    json_string(state::cabling_finding_name(f.kind)), json_string(f.expected),
                    json_string(f.found), gone ? "true" : "false", json_string(now.plan));
    events_.append(state::EventKind::kCabling,
                   f.node_guid.value != 0 ? std::optional(f.node_guid) : std::nullopt,
                   f.port != 0 ? std::optional(f.port) : std::nullopt,
                   fmt::format("cabling: {}{}", gone ? "cleared: " : "", f.message), details);
  };
  for (const CablingFinding& f : now.findings) {
    if (old_keys.count(key_of(f)) != 0) continue;
    ++added;
    event(f, false);
  }
  for (const CablingFinding& f : before.findings) {
    if (new_keys.count(key_of(f)) != 0) continue;
    ++cleared;
    event(f, true);
  }
  const bool first = before.plan.empty();
  if (!first && added == 0 && cleared == 0) return;
  const std::string summary =
      now.findings.empty()
          ? fmt::format("cabling: the fabric matches {} ({} nodes, {} cables)", now.plan,
                        now.plan_nodes, now.plan_cables)
          : fmt::format("cabling: {} finding(s) against {}: {}{}", now.findings.size(), now.plan,
                        counts_text(now),
                        left_out != 0 ? fmt::format(" ({} not sent as events; subnetctl check "
                                                    "cabling lists all)",
                                                    left_out)
                                      : std::string());
  events_.append(state::EventKind::kCabling, std::nullopt, std::nullopt, summary,
                 fmt::format("{{\"findings\":{},\"new\":{},\"cleared\":{},\"plan\":{}}}",
                             now.findings.size(), added, cleared, json_string(now.plan)));
  if (now.findings.empty()) {
    spdlog::info("{}", summary);
  } else {
    spdlog::warn("{}", summary);
  }
}

}  // namespace subnetd::daemon::screening

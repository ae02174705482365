// subnetctl's operations commands: check cabling (CheckCabling).

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
    default:
      return "?";
  }
}

}  // namespace

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

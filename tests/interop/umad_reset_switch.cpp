// umad_reset_switch: empties the forwarding table of one switch, reached by
// a directed route from the local port, the way a power cycle leaves it:
// every LFT block up to the old LinearFDBTop set to 0xFF (no route), then
// LinearFDBTop 0. For the interop check of issue 12.1 (a power-cycled switch
// next to the SM is reprogrammed whole).
//
// ibsim cannot power-cycle a switch. Its console's `Clear "id"` resets every
// port of the node (PortInfo, state, LID, LMC, SMLid: sim_net.c reset_port)
// and drops its links, `ReLink "id"` trains them again, but nothing in ibsim
// touches a switch's forwarding table or LinearFDBTop except SMP Sets to its
// SMA (sim_mad.c do_linearforwtbl, do_switchinfo). The check therefore
// composes the power cycle: this tool for the table, Clear/ReLink for the
// LIDs and links.
//
//   umad_reset_switch PATH       PATH: the out ports of the hops, e.g. 1 or 1,3
//
// Prints "reset top T blocks N" (the old LinearFDBTop, blocks emptied) once
// the switch reads back LinearFDBTop 0 and an empty block 0. Exit 0, or 1
// with the error on stderr, 2 on bad arguments.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "discovery/umad/umad_transport.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::discovery;

std::optional<std::vector<std::uint8_t>> parse_path(const std::string& text) {
  std::vector<std::uint8_t> path;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::string part =
        text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const long port = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || port < 1 || port > 254) return std::nullopt;
    path.push_back(static_cast<std::uint8_t>(port));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (path.empty() || path.size() > mad::kMaxHopCount) return std::nullopt;
  return path;
}

// One request and its answer (resent up to 3 times, 1 s each: ibsim answers
// at once, the bound is for a failing run).
Result<mad::Smp> call(Transport& t, mad::Smp req) {
  static std::uint64_t tid = 0x5e70000;
  req.tid = ++tid;
  Mad out;
  out.data = mad::encode_smp(req);
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (auto s = t.send(out); !s.ok()) return s.error();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (std::chrono::steady_clock::now() < end) {
      auto got = t.receive(std::chrono::duration_cast<std::chrono::microseconds>(
          end - std::chrono::steady_clock::now()));
      if (!got.ok()) return got.error();
      if (!got->has_value()) break;
      auto smp = mad::decode_smp((**got).data);
      // Low 32 bits: umad2sim and ibsim write the agent and client ids above.
      if (!smp.ok() || !smp->is_response() || (smp->tid & 0xFFFFFFFFU) != req.tid) continue;
      if (smp->status != mad::status::kOk) {
        return Error{Errc::kIo,
                     fmt::format("{}: status {:#x}", mad::describe_smp(out.data), smp->status)};
      }
      return *smp;
    }
  }
  return Error{Errc::kTimeout, fmt::format("{}: no answer", mad::describe_smp(out.data))};
}

}  // namespace

int main(int argc, char** argv) {
  const auto path = argc == 2 ? parse_path(argv[1]) : std::nullopt;
  if (!path) {
    fmt::print(stderr, "usage: umad_reset_switch PATH (out ports of the hops, e.g. 1 or 1,3)\n");
    return 2;
  }
  auto opened = umad::UmadTransport::open({});
  if (!opened.ok()) {
    fmt::print(stderr, "umad_reset_switch: {}\n", opened.error().message);
    return 1;
  }
  Transport& t = **opened;
  auto fail = [](const Error& e) {
    fmt::print(stderr, "umad_reset_switch: {}\n", e.message);
    return 1;
  };
  auto dr = [&](mad::Method m, mad::AttrId a, std::uint32_t mod) {
    return mad::make_dr_smp(m, a, mod, *path, 0);
  };

  auto got = call(t, dr(mad::Method::kGet, mad::AttrId::kSwitchInfo, 0));
  if (!got.ok()) return fail(got.error());
  mad::SwitchInfo si = mad::SwitchInfo::decode(mad::data_of(*got));
  const std::uint32_t top = si.linear_fdb_top;
  const std::uint32_t blocks = top / 64 + 1;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    mad::Smp set = dr(mad::Method::kSet, mad::AttrId::kLinearForwardingTable, b);
    const mad::SmpData data = mad::data_of(set);
    std::fill(data.begin(), data.end(), std::uint8_t{0xFF});
    if (auto r = call(t, set); !r.ok()) return fail(r.error());
  }
  si.linear_fdb_top = 0;
  si.port_state_change = false;  // writing 1 would clear it
  mad::Smp set = dr(mad::Method::kSet, mad::AttrId::kSwitchInfo, 0);
  si.encode(mad::data_of(set));
  if (auto r = call(t, set); !r.ok()) return fail(r.error());

  got = call(t, dr(mad::Method::kGet, mad::AttrId::kSwitchInfo, 0));
  if (!got.ok()) return fail(got.error());
  const std::uint32_t now_top = mad::SwitchInfo::decode(mad::data_of(*got)).linear_fdb_top;
  auto block0 = call(t, dr(mad::Method::kGet, mad::AttrId::kLinearForwardingTable, 0));
  if (!block0.ok()) return fail(block0.error());
  const mad::ConstSmpData held = mad::data_of(std::as_const(*block0));
  const bool empty =
      std::all_of(held.begin(), held.end(), [](std::uint8_t p) { return p == 0xFF; });
  if (now_top != 0 || !empty) {
    return fail(Error{Errc::kIo, fmt::format("the switch still holds LinearFDBTop {}{}", now_top,
                                             empty ? "" : " and routes in block 0")});
  }
  fmt::print("reset top {} blocks {}\n", top, blocks);
  return 0;
}

// mcast_join: joins (or leaves) a multicast group through the SA, as IPoIB
// and librdmacm do: one MCMemberRecord Set (Delete) over libibumad to the
// SM's LID, QP1, for the port's own GID.
//
//   mcast_join [--leave] [--ca NAME] [--port N] [--join-state N] MGID
//
// MGID as 8 groups of 4 hex digits ("ff12:401b:ffff:0:0:0:ffff:ffff").
// Prints "status 0x.... mlid 0x.... qkey 0x... pkey 0x...." and exits 0 when
// the SA answered with status 0, 1 otherwise (2: usage). Under umad2sim,
// SIM_HOST names the simulated node the client sits on.

#include <endian.h>
#include <fmt/format.h>
#include <infiniband/umad.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "discovery/mad/sa.hpp"

namespace {

namespace sa = subnetd::discovery::mad::sa;

bool parse_mgid(const std::string& text, std::array<std::uint8_t, 16>& out) {
  std::size_t at = 0;
  for (int group = 0; group < 8; ++group) {
    const std::size_t end = text.find(':', at);
    const std::string part = text.substr(at, end == std::string::npos ? end : end - at);
    if (part.empty() || part.size() > 4) return false;
    char* stop = nullptr;
    const unsigned long v = std::strtoul(part.c_str(), &stop, 16);
    if (*stop != '\0') return false;
    out[2 * group] = static_cast<std::uint8_t>(v >> 8);
    out[2 * group + 1] = static_cast<std::uint8_t>(v);
    if (group < 7 && end == std::string::npos) return false;
    at = end + 1;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ca;
  int port = 0;
  bool leave = false;
  unsigned join_state = 1;
  std::string mgid_text;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--leave") {
      leave = true;
    } else if ((a == "--ca" || a == "--port" || a == "--join-state") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--ca") ca = v;
      if (a == "--port") port = std::atoi(v.c_str());
      if (a == "--join-state") join_state = static_cast<unsigned>(std::atoi(v.c_str()));
    } else {
      mgid_text = a;
    }
  }
  std::array<std::uint8_t, 16> mgid{};
  if (mgid_text.empty() || !parse_mgid(mgid_text, mgid)) {
    std::fprintf(stderr, "usage: mcast_join [--leave] [--ca NAME] [--port N] MGID\n");
    return 2;
  }
  if (umad_init() < 0) {
    std::fprintf(stderr, "mcast_join: umad_init failed\n");
    return 1;
  }
  umad_port_t p{};
  if (umad_get_port(ca.empty() ? nullptr : ca.c_str(), port, &p) < 0) {
    std::fprintf(stderr, "mcast_join: no port %s:%d\n", ca.c_str(), port);
    return 1;
  }
  const int fd = umad_open_port(p.ca_name, p.portnum);
  const int agent = fd < 0 ? -1 : umad_register(fd, sa::kMgmtClass, sa::kClassVersion, 0, nullptr);
  if (agent < 0) {
    std::fprintf(stderr, "mcast_join: cannot open %s:%d for the SA class\n", p.ca_name, p.portnum);
    return 1;
  }
  sa::SaMad q;
  q.method = static_cast<std::uint8_t>(leave ? sa::Method::kDelete : sa::Method::kSet);
  q.attr_id = static_cast<std::uint16_t>(sa::Attr::kMcMemberRecord);
  q.tid = std::random_device{}();
  q.comp_mask = (1ULL << 0) | (1ULL << 1) | (1ULL << 16);  // MGID, PortGID, JoinState
  std::memcpy(q.data.data(), mgid.data(), mgid.size());
  const std::uint64_t prefix = be64toh(p.gid_prefix);
  const std::uint64_t guid = be64toh(p.port_guid);
  const auto* layout = sa::layout_of(q.attr_id);
  sa::set_field(std::span(q.data).subspan(16, 8), {"prefix", 0, 64}, prefix);
  sa::set_field(std::span(q.data).subspan(24, 8), {"guid", 0, 64}, guid);
  sa::set_field(q.data, sa::component(*layout, "JoinState"), join_state);
  const auto bytes = sa::encode_sa(q);

  std::vector<std::uint8_t> buf(static_cast<std::size_t>(umad_size()) + sa::kMadSize);
  std::memcpy(umad_get_mad(buf.data()), bytes.data(), bytes.size());
  umad_set_addr(buf.data(), p.sm_lid, 1, 0, 0x80010000);
  if (umad_send(fd, agent, buf.data(), static_cast<int>(sa::kMadSize), 1000, 3) < 0) {
    std::fprintf(stderr, "mcast_join: umad_send to SM LID %u failed\n", p.sm_lid);
    return 1;
  }
  int len = static_cast<int>(sa::kMadSize);
  if (umad_recv(fd, buf.data(), &len, 10000) < 0 || umad_status(buf.data()) != 0) {
    std::fprintf(stderr, "mcast_join: no answer from the SA (LID %u)\n", p.sm_lid);
    return 1;
  }
  auto r = sa::decode_sa(std::span<const std::uint8_t>(
      static_cast<const std::uint8_t*>(umad_get_mad(buf.data())), sa::kMadSize));
  if (!r.ok()) {
    std::fprintf(stderr, "mcast_join: %s\n", r.error().message.c_str());
    return 1;
  }
  auto get = [&](const char* name) { return sa::get_field(r->data, sa::component(*layout, name)); };
  fmt::print("status {:#06x} mlid {:#06x} qkey {:#x} pkey {:#06x} lid {} guid {:#018x}\n",
             r->status, get("MLID"), get("Q_Key"), get("P_Key"), p.base_lid, guid);
  umad_release_port(&p);
  return r->status == 0 ? 0 : 1;
}

// sa_client: an SA client on libibumad, as an application or a library
// (ibacm, librdmacm, an MPI launcher) uses the SA. Under umad2sim, SIM_HOST
// names the simulated node it sits on.
//
//   sa_client [--ca NAME] [--port N] service ID NAME [--lease S]
//       Registers ServiceRecord ID/NAME for this port (P_Key 0xFFFF).
//       Prints "status 0x.... service 0x... lease N".
//   sa_client [--ca NAME] [--port N] subscribe [--traps A,B,...] [--wait S] [--issm 1]
//       Subscribes to every notice (InformInfo Set), prints "subscribed
//       status 0x....", then waits for Reports: each is printed ("report
//       trap N issuer 0x.... gid 0x...") and acknowledged (ReportResp);
//       exits 0 once the traps listed have come in that order, 1 when S
//       seconds (default 60) pass first. With --issm 1 it holds the port's
//       issm device while it waits: ibsim hands requests on QP1 (a Report
//       is one) only to a client that does (ibsim.c, find_client), where
//       the kernel delivers them by the agent's method mask. Not for real
//       hardware: holding issm advertises an SM on the port.
//   sa_client [--ca NAME] [--port N] paths --lids L1,L2,... [--count N] [--window W]
//       PathRecord load: N (default 10000) Get PathRecord by SLID/DLID
//       for random pairs of the LIDs, W (default 16) in flight. Prints
//       "paths sent N answered A errors E lost L seconds T rate R/s p50 X us
//       p99 Y us".
//
// Exit 2 on bad usage, 1 when the port or the SA cannot be reached.

#include <endian.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <infiniband/umad.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "discovery/mad/sa.hpp"

namespace {

namespace sa = subnetd::discovery::mad::sa;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kGsiQKey = 0x80010000;

struct Port {
  umad_port_t info{};
  int fd = -1;
  int agent = -1;
  std::uint64_t prefix = 0;
  std::uint64_t guid = 0;
};

std::vector<unsigned long> split_numbers(const std::string& text) {
  std::vector<unsigned long> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find(',', at);
    const std::string part = text.substr(at, end == std::string::npos ? end : end - at);
    if (!part.empty()) out.push_back(std::strtoul(part.c_str(), nullptr, 0));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

bool open_port(const std::string& ca, int port_num, Port& p) {
  if (umad_init() < 0) {
    std::fprintf(stderr, "sa_client: umad_init failed\n");
    return false;
  }
  if (umad_get_port(ca.empty() ? nullptr : ca.c_str(), port_num, &p.info) < 0) {
    std::fprintf(stderr, "sa_client: no port %s:%d\n", ca.c_str(), port_num);
    return false;
  }
  p.fd = umad_open_port(p.info.ca_name, p.info.portnum);
  // Reports are requests to us: the agent takes method Report (0x06).
  long methods[16 / sizeof(long)] = {};
  methods[0x06 / (8 * sizeof(long))] |= 1L << (0x06 % (8 * sizeof(long)));
  p.agent = p.fd < 0 ? -1 : umad_register(p.fd, sa::kMgmtClass, sa::kClassVersion, 0, methods);
  if (p.agent < 0) {
    std::fprintf(stderr, "sa_client: cannot open %s:%d for the SA class\n", p.info.ca_name,
                 p.info.portnum);
    umad_release_port(&p.info);
    return false;
  }
  p.prefix = be64toh(p.info.gid_prefix);
  p.guid = be64toh(p.info.port_guid);
  // What is used of the port (names, LIDs, GUIDs) stays; its P_Key table,
  // allocated by umad_get_port, goes.
  umad_release_port(&p.info);
  return true;
}

// Sends `q` to `dlid` (QP1); `timeout_ms` 0 for an answer (no response).
bool send(const Port& p, const sa::SaMad& q, std::uint32_t dlid, int timeout_ms, int retries) {
  const auto bytes = sa::encode_sa(q);
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(umad_size()) + sa::kMadSize);
  std::memcpy(umad_get_mad(buf.data()), bytes.data(), bytes.size());
  umad_set_addr(buf.data(), static_cast<int>(dlid), 1, 0, static_cast<int>(kGsiQKey));
  return umad_send(p.fd, p.agent, buf.data(), static_cast<int>(sa::kMadSize), timeout_ms,
                   retries) >= 0;
}

struct Received {
  int status = 0;  // umad status (ETIMEDOUT: a request of ours timed out)
  std::uint32_t slid = 0;
  sa::SaMad mad;
};

// The next SA MAD within `timeout_ms`; false on timeout or a malformed one.
// Others are skipped: holding issm (--issm) makes the port look like an SM's,
// and ibsim hands this client the SMInfo Gets a master sends such a port.
bool receive(const Port& p, int timeout_ms, Received& out) {
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(umad_size()) + sa::kMadSize);
  int len = static_cast<int>(sa::kMadSize);
  do {
    len = static_cast<int>(sa::kMadSize);
    if (umad_recv(p.fd, buf.data(), &len, timeout_ms) < 0) return false;
  } while (static_cast<const std::uint8_t*>(umad_get_mad(buf.data()))[1] != 0x03);
  out.status = umad_status(buf.data());
  out.slid = be16toh(umad_get_mad_addr(buf.data())->lid);
  auto d = sa::decode_sa(std::span<const std::uint8_t>(
      static_cast<const std::uint8_t*>(umad_get_mad(buf.data())), sa::kMadSize));
  if (!d.ok()) return false;
  out.mad = *d;
  return true;
}

std::uint64_t low32(std::uint64_t tid) {
  return tid & 0xFFFFFFFFULL;
}

// One request, its one answer (10 s at most).
bool ask(const Port& p, const sa::SaMad& q, Received& out) {
  if (!send(p, q, p.info.sm_lid, 1000, 3)) {
    std::fprintf(stderr, "sa_client: umad_send to SM LID %u failed\n", p.info.sm_lid);
    return false;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    if (!receive(p, 1000, out)) continue;
    // The low 32 bits: the kernel (and umad2sim) put the agent in the high ones.
    if (out.status == 0 && low32(out.mad.tid) == low32(q.tid) && out.mad.is_response()) return true;
  }
  std::fprintf(stderr, "sa_client: no answer from the SA (LID %u)\n", p.info.sm_lid);
  return false;
}

void put_own_gid(const Port& p, sa::SaMad& q, std::size_t at) {
  sa::set_field(std::span(q.data).subspan(at, 8), {"prefix", 0, 64}, p.prefix);
  sa::set_field(std::span(q.data).subspan(at + 8, 8), {"guid", 0, 64}, p.guid);
}

void set(sa::SaMad& q, const char* name, std::uint64_t v) {
  sa::set_field(q.data, sa::component(*sa::layout_of(q.attr_id), name), v);
}

int register_service(const Port& p, std::uint64_t id, const std::string& name,
                     std::uint32_t lease) {
  sa::SaMad q;
  q.method = static_cast<std::uint8_t>(sa::Method::kSet);
  q.attr_id = static_cast<std::uint16_t>(sa::Attr::kServiceRecord);
  q.tid = std::random_device{}();
  q.comp_mask = (1ULL << 0) | (1ULL << 1) | (1ULL << 2) | (1ULL << 4) | (1ULL << 6);
  set(q, "ServiceID", id);
  put_own_gid(p, q, 8);
  set(q, "ServiceP_Key", 0xFFFF);
  set(q, "ServiceLease", lease);
  std::strncpy(reinterpret_cast<char*>(&q.data[48]), name.c_str(), 63);
  Received r;
  if (!ask(p, q, r)) return 1;
  const auto* l = sa::layout_of(q.attr_id);
  fmt::print("status {:#06x} service {:#x} lease {}\n", r.mad.status,
             sa::get_field(r.mad.data, sa::component(*l, "ServiceID")),
             sa::get_field(r.mad.data, sa::component(*l, "ServiceLease")));
  return r.mad.status == 0 ? 0 : 1;
}

int subscribe(const Port& p, const std::vector<unsigned long>& traps, int wait_s, bool issm) {
  int issm_fd = -1;
  if (issm) {
    // A port that says IsSM gets an SM's SMPs (a master asks it for its
    // SMInfo): agents for them, so that they have somewhere to go; receive()
    // skips them. Registered before issm is opened: opening it makes ibsim
    // send the master trap 144, whose SMInfo Get can arrive at once, and
    // umad2sim's receiver crashes the client on a MAD of a class nobody
    // registered (seen in CI as "no subscription" under load).
    umad_register(p.fd, 0x01, 1, 0, nullptr);
    umad_register(p.fd, 0x81, 1, 0, nullptr);
    std::array<char, 256> path{};
    if (umad_get_issm_path(p.info.ca_name, p.info.portnum, path.data(),
                           static_cast<int>(path.size())) < 0 ||
        (issm_fd = open(path.data(), O_RDWR | O_NONBLOCK)) < 0) {
      std::fprintf(stderr, "sa_client: cannot hold the issm device of %s:%d\n", p.info.ca_name,
                   p.info.portnum);
      return 1;
    }
  }
  sa::SaMad q;
  q.method = static_cast<std::uint8_t>(sa::Method::kSet);
  q.attr_id = static_cast<std::uint16_t>(sa::Attr::kInformInfo);
  q.tid = std::random_device{}();
  set(q, "LIDRangeBegin", 0xFFFF);
  set(q, "IsGeneric", 1);
  set(q, "Subscribe", 1);
  set(q, "Type", 0xFFFF);
  set(q, "TrapNumber", 0xFFFF);
  set(q, "QPN", 1);
  set(q, "ProducerType", 0xFFFFFF);
  Received r;
  if (!ask(p, q, r)) return 1;
  fmt::print("subscribed status {:#06x}\n", r.mad.status);
  std::fflush(stdout);
  if (r.mad.status != 0) return 1;
  std::size_t next = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(wait_s);
  while (next < traps.size() && Clock::now() < deadline) {
    if (!receive(p, 500, r) || r.status != 0) continue;
    if (r.mad.method != static_cast<std::uint8_t>(sa::Method::kReport) ||
        r.mad.attr_id != static_cast<std::uint16_t>(sa::Attr::kNotice)) {
      continue;
    }
    const std::uint16_t trap = static_cast<std::uint16_t>((r.mad.data[4] << 8) | r.mad.data[5]);
    const std::uint16_t issuer = static_cast<std::uint16_t>((r.mad.data[6] << 8) | r.mad.data[7]);
    std::uint64_t gid_guid = 0;
    for (int i = 0; i < 8; ++i) gid_guid = (gid_guid << 8) | r.mad.data[24 + i];
    fmt::print("report trap {} issuer {:#06x} gid {:#018x}\n", trap, issuer, gid_guid);
    std::fflush(stdout);
    sa::SaMad ack = r.mad;
    ack.method = static_cast<std::uint8_t>(sa::Method::kReportResp);
    send(p, ack, r.slid, 0, 0);
    if (trap == traps[next]) ++next;
  }
  (void)issm_fd;  // held until exit
  return next == traps.size() ? 0 : 1;
}

int path_load(const Port& p, const std::vector<unsigned long>& lids, std::size_t count,
              std::size_t window) {
  if (lids.size() < 2) {
    std::fprintf(stderr, "sa_client: paths needs at least 2 LIDs\n");
    return 2;
  }
  std::mt19937_64 rng(7);
  std::unordered_map<std::uint64_t, Clock::time_point> in_flight;
  std::vector<double> latency_us;
  latency_us.reserve(count);
  std::size_t sent = 0, errors = 0, lost = 0;
  std::uint64_t tid = 0x5A000000;
  const auto t0 = Clock::now();
  auto last_progress = t0;
  while ((sent < count || !in_flight.empty()) &&
         Clock::now() - last_progress < std::chrono::seconds(10)) {
    while (sent < count && in_flight.size() < window) {
      sa::SaMad q;
      q.method = static_cast<std::uint8_t>(sa::Method::kGet);
      q.attr_id = static_cast<std::uint16_t>(sa::Attr::kPathRecord);
      q.tid = ++tid;
      q.comp_mask = (1ULL << 4) | (1ULL << 5);  // DLID, SLID
      const std::size_t s = rng() % lids.size();
      std::size_t d = rng() % (lids.size() - 1);
      if (d >= s) ++d;
      set(q, "SLID", lids[s]);
      set(q, "DLID", lids[d]);
      if (!send(p, q, p.info.sm_lid, 2000, 0)) {
        std::fprintf(stderr, "sa_client: umad_send failed\n");
        return 1;
      }
      in_flight.emplace(low32(q.tid), Clock::now());
      ++sent;
    }
    Received r;
    if (!receive(p, 100, r)) continue;
    const auto it = in_flight.find(low32(r.mad.tid));
    if (it == in_flight.end()) continue;
    if (r.status != 0) {
      ++lost;  // timed out
    } else {
      latency_us.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - it->second).count());
      if (r.mad.status != 0) ++errors;
    }
    in_flight.erase(it);
    last_progress = Clock::now();
  }
  lost += in_flight.size();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::sort(latency_us.begin(), latency_us.end());
  auto pct = [&](double q) {
    return latency_us.empty()
               ? 0.0
               : latency_us[std::min(latency_us.size() - 1,
                                     static_cast<std::size_t>(q * latency_us.size()))];
  };
  fmt::print(
      "paths sent {} answered {} errors {} lost {} seconds {:.3f} rate {:.0f}/s p50 {:.0f} us "
      "p99 {:.0f} us\n",
      sent, latency_us.size(), errors, lost, secs,
      secs > 0 ? static_cast<double>(latency_us.size()) / secs : 0.0, pct(0.5), pct(0.99));
  return latency_us.empty() ? 1 : 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: sa_client [--ca NAME] [--port N] service ID NAME [--lease S]\n"
               "       sa_client [--ca NAME] [--port N] subscribe [--traps A,B] [--wait S]\n"
               "       sa_client [--ca NAME] [--port N] paths --lids L1,L2,... [--count N] "
               "[--window W]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ca;
  int port = 0;
  std::vector<std::string> words;
  std::unordered_map<std::string, std::string> opts;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      if (i + 1 >= argc) return usage();
      opts[a] = argv[++i];
    } else {
      words.push_back(a);
    }
  }
  if (opts.contains("--ca")) ca = opts["--ca"];
  if (opts.contains("--port")) port = std::atoi(opts["--port"].c_str());
  if (words.empty()) return usage();
  Port p;
  const std::string& cmd = words[0];
  if (cmd == "service" && words.size() == 3) {
    if (!open_port(ca, port, p)) return 1;
    const auto lease =
        opts.contains("--lease") ? std::strtoul(opts["--lease"].c_str(), nullptr, 0) : 60UL;
    return register_service(p, std::strtoull(words[1].c_str(), nullptr, 0), words[2],
                            static_cast<std::uint32_t>(lease));
  }
  if (cmd == "subscribe" && words.size() == 1) {
    if (!open_port(ca, port, p)) return 1;
    const auto traps = split_numbers(opts.contains("--traps") ? opts["--traps"] : "");
    const int wait_s = opts.contains("--wait") ? std::atoi(opts["--wait"].c_str()) : 60;
    const bool issm = opts.contains("--issm") && opts["--issm"] == "1";
    const int rc = subscribe(p, traps, wait_s, issm);
    // Out at once: umad2sim's teardown of the connections a subscriber
    // holds (agent, port, issm) was seen to hang under TSan and, closed by
    // hand, to crash now and then; the kernel closes them all the same.
    std::fflush(nullptr);
    _exit(rc);
  }
  if (cmd == "paths" && words.size() == 1 && opts.contains("--lids")) {
    if (!open_port(ca, port, p)) return 1;
    const std::size_t count =
        opts.contains("--count") ? std::strtoul(opts["--count"].c_str(), nullptr, 0) : 10000;
    const std::size_t window =
        opts.contains("--window") ? std::strtoul(opts["--window"].c_str(), nullptr, 0) : 16;
    return path_load(p, split_numbers(opts["--lids"]), count, std::max<std::size_t>(1, window));
  }
  return usage();
}

#include "discovery/umad/umad_transport.hpp"

#include <endian.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>

#include "discovery/mad/pma.hpp"

namespace subnetd::discovery::umad {
namespace {

constexpr std::uint8_t kClassLid = 0x01;
constexpr std::uint8_t kClassDirected = 0x81;
constexpr std::uint8_t kClassSa = 0x03;
constexpr int kRmppVersion = 1;
constexpr std::uint32_t kGsiQKey = 0x80010000;  // IBA's well-known Q_Key of QP1
constexpr unsigned kPortStateActive = 4;
constexpr unsigned kPhysLinkUp = 5;
// How long the receiver thread sleeps in poll() before it looks at the stop
// flag; bounds how long the destructor waits.
constexpr int kReceiverPollMs = 50;

constexpr const char* kNoDevice =
    "no InfiniBand device found (is ib_umad loaded? are you in the rdma group?)";

std::string errno_text(int err) {
  return fmt::format("{} ({})", std::strerror(err), err);
}

// One candidate port, as libibumad reports it.
struct Candidate {
  std::string ca;
  PortNum port = 0;
  unsigned state = 0;
  unsigned phys_state = 0;
  Guid node_guid;
  Guid port_guid;
  int rank() const {
    if (state == kPortStateActive) return 2;
    if (phys_state == kPhysLinkUp) return 1;
    return 0;
  }
};

// umad_get_ca() for one CA; every port it lists (switches list port 0 only).
Result<std::vector<Candidate>> ports_of(const std::string& ca_name) {
  umad_ca_t ca{};
  if (int r = umad_get_ca(ca_name.c_str(), &ca); r < 0) {
    return Error{Errc::kIo,
                 fmt::format("cannot read InfiniBand device \"{}\": {}", ca_name, errno_text(-r))};
  }
  std::vector<Candidate> out;
  for (int i = 0; i < UMAD_CA_MAX_PORTS; ++i) {
    const umad_port_t* p = ca.ports[i];
    if (p == nullptr) continue;
    Candidate c;
    c.ca = ca_name;
    c.port = static_cast<PortNum>(p->portnum);
    c.state = p->state;
    c.phys_state = p->phys_state;
    c.node_guid = Guid{be64toh(ca.node_guid)};
    c.port_guid = Guid{be64toh(p->port_guid)};
    out.push_back(c);
  }
  umad_release_ca(&ca);
  return out;
}

Result<Candidate> select_port(const UmadOptions& opts) {
  // umad_get_ca_device_list, not umad_get_cas_names: the latter invents a
  // default name ("mthca0") when there is no device at all.
  std::vector<std::string> cas;
  umad_device_node* list = umad_get_ca_device_list();
  for (const umad_device_node* d = list; d != nullptr; d = d->next) cas.emplace_back(d->ca_name);
  umad_free_ca_device_list(list);
  if (cas.empty()) return Error{Errc::kNotFound, kNoDevice};

  std::vector<std::string> search = cas;
  if (!opts.ca.empty()) {
    bool known = false;
    for (const std::string& c : cas) known = known || c == opts.ca;
    if (!known) {
      return Error{Errc::kNotFound,
                   fmt::format("fabric.ca: no InfiniBand device \"{}\" (found: {})", opts.ca,
                               fmt::join(cas, ", "))};
    }
    search = {opts.ca};
  }

  std::optional<Candidate> best;
  for (const std::string& ca : search) {
    auto ports = ports_of(ca);
    if (!ports.ok()) return ports.error();
    if (opts.port != 0) {
      std::vector<unsigned> have;
      for (const Candidate& c : *ports) {
        if (c.port == opts.port) return c;
        have.push_back(c.port);
      }
      return Error{Errc::kNotFound,
                   fmt::format("fabric.port: InfiniBand device \"{}\" has no port {} (ports: {})",
                               ca, opts.port, fmt::join(have, ", "))};
    }
    for (const Candidate& c : *ports) {
      if (!best || c.rank() > best->rank()) best = c;
    }
  }
  if (!best) {
    return Error{Errc::kNotFound, opts.ca.empty()
                                      ? std::string(kNoDevice)
                                      : fmt::format("fabric.ca: InfiniBand device \"{}\" "
                                                    "reports no ports",
                                                    opts.ca)};
  }
  return *best;
}

// "/dev/infiniband/issm3" -> "/dev/infiniband/umad3" (same device number).
std::string umad_path_from_issm(const std::string& issm) {
  const auto pos = issm.rfind("issm");
  if (pos == std::string::npos) return "/dev/infiniband/umad*";
  std::string s = issm;
  s.replace(pos, 4, "umad");
  return s;
}

using MethodMask = long[16 / sizeof(long)];

void set_method(MethodMask& mask, unsigned method) {
  constexpr unsigned kBits = sizeof(long) * CHAR_BIT;
  mask[method / kBits] |= 1L << (method % kBits);
}

}  // namespace

Error device_open_error(std::string_view what, const std::string& path, int err,
                        const std::string& port_desc) {
  if (err == EACCES || err == EPERM) {
    return Error{Errc::kIo, fmt::format("permission denied on {} ({}): run as root or join the "
                                        "group that owns it (usually rdma)",
                                        path, port_desc)};
  }
  if (err == ENOENT || err == ENODEV || err == ENXIO) {
    return Error{Errc::kNotFound, fmt::format("{} for {} does not exist: {} (is ib_umad loaded?)",
                                              path, port_desc, errno_text(err))};
  }
  return Error{Errc::kIo, fmt::format("cannot open {} ({}) for {}: {}", path, what, port_desc,
                                      errno_text(err))};
}

Result<std::unique_ptr<UmadTransport>> UmadTransport::open(const UmadOptions& opts) {
  if (umad_init() < 0) return Error{Errc::kNotFound, kNoDevice};
  auto selected = select_port(opts);
  if (!selected.ok()) return selected.error();
  const Candidate c = *selected;
  const std::string port_desc = fmt::format("\"{}\" port {}", c.ca, c.port);

  std::unique_ptr<UmadTransport> t(new UmadTransport());
  t->opts_ = opts;
  t->local_ = LocalPort{c.node_guid, c.port_guid, c.port, c.ca};

  std::array<char, 256> issm{};
  if (umad_get_issm_path(c.ca.c_str(), c.port, issm.data(), static_cast<int>(issm.size())) < 0) {
    return Error{Errc::kNotFound,
                 fmt::format("no issm device for {} (is ib_umad loaded?)", port_desc)};
  }
  t->issm_path_ = issm.data();
  t->umad_path_ = umad_path_from_issm(t->issm_path_);

  errno = 0;
  t->port_id_ = umad_open_port(c.ca.c_str(), c.port);
  if (t->port_id_ < 0) {
    // libibumad reports every open failure as -EIO; errno and access() say why.
    int err = errno != 0 ? errno : -t->port_id_;
    if (err == EIO && ::access(t->umad_path_.c_str(), R_OK | W_OK) != 0) err = errno;
    t->port_id_ = -1;
    return device_open_error("umad", t->umad_path_, err, port_desc);
  }
  // umad_size() is only final once a port is open: opening enables the P_Key
  // index in the header (the "new" umad ABI), which moves the MAD 8 bytes on.
  t->send_buf_.assign(umad_size() + kMadSize, 0);

  // The method mask of an SM (as OpenSM's vendor layer): Get/Set requests to
  // us (SMInfo), Trap and TrapRepress. Responses to our own requests need no
  // mask bit: the kernel matches them by TID.
  MethodMask mask{};
  for (mad::Method m :
       {mad::Method::kGet, mad::Method::kSet, mad::Method::kTrap, mad::Method::kTrapRepress}) {
    set_method(mask, static_cast<unsigned>(m));
  }
  t->agent_dr_ = umad_register(t->port_id_, kClassDirected, 1, 0, mask);
  if (t->agent_dr_ >= 0) t->agent_lid_ = umad_register(t->port_id_, kClassLid, 1, 0, mask);
  if (t->agent_dr_ < 0 || t->agent_lid_ < 0) {
    const int r = t->agent_dr_ < 0 ? t->agent_dr_ : t->agent_lid_;
    return Error{Errc::kConflict,
                 fmt::format("cannot register the subnet management classes on {} ({}): {} "
                             "(is another SM, e.g. opensm, running on this port?)",
                             port_desc, t->umad_path_, errno_text(-r))};
  }

  // The performance manager's client agent (class 0x04, version 1): no
  // method mask, so it gets only the answers to its own requests (another
  // PMA client on the port, e.g. perfquery, registers its own). Without it
  // PMA requests fail with an error naming why; the SM does not depend on it.
  t->agent_pma_ =
      umad_register(t->port_id_, mad::pma::kMgmtClass, mad::pma::kClassVersion, 0, nullptr);

  // Holding issmN sets IsSM in our PortInfo.CapabilityMask; O_NONBLOCK makes
  // "another SM holds it" an EAGAIN instead of a wait. Nothing is read or
  // written on it, so read-only (as OpenSM) needs the least permission.
  t->issm_fd_ = ::open(t->issm_path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (t->issm_fd_ < 0) {
    const int err = errno;
    t->issm_fd_ = -1;
    if (err == EAGAIN || err == EBUSY) {
      return Error{Errc::kConflict,
                   fmt::format("{} is held by another SM (is opensm running on {}?)", t->issm_path_,
                               port_desc)};
    }
    return device_open_error("issm", t->issm_path_, err, port_desc);
  }

  t->event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (t->event_fd_ < 0) {
    return Error{Errc::kIo, fmt::format("eventfd: {}", errno_text(errno))};
  }

  SmAgentOptions ao;
  ao.port_guid = c.port_guid;
  ao.priority = opts.sm_priority;
  ao.state = opts.sm_state;
  ao.sm_key = opts.sm_key;
  t->agent_ = std::make_unique<SmAgent>(ao);

  umad_port_t port{};
  if (umad_get_port(c.ca.c_str(), c.port, &port) == 0) {
    if (port.base_lid != 0) t->local_lid_.store(port.base_lid);
    umad_release_port(&port);
  }

  t->receiver_ = std::thread([raw = t.get()] { raw->receiver_loop(); });
  return t;
}

UmadTransport::~UmadTransport() {
  stop_.store(true);
  if (receiver_.joinable()) receiver_.join();
  {
    std::lock_guard lock(gmp_mu_);
    gmp_stop_ = true;
  }
  gmp_cv_.notify_all();
  if (gmp_thread_.joinable()) gmp_thread_.join();
  if (issm_fd_ >= 0) ::close(issm_fd_);
  if (port_id_ >= 0) {
    for (const GmpAgent& g : gmp_) umad_unregister(port_id_, g.agent);
    if (agent_pma_ >= 0) umad_unregister(port_id_, agent_pma_);
    if (agent_lid_ >= 0) umad_unregister(port_id_, agent_lid_);
    if (agent_dr_ >= 0) umad_unregister(port_id_, agent_dr_);
    umad_close_port(port_id_);
  }
  if (event_fd_ >= 0) ::close(event_fd_);
}

std::string UmadTransport::name() const {
  return fmt::format("umad:{}:{}", local_.ca_name, local_.port_num);
}

std::chrono::nanoseconds UmadTransport::now() const {
  return std::chrono::steady_clock::now().time_since_epoch();
}

Result<void> UmadTransport::send(const Mad& mad) {
  caller_.check();
  const auto method = static_cast<mad::Method>(mad.data[3]);
  const bool request = method == mad::Method::kGet || method == mad::Method::kSet;
  return send_raw(mad, request);
}

Result<void> UmadTransport::send_raw(const Mad& mad, bool expect_response) {
  const std::uint8_t mgmt_class = mad.data[1];
  int agent = -1;
  std::uint32_t dlid = mad.dlid;
  if (mgmt_class == kClassDirected) {
    agent = agent_dr_;
    dlid = mad::kPermissiveLid;
  } else if (mgmt_class == kClassLid) {
    agent = agent_lid_;
  } else if (mgmt_class == mad::pma::kMgmtClass) {
    if (agent_pma_ < 0) {
      return Error{Errc::kUnsupported,
                   fmt::format("{}: no PMA client agent (class 0x04 registration failed: {})",
                               name(), errno_text(-agent_pma_))};
    }
    agent = agent_pma_;
  } else {
    return Error{
        Errc::kInvalidArgument,
        fmt::format("{}: management class {:#04x} is not an SMP class", name(), mgmt_class)};
  }
  if (dlid == 0 || dlid > 0xFFFF) {
    return Error{Errc::kOutOfRange,
                 fmt::format("{}: destination LID {:#x} does not fit the 16-bit IBA LID of the "
                             "umad address header",
                             name(), dlid)};
  }
  std::lock_guard lock(send_mu_);
  std::memset(send_buf_.data(), 0, send_buf_.size());
  std::memcpy(umad_get_mad(send_buf_.data()), mad.data.data(), kMadSize);
  if (mgmt_class == mad::pma::kMgmtClass) {
    // A GMP: QP1 with the GSI Q_Key.
    umad_set_addr(send_buf_.data(), static_cast<int>(dlid), 1, 0,
                  static_cast<int>(mad::pma::kQkey));
  } else {
    umad_set_addr(send_buf_.data(), static_cast<int>(dlid), 0, 0, 0);
  }
  const int timeout_ms = expect_response ? static_cast<int>(opts_.request_timeout.count()) : 0;
  const int r = umad_send(port_id_, agent, send_buf_.data(), static_cast<int>(kMadSize),
                          std::max(timeout_ms, expect_response ? 1 : 0), 0);
  if (r < 0) {
    send_errors_.fetch_add(1, std::memory_order_relaxed);
    return Error{Errc::kIo, fmt::format("{}: umad_send to LID {:#x}: {}", name(), dlid,
                                        errno_text(errno != 0 ? errno : -r))};
  }
  sent_.fetch_add(1, std::memory_order_relaxed);
  return {};
}

Result<std::optional<Mad>> UmadTransport::receive(std::chrono::microseconds timeout) {
  caller_.check();
  std::unique_lock lock(mu_);
  if (queue_.empty() && !fatal_ && timeout.count() > 0) {
    cv_.wait_for(lock, timeout, [this] { return !queue_.empty() || fatal_.has_value(); });
  }
  if (!queue_.empty()) {
    Mad m = queue_.front();
    queue_.pop_front();
    if (queue_.empty()) {
      // Readable exactly while the queue is non-empty.
      std::uint64_t drained = 0;
      [[maybe_unused]] const auto n = ::read(event_fd_, &drained, sizeof drained);
    }
    return std::optional<Mad>(m);
  }
  if (fatal_) return *fatal_;
  return std::optional<Mad>();
}

Result<void> UmadTransport::serve_gmp_class(std::uint8_t mgmt_class, GmpServer server) {
  caller_.check();
  // Requests a class server answers (IBA 13.4.5; the SA's GetTable,
  // GetTraceTable, GetMulti and Delete among them).
  MethodMask mask{};
  for (unsigned m : {0x01U, 0x02U, 0x12U, 0x13U, 0x14U, 0x15U}) set_method(mask, m);
  const int version = mgmt_class == kClassSa ? 2 : 1;
  const int agent = umad_register(port_id_, mgmt_class, version, kRmppVersion, mask);
  if (agent < 0) {
    return Error{Errc::kConflict,
                 fmt::format("{}: cannot register management class {:#04x}: {} (does another SM "
                             "or agent serve it on this port?)",
                             name(), mgmt_class, errno_text(-agent))};
  }
  std::lock_guard lock(gmp_mu_);
  gmp_.push_back({mgmt_class, agent, std::make_shared<const GmpServer>(std::move(server))});
  if (!gmp_thread_.joinable()) gmp_thread_ = std::thread([this] { gmp_loop(); });
  return {};
}

Result<void> UmadTransport::send_gmp(std::uint32_t dlid, std::uint32_t qpn,
                                     std::span<const std::uint8_t> mad) {
  // IBA 13.4.6.4: a Report is resent until its ReportResp arrives; one
  // second apart, three more times, is what OpenSM's SA gives a
  // subscriber too.
  constexpr int kReportTimeoutMs = 1000;
  constexpr int kReportRetries = 3;
  if (mad.size() != kMadSize) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("{}: a GMP is {} bytes, not {}", name(), kMadSize, mad.size())};
  }
  int agent = -1;
  {
    std::lock_guard lock(gmp_mu_);
    for (const GmpAgent& g : gmp_) {
      if (g.mgmt_class == mad[1]) agent = g.agent;
    }
  }
  if (agent < 0) {
    return Error{Errc::kUnsupported,
                 fmt::format("{}: management class {:#04x} is not served here", name(), mad[1])};
  }
  std::vector<std::uint8_t> buf(umad_size() + kMadSize, 0);
  std::memcpy(umad_get_mad(buf.data()), mad.data(), kMadSize);
  umad_set_addr(buf.data(), static_cast<int>(dlid), static_cast<int>(qpn), 0,
                static_cast<int>(kGsiQKey));
  std::lock_guard lock(send_mu_);
  const int r = umad_send(port_id_, agent, buf.data(), static_cast<int>(kMadSize), kReportTimeoutMs,
                          kReportRetries);
  if (r < 0) {
    send_errors_.fetch_add(1, std::memory_order_relaxed);
    return Error{Errc::kIo, fmt::format("{}: umad_send: {}", name(), errno_text(-r))};
  }
  return {};
}

void UmadTransport::gmp_loop() {
  // Everything queued is taken at once (up to kGmpBatch) and handed to its
  // server in one call, in arrival order: a burst of SA queries is worked
  // on together (the SA overlaps its table reads across them).
  constexpr std::size_t kGmpBatch = 64;
  std::vector<GmpJob> jobs;
  std::vector<GmpRequest> requests;
  for (;;) {
    jobs.clear();
    {
      std::unique_lock lock(gmp_mu_);
      gmp_cv_.wait(lock, [this] { return gmp_stop_ || !gmp_jobs_.empty(); });
      if (gmp_stop_) return;
      while (!gmp_jobs_.empty() && jobs.size() < kGmpBatch) {
        jobs.push_back(std::move(gmp_jobs_.front()));
        gmp_jobs_.pop_front();
      }
    }
    // One call per run of jobs for the same server.
    for (std::size_t at = 0; at < jobs.size();) {
      std::size_t end = at;
      requests.clear();
      while (end < jobs.size() && jobs[end].server == jobs[at].server) {
        requests.push_back(
            {jobs[end].request, static_cast<std::uint32_t>(be16toh(jobs[end].from.lid))});
        ++end;
      }
      const std::vector<GmpAnswer> answers = (*jobs[at].server)(requests);
      for (std::size_t i = at; i < end; ++i) {
        if (i - at < answers.size()) send_gmp(jobs[i], answers[i - at]);
      }
      at = end;
    }
  }
}

void UmadTransport::send_gmp(const GmpJob& job,
                             const std::vector<std::array<std::uint8_t, kMadSize>>& mads) {
  if (mads.empty()) return;
  // The kernel wants one buffer: the header of the first packet, then the
  // data of all of them, as long as the RMPP payload length says.
  constexpr std::size_t kGmpHeader = 56;  // common + RMPP + class header (SA)
  std::vector<std::uint8_t> payload(mads[0].begin(), mads[0].end());
  const bool rmpp_active = (mads[0][26] & 0x1) != 0;
  if (rmpp_active) {
    const std::uint32_t paylen = (std::uint32_t{mads[0][32]} << 24) |
                                 (std::uint32_t{mads[0][33]} << 16) |
                                 (std::uint32_t{mads[0][34]} << 8) | mads[0][35];
    const std::size_t data_bytes = paylen >= 20 ? paylen - 20 : 0;
    payload.resize(kGmpHeader);
    for (const auto& m : mads) payload.insert(payload.end(), m.begin() + kGmpHeader, m.end());
    payload.resize(kGmpHeader + data_bytes, 0);
  }
  std::vector<std::uint8_t> buf(umad_size() + payload.size(), 0);
  std::memcpy(umad_get_mad(buf.data()), payload.data(), payload.size());
  const ib_mad_addr_t& from = job.from;
  umad_set_addr(buf.data(), be16toh(from.lid), static_cast<int>(be32toh(from.qpn)), from.sl,
                static_cast<int>(kGsiQKey));
  umad_set_pkey(buf.data(), job.pkey_index);
  if (from.grh_present) {
    ib_mad_addr_t host = from;  // umad_set_grh takes the flow label in host order
    host.flow_label = be32toh(from.flow_label);
    umad_set_grh(buf.data(), &host);
  }
  std::lock_guard lock(send_mu_);
  const int r = umad_send(port_id_, job.agent, buf.data(), static_cast<int>(payload.size()), 0, 0);
  if (r < 0) {
    send_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  gmp_answered_.fetch_add(1, std::memory_order_relaxed);
}

std::optional<Mad> UmadTransport::take(const std::uint8_t* data, std::size_t len,
                                       const void* umad_buf) {
  const auto src_lid =
      static_cast<std::uint16_t>(be16toh(umad_get_mad_addr(const_cast<void*>(umad_buf))->lid));
  // A request for a GMP class we serve (the class byte of the common
  // header): queued for the GMP thread.
  if (len >= kMadSize && data[1] != kClassLid && data[1] != kClassDirected) {
    bool served = false;
    bool queued = false;
    {
      std::lock_guard lock(gmp_mu_);
      for (const GmpAgent& g : gmp_) {
        if (g.mgmt_class != data[1]) continue;
        served = true;
        if (gmp_jobs_.size() >= opts_.max_gmp_queued) break;
        GmpJob& job = gmp_jobs_.emplace_back();
        std::memcpy(job.request.data(), data, kMadSize);
        job.from = *umad_get_mad_addr(const_cast<void*>(umad_buf));
        job.pkey_index = umad_get_pkey(const_cast<void*>(umad_buf));
        job.agent = g.agent;
        job.server = g.server;
        queued = true;
        break;
      }
    }
    if (served) {
      if (queued) {
        gmp_cv_.notify_one();
      } else {
        gmp_dropped_.fetch_add(1, std::memory_order_relaxed);
      }
      return std::nullopt;
    }
  }
  Mad m;
  std::memcpy(m.data.data(), data, std::min(len, kMadSize));
  if (len >= kMadSize && data[1] == mad::pma::kMgmtClass) {
    // The answer to one of the performance manager's requests: the engine
    // matches it by TID.
    m.slid = src_lid;
    m.dlid = local_lid_.load(std::memory_order_relaxed);
    return m;
  }
  auto smp = mad::decode_smp(m.data, mad::DecodeOptions{.allow_unknown_attribute = true});
  if (!smp.ok()) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  // Our own port's LID passes by in the PortInfo answers of our port (zero
  // hops): the Sweeper reads it, the Programmer sets it.
  if (smp->is_response() && smp->directed() && smp->hop_count == 0 &&
      smp->attr_id == mad::AttrId::kPortInfo && smp->status == mad::status::kOk) {
    const auto pi = mad::PortInfo::decode(mad::data_of(*smp));
    if (pi.lid != 0) local_lid_.store(pi.lid, std::memory_order_relaxed);
  }
  m.slid = src_lid;
  m.dlid = smp->directed() ? mad::kPermissiveLid : local_lid_.load(std::memory_order_relaxed);

  if (!smp->is_response()) {
    const auto act = static_cast<std::uint32_t>(sent_.load(std::memory_order_relaxed));
    if (auto reply = agent_->answer(*smp, m, act)) {
      if (send_raw(*reply, false).ok()) answered_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
  }
  return m;
}

void UmadTransport::publish(std::vector<Mad>& batch) {
  if (batch.empty()) return;
  {
    std::lock_guard lock(mu_);
    const bool was_empty = queue_.empty();
    std::size_t taken = 0;
    for (Mad& m : batch) {
      if (queue_.size() >= opts_.max_queued) break;
      queue_.push_back(m);
      ++taken;
    }
    queued_.fetch_add(taken, std::memory_order_relaxed);
    queue_full_.fetch_add(batch.size() - taken, std::memory_order_relaxed);
    if (was_empty && !queue_.empty()) {
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto n = ::write(event_fd_, &one, sizeof one);
    }
  }
  cv_.notify_one();
  batch.clear();
}

void UmadTransport::receiver_loop() {
  constexpr std::size_t kBatch = 256;
  std::vector<std::uint8_t> buf(umad_size() + kMadSize);
  std::vector<Mad> batch;
  batch.reserve(kBatch);
  auto fail = [this](std::string message) {
    std::lock_guard lock(mu_);
    fatal_ = Error{Errc::kIo, std::move(message)};
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(event_fd_, &one, sizeof one);
    cv_.notify_all();
  };
  const int fd = umad_get_fd(port_id_);
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, kReceiverPollMs);
    if (ready < 0) {
      if (errno == EINTR) continue;
      fail(fmt::format("{}: poll on {}: {}", name(), umad_path_, errno_text(errno)));
      return;
    }
    if (ready == 0) continue;
    if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 && (p.revents & POLLIN) == 0) {
      fail(fmt::format("{}: {} reports an error (device removed?)", name(), umad_path_));
      return;
    }
    // Read everything that is ready.
    for (;;) {
      int len = static_cast<int>(kMadSize);
      errno = 0;
      const int agent = umad_recv(port_id_, buf.data(), &len, 0);
      if (agent < 0) {
        const int err = -agent;
        if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT) break;
        if (err == EINTR) continue;
        if (err == ENOSPC && len > static_cast<int>(kMadSize)) {
          // Not an SMP (SMPs are 256 bytes): read it into a big enough buffer and drop it.
          std::vector<std::uint8_t> big(umad_size() + static_cast<std::size_t>(len));
          int big_len = len;
          if (umad_recv(port_id_, big.data(), &big_len, 0) >= 0)
            malformed_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        publish(batch);  // what was read before the error still counts
        fail(fmt::format("{}: umad_recv on {}: {}", name(), umad_path_, errno_text(err)));
        return;
      }
      received_.fetch_add(1, std::memory_order_relaxed);
      if (umad_status(buf.data()) != 0) {
        // The kernel's (or ibsim's) "no response / undeliverable" for one of
        // our requests; the MAD engine times it out and retries on its own.
        kernel_timeouts_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (len < 24) {  // shorter than the common MAD header
        malformed_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (auto m = take(static_cast<const std::uint8_t*>(umad_get_mad(buf.data())),
                        static_cast<std::size_t>(len), buf.data())) {
        batch.push_back(*m);
        // Hand over in batches: one lock and one wake-up for all that was ready.
        if (batch.size() >= kBatch) publish(batch);
      }
    }
    publish(batch);
  }
}

UmadStats UmadTransport::stats() const {
  UmadStats s;
  s.sent = sent_.load();
  s.received = received_.load();
  s.queued = queued_.load();
  s.answered = answered_.load();
  s.kernel_timeouts = kernel_timeouts_.load();
  s.malformed = malformed_.load();
  s.queue_full = queue_full_.load();
  s.send_errors = send_errors_.load();
  s.gmp_answered = gmp_answered_.load();
  s.gmp_dropped = gmp_dropped_.load();
  return s;
}

}  // namespace subnetd::discovery::umad

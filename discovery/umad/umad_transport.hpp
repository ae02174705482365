#pragma once
// UmadTransport: the Transport over libibumad — real HCAs through the kernel's
// ib_umad, or ibsim through umad2sim (LD_PRELOAD=libumad2sim.so), unchanged.
//
// Opening (open()):
//  - picks the CA and port: the configured ones, or the first CA with a port
//    that is ACTIVE, else one whose link is physically up (before an SM has
//    run, ports are INIT with the link up), else the first port;
//  - registers two agents on one umad fd, SMI LID-routed (0x01) and
//    directed-route (0x81), with the method mask of an SM (Get, Set, Trap,
//    TrapRepress as requests, like OpenSM's vendor layer), so the kernel hands
//    us the responses to our requests *and* the unsolicited MADs for the SM;
//  - opens /dev/infiniband/issmN and keeps it open: that is how the IsSM bit
//    of the port's CapabilityMask is set (the kernel does it for the holder of
//    issmN; umad2sim tells ibsim, which then routes traps and SM requests to
//    us). CapabilityMask is read-only to SMPs, so a PortInfo Set cannot do it.
//
// Sending: directed-route SMPs go to the permissive LID 0xFFFF, LID-routed
// ones to Mad::dlid, QP0, both with Q_Key 0. Requests (Get/Set) carry a kernel
// timeout (`request_timeout`) and no kernel retries: the kernel MAD layer
// only passes on a response that matches an outstanding send, and the caller
// (the MAD engine) owns retries. Responses, traps and TrapRepress carry none.
//
// Receiving: a receiver thread (besides the caller's, and the GMP thread once
// a GMP class is served) waits in
// poll() on the umad fd and reads everything ready. It
//  - drops the kernel's "send timed out" notices (status != 0): the caller
//    has its own timers;
//  - answers requests to the SM (SMInfo Get, ...) at once through SmAgent —
//    so `sminfo` and other SMs get an answer even while the SM strand is busy
//    routing — and does not queue them (an SMInfo Set is queued: the SM's
//    election answers it);
//  - queues everything else (responses, traps) for receive(), mapping the
//    umad address header into Mad: slid = the sender's LID, dlid = 0xFFFF for
//    directed route, else our port's LID (tracked from the PortInfo of our own
//    port as it passes by: the umad header does not carry the DLID).
// event_fd() is an eventfd that is readable exactly while that queue is
// non-empty, so an epoll/asio loop can wait on it (the umad fd itself cannot
// be used that way under umad2sim: it is a fake descriptor that only its
// poll()/read() wrappers understand).
//
// GMP classes (serve_gmp_class: the SA, class 0x03) get an agent of their
// own on QP1, registered with kernel RMPP. The receiver thread queues
// their requests for a GMP thread of their own (a table of every record
// at 128k endpoints takes tens of milliseconds, which would hold up the
// SMP answers behind it), which hands the server what has queued up (up
// to 64 requests at a time, in arrival order) and sends each
// answer back to the requester's LID and QP with the GSI Q_Key. Past
// `max_gmp_queued` waiting requests, new ones are dropped and counted
// (clients retry). A multi-packet answer goes to the kernel
// as one buffer (header + all records), which segments it; umad2sim has
// no RMPP and delivers only the first packet, as it does for OpenSM.
//
// Traps are delivered, not repressed here: the SM core sends TrapRepress
// (with send(), LID-routed back to Mad::slid), as it does for every backend.
//
// Threading: send/receive/now/local_port/name/serve_gmp_class from one
// thread (the SM strand's, or main's before the SM starts), as the
// Transport contract says; sm_agent() and stats() from any. GMP servers
// run on the GMP thread.

#include <infiniband/umad.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "discovery/sm_agent.hpp"
#include "discovery/transport.hpp"
#include "routing/result.hpp"
#include "routing/thread_check.hpp"

namespace subnetd::discovery::umad {

struct UmadOptions {
  std::string ca;    // empty = first CA with a usable port
  PortNum port = 0;  // 0 = the first usable port of the CA (see above)
  // Kernel timeout on requests; a response later than this is dropped by the
  // kernel, so keep it >= the MAD engine's timeout.
  std::chrono::milliseconds request_timeout{100};
  // The SM's identity as the SmAgent answers it from the start; the SM
  // moves the state as the election goes (SmAgent's setters).
  std::uint8_t sm_priority = 15;
  std::uint64_t sm_key = 0;
  SmState sm_state = SmState::kDiscovering;
  // Queue bound for received MADs nobody has taken yet; past it new MADs are
  // dropped and counted.
  std::size_t max_queued = 1 << 16;
  // Bound for GMP (SA) requests waiting for the GMP thread.
  std::size_t max_gmp_queued = 1024;
};

struct UmadStats {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;         // MADs read from the fd
  std::uint64_t queued = 0;           // handed to receive()
  std::uint64_t answered = 0;         // requests answered by the SmAgent
  std::uint64_t gmp_answered = 0;     // GMP requests answered (SA, ...)
  std::uint64_t gmp_dropped = 0;      // GMP requests dropped: the GMP queue was full
  std::uint64_t kernel_timeouts = 0;  // kernel "no response" notices dropped
  std::uint64_t malformed = 0;        // not an SMP we can decode (dropped)
  std::uint64_t queue_full = 0;       // dropped: receive() fell behind
  std::uint64_t send_errors = 0;
};

// The error for a failed open() of a umad or issm device node: permission
// denied says so and how to fix it, a missing node points at ib_umad.
// `what` is "umad" or "issm"; exposed for tests.
Error device_open_error(std::string_view what, const std::string& path, int err,
                        const std::string& port_desc);

class UmadTransport final : public Transport {
 public:
  static Result<std::unique_ptr<UmadTransport>> open(const UmadOptions& opts);
  ~UmadTransport() override;
  UmadTransport(const UmadTransport&) = delete;
  UmadTransport& operator=(const UmadTransport&) = delete;

  Result<void> send(const Mad& mad) override;
  Result<std::optional<Mad>> receive(std::chrono::microseconds timeout) override;
  std::chrono::nanoseconds now() const override;
  LocalPort local_port() const override { return local_; }
  int event_fd() const override { return event_fd_; }
  std::string name() const override;
  // Registers an agent for the class on QP1 (with kernel RMPP, so that a
  // multi-packet answer is sent as one buffer and the kernel segments it)
  // and answers its requests from the receiver thread.
  Result<void> serve_gmp_class(std::uint8_t mgmt_class, GmpServer server) override;
  // A Report (or any GMP request of a class we serve) to `dlid`/`qpn`,
  // sent by the class's agent with a response timeout: the kernel resends
  // it until the ReportResp comes back (which reaches the class server as
  // a response) or the retries run out (counted as a kernel timeout).
  Result<void> send_gmp(std::uint32_t dlid, std::uint32_t qpn,
                        std::span<const std::uint8_t> mad) override;

  SmAgent* sm_agent() override { return agent_.get(); }
  UmadStats stats() const;
  // The umad device node the port was opened through (/dev/infiniband/umadN).
  const std::string& device_path() const { return umad_path_; }

 private:
  UmadTransport() = default;
  Result<void> send_raw(const Mad& mad, bool expect_response);
  void receiver_loop();
  // One received MAD: answered here (SM requests, nullopt) or to be queued.
  std::optional<Mad> take(const std::uint8_t* mad, std::size_t len, const void* umad_buf);
  // A GMP request waiting for the GMP thread: the request, who sent it
  // (the umad address and P_Key index of the request) and who answers.
  struct GmpJob {
    std::array<std::uint8_t, kMadSize> request{};
    ib_mad_addr_t from{};
    int pkey_index = 0;
    int agent = -1;
    std::shared_ptr<const GmpServer> server;
  };
  void gmp_loop();
  // Sends the answer of a GMP server back to where the request came from.
  void send_gmp(const GmpJob& job, const std::vector<std::array<std::uint8_t, kMadSize>>& mads);
  // Queues a batch for receive() under one lock, one wake-up; empties it.
  void publish(std::vector<Mad>& batch);

  UmadOptions opts_;
  LocalPort local_;
  std::string umad_path_;
  std::string issm_path_;
  int port_id_ = -1;  // umad_open_port handle
  int issm_fd_ = -1;
  int agent_lid_ = -1;  // class 0x01
  int agent_dr_ = -1;   // class 0x81
  int agent_pma_ = -1;  // class 0x04, a client (the performance manager)
  int event_fd_ = -1;
  std::unique_ptr<SmAgent> agent_;
  struct GmpAgent {
    std::uint8_t mgmt_class = 0;
    int agent = -1;
    std::shared_ptr<const GmpServer> server;
  };
  // gmp_mu_ guards gmp_ (registered from the caller, read by the
  // receiver), gmp_jobs_ and gmp_stop_; the GMP thread waits on gmp_cv_.
  mutable std::mutex gmp_mu_;
  std::vector<GmpAgent> gmp_;
  std::condition_variable gmp_cv_;
  std::deque<GmpJob> gmp_jobs_;
  bool gmp_stop_ = false;
  std::thread gmp_thread_;

  std::mutex send_mu_;  // umad_send from the caller and the receiver thread
  std::vector<std::uint8_t> send_buf_;

  mutable std::mutex mu_;  // guards queue_, fatal_
  std::condition_variable cv_;
  std::deque<Mad> queue_;
  std::optional<Error> fatal_;  // the receiver thread stopped on this

  std::atomic<bool> stop_{false};
  std::atomic<std::uint32_t> local_lid_{0xFFFF};
  std::atomic<std::uint64_t> sent_{0}, received_{0}, queued_{0}, answered_{0}, kernel_timeouts_{0},
      malformed_{0}, queue_full_{0}, send_errors_{0}, gmp_answered_{0}, gmp_dropped_{0};
  std::thread receiver_;
  ThreadAffinity caller_;  // send/receive/now: the one caller's thread (debug check)
};

}  // namespace subnetd::discovery::umad

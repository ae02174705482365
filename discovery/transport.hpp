#pragma once
// Transport: how subnetd sends and receives management datagrams (MADs).
//
// Backends: discovery/sim (the embedded simulated fabric, in process) and
// discovery/umad (libibumad: real HCAs, or ibsim under umad2sim). The API is
// the shape of libibumad's: send a MAD, receive the next one. The caller (the
// Sweeper, the Programmer, the daemon) owns transaction ids, windows, timeouts
// and retries; the transport only moves bytes.
//
// Threading: send/receive/now are called from one thread (the SM strand).
// A backend may be poked from other threads only through its own documented
// thread-safe calls (e.g. the simulator's fault-injection API); such events
// surface through receive() and wake event_fd().

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/result.hpp"

namespace subnetd::discovery {

class SmAgent;

inline constexpr std::size_t kMadSize = 256;

struct Mad {
  std::array<std::uint8_t, kMadSize> data{};
  // Addressing outside the MAD bytes (the LRH / umad address header).
  // For LID-routed SMPs: destination and source LID (up to 24 bits in the
  // extended modes); for directed-route SMPs dlid is 0xFFFF (permissive).
  std::uint32_t dlid = 0xFFFF;
  std::uint32_t slid = 0xFFFF;
};

// A server for one GMP management class on QP1 (the SA, class 0x03): given
// requests (each one's 256 bytes and the LID it came from), the MADs of
// each answer (answers[i] for requests[i]: one MAD, or the RMPP segments of
// a multi-packet answer; none to drop it). A backend hands over what has
// queued up since the last call, in arrival order, so that a server can
// work on a burst together. Called on whatever thread the backend serves
// GMPs on: it must be thread-safe and must not block.
struct GmpRequest {
  std::span<const std::uint8_t> bytes;
  std::uint32_t slid = 0;
};
using GmpAnswer = std::vector<std::array<std::uint8_t, kMadSize>>;
using GmpServer = std::function<std::vector<GmpAnswer>(std::span<const GmpRequest> requests)>;

// The SM's own attachment point.
struct LocalPort {
  Guid node_guid;
  Guid port_guid;
  PortNum port_num = 1;
  std::string ca_name;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Queues one MAD for sending. An error is local (device gone, bad MAD size);
  // a lost packet is not an error here but a receive() timeout later.
  virtual Result<void> send(const Mad& mad) = 0;

  // Waits up to `timeout` for the next MAD addressed to us: a response, a
  // trap, or a request to the SM (e.g. SMInfo Get). nullopt on timeout.
  virtual Result<std::optional<Mad>> receive(std::chrono::microseconds timeout) = 0;

  // The transport's clock. The simulator with a latency model runs on virtual
  // time, so sweeps can be timed as on a real fabric; others use steady_clock.
  virtual std::chrono::nanoseconds now() const = 0;

  virtual LocalPort local_port() const = 0;

  // A file descriptor that becomes readable when receive() has something
  // (for an event loop); -1 if the backend has none.
  virtual int event_fd() const { return -1; }
  // Whether anyone watches event_fd() now. A virtual-time transport whose
  // engine is pumping it anyway (requests in flight) may then skip the
  // syscalls that keep the fd's readiness in step, two per answer; when
  // watched again it must be readable if receive() has something.
  virtual void watch_event_fd(bool /*watched*/) {}

  // True when now() is a virtual clock that receive(timeout) moves forward
  // instead of waiting (the simulator): the MAD engine then drives time
  // itself rather than setting timers.
  virtual bool virtual_time() const { return false; }

  // Answers requests of GMP class `mgmt_class` sent to our port with
  // `server` from now on. An error when the backend cannot (the class is
  // taken by someone else, or the backend carries no GMPs).
  virtual Result<void> serve_gmp_class(std::uint8_t mgmt_class, GmpServer server) {
    (void)server;
    return Error{Errc::kUnsupported,
                 "this transport does not carry GMP class " + std::to_string(mgmt_class)};
  }

  // Sends one GMP (a request such as an SA Report) from our port's QP1 to
  // `dlid`, queue pair `qpn`, with the GSI Q_Key. The class must be one
  // this transport serves (serve_gmp_class). Thread-safe: the daemon calls
  // it from its own threads. An error when the backend carries no GMPs or
  // the MAD cannot be queued; a lost packet is not an error.
  virtual Result<void> send_gmp(std::uint32_t dlid, std::uint32_t qpn,
                                std::span<const std::uint8_t> mad) {
    (void)dlid;
    (void)qpn;
    (void)mad;
    return Error{Errc::kUnsupported, "this transport does not send GMPs"};
  }

  // The agent that answers requests to the SM (SMInfo Get) as they arrive,
  // on the backend's own receive thread, if the backend has one; the SM
  // keeps its state current. Null: such requests reach receive() and the
  // SM answers them on its strand.
  virtual SmAgent* sm_agent() { return nullptr; }

  // Short name for logs ("sim", "umad:mlx5_0:1").
  virtual std::string name() const = 0;
};

}  // namespace subnetd::discovery

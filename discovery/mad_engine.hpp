#pragma once
// MadEngine: the one way subnetd sends MADs and hears them (STYLE rule 15).
//
// Completion-based. Requests are submitted to a Flow (a sweep, a programming
// pass, the fast path's probes or LFT push, a light sweep ...): the flow
// keeps at most `window` of its requests in flight overall and at most
// `per_destination` per destination (a switch's SMA has a finite queue), and
// each request gets exactly one callback: its answer (status 0 or not), or
// Errc::kTimeout after 1 + retries attempts (a retry reuses the TID, so a
// late answer to an earlier attempt counts). Flows share the engine's TID
// space, its deadline heap and the transport, so any number of them may run
// at once: a heavy sweep's programming pass and the fast path's push, say.
//
// Unsolicited MADs — traps, requests addressed to the SM (SMInfo, later SA
// and PMA) — are handed to the registered handler whenever they arrive,
// whatever flows are running: the SM never goes deaf while it sweeps.
//
// Driving the transport. Nothing blocks the strand:
//  - a transport on real time (umad) signals arrivals on its event_fd(),
//    which is watched in the io_context; deadlines are a steady_timer;
//  - the simulator runs on virtual time (Transport::virtual_time()): while
//    requests are outstanding the engine pumps it, one bounded batch per
//    strand turn, with receive(timeout) moving the virtual clock to the next
//    delivery or deadline; when nothing is outstanding it waits for the
//    event_fd (traps from fault injection).
// Callbacks run inside the pump, on the strand; they may submit more
// requests (that is how a breadth-first sweep unfolds) but must not block.
// A coroutine waits for a flow with `co_await flow.drained()`.
//
// Runs on: the strand given at construction. Every member function, and
// every Flow member function, must be called there (checked in debug builds);
// the engine must outlive its flows.

#include <atomic>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "discovery/coro.hpp"
#include "discovery/mad/smp.hpp"
#include "discovery/strand.hpp"
#include "discovery/transport.hpp"

namespace subnetd::discovery {

struct FlowOptions {
  // Requests in flight at once for this flow (0 is taken as 1).
  unsigned window = 64;
  // Requests in flight at once per destination (the `dest` given at
  // submission); 0 = no per-destination limit.
  unsigned per_destination = 0;
  std::chrono::microseconds timeout{100'000};  // per attempt, transport time
  unsigned retries = 3;                        // resends after the first attempt
  std::uint32_t sm_lid = 0xFFFF;               // SLID of LID-routed requests
  // While an urgent flow has requests pending, the other flows transmit
  // nothing new (what they have in flight completes as usual): the fast
  // path's probes and LFT push have the fabric to themselves while a sweep
  // or a programming pass keeps its window full.
  bool urgent = false;
};

// A destination for a flow's per-destination window: a type of its own so
// that it cannot be passed where a DLID is expected (both were integers).
// Value 0 = none.
struct DestKey {
  std::uint64_t value = 0;
  friend bool operator==(DestKey, DestKey) = default;
};
inline DestKey dest_of(NodeId node) {
  return DestKey{std::uint64_t{node.value} + 1};
}

struct FlowStats {
  std::uint64_t submitted = 0;
  std::uint64_t sent = 0;  // every transmission, retries included
  std::uint64_t retries = 0;
  std::uint64_t timeouts = 0;  // requests that failed after all retries
  std::uint64_t responses = 0;
  std::uint64_t error_status = 0;  // answered with a non-zero MAD status
};

// A counter written by one thread (the strand) and read by any: relaxed
// loads and stores, no read-modify-write (a lock prefix per MAD is not
// free), so a reader sees a value at most a few MADs old.
class StrandCounter {
 public:
  StrandCounter& operator++() {
    v_.store(v_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return *this;
  }
  operator std::uint64_t() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

// The engine's totals since it started; every field may be read from any
// thread (the metrics endpoint does).
struct EngineStats {
  StrandCounter sent;          // requests and unsolicited sends (TrapRepress, replies)
  StrandCounter retries;       // of those, retransmissions of a request
  StrandCounter responses;     // answers to our requests (any status)
  StrandCounter error_status;  // of those, with a non-zero MAD status
  StrandCounter timeouts;      // requests that failed after all retries
  StrandCounter received;      // MADs taken from the transport
  StrandCounter malformed;     // bytes that did not decode as an SMP header
  StrandCounter stray;         // responses to nothing in flight (late, or a dropped flow)
  StrandCounter unsolicited;   // handed to the unsolicited handler
  StrandCounter pumps;         // strand turns spent reading the transport
};

class Flow;

class MadEngine {
 public:
  // A request or trap that is not an answer to one of ours: decoded SMP and
  // the raw MAD (its addressing says where it came from).
  using UnsolicitedHandler = std::function<void(const mad::Smp&, const Mad&)>;

  MadEngine(Strand strand, Transport& transport);
  ~MadEngine();
  MadEngine(const MadEngine&) = delete;
  MadEngine& operator=(const MadEngine&) = delete;

  // Starts watching the transport (its event_fd) for unsolicited MADs.
  // Requests work without it; a transport error stops the engine and is
  // kept in error().
  void start();
  // Cancels the watch and every timer; flows still open get no more
  // callbacks. Idempotent; the engine cannot be restarted.
  void stop();
  bool stopped() const { return stopped_; }

  void set_unsolicited_handler(UnsolicitedHandler h) { unsolicited_ = std::move(h); }
  // Sends a MAD that expects no answer (a TrapRepress, a reply to a request).
  Result<void> send_unsolicited(const Mad& mad);

  Transport& transport() { return transport_; }
  const Strand& strand() const { return strand_; }
  // Any thread (the counters are relaxed atomics).
  const EngineStats& stats() const { return stats_; }
  // The transport error that stopped the engine, if one did.
  const std::optional<Error>& error() const { return error_; }
  // Requests in flight over all flows.
  std::size_t in_flight() const { return in_flight_; }

  // Reads the transport now (what a pump does), without waiting; for a
  // caller that wants arrivals handled before it acts (e.g. a trap handler
  // coalescing the traps that came together).
  void drain();

 private:
  friend class Flow;

  // One request, queued or in flight. Slots live in a pool reused across
  // requests: no heap allocation per request once it has grown.
  struct Slot {
    Mad mad;  // encoded request, TID in place
    Flow* flow = nullptr;
    DestKey dest;
    std::function<void(Result<mad::Smp>)> decoded;  // one of the three is set
    std::function<void(Result<const Mad*>)> raw;
    std::function<void(Result<void>)> checked;
    std::chrono::nanoseconds deadline{};
    std::uint32_t tid = 0;
    std::uint32_t next = UINT32_MAX;  // the next slot parked for the same destination
    std::uint16_t attempts = 0;
    bool live = false;
    bool in_flight = false;
  };

  std::uint32_t allocate(Flow* flow);
  void release(std::uint32_t slot);
  std::uint32_t next_tid();
  Result<void> transmit(std::uint32_t slot);
  void complete(std::uint32_t slot, Result<const Mad*> answer);
  void handle(const Mad& m);
  void expire(std::chrono::nanoseconds now);
  void forget_flow(Flow* flow);
  void fail(const Error& e);

  // The pump: see the file comment.
  void kick();
  void pump();
  void arm();

  Strand strand_;
  Transport& transport_;
  const bool virtual_time_;
  UnsolicitedHandler unsolicited_;
  EngineStats stats_;
  std::optional<Error> error_;
  bool started_ = false;
  bool stopped_ = false;
  bool pump_posted_ = false;
  bool waiting_fd_ = false;
  bool timer_armed_ = false;
  std::optional<boost::asio::posix::stream_descriptor> fd_;
  boost::asio::steady_timer timer_;

  std::uint32_t next_tid_;
  std::size_t in_flight_ = 0;
  std::vector<Flow*> flows_;     // open flows (stop() wakes their waiters)
  std::size_t urgent_busy_ = 0;  // urgent flows with requests pending
  bool fd_unwatched_ = false;    // arm(): told the transport nobody watches its fd
  // The last urgent flow went idle: the others send what they held back.
  void resume_held();
  // Handlers posted or waiting hold a weak_ptr to this: they do nothing once
  // the engine is gone.
  std::shared_ptr<int> life_ = std::make_shared<int>(0);
  std::vector<Slot> pool_;
  std::vector<std::uint32_t> free_;
  // TID -> slot of the requests in flight: TIDs are handed out in order, so
  // a ring indexed by tid & mask holds them; it doubles on a clash.
  std::vector<std::uint32_t> ring_;
  void ring_insert(std::uint32_t tid, std::uint32_t slot);
  void ring_erase(std::uint32_t tid);
  std::uint32_t ring_find(std::uint32_t tid) const;
  void grow_ring();
  // Deadlines with lazy deletion, one FIFO per distinct timeout: every
  // deadline is the transport's (monotonic) now plus its flow's timeout, so
  // each FIFO is in order, and a few timeouts (one a flow kind) make a
  // min-heap's log n and cache misses per request unnecessary.
  using Deadline = std::pair<std::chrono::nanoseconds, std::uint32_t>;  // (deadline, tid)
  struct Deadlines {
    std::chrono::nanoseconds timeout;
    std::deque<Deadline> queue;
  };
  std::vector<Deadlines> deadlines_;
  void add_deadline(std::chrono::nanoseconds timeout, Deadline d);
  // The earliest deadline pending (stale ones included), if any.
  std::optional<std::chrono::nanoseconds> earliest_deadline() const;
};

// A group of requests with common options (see MadEngine). Not movable: the
// engine refers to it while it has requests. Destroying a flow drops its
// queued and in-flight requests without calling their callbacks.
//
// Runs on: the engine's strand.
class Flow {
 public:
  using Callback = std::function<void(Result<mad::Smp>)>;
  // The answer's bytes (valid during the call only), or why there is none.
  // The MAD status is the caller's to read (mad::peek_smp): a raw request
  // is complete when anything answers it.
  using RawCallback = std::function<void(Result<const Mad*>)>;

  Flow(MadEngine& engine, FlowOptions opts);
  ~Flow();
  Flow(const Flow&) = delete;
  Flow& operator=(const Flow&) = delete;

  // Queues a request and sends it at once if the windows allow. The TID is
  // assigned here. For a directed-route SMP `dlid` is ignored; for a
  // LID-routed one it is the destination LID. `dest` names the destination
  // for the per-destination window (dest_of(node); none by default).
  // A non-zero status in the answer is an error (kInvalidArgument naming
  // the status), like a timeout.
  void submit(const mad::Smp& smp, std::uint32_t dlid, Callback done, DestKey dest = {});
  // The same for a caller that needs only the outcome (a Set's answer is
  // not decoded): ok, or the timeout / MAD status error that submit gives.
  using CheckedCallback = std::function<void(Result<void>)>;
  void submit_checked(const mad::Smp& smp, std::uint32_t dlid, CheckedCallback done,
                      DestKey dest = {});
  // An already encoded request (its TID bytes are overwritten); the hot
  // path of the fast path's LFT push, which patches one template per block.
  void submit_raw(const Mad& mad, DestKey dest, RawCallback done);

  // Drops everything queued or in flight (no callbacks) and wakes drained().
  void cancel();

  // Requests queued or in flight.
  std::size_t pending() const { return queued_.size() + parked_ + in_flight_; }
  // Requests not transmitted yet (waiting for a window).
  std::size_t unsent() const { return queued_.size() + parked_; }
  // When the last queued request was first transmitted (steady clock): the
  // end of "handed to the transport" for a burst like the fast path's push.
  std::chrono::steady_clock::time_point all_sent_at() const { return all_sent_at_; }
  bool idle() const { return pending() == 0; }
  // Completes when at most `pending_at_most` requests are left (at once if
  // so; 0 = idle): a producer of millions of requests keeps a bounded
  // number queued. A stopped engine also ends the wait: check
  // engine().stopped() / error().
  boost::asio::awaitable<void> drained(std::size_t pending_at_most = 0);
  // Completes when every request has been transmitted at least once (none
  // waits for a window any more); answers may still be outstanding.
  boost::asio::awaitable<void> all_sent();

  const FlowStats& stats() const { return stats_; }
  const FlowOptions& options() const { return opts_; }
  MadEngine& engine() { return engine_; }
  std::size_t in_flight() const { return in_flight_; }

 private:
  friend class MadEngine;
  void enqueue(std::uint32_t slot);
  void fill();
  void on_done(DestKey dest);
  void wake_if_idle();
  // Urgent flows: keeps MadEngine::urgent_busy_ in step with pending().
  void count_urgent();

  // Slots waiting for this destination's window: a list through
  // Slot::next (no allocation per destination).
  struct Dest {
    unsigned in_flight = 0;
    std::uint32_t head = UINT32_MAX, tail = UINT32_MAX;
  };
  void encode(std::uint32_t slot, const mad::Smp& smp, std::uint32_t dlid, DestKey dest);

  MadEngine& engine_;
  FlowOptions opts_;
  FlowStats stats_;
  std::deque<std::uint32_t> queued_;
  std::unordered_map<std::uint64_t, Dest> dests_;  // only with per_destination
  std::size_t parked_ = 0;
  std::size_t in_flight_ = 0;
  bool counted_busy_ = false;  // urgent and counted in urgent_busy_
  std::size_t wake_at_ = 0;    // drained()'s threshold while it waits
  bool wake_on_sent_ = false;  // all_sent() waits
  std::chrono::steady_clock::time_point all_sent_at_{};
  boost::asio::steady_timer idle_signal_;
};

// Runs `make(engine)` — a function returning an awaitable<T> — to completion
// on a private io_context, with a started MadEngine over `transport`; for
// tools, tests and benchmarks that have no event loop of their own. The
// engine stops when the awaitable returns.
template <class T, class Make>
T run_blocking(Transport& transport, Make make) {
  boost::asio::io_context io;
  Strand strand = boost::asio::make_strand(io);
  MadEngine engine(strand, transport);
  std::optional<T> out;
  boost::asio::co_spawn(
      strand,
      [&]() -> boost::asio::awaitable<void> {
        engine.start();
        out.emplace(co_await make(engine));
        engine.stop();
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  return std::move(*out);
}

}  // namespace subnetd::discovery

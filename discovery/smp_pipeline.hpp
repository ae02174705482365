#pragma once
// SmpPipeline: keeps up to `window` SMPs in flight over a Transport, matches
// responses to requests by transaction id, and retries on timeout.
//
// Owner: one Sweeper or Programmer run; used from the thread that calls run()
// (the SM strand). Callbacks run inside run() and may submit more requests —
// that is how a breadth-first sweep unfolds. MADs that are not responses to
// our requests (traps, requests to the SM) go to the unsolicited handler.
//
// Invariant: every submitted request gets exactly one callback: the response
// (status 0 or not), or Errc::kTimeout after 1 + retries attempts. A retry
// reuses the transaction id, so a late answer to an earlier attempt counts.

#include <chrono>
#include <cstdint>
#include <functional>
#include <queue>
#include <stop_token>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "discovery/transport.hpp"

namespace subnetd::discovery {

struct PipelineOptions {
  unsigned window = 64;
  std::chrono::microseconds timeout{100'000};
  unsigned retries = 3;
  std::uint32_t sm_lid = 0xFFFF;  // source LID for LID-routed requests
};

struct PipelineStats {
  std::uint64_t sent = 0;  // every transmission, retries included
  std::uint64_t retries = 0;
  std::uint64_t timeouts = 0;  // requests that failed after all retries
  std::uint64_t responses = 0;
  std::uint64_t error_status = 0;
  std::uint64_t malformed = 0;    // received bytes that did not decode
  std::uint64_t stray = 0;        // responses to nothing we are waiting for
  std::uint64_t unsolicited = 0;  // traps and requests handed to the handler
};

class SmpPipeline {
 public:
  using Callback = std::function<void(Result<mad::Smp>)>;
  using UnsolicitedHandler = std::function<void(const mad::Smp&, const Mad&)>;

  SmpPipeline(Transport& transport, PipelineOptions opts);

  // Queues a request. For a directed-route SMP `dlid` is ignored; for a
  // LID-routed one it is the destination LID. The TID is assigned here.
  void submit(mad::Smp smp, std::uint32_t dlid, Callback done);

  // Sends, receives and retries until nothing is queued or in flight.
  // Fails only on a transport error or cancellation; SMP failures are
  // reported through the callbacks.
  Result<void> run(std::stop_token stop = {});

  void set_unsolicited_handler(UnsolicitedHandler h) { unsolicited_ = std::move(h); }
  const PipelineStats& stats() const { return stats_; }

 private:
  struct Pending {
    mad::Smp smp;
    std::uint32_t dlid = 0;
    Callback done;
    unsigned attempts = 0;
    std::chrono::nanoseconds deadline{};
    std::uint32_t tid = 0;
    bool live = false;
  };
  Result<void> transmit(std::uint32_t tid, Pending& p);
  void handle(const Mad& m);
  void expire(std::chrono::nanoseconds now);

  // The requests queued or in flight, by TID. TIDs are handed out in order,
  // so a ring indexed by tid & mask maps each to a slot of a reused pool: no
  // heap allocation per request (a full-scale programming pass sends ~19M).
  // The ring doubles when two live TIDs would share an entry. A Pending&
  // stays valid until the next insert.
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
  Pending* find(std::uint32_t tid);
  void insert(Pending p);
  void erase(std::uint32_t tid);
  void grow_ring();

  Transport& transport_;
  PipelineOptions opts_;
  PipelineStats stats_;
  UnsolicitedHandler unsolicited_;
  std::uint32_t next_tid_;
  std::queue<std::uint32_t> queued_;
  std::vector<std::uint32_t> ring_;  // by tid & (size - 1): pool slot or kNoSlot
  std::vector<Pending> pool_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t live_ = 0;  // requests queued or in flight
  std::size_t in_flight_ = 0;
  // (deadline, tid) min-heap with lazy deletion (entries whose deadline moved).
  using Deadline = std::pair<std::chrono::nanoseconds, std::uint32_t>;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
};

}  // namespace subnetd::discovery

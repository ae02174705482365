#include "discovery/mad_engine.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "discovery/mad/pma.hpp"

namespace subnetd::discovery {
namespace {

// The header of what the engine carries: SMPs, and the performance
// manager's PMA GMPs (class 0x04; answers only: nobody asks us for
// counters). Anything else is malformed here.
std::optional<mad::SmpPeek> peek_mad(std::span<const std::uint8_t> bytes) {
  if (bytes.size() >= kMadSize && bytes[1] == mad::pma::kMgmtClass) {
    auto h = mad::pma::decode_header(bytes);
    if (!h.ok() || (h->method & 0x80) == 0) return std::nullopt;
    return mad::SmpPeek{true, h->tid, h->status};
  }
  return mad::peek_smp(bytes);
}

namespace asio = boost::asio;

// The kernel's MAD layer owns the upper 32 bits of a TID; ours are the lower.
constexpr std::uint32_t kFirstTid = 0x1000;
constexpr std::uint32_t kNoSlot = UINT32_MAX;
// MADs read per strand turn: enough to keep a zero-latency simulator's
// answers flowing, few enough that traps, gRPC commands and other flows get
// their turn in between.
constexpr int kPumpBatch = 1024;
// Wall time one strand turn may spend moving a virtual clock (the
// simulator) answer by answer: short enough for a trap's repair or a
// command posted meanwhile not to notice.
constexpr auto kVirtualTurn = std::chrono::microseconds{100};
// A real-time transport without an event_fd is polled this often.
constexpr std::chrono::milliseconds kPollPeriod{1};

std::span<const std::uint8_t, mad::kSmpSize> bytes_of(const Mad& m) {
  return std::span<const std::uint8_t, mad::kSmpSize>(m.data.data(), mad::kSmpSize);
}

}  // namespace

// ---------------------------------------------------------------- MadEngine

MadEngine::MadEngine(Strand strand, Transport& transport)
    : strand_(std::move(strand)),
      transport_(transport),
      virtual_time_(transport.virtual_time()),
      timer_(strand_),
      next_tid_(kFirstTid) {}

MadEngine::~MadEngine() {
  stop();
}

void MadEngine::start() {
  SUBNETD_ASSERT_ON(strand_);
  if (started_ || stopped_) return;
  started_ = true;
  if (const int fd = transport_.event_fd(); fd >= 0) {
    fd_.emplace(strand_, ::dup(fd));
  }
  arm();
  // Whatever arrived before we started.
  kick();
}

void MadEngine::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ec;
  timer_.cancel();
  if (fd_) {
    fd_->cancel(ec);
    fd_->close(ec);
  }
  for (Flow* f : flows_) f->idle_signal_.cancel();
}

void MadEngine::fail(const Error& e) {
  if (!error_) error_ = e;
  stop();
}

Result<void> MadEngine::send_unsolicited(const Mad& mad) {
  SUBNETD_ASSERT_ON(strand_);
  ++stats_.sent;
  return transport_.send(mad);
}

std::uint32_t MadEngine::next_tid() {
  const std::uint32_t tid = next_tid_++;
  if (next_tid_ == 0) next_tid_ = kFirstTid;
  return tid;
}

std::uint32_t MadEngine::allocate(Flow* flow) {
  std::uint32_t s;
  if (free_.empty()) {
    s = static_cast<std::uint32_t>(pool_.size());
    pool_.emplace_back();
  } else {
    s = free_.back();
    free_.pop_back();
  }
  Slot& slot = pool_[s];
  slot.flow = flow;
  slot.attempts = 0;
  slot.live = true;
  slot.in_flight = false;
  return s;
}

void MadEngine::release(std::uint32_t s) {
  Slot& slot = pool_[s];
  slot.live = false;
  slot.flow = nullptr;
  slot.decoded = nullptr;
  slot.raw = nullptr;
  slot.checked = nullptr;
  slot.next = kNoSlot;
  free_.push_back(s);
}

void MadEngine::grow_ring() {
  std::size_t size = std::max<std::size_t>(1024, ring_.size() * 2);
  for (;;) {
    ring_.assign(size, kNoSlot);
    bool clash = false;
    for (std::uint32_t i = 0; i < pool_.size() && !clash; ++i) {
      if (!pool_[i].live || !pool_[i].in_flight) continue;
      std::uint32_t& e = ring_[pool_[i].tid & (size - 1)];
      clash = e != kNoSlot;
      e = i;
    }
    if (!clash) return;
    size *= 2;
  }
}

void MadEngine::ring_insert(std::uint32_t tid, std::uint32_t slot) {
  while (ring_.empty() || ring_[tid & (ring_.size() - 1)] != kNoSlot) grow_ring();
  ring_[tid & (ring_.size() - 1)] = slot;
}

void MadEngine::ring_erase(std::uint32_t tid) {
  ring_[tid & (ring_.size() - 1)] = kNoSlot;
}

std::uint32_t MadEngine::ring_find(std::uint32_t tid) const {
  if (ring_.empty()) return kNoSlot;
  const std::uint32_t s = ring_[tid & (ring_.size() - 1)];
  if (s == kNoSlot) return kNoSlot;
  const Slot& slot = pool_[s];
  return slot.live && slot.in_flight && slot.tid == tid ? s : kNoSlot;
}

Result<void> MadEngine::transmit(std::uint32_t s) {
  Slot& slot = pool_[s];
  Flow* flow = slot.flow;
  if (slot.attempts == 0) {
    slot.tid = next_tid();
    mad::set_smp_tid(std::span<std::uint8_t, mad::kSmpSize>(slot.mad.data.data(), mad::kSmpSize),
                     slot.tid);
    ring_insert(slot.tid, s);
    slot.in_flight = true;
    ++in_flight_;
  }
  if (auto r = transport_.send(slot.mad); !r.ok()) return r.error();
  ++stats_.sent;
  if (flow != nullptr) {
    ++flow->stats_.sent;
    if (slot.attempts > 0) ++flow->stats_.retries;
  }
  if (slot.attempts > 0) ++stats_.retries;
  ++slot.attempts;
  const std::chrono::nanoseconds timeout =
      flow != nullptr ? flow->opts_.timeout : std::chrono::microseconds{0};
  slot.deadline = transport_.now() + timeout;
  add_deadline(timeout, {slot.deadline, slot.tid});
  kick();
  return {};
}

void MadEngine::add_deadline(std::chrono::nanoseconds timeout, Deadline d) {
  for (Deadlines& q : deadlines_) {
    if (q.timeout == timeout) {
      q.queue.push_back(d);
      return;
    }
  }
  deadlines_.push_back(Deadlines{timeout, {d}});
}

std::optional<std::chrono::nanoseconds> MadEngine::earliest_deadline() const {
  std::optional<std::chrono::nanoseconds> first;
  for (const Deadlines& q : deadlines_) {
    if (!q.queue.empty() && (!first || q.queue.front().first < *first))
      first = q.queue.front().first;
  }
  return first;
}

void MadEngine::complete(std::uint32_t s, Result<const Mad*> answer) {
  Slot& slot = pool_[s];
  if (slot.in_flight) {
    ring_erase(slot.tid);
    slot.in_flight = false;
    --in_flight_;
  }
  Flow* flow = slot.flow;
  const DestKey dest = slot.dest;
  // Taken out before the callback runs: it may submit (and grow the pool).
  auto decoded = std::move(slot.decoded);
  auto raw = std::move(slot.raw);
  auto checked = std::move(slot.checked);
  std::uint16_t status = 0;
  if (answer.ok()) {
    if (auto peek = peek_mad((*answer)->data)) status = peek->status;
  }
  // Only failures are described (a formatted string per answer would cost
  // more than the rest of the answer's handling).
  std::string what;
  if (flow != nullptr && (decoded || checked) && (!answer.ok() || status != 0)) {
    what = mad::describe_smp(bytes_of(slot.mad));
  }
  release(s);
  if (answer.ok()) {
    ++stats_.responses;
    if (status != 0) ++stats_.error_status;
  } else if (answer.error().code == Errc::kTimeout) {
    ++stats_.timeouts;
  }
  if (flow == nullptr) return;  // its flow was cancelled or destroyed
  if (answer.ok()) {
    ++flow->stats_.responses;
    if (status != 0) ++flow->stats_.error_status;
  } else if (answer.error().code == Errc::kTimeout) {
    ++flow->stats_.timeouts;
  }
  if (decoded || checked) {
    std::optional<Error> error;
    if (!answer.ok()) {
      error = Error{answer.error().code, what + ": " + answer.error().message};
    } else if (status != 0) {
      error = Error{Errc::kInvalidArgument,
                    fmt::format("{} answered with MAD status {:#06x}", what, status)};
    }
    if (error) {
      if (decoded) {
        decoded(std::move(*error));
      } else {
        checked(std::move(*error));
      }
    } else if (decoded) {
      decoded(mad::decode_smp((*answer)->data));
    } else {
      checked(Result<void>{});
    }
  } else if (raw) {
    raw(answer);
  }
  flow->on_done(dest);
}

void MadEngine::handle(const Mad& m) {
  ++stats_.received;
  const auto peek = peek_mad(m.data);
  if (!peek) {
    ++stats_.malformed;
    return;
  }
  if (!peek->response) {
    auto smp = mad::decode_smp(m.data);
    if (!smp.ok()) {
      ++stats_.malformed;
      return;
    }
    ++stats_.unsolicited;
    if (unsolicited_) unsolicited_(*smp, m);
    return;
  }
  const std::uint32_t s = ring_find(static_cast<std::uint32_t>(peek->tid));
  if (s == kNoSlot) {
    ++stats_.stray;
    return;
  }
  // An answer of another class than the request's (a PMA answer carrying
  // an SMP's TID, or the reverse) answers nothing of ours.
  if (pool_[s].mad.data[1] != m.data[1]) {
    ++stats_.malformed;
    return;
  }
  complete(s, &m);
}

void MadEngine::expire(std::chrono::nanoseconds now) {
  for (;;) {
    // The FIFO whose front is due first (a resend below may append to any).
    Deadlines* due = nullptr;
    for (Deadlines& q : deadlines_) {
      if (!q.queue.empty() && q.queue.front().first <= now &&
          (due == nullptr || q.queue.front().first < due->queue.front().first))
        due = &q;
    }
    if (due == nullptr) return;
    const auto [deadline, tid] = due->queue.front();
    due->queue.pop_front();
    const std::uint32_t s = ring_find(tid);
    if (s == kNoSlot || pool_[s].deadline != deadline) continue;  // answered or resent
    Slot& slot = pool_[s];
    const unsigned retries = slot.flow != nullptr ? slot.flow->opts_.retries : 0;
    if (slot.flow != nullptr && slot.attempts <= retries) {
      if (auto r = transmit(s); !r.ok()) complete(s, r.error());
      continue;
    }
    const unsigned attempts = slot.attempts;
    complete(s, Error{Errc::kTimeout, fmt::format("no answer after {} tries", attempts)});
  }
}

void MadEngine::drain() {
  SUBNETD_ASSERT_ON(strand_);
  for (int i = 0; i < kPumpBatch && !stopped_; ++i) {
    auto got = transport_.receive(std::chrono::microseconds{0});
    if (!got.ok()) {
      fail(got.error());
      return;
    }
    if (!got->has_value()) return;
    handle(**got);
  }
}

void MadEngine::kick() {
  if (pump_posted_ || stopped_) return;
  pump_posted_ = true;
  asio::post(strand_, [this, alive = std::weak_ptr<int>(life_)] {
    if (alive.expired()) return;
    pump();
  });
}

void MadEngine::pump() {
  SUBNETD_ASSERT_ON(strand_);
  pump_posted_ = false;
  if (stopped_) return;
  ++stats_.pumps;
  int taken = 0;
  for (; taken < kPumpBatch && !stopped_; ++taken) {
    auto got = transport_.receive(std::chrono::microseconds{0});
    if (!got.ok()) {
      fail(got.error());
      return;
    }
    if (!got->has_value()) break;
    handle(**got);
  }
  if (stopped_) return;
  expire(transport_.now());
  if (taken == kPumpBatch) {
    kick();  // more is waiting: another turn, after whatever else is queued
    return;
  }
  if (virtual_time_ && in_flight_ > 0) {
    // Nothing more is due now: let the virtual clock run to the next
    // delivery, or to the earliest deadline; again and again within one
    // strand turn of bounded wall time (a turn per answer would cost an
    // io_context round, with its epoll_wait, per SMP), then yield.
    const auto turn_end = std::chrono::steady_clock::now() + kVirtualTurn;
    for (; taken < kPumpBatch && in_flight_ > 0; ++taken) {
      const auto now = transport_.now();
      std::chrono::microseconds wait{0};
      if (const auto first = earliest_deadline(); first && *first > now) {
        wait = std::chrono::duration_cast<std::chrono::microseconds>(*first - now) +
               std::chrono::microseconds{1};
      }
      auto got = transport_.receive(wait);
      if (!got.ok()) {
        fail(got.error());
        return;
      }
      if (got->has_value()) handle(**got);
      if (stopped_) return;
      expire(transport_.now());
      if (std::chrono::steady_clock::now() >= turn_end) break;
    }
    if (in_flight_ > 0) kick();
  }
  arm();
}

void MadEngine::arm() {
  if (stopped_) return;
  if (virtual_time_) {
    // Requests in flight: the pump runs again by itself (kick), so the fd
    // need not follow every answer; idle, it must wake us for a trap.
    const bool pumping = in_flight_ > 0 && pump_posted_;
    if (pumping != fd_unwatched_) {
      fd_unwatched_ = pumping;
      transport_.watch_event_fd(!pumping);
    }
    if (pumping) return;
  }
  if (fd_ && !waiting_fd_ && started_) {
    waiting_fd_ = true;
    fd_->async_wait(asio::posix::stream_descriptor::wait_read,
                    [this, alive = std::weak_ptr<int>(life_)](boost::system::error_code ec) {
                      if (alive.expired() || ec == asio::error::operation_aborted) return;
                      waiting_fd_ = false;
                      if (ec) {
                        fail(Error{Errc::kIo, "transport event_fd: " + ec.message()});
                        return;
                      }
                      pump();
                    });
  }
  if (virtual_time_) return;  // deadlines pass in the pump
  // Real time: a timer for the earliest deadline (or a poll without fd).
  std::optional<std::chrono::nanoseconds> in;
  if (const auto first = earliest_deadline())
    in = std::max(std::chrono::nanoseconds{0}, *first - transport_.now());
  if (!fd_ && (started_ || in_flight_ > 0)) {
    in = in ? std::min<std::chrono::nanoseconds>(*in, kPollPeriod)
            : std::chrono::nanoseconds{kPollPeriod};
  }
  if (!in) return;
  const auto when = std::chrono::steady_clock::now() + *in;
  if (timer_armed_ && timer_.expiry() <= when) return;
  timer_armed_ = true;
  timer_.expires_at(when);
  timer_.async_wait([this, alive = std::weak_ptr<int>(life_)](boost::system::error_code ec) {
    if (alive.expired() || ec == asio::error::operation_aborted) return;
    timer_armed_ = false;
    pump();
  });
}

// ---------------------------------------------------------------- Flow

Flow::Flow(MadEngine& engine, FlowOptions opts)
    : engine_(engine), opts_(opts), idle_signal_(engine.strand_) {
  SUBNETD_ASSERT_ON(engine_.strand_);
  if (opts_.window == 0) opts_.window = 1;
  engine_.flows_.push_back(this);
}

Flow::~Flow() {
  cancel();
  std::erase(engine_.flows_, this);
}

void Flow::encode(std::uint32_t s, const mad::Smp& smp, std::uint32_t dlid, DestKey dest) {
  MadEngine::Slot& slot = engine_.pool_[s];
  mad::encode_smp(smp, std::span<std::uint8_t, kMadSize>(slot.mad.data));
  if (smp.directed()) {
    slot.mad.dlid = mad::kPermissiveLid;
    slot.mad.slid = mad::kPermissiveLid;
  } else {
    slot.mad.dlid = dlid;
    slot.mad.slid = opts_.sm_lid;
  }
  slot.dest = dest;
}

void Flow::submit(const mad::Smp& smp, std::uint32_t dlid, Callback done, DestKey dest) {
  SUBNETD_ASSERT_ON(engine_.strand_);
  if (engine_.stopped_) return;
  const std::uint32_t s = engine_.allocate(this);
  encode(s, smp, dlid, dest);
  engine_.pool_[s].decoded = std::move(done);
  ++stats_.submitted;
  enqueue(s);
}

void Flow::submit_checked(const mad::Smp& smp, std::uint32_t dlid, CheckedCallback done,
                          DestKey dest) {
  SUBNETD_ASSERT_ON(engine_.strand_);
  if (engine_.stopped_) return;
  const std::uint32_t s = engine_.allocate(this);
  encode(s, smp, dlid, dest);
  engine_.pool_[s].checked = std::move(done);
  ++stats_.submitted;
  enqueue(s);
}

void Flow::submit_raw(const Mad& mad, DestKey dest, RawCallback done) {
  SUBNETD_ASSERT_ON(engine_.strand_);
  if (engine_.stopped_) return;
  const std::uint32_t s = engine_.allocate(this);
  MadEngine::Slot& slot = engine_.pool_[s];
  slot.mad = mad;
  slot.dest = dest;
  slot.raw = std::move(done);
  ++stats_.submitted;
  enqueue(s);
}

void Flow::enqueue(std::uint32_t s) {
  queued_.push_back(s);
  fill();
  count_urgent();
}

void Flow::count_urgent() {
  if (!opts_.urgent) return;
  const bool busy = pending() != 0;
  if (busy == counted_busy_) return;
  counted_busy_ = busy;
  if (busy) {
    ++engine_.urgent_busy_;
  } else if (--engine_.urgent_busy_ == 0) {
    engine_.resume_held();
  }
}

void MadEngine::resume_held() {
  // fill() may run callbacks (a failed transmit) that open or close flows:
  // walk a copy, skipping any closed meanwhile.
  const std::vector<Flow*> flows = flows_;
  for (Flow* f : flows) {
    if (urgent_busy_ != 0 || stopped_) return;
    if (std::find(flows_.begin(), flows_.end(), f) == flows_.end()) continue;
    if (!f->opts_.urgent && !f->queued_.empty()) f->fill();
  }
}

void Flow::fill() {
  // An urgent flow is at work: hold back (resume_held() calls again).
  if (!opts_.urgent && engine_.urgent_busy_ != 0) return;
  const bool had_unsent = unsent() != 0;
  while (in_flight_ < opts_.window && !queued_.empty() && !engine_.stopped_) {
    const std::uint32_t s = queued_.front();
    queued_.pop_front();
    const DestKey dest = engine_.pool_[s].dest;
    if (opts_.per_destination != 0 && dest.value != 0) {
      Dest& d = dests_[dest.value];
      if (d.in_flight >= opts_.per_destination) {
        engine_.pool_[s].next = kNoSlot;
        if (d.tail == kNoSlot) {
          d.head = s;
        } else {
          engine_.pool_[d.tail].next = s;
        }
        d.tail = s;
        ++parked_;
        continue;
      }
      ++d.in_flight;
    }
    ++in_flight_;
    if (auto r = engine_.transmit(s); !r.ok()) engine_.complete(s, r.error());
  }
  if (had_unsent && unsent() == 0) all_sent_at_ = std::chrono::steady_clock::now();
}

void Flow::on_done(DestKey dest) {
  --in_flight_;
  if (opts_.per_destination != 0 && dest.value != 0) {
    auto it = dests_.find(dest.value);
    if (it != dests_.end()) {
      Dest& d = it->second;
      --d.in_flight;
      if (d.head != kNoSlot) {
        // Its turn at the front: it waited for this destination, not the queue.
        const std::uint32_t s = d.head;
        d.head = engine_.pool_[s].next;
        if (d.head == kNoSlot) d.tail = kNoSlot;
        engine_.pool_[s].next = kNoSlot;
        queued_.push_front(s);
        --parked_;
      } else if (d.in_flight == 0) {
        dests_.erase(it);
      }
    }
  }
  fill();
  count_urgent();
  wake_if_idle();
}

void Flow::wake_if_idle() {
  if (wake_on_sent_ ? unsent() == 0 : pending() <= wake_at_) idle_signal_.cancel();
}

void Flow::cancel() {
  SUBNETD_ASSERT_ON(engine_.strand_);
  for (std::uint32_t s : queued_) engine_.release(s);
  queued_.clear();
  for (auto& [dest, d] : dests_) {
    for (std::uint32_t s = d.head; s != kNoSlot;) {
      const std::uint32_t next = engine_.pool_[s].next;
      engine_.release(s);
      s = next;
    }
  }
  dests_.clear();
  parked_ = 0;
  // In flight: detached; their answers (or timeouts) are dropped.
  for (MadEngine::Slot& slot : engine_.pool_) {
    if (slot.live && slot.flow == this) {
      slot.flow = nullptr;
      slot.decoded = nullptr;
      slot.raw = nullptr;
      slot.checked = nullptr;
    }
  }
  in_flight_ = 0;
  count_urgent();
  idle_signal_.cancel();
}

asio::awaitable<void> Flow::drained(std::size_t pending_at_most) {
  SUBNETD_ASSERT_ON(engine_.strand_);
  while (pending() > pending_at_most && !engine_.stopped_) {
    wake_at_ = pending_at_most;
    idle_signal_.expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await idle_signal_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  wake_at_ = 0;
}

asio::awaitable<void> Flow::all_sent() {
  SUBNETD_ASSERT_ON(engine_.strand_);
  while (unsent() != 0 && !engine_.stopped_) {
    wake_on_sent_ = true;
    idle_signal_.expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await idle_signal_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  wake_on_sent_ = false;
}

}  // namespace subnetd::discovery

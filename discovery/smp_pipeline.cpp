#include "discovery/smp_pipeline.hpp"

#include <fmt/format.h>

namespace subnetd::discovery {

namespace {
// The kernel's MAD layer owns the upper 32 bits of a TID; ours are the lower.
std::uint32_t initial_tid() {
  return 0x1000;
}
}  // namespace

SmpPipeline::SmpPipeline(Transport& transport, PipelineOptions opts)
    : transport_(transport), opts_(opts), next_tid_(initial_tid()) {
  if (opts_.window == 0) opts_.window = 1;
}

SmpPipeline::Pending* SmpPipeline::find(std::uint32_t tid) {
  if (ring_.empty()) return nullptr;
  const std::uint32_t slot = ring_[tid & (ring_.size() - 1)];
  if (slot == kNoSlot) return nullptr;
  Pending& p = pool_[slot];
  return p.live && p.tid == tid ? &p : nullptr;
}

void SmpPipeline::grow_ring() {
  std::size_t size = std::max<std::size_t>(1024, ring_.size() * 2);
  for (;;) {
    ring_.assign(size, kNoSlot);
    bool clash = false;
    for (std::uint32_t i = 0; i < pool_.size() && !clash; ++i) {
      if (!pool_[i].live) continue;
      std::uint32_t& e = ring_[pool_[i].tid & (size - 1)];
      clash = e != kNoSlot;
      e = i;
    }
    if (!clash) return;
    size *= 2;
  }
}

void SmpPipeline::insert(Pending p) {
  while (ring_.empty() || ring_[p.tid & (ring_.size() - 1)] != kNoSlot) grow_ring();
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(pool_.size());
    pool_.push_back(std::move(p));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    pool_[slot] = std::move(p);
  }
  pool_[slot].live = true;
  ring_[pool_[slot].tid & (ring_.size() - 1)] = slot;
  ++live_;
}

void SmpPipeline::erase(std::uint32_t tid) {
  std::uint32_t& e = ring_[tid & (ring_.size() - 1)];
  Pending& p = pool_[e];
  p.live = false;
  p.done = nullptr;
  free_slots_.push_back(e);
  e = kNoSlot;
  --live_;
}

void SmpPipeline::submit(mad::Smp smp, std::uint32_t dlid, Callback done) {
  std::uint32_t tid = next_tid_++;
  if (next_tid_ == 0) next_tid_ = initial_tid();
  smp.tid = tid;
  Pending p;
  p.smp = std::move(smp);
  p.dlid = dlid;
  p.done = std::move(done);
  p.tid = tid;
  insert(std::move(p));
  queued_.push(tid);
}

Result<void> SmpPipeline::transmit(std::uint32_t tid, Pending& p) {
  Mad m;
  mad::encode_smp(p.smp, std::span<std::uint8_t, kMadSize>(m.data));
  if (p.smp.directed()) {
    m.dlid = mad::kPermissiveLid;
    m.slid = mad::kPermissiveLid;
  } else {
    m.dlid = p.dlid;
    m.slid = opts_.sm_lid;
  }
  SUBNETD_TRY(transport_.send(m));
  ++stats_.sent;
  if (p.attempts > 0) ++stats_.retries;
  ++p.attempts;
  p.deadline = transport_.now() + opts_.timeout;
  deadlines_.emplace(p.deadline, tid);
  return {};
}

void SmpPipeline::handle(const Mad& m) {
  auto decoded = mad::decode_smp(m.data);
  if (!decoded.ok()) {
    ++stats_.malformed;
    return;
  }
  const mad::Smp& smp = *decoded;
  if (!smp.is_response()) {
    ++stats_.unsolicited;
    if (unsolicited_) unsolicited_(smp, m);
    return;
  }
  const auto tid = static_cast<std::uint32_t>(smp.tid);
  Pending* p = find(tid);
  if (p == nullptr || p->attempts == 0) {
    ++stats_.stray;
    return;
  }
  Callback done = std::move(p->done);
  erase(tid);
  --in_flight_;
  ++stats_.responses;
  if (smp.status != mad::status::kOk) {
    ++stats_.error_status;
    done(Error{Errc::kInvalidArgument,
               fmt::format("{} {} (modifier {:#x}) answered with MAD status {:#06x}",
                           mad::method_name(smp.method), mad::attr_name(smp.attr_id), smp.attr_mod,
                           smp.status)});
    return;
  }
  done(std::move(decoded));
}

void SmpPipeline::expire(std::chrono::nanoseconds now) {
  while (!deadlines_.empty() && deadlines_.top().first <= now) {
    auto [deadline, tid] = deadlines_.top();
    deadlines_.pop();
    Pending* found = find(tid);
    if (found == nullptr || found->deadline != deadline) continue;  // answered or resent
    Pending& p = *found;
    if (p.attempts <= opts_.retries) {
      // Resend at once (in-flight count unchanged).
      if (auto r = transmit(tid, p); !r.ok()) {
        Callback done = std::move(p.done);
        erase(tid);
        --in_flight_;
        done(r.error());
      }
      continue;
    }
    Callback done = std::move(p.done);
    mad::Smp smp = p.smp;
    unsigned attempts = p.attempts;
    erase(tid);
    --in_flight_;
    ++stats_.timeouts;
    done(Error{Errc::kTimeout, fmt::format("{} {} (modifier {:#x}): no answer after {} tries",
                                           mad::method_name(smp.method),
                                           mad::attr_name(smp.attr_id), smp.attr_mod, attempts)});
  }
}

Result<void> SmpPipeline::run(std::stop_token stop) {
  while (live_ != 0) {
    if (stop.stop_requested()) return Error{Errc::kCancelled, "SMP pipeline cancelled"};
    while (in_flight_ < opts_.window && !queued_.empty()) {
      std::uint32_t tid = queued_.front();
      queued_.pop();
      Pending* p = find(tid);
      if (p == nullptr) continue;
      ++in_flight_;
      if (auto r = transmit(tid, *p); !r.ok()) return r.error();
    }
    // Wait for the next answer, at most until the earliest deadline.
    std::chrono::nanoseconds now = transport_.now();
    std::chrono::microseconds wait{0};
    if (!deadlines_.empty() && deadlines_.top().first > now) {
      wait = std::chrono::duration_cast<std::chrono::microseconds>(deadlines_.top().first - now) +
             std::chrono::microseconds{1};
    }
    auto got = transport_.receive(wait);
    if (!got.ok()) return got.error();
    if (got->has_value()) {
      handle(**got);
      // Drain whatever else is ready without waiting.
      for (;;) {
        auto more = transport_.receive(std::chrono::microseconds{0});
        if (!more.ok()) return more.error();
        if (!more->has_value()) break;
        handle(**more);
      }
    }
    expire(transport_.now());
  }
  return {};
}

}  // namespace subnetd::discovery

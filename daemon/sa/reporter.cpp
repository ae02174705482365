// The SA's Report sender; see reporter.hpp.

#include "daemon/sa/reporter.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace subnetd::daemon::sa {

Reporter::Reporter(SaAgent& agent, const state::StatePublisher& publisher, Send send)
    : agent_(agent), publisher_(publisher), send_(std::move(send)) {
  // The snapshot the first wake's is compared with: taken here, since the
  // thread may start after a publish or two.
  thread_ = std::thread([this, first = publisher_.current()] { loop(first); });
}

Reporter::~Reporter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Reporter::wake() {
  // On the publishing thread, right after the publish: the current
  // snapshot is the one just published.
  std::shared_ptr<const state::FabricState> now = publisher_.current();
  {
    std::lock_guard lock(mu_);
    if (!waiting_.empty() && waiting_.back().snapshot &&
        waiting_.back().snapshot->generation == now->generation) {
      return;
    }
    if (snapshots_ >= kMaxBacklog) {
      // The oldest waiting snapshot goes; its change is told by the next.
      const auto oldest = std::find_if(waiting_.begin(), waiting_.end(),
                                       [](const Item& i) { return i.snapshot != nullptr; });
      waiting_.erase(oldest);
      --snapshots_;
      ++dropped_;
    }
    waiting_.push_back(Item{std::move(now), {}});
    ++snapshots_;
  }
  cv_.notify_all();
}

void Reporter::forward(const discovery::mad::Notice& trap) {
  {
    std::lock_guard lock(mu_);
    if (traps_ >= kMaxBacklog) {
      ++dropped_traps_;
      return;
    }
    waiting_.push_back(Item{nullptr, trap});
    ++traps_;
  }
  cv_.notify_all();
}

std::uint64_t Reporter::sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

std::uint64_t Reporter::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

void Reporter::loop(std::shared_ptr<const state::FabricState> last) {
  for (;;) {
    Item item;
    std::uint64_t dropped = 0, dropped_traps = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !waiting_.empty() || stop_; });
      if (stop_) return;
      item = std::move(waiting_.front());
      waiting_.pop_front();
      --(item.snapshot ? snapshots_ : traps_);
      dropped = std::exchange(dropped_, 0);
      dropped_traps = std::exchange(dropped_traps_, 0);
    }
    if (dropped != 0) {
      spdlog::warn("SA: Reports fell {} snapshots behind; their changes are reported together",
                   dropped);
    }
    if (dropped_traps != 0) {
      spdlog::warn("SA: Reports fell behind; {} received traps not forwarded", dropped_traps);
    }
    std::vector<Report> reports;
    if (!item.snapshot) {
      reports = agent_.forward(item.trap, *last);
    } else {
      if (item.snapshot->generation <= last->generation) continue;
      reports = agent_.reports(*last, *item.snapshot);
      last = std::move(item.snapshot);
    }
    std::uint64_t ok = 0, bad = 0;
    for (const Report& r : reports) {
      if (auto s = send_(r); s.ok()) {
        ++ok;
      } else {
        ++bad;
        spdlog::warn("SA: Report to LID {:#x} not sent: {}", r.dlid, s.error().message);
      }
    }
    std::lock_guard lock(mu_);
    sent_ += ok;
    failed_ += bad;
  }
}

}  // namespace subnetd::daemon::sa

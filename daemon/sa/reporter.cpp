// The SA's Report sender; see reporter.hpp.

#include "daemon/sa/reporter.hpp"

#include <spdlog/spdlog.h>

namespace subnetd::daemon::sa {

Reporter::Reporter(SaAgent& agent, const state::StatePublisher& publisher, Send send)
    : agent_(agent), publisher_(publisher), send_(std::move(send)) {
  thread_ = std::thread([this] { loop(); });
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
  {
    std::lock_guard lock(mu_);
    woken_ = true;
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

void Reporter::loop() {
  std::shared_ptr<const state::FabricState> last = publisher_.current();
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return woken_ || stop_; });
      if (stop_) return;
      woken_ = false;
    }
    std::shared_ptr<const state::FabricState> now = publisher_.current();
    if (now->generation == last->generation) continue;
    const std::vector<Report> reports = agent_.reports(*last, *now);
    last = std::move(now);
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

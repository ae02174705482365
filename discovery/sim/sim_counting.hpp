#pragma once
// CountingTransport: forwards to another Transport and counts the table
// SMPs an SM sends through it: LFT blocks written and read, fast-failover
// attributes written and read. For tests and benchmarks that check what an
// SM programmed (a takeover that rewrites nothing, a handover), next to
// BorrowedSim (sim_borrowed.hpp). The counters may be read from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "discovery/mad/smp.hpp"
#include "discovery/transport.hpp"

namespace subnetd::discovery::sim {

class CountingTransport final : public Transport {
 public:
  explicit CountingTransport(std::unique_ptr<Transport> inner) : t_(std::move(inner)) {}

  Result<void> send(const Mad& m) override {
    const auto attr = static_cast<std::uint16_t>((m.data[16] << 8) | m.data[17]);
    const bool set = m.data[3] == static_cast<std::uint8_t>(mad::Method::kSet);
    if (attr == static_cast<std::uint16_t>(mad::AttrId::kLinearForwardingTable) ||
        attr == static_cast<std::uint16_t>(mad::AttrId::kExtLinearForwardingTable)) {
      ++(set ? lft_sets : lft_gets);
    } else if (attr >= static_cast<std::uint16_t>(mad::AttrId::kFailoverInfo) &&
               attr <= static_cast<std::uint16_t>(mad::AttrId::kFailoverNotifyConfig)) {
      ++(set ? failover_sets : failover_gets);
    }
    return t_->send(m);
  }
  Result<std::optional<Mad>> receive(std::chrono::microseconds t) override {
    return t_->receive(t);
  }
  std::chrono::nanoseconds now() const override { return t_->now(); }
  LocalPort local_port() const override { return t_->local_port(); }
  int event_fd() const override { return t_->event_fd(); }
  bool virtual_time() const override { return t_->virtual_time(); }
  void watch_event_fd(bool watched) override { t_->watch_event_fd(watched); }
  std::string name() const override { return t_->name(); }

  std::atomic<std::uint64_t> lft_sets{0}, lft_gets{0};
  std::atomic<std::uint64_t> failover_sets{0}, failover_gets{0};

 private:
  std::unique_ptr<Transport> t_;
};

}  // namespace subnetd::discovery::sim

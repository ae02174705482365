#pragma once
// BorrowedSim: a Transport that forwards to a SimFabric owned by someone
// else. The SubnetManager owns its transport; a test or a benchmark keeps
// the simulator (to cut cables, inject errors, and probe after the SM has
// stopped) and hands the SM this instead.

#include <chrono>
#include <optional>
#include <string>

#include "discovery/sim/sim_fabric.hpp"

namespace subnetd::discovery::sim {

class BorrowedSim final : public Transport {
 public:
  explicit BorrowedSim(SimFabric& s) : s_(s) {}
  Result<void> send(const Mad& m) override { return s_.send(m); }
  Result<std::optional<Mad>> receive(std::chrono::microseconds t) override { return s_.receive(t); }
  std::chrono::nanoseconds now() const override { return s_.now(); }
  LocalPort local_port() const override { return s_.local_port(); }
  int event_fd() const override { return s_.event_fd(); }
  bool virtual_time() const override { return s_.virtual_time(); }
  void watch_event_fd(bool watched) override { s_.watch_event_fd(watched); }
  std::string name() const override { return "sim"; }

 private:
  SimFabric& s_;
};

}  // namespace subnetd::discovery::sim

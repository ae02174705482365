#pragma once
// Screener: bring-up screening against the configured cabling plan
// (screening.cabling_plan), at every heavy sweep, and on demand.
//
// The SM wakes it after every publish; on its own thread it compares each
// new topology (a heavy sweep's, or one a repair changed) with the plan —
// O(ports), never on the SM strand — keeps the report, and turns what
// changed into events (kind "cabling"): one per new finding, one per
// finding that cleared, and a summary line with the counts. At most
// kMaxEvents finding events per comparison (a wrong plan for a large fabric
// would otherwise flood the log); the summary says how many were left out,
// and CheckCabling lists them all.
//
// check_cabling() (gRPC's CheckCabling, any thread) compares the current
// snapshot with the plan it is given, or with the configured one.
//
// Threading: wake(), set_plan(), last() and check_cabling() from any thread;
// the destructor stops the thread and must run before the publisher and
// the event log go.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "daemon/screening/cabling.hpp"
#include "state/cabling.hpp"
#include "state/event_log.hpp"
#include "state/fabric_state.hpp"

namespace subnetd::daemon::screening {

class Screener final : public state::CablingCheck {
 public:
  static constexpr std::size_t kMaxEvents = 100;

  Screener(const state::StatePublisher& publisher, state::EventLog& events,
           std::optional<CablingPlan> plan);
  ~Screener() override;
  Screener(const Screener&) = delete;
  Screener& operator=(const Screener&) = delete;

  // A new snapshot was published.
  void wake();
  // A reload changed the plan (nullopt: screening off). The next wake
  // compares again.
  void set_plan(std::optional<CablingPlan> plan);
  // The last comparison with the configured plan; null before the first.
  std::shared_ptr<const state::CablingReport> last() const;

  Result<state::CablingReport> check_cabling(const state::CablingPlanText* plan) const override;

 private:
  void loop();
  void announce(const state::CablingReport& before, const state::CablingReport& now);

  const state::StatePublisher& publisher_;
  state::EventLog& events_;
  mutable std::mutex mu_;  // guards everything below but thread_
  std::condition_variable cv_;
  std::shared_ptr<const CablingPlan> plan_;
  std::uint64_t plan_version_ = 0;  // bumped by set_plan
  std::shared_ptr<const state::CablingReport> last_;
  bool woken_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace subnetd::daemon::screening

#pragma once
// fill_switch_tables: the parallel "one LFT per source switch" loop that the
// routing engines share. Each pool slot lazily makes its own filler (engines
// keep per-thread scratch there); each switch's table is sized to max_lid
// (all drop) on the thread that fills it, so its pages fault in parallel, and
// marked dirty afterwards (a fresh table is new to the switch). The error of
// the lowest-numbered failing switch is returned, whatever the thread count.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "routing/ids.hpp"
#include "routing/lft.hpp"
#include "routing/result.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::routing {

// make_filler() -> F (e.g. a unique_ptr); fill_one(F&, SwitchIndex, Lft&,
// slot) -> std::optional<Error>.
template <class MakeFiller, class FillOne>
Result<void> fill_switch_tables(WorkerPool& pool, std::vector<Lft>& lfts, Lid max_lid,
                                std::stop_token stop, const std::string& cancelled_message,
                                MakeFiller make_filler, FillOne fill_one) {
  using Filler = decltype(make_filler());
  const std::size_t n = lfts.size();
  std::vector<std::optional<Filler>> fillers(pool.size());
  std::mutex err_mu;
  std::optional<std::pair<std::uint32_t, Error>> first_error;
  std::atomic<bool> failed{false};
  const std::size_t grain = std::max<std::size_t>(1, n / (std::size_t{pool.size()} * 64));
  pool.parallel_for(n, grain, [&](std::size_t begin, std::size_t end, unsigned slot) {
    if (!fillers[slot]) fillers[slot].emplace(make_filler());
    for (std::size_t i = begin; i < end; ++i) {
      if (stop.stop_requested() || failed.load(std::memory_order_relaxed)) return;
      const auto s = static_cast<std::uint32_t>(i);
      Lft& lft = lfts[s];
      lft.resize(max_lid);
      if (auto err = fill_one(*fillers[slot], SwitchIndex{s}, lft, slot)) {
        std::lock_guard lock(err_mu);
        if (!first_error || first_error->first > s) first_error.emplace(s, std::move(*err));
        failed.store(true, std::memory_order_relaxed);
        return;
      }
      lft.mark_all_dirty();
    }
  });
  if (first_error) return first_error->second;
  if (stop.stop_requested()) return Error{Errc::kCancelled, cancelled_message};
  return {};
}

}  // namespace subnetd::routing

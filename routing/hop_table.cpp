#include "routing/hop_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>
#include <optional>

namespace subnetd::routing {

HopTable::HopTable(std::uint32_t num_switches)
    : n_(num_switches),
      stride_((num_switches + 63) / 64 * 64),
      hops_(std::size_t{n_} * stride_, kUnreachable),
      down_(std::size_t{n_} * (stride_ / 64), 0) {}

namespace {

enum class Rule { kShortest, kUpDown };

// Per-thread frontier words for one 64-destination pass.
struct BfsScratch {
  std::vector<std::uint64_t> reached, front, front_down, next, next_down;
  void reset(std::uint32_t n) {
    reached.assign(n, 0);
    front.assign(n, 0);
    front_down.assign(n, 0);
    next.assign(n, 0);
    next_down.assign(n, 0);
  }
};

// One bit-parallel reverse BFS from up to 64 switches at once: bit b of a
// switch's word stands for batch[b]. With `table`, the batch must be the 64
// consecutive switches from t0 (a multiple of 64) and hops (and down bits)
// are written to their columns. With `far`, far[v] becomes at least the
// deepest level at which v was reached from any of the batch. Pull
// formulation: at each level every switch not yet reached for the whole batch
// ORs its out-neighbours' frontier words.
template <Rule kRule>
std::optional<Error> bfs_pass(const SwitchGraph& g, std::span<const std::uint32_t> pos,
                              std::span<const SwitchIndex> batch, std::uint32_t t0, BfsScratch& w,
                              HopTable* table, std::uint32_t* far) {
  const std::uint32_t n = g.num_switches();
  const auto width = static_cast<std::uint32_t>(batch.size());
  const std::uint64_t full = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  w.reset(n);
  for (std::uint32_t b = 0; b < width; ++b) {
    const SwitchIndex t = batch[b];
    const std::uint64_t bit = std::uint64_t{1} << b;
    w.reached[t.value] |= bit;
    w.front[t.value] |= bit;
    w.front_down[t.value] |= bit;
    if (table != nullptr) {
      table->mutable_row(t)[t.value] = 0;
      table->mutable_down_row(t)[t0 / 64] |= bit;
    }
  }
  for (std::uint32_t level = 1;; ++level) {
    std::uint64_t any = 0;
    for (std::uint32_t v = 0; v < n; ++v) {
      if (w.reached[v] == full) {
        w.next[v] = 0;
        w.next_down[v] = 0;
        continue;
      }
      std::uint64_t acc = 0;
      std::uint64_t acc_down = 0;
      for (const SwitchArc& a : g.arcs(SwitchIndex{v})) {
        const std::uint32_t nb = a.to.value;
        if constexpr (kRule == Rule::kShortest) {
          acc |= w.front[nb];
        } else {
          if (pos[nb] < pos[v]) {
            acc |= w.front[nb];  // v->n is up: any mode of n will do
          } else {
            acc_down |= w.front_down[nb];  // v->n is down: n must be all-down
          }
        }
      }
      const std::uint64_t fresh = (acc | acc_down) & ~w.reached[v] & full;
      const std::uint64_t fresh_down =
          kRule == Rule::kShortest ? fresh : (acc_down & fresh);  // D wins a tie
      w.next[v] = fresh;
      w.next_down[v] = fresh_down;
      if (fresh == 0) continue;
      any |= fresh;
      w.reached[v] |= fresh;
      if (far != nullptr) far[v] = std::max(far[v], level);
      if (table != nullptr) {
        if (level > HopTable::kMaxHops) {
          return Error{Errc::kUnsupported,
                       fmt::format("a route needs more than {} switch hops (switch index {}); "
                                   "such deep fabrics are not supported",
                                   HopTable::kMaxHops, v)};
        }
        std::uint8_t* row = table->mutable_row(SwitchIndex{v}) + t0;
        for (std::uint64_t m = fresh; m != 0; m &= m - 1) {
          row[std::countr_zero(m)] = static_cast<std::uint8_t>(level);
        }
        table->mutable_down_row(SwitchIndex{v})[t0 / 64] |= fresh_down;
      }
    }
    if (any == 0) break;
    w.front.swap(w.next);
    w.front_down.swap(w.next_down);
  }
  return std::nullopt;
}

// Runs bfs_pass over `sources` in batches of 64 on the pool (sources empty:
// all switches, in index order, into `table`). far_by_slot, when given, gets
// one array per pool slot. Returns the error of the lowest failing batch, so
// the outcome does not depend on scheduling.
template <Rule kRule>
Result<void> run_passes(const SwitchGraph& g, std::span<const std::uint32_t> pos,
                        std::span<const SwitchIndex> sources, HopTable* table,
                        std::vector<std::vector<std::uint32_t>>* far_by_slot, WorkerPool& pool,
                        std::stop_token stop) {
  const std::uint32_t n = g.num_switches();
  std::vector<SwitchIndex> all;
  if (sources.empty()) {
    all.resize(n);
    for (std::uint32_t s = 0; s < n; ++s) all[s] = SwitchIndex{s};
    sources = all;
  }
  const auto batches = static_cast<std::uint32_t>((sources.size() + 63) / 64);
  std::vector<BfsScratch> scratch(pool.size());
  if (far_by_slot != nullptr) far_by_slot->assign(pool.size(), std::vector<std::uint32_t>(n, 0));
  std::mutex err_mu;
  std::optional<std::pair<std::uint32_t, Error>> first_error;
  std::atomic<bool> failed{false};
  pool.parallel_for(batches, 1, [&](std::size_t begin, std::size_t end, unsigned slot) {
    for (std::size_t b = begin; b < end; ++b) {
      if (stop.stop_requested() || failed.load(std::memory_order_relaxed)) return;
      const auto batch =
          sources.subspan(b * 64, std::min<std::size_t>(64, sources.size() - b * 64));
      auto err = bfs_pass<kRule>(g, pos, batch, static_cast<std::uint32_t>(b * 64), scratch[slot],
                                 table, far_by_slot ? (*far_by_slot)[slot].data() : nullptr);
      if (err) {
        std::lock_guard lock(err_mu);
        if (!first_error || first_error->first > b) {
          first_error.emplace(static_cast<std::uint32_t>(b), std::move(*err));
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
  });
  if (first_error) return first_error->second;
  if (stop.stop_requested()) return Error{Errc::kCancelled, "hop table computation cancelled"};
  return ok_result();
}

}  // namespace

Result<HopTable> shortest_hops(const SwitchGraph& g, WorkerPool& pool, std::stop_token stop) {
  HopTable table(g.num_switches());
  SUBNETD_TRY((run_passes<Rule::kShortest>(g, {}, {}, &table, nullptr, pool, stop)));
  return table;
}

Result<HopTable> updown_hops(const SwitchGraph& g, std::span<const std::uint32_t> order_pos,
                             WorkerPool& pool, std::stop_token stop) {
  if (order_pos.size() != g.num_switches()) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("up/down order covers {} switches, the fabric has {}",
                             order_pos.size(), g.num_switches())};
  }
  HopTable table(g.num_switches());
  SUBNETD_TRY((run_passes<Rule::kUpDown>(g, order_pos, {}, &table, nullptr, pool, stop)));
  return table;
}

Result<std::vector<std::uint32_t>> farthest_hops(const SwitchGraph& g,
                                                 std::span<const SwitchIndex> sources,
                                                 WorkerPool& pool, std::stop_token stop) {
  std::vector<std::uint32_t> far(g.num_switches(), 0);
  if (sources.empty()) return far;
  std::vector<std::vector<std::uint32_t>> by_slot;
  SUBNETD_TRY((run_passes<Rule::kShortest>(g, {}, sources, nullptr, &by_slot, pool, stop)));
  for (const auto& slot : by_slot) {
    for (std::uint32_t v = 0; v < far.size(); ++v) far[v] = std::max(far[v], slot[v]);
  }
  return far;
}

Result<std::vector<std::uint32_t>> eccentricities(const SwitchGraph& g, WorkerPool& pool,
                                                  std::stop_token stop) {
  std::vector<SwitchIndex> all(g.num_switches());
  for (std::uint32_t s = 0; s < all.size(); ++s) all[s] = SwitchIndex{s};
  return farthest_hops(g, all, pool, stop);
}

}  // namespace subnetd::routing

// SubnetManager: verification on demand (the full verifier on the published
// tables, off the strand; concurrent requests share one run) and read-back
// of what the switches actually hold.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "daemon/subnet_manager.hpp"

namespace subnetd::daemon {
namespace {

namespace asio = boost::asio;
namespace mad = discovery::mad;
using Steady = std::chrono::steady_clock;

state::Verdict verdict_of(Errc e) {
  switch (e) {
    case Errc::kIncomplete:
      return state::Verdict::kIncomplete;
    case Errc::kForwardingLoop:
      return state::Verdict::kLoop;
    case Errc::kCdgCycle:
      return state::Verdict::kCreditLoop;
    default:
      return state::Verdict::kOk;  // not a verdict: the caller checks
  }
}

bool is_verdict(Errc e) {
  return e == Errc::kIncomplete || e == Errc::kForwardingLoop || e == Errc::kCdgCycle;
}

}  // namespace

void SubnetManager::verify_routing(state::VerifyRequest request,
                                   state::Completion<Result<state::VerifyReply>> done) {
  post([this, request, done = std::move(done)]() mutable {
    if (stopped_) {
      done(Error{Errc::kCancelled, "subnetd is stopping"});
      return;
    }
    if (!current_) {
      done(Error{Errc::kUnreachable, "no routing yet: the first sweep has not finished"});
      return;
    }
    const std::uint64_t gen = publisher_.current()->generation;
    if (!request.read_back && verified_ && verified_->generation == gen) {
      state::VerifyReply r = *verified_;
      r.shared = true;
      done(std::move(r));
      return;
    }
    VerifyWaiter w{std::move(done), request.read_back};
    if (verify_running_ && verify_generation_ == gen &&
        (verify_running_read_back_ || !request.read_back)) {
      verify_joined_.push_back(std::move(w));
      return;
    }
    verify_queue_.push_back(std::move(w));
    if (!verify_running_) start_verify();
  });
}

void SubnetManager::start_verify() {
  SUBNETD_ASSERT_ON(strand_);
  if (verify_queue_.empty() || stopped_) return;
  verify_running_ = true;
  verify_generation_ = publisher_.current()->generation;
  verify_running_read_back_ = false;
  for (const VerifyWaiter& w : verify_queue_) verify_running_read_back_ |= w.read_back;
  verify_joined_ = std::move(verify_queue_);
  verify_queue_.clear();
  asio::co_spawn(strand_, verify_task(verify_running_read_back_), asio::detached);
}

asio::awaitable<void> SubnetManager::verify_task(bool with_read_back) {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  // The published snapshot keeps what it verifies alive, whatever the SM
  // publishes meanwhile.
  const std::shared_ptr<const state::FabricState> s = publisher_.current();
  Result<state::VerifyReply> out = Error{Errc::kUnreachable, "no routing published yet"};
  if (s->topology && s->lids && s->routes) {
    const auto t0 = Steady::now();
    // Named, not a temporary inside the co_await (see discovery/coro.hpp).
    auto check = [s, this] {
      return routing::verify(*s->topology, *s->lids, *s->routes, pool_, stop_source_.get_token());
    };
    auto v = co_await compute_.run(std::move(check));
    if (alive.expired()) co_return;
    state::VerifyReply reply;
    reply.generation = s->generation;
    reply.took = std::chrono::duration_cast<std::chrono::microseconds>(Steady::now() - t0);
    if (v.ok()) {
      reply.pairs_checked = v->pairs_checked;
      reply.num_vls = v->num_vls;
      reply.channels = v->channels;
      reply.dependencies = v->dependencies;
      reply.message = fmt::format(
          "complete, loop-free, deadlock-free: {} switch/LID pairs, {} VL(s), {} channels, {} "
          "dependencies, {:.1f} ms",
          v->pairs_checked, v->num_vls, v->channels, v->dependencies, v->total_seconds * 1000.0);
      out = reply;
    } else if (is_verdict(v.error().code)) {
      reply.verdict = verdict_of(v.error().code);
      reply.message = v.error().message;
      out = reply;
    } else {
      out = v.error();
    }
    if (out.ok()) verified_ = *out;
    if (out.ok() && with_read_back && !stopped_) {
      state::ReadBackReport rb = co_await read_back(s);
      if (alive.expired()) co_return;
      if (rb.blocks_differ != 0 && out->verdict == state::Verdict::kOk) {
        out->verdict = state::Verdict::kTablesDiffer;
        out->message = fmt::format(
            "{} of {} LFT blocks on the switches differ from the published tables; first: {}",
            rb.blocks_differ, rb.blocks_read,
            rb.differences.empty() ? std::string("?") : rb.differences.front());
      }
      out->read_back = std::move(rb);
      out->took = std::chrono::duration_cast<std::chrono::microseconds>(Steady::now() - t0);
    }
  }
  std::vector<VerifyWaiter> waiters;
  waiters.swap(verify_joined_);
  verify_running_ = false;
  bool first = true;
  for (VerifyWaiter& w : waiters) {
    if (out.ok()) {
      state::VerifyReply r = *out;
      r.shared = !first;
      if (!w.read_back) r.read_back.reset();
      w.done(std::move(r));
    } else {
      w.done(out.error());
    }
    first = false;
  }
  start_verify();
  check_idle();
}

asio::awaitable<std::vector<std::uint8_t>> SubnetManager::read_lft_blocks(
    const routing::Topology& t, bool extended, std::uint32_t blocks,
    std::function<std::vector<std::uint8_t>(SwitchIndex)> path_to, LftBlockFn on_block) {
  SUBNETD_ASSERT_ON(strand_);
  discovery::FlowOptions fo;
  fo.window = cfg_.sweep.smp_window;
  fo.per_destination = kSmpsPerSwitch;
  fo.timeout = std::chrono::duration_cast<std::chrono::microseconds>(cfg_.sweep.timeout);
  fo.retries = cfg_.sweep.retries;
  discovery::Flow flow(engine_, fo);
  const mad::AttrId attr =
      extended ? mad::AttrId::kExtLinearForwardingTable : mad::AttrId::kLinearForwardingTable;
  std::vector<std::uint8_t> failed(t.num_switches(), 0);
  std::vector<std::vector<std::uint8_t>> paths(t.num_switches());
  for (std::uint32_t sw = 0; sw < t.num_switches(); ++sw) {
    paths[sw] = path_to(SwitchIndex{sw});
    if (paths[sw].empty()) failed[sw] = 1;  // no route known to it
  }
  // Block by block across the switches, not switch by switch: the queue
  // then spans every switch, so the window is spread over many SMAs that
  // answer in parallel instead of a few that serve their SMPs in turn (at
  // k=80, 2,125 blocks a switch: 36 s of fabric time switch by switch).
  constexpr std::size_t kQueued = 16384;
  for (std::uint32_t b = 0; b < blocks && !engine_.stopped(); ++b) {
    for (std::uint32_t sw = 0; sw < t.num_switches(); ++sw) {
      if (paths[sw].empty()) continue;
      flow.submit(
          mad::make_dr_smp(mad::Method::kGet, attr, b, paths[sw], 0), 0,
          [&failed, &on_block, sw, b](Result<mad::Smp> r) {
            if (!r.ok()) {
              failed[sw] = 1;
              return;
            }
            const auto held = mad::LinearForwardingTable::decode(mad::data_of(*r));
            on_block(sw, b, held.ports);
          },
          discovery::dest_of(t.switch_node(SwitchIndex{sw})));
      if (flow.pending() >= kQueued) co_await flow.drained(kQueued / 2);
    }
  }
  co_await flow.drained();
  co_return failed;
}

asio::awaitable<state::ReadBackReport> SubnetManager::read_back(
    std::shared_ptr<const state::FabricState> s) {
  SUBNETD_ASSERT_ON(strand_);
  state::ReadBackReport report;
  const routing::Topology& t = *s->topology;
  const routing::Routes& routes = *s->routes;
  const std::shared_ptr<const BringUpResult> c = current_;
  const std::shared_ptr<FastPath> fp = fast_;
  // A route that avoids the links found down since the sweep: the fast
  // path's (same switch indices while it belongs to the published sweep).
  auto path_to = [&](SwitchIndex sw) {
    std::vector<std::uint8_t> path;
    if (fp && c && &fp->rerouter().topology() == &c->sweep.topology) {
      path = fp->path_to(sw);
    } else if (c && &c->sweep.topology == s->topology.get()) {
      const auto p = c->sweep.paths.path(t.switch_node(sw));
      path.assign(p.begin(), p.end());
    }
    return path;
  };
  auto compare = [&report, &t, &routes](std::uint32_t sw, std::uint32_t b,
                                        std::span<const std::uint8_t> held) {
    ++report.blocks_read;
    const auto want = routes.lfts[sw].block(b);
    for (std::uint32_t i = 0; i < routing::kLftBlockSize; ++i) {
      if (held[i] == want[i]) continue;
      ++report.blocks_differ;
      if (report.differences.size() < state::ReadBackReport::kMaxDifferences) {
        report.differences.push_back(
            fmt::format("switch {} block {}: LID {:#x} -> port {}, published {}",
                        t.label(t.switch_node(SwitchIndex{sw})), b, b * routing::kLftBlockSize + i,
                        held[i], want[i]));
      }
      break;
    }
  };
  report.switches = static_cast<std::uint32_t>(t.num_switches());
  const std::uint32_t blocks = routes.max_lid.value / routing::kLftBlockSize + 1;
  // Named before the co_await (see discovery/coro.hpp).
  std::function<std::vector<std::uint8_t>(SwitchIndex)> paths = path_to;
  LftBlockFn each = compare;
  const std::vector<std::uint8_t> silent =
      co_await read_lft_blocks(t, s->lids->space.extended(), blocks, paths, each);
  for (std::uint8_t x : silent) report.switches_silent += x;
  co_return report;
}

}  // namespace subnetd::daemon

// The SM's multicast: trees for the registry's groups after joins and
// leaves, between heavy sweeps (which compute them with everything else).
// See subnet_manager.hpp.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "daemon/dump_files.hpp"
#include "daemon/multicast.hpp"
#include "daemon/subnet_manager.hpp"

namespace subnetd::daemon {

namespace asio = boost::asio;

void SubnetManager::attach_multicast(state::McastRegistry* registry) {
  mcast_registry_ = registry;
  if (registry == nullptr) return;
  std::weak_ptr<int> alive = life_;
  registry->set_on_change([this, alive] {
    if (alive.expired()) return;
    post([this] { multicast_changed(); });
  });
}

void SubnetManager::multicast_changed() {
  SUBNETD_ASSERT_ON(strand_);
  if (stopped_ || mcast_registry_ == nullptr) return;
  // A change the last computation already took (the heavy sweep's own
  // broadcast groups, say) needs nothing more.
  if (mcast_registry_->version() == mcast_version_) return;
  // Before the first bring-up, or while a heavy sweep runs, the sweep takes
  // the groups (a change after it read them is taken again after it).
  mcast_dirty_ = true;
  if (!current_ || mcast_running_) return;
  mcast_running_ = true;
  asio::co_spawn(strand_, reprogram_multicast(), asio::detached);
}

void SubnetManager::keep_multicast_on_vl0(BringUpResult& r) {
  SUBNETD_ASSERT_ON(strand_);
  // On one VL every SL maps to VL 0: nothing to move.
  if (mcast_registry_ == nullptr || r.routes->num_vls <= 1) return;
  const std::vector<state::McastGroup> moved = mcast_registry_->move_to_sl0();
  if (moved.empty()) return;
  // Members joined on the old SL: this sweep asks every client to
  // register again (PortInfo:ClientReregister), so they join again and
  // learn SL 0.
  const bool members = std::any_of(moved.begin(), moved.end(),
                                   [](const state::McastGroup& g) { return !g.members.empty(); });
  if (members) reregistered_ = false;
  for (const state::McastGroup& g : moved) {
    const std::string msg = fmt::format(
        "multicast group {} (P_Key {:#06x}) moved from SL {} to SL 0: the routes use {} VLs and "
        "only VL 0 carries multicast deadlock-free{}",
        state::mgid_text(g.mgid), g.pkey, g.sl, r.routes->num_vls,
        g.members.empty()
            ? ""
            : fmt::format("; its {} member(s) are asked to register again to learn it",
                          g.members.size()));
    spdlog::warn("{}", msg);
    events_.append(state::EventKind::kMulticast, std::nullopt, std::nullopt, msg);
  }
  // The sweep's trees and what it publishes: the groups as they are now
  // (the registry's change hook then finds nothing new).
  mcast_version_ = mcast_registry_->version();
  r.mcast_groups =
      std::make_shared<const std::vector<state::McastGroup>>(mcast_registry_->groups());
}

void SubnetManager::multicast_links_failed(std::span<const routing::FailedLink> failed) {
  SUBNETD_ASSERT_ON(strand_);
  if (stopped_ || mcast_registry_ == nullptr || !current_) return;
  const routing::McastTables* trees = mcast_now_ ? mcast_now_.get() : current_->multicast.get();
  if (trees == nullptr) return;
  const bool cut = std::any_of(failed.begin(), failed.end(), [&](const routing::FailedLink& f) {
    const auto entries = trees->entries(f.sw);
    return std::any_of(entries.begin(), entries.end(),
                       [&](const routing::McastTables::Entry& e) { return e.ports.test(f.port); });
  });
  if (!cut) return;
  mcast_dirty_ = true;
  if (mcast_running_) return;
  mcast_running_ = true;
  asio::co_spawn(strand_, reprogram_multicast(), asio::detached);
}

asio::awaitable<void> SubnetManager::reprogram_multicast() {
  SUBNETD_ASSERT_ON(strand_);
  const std::weak_ptr<int> alive = life_;
  auto gone = [&] { return alive.expired() || stopped_; };
  while (mcast_dirty_ && current_ && !gone()) {
    if (heavy_running_) {
      // The sweep programs the trees; what changed after it read the
      // groups is taken when it is done (heavy_sweep_task calls again).
      break;
    }
    mcast_dirty_ = false;
    const std::shared_ptr<const BringUpResult> c = current_;
    const auto topo = topology_now_
                          ? topology_now_
                          : std::shared_ptr<const routing::Topology>(c, &c->sweep.topology);
    const auto routes = routes_now_ ? routes_now_ : c->routes;
    mcast_version_ = mcast_registry_->version();
    auto groups = std::make_shared<const std::vector<state::McastGroup>>(mcast_registry_->groups());
    const auto stop = stop_source_.get_token();
    auto compute = [&] {
      auto mc = multicast_step(*topo, *routes, *groups, pool_, stop);
      if (!mc.ok() || !routes->updown_rank.empty()) return mc;
      // No up/down order: the trees are proven with the unicast tables.
      auto v = verify_step(*topo, c->lids.map, *routes, pool_, stop, mc->tables.get());
      if (!v.ok()) return Result<MulticastResult>(v.error());
      return mc;
    };
    auto mc = co_await compute_.run(compute);
    if (gone()) break;
    if (!mc.ok()) {
      spdlog::error("multicast: {}", mc.error().message);
      events_.append(state::EventKind::kError, std::nullopt, std::nullopt,
                     "multicast trees not programmed: " + mc.error().message);
      continue;
    }
    discovery::ProgramOptions po = bring_up_options(cfg_).program;
    po.activate = false;
    po.only_multicast = true;
    discovery::Programmer programmer(po);
    discovery::ProgramLive live;
    live.multicast = mc->tables.get();
    live.held_mfts = &held_mfts_;
    // After a reroute the switches are reached around the failed links.
    std::optional<discovery::DrPaths> around;
    if (topology_now_) {
      const routing::Topology& now = *topology_now_;
      around =
          discovery::bfs_paths(c->sweep.topology, c->sweep.sm_node, c->sweep.sm_port,
                               [&now](NodeId n, PortNum p) { return now.port(n, p).connected(); });
      live.switch_paths = &*around;
    }
    auto programmed = co_await programmer.program(engine_, c->sweep, c->lids.map, *routes, nullptr,
                                                  std::move(live));
    if (gone()) break;
    if (!programmed.ok() || !programmed->ok()) {
      const std::string why =
          !programmed.ok() ? programmed.error().message : programmed->failures.front();
      spdlog::warn("multicast: programming failed ({}); the next heavy sweep sends it again", why);
      for (const Guid g : programmed.ok() ? programmed->switches_failed : std::vector<Guid>{}) {
        held_mfts_.forget(g);
      }
    }
    mcast_now_ = mc->tables;
    mcast_groups_now_ = groups;
    if (!cfg_.dump_dir.empty()) {
      if (auto d = write_dump_files(cfg_.dump_dir, *topo, c->lids.map, *routes, c->sweep.sm_node,
                                    mcast_now_.get());
          !d.ok()) {
        spdlog::warn("dump files: {}", d.error().message);
      }
    }
    const std::string msg =
        fmt::format("multicast: {} group(s), {} MFT block(s) sent", groups->size(),
                    programmed.ok() ? programmed->mft_blocks_sent : 0);
    spdlog::info("{}", msg);
    // The event before the state that reports it.
    events_.append(state::EventKind::kMulticast, std::nullopt, std::nullopt, msg);
    publish(state::SmState::kMaster, {});
  }
  mcast_running_ = false;
  check_idle();
}

}  // namespace subnetd::daemon

#include "state/mcast_groups.hpp"

#include <fmt/format.h>

#include <set>

#include "routing/mcast.hpp"

namespace subnetd::state {

Mgid ipoib_broadcast_mgid(std::uint16_t pkey) {
  pkey |= routing::kPKeyFullMember;
  return Mgid{0xff,
              0x12,
              0x40,
              0x1b,
              static_cast<std::uint8_t>(pkey >> 8),
              static_cast<std::uint8_t>(pkey & 0xFF),
              0,
              0,
              0,
              0,
              0,
              0,
              0xff,
              0xff,
              0xff,
              0xff};
}

std::string mgid_text(const Mgid& m) {
  std::string out;
  for (std::size_t i = 0; i < m.size(); i += 2) {
    out += fmt::format("{}{:02x}{:02x}", i == 0 ? "" : ":", m[i], m[i + 1]);
  }
  return out;
}

void McastRegistry::set_partition_groups(
    std::span<const routing::PartitionPlan::Partition> partitions) {
  std::unique_lock lock(mu_);
  bool any = false;
  std::set<Mgid> wanted;
  for (const auto& p : partitions) {
    if (!p.ipoib) continue;
    const Mgid mgid = ipoib_broadcast_mgid(p.pkey);
    wanted.insert(mgid);
    auto it = groups_.find(mgid);
    if (it != groups_.end()) {
      any |= !it->second.well_known;
      it->second.well_known = true;
      continue;
    }
    McastGroup g;
    g.mgid = mgid;
    g.mlid = free_mlid(Lid{});
    if (!g.mlid.valid()) break;  // every MLID taken
    g.qkey = p.ipoib_params.qkey;
    g.pkey = static_cast<std::uint16_t>(p.pkey | routing::kPKeyFullMember);
    g.mtu = p.ipoib_params.mtu;
    g.rate = p.ipoib_params.rate;
    g.sl = p.ipoib_params.sl;
    g.packet_life_time = plt_;
    g.well_known = true;
    groups_.emplace(mgid, std::move(g));
    any = true;
  }
  for (auto it = groups_.begin(); it != groups_.end();) {
    McastGroup& g = it->second;
    if (g.well_known && wanted.count(g.mgid) == 0) {
      g.well_known = false;
      any = true;
      if (g.members.empty()) {
        it = groups_.erase(it);
        continue;
      }
    }
    ++it;
  }
  if (any) changed(lock);
}

std::vector<McastGroup> McastRegistry::move_to_sl0() {
  std::unique_lock lock(mu_);
  std::vector<McastGroup> moved;
  for (auto& [_, g] : groups_) {
    if (g.sl == 0) continue;
    moved.push_back(g);
    g.sl = 0;
  }
  if (!moved.empty()) changed(lock);
  return moved;
}

std::optional<McastGroup> McastRegistry::find(const Mgid& mgid) const {
  std::lock_guard lock(mu_);
  const auto it = groups_.find(mgid);
  if (it == groups_.end()) return std::nullopt;
  return it->second;
}

Lid McastRegistry::free_mlid(Lid wanted) const {
  std::set<std::uint32_t> used;
  for (const auto& [_, g] : groups_) used.insert(g.mlid.value);
  const std::uint32_t end = routing::kMlidBase + routing::kMlidCount;
  if (wanted.value >= routing::kMlidBase && wanted.value < end && used.count(wanted.value) == 0) {
    return wanted;
  }
  for (std::uint32_t m = routing::kMlidBase; m < end; ++m) {
    if (used.count(m) == 0) return Lid{m};
  }
  return Lid{};
}

Result<McastGroup> McastRegistry::create(McastGroup g) {
  std::unique_lock lock(mu_);
  if (groups_.count(g.mgid) != 0) {
    return Error{Errc::kConflict, fmt::format("group {} exists", mgid_text(g.mgid))};
  }
  g.mlid = free_mlid(g.mlid);
  if (!g.mlid.valid()) {
    return Error{Errc::kLidsExhausted, "every multicast LID (0xc000..0xfffe) is in use"};
  }
  const McastGroup out = groups_.emplace(g.mgid, std::move(g)).first->second;
  changed(lock);
  return out;
}

Result<McastGroup> McastRegistry::join(const Mgid& mgid, Guid port, std::uint8_t join_state) {
  std::unique_lock lock(mu_);
  auto it = groups_.find(mgid);
  if (it == groups_.end()) {
    return Error{Errc::kNotFound, fmt::format("no group {}", mgid_text(mgid))};
  }
  std::uint8_t& bits = it->second.members[port];
  const std::uint8_t before = bits;
  bits = static_cast<std::uint8_t>(bits | (join_state & 0x7));
  const McastGroup out = it->second;
  if (bits != before) changed(lock);
  return out;
}

Result<McastGroup> McastRegistry::leave(const Mgid& mgid, Guid port, std::uint8_t join_state) {
  std::unique_lock lock(mu_);
  auto it = groups_.find(mgid);
  if (it == groups_.end()) {
    return Error{Errc::kNotFound, fmt::format("no group {}", mgid_text(mgid))};
  }
  McastGroup& g = it->second;
  auto m = g.members.find(port);
  if (m == g.members.end()) {
    return Error{Errc::kNotFound,
                 fmt::format("port {:#018x} is no member of {}", port.value, mgid_text(mgid))};
  }
  McastGroup out = g;
  m->second = static_cast<std::uint8_t>(m->second & ~join_state);
  out.members[port] = m->second;
  if (m->second == 0) g.members.erase(m);
  if (g.members.empty() && !g.well_known) groups_.erase(it);
  changed(lock);
  return out;
}

std::vector<McastGroup> McastRegistry::groups() const {
  std::lock_guard lock(mu_);
  std::vector<McastGroup> out;
  out.reserve(groups_.size());
  for (const auto& [_, g] : groups_) out.push_back(g);
  return out;
}

std::uint64_t McastRegistry::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

void McastRegistry::set_on_change(std::function<void()> hook) {
  std::lock_guard lock(mu_);
  on_change_ = std::move(hook);
}

void McastRegistry::changed(std::unique_lock<std::mutex>& lock) {
  ++version_;
  const std::function<void()> hook = on_change_;
  lock.unlock();
  if (hook) hook();
}

}  // namespace subnetd::state

#pragma once
// McastRegistry: the multicast groups of the subnet and their members, as
// the SA's MCMemberRecord joins and leaves make them (IBA 15.2.5.17), plus
// the IPoIB broadcast group of every partition marked for IPoIB, which the
// SM creates so that IPoIB's join (which never creates it) succeeds.
//
// Written by the SA (on the thread that answers SA MADs) and by the SM
// (partition groups at every heavy sweep); read by the SM to compute the
// multicast trees. A mutex guards it; every change bumps version() and
// calls the change hook (outside the lock), which the daemon points at the
// SM so that it recomputes and programs the trees.
//
// MLIDs come from 0xC000 upward, the lowest free one at creation, and stay
// with the group while it exists.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "routing/ids.hpp"
#include "routing/partitions.hpp"
#include "routing/result.hpp"

namespace subnetd::state {

using Mgid = std::array<std::uint8_t, 16>;

// JoinState bits (IBA 15.2.5.17).
inline constexpr std::uint8_t kJoinFull = 0x1;
inline constexpr std::uint8_t kJoinNon = 0x2;
inline constexpr std::uint8_t kJoinSendOnly = 0x4;

// The IPoIB broadcast group of a partition: ff12:401b:<pkey>::ffff:ffff
// (RFC 4391; pkey with the membership bit set).
Mgid ipoib_broadcast_mgid(std::uint16_t pkey);
std::string mgid_text(const Mgid& m);  // "ff12:401b:ffff:0000:0000:0000:ffff:ffff"

struct McastGroup {
  Mgid mgid{};
  Lid mlid;
  std::uint32_t qkey = 0;
  std::uint16_t pkey = 0xFFFF;  // with the membership bit
  std::uint8_t mtu = 4;         // IBA codes
  std::uint8_t rate = 3;
  std::uint8_t packet_life_time = 18;
  std::uint8_t sl = 0;
  std::uint32_t flow_label = 0;
  std::uint8_t hop_limit = 0;
  std::uint8_t tclass = 0;
  std::uint8_t scope = 2;  // link-local
  // Created by the SM for an IPoIB partition: kept without members.
  bool well_known = false;
  std::map<Guid, std::uint8_t> members;  // port GUID -> JoinState bits
  bool operator==(const McastGroup&) const = default;
};

class McastRegistry {
 public:
  explicit McastRegistry(std::uint8_t packet_life_time = 18) : plt_(packet_life_time) {}

  // The IPoIB broadcast groups of the partitions with ipoib: created when
  // missing (with the partition's MTU/rate/Q_Key/SL), kept with their
  // members otherwise; a broadcast group whose partition is gone or no
  // longer IPoIB stops being well-known (and goes once its last member
  // leaves).
  void set_partition_groups(std::span<const routing::PartitionPlan::Partition> partitions);

  // Puts every group on SL 0 and returns the ones it moved, as they were:
  // with VL layers only VL 0's CDG holds multicast's dependencies
  // (routing/mcast.hpp), so a partition's ipoib.sl, or a group made before
  // the routes took layers, must not send on another SL.
  std::vector<McastGroup> move_to_sl0();

  std::optional<McastGroup> find(const Mgid& mgid) const;
  // Creates a group: `g.mlid` is assigned (the request's, if free and in
  // range, else the lowest free); kConflict when the MGID exists;
  // kLidsExhausted when every MLID is taken.
  Result<McastGroup> create(McastGroup g);
  // Adds JoinState bits for a port (kNotFound without the group).
  Result<McastGroup> join(const Mgid& mgid, Guid port, std::uint8_t join_state);
  // Removes JoinState bits; the port leaves when none remain, the group
  // goes when it has no member left and is not well-known. kNotFound
  // without the group or the member.
  Result<McastGroup> leave(const Mgid& mgid, Guid port, std::uint8_t join_state);

  std::vector<McastGroup> groups() const;  // by MGID
  std::uint64_t version() const;
  void set_on_change(std::function<void()> hook);

 private:
  void changed(std::unique_lock<std::mutex>& lock);
  Lid free_mlid(Lid wanted) const;

  std::uint8_t plt_;
  mutable std::mutex mu_;
  std::map<Mgid, McastGroup> groups_;
  std::uint64_t version_ = 0;
  std::function<void()> on_change_;
};

}  // namespace subnetd::state

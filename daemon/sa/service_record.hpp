#pragma once
// ServiceRecord (IBA 15.2.5.14): services that ports register with the SA
// for others to find (a storage target, a job launcher), each for a lease.
//
//  - Set (register): ServiceID, ServiceGID and ServiceP_Key are required
//    (else ERR_INSUFFICIENT_COMPONENTS) and name the record: a Set of an
//    existing one replaces it and renews its lease. The GID must name an
//    endport of the subnet (ERR_REQ_INVALID_GID), the requester's own (or
//    the SM's port asks), and the requester must hold the P_Key
//    (ERR_REQ_INVALID), as for MCMemberRecord joins. ServiceLease is in seconds, 0xFFFFFFFF
//    for ever; a lease of 0 registers nothing that lasts (the record is
//    answered and gone). The answer is the record as stored.
//  - Delete: the same three components name the record, with the same
//    rules; ERR_NO_RECORDS when there is none. The answer is the record deleted.
//  - Get/GetTable: the records whose P_Key the requester holds that match
//    the query, each with the seconds its lease has left.
//
// Records whose lease ran out are dropped on the next access. At most
// kMaxServices are kept (a Set beyond that is ERR_NO_RESOURCES), so no
// client can grow the SA without bound. Services are not persisted: like
// OpenSM, a restarted SM starts empty and clients register again (they
// renew their leases anyway).
//
// Threading: ServiceRegistry is locked inside; answer_service() runs on
// any thread.

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"
#include "state/path_record.hpp"

namespace subnetd::daemon::sa {

inline constexpr std::size_t kServiceRecordSize = 176;
inline constexpr std::size_t kMaxServices = 65536;

class ServiceRegistry {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using Record = std::array<std::uint8_t, kServiceRecordSize>;

  // What a registration is known by: ServiceID, ServiceGID, ServiceP_Key.
  struct Key {
    std::uint64_t id = 0;
    std::array<std::uint8_t, 16> gid{};
    std::uint16_t pkey = 0;
    auto operator<=>(const Key&) const = default;
  };

  // Stores (or replaces) `record` until `expires` (nullopt: never).
  // False when the registry is full at `now` and `key` is new.
  bool put(const Key& key, const Record& record, std::optional<time_point> expires, time_point now);
  // The record removed, if there was one.
  std::optional<Record> erase(const Key& key);
  // Every live record at `now`, with its lease field set to the seconds
  // left; expired ones are dropped first.
  std::vector<Record> snapshot(time_point now);
  std::size_t size() const;

 private:
  struct Entry {
    Record record;
    std::optional<time_point> expires;
  };
  void purge(time_point now);  // mu_ held
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
};

AttrAnswer answer_service(const discovery::mad::sa::SaMad& req, Lid requester,
                          const state::FabricState& st, const SaAgentOptions& opts,
                          const state::PathIndex& index, ServiceRegistry& registry,
                          ServiceRegistry::time_point now);

}  // namespace subnetd::daemon::sa

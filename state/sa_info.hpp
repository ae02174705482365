#pragma once
// What the API may know of the Subnet Administration agent (which lives in
// daemon/sa): its counters, and the settings its PathRecords carry, so that
// gRPC's GetPathRecord answers exactly what the SA answers on the wire.
// Implemented by daemon::sa::SaAgent; thread-safe (atomics and constants).

#include <cstdint>

namespace subnetd::state {

struct SaStats {
  std::uint64_t requests = 0;       // well-formed requests answered
  std::uint64_t errors = 0;         // of those, answered with a non-zero status
  std::uint64_t records = 0;        // records sent
  std::uint64_t malformed = 0;      // dropped: not a valid SA MAD
  std::uint64_t ignored = 0;        // dropped: responses and other non-requests
  std::uint64_t subscriptions = 0;  // InformInfo subscriptions held
  std::uint64_t reports = 0;        // Reports (notices) made for subscribers
  std::uint64_t report_acks = 0;    // ReportResps received
};

class SaInfo {
 public:
  virtual ~SaInfo() = default;
  virtual SaStats sa_stats() const = 0;
  // PathRecord PacketLifeTime (IBA encoding: 4.096 us x 2^v).
  virtual std::uint8_t packet_life_time() const = 0;
  // The subnet prefix of every GID the SA names (the upper 64 bits).
  virtual std::uint64_t subnet_prefix() const = 0;
};

}  // namespace subnetd::state

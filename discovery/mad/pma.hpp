#pragma once
// Performance Management (PMA, management class 0x04, IBA 16.1): the
// attributes the performance manager reads and the simulator answers.
//
// A PMA MAD is a GMP on QP1: the 24-byte common header, 40 reserved bytes,
// then 192 bytes of attribute data (kDataOffset).
//   ClassPortInfo (0x0001): CapabilityMask at data[2..3]; bit 9
//     (IsExtendedWidthSupported) or bit 10 (...NoIETF) says the port has
//     64-bit PortCountersExtended.
//   PortCounters (0x0012), IBA Table 247 (offsets in the data):
//      1 PortSelect, 2-3 CounterSelect, 4-5 SymbolErrorCounter,
//      6 LinkErrorRecoveryCounter, 7 LinkDownedCounter, 8-9 PortRcvErrors,
//     10-11 PortRcvRemotePhysicalErrors, 12-13 PortRcvSwitchRelayErrors,
//     14-15 PortXmitDiscards, 16 PortXmitConstraintErrors,
//     17 PortRcvConstraintErrors, 18 CounterSelect2,
//     19 LocalLinkIntegrityErrors (high nibble) and
//        ExcessiveBufferOverrunErrors (low nibble), 22-23 VL15Dropped,
//     24 PortXmitData, 28 PortRcvData, 32 PortXmitPkts, 36 PortRcvPkts,
//     40 PortXmitWait (32 bits each; data in 4-byte words).
//     Every counter stops at its maximum (it does not wrap); a Set with
//     CounterSelect bits clears the selected ones.
//   PortCountersExtended (0x001D), IBA Table 260: 1 PortSelect,
//     2-3 CounterSelect, 8 PortXmitData, 16 PortRcvData, 24 PortXmitPkts,
//     32 PortRcvPkts, 40/48 Unicast Xmit/Rcv, 56/64 Multicast Xmit/Rcv
//     (64 bits each).

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "discovery/transport.hpp"
#include "routing/result.hpp"

namespace subnetd::discovery::mad::pma {

inline constexpr std::uint8_t kMgmtClass = 0x04;
inline constexpr std::uint8_t kClassVersion = 1;
inline constexpr std::size_t kDataOffset = 64;
inline constexpr std::uint32_t kQkey = 0x80010000;  // the GSI Q_Key

enum class Attr : std::uint16_t {
  kClassPortInfo = 0x0001,
  kPortCounters = 0x0012,
  kPortCountersExtended = 0x001D,
};

inline constexpr std::uint16_t kCapExtendedWidth = 1U << 9;
inline constexpr std::uint16_t kCapExtendedWidthNoIetf = 1U << 10;
inline constexpr std::uint16_t kCapAllPortSelect = 1U << 8;

// PortCounters, widened: each field as the port reports it (saturated at
// its width's maximum). Data in bytes (the wire counts 4-byte words).
struct PortCounters {
  std::uint32_t symbol_errors = 0;     // 16 bits
  std::uint32_t link_recovers = 0;     // 8
  std::uint32_t link_downed = 0;       // 8
  std::uint32_t rcv_errors = 0;        // 16
  std::uint32_t rcv_remote_phys = 0;   // 16
  std::uint32_t rcv_switch_relay = 0;  // 16
  std::uint32_t xmit_discards = 0;     // 16
  std::uint32_t xmit_constraint = 0;   // 8
  std::uint32_t rcv_constraint = 0;    // 8
  std::uint32_t link_integrity = 0;    // 4
  std::uint32_t buffer_overrun = 0;    // 4
  std::uint32_t vl15_dropped = 0;      // 16
  std::uint32_t xmit_words = 0;        // 32, 4-byte words
  std::uint32_t rcv_words = 0;         // 32
  std::uint32_t xmit_pkts = 0;         // 32
  std::uint32_t rcv_pkts = 0;          // 32
  std::uint32_t xmit_wait = 0;         // 32
  bool operator==(const PortCounters&) const = default;

  // Whether some counter has passed `fraction` of its maximum (the
  // performance manager clears the port's counters then, as OpenSM does).
  bool near_saturation(double fraction) const;
};

struct PortCountersExtended {
  std::uint64_t xmit_words = 0, rcv_words = 0, xmit_pkts = 0, rcv_pkts = 0;
  std::uint64_t unicast_xmit_pkts = 0, unicast_rcv_pkts = 0;
  std::uint64_t multicast_xmit_pkts = 0, multicast_rcv_pkts = 0;
  bool operator==(const PortCountersExtended&) const = default;
};

// A request: Get (or Set, with `data` the attribute bytes) of `attr` for
// port `port_select` at `dlid`, transaction id `tid`.
Mad make_request(std::uint8_t method, Attr attr, std::uint8_t port_select, std::uint32_t dlid,
                 std::uint64_t tid, std::span<const std::uint8_t> data = {});
// A PortCounters Set that clears every counter of the port.
Mad make_clear(std::uint8_t port_select, std::uint32_t dlid, std::uint64_t tid);

// The common header of a PMA MAD, checked: class 0x04, class version 1.
struct Header {
  std::uint8_t method = 0;
  std::uint16_t status = 0;
  std::uint64_t tid = 0;
  Attr attr = Attr::kClassPortInfo;
  std::uint32_t attr_mod = 0;
};
Result<Header> decode_header(std::span<const std::uint8_t> mad);

// Attribute data (the 192 bytes at kDataOffset) <-> values.
PortCounters decode_port_counters(std::span<const std::uint8_t> data);
void encode_port_counters(const PortCounters& c, std::uint8_t port_select,
                          std::span<std::uint8_t> data);
PortCountersExtended decode_port_counters_ext(std::span<const std::uint8_t> data);
void encode_port_counters_ext(const PortCountersExtended& c, std::uint8_t port_select,
                              std::span<std::uint8_t> data);
inline std::uint16_t capability_mask(std::span<const std::uint8_t> data) {
  return static_cast<std::uint16_t>((data[2] << 8) | data[3]);
}
// The PortSelect a request names.
inline std::uint8_t port_select(std::span<const std::uint8_t> data) {
  return data[1];
}
// A Set's CounterSelect (which PortCounters to clear; IBA Table 247).
inline std::uint16_t counter_select(std::span<const std::uint8_t> data) {
  return static_cast<std::uint16_t>((data[2] << 8) | data[3]);
}

}  // namespace subnetd::discovery::mad::pma

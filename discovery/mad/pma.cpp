#include "discovery/mad/pma.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "discovery/mad/bytes.hpp"

namespace subnetd::discovery::mad::pma {

namespace {

// Common MAD header offsets (IBA 13.4.2).
constexpr std::size_t kBaseVersion = 0, kClass = 1, kClassVer = 2, kMethod = 3, kStatus = 4,
                      kTid = 8, kAttrId = 16, kAttrMod = 20;

}  // namespace

bool PortCounters::near_saturation(double fraction) const {
  auto over = [fraction](std::uint64_t v, std::uint64_t max) {
    return static_cast<double>(v) >= fraction * static_cast<double>(max);
  };
  return over(symbol_errors, 0xFFFF) || over(link_recovers, 0xFF) || over(link_downed, 0xFF) ||
         over(rcv_errors, 0xFFFF) || over(rcv_remote_phys, 0xFFFF) ||
         over(rcv_switch_relay, 0xFFFF) || over(xmit_discards, 0xFFFF) ||
         over(xmit_constraint, 0xFF) || over(rcv_constraint, 0xFF) || over(link_integrity, 0xF) ||
         over(buffer_overrun, 0xF) || over(vl15_dropped, 0xFFFF) || over(xmit_words, 0xFFFFFFFF) ||
         over(rcv_words, 0xFFFFFFFF) || over(xmit_pkts, 0xFFFFFFFF) || over(rcv_pkts, 0xFFFFFFFF) ||
         over(xmit_wait, 0xFFFFFFFF);
}

Mad make_request(std::uint8_t method, Attr attr, std::uint8_t port_select, std::uint32_t dlid,
                 std::uint64_t tid, std::span<const std::uint8_t> data) {
  Mad m;
  std::uint8_t* b = m.data.data();
  b[kBaseVersion] = 1;
  b[kClass] = kMgmtClass;
  b[kClassVer] = kClassVersion;
  b[kMethod] = method;
  store_be64(b + kTid, tid);
  store_be16(b + kAttrId, static_cast<std::uint16_t>(attr));
  store_be32(b + kAttrMod, 0);
  if (!data.empty()) {
    std::copy_n(data.begin(), std::min<std::size_t>(data.size(), kMadSize - kDataOffset),
                b + kDataOffset);
  }
  b[kDataOffset + 1] = port_select;
  m.dlid = dlid;
  return m;
}

Mad make_clear(std::uint8_t port_select, std::uint32_t dlid, std::uint64_t tid) {
  std::array<std::uint8_t, 192> data{};
  data[1] = port_select;
  data[2] = 0xFF;  // CounterSelect: every PortCounters counter
  data[3] = 0xFF;
  data[18] = 0x01;  // CounterSelect2: PortXmitWait
  return make_request(0x02, Attr::kPortCounters, port_select, dlid, tid, data);
}

Result<Header> decode_header(std::span<const std::uint8_t> mad) {
  if (mad.size() < kMadSize) {
    return Error{Errc::kMalformedMad, fmt::format("PMA MAD of {} bytes", mad.size())};
  }
  const std::uint8_t* b = mad.data();
  if (b[kBaseVersion] != 1 || b[kClass] != kMgmtClass || b[kClassVer] != kClassVersion) {
    return Error{Errc::kMalformedMad,
                 fmt::format("not a PMA MAD (base version {}, class {:#04x}, class version {})",
                             b[kBaseVersion], b[kClass], b[kClassVer])};
  }
  Header h;
  h.method = b[kMethod];
  h.status = load_be16(b + kStatus);
  h.tid = load_be64(b + kTid);
  h.attr = static_cast<Attr>(load_be16(b + kAttrId));
  h.attr_mod = load_be32(b + kAttrMod);
  return h;
}

PortCounters decode_port_counters(std::span<const std::uint8_t> d) {
  PortCounters c;
  c.symbol_errors = load_be16(&d[4]);
  c.link_recovers = d[6];
  c.link_downed = d[7];
  c.rcv_errors = load_be16(&d[8]);
  c.rcv_remote_phys = load_be16(&d[10]);
  c.rcv_switch_relay = load_be16(&d[12]);
  c.xmit_discards = load_be16(&d[14]);
  c.xmit_constraint = d[16];
  c.rcv_constraint = d[17];
  c.link_integrity = d[19] >> 4;
  c.buffer_overrun = d[19] & 0x0F;
  c.vl15_dropped = load_be16(&d[22]);
  c.xmit_words = load_be32(&d[24]);
  c.rcv_words = load_be32(&d[28]);
  c.xmit_pkts = load_be32(&d[32]);
  c.rcv_pkts = load_be32(&d[36]);
  c.xmit_wait = load_be32(&d[40]);
  return c;
}

void encode_port_counters(const PortCounters& c, std::uint8_t port_select,
                          std::span<std::uint8_t> d) {
  auto sat16 = [](std::uint32_t v) { return static_cast<std::uint16_t>(std::min(v, 0xFFFFU)); };
  auto sat8 = [](std::uint32_t v) { return static_cast<std::uint8_t>(std::min(v, 0xFFU)); };
  d[1] = port_select;
  store_be16(&d[4], sat16(c.symbol_errors));
  d[6] = sat8(c.link_recovers);
  d[7] = sat8(c.link_downed);
  store_be16(&d[8], sat16(c.rcv_errors));
  store_be16(&d[10], sat16(c.rcv_remote_phys));
  store_be16(&d[12], sat16(c.rcv_switch_relay));
  store_be16(&d[14], sat16(c.xmit_discards));
  d[16] = sat8(c.xmit_constraint);
  d[17] = sat8(c.rcv_constraint);
  d[19] = static_cast<std::uint8_t>((std::min(c.link_integrity, 0xFU) << 4) |
                                    std::min(c.buffer_overrun, 0xFU));
  store_be16(&d[22], sat16(c.vl15_dropped));
  store_be32(&d[24], c.xmit_words);
  store_be32(&d[28], c.rcv_words);
  store_be32(&d[32], c.xmit_pkts);
  store_be32(&d[36], c.rcv_pkts);
  store_be32(&d[40], c.xmit_wait);
}

PortCountersExtended decode_port_counters_ext(std::span<const std::uint8_t> d) {
  PortCountersExtended c;
  c.xmit_words = load_be64(&d[8]);
  c.rcv_words = load_be64(&d[16]);
  c.xmit_pkts = load_be64(&d[24]);
  c.rcv_pkts = load_be64(&d[32]);
  c.unicast_xmit_pkts = load_be64(&d[40]);
  c.unicast_rcv_pkts = load_be64(&d[48]);
  c.multicast_xmit_pkts = load_be64(&d[56]);
  c.multicast_rcv_pkts = load_be64(&d[64]);
  return c;
}

void encode_port_counters_ext(const PortCountersExtended& c, std::uint8_t port_select,
                              std::span<std::uint8_t> d) {
  d[1] = port_select;
  store_be64(&d[8], c.xmit_words);
  store_be64(&d[16], c.rcv_words);
  store_be64(&d[24], c.xmit_pkts);
  store_be64(&d[32], c.rcv_pkts);
  store_be64(&d[40], c.unicast_xmit_pkts);
  store_be64(&d[48], c.unicast_rcv_pkts);
  store_be64(&d[56], c.multicast_xmit_pkts);
  store_be64(&d[64], c.multicast_rcv_pkts);
}

}  // namespace subnetd::discovery::mad::pma

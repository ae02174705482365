// The simulated Performance Management Agent (PMA, class 0x04): port
// counters driven by a traffic model and by error injection. See
// discovery/README.md ("Port counters") and SimOptions::traffic_*.
//
// A PMA request from the SM crosses the fabric as GMPs do (walk_gmp: the
// switches' tables, ACTIVE links, instantly) to the port that owns its
// DLID (a CA port, or a switch's port 0 for every port of the switch), and
// the answer comes back the same way; a broken way loses either.

#include <algorithm>

#include "discovery/mad/bytes.hpp"
#include "discovery/sim/sim_core.hpp"

namespace subnetd::discovery::sim {

namespace {

namespace pma = mad::pma;
namespace st = mad::status;

constexpr double kPacketBytes = 2048.0;

std::uint32_t sat32(std::uint64_t v) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 0xFFFFFFFFULL));
}

}  // namespace

SimCore::Clock SimCore::traffic_now() const {
  const Clock now =
      opts_.traffic_clock
          ? opts_.traffic_clock()
          : std::chrono::duration_cast<Clock>(std::chrono::steady_clock::now().time_since_epoch());
  return now - traffic_epoch_;
}

SimCore::PmaPort& SimCore::pma_port(PortRef at) {
  if (pma_.empty()) pma_.resize(ports_.size());
  return pma_[index(at)];
}

double SimCore::pma_xmit_rate(PortRef at) {
  const double per_lid = opts_.traffic_bytes_per_lid;
  if (per_lid <= 0.0 || !link_physically_up(at.node, at.port)) return 0.0;
  if (!is_switch(at.node)) {
    // Every other LID the port could send to (LIDs are dense from 1).
    (void)home_of(0);  // the LID table, rebuilt only after LIDs changed
    return per_lid * static_cast<double>(home_.size() > 2 ? home_.size() - 2 : 0);
  }
  const std::uint32_t si = topo_.node(at.node).switch_index.value;
  std::vector<std::uint32_t>& counts = routes_out_[si];
  if (counts.empty()) {
    counts.assign(std::size_t{topo_.node(at.node).num_ports} + 1, 0);
    for (const std::uint8_t p : lfts_[si]) {
      if (p < counts.size()) ++counts[p];
    }
  }
  return per_lid * static_cast<double>(counts[at.port]);
}

void SimCore::pma_accrue(PortRef at) {
  PmaPort& c = pma_port(at);
  const Clock now = traffic_now();
  if (c.updated.count() >= 0 && now > c.updated) {
    const double secs = std::chrono::duration<double>(now - c.updated).count();
    c.xmit_bytes += pma_xmit_rate(at) * secs;
    const routing::Port& tp = topo_.port(at);
    if (tp.connected()) c.rcv_bytes += pma_xmit_rate({tp.remote_node, tp.remote_port}) * secs;
  }
  c.updated = now;
}

void SimCore::inject_port_errors(PortRef at, const PortErrors& e) {
  PmaPort& c = pma_port(at);
  c.symbol_errors += e.symbol_errors;
  c.link_recovers += e.link_recovers;
  c.link_downed += e.link_downed;
  c.rcv_errors += e.rcv_errors;
  c.xmit_discards += e.xmit_discards;
  c.link_integrity += e.link_integrity;
  c.buffer_overrun += e.buffer_overrun;
  c.xmit_wait += e.xmit_wait;
}

pma::PortCountersExtended SimCore::port_counters_ext(PortRef at) {
  pma_accrue(at);
  const PmaPort& c = pma_port(at);
  pma::PortCountersExtended x;
  x.xmit_words = static_cast<std::uint64_t>(c.xmit_bytes / 4.0);
  x.rcv_words = static_cast<std::uint64_t>(c.rcv_bytes / 4.0);
  x.xmit_pkts = static_cast<std::uint64_t>(c.xmit_bytes / kPacketBytes);
  x.rcv_pkts = static_cast<std::uint64_t>(c.rcv_bytes / kPacketBytes);
  x.unicast_xmit_pkts = x.xmit_pkts;
  x.unicast_rcv_pkts = x.rcv_pkts;
  return x;
}

pma::PortCounters SimCore::port_counters(PortRef at) {
  const pma::PortCountersExtended x = port_counters_ext(at);
  const PmaPort& c = pma_port(at);
  const pma::PortCounters& b = c.base;
  // Counters since the last clear, each stopping at its maximum (the
  // encoder saturates the narrow ones).
  auto since = [](std::uint64_t total, std::uint32_t base) {
    return sat32(total >= base ? total - base : 0);
  };
  pma::PortCounters out;
  out.symbol_errors = since(c.symbol_errors, b.symbol_errors);
  out.link_recovers = since(c.link_recovers, b.link_recovers);
  out.link_downed = since(c.link_downed, b.link_downed);
  out.rcv_errors = since(c.rcv_errors, b.rcv_errors);
  out.xmit_discards = since(c.xmit_discards, b.xmit_discards);
  out.link_integrity = since(c.link_integrity, b.link_integrity);
  out.buffer_overrun = since(c.buffer_overrun, b.buffer_overrun);
  out.xmit_wait = since(c.xmit_wait, b.xmit_wait);
  out.xmit_words = since(x.xmit_words, b.xmit_words);
  out.rcv_words = since(x.rcv_words, b.rcv_words);
  out.xmit_pkts = since(x.xmit_pkts, b.xmit_pkts);
  out.rcv_pkts = since(x.rcv_pkts, b.rcv_pkts);
  // Narrow fields stop at their width, as the hardware's do.
  out.symbol_errors = std::min(out.symbol_errors, 0xFFFFU);
  out.link_recovers = std::min(out.link_recovers, 0xFFU);
  out.link_downed = std::min(out.link_downed, 0xFFU);
  out.rcv_errors = std::min(out.rcv_errors, 0xFFFFU);
  out.xmit_discards = std::min(out.xmit_discards, 0xFFFFU);
  out.link_integrity = std::min(out.link_integrity, 0xFU);
  out.buffer_overrun = std::min(out.buffer_overrun, 0xFU);
  return out;
}

void SimCore::pma_request(const Mad& mad) {
  auto h = pma::decode_header(mad.data);
  if (!h.ok() || (h->method != 0x01 && h->method != 0x02)) {
    ++stats_.drops[static_cast<std::size_t>(DropReason::kMalformed)];
    return;
  }
  const std::optional<PortRef> to = walk_gmp(sm_, mad.dlid);
  if (!to || !powered(to->node) || silent_[to->node.value] != 0) {
    ++stats_.drops[static_cast<std::size_t>(DropReason::kLinkDown)];
    return;
  }
  Mad answer = mad;
  std::uint8_t* b = answer.data.data();
  const std::span<std::uint8_t> data(b + pma::kDataOffset, kMadSize - pma::kDataOffset);
  const std::uint8_t select = pma::port_select(data);
  const routing::Node& node = topo_.node(to->node);
  // A switch's PMA (at port 0) serves every port; a CA's its own port.
  const bool port_ok = is_switch(to->node) ? select >= 1 && select <= node.num_ports
                                           : select == to->port || select == 0;
  const PortRef port{to->node, is_switch(to->node) ? select : to->port};
  std::uint16_t status = st::kOk;
  switch (h->attr) {
    case pma::Attr::kClassPortInfo:
      if (h->method != 0x01) {
        status = st::kMethodAttrUnsupported;
        break;
      }
      std::fill(data.begin(), data.end(), 0);
      data[0] = 1;                   // BaseVersion
      data[1] = pma::kClassVersion;  // ClassVersion
      mad::store_be16(&data[2], pma::kCapExtendedWidth);
      mad::store_be32(&data[4], 18);  // RespTimeValue
      break;
    case pma::Attr::kPortCounters: {
      if (!port_ok) {
        status = st::kInvalidField;
        break;
      }
      if (h->method == 0x02) {
        // Clear what CounterSelect (and CounterSelect2) names.
        const std::uint16_t sel = pma::counter_select(data);
        const pma::PortCountersExtended x = port_counters_ext(port);
        PmaPort& c = pma_port(port);
        pma::PortCounters& base = c.base;
        auto clear = [sel](int bit, std::uint32_t& field, std::uint64_t now) {
          if ((sel & (1U << bit)) != 0) field = sat32(now);
        };
        clear(0, base.symbol_errors, c.symbol_errors);
        clear(1, base.link_recovers, c.link_recovers);
        clear(2, base.link_downed, c.link_downed);
        clear(3, base.rcv_errors, c.rcv_errors);
        clear(6, base.xmit_discards, c.xmit_discards);
        clear(9, base.link_integrity, c.link_integrity);
        clear(10, base.buffer_overrun, c.buffer_overrun);
        clear(12, base.xmit_words, x.xmit_words);
        clear(13, base.rcv_words, x.rcv_words);
        clear(14, base.xmit_pkts, x.xmit_pkts);
        clear(15, base.rcv_pkts, x.rcv_pkts);
        if ((data[18] & 1) != 0) base.xmit_wait = sat32(c.xmit_wait);
      }
      const pma::PortCounters now = port_counters(port);
      std::fill(data.begin(), data.end(), 0);
      pma::encode_port_counters(now, select, data);
      break;
    }
    case pma::Attr::kPortCountersExtended:
      if (!port_ok || h->method != 0x01) {
        status = port_ok ? st::kMethodAttrUnsupported : st::kInvalidField;
        break;
      }
      std::fill(data.begin(), data.end(), 0);
      pma::encode_port_counters_ext(port_counters_ext(port), select, data);
      break;
    default:
      status = st::kMethodAttrUnsupported;
      break;
  }
  b[3] = 0x81;  // GetResp (the answer to a Set is a GetResp too)
  mad::store_be16(b + 4, status);
  // The answer's way back: from the endport that owns the DLID to our LID.
  const std::uint32_t sm_lid = ports_[index(sm_)].lid;
  if (!walk_gmp(*to, sm_lid)) {
    ++stats_.drops[static_cast<std::size_t>(DropReason::kLinkDown)];
    return;
  }
  answer.slid = mad.dlid;
  answer.dlid = sm_lid;
  inbox_.push_back(answer);
  ++stats_.delivered_to_sm;
}

}  // namespace subnetd::discovery::sim

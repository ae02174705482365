#include "state/port_counters.hpp"

#include <algorithm>
#include <tuple>

namespace subnetd::state {

CounterSet& CounterSet::operator+=(const CounterSet& o) {
  symbol_errors += o.symbol_errors;
  link_recovers += o.link_recovers;
  link_downed += o.link_downed;
  rcv_errors += o.rcv_errors;
  rcv_remote_phys += o.rcv_remote_phys;
  rcv_switch_relay += o.rcv_switch_relay;
  xmit_discards += o.xmit_discards;
  xmit_constraint += o.xmit_constraint;
  rcv_constraint += o.rcv_constraint;
  link_integrity += o.link_integrity;
  buffer_overrun += o.buffer_overrun;
  vl15_dropped += o.vl15_dropped;
  xmit_wait += o.xmit_wait;
  xmit_bytes += o.xmit_bytes;
  rcv_bytes += o.rcv_bytes;
  xmit_pkts += o.xmit_pkts;
  rcv_pkts += o.rcv_pkts;
  return *this;
}

const PortCounterEntry* PortCounterSnapshot::find(Guid node, PortNum port) const {
  auto it =
      std::lower_bound(ports.begin(), ports.end(), std::pair(node.value, port),
                       [](const PortCounterEntry& e, const std::pair<std::uint64_t, PortNum>& k) {
                         return std::pair(e.node_guid.value, e.port) < k;
                       });
  if (it == ports.end() || it->node_guid != node || it->port != port) return nullptr;
  return &*it;
}

}  // namespace subnetd::state

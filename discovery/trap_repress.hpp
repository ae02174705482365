#pragma once
// The TrapRepress an SM answers a trap with (IBA 14.2.5.8: same TID,
// attribute and data as the Trap(Notice), method TrapRepress, sent back to
// where the trap came from). An SMA repeats a trap until it is repressed.

#include <span>

#include "discovery/mad/smp.hpp"
#include "discovery/transport.hpp"

namespace subnetd::discovery {

// `trap` is the decoded SMP of `received` (method Trap).
inline Mad trap_repress(const mad::Smp& trap, const Mad& received) {
  mad::Smp repress = trap;
  repress.method = mad::Method::kTrapRepress;
  repress.status = 0;
  Mad out;
  mad::encode_smp(repress, std::span<std::uint8_t, kMadSize>(out.data));
  out.dlid = received.slid;
  out.slid = received.dlid;
  return out;
}

}  // namespace subnetd::discovery

#pragma once
// Process resource figures for summaries and benchmarks (Linux /proc).

#include <cstdint>

namespace subnetd::daemon {

// Peak resident set size (VmHWM) in bytes, 0 if unavailable.
std::uint64_t peak_rss_bytes();
// Current resident set size (VmRSS) in bytes, 0 if unavailable.
std::uint64_t current_rss_bytes();

}  // namespace subnetd::daemon

#pragma once
// What the net-file reader (netfile.cpp) and writer (netfile_writer.cpp)
// share: ibsim's limits on ids and descriptions and the link-mode bits.
// Internal to discovery/topo.

#include <cstddef>
#include <cstdint>

namespace subnetd::discovery::topo::netfile_format {

inline constexpr std::size_t kMaxIdLength = 64;    // ibsim: char nodeid[65]
inline constexpr std::size_t kMaxDescLength = 64;  // NodeDescription is 64 bytes on the wire

// Link modes as ibsim keeps them: per port an *enabled* bit set; the active
// mode of a link is the best one both ends enable. Bits are IBA
// LinkWidthActive / LinkSpeedActive values.
inline constexpr std::uint8_t kWidth1x = 1, kWidth4x = 2, kWidth8x = 4, kWidth12x = 8,
                              kWidth2x = 16;
inline constexpr std::uint8_t kSpeedSdr = 1, kSpeedDdr = 2, kSpeedQdr = 4;

}  // namespace subnetd::discovery::topo::netfile_format

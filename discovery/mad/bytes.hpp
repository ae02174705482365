#pragma once
// Big-endian load/store helpers for the MAD codec. Wire byte order is visible
// only in discovery/mad/; everything the codec hands out is host order.
//
// Callers pass a pointer into a buffer whose size they have already checked
// (the SMP is a fixed 256 bytes, attribute data a fixed 64); these helpers do
// no bounds checking of their own.

#include <cstdint>

namespace subnetd::discovery::mad {

inline std::uint16_t load_be16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
inline std::uint32_t load_be24(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
}
inline std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}
inline std::uint64_t load_be64(const std::uint8_t* p) {
  return (std::uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}

inline void store_be16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
// Stores the low 24 bits of v.
inline void store_be24(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 16);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v);
}
inline void store_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}
inline void store_be64(std::uint8_t* p, std::uint64_t v) {
  store_be32(p, static_cast<std::uint32_t>(v >> 32));
  store_be32(p + 4, static_cast<std::uint32_t>(v));
}

// Bit-field helpers for sub-byte fields. `shift` counts from the least
// significant bit of the byte (IBA numbers bits from the most significant
// end; the offsets in smp.cpp are written in this LSB form).
inline std::uint8_t get_bits(std::uint8_t byte, unsigned shift, unsigned width) {
  return static_cast<std::uint8_t>((byte >> shift) & ((1U << width) - 1));
}
inline void put_bits(std::uint8_t& byte, unsigned shift, unsigned width, unsigned value) {
  const unsigned mask = ((1U << width) - 1) << shift;
  byte = static_cast<std::uint8_t>((byte & ~mask) | ((value << shift) & mask));
}

}  // namespace subnetd::discovery::mad

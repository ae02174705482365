#pragma once
// Small bit and byte kernels the routing code shares (LFT rows, hop rows and
// candidate masks are compared 64 entries at a time).

#include <array>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace subnetd::routing {

// Bit i set iff a[i] == b[i], for i in [0, 64).
inline std::uint64_t equal_mask64(const std::uint8_t* a, const std::uint8_t* b) {
#if defined(__SSE2__)
  std::uint64_t m = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16 * k));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * k));
    const auto bits = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)));
    m |= std::uint64_t{bits} << (16 * k);
  }
  return m;
#else
  std::uint64_t m = 0;
  for (int i = 0; i < 64; ++i) m |= std::uint64_t{a[i] == b[i]} << i;
  return m;
#endif
}

// Bit i set iff row[i] == value, for i in [0, 64).
inline std::uint64_t equal_mask64(const std::uint8_t* row, std::uint8_t value) {
#if defined(__SSE2__)
  const __m128i v = _mm_set1_epi8(static_cast<char>(value));
  std::uint64_t m = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * k));
    const auto bits = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, v)));
    m |= std::uint64_t{bits} << (16 * k);
  }
  return m;
#else
  std::uint64_t m = 0;
  for (int i = 0; i < 64; ++i) m |= std::uint64_t{row[i] == value} << i;
  return m;
#endif
}

// In place: bit j of a[i] <-> bit i of a[j] (Hacker's Delight 7-3, with bit 0
// as the least significant bit).
inline void transpose64(std::array<std::uint64_t, 64>& a) {
  std::uint64_t m = 0x00000000FFFFFFFFULL;
  for (unsigned j = 32; j != 0; j >>= 1, m ^= m << j) {
    for (unsigned k = 0; k < 64; k = (k + j + 1) & ~j) {
      const std::uint64_t t = ((a[k] >> j) ^ a[k + j]) & m;
      a[k] ^= t << j;
      a[k + j] ^= t;
    }
  }
}

}  // namespace subnetd::routing

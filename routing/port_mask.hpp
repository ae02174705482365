#pragma once
// PortMask: a set of switch ports as 256 bits (IBA switches have at most 254
// ports). Fast failover groups, notification ports and per-channel
// dependency sets are port sets.

#include <array>
#include <bit>
#include <cstdint>

#include "routing/ids.hpp"

namespace subnetd::routing {

class PortMask {
 public:
  void set(PortNum p) { bits_[p >> 6] |= std::uint64_t{1} << (p & 63); }
  void reset(PortNum p) { bits_[p >> 6] &= ~(std::uint64_t{1} << (p & 63)); }
  bool test(PortNum p) const { return (bits_[p >> 6] >> (p & 63)) & 1; }
  bool none() const { return (bits_[0] | bits_[1] | bits_[2] | bits_[3]) == 0; }
  unsigned count() const {
    unsigned c = 0;
    for (std::uint64_t w : bits_) c += static_cast<unsigned>(std::popcount(w));
    return c;
  }
  // Whether every port of this set is in `o`.
  bool subset_of(const PortMask& o) const {
    for (std::size_t i = 0; i < bits_.size(); ++i) {
      if ((bits_[i] & ~o.bits_[i]) != 0) return false;
    }
    return true;
  }
  // The lowest port in the set (the set must not be empty).
  PortNum first() const {
    for (std::size_t i = 0; i < bits_.size(); ++i) {
      if (bits_[i] != 0) return static_cast<PortNum>(i * 64 + std::countr_zero(bits_[i]));
    }
    return 0;
  }
  PortMask& operator|=(const PortMask& o) {
    for (std::size_t i = 0; i < bits_.size(); ++i) bits_[i] |= o.bits_[i];
    return *this;
  }
  PortMask& operator&=(const PortMask& o) {
    for (std::size_t i = 0; i < bits_.size(); ++i) bits_[i] &= o.bits_[i];
    return *this;
  }
  // This set without the ports of `o`.
  PortMask minus(const PortMask& o) const {
    PortMask r = *this;
    for (std::size_t i = 0; i < bits_.size(); ++i) r.bits_[i] &= ~o.bits_[i];
    return r;
  }
  const std::array<std::uint64_t, 4>& words() const { return bits_; }
  std::array<std::uint64_t, 4>& words() { return bits_; }
  friend bool operator==(const PortMask&, const PortMask&) = default;

  // Calls f(PortNum) for every port in the set, ascending.
  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < bits_.size(); ++i) {
      for (std::uint64_t w = bits_[i]; w != 0; w &= w - 1) {
        f(static_cast<PortNum>(i * 64 + static_cast<unsigned>(std::countr_zero(w))));
      }
    }
  }

 private:
  std::array<std::uint64_t, 4> bits_{};
};

}  // namespace subnetd::routing

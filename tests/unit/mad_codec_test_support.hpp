#pragma once
// What the SMP codec tests share (mad_codec_test, mad_codec_builders_test):
// the fixed seed, byte arrays of an SMP and of its data, the methods and
// attributes the codec knows, a seeded random source.

#include <array>
#include <cstdint>
#include <cstdio>
#include <random>

#include "discovery/mad/smp.hpp"

namespace subnetd::discovery::mad::codectest {

inline constexpr std::uint64_t kSeed = 0x5EED'0C0D'EC00'0001ULL;
inline constexpr int kIterations = 3000;

using Bytes = std::array<std::uint8_t, kSmpSize>;
using Data = std::array<std::uint8_t, kSmpDataSize>;

// Every method and every attribute the codec knows.
inline const std::array<Method, 5> kMethods = {Method::kGet, Method::kSet, Method::kTrap,
                                               Method::kTrapRepress, Method::kGetResp};
inline const std::array<AttrId, 18> kAttrs = {AttrId::kNotice,
                                              AttrId::kNodeDescription,
                                              AttrId::kNodeInfo,
                                              AttrId::kSwitchInfo,
                                              AttrId::kPortInfo,
                                              AttrId::kPKeyTable,
                                              AttrId::kMulticastForwardingTable,
                                              AttrId::kSlToVlMappingTable,
                                              AttrId::kVlArbitrationTable,
                                              AttrId::kLinearForwardingTable,
                                              AttrId::kSmInfo,
                                              AttrId::kExtPortInfo,
                                              AttrId::kExtLinearForwardingTable,
                                              AttrId::kExtSwitchInfo,
                                              AttrId::kFailoverInfo,
                                              AttrId::kFailoverGroupTable,
                                              AttrId::kFailoverLidGroupTable,
                                              AttrId::kFailoverNotifyConfig};

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  std::uint64_t bits(unsigned n) {
    const std::uint64_t v = gen_();
    return n >= 64 ? v : v & ((std::uint64_t{1} << n) - 1);
  }
  std::uint64_t below(std::uint64_t n) { return gen_() % n; }
  template <std::size_t N>
  void fill(std::array<std::uint8_t, N>& a) {
    for (auto& b : a) b = static_cast<std::uint8_t>(gen_());
  }

 private:
  std::mt19937_64 gen_;
};

inline void print_seed(const char* what) {
  std::printf("[ seed     ] %s: seed 0x%016llx, %d iterations\n", what,
              static_cast<unsigned long long>(kSeed), kIterations);
}

}  // namespace subnetd::discovery::mad::codectest

#pragma once
// Grid points as mixed-radix numbers (dimension 0 most significant), and
// the switch at each: shared by grid_shape.cpp and grid_placement.cpp.
// Internal to routing/.

#include <cstdint>
#include <vector>

#include "routing/grid_shape.hpp"

namespace subnetd::routing {

class Points {
 public:
  static constexpr std::uint32_t kNoSwitch = UINT32_MAX;

  explicit Points(const GridShape& shape) : shape_(shape), stride_(shape.dims(), 1) {
    for (std::uint32_t d = shape.dims(); d-- > 1;) stride_[d - 1] = stride_[d] * shape.size[d];
  }
  std::uint64_t stride(std::uint32_t d) const { return stride_[d]; }
  std::uint32_t coord(std::uint64_t i, std::uint32_t d) const {
    return static_cast<std::uint32_t>(i / stride_[d] % shape_.size[d]);
  }
  // The point switch s (shape's switch index) sits at.
  std::uint64_t of(std::uint32_t s) const {
    std::uint64_t i = 0;
    for (std::uint32_t d = 0; d < shape_.dims(); ++d) {
      i += shape_.at(SwitchIndex{s}, d) * stride_[d];
    }
    return i;
  }
  // By point, the switch there (kNoSwitch: none), for shape's switches.
  std::vector<std::uint32_t> switches() const {
    std::vector<std::uint32_t> at(shape_.points(), kNoSwitch);
    const auto n = static_cast<std::uint32_t>(shape_.coord.size() / shape_.dims());
    for (std::uint32_t s = 0; s < n; ++s) at[of(s)] = s;
    return at;
  }
  // The switch one step from switch s along d, up or down, in `at`
  // (switches()); kNoSwitch past a path's end or at an empty point.
  std::uint32_t step(const std::vector<std::uint32_t>& at, std::uint32_t s, std::uint32_t d,
                     bool up) const {
    const std::uint32_t k = shape_.size[d], c = shape_.at(SwitchIndex{s}, d);
    if (shape_.wrap[d] == 0 && (up ? c + 1 == k : c == 0)) return kNoSwitch;
    const std::uint32_t to = up ? (c + 1) % k : (c + k - 1) % k;
    return at[of(s) - std::uint64_t{c} * stride_[d] + std::uint64_t{to} * stride_[d]];
  }
  // Calls fn(j) for every grid neighbour j of point i.
  template <class Fn>
  void for_each_neighbour(std::uint64_t i, Fn&& fn) const {
    for (std::uint32_t d = 0; d < shape_.dims(); ++d) {
      const std::uint32_t c = coord(i, d), k = shape_.size[d];
      const bool ring = shape_.wrap[d] != 0;
      if (c + 1 < k) {
        fn(i + stride_[d]);
      } else if (ring) {
        fn(i - std::uint64_t{k - 1} * stride_[d]);
      }
      if (c > 0) {
        fn(i - stride_[d]);
      } else if (ring) {
        fn(i + std::uint64_t{k - 1} * stride_[d]);
      }
    }
  }

 private:
  const GridShape& shape_;
  std::vector<std::uint64_t> stride_;
};

}  // namespace subnetd::routing

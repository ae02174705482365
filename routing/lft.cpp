#include "routing/lft.hpp"

#include <algorithm>

namespace subnetd::routing {

void Lft::resize(Lid max_lid) {
  const std::uint32_t blocks = max_lid.value / kLftBlockSize + 1;
  ports_.resize(std::size_t{blocks} * kLftBlockSize, kDropPort);
  dirty_.resize((blocks + 63) / 64, 0);
}

void Lft::mark_all_dirty() {
  std::fill(dirty_.begin(), dirty_.end(), ~std::uint64_t{0});
}

void Lft::clear_dirty() {
  std::fill(dirty_.begin(), dirty_.end(), 0);
}

std::vector<std::uint32_t> Lft::dirty_blocks() const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t b = 0; b < num_blocks(); ++b) {
    if (block_dirty(b)) out.push_back(b);
  }
  return out;
}

}  // namespace subnetd::routing

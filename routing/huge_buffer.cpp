#include "routing/huge_buffer.hpp"

#include <sys/mman.h>

#include <new>

namespace subnetd::routing {
namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

HugeBuffer::HugeBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  // Room to align the start to a huge page; the tail is rounded up too, so
  // the last huge page is whole.
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  mapped_ = rounded + kHugePage;
  base_ = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw std::bad_alloc();
  }
  const auto addr = reinterpret_cast<std::uintptr_t>(base_);
  data_ = reinterpret_cast<std::uint8_t*>((addr + kHugePage - 1) / kHugePage * kHugePage);
#if defined(MADV_HUGEPAGE)
  huge_ = ::madvise(data_, rounded, MADV_HUGEPAGE) == 0;
#endif
}

HugeBuffer::~HugeBuffer() {
  if (base_ != nullptr) ::munmap(base_, mapped_);
}

}  // namespace subnetd::routing

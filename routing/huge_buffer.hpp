#pragma once
// HugeBuffer: a large byte array backed by transparent huge pages where the
// kernel offers them (madvise mode), for tables read at random.
//
// The rerouter's working tables (1 GB at k=80) are read one entry at a time
// at scattered (switch, LID) places; with 4 KiB pages nearly every read is a
// TLB miss and a page walk. 2 MiB pages let the STLB cover the whole table.
// Without THP (or off Linux) it is a plain page-aligned anonymous mapping.
//
// Owner: whoever holds it. Threads: none of its own; the bytes are shared
// like any array.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace subnetd::routing {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  // Zero-filled on first touch. Throws std::bad_alloc when the mapping fails.
  explicit HugeBuffer(std::size_t bytes);
  HugeBuffer(HugeBuffer&& o) noexcept { swap(o); }
  HugeBuffer& operator=(HugeBuffer&& o) noexcept {
    HugeBuffer(std::move(o)).swap(*this);
    return *this;
  }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  ~HugeBuffer();

  std::uint8_t* get() const { return data_; }
  std::size_t size() const { return size_; }
  // Whether the kernel accepted the huge-page advice.
  bool huge() const { return huge_; }

 private:
  void swap(HugeBuffer& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(mapped_, o.mapped_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(huge_, o.huge_);
  }

  void* base_ = nullptr;  // the mapping
  std::size_t mapped_ = 0;
  std::uint8_t* data_ = nullptr;  // 2 MiB aligned inside it
  std::size_t size_ = 0;
  bool huge_ = false;
};

}  // namespace subnetd::routing

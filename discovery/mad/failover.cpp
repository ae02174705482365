#include "discovery/mad/failover.hpp"

#include <algorithm>

#include "discovery/mad/bytes.hpp"

namespace subnetd::discovery::mad {
namespace {

// FailoverInfo byte offsets.
constexpr std::size_t kCaps = 0;     // bit 0 local, bit 1 notify
constexpr std::size_t kControl = 1;  // bit 0 enabled
constexpr std::size_t kGroupCap = 2;
constexpr std::size_t kGroupTop = 4;
constexpr std::size_t kLidTop = 8;
constexpr std::size_t kDetectNs = 12;
constexpr std::size_t kNotifyHopNs = 16;
// FailoverNotifyConfig.
constexpr std::size_t kNotifyMask = 0;
constexpr std::size_t kNotifyControl = 32;  // bit 0 clear_state

}  // namespace

FailoverInfo FailoverInfo::decode(ConstSmpData d) {
  FailoverInfo f;
  f.cap_local = get_bits(d[kCaps], 0, 1) != 0;
  f.cap_notify = get_bits(d[kCaps], 1, 1) != 0;
  f.enabled = get_bits(d[kControl], 0, 1) != 0;
  f.group_cap = load_be16(d.data() + kGroupCap);
  f.group_top = load_be16(d.data() + kGroupTop);
  f.lid_top = load_be32(d.data() + kLidTop);
  f.detect_ns = load_be32(d.data() + kDetectNs);
  f.notify_hop_ns = load_be32(d.data() + kNotifyHopNs);
  return f;
}

void FailoverInfo::encode(SmpData d) const {
  std::fill(d.begin(), d.end(), std::uint8_t{0});
  put_bits(d[kCaps], 0, 1, cap_local ? 1 : 0);
  put_bits(d[kCaps], 1, 1, cap_notify ? 1 : 0);
  put_bits(d[kControl], 0, 1, enabled ? 1 : 0);
  store_be16(d.data() + kGroupCap, group_cap);
  store_be16(d.data() + kGroupTop, group_top);
  store_be32(d.data() + kLidTop, lid_top);
  store_be32(d.data() + kDetectNs, detect_ns);
  store_be32(d.data() + kNotifyHopNs, notify_hop_ns);
}

FailoverGroupBlock FailoverGroupBlock::decode(ConstSmpData d) {
  FailoverGroupBlock b;
  for (unsigned i = 0; i < kFailoverGroupsPerBlock; ++i) {
    std::copy_n(d.begin() + static_cast<std::ptrdiff_t>(i * 32), 32, b.groups[i].begin());
  }
  return b;
}

void FailoverGroupBlock::encode(SmpData d) const {
  for (unsigned i = 0; i < kFailoverGroupsPerBlock; ++i) {
    std::copy(groups[i].begin(), groups[i].end(), d.begin() + static_cast<std::ptrdiff_t>(i * 32));
  }
}

FailoverLidGroupBlock FailoverLidGroupBlock::decode(ConstSmpData d) {
  FailoverLidGroupBlock b;
  std::copy_n(d.begin(), kFailoverLidsPerBlock, b.groups.begin());
  return b;
}

void FailoverLidGroupBlock::encode(SmpData d) const {
  std::copy(groups.begin(), groups.end(), d.begin());
}

FailoverNotifyConfig FailoverNotifyConfig::decode(ConstSmpData d) {
  FailoverNotifyConfig c;
  std::copy_n(d.begin() + kNotifyMask, 32, c.notify.begin());
  c.clear_state = get_bits(d[kNotifyControl], 0, 1) != 0;
  return c;
}

void FailoverNotifyConfig::encode(SmpData d) const {
  std::fill(d.begin(), d.end(), std::uint8_t{0});
  std::copy(notify.begin(), notify.end(), d.begin() + kNotifyMask);
  put_bits(d[kNotifyControl], 0, 1, clear_state ? 1 : 0);
}

}  // namespace subnetd::discovery::mad

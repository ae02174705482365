#pragma once
// The property the SMP fuzzer asserts, shared with the gtest that replays the
// committed corpus (tests/unit/mad_fuzz_regression_test.cpp), so an input the
// fuzzer once broke stays a regression test.
//
// For any byte string, under both DecodeOptions:
//  - decode_smp either fails with Errc::kMalformedMad and a message, or
//  - succeeds, and encode_smp reproduces every non-reserved input byte,
//    decoding that again yields the same Smp, and encoding it the same bytes;
//  - the attribute named by a decoded SMP decodes from its data field and is
//    stable under encode -> decode;
//  - peek_smp succeeds exactly when decode_smp (unknown attributes allowed)
//    does, and agrees with it on response, TID and status.

#include <cstdint>
#include <span>
#include <string>

#include "discovery/mad/failover.hpp"
#include "discovery/mad/smp.hpp"

namespace subnetd::discovery::mad::fuzz {

// Bytes of the 256-byte SMP that are reserved (not carried by Smp) for a
// LID-routed or a directed-route SMP (IBA 14.2.1.1 / 14.2.1.2).
inline bool is_reserved_byte(std::size_t i, bool directed) {
  if (i == 18 || i == 19) return true;                         // after AttributeID
  if (directed) return i >= 36 && i < 64;                      // after DrDLID
  return i == 6 || i == 7 || (i >= 32 && i < 64) || i >= 128;  // no DR fields
}

template <class T>
std::string check_attribute_stable(const Smp& smp) {
  const T a = T::decode(data_of(smp));
  std::array<std::uint8_t, kSmpDataSize> out{};
  a.encode(SmpData(out));
  const T b = T::decode(ConstSmpData(out));
  if (!(a == b)) return std::string(attr_name(smp.attr_id)) + ": decode(encode(x)) != x";
  std::array<std::uint8_t, kSmpDataSize> out2{};
  b.encode(SmpData(out2));
  if (out != out2) return std::string(attr_name(smp.attr_id)) + ": encode not stable";
  return {};
}

inline std::string check_attribute(const Smp& smp) {
  switch (smp.attr_id) {
    case AttrId::kNotice:
      return check_attribute_stable<Notice>(smp);
    case AttrId::kNodeDescription:
      return check_attribute_stable<NodeDescription>(smp);
    case AttrId::kNodeInfo:
      return check_attribute_stable<NodeInfo>(smp);
    case AttrId::kSwitchInfo:
      return check_attribute_stable<SwitchInfo>(smp);
    case AttrId::kPortInfo:
      return check_attribute_stable<PortInfo>(smp);
    case AttrId::kPKeyTable:
      return check_attribute_stable<PKeyTable>(smp);
    case AttrId::kMulticastForwardingTable:
      return check_attribute_stable<MulticastForwardingTable>(smp);
    case AttrId::kSlToVlMappingTable:
      return check_attribute_stable<SlToVlMappingTable>(smp);
    case AttrId::kVlArbitrationTable:
      return check_attribute_stable<VlArbitrationTable>(smp);
    case AttrId::kLinearForwardingTable:
    case AttrId::kExtLinearForwardingTable:
      return check_attribute_stable<LinearForwardingTable>(smp);
    case AttrId::kSmInfo:
      return check_attribute_stable<SmInfo>(smp);
    case AttrId::kExtPortInfo:
      return check_attribute_stable<ExtPortInfo>(smp);
    case AttrId::kExtSwitchInfo:
      return check_attribute_stable<ExtSwitchInfo>(smp);
    case AttrId::kFailoverInfo:
      return check_attribute_stable<FailoverInfo>(smp);
    case AttrId::kFailoverGroupTable:
      return check_attribute_stable<FailoverGroupBlock>(smp);
    case AttrId::kFailoverLidGroupTable:
      return check_attribute_stable<FailoverLidGroupBlock>(smp);
    case AttrId::kFailoverNotifyConfig:
      return check_attribute_stable<FailoverNotifyConfig>(smp);
  }
  return {};  // unknown attribute, decoded only with allow_unknown_attribute
}

// Returns an empty string when the property holds, else what broke.
inline std::string check_smp_bytes(std::span<const std::uint8_t> in) {
  {
    const auto peek = peek_smp(in);
    auto full = decode_smp(in, DecodeOptions{.allow_unknown_attribute = true});
    if (peek.has_value() != full.ok()) {
      // decode_smp also checks the hop fields of directed-route SMPs.
      const bool dr_hops =
          peek.has_value() && !full.ok() && full.error().message.find("hop") != std::string::npos;
      if (!dr_hops) return "peek_smp and decode_smp disagree on whether the header is an SMP";
    }
    if (peek && full.ok() &&
        (peek->response != full->is_response() || peek->tid != full->tid ||
         peek->status != full->status)) {
      return "peek_smp disagrees with decode_smp on response, TID or status";
    }
  }
  for (const bool allow_unknown : {false, true}) {
    const DecodeOptions opts{.allow_unknown_attribute = allow_unknown};
    auto r = decode_smp(in, opts);
    if (!r.ok()) {
      if (r.error().code != Errc::kMalformedMad)
        return "decode error with a code other than kMalformedMad";
      if (r.error().message.empty()) return "decode error without a message";
      continue;
    }
    if (in.size() < kSmpSize) return "decode accepted a buffer shorter than 256 bytes";
    const Smp& s1 = *r;
    const auto b2 = encode_smp(s1);
    for (std::size_t i = 0; i < kSmpSize; ++i) {
      if (!is_reserved_byte(i, s1.directed()) && b2[i] != in[i]) {
        return "encode(decode(b)) differs from b at non-reserved byte " + std::to_string(i);
      }
    }
    auto r2 = decode_smp(b2, opts);
    if (!r2.ok()) return "re-encoded SMP does not decode: " + r2.error().message;
    if (!(*r2 == s1)) return "decode(encode(decode(b))) != decode(b)";
    if (encode_smp(*r2) != b2) return "encode not stable";
    if (std::string e = check_attribute(s1); !e.empty()) return e;
  }
  return {};
}

}  // namespace subnetd::discovery::mad::fuzz

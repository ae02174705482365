// SMP codec tests: traps, the builders (directed-route and LID-routed SMPs,
// patched templates, peeking at a header), the vendor attributes' layouts,
// re-encoding stability, and malformed input. Field-by-field cross-checks
// against libibmad: mad_codec_test.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "discovery/mad/bytes.hpp"
#include "discovery/mad/smp.hpp"
#include "mad_codec_test_support.hpp"

namespace subnetd::discovery::mad {
namespace {

using ::testing::HasSubstr;
using namespace codectest;

// ---------------------------------------------------------------- traps

TEST(SmpCodec, Trap128SixteenBit) {
  const Notice n = Notice::trap128(0x1234, false);
  Bytes buf{};
  n.encode(SmpData(buf.data(), kSmpDataSize));
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_IS_GENERIC_F), 1U);
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_TYPE_F), 1U);      // urgent
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_PRODUCER_F), 2U);  // switch
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_TRAP_NUMBER_F), 128U);
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_ISSUER_LID_F), 0x1234U);
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_DATA_LID_F), 0x1234U);
  EXPECT_EQ(n.trap128_lid(false), 0x1234U);
  // Nothing beyond LIDADDR in 16-bit mode: the rest of DataDetails is reserved.
  for (std::size_t i = 2; i < n.data_details.size(); ++i) EXPECT_EQ(n.data_details[i], 0) << i;
  EXPECT_EQ(Notice::decode(ConstSmpData(buf.data(), kSmpDataSize)), n);
}

TEST(SmpCodec, Trap128Extended) {
  for (const std::uint32_t lid : {0x1234U, 0xBFFFU, 0xC000U, 0x1FFFFU, 0xABCDEFU}) {
    const Notice n = Notice::trap128(lid, true);
    Bytes buf{};
    n.encode(SmpData(buf.data(), kSmpDataSize));
    const std::uint32_t lid16 = lid > 0xBFFF ? 0xFFFF : lid;
    EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_DATA_LID_F), lid16) << lid;
    EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_ISSUER_LID_F), lid16) << lid;
    // data_details bytes 2..5 = the 32-bit LID, big-endian (Notice bytes 12..15).
    EXPECT_EQ(load_be32(buf.data() + 12), lid);
    const Notice back = Notice::decode(ConstSmpData(buf.data(), kSmpDataSize));
    EXPECT_EQ(back.trap128_lid(true), lid);
    EXPECT_EQ(back.trap128_lid(false), lid16);
  }
}

TEST(SmpCodec, Trap144) {
  const Notice n = Notice::trap144(0x0042, kCapIsSm | kCapIsTrapSupported);
  Bytes buf{};
  n.encode(SmpData(buf.data(), kSmpDataSize));
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_IS_GENERIC_F), 1U);
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_TYPE_F), 4U);  // informational
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_TRAP_NUMBER_F), 144U);
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_ISSUER_LID_F), 0x42U);
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_DATA_144_LID_F), 0x42U);
  EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_DATA_144_CAPMASK_F),
            kCapIsSm | kCapIsTrapSupported);
}

// ---------------------------------------------------------------- builders

TEST(SmpCodec, MakeDrSmp) {
  const std::array<std::uint8_t, 3> path = {1, 17, 36};
  const Smp s = make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, path, 0xABCDEF0123456789ULL);
  Bytes w = encode_smp(s);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_MGMTCLASS_F), 0x81U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_METHOD_F), 0x01U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRID_F), 0x11U);
  EXPECT_EQ(mad_get_field64(w.data(), 0, IB_MAD_TRID_F), 0xABCDEF0123456789ULL);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_HOPCNT_F), 3U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_HOPPTR_F), 0U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_DIRECTION_F), 0U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_DRSLID_F), 0xFFFFU);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_DRDLID_F), 0xFFFFU);
  // initial path: byte 0 unused, hops 1..n at bytes 1..n.
  EXPECT_EQ(w[128], 0);
  EXPECT_EQ(w[129], 1);
  EXPECT_EQ(w[130], 17);
  EXPECT_EQ(w[131], 36);
  EXPECT_EQ(w[132], 0);
  auto d = decode_smp(w);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(*d, s);

  // Zero hops: the local port's own SMA.
  const Smp local = make_dr_smp(Method::kGet, AttrId::kPortInfo, 1, {}, 7);
  EXPECT_EQ(local.hop_count, 0);
  EXPECT_TRUE(decode_smp(encode_smp(local)).ok());
}

TEST(SmpCodec, PatchedTemplateEqualsAFreshEncode) {
  // The fast path encodes one LFT Set per switch and patches TID, block and
  // entries per block: the bytes must be those encode_smp writes for the
  // same SMP, for both LFT attributes.
  std::mt19937_64 rng(7);
  const std::array<std::uint8_t, 4> path = {1, 5, 33, 2};
  for (AttrId attr : {AttrId::kLinearForwardingTable, AttrId::kExtLinearForwardingTable}) {
    const Smp base = make_dr_smp(Method::kSet, attr, 0, path, 0);
    Bytes tmpl = encode_smp(base);
    for (int i = 0; i < 50; ++i) {
      const std::uint64_t tid = rng();
      const auto block = static_cast<std::uint32_t>(rng() % 4096);
      LinearForwardingTable t;
      for (auto& p : t.ports) p = static_cast<std::uint8_t>(rng());
      Smp want = make_dr_smp(Method::kSet, attr, block, path, tid);
      t.encode(data_of(want));
      Bytes got = tmpl;
      patch_smp(got, tid, block, t.ports);
      EXPECT_EQ(got, encode_smp(want)) << "attribute " << attr_name(attr) << " block " << block;
    }
  }
}

TEST(SmpCodec, PeekAgreesWithDecodeOnTheHeader) {
  // Answers of both classes, requests, and headers decode_smp rejects.
  Smp dr = make_dr_smp(Method::kGet, AttrId::kPortInfo, 3, std::array<std::uint8_t, 2>{1, 7},
                       0x1122334455667788ULL);
  dr.method = Method::kGetResp;
  dr.direction = true;
  dr.status = status::kInvalidField;
  Bytes w = encode_smp(dr);
  auto p = peek_smp(w);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->response);
  EXPECT_EQ(p->tid, 0x1122334455667788ULL);
  EXPECT_EQ(p->status, status::kInvalidField);  // D bit not part of the status
  Smp lr = make_lr_smp(Method::kSet, AttrId::kLinearForwardingTable, 5, 99);
  lr.status = 0x8001;  // LID-routed: all 16 bits are status
  w = encode_smp(lr);
  p = peek_smp(w);
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->response);
  EXPECT_EQ(p->status, 0x8001);
  // Whatever the header, peek fails exactly where decode_smp fails on it.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    Bytes b = encode_smp(dr);
    b[static_cast<std::size_t>(rng() % 4)] =
        static_cast<std::uint8_t>(rng());  // version, class, method
    const bool decodes = decode_smp(b, DecodeOptions{.allow_unknown_attribute = true}).ok();
    EXPECT_EQ(peek_smp(b).has_value(), decodes)
        << "bytes 0-3: " << int(b[0]) << " " << int(b[1]) << " " << int(b[2]) << " " << int(b[3]);
  }
  EXPECT_FALSE(peek_smp(std::span<const std::uint8_t>(w).first(255)).has_value());
}

TEST(SmpCodec, MakeLrSmp) {
  const Smp s = make_lr_smp(Method::kSet, AttrId::kLinearForwardingTable, 5, 99);
  Bytes w = encode_smp(s);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_MGMTCLASS_F), 0x01U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_METHOD_F), 0x02U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRID_F), 0x19U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRMOD_F), 5U);
  EXPECT_EQ(mad_get_field64(w.data(), 0, IB_MAD_TRID_F), 99U);
  EXPECT_FALSE(s.directed());
  EXPECT_FALSE(s.is_response());
}

TEST(SmpCodec, Names) {
  EXPECT_STREQ(method_name(Method::kGetResp), "GetResp");
  EXPECT_STREQ(method_name(Method::kTrapRepress), "TrapRepress");
  EXPECT_STREQ(attr_name(AttrId::kPortInfo), "PortInfo");
  EXPECT_STREQ(attr_name(AttrId::kExtLinearForwardingTable), "ExtLinearForwardingTable");
  EXPECT_STREQ(method_name(static_cast<Method>(0x03)), "UnknownMethod");
  EXPECT_STREQ(attr_name(static_cast<AttrId>(0x0099)), "UnknownAttribute");
  int known = 0;
  for (std::uint32_t a = 0; a <= 0xFFFF; ++a) known += is_known_attr(static_cast<std::uint16_t>(a));
  EXPECT_EQ(known, static_cast<int>(kAttrs.size()));
  for (AttrId a : kAttrs) EXPECT_TRUE(is_known_attr(static_cast<std::uint16_t>(a)));
}

// ---------------------------------------------------------------- vendor attributes

TEST(SmpCodec, ExtPortInfoLayout) {
  ExtPortInfo e{.lid = 0xFFABCDEF, .master_sm_lid = 0x00012345, .lmc = 0xFF, .lid_bits = 24};
  Data d;
  d.fill(0xEE);  // encode clears reserved bytes
  e.encode(SmpData(d));
  const Data expect = {0x00, 0xAB, 0xCD, 0xEF, 0x00, 0x01, 0x23, 0x45, 0x07, 24};
  EXPECT_EQ(d, expect);
  const ExtPortInfo back = ExtPortInfo::decode(ConstSmpData(d));
  EXPECT_EQ(back.lid, 0xABCDEFU);
  EXPECT_EQ(back.master_sm_lid, 0x12345U);
  EXPECT_EQ(back.lmc, 7);
  EXPECT_EQ(back.lid_bits, 24);
  // Decode ignores reserved bits (top LID byte, LMC byte 7:3).
  d[0] = 0x5A;
  d[8] = 0xFF;
  EXPECT_EQ(ExtPortInfo::decode(ConstSmpData(d)), back);
}

TEST(SmpCodec, ExtSwitchInfoLayout) {
  const ExtSwitchInfo e{.linear_fdb_cap = 0x01000000, .linear_fdb_top = 0x00FFFFFF};
  Data d;
  d.fill(0xEE);
  e.encode(SmpData(d));
  const Data expect = {0x01, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF};
  EXPECT_EQ(d, expect);
  EXPECT_EQ(ExtSwitchInfo::decode(ConstSmpData(d)), e);
}

TEST(SmpCodec, ExtLinearForwardingTableUsesFullAttrMod) {
  ExtLinearForwardingTable t;
  for (std::size_t i = 0; i < 64; ++i) t.ports[i] = static_cast<std::uint8_t>(i * 3);
  // Block 0x3FFFF covers LIDs 0xFFFFC0..0xFFFFFF of the 24-bit space.
  Smp s = make_lr_smp(Method::kSet, AttrId::kExtLinearForwardingTable, 0x3FFFF, 1);
  t.encode(data_of(s));
  Bytes w = encode_smp(s);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRID_F), 0xFF11U);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRMOD_F), 0x3FFFFU);
  auto d = decode_smp(w);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->attr_mod, 0x3FFFFU);
  EXPECT_EQ(ExtLinearForwardingTable::decode(data_of(*d)), t);
}

// Every attribute: random bytes -> decode -> encode -> decode is stable, and
// encode masks fields narrower than their C++ type.
template <class T>
void expect_stable(Rng& rng) {
  for (int it = 0; it < 500; ++it) {
    Data in;
    rng.fill(in);
    const T a = T::decode(ConstSmpData(in));
    Data out{};
    a.encode(SmpData(out));
    ASSERT_EQ(T::decode(ConstSmpData(out)), a);
    Data out2{};
    T::decode(ConstSmpData(out)).encode(SmpData(out2));
    ASSERT_EQ(out, out2);
  }
}

TEST(SmpCodec, AttributesStableUnderReencode) {
  Rng rng(kSeed);
  expect_stable<NodeDescription>(rng);
  expect_stable<NodeInfo>(rng);
  expect_stable<SwitchInfo>(rng);
  expect_stable<PortInfo>(rng);
  expect_stable<LinearForwardingTable>(rng);
  expect_stable<SmInfo>(rng);
  expect_stable<Notice>(rng);
  expect_stable<SlToVlMappingTable>(rng);
  expect_stable<VlArbitrationTable>(rng);
  expect_stable<ExtPortInfo>(rng);
  expect_stable<ExtSwitchInfo>(rng);
}

TEST(SmpCodec, EncodeMasksNarrowFields) {
  PortInfo p;
  p.lmc = 0xFF;
  p.port_state = 0xFF;
  p.link_speed_supported = 0xFF;
  p.link_round_trip_latency = 0xFFFFFFFF;
  Data d{};
  p.encode(SmpData(d));
  EXPECT_EQ(d[34], 0x07);  // LMC only, reserved 5:3 and M_KeyProtectBits clear
  EXPECT_EQ(d[32], 0xFF);  // speed supported + state, both 4 bits
  EXPECT_EQ(d[56], 0x00);  // reserved byte before LinkRoundTripLatency untouched
  EXPECT_EQ(load_be24(d.data() + 57), 0xFFFFFFU);

  Smp s;
  s.status = 0xFFFF;  // DR: only 15 bits; the 16th is the D bit
  s.direction = false;
  Bytes w = encode_smp(s);
  EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_DIRECTION_F), 0U);
  EXPECT_EQ(decode_smp(w)->status, 0x7FFF);
}

// ---------------------------------------------------------------- malformed input

Bytes valid_dr() {
  const std::array<std::uint8_t, 2> path = {1, 2};
  return encode_smp(make_dr_smp(Method::kGet, AttrId::kNodeInfo, 0, path, 1));
}

void expect_malformed(std::span<const std::uint8_t> b, const std::string& needle,
                      DecodeOptions opts = {}) {
  auto r = decode_smp(b, opts);
  ASSERT_FALSE(r.ok()) << "accepted; expected error containing '" << needle << "'";
  EXPECT_EQ(r.error().code, Errc::kMalformedMad);
  EXPECT_THAT(r.error().message, HasSubstr(needle));
}

TEST(SmpCodecMalformed, EveryShortLength) {
  const Bytes good = valid_dr();
  for (std::size_t len = 0; len < kSmpSize; ++len) {
    // A heap buffer of exactly `len` bytes so a sanitizer build catches any
    // read past the end.
    std::vector<std::uint8_t> buf(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    SCOPED_TRACE(len);
    expect_malformed(buf, "buffer holds " + std::to_string(len) + " bytes, an SMP is 256");
  }
  // Longer buffers are fine: only the first 256 bytes are the SMP.
  std::vector<std::uint8_t> longer(good.begin(), good.end());
  longer.resize(300, 0xAB);
  EXPECT_TRUE(decode_smp(longer).ok());
}

TEST(SmpCodecMalformed, BaseVersion) {
  Bytes b = valid_dr();
  for (int v : {0, 2, 0x80, 0xFF}) {
    b[0] = static_cast<std::uint8_t>(v);
    expect_malformed(b, "base version " + std::to_string(v) + " (expected 1)");
  }
}

TEST(SmpCodecMalformed, ClassVersion) {
  Bytes b = valid_dr();
  for (int v : {0, 2, 0xFF}) {
    b[2] = static_cast<std::uint8_t>(v);
    expect_malformed(b, "class version " + std::to_string(v) + " (expected 1)");
  }
}

TEST(SmpCodecMalformed, EveryNonSmpClass) {
  Bytes b = valid_dr();
  int rejected = 0;
  for (int c = 0; c < 256; ++c) {
    b[1] = static_cast<std::uint8_t>(c);
    const bool smp_class = c == 0x01 || c == 0x81;
    if (smp_class) {
      EXPECT_TRUE(decode_smp(b).ok()) << c;
      continue;
    }
    char needle[64];
    std::snprintf(needle, sizeof needle, "management class 0x%02x is not an SMP class", c);
    expect_malformed(b, needle);
    ++rejected;
  }
  EXPECT_EQ(rejected, 254);
}

TEST(SmpCodecMalformed, EveryUnknownMethod) {
  Bytes b = valid_dr();
  int accepted = 0;
  for (int m = 0; m < 256; ++m) {
    b[3] = static_cast<std::uint8_t>(m);
    if (decode_smp(b).ok()) {
      ++accepted;
      continue;
    }
    char needle[32];
    std::snprintf(needle, sizeof needle, "unknown method 0x%02x", m);
    expect_malformed(b, needle);
  }
  EXPECT_EQ(accepted, 5);  // Get, Set, Trap, TrapRepress, GetResp
}

TEST(SmpCodecMalformed, UnknownAttribute) {
  Bytes b = valid_dr();
  for (std::uint16_t a : {0x0000, 0x0001, 0x0013, 0x0014, 0x001C, 0xFF00, 0xFF13, 0xFFFF}) {
    store_be16(b.data() + 16, a);
    char needle[32];
    std::snprintf(needle, sizeof needle, "unknown attribute 0x%04x", a);
    expect_malformed(b, needle);
    // The simulator's SMA decodes them to answer with a status.
    auto r = decode_smp(b, DecodeOptions{.allow_unknown_attribute = true});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(static_cast<std::uint16_t>(r->attr_id), a);
    EXPECT_EQ(encode_smp(*r), b);
  }
}

TEST(SmpCodecMalformed, HopCount) {
  Bytes b = valid_dr();
  b[6] = 0;  // hop pointer
  for (int hc = 64; hc < 256; ++hc) {
    b[7] = static_cast<std::uint8_t>(hc);
    expect_malformed(b, "directed-route SMP: hop count " + std::to_string(hc) + " exceeds 63");
  }
  b[7] = 63;
  EXPECT_TRUE(decode_smp(b).ok());
  // LID-routed SMPs: bytes 6-7 are reserved and not checked.
  b[1] = 0x01;
  b[7] = 200;
  EXPECT_TRUE(decode_smp(b).ok());
}

TEST(SmpCodecMalformed, HopPointer) {
  Bytes b = valid_dr();
  for (int hc = 0; hc <= 63; ++hc) {
    b[7] = static_cast<std::uint8_t>(hc);
    for (int hp = 0; hp < 256; ++hp) {
      b[6] = static_cast<std::uint8_t>(hp);
      if (hp <= hc + 1) {
        ASSERT_TRUE(decode_smp(b).ok()) << hc << " " << hp;
      } else {
        expect_malformed(b, "hop pointer " + std::to_string(hp) + " exceeds hop count " +
                                std::to_string(hc) + " + 1");
      }
    }
  }
}

// The order of checks is fixed, so a MAD broken in several places reports the
// first field in wire order.
TEST(SmpCodecMalformed, FirstBadFieldWins) {
  Bytes b = valid_dr();
  b[0] = 2;
  b[1] = 0x04;
  b[7] = 99;
  expect_malformed(b, "base version 2");
}

}  // namespace
}  // namespace subnetd::discovery::mad

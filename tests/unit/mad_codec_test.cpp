// SMP codec tests: round trips and a randomised cross-check of every field
// against libibmad (an independent implementation of the same IBA layouts),
// of the header and of each attribute. Traps, builders, vendor attributes
// and malformed input: mad_codec_builders_test.cpp.
//
// The cross-check runs both ways: encode with ours and read back with
// mad_get_field(64)/mad_get_array, and write with mad_set_field(64)/
// mad_set_array on top of random bytes (so a field read from the wrong place
// picks up noise) and decode with ours. Seeds are fixed and printed.

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

using namespace codectest;

// Number of field values compared with libibmad; CountScope prints each
// test's share so the figure shows up in the test log.
std::uint64_t g_field_checks = 0;

class CountScope {
 public:
  explicit CountScope(const char* what) : what_(what), start_(g_field_checks) {}
  ~CountScope() {
    std::printf("[ checked  ] %s: %llu field values compared with libibmad\n", what_,
                static_cast<unsigned long long>(g_field_checks - start_));
  }
  CountScope(const CountScope&) = delete;
  CountScope& operator=(const CountScope&) = delete;

 private:
  const char* what_;
  std::uint64_t start_;
};

std::uint64_t mask_of(unsigned bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

// libibmad's setters do not mask: a value wider than the field spills into
// its neighbours. Callers pass values of the field's width.
std::uint64_t ib_get(Bytes& buf, int base, MAD_FIELDS f, unsigned bits) {
  return bits > 32 ? mad_get_field64(buf.data(), base, f) : mad_get_field(buf.data(), base, f);
}
void ib_set(Bytes& buf, int base, MAD_FIELDS f, unsigned bits, std::uint64_t v) {
  if (bits > 32) {
    mad_set_field64(buf.data(), base, f, v);
  } else {
    mad_set_field(buf.data(), base, f, static_cast<std::uint32_t>(v));
  }
}

// One libibmad field and the struct member it corresponds to.
template <class T>
struct FieldMap {
  MAD_FIELDS id;
  unsigned bits;
  std::function<std::uint64_t(const T&)> get;
  std::function<void(T&, std::uint64_t)> set;
};

#define FIELD(T, ID, BITS, member)                                                   \
  FieldMap<T> {                                                                      \
    ID, BITS, [](const T& x) { return static_cast<std::uint64_t>(x.member); },       \
        [](T& x, std::uint64_t v) { x.member = static_cast<decltype(x.member)>(v); } \
  }

// ---------------------------------------------------------------- field maps

std::vector<FieldMap<NodeInfo>> node_info_fields() {
  using T = NodeInfo;
  return {
      FIELD(T, IB_NODE_BASE_VERS_F, 8, base_version),
      FIELD(T, IB_NODE_CLASS_VERS_F, 8, class_version),
      FIELD(T, IB_NODE_TYPE_F, 8, node_type),
      FIELD(T, IB_NODE_NPORTS_F, 8, num_ports),
      FIELD(T, IB_NODE_SYSTEM_GUID_F, 64, system_image_guid),
      FIELD(T, IB_NODE_GUID_F, 64, node_guid),
      FIELD(T, IB_NODE_PORT_GUID_F, 64, port_guid),
      FIELD(T, IB_NODE_PARTITION_CAP_F, 16, partition_cap),
      FIELD(T, IB_NODE_DEVID_F, 16, device_id),
      FIELD(T, IB_NODE_REVISION_F, 32, revision),
      FIELD(T, IB_NODE_LOCAL_PORT_F, 8, local_port_num),
      FIELD(T, IB_NODE_VENDORID_F, 24, vendor_id),
  };
}

std::vector<FieldMap<SwitchInfo>> switch_info_fields() {
  using T = SwitchInfo;
  return {
      FIELD(T, IB_SW_LINEAR_FDB_CAP_F, 16, linear_fdb_cap),
      FIELD(T, IB_SW_RANDOM_FDB_CAP_F, 16, random_fdb_cap),
      FIELD(T, IB_SW_MCAST_FDB_CAP_F, 16, multicast_fdb_cap),
      FIELD(T, IB_SW_LINEAR_FDB_TOP_F, 16, linear_fdb_top),
      FIELD(T, IB_SW_DEF_PORT_F, 8, default_port),
      FIELD(T, IB_SW_DEF_MCAST_PRIM_F, 8, default_mcast_primary_port),
      FIELD(T, IB_SW_DEF_MCAST_NOT_PRIM_F, 8, default_mcast_not_primary_port),
      FIELD(T, IB_SW_LIFE_TIME_F, 5, life_time_value),
      FIELD(T, IB_SW_STATE_CHANGE_F, 1, port_state_change),
      FIELD(T, IB_SW_OPT_SLTOVL_MAPPING_F, 2, optimized_sl2vl),
      FIELD(T, IB_SW_LIDS_PER_PORT_F, 16, lids_per_port),
      FIELD(T, IB_SW_PARTITION_ENFORCE_CAP_F, 16, partition_enforcement_cap),
      FIELD(T, IB_SW_PARTITION_ENF_INB_F, 1, inbound_enforcement_cap),
      FIELD(T, IB_SW_PARTITION_ENF_OUTB_F, 1, outbound_enforcement_cap),
      FIELD(T, IB_SW_FILTER_RAW_INB_F, 1, filter_raw_inbound_cap),
      FIELD(T, IB_SW_FILTER_RAW_OUTB_F, 1, filter_raw_outbound_cap),
      FIELD(T, IB_SW_ENHANCED_PORT0_F, 1, enhanced_port0),
      FIELD(T, IB_SW_MCAST_FDB_TOP_F, 16, multicast_fdb_top),
  };
}

std::vector<FieldMap<PortInfo>> port_info_fields() {
  using T = PortInfo;
  return {
      FIELD(T, IB_PORT_MKEY_F, 64, m_key),
      FIELD(T, IB_PORT_GID_PREFIX_F, 64, gid_prefix),
      FIELD(T, IB_PORT_LID_F, 16, lid),
      FIELD(T, IB_PORT_SMLID_F, 16, master_sm_lid),
      FIELD(T, IB_PORT_CAPMASK_F, 32, capability_mask),
      FIELD(T, IB_PORT_DIAG_F, 16, diag_code),
      FIELD(T, IB_PORT_MKEY_LEASE_F, 16, m_key_lease_period),
      FIELD(T, IB_PORT_LOCAL_PORT_F, 8, local_port_num),
      FIELD(T, IB_PORT_LINK_WIDTH_ENABLED_F, 8, link_width_enabled),
      FIELD(T, IB_PORT_LINK_WIDTH_SUPPORTED_F, 8, link_width_supported),
      FIELD(T, IB_PORT_LINK_WIDTH_ACTIVE_F, 8, link_width_active),
      FIELD(T, IB_PORT_LINK_SPEED_SUPPORTED_F, 4, link_speed_supported),
      FIELD(T, IB_PORT_STATE_F, 4, port_state),
      FIELD(T, IB_PORT_PHYS_STATE_F, 4, port_phys_state),
      FIELD(T, IB_PORT_LINK_DOWN_DEF_F, 4, link_down_default_state),
      FIELD(T, IB_PORT_MKEY_PROT_BITS_F, 2, m_key_protect_bits),
      FIELD(T, IB_PORT_LMC_F, 3, lmc),
      FIELD(T, IB_PORT_LINK_SPEED_ACTIVE_F, 4, link_speed_active),
      FIELD(T, IB_PORT_LINK_SPEED_ENABLED_F, 4, link_speed_enabled),
      FIELD(T, IB_PORT_NEIGHBOR_MTU_F, 4, neighbor_mtu),
      FIELD(T, IB_PORT_SMSL_F, 4, master_sm_sl),
      FIELD(T, IB_PORT_VL_CAP_F, 4, vl_cap),
      FIELD(T, IB_PORT_INIT_TYPE_F, 4, init_type),
      FIELD(T, IB_PORT_VL_HIGH_LIMIT_F, 8, vl_high_limit),
      FIELD(T, IB_PORT_VL_ARBITRATION_HIGH_CAP_F, 8, vl_arbitration_high_cap),
      FIELD(T, IB_PORT_VL_ARBITRATION_LOW_CAP_F, 8, vl_arbitration_low_cap),
      FIELD(T, IB_PORT_INIT_TYPE_REPLY_F, 4, init_type_reply),
      FIELD(T, IB_PORT_MTU_CAP_F, 4, mtu_cap),
      FIELD(T, IB_PORT_VL_STALL_COUNT_F, 3, vl_stall_count),
      FIELD(T, IB_PORT_HOQ_LIFE_F, 5, hoq_life),
      FIELD(T, IB_PORT_OPER_VLS_F, 4, operational_vls),
      FIELD(T, IB_PORT_PART_EN_INB_F, 1, partition_enforcement_inbound),
      FIELD(T, IB_PORT_PART_EN_OUTB_F, 1, partition_enforcement_outbound),
      FIELD(T, IB_PORT_FILTER_RAW_INB_F, 1, filter_raw_inbound),
      FIELD(T, IB_PORT_FILTER_RAW_OUTB_F, 1, filter_raw_outbound),
      FIELD(T, IB_PORT_MKEY_VIOL_F, 16, m_key_violations),
      FIELD(T, IB_PORT_PKEY_VIOL_F, 16, p_key_violations),
      FIELD(T, IB_PORT_QKEY_VIOL_F, 16, q_key_violations),
      FIELD(T, IB_PORT_GUID_CAP_F, 8, guid_cap),
      FIELD(T, IB_PORT_CLIENT_REREG_F, 1, client_reregister),
      FIELD(T, IB_PORT_MCAST_PKEY_SUPR_ENAB_F, 2, multicast_pkey_trap_suppression_enabled),
      FIELD(T, IB_PORT_SUBN_TIMEOUT_F, 5, subnet_timeout),
      FIELD(T, IB_PORT_RESP_TIME_VAL_F, 5, resp_time_value),
      FIELD(T, IB_PORT_LOCAL_PHYS_ERR_F, 4, local_phy_errors),
      FIELD(T, IB_PORT_OVERRUN_ERR_F, 4, overrun_errors),
      FIELD(T, IB_PORT_MAX_CREDIT_HINT_F, 16, max_credit_hint),
      FIELD(T, IB_PORT_LINK_ROUND_TRIP_F, 24, link_round_trip_latency),
      FIELD(T, IB_PORT_CAPMASK2_F, 16, capability_mask2),
      FIELD(T, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, 4, link_speed_ext_active),
      FIELD(T, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, 4, link_speed_ext_supported),
      FIELD(T, IB_PORT_LINK_SPEED_EXT_ENABLED_F, 5, link_speed_ext_enabled),
  };
}

std::vector<FieldMap<SmInfo>> sm_info_fields() {
  using T = SmInfo;
  return {
      FIELD(T, IB_SMINFO_GUID_F, 64, guid),     FIELD(T, IB_SMINFO_KEY_F, 64, sm_key),
      FIELD(T, IB_SMINFO_ACT_F, 32, act_count), FIELD(T, IB_SMINFO_PRIO_F, 4, priority),
      FIELD(T, IB_SMINFO_STATE_F, 4, sm_state),
  };
}

std::vector<FieldMap<Notice>> notice_fields() {
  using T = Notice;
  return {
      FIELD(T, IB_NOTICE_IS_GENERIC_F, 1, is_generic),
      FIELD(T, IB_NOTICE_TYPE_F, 7, type),
      FIELD(T, IB_NOTICE_PRODUCER_F, 24, producer_type),
      FIELD(T, IB_NOTICE_TRAP_NUMBER_F, 16, trap_number),
      FIELD(T, IB_NOTICE_ISSUER_LID_F, 16, issuer_lid),
      FIELD(T, IB_NOTICE_TOGGLE_F, 1, notice_toggle),
      FIELD(T, IB_NOTICE_COUNT_F, 15, notice_count),
      // The typed views of DataDetails libibmad has (trap 128 / 144).
      FieldMap<T>{IB_NOTICE_DATA_LID_F, 16,
                  [](const T& n) -> std::uint64_t { return load_be16(n.data_details.data()); },
                  [](T& n, std::uint64_t v) {
                    store_be16(n.data_details.data(), static_cast<std::uint16_t>(v));
                  }},
      FieldMap<T>{IB_NOTICE_DATA_144_LID_F, 16,
                  [](const T& n) -> std::uint64_t { return load_be16(n.data_details.data() + 2); },
                  [](T& n, std::uint64_t v) {
                    store_be16(n.data_details.data() + 2, static_cast<std::uint16_t>(v));
                  }},
      FieldMap<T>{IB_NOTICE_DATA_144_CAPMASK_F, 32,
                  [](const T& n) -> std::uint64_t { return load_be32(n.data_details.data() + 6); },
                  [](T& n, std::uint64_t v) {
                    store_be32(n.data_details.data() + 6, static_cast<std::uint32_t>(v));
                  }},
  };
}

#undef FIELD

// A random struct: every mapped field set to a random value of its width.
template <class T>
T random_struct(const std::vector<FieldMap<T>>& fields, Rng& rng) {
  T t;
  for (const auto& f : fields) f.set(t, rng.bits(f.bits));
  return t;
}

// Attribute data lives at offset 64 of the MAD; libibmad's attribute field
// offsets are relative to the data, so we pass the data as a buffer of its own
// (padded to a full MAD so fields never run past the end).
template <class T>
void cross_check_attribute(const char* name, const std::vector<FieldMap<T>>& fields,
                           std::function<void(const T&, Rng&)> extra_random = nullptr) {
  print_seed(name);
  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    // ours -> libibmad
    T t = random_struct(fields, rng);
    if (extra_random) extra_random(t, rng);
    Bytes buf{};
    rng.fill(buf);  // noise beyond the 64 data bytes must not matter
    t.encode(SmpData(buf.data(), kSmpDataSize));
    for (const auto& f : fields) {
      ASSERT_EQ(ib_get(buf, 0, f.id, f.bits), f.get(t))
          << name << " field " << mad_field_name(f.id) << " iteration " << it;
      ++g_field_checks;
    }
    // libibmad -> ours, over random background bytes
    Bytes wire;
    rng.fill(wire);
    for (const auto& f : fields) ib_set(wire, 0, f.id, f.bits, rng.bits(f.bits));
    const T decoded = T::decode(ConstSmpData(wire.data(), kSmpDataSize));
    for (const auto& f : fields) {
      ASSERT_EQ(f.get(decoded), ib_get(wire, 0, f.id, f.bits))
          << name << " field " << mad_field_name(f.id) << " iteration " << it;
      ++g_field_checks;
    }
    // And the decoded struct survives our own round trip.
    Data again{};
    decoded.encode(SmpData(again));
    ASSERT_EQ(T::decode(ConstSmpData(again)), decoded) << name << " iteration " << it;
  }
}

// The set of data bits our encoder can produce (all fields at all-ones) must be
// exactly the set libibmad's fields cover: we neither write bits libibmad
// calls reserved nor leave a libibmad field unwritten.
template <class T>
void expect_same_bit_coverage(const char* name, const std::vector<FieldMap<T>>& fields, T ones) {
  Data ours{};
  ones.encode(SmpData(ours));
  Bytes theirs{};
  for (const auto& f : fields) ib_set(theirs, 0, f.id, f.bits, mask_of(f.bits));
  for (std::size_t i = 0; i < kSmpDataSize; ++i) {
    EXPECT_EQ(ours[i], theirs[i]) << name << " data byte " << i;
  }
}

template <class T>
T all_ones(const std::vector<FieldMap<T>>& fields) {
  T t;
  for (const auto& f : fields) f.set(t, mask_of(f.bits));
  return t;
}

// Every libibmad field id in [first, last) must appear in `fields`.
template <class T>
void expect_covers_range(const std::vector<FieldMap<T>>& fields, int first, int last) {
  std::set<int> ids;
  for (const auto& f : fields) ids.insert(f.id);
  for (int id = first; id < last; ++id) {
    EXPECT_TRUE(ids.count(id)) << "libibmad field " << mad_field_name(static_cast<MAD_FIELDS>(id))
                               << " is not cross-checked";
  }
}

// ---------------------------------------------------------------- SMP header

Smp random_smp(Rng& rng, bool directed) {
  Smp s;
  s.mgmt_class = directed ? MgmtClass::kSubnDirected : MgmtClass::kSubnLid;
  s.method = kMethods[rng.below(kMethods.size())];
  s.attr_id = kAttrs[rng.below(kAttrs.size())];
  s.tid = rng.bits(64);
  s.attr_mod = static_cast<std::uint32_t>(rng.bits(32));
  s.m_key = rng.bits(64);
  rng.fill(s.data);
  if (directed) {
    s.status = static_cast<std::uint16_t>(rng.bits(15));
    s.direction = rng.bits(1) != 0;
    s.hop_count = static_cast<std::uint8_t>(rng.below(kMaxHopCount + 1));
    s.hop_pointer = static_cast<std::uint8_t>(rng.below(s.hop_count + 2u));
    s.dr_slid = static_cast<std::uint16_t>(rng.bits(16));
    s.dr_dlid = static_cast<std::uint16_t>(rng.bits(16));
    rng.fill(s.initial_path);
    rng.fill(s.return_path);
  } else {
    s.status = static_cast<std::uint16_t>(rng.bits(16));
  }
  return s;
}

TEST(SmpCodec, HeaderRoundTrip) {
  print_seed("HeaderRoundTrip");
  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    const Smp s = random_smp(rng, it % 2 == 0);
    const Bytes wire = encode_smp(s);
    auto d = decode_smp(wire);
    ASSERT_TRUE(d.ok()) << d.error().message;
    ASSERT_EQ(*d, s) << "iteration " << it;
    ASSERT_EQ(encode_smp(*d), wire);
  }
}

TEST(SmpCodec, DirectedRouteHeaderMatchesLibibmad) {
  const CountScope count("DirectedRouteHeaderMatchesLibibmad");
  print_seed("DirectedRouteHeaderMatchesLibibmad");
  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    // ours -> libibmad
    const Smp s = random_smp(rng, true);
    Bytes w = encode_smp(s);
    const auto method = static_cast<std::uint8_t>(s.method);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_BASEVER_F), 1U);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_MGMTCLASS_F), 0x81U);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_CLASSVER_F), 1U);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_METHOD_F), method & 0x7FU);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_RESPONSE_F), method >> 7U);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_DIRECTION_F), s.direction ? 1U : 0U);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_STATUS_F), s.status);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_HOPPTR_F), s.hop_pointer);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_HOPCNT_F), s.hop_count);
    EXPECT_EQ(mad_get_field64(w.data(), 0, IB_MAD_TRID_F), s.tid);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRID_F), static_cast<std::uint32_t>(s.attr_id));
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRMOD_F), s.attr_mod);
    EXPECT_EQ(mad_get_field64(w.data(), 0, IB_MAD_MKEY_F), s.m_key);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_DRSLID_F), s.dr_slid);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_DRSMP_DRDLID_F), s.dr_dlid);
    std::array<std::uint8_t, 64> path{};
    mad_get_array(w.data(), 0, IB_DRSMP_PATH_F, path.data());
    EXPECT_EQ(path, s.initial_path);
    mad_get_array(w.data(), 0, IB_DRSMP_RPATH_F, path.data());
    EXPECT_EQ(path, s.return_path);
    EXPECT_EQ(0, std::memcmp(w.data() + IB_SMP_DATA_OFFS, s.data.data(), IB_SMP_DATA_SIZE));
    g_field_checks += 19;

    // libibmad -> ours
    Bytes x;
    rng.fill(x);  // reserved bytes hold noise
    const Method m = kMethods[rng.below(kMethods.size())];
    const AttrId a = kAttrs[rng.below(kAttrs.size())];
    const auto hop_count = static_cast<std::uint32_t>(rng.below(64));
    const auto hop_ptr = static_cast<std::uint32_t>(rng.below(hop_count + 2));
    const auto status = static_cast<std::uint32_t>(rng.bits(15));
    const auto direction = static_cast<std::uint32_t>(rng.bits(1));
    const std::uint64_t tid = rng.bits(64);
    const std::uint64_t mkey = rng.bits(64);
    const auto attr_mod = static_cast<std::uint32_t>(rng.bits(32));
    const auto slid = static_cast<std::uint32_t>(rng.bits(16));
    const auto dlid = static_cast<std::uint32_t>(rng.bits(16));
    std::array<std::uint8_t, 64> ipath;
    std::array<std::uint8_t, 64> rpath;
    rng.fill(ipath);
    rng.fill(rpath);
    mad_set_field(x.data(), 0, IB_MAD_BASEVER_F, 1);
    mad_set_field(x.data(), 0, IB_MAD_MGMTCLASS_F, 0x81);
    mad_set_field(x.data(), 0, IB_MAD_CLASSVER_F, 1);
    mad_set_field(x.data(), 0, IB_MAD_METHOD_F, static_cast<std::uint8_t>(m) & 0x7F);
    mad_set_field(x.data(), 0, IB_MAD_RESPONSE_F, static_cast<std::uint8_t>(m) >> 7);
    mad_set_field(x.data(), 0, IB_DRSMP_STATUS_F, status);
    mad_set_field(x.data(), 0, IB_DRSMP_DIRECTION_F, direction);
    mad_set_field(x.data(), 0, IB_DRSMP_HOPPTR_F, hop_ptr);
    mad_set_field(x.data(), 0, IB_DRSMP_HOPCNT_F, hop_count);
    mad_set_field64(x.data(), 0, IB_MAD_TRID_F, tid);
    mad_set_field(x.data(), 0, IB_MAD_ATTRID_F, static_cast<std::uint16_t>(a));
    mad_set_field(x.data(), 0, IB_MAD_ATTRMOD_F, attr_mod);
    mad_set_field64(x.data(), 0, IB_MAD_MKEY_F, mkey);
    mad_set_field(x.data(), 0, IB_DRSMP_DRSLID_F, slid);
    mad_set_field(x.data(), 0, IB_DRSMP_DRDLID_F, dlid);
    mad_set_array(x.data(), 0, IB_DRSMP_PATH_F, ipath.data());
    mad_set_array(x.data(), 0, IB_DRSMP_RPATH_F, rpath.data());
    auto d = decode_smp(x);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_EQ(d->method, m);
    EXPECT_EQ(d->attr_id, a);
    EXPECT_EQ(d->direction, direction != 0);
    EXPECT_EQ(d->status, status);
    EXPECT_EQ(d->hop_pointer, hop_ptr);
    EXPECT_EQ(d->hop_count, hop_count);
    EXPECT_EQ(d->tid, tid);
    EXPECT_EQ(d->attr_mod, attr_mod);
    EXPECT_EQ(d->m_key, mkey);
    EXPECT_EQ(d->dr_slid, slid);
    EXPECT_EQ(d->dr_dlid, dlid);
    EXPECT_EQ(d->initial_path, ipath);
    EXPECT_EQ(d->return_path, rpath);
    EXPECT_EQ(0, std::memcmp(d->data.data(), x.data() + IB_SMP_DATA_OFFS, IB_SMP_DATA_SIZE));
    g_field_checks += 15;
    if (::testing::Test::HasFailure()) FAIL() << "iteration " << it;
  }
}

TEST(SmpCodec, LidRoutedHeaderMatchesLibibmad) {
  const CountScope count("LidRoutedHeaderMatchesLibibmad");
  print_seed("LidRoutedHeaderMatchesLibibmad");
  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    const Smp s = random_smp(rng, false);
    Bytes w = encode_smp(s);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_MGMTCLASS_F), 0x01U);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_STATUS_F), s.status);
    EXPECT_EQ(mad_get_field64(w.data(), 0, IB_MAD_TRID_F), s.tid);
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRID_F), static_cast<std::uint32_t>(s.attr_id));
    EXPECT_EQ(mad_get_field(w.data(), 0, IB_MAD_ATTRMOD_F), s.attr_mod);
    EXPECT_EQ(mad_get_field64(w.data(), 0, IB_MAD_MKEY_F), s.m_key);
    // LID-routed SMPs have no DR fields: their bytes are reserved and zero.
    for (std::size_t i : {6, 7}) EXPECT_EQ(w[i], 0) << i;
    for (std::size_t i = 32; i < 64; ++i) EXPECT_EQ(w[i], 0) << i;
    for (std::size_t i = 128; i < kSmpSize; ++i) EXPECT_EQ(w[i], 0) << i;
    g_field_checks += 6;

    Bytes x;
    rng.fill(x);
    const auto status = static_cast<std::uint32_t>(rng.bits(16));
    const std::uint64_t tid = rng.bits(64);
    mad_set_field(x.data(), 0, IB_MAD_BASEVER_F, 1);
    mad_set_field(x.data(), 0, IB_MAD_MGMTCLASS_F, 0x01);
    mad_set_field(x.data(), 0, IB_MAD_CLASSVER_F, 1);
    mad_set_field(x.data(), 0, IB_MAD_METHOD_F, 0x01);
    mad_set_field(x.data(), 0, IB_MAD_RESPONSE_F, 1);
    mad_set_field(x.data(), 0, IB_MAD_STATUS_F, status);
    mad_set_field64(x.data(), 0, IB_MAD_TRID_F, tid);
    mad_set_field(x.data(), 0, IB_MAD_ATTRID_F, 0x0019);
    auto d = decode_smp(x);  // garbage in bytes 6-7 and 128-255 must not matter
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_EQ(d->method, Method::kGetResp);
    EXPECT_EQ(d->status, status);
    EXPECT_FALSE(d->direction);
    EXPECT_EQ(d->tid, tid);
    EXPECT_EQ(d->attr_id, AttrId::kLinearForwardingTable);
    g_field_checks += 3;
    if (::testing::Test::HasFailure()) FAIL() << "iteration " << it;
  }
}

// ---------------------------------------------------------------- attributes

TEST(SmpCodec, NodeInfoMatchesLibibmad) {
  const CountScope count("NodeInfoMatchesLibibmad");
  const auto fields = node_info_fields();
  expect_covers_range(fields, IB_NODE_FIRST_F, IB_NODE_LAST_F);
  expect_same_bit_coverage("NodeInfo", fields, all_ones(fields));
  cross_check_attribute<NodeInfo>("NodeInfo", fields);
}

TEST(SmpCodec, SwitchInfoMatchesLibibmad) {
  const CountScope count("SwitchInfoMatchesLibibmad");
  const auto fields = switch_info_fields();
  expect_covers_range(fields, IB_SW_FIRST_F, IB_SW_LAST_F);
  expect_same_bit_coverage("SwitchInfo", fields, all_ones(fields));
  cross_check_attribute<SwitchInfo>("SwitchInfo", fields);
}

TEST(SmpCodec, PortInfoMatchesLibibmad) {
  const CountScope count("PortInfoMatchesLibibmad");
  const auto fields = port_info_fields();
  expect_covers_range(fields, IB_PORT_FIRST_F, IB_PORT_LAST_F);
  expect_covers_range(fields, IB_PORT_CAPMASK2_F, IB_PORT_LINK_SPEED_EXT_LAST_F);
  expect_same_bit_coverage("PortInfo", fields, all_ones(fields));
  cross_check_attribute<PortInfo>("PortInfo", fields);
}

TEST(SmpCodec, SmInfoMatchesLibibmad) {
  const CountScope count("SmInfoMatchesLibibmad");
  const auto fields = sm_info_fields();
  expect_covers_range(fields, IB_SMINFO_GUID_F, IB_SMINFO_STATE_F + 1);
  expect_same_bit_coverage("SMInfo", fields, all_ones(fields));
  cross_check_attribute<SmInfo>("SMInfo", fields);
}

TEST(SmpCodec, NoticeMatchesLibibmad) {
  const CountScope count("NoticeMatchesLibibmad");
  const auto fields = notice_fields();
  expect_covers_range(fields, IB_NOTICE_IS_GENERIC_F, IB_NOTICE_DATA_DETAILS_F);
  expect_covers_range(fields, IB_NOTICE_DATA_LID_F, IB_NOTICE_DATA_144_CAPMASK_F + 1);
  // IB_NOTICE_DATA_DETAILS_F is an array: compare the 54 bytes directly, with
  // the rest of DataDetails randomised underneath the typed trap fields.
  auto check_details = [](const Notice& n, Rng&) {
    Bytes buf{};
    n.encode(SmpData(buf.data(), kSmpDataSize));
    std::array<std::uint8_t, 54> details{};
    mad_get_array(buf.data(), 0, IB_NOTICE_DATA_DETAILS_F, details.data());
    EXPECT_EQ(details, n.data_details);
    ++g_field_checks;
  };
  cross_check_attribute<Notice>("Notice", fields, check_details);

  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    Bytes x;
    rng.fill(x);
    std::array<std::uint8_t, 54> details;
    rng.fill(details);
    mad_set_array(x.data(), 0, IB_NOTICE_DATA_DETAILS_F, details.data());
    ASSERT_EQ(Notice::decode(ConstSmpData(x.data(), kSmpDataSize)).data_details, details);
    ++g_field_checks;
  }
}

TEST(SmpCodec, LinearForwardingTableMatchesLibibmad) {
  const CountScope count("LinearForwardingTableMatchesLibibmad");
  print_seed("LinearForwardingTable");
  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    LinearForwardingTable t;
    rng.fill(t.ports);
    Bytes buf{};
    t.encode(SmpData(buf.data(), kSmpDataSize));
    std::array<std::uint8_t, 64> ports{};
    mad_get_array(buf.data(), 0, IB_LINEAR_FORW_TBL_F, ports.data());
    ASSERT_EQ(ports, t.ports);
    // The IBA says entry i is LID 64*block + i: byte i, nothing reordered.
    for (std::size_t i = 0; i < 64; ++i) ASSERT_EQ(buf[i], t.ports[i]);
    rng.fill(ports);
    Bytes x;
    rng.fill(x);
    mad_set_array(x.data(), 0, IB_LINEAR_FORW_TBL_F, ports.data());
    ASSERT_EQ(LinearForwardingTable::decode(ConstSmpData(x.data(), kSmpDataSize)).ports, ports);
    g_field_checks += 2;
  }
}

TEST(SmpCodec, NodeDescriptionMatchesLibibmad) {
  const CountScope count("NodeDescriptionMatchesLibibmad");
  Rng rng(kSeed);
  for (int it = 0; it < 200; ++it) {
    std::string text;
    const auto len = rng.below(80);  // longer than 64 is truncated
    for (std::uint64_t i = 0; i < len; ++i) text.push_back(static_cast<char>('!' + rng.below(90)));
    Bytes buf;
    rng.fill(buf);
    NodeDescription{text}.encode(SmpData(buf.data(), kSmpDataSize));
    std::array<char, 64> raw{};
    mad_get_array(buf.data(), 0, IB_NODE_DESC_F, raw.data());
    const std::string expect = text.substr(0, 64);
    ASSERT_EQ(std::string(raw.data(), strnlen(raw.data(), raw.size())), expect);
    ASSERT_EQ(NodeDescription::decode(ConstSmpData(buf.data(), kSmpDataSize)).text, expect);
    ++g_field_checks;
  }
  // A description of exactly 64 bytes has no terminating NUL on the wire.
  Data d;
  std::memset(d.data(), 'x', d.size());
  EXPECT_EQ(NodeDescription::decode(ConstSmpData(d)).text, std::string(64, 'x'));
}

// libibmad has no per-SL fields; its dump function is an independent reading
// of the nibble order, so parse that.
std::vector<int> libibmad_sl2vl(Bytes& buf) {
  std::array<char, 512> out{};
  mad_dump_sltovl(out.data(), static_cast<int>(out.size()), buf.data(), 8);
  std::vector<int> vls;
  std::istringstream in(out.data());
  std::string cell;
  while (std::getline(in, cell, '|')) {
    if (cell.find_first_of("0123456789") != std::string::npos) vls.push_back(std::stoi(cell));
  }
  return vls;
}

TEST(SmpCodec, SlToVlMatchesLibibmad) {
  const CountScope count("SlToVlMatchesLibibmad");
  print_seed("SLtoVL");
  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    SlToVlMappingTable t;
    for (auto& v : t.vl) v = static_cast<std::uint8_t>(rng.bits(4));
    Bytes buf{};
    t.encode(SmpData(buf.data(), kSmpDataSize));
    std::array<std::uint8_t, 8> raw{};
    mad_get_array(buf.data(), 0, IB_SLTOVL_MAPPING_TABLE_F, raw.data());
    EXPECT_EQ(0, std::memcmp(raw.data(), buf.data(), raw.size()));
    const auto vls = libibmad_sl2vl(buf);
    ASSERT_EQ(vls.size(), 16U);
    for (std::size_t sl = 0; sl < 16; ++sl) ASSERT_EQ(vls[sl], t.vl[sl]) << "SL " << sl;

    Bytes x;
    rng.fill(x);
    rng.fill(raw);
    mad_set_array(x.data(), 0, IB_SLTOVL_MAPPING_TABLE_F, raw.data());
    const auto theirs = libibmad_sl2vl(x);
    const auto ours = SlToVlMappingTable::decode(ConstSmpData(x.data(), kSmpDataSize));
    for (std::size_t sl = 0; sl < 16; ++sl) ASSERT_EQ(ours.vl[sl], theirs[sl]) << "SL " << sl;
    g_field_checks += 32;
  }
}

// Parses libibmad's VL arbitration dump ("VL    : |0x1 |..." and "WEIGHT: |...").
VlArbitrationTable libibmad_vlarb(Bytes& buf) {
  std::array<char, 2048> out{};
  mad_dump_vlarbitration(out.data(), static_cast<int>(out.size()), buf.data(), 64);
  VlArbitrationTable t;
  std::istringstream in(out.data());
  std::string line;
  std::size_t vl_i = 0;
  std::size_t w_i = 0;
  while (std::getline(in, line)) {
    const bool is_vl = line.rfind("VL", 0) == 0;
    const bool is_w = line.rfind("WEIGHT", 0) == 0;
    if (!is_vl && !is_w) continue;
    std::istringstream cells(line.substr(line.find('|') + 1));
    std::string cell;
    while (std::getline(cells, cell, '|')) {
      if (cell.find("0x") == std::string::npos) continue;
      const auto v = static_cast<std::uint8_t>(std::stoul(cell, nullptr, 16));
      if (is_vl && vl_i < 32) t.entries[vl_i++].vl = v;
      if (is_w && w_i < 32) t.entries[w_i++].weight = v;
    }
  }
  EXPECT_EQ(vl_i, 32U);
  EXPECT_EQ(w_i, 32U);
  return t;
}

TEST(SmpCodec, VlArbitrationMatchesLibibmad) {
  const CountScope count("VlArbitrationMatchesLibibmad");
  print_seed("VLArbitration");
  Rng rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    VlArbitrationTable t;
    for (auto& e : t.entries) {
      e.vl = static_cast<std::uint8_t>(rng.bits(4));
      e.weight = static_cast<std::uint8_t>(rng.bits(8));
    }
    Bytes buf{};
    t.encode(SmpData(buf.data(), kSmpDataSize));
    std::array<std::uint8_t, 64> raw{};
    mad_get_array(buf.data(), 0, IB_VL_ARBITRATION_TABLE_F, raw.data());
    EXPECT_EQ(0, std::memcmp(raw.data(), buf.data(), raw.size()));
    ASSERT_EQ(libibmad_vlarb(buf), t) << "iteration " << it;

    Bytes x;
    rng.fill(x);
    rng.fill(raw);
    for (std::size_t i = 0; i < 64; i += 2) raw[i] &= 0x0F;  // reserved nibble
    mad_set_array(x.data(), 0, IB_VL_ARBITRATION_TABLE_F, raw.data());
    ASSERT_EQ(VlArbitrationTable::decode(ConstSmpData(x.data(), kSmpDataSize)), libibmad_vlarb(x));
    g_field_checks += 128;
  }
}

}  // namespace
}  // namespace subnetd::discovery::mad

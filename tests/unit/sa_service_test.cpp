// ServiceRecords: registered by a port for itself, found by others in the
// partitions they hold, kept for their lease on an injected clock,
// replaced, deleted, and bounded.

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "daemon/sa/service_record.hpp"
#include "discovery/mad/bytes.hpp"
#include "sa_test_support.hpp"

namespace subnetd::daemon::sa {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kId = 1ULL << 0, kGid = 1ULL << 1, kPKey = 1ULL << 2, kLease = 1ULL << 4,
                        kName = 1ULL << 6;

class SaServiceTest : public SaAgentTest {
 protected:
  SaServiceTest()
      : services_([this] {
          SaAgentOptions o;
          o.now = [this] { return now_; };
          return o;
        }()) {}

  // A ServiceRecord query about port `owner`'s service `id`.
  mad::SaMad service(Method m, PortRef owner, std::uint64_t id, std::uint64_t mask,
                     std::uint32_t lease = 0, const char* name = "") const {
    mad::SaMad q = request(m, Attr::kServiceRecord, mask);
    set(q, "ServiceID", id);
    discovery::mad::store_be64(&q.data[8], 0xFE80'0000'0000'0000ULL);
    discovery::mad::store_be64(&q.data[16], topo_->port(owner).guid.value);
    set(q, "ServiceP_Key", 0xFFFF);
    set(q, "ServiceLease", lease);
    std::strncpy(reinterpret_cast<char*>(&q.data[48]), name, 64);
    return q;
  }
  std::vector<MadBytes> ask_svc(const mad::SaMad& q, PortRef from) {
    return services_.answer(mad::encode_sa(q), lid_of(from), state_);
  }
  std::vector<std::vector<std::uint8_t>> all_from(PortRef from) {
    return table(ask_svc(request(Method::kGetTable, Attr::kServiceRecord), from));
  }

  std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
  SaAgent services_;
};

TEST_F(SaServiceTest, RegisteredServicesAreFoundWithTheirLeaseLeft) {
  const PortRef a = ca_ports_[0], b = ca_ports_[1];
  const auto set_ok = ask_svc(
      service(Method::kSet, a, 0x10, kId | kGid | kPKey | kLease | kName, 10, "storage"), a);
  ASSERT_EQ(status_of(set_ok), 0);
  EXPECT_EQ(mad::decode_sa(set_ok.front())->method, static_cast<std::uint8_t>(Method::kGetResp));
  ASSERT_EQ(status_of(ask_svc(service(Method::kSet, a, 0x11, kId | kGid | kPKey, 0, "forever"), a)),
            0)
      << "no lease given: for ever";

  now_ += 4s;
  auto found = all_from(b);
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(get(Attr::kServiceRecord, found[0], "ServiceID"), 0x10U);
  EXPECT_EQ(get(Attr::kServiceRecord, found[0], "ServiceLease"), 6U);
  EXPECT_EQ(get(Attr::kServiceRecord, found[1], "ServiceLease"), 0xFFFFFFFFU);
  // By name.
  auto by_name = service(Method::kGet, a, 0, kName, 0, "forever");
  const auto one = ask_svc(by_name, b);
  ASSERT_EQ(status_of(one), 0);
  EXPECT_EQ(mad::get_field(mad::decode_sa(one.front())->data,
                           mad::component(*mad::layout_of(by_name.attr_id), "ServiceID")),
            0x11U);

  // Registering again renews the lease; when it runs out the record goes.
  ASSERT_EQ(status_of(ask_svc(service(Method::kSet, a, 0x10, kId | kGid | kPKey | kLease, 10), a)),
            0);
  now_ += 9s;
  EXPECT_EQ(all_from(b).size(), 2U);
  now_ += 1s;
  found = all_from(b);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(get(Attr::kServiceRecord, found[0], "ServiceID"), 0x11U);

  // Delete answers the record deleted; a second Delete finds none.
  const auto del = ask_svc(service(Method::kDelete, a, 0x11, kId | kGid | kPKey), a);
  ASSERT_EQ(status_of(del), 0);
  EXPECT_EQ(mad::decode_sa(del.front())->method, static_cast<std::uint8_t>(Method::kDeleteResp));
  EXPECT_EQ(status_of(ask_svc(service(Method::kDelete, a, 0x11, kId | kGid | kPKey), a)),
            mad::status::kNoRecords);
  EXPECT_TRUE(all_from(b).empty());
}

TEST_F(SaServiceTest, WrongRegistrationsGetTheirStatus) {
  const PortRef a = ca_ports_[0], b = ca_ports_[1];
  // The three naming components are required.
  EXPECT_EQ(status_of(ask_svc(service(Method::kSet, a, 1, kId | kGid), a)),
            mad::status::kInsufficientComponents);
  EXPECT_EQ(status_of(ask_svc(service(Method::kDelete, a, 1, kId | kPKey), a)),
            mad::status::kInsufficientComponents);
  // Only for one's own port (or from the SM's).
  EXPECT_EQ(status_of(ask_svc(service(Method::kSet, a, 1, kId | kGid | kPKey), b)),
            mad::status::kReqInvalid);
  state_.sm_lid = lid_of(b);
  EXPECT_EQ(status_of(ask_svc(service(Method::kSet, a, 1, kId | kGid | kPKey), b)), 0);
  // A GID of no port, or outside the subnet.
  auto stranger = service(Method::kSet, a, 2, kId | kGid | kPKey);
  discovery::mad::store_be64(&stranger.data[16], 0xDEAD'BEEF);
  EXPECT_EQ(status_of(ask_svc(stranger, a)), mad::status::kInvalidGid);
  auto elsewhere = service(Method::kSet, a, 2, kId | kGid | kPKey);
  discovery::mad::store_be64(&elsewhere.data[8], 0xFEC0'0000'0000'0000ULL);
  EXPECT_EQ(status_of(ask_svc(elsewhere, a)), mad::status::kInvalidGid);
  // A partition the requester does not hold (only the default exists).
  auto other = service(Method::kSet, a, 3, kId | kGid | kPKey);
  set(other, "ServiceP_Key", 0x8010);
  EXPECT_EQ(status_of(ask_svc(other, a)), mad::status::kReqInvalid);
  // Unsupported methods and a fabric not yet up.
  EXPECT_EQ(status_of(ask_svc(request(Method::kGetMulti, Attr::kServiceRecord), a)),
            mad::status::kMethodAttrUnsupported);
  state::FabricState empty;
  EXPECT_EQ(status_of(services_.answer(
                mad::encode_sa(request(Method::kGetTable, Attr::kServiceRecord)), Lid{1}, empty)),
            mad::status::kNoResources);
}

TEST(ServiceRegistry, IsBoundedAndExpiredRecordsMakeRoom) {
  ServiceRegistry reg;
  const auto t0 = std::chrono::steady_clock::time_point{std::chrono::hours(1)};
  ServiceRegistry::Record r{};
  for (std::uint64_t i = 0; i < kMaxServices; ++i) {
    ASSERT_TRUE(reg.put({i, {}, 0xFFFF}, r, t0 + 5s, t0));
  }
  EXPECT_FALSE(reg.put({kMaxServices, {}, 0xFFFF}, r, std::nullopt, t0)) << "full";
  EXPECT_TRUE(reg.put({0, {}, 0xFFFF}, r, std::nullopt, t0)) << "a renewal always fits";
  EXPECT_TRUE(reg.put({kMaxServices, {}, 0xFFFF}, r, std::nullopt, t0 + 5s)) << "expired ones go";
  EXPECT_EQ(reg.snapshot(t0 + 5s).size(), 2U);
}

}  // namespace
}  // namespace subnetd::daemon::sa

// MultiPathRecord (GetMulti): the PathRecords between every listed SGID
// and DGID, each the one a PathRecord query for that pair answers;
// NumbPath bounds them; what is missing or wrong gets its status.

#include <gtest/gtest.h>

#include "discovery/mad/bytes.hpp"
#include "sa_test_support.hpp"

namespace subnetd::daemon::sa {
namespace {

constexpr std::uint64_t kNumbPath = 1ULL << 6, kSgidCount = 1ULL << 19, kDgidCount = 1ULL << 20;

class SaMultiPathTest : public SaAgentTest {
 protected:
  mad::SaMad multi(const std::vector<PortRef>& srcs, const std::vector<PortRef>& dsts,
                   std::uint64_t mask = kSgidCount | kDgidCount) const {
    mad::SaMad q = request(Method::kGetMulti, Attr::kMultiPathRecord, mask);
    set(q, "SGIDCount", srcs.size());
    set(q, "DGIDCount", dsts.size());
    std::size_t at = 24;
    for (const auto* list : {&srcs, &dsts}) {
      for (const PortRef& p : *list) {
        discovery::mad::store_be64(&q.data[at], 0xFE80'0000'0000'0000ULL);
        discovery::mad::store_be64(&q.data[at + 8], topo_->port(p).guid.value);
        at += 16;
      }
    }
    return q;
  }
  // What a PathRecord GetTable for one pair answers.
  std::vector<std::uint8_t> path(PortRef s, PortRef d) {
    mad::SaMad q = request(Method::kGetTable, Attr::kPathRecord, (1ULL << 2) | (1ULL << 3));
    discovery::mad::store_be64(&q.data[8], 0xFE80'0000'0000'0000ULL);
    discovery::mad::store_be64(&q.data[16], topo_->port(d).guid.value);
    discovery::mad::store_be64(&q.data[24], 0xFE80'0000'0000'0000ULL);
    discovery::mad::store_be64(&q.data[32], topo_->port(s).guid.value);
    const auto t = table(ask(q));
    EXPECT_EQ(t.size(), 1U);
    return t.empty() ? std::vector<std::uint8_t>{} : t.front();
  }
  std::vector<std::vector<std::uint8_t>> multi_table(const mad::SaMad& q) {
    const auto segs = ask(q);
    const auto first = mad::decode_sa(segs.front());
    EXPECT_EQ(first->method, static_cast<std::uint8_t>(Method::kGetMultiResp));
    EXPECT_EQ(first->status, 0);
    auto bytes = mad::reassemble(segs);
    EXPECT_TRUE(bytes.ok());
    std::vector<std::vector<std::uint8_t>> out;
    for (std::size_t at = 0; at + 64 <= bytes->size(); at += 64) {
      out.emplace_back(bytes->begin() + static_cast<std::ptrdiff_t>(at),
                       bytes->begin() + static_cast<std::ptrdiff_t>(at + 64));
    }
    return out;
  }
};

TEST_F(SaMultiPathTest, EveryPairIsItsPathRecord) {
  const std::vector<PortRef> s{ca_ports_[0], ca_ports_[1]}, d{ca_ports_[2], ca_ports_[3]};
  const auto got = multi_table(multi(s, d));
  ASSERT_EQ(got.size(), 4U);
  std::size_t k = 0;
  for (const PortRef& a : s) {
    for (const PortRef& b : d) EXPECT_EQ(got[k++], path(a, b));
  }
}

TEST_F(SaMultiPathTest, NumbPathBoundsTheAnswer) {
  mad::SaMad q = multi({ca_ports_[0], ca_ports_[1]}, {ca_ports_[2], ca_ports_[3]},
                       kSgidCount | kDgidCount | kNumbPath);
  set(q, "NumbPath", 3);
  EXPECT_EQ(multi_table(q).size(), 3U);
}

TEST_F(SaMultiPathTest, WhatIsMissingOrWrongGetsItsStatus) {
  EXPECT_EQ(status_of(ask(multi({ca_ports_[0]}, {ca_ports_[1]}, kSgidCount))),
            mad::status::kInsufficientComponents);
  mad::SaMad bad = multi({ca_ports_[0]}, {ca_ports_[1]});
  discovery::mad::store_be64(&bad.data[24 + 16 + 8], 0xDEAD);  // names no port
  EXPECT_EQ(status_of(ask(bad)), mad::status::kInvalidGid);
  mad::SaMad too_many = multi({ca_ports_[0]}, {ca_ports_[1]});
  set(too_many, "DGIDCount", 11);
  EXPECT_EQ(status_of(ask(too_many)), mad::status::kReqInvalid);
  mad::SaMad get = multi({ca_ports_[0]}, {ca_ports_[1]});
  get.method = static_cast<std::uint8_t>(Method::kGet);
  EXPECT_EQ(status_of(ask(get)), mad::status::kMethodAttrUnsupported);
}

}  // namespace
}  // namespace subnetd::daemon::sa

// The SA agent under mutated input (seeded, deterministic): valid requests
// for every record, method and component the agent knows, then bit flips,
// random bytes, random attributes, methods, masks, and truncated or
// overlong buffers. Whatever comes in, the agent answers or drops it and
// counts it, never crashes (the ASan build runs this too), and every
// answer is a well-formed response to its request. Batches answer as
// requests one by one.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "daemon/sa/sa_agent.hpp"
#include "discovery/mad/sa.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/worker_pool.hpp"

namespace subnetd::daemon::sa {
namespace {

namespace mad = discovery::mad::sa;

state::FabricState routed(const char* spec) {
  state::FabricState st;
  auto topo = discovery::topo::generate(spec);
  EXPECT_TRUE(topo.ok());
  auto t = std::make_shared<routing::Topology>(std::move(topo).value());
  auto lids = routing::assign_lids(*t, {});
  EXPECT_TRUE(lids.ok());
  auto map = std::make_shared<routing::LidMap>(std::move(lids->map));
  auto engine = routing::make_engine("updn");
  routing::WorkerPool pool(1);
  auto routes = (*engine)->compute(*t, *map, {}, pool, {});
  EXPECT_TRUE(routes.ok());
  // Every port read, so PortInfoRecords are served too.
  auto read = std::make_shared<std::vector<std::array<std::uint8_t, 64>>>(t->num_ports_total());
  for (auto& raw : *read) {
    discovery::mad::PortInfo pi;
    pi.mtu_cap = 5;
    pi.vl_cap = 4;
    pi.port_state = 4;
    pi.encode(discovery::mad::SmpData(raw));
  }
  st.topology = t;
  st.lids = map;
  st.routes = std::make_shared<const routing::Routes>(std::move(routes).value());
  st.port_info = read;
  // Every switch's SwitchInfo read, so SwitchInfoRecords are served too.
  st.switch_info = std::make_shared<const std::vector<std::array<std::uint8_t, 64>>>(
      t->num_switches(), std::array<std::uint8_t, 64>{0xC0, 0x00});
  st.sm_node = NodeId{static_cast<std::uint32_t>(t->num_nodes() - 1)};
  st.sm_port = 1;
  st.sm_lid = Lid{1};
  return st;
}

// A valid request: a known attribute and method, a random mask, and a
// template whose LID and GID fields name real ports half the time.
std::vector<std::uint8_t> seed_request(std::mt19937_64& rng, const state::FabricState& st) {
  static constexpr std::uint16_t kAttrs[] = {0x01, 0x03, 0x11, 0x12, 0x13, 0x14, 0x15, 0x17, 0x18,
                                             0x20, 0x30, 0x31, 0x33, 0x35, 0x36, 0x38, 0x3A, 0xF3};
  static constexpr std::uint8_t kMethods[] = {0x01, 0x12, 0x02, 0x15, 0x14, 0x13, 0x06, 0x81, 0x86};
  mad::SaMad q;
  q.attr_id = kAttrs[rng() % std::size(kAttrs)];
  q.method = kMethods[rng() % std::size(kMethods)];
  q.tid = rng();
  q.comp_mask = rng() % 3 == 0 ? 0 : rng() & ((1ULL << (rng() % 40)) - 1);
  if (const mad::RecordLayout* l = mad::layout_of(q.attr_id)) {
    for (const mad::Component& c : l->components) {
      if (c.bits > 64 || rng() % 2 != 0) continue;
      const std::uint32_t lid =
          1 + static_cast<std::uint32_t>(rng() % (st.lids->max_lid.value + 2));
      mad::set_field(q.data, c, c.bits >= 16 ? lid : rng());
    }
  }
  const auto bytes = mad::encode_sa(q);
  return {bytes.begin(), bytes.end()};
}

void mutate(std::mt19937_64& rng, std::vector<std::uint8_t>& b) {
  switch (rng() % 6) {
    case 0:  // bit flips
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !b.empty(); ++i) {
        b[rng() % b.size()] ^= static_cast<std::uint8_t>(1U << (rng() % 8));
      }
      break;
    case 1:  // random bytes in the header
      for (int i = 0; i < 4; ++i) b[rng() % 56] = static_cast<std::uint8_t>(rng());
      break;
    case 2:  // truncated
      b.resize(rng() % b.size());
      break;
    case 3:  // overlong
      b.resize(b.size() + 1 + rng() % 300, static_cast<std::uint8_t>(rng()));
      break;
    case 4:  // all random
      for (auto& x : b) x = static_cast<std::uint8_t>(rng());
      break;
    default:  // left valid
      break;
  }
}

// Whether `answer` is a proper answer to `request`: empty (dropped), or
// responses with the request's TID and attribute, a whole RMPP sequence
// for a table.
std::string check_answer(std::span<const std::uint8_t> request,
                         const std::vector<MadBytes>& answer) {
  if (answer.empty()) return "";
  auto req = mad::decode_sa(request);
  if (!req.ok()) return "answered a request that does not decode";
  for (const MadBytes& m : answer) {
    auto r = mad::decode_sa(m);
    if (!r.ok()) return "an answer MAD does not decode: " + r.error().message;
    if (!r->is_response()) return "an answer is not a response";
    if (r->tid != req->tid || r->attr_id != req->attr_id) return "TID or attribute changed";
    // A Set is answered with GetResp (IBA 15.2.2), the rest with their own.
    const int want = req->method == static_cast<std::uint8_t>(mad::Method::kSet)
                         ? static_cast<int>(mad::Method::kGetResp)
                         : req->method | 0x80;
    if (r->method != want) return "wrong response method";
  }
  if (answer.size() > 1 || mad::decode_sa(answer.front())->rmpp.version != 0) {
    auto joined = mad::reassemble(answer);
    if (!joined.ok()) return "a table does not reassemble: " + joined.error().message;
  }
  return "";
}

TEST(SaFuzz, MutatedRequestsAreAnsweredOrCountedNeverMisanswered) {
  const state::FabricState st = routed("fat-tree:levels=2,radix=4");
  std::mt19937_64 rng(20261202);
  SaAgent one, many;
  constexpr int kRounds = 2000, kBatch = 25;
  std::size_t inputs = 0, answered = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::vector<std::uint8_t>> bytes;
    std::vector<SaAgent::SaRequest> reqs;
    for (int i = 0; i < kBatch; ++i) {
      bytes.push_back(seed_request(rng, st));
      mutate(rng, bytes.back());
    }
    for (const auto& b : bytes) reqs.push_back({b, Lid{static_cast<std::uint32_t>(1 + rng() % 8)}});
    const auto batch = many.answer_many(reqs, st);
    ASSERT_EQ(batch.size(), reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const auto single = one.answer(reqs[i].bytes, reqs[i].requester, st);
      ASSERT_EQ(single, batch[i]) << "round " << round << " request " << i;
      const std::string why = check_answer(reqs[i].bytes, single);
      ASSERT_EQ(why, "") << "round " << round << " request " << i;
      answered += single.empty() ? 0 : 1;
    }
    inputs += reqs.size();
  }
  const SaStats s = many.stats();
  // ReportResps (a subscriber's acknowledgement) are counted apart.
  EXPECT_EQ(s.requests + s.malformed + s.ignored + s.report_acks, inputs);
  EXPECT_EQ(s.requests, answered);  // every request counted is answered
  // The mix reaches every outcome: answers, errors, drops of both kinds.
  EXPECT_GT(s.records, 0u);
  EXPECT_GT(s.errors, 0u);
  EXPECT_GT(s.malformed, 0u);
  EXPECT_GT(s.ignored, 0u);
  std::printf(
      "[ sa fuzz  ] %zu inputs: %llu answered (%llu with an error status), %llu records, "
      "%llu malformed, %llu ignored\n",
      inputs, static_cast<unsigned long long>(s.requests),
      static_cast<unsigned long long>(s.errors), static_cast<unsigned long long>(s.records),
      static_cast<unsigned long long>(s.malformed), static_cast<unsigned long long>(s.ignored));
}

}  // namespace
}  // namespace subnetd::daemon::sa

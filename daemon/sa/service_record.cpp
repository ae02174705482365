// ServiceRecord registration, deletion and queries; see service_record.hpp.

#include "daemon/sa/service_record.hpp"

#include <algorithm>
#include <cstring>

#include "discovery/mad/bytes.hpp"
#include "routing/partitions.hpp"
#include "state/path_record.hpp"

namespace subnetd::daemon::sa {

namespace mad = discovery::mad::sa;
using mad::Method;

namespace {

// Component bits, in the order of sa.cpp's kServiceRecord.
constexpr unsigned kId = 0, kGid = 1, kPKey = 2, kLease = 4;
constexpr std::size_t kLeaseAt = 28;  // byte offset of ServiceLease
constexpr std::uint32_t kForever = 0xFFFFFFFF;

ServiceRegistry::Key key_of(std::span<const std::uint8_t> r) {
  ServiceRegistry::Key k;
  k.id = discovery::mad::load_be64(r.data());
  std::memcpy(k.gid.data(), r.data() + 8, 16);
  k.pkey = discovery::mad::load_be16(r.data() + 24);
  return k;
}

class ServiceRequest {
 public:
  ServiceRequest(const mad::SaMad& req, Lid requester, const state::FabricState& st,
                 const SaAgentOptions& opts, const state::PathIndex& index,
                 ServiceRegistry& registry, ServiceRegistry::time_point now)
      : req_(req),
        requester_(requester),
        st_(st),
        opts_(opts),
        index_(index),
        registry_(registry),
        now_(now),
        layout_(*mad::layout_of(static_cast<std::uint16_t>(mad::Attr::kServiceRecord))),
        query_(req.data.data(), layout_.size) {}

  AttrAnswer run() {
    switch (static_cast<Method>(req_.method)) {
      case Method::kGet:
      case Method::kGetTable:
        query();  // a Get's one-record rule is the agent's
        break;
      case Method::kSet:
        if (auto key = owned_key()) put(*key);
        break;
      case Method::kDelete:
        if (auto key = owned_key()) erase(*key);
        break;
      default:
        out_.status = mad::status::kMethodAttrUnsupported;
        break;
    }
    return std::move(out_);
  }

 private:
  bool has(unsigned bit) const { return ((req_.comp_mask >> bit) & 1U) != 0; }
  void fail(std::uint16_t status) { out_.status = status; }
  void emit(std::span<const std::uint8_t> record) {
    const std::size_t at = out_.records.size();
    out_.records.resize(at + std::size_t{layout_.attr_offset()} * 8, 0);
    std::memcpy(&out_.records[at], record.data(), kServiceRecordSize);
    ++out_.count;
  }

  // The requester's endport (nullopt when its LID names none).
  std::optional<PortRef> requester_port() const { return state::endport_of_lid(st_, requester_); }
  // Whether the requester may see or use partition `pkey`.
  bool requester_holds(std::uint16_t pkey) const {
    if (st_.partitions == nullptr) return (pkey & 0x7FFF) == 0x7FFF;
    const auto port = requester_port();
    if (!port) return false;
    const routing::Topology& t = *st_.topology;
    return routing::find_pkey(st_.partitions->table(t, port->node, port->port), pkey) != 0;
  }

  // The record a Set or Delete names, when the request may touch it.
  std::optional<ServiceRegistry::Key> owned_key() {
    if (!has(kId) || !has(kGid) || !has(kPKey)) {
      fail(mad::status::kInsufficientComponents);
      return std::nullopt;
    }
    const ServiceRegistry::Key key = key_of(query_);
    const std::uint64_t prefix = discovery::mad::load_be64(key.gid.data());
    const std::uint64_t guid = discovery::mad::load_be64(key.gid.data() + 8);
    std::optional<PortRef> port;
    if (prefix == opts_.subnet_prefix) port = index_.endport_of_guid(st_, Guid{guid});
    if (!port) {
      fail(mad::status::kInvalidGid);
      return std::nullopt;
    }
    const auto asking = requester_port();
    const bool own = asking && asking->node == port->node && asking->port == port->port;
    if ((!own && requester_ != st_.sm_lid) || !requester_holds(key.pkey)) {
      fail(mad::status::kReqInvalid);
      return std::nullopt;
    }
    return key;
  }

  void put(const ServiceRegistry::Key& key) {
    ServiceRegistry::Record record{};
    std::memcpy(record.data(), query_.data(), kServiceRecordSize);
    const std::uint32_t lease =
        has(kLease) ? discovery::mad::load_be32(record.data() + kLeaseAt) : kForever;
    discovery::mad::store_be32(record.data() + kLeaseAt, lease);
    std::optional<ServiceRegistry::time_point> expires;
    if (lease != kForever) expires = now_ + std::chrono::seconds(lease);
    if (!registry_.put(key, record, expires, now_)) {
      fail(mad::status::kNoResources);
      return;
    }
    emit(record);
  }

  void erase(const ServiceRegistry::Key& key) {
    const auto gone = registry_.erase(key);
    if (!gone) {
      fail(mad::status::kNoRecords);
      return;
    }
    emit(*gone);
  }

  void query() {
    for (const ServiceRegistry::Record& r : registry_.snapshot(now_)) {
      if (!requester_holds(key_of(r).pkey)) continue;
      // The lease answered is what is left, not what the query says.
      if (!mad::matches(layout_, req_.comp_mask & ~(std::uint64_t{1} << kLease), query_, r)) {
        continue;
      }
      emit(r);
    }
  }

  const mad::SaMad& req_;
  Lid requester_;
  const state::FabricState& st_;
  const SaAgentOptions& opts_;
  const state::PathIndex& index_;
  ServiceRegistry& registry_;
  ServiceRegistry::time_point now_;
  const mad::RecordLayout& layout_;
  std::span<const std::uint8_t> query_;
  AttrAnswer out_;
};

}  // namespace

bool ServiceRegistry::put(const Key& key, const Record& record, std::optional<time_point> expires,
                          time_point now) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxServices) purge(now);
    if (entries_.size() >= kMaxServices) return false;
    entries_.emplace(key, Entry{record, expires});
    return true;
  }
  it->second = Entry{record, expires};
  return true;
}

std::optional<ServiceRegistry::Record> ServiceRegistry::erase(const Key& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  Record r = it->second.record;
  entries_.erase(it);
  return r;
}

void ServiceRegistry::purge(time_point now) {
  std::erase_if(entries_, [now](const auto& kv) {
    return kv.second.expires.has_value() && *kv.second.expires <= now;
  });
}

std::vector<ServiceRegistry::Record> ServiceRegistry::snapshot(time_point now) {
  std::lock_guard lock(mu_);
  purge(now);
  std::vector<Record> out;
  out.reserve(entries_.size());
  for (const auto& [key, e] : entries_) {
    Record r = e.record;
    if (e.expires) {
      // Whole seconds left, rounded up: a lease is never reported as
      // over while it runs.
      const auto left = std::chrono::ceil<std::chrono::seconds>(*e.expires - now).count();
      discovery::mad::store_be32(r.data() + kLeaseAt, static_cast<std::uint32_t>(left));
    }
    out.push_back(r);
  }
  return out;
}

std::size_t ServiceRegistry::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

AttrAnswer answer_service(const mad::SaMad& req, Lid requester, const state::FabricState& st,
                          const SaAgentOptions& opts, const state::PathIndex& index,
                          ServiceRegistry& registry, ServiceRegistry::time_point now) {
  return ServiceRequest(req, requester, st, opts, index, registry, now).run();
}

}  // namespace subnetd::daemon::sa

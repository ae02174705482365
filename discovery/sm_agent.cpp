#include "discovery/sm_agent.hpp"

#include <algorithm>

namespace subnetd::discovery {

namespace {
std::uint8_t clamp_priority(unsigned p) {
  return static_cast<std::uint8_t>(std::min<unsigned>(p, 15));
}
}  // namespace

SmAgent::SmAgent(SmAgentOptions opts)
    : port_guid_(opts.port_guid),
      priority_(clamp_priority(opts.priority)),
      state_(opts.state),
      sm_key_(opts.sm_key) {}

void SmAgent::set_priority(std::uint8_t p) {
  priority_.store(clamp_priority(p), std::memory_order_relaxed);
}

mad::SmInfo SmAgent::sm_info(std::uint32_t act_count, bool with_key) const {
  mad::SmInfo info;
  info.guid = port_guid_.value;
  info.sm_key = with_key ? sm_key() : 0;
  info.act_count = act_count;
  info.priority = priority();
  info.sm_state = static_cast<std::uint8_t>(state());
  return info;
}

Mad SmAgent::reply(const mad::Smp& request, const Mad& raw, std::uint16_t status,
                   const mad::SmInfo* info) {
  mad::Smp r = request;
  r.method = mad::Method::kGetResp;
  r.status = status;
  r.data = {};
  if (info != nullptr) info->encode(mad::data_of(r));
  if (request.directed()) r.direction = true;
  Mad out;
  mad::encode_smp(r, std::span<std::uint8_t, kMadSize>(out.data));
  if (request.directed()) {
    out.dlid = mad::kPermissiveLid;
    out.slid = mad::kPermissiveLid;
  } else {
    out.dlid = raw.slid;  // back to the requester
    out.slid = raw.dlid;
  }
  return out;
}

std::optional<Mad> SmAgent::answer(const mad::Smp& request, const Mad& raw,
                                   std::uint32_t act_count) {
  if (request.is_response()) return std::nullopt;
  if (request.method != mad::Method::kGet && request.method != mad::Method::kSet) {
    return std::nullopt;  // Trap / TrapRepress: the SM core's
  }
  if (request.attr_id != mad::AttrId::kSmInfo) {
    unsupported_.fetch_add(1, std::memory_order_relaxed);
    return reply(request, raw, mad::status::kMethodAttrUnsupported, nullptr);
  }
  if (request.method == mad::Method::kSet) {
    sminfo_set_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;  // the election's (see the top)
  }
  sminfo_get_.fetch_add(1, std::memory_order_relaxed);
  const mad::SmInfo info = sm_info(act_count, true);
  return reply(request, raw, mad::status::kOk, &info);
}

SmAgentStats SmAgent::stats() const {
  SmAgentStats s;
  s.sminfo_get = sminfo_get_.load(std::memory_order_relaxed);
  s.sminfo_set = sminfo_set_.load(std::memory_order_relaxed);
  s.unsupported = unsupported_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace subnetd::discovery

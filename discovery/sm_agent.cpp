#include "discovery/sm_agent.hpp"

#include <algorithm>

namespace subnetd::discovery {

SmAgent::SmAgent(SmAgentOptions opts)
    : port_guid_(opts.port_guid),
      priority_(static_cast<std::uint8_t>(std::min<unsigned>(opts.priority, 15))),
      state_(opts.state) {}

mad::SmInfo SmAgent::sm_info(std::uint32_t act_count) const {
  mad::SmInfo info;
  info.guid = port_guid_.value;
  info.sm_key = 0;
  info.act_count = act_count;
  info.priority = priority_;
  info.sm_state = static_cast<std::uint8_t>(state());
  return info;
}

std::optional<Mad> SmAgent::answer(const mad::Smp& request, const Mad& raw,
                                   std::uint32_t act_count) {
  if (request.is_response()) return std::nullopt;
  if (request.method != mad::Method::kGet && request.method != mad::Method::kSet) {
    return std::nullopt;  // Trap / TrapRepress: the SM core's
  }
  // As OpenSM's osm_resp_send: the request with method GetResp, our status and
  // data, the D bit set for directed route (hop pointer and paths kept, so the
  // reply retraces the request's path).
  mad::Smp reply = request;
  reply.method = mad::Method::kGetResp;
  reply.status = mad::status::kOk;
  reply.data = {};
  if (request.attr_id == mad::AttrId::kSmInfo) {
    sm_info(act_count).encode(mad::data_of(reply));
    if (request.method == mad::Method::kSet) {
      reply.status = mad::status::kMethodAttrUnsupported;
      sminfo_set_.fetch_add(1, std::memory_order_relaxed);
    } else {
      sminfo_get_.fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    reply.status = mad::status::kMethodAttrUnsupported;
    unsupported_.fetch_add(1, std::memory_order_relaxed);
  }
  if (request.directed()) reply.direction = true;

  Mad out;
  mad::encode_smp(reply, std::span<std::uint8_t, kMadSize>(out.data));
  if (request.directed()) {
    out.dlid = mad::kPermissiveLid;
    out.slid = mad::kPermissiveLid;
  } else {
    out.dlid = raw.slid;  // back to the requester
    out.slid = raw.dlid;
  }
  return out;
}

SmAgentStats SmAgent::stats() const {
  SmAgentStats s;
  s.sminfo_get = sminfo_get_.load(std::memory_order_relaxed);
  s.sminfo_set = sminfo_set_.load(std::memory_order_relaxed);
  s.unsupported = unsupported_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace subnetd::discovery

#include "api/call_limits.hpp"

#include <fmt/format.h>

namespace subnetd::api {
namespace {

grpc::Status exhausted(std::string msg) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, std::move(msg));
}

}  // namespace

grpc::Status CallLimits::admit(CallKind kind, bool trusted, const std::string& client,
                               std::string_view method, Ticket& out) {
  std::lock_guard lock(mu_);
  if (kind == CallKind::kWatch) {
    std::size_t& mine = watch_by_client_[client];
    if (mine >= opts_.max_watch_per_client) {
      return exhausted(
          fmt::format("{} already has {} WatchEvents streams open, the most one client may have "
                      "(limit max_watch_per_client = {}); close one, or retry after one has ended",
                      client, mine, opts_.max_watch_per_client));
    }
    if (!trusted && watching_anonymous_ >= opts_.max_watch_anonymous) {
      if (mine == 0) watch_by_client_.erase(client);
      return exhausted(fmt::format(
          "{} WatchEvents streams of anonymous TCP clients are open, the most allowed "
          "(limit max_watch_anonymous = {}); retry later with backoff, or use the unix socket or "
          "a bearer token, which have their own capacity",
          watching_anonymous_, opts_.max_watch_anonymous));
    }
    ++mine;
    if (!trusted) ++watching_anonymous_;
  } else {
    std::size_t& waiting = waiting_[trusted ? 1 : 0];
    const std::size_t cap = trusted ? opts_.max_waiting_trusted : opts_.max_waiting_anonymous;
    if (kind == CallKind::kVerify) {
      const auto it = verify_by_client_.find(client);
      const std::size_t mine = it == verify_by_client_.end() ? 0 : it->second;
      if (mine >= opts_.max_verify_per_client) {
        return exhausted(
            fmt::format("{} already has {} {} calls waiting, the most one client may have "
                        "(limit max_verify_per_client = {}); retry once one of them has answered "
                        "(concurrent calls for unchanged tables share one verification anyway)",
                        client, mine, method, opts_.max_verify_per_client));
      }
    }
    if (waiting >= cap) {
      return exhausted(
          trusted ? fmt::format("{} calls of trusted callers are waiting on the subnet manager, "
                                "the most allowed (limit max_waiting_trusted = {}); retry {} "
                                "once earlier calls have answered",
                                waiting, cap, method)
                  : fmt::format("{} calls of anonymous TCP clients are waiting on the subnet "
                                "manager, the most allowed (limit max_waiting_anonymous = {}); "
                                "retry {} later with backoff, or use the unix socket or a "
                                "bearer token, which have their own capacity",
                                waiting, cap, method));
    }
    ++waiting;
    if (kind == CallKind::kVerify) ++verify_by_client_[client];
  }
  out.held = true;
  out.kind = kind;
  out.trusted = trusted;
  out.client = client;
  return grpc::Status::OK;
}

void CallLimits::release(Ticket& t) {
  if (!t.held) return;
  t.held = false;
  std::lock_guard lock(mu_);
  const auto drop = [](std::unordered_map<std::string, std::size_t>& by_client,
                       const std::string& client) {
    auto it = by_client.find(client);
    if (it == by_client.end()) return;
    if (--it->second == 0) by_client.erase(it);
  };
  if (t.kind == CallKind::kWatch) {
    drop(watch_by_client_, t.client);
    if (!t.trusted) --watching_anonymous_;
    return;
  }
  --waiting_[t.trusted ? 1 : 0];
  if (t.kind == CallKind::kVerify) drop(verify_by_client_, t.client);
}

}  // namespace subnetd::api

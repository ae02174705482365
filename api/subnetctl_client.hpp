#pragma once
// What subnetctl's commands share: the options, the gRPC client and its
// failure handling, JSON output. Internal to api/subnetctl_*.cpp.

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/auth.hpp"
#include "api/cli.hpp"
#include "subnet/v1/subnet.grpc.pb.h"

namespace subnetd::api::ctl {

namespace v1 = ::subnet::v1;
namespace cli = subnetd::api::cli;
using google::protobuf::util::TimeUtil;

struct Options {
  std::string socket;
  std::string addr;
  std::string token_file;
  std::string tls_ca;
  bool json = false;
  double timeout_s = 30;
};

// A failure that ends the command with an exit code and a message.
struct Failure {
  int code;
  std::string message;
};

class Client {
 public:
  explicit Client(const Options& o) : opts_(o) {}

  // Connects lazily: building the channel does not touch the network.
  std::optional<Failure> init() {
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
    if (!opts_.addr.empty()) {
      target_ = opts_.addr;
      if (!opts_.tls_ca.empty()) {
        std::ifstream in(opts_.tls_ca, std::ios::binary);
        if (!in)
          return Failure{cli::kExitUsage, fmt::format("--tls-ca {}: cannot open", opts_.tls_ca)};
        std::ostringstream pem;
        pem << in.rdbuf();
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = pem.str();
        creds = grpc::SslCredentials(ssl);
      }
    } else {
      target_ = "unix:" + opts_.socket;
    }
    if (!opts_.token_file.empty()) {
      std::ifstream in(opts_.token_file, std::ios::binary);
      if (!in) {
        return Failure{cli::kExitUsage,
                       fmt::format("--token-file {}: cannot open", opts_.token_file)};
      }
      std::ostringstream buf;
      buf << in.rdbuf();
      auto token = subnetd::api::parse_token(buf.str(), "--token-file " + opts_.token_file);
      if (!token.ok()) return Failure{cli::kExitUsage, token.error().message};
      token_ = std::move(token).value();
    }
    channel_ = grpc::CreateChannel(target_, creds);
    sm_ = v1::SubnetManager::NewStub(channel_);
    sim_ = v1::Simulator::NewStub(channel_);
    return std::nullopt;
  }

  // A context with the deadline; mutating calls also carry the token.
  std::unique_ptr<grpc::ClientContext> ctx(bool mutating = false, bool deadline = true) const {
    auto c = std::make_unique<grpc::ClientContext>();
    if (deadline) {
      c->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<long>(opts_.timeout_s * 1000)));
    }
    if (mutating && !token_.empty()) c->AddMetadata("authorization", "Bearer " + token_);
    return c;
  }

  Failure fail(const grpc::Status& s) const {
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      return {cli::kExitUnavailable,
              fmt::format("cannot reach subnetd at {}: {}", target_, s.error_message())};
    }
    return {cli::exit_code_for(s), s.error_message()};
  }

  v1::SubnetManager::Stub& sm() { return *sm_; }
  v1::Simulator::Stub& sim() { return *sim_; }
  const Options& opts() const { return opts_; }

 private:
  const Options& opts_;
  std::string target_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::SubnetManager::Stub> sm_;
  std::unique_ptr<v1::Simulator::Stub> sim_;
};

using Outcome = std::optional<Failure>;

inline std::string to_json(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  std::string out;
  auto st = google::protobuf::util::MessageToJsonString(m, &out, o);
  if (!st.ok())
    return fmt::format("{{\"error\": \"JSON conversion failed: {}\"}}\n", st.ToString());
  return out;
}

inline std::string to_json_line(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out, o).ok()) return "{}";
  return out;
}

inline void print_json(const google::protobuf::Message& m) {
  std::fputs(to_json(m).c_str(), stdout);
}

inline std::string local_time(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ts.seconds());
  return fmt::format("{:%Y-%m-%d %H:%M:%S}.{:03d}", fmt::localtime(t), ts.nanos() / 1'000'000);
}

inline Outcome node_ref(std::string_view word, v1::NodeRef* out) {
  auto r = cli::parse_node_ref(word);
  if (!r.ok()) return Failure{cli::kExitUsage, r.error().message};
  *out = std::move(r).value();
  return std::nullopt;
}

// The SA's view (subnetctl_sa.cpp): path, partitions, mcast.
Outcome cmd_path(Client& c, const std::string& src, const std::string& dst);
Outcome cmd_partitions(Client& c, const std::string& word);
Outcome cmd_mcast(Client& c, bool members);

// Operations (subnetctl_ops.cpp): check cabling, counters, top, errors,
// sim errors.
Outcome cmd_check_cabling(Client& c, const std::string& plan_file);
Outcome cmd_counters(Client& c, const std::string& node, unsigned port);
Outcome cmd_top(Client& c, unsigned limit);
Outcome cmd_errors(Client& c, unsigned limit, bool since_start);
Outcome cmd_unhealthy(Client& c);
struct SimErrorCounts {
  unsigned symbol = 0, link_downed = 0, rcv = 0, xmit_discards = 0;
  std::uint64_t xmit_wait = 0;
};
Outcome cmd_sim_errors(Client& c, const std::string& node, unsigned port, const SimErrorCounts& n);

}  // namespace subnetd::api::ctl

// check_config_files (declared in daemon/config.hpp): the files and the group
// a config refers to, checked as the next start would use them, so that a
// reload can refuse a config that would not start (a token file that is not
// there yet, a net file with a typo) instead of the next restart failing.

#include <fmt/format.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.hpp"
#include "daemon/screening/cabling.hpp"
#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"
#include "routing/text.hpp"

namespace subnetd::daemon {
namespace {

// Credentials and certificates are small; a bigger file is the wrong file.
constexpr std::size_t kMaxCredentialBytes = 1 << 20;

class Checker {
 public:
  void problem(std::string_view key, const std::string& path, std::string_view what) {
    problems_.push_back(fmt::format("{} {}: {}", key, printable(path), what));
  }
  void problem(std::string_view key, std::string_view what) {
    problems_.push_back(fmt::format("{}: {}", key, what));
  }

  // stat(2) of `path`, or nothing after recording why it failed.
  std::optional<struct stat> stat_of(std::string_view key, const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      problem(key, path, std::strerror(errno));
      return std::nullopt;
    }
    return st;
  }

  // The content of a regular, readable, non-empty file of at most
  // kMaxCredentialBytes, or nothing after recording what is wrong.
  std::optional<std::string> small_file(std::string_view key, const std::string& path,
                                        const struct stat& st) {
    if (!S_ISREG(st.st_mode)) {
      problem(key, path, S_ISDIR(st.st_mode) ? "is a directory, not a file" : "not a regular file");
      return std::nullopt;
    }
    if (static_cast<std::uint64_t>(st.st_size) > kMaxCredentialBytes) {
      problem(key, path,
              fmt::format("{} bytes; more than the {} such a file can sensibly hold (the wrong "
                          "file?)",
                          st.st_size, kMaxCredentialBytes));
      return std::nullopt;
    }
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) {
      problem(key, path, fmt::format("cannot open: {}", std::strerror(errno)));
      return std::nullopt;
    }
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    const std::size_t got = std::fread(text.data(), 1, text.size(), f.get());
    if (std::ferror(f.get())) {
      problem(key, path, fmt::format("cannot read: {}", std::strerror(errno)));
      return std::nullopt;
    }
    text.resize(got);
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      problem(key, path, "empty file");
      return std::nullopt;
    }
    return text;
  }

  void token_file(const std::string& path) {
    constexpr std::string_view key = "api.token_file";
    auto st = stat_of(key, path);
    if (!st) return;
    if (S_ISREG(st->st_mode) && (st->st_mode & 077) != 0) {
      problem(key, path,
              fmt::format("mode {:04o} lets other users read the token; the API refuses to start "
                          "with it (chmod 600 {})",
                          st->st_mode & 07777, printable(path)));
      return;
    }
    if (S_ISREG(st->st_mode) && st->st_uid != 0 && st->st_uid != ::geteuid()) {
      problem(key, path,
              fmt::format("owned by uid {}, not by root or the daemon's user (uid {})", st->st_uid,
                          ::geteuid()));
      return;
    }
    small_file(key, path, *st);
  }

  void pem_file(std::string_view key, const std::string& path) {
    auto st = stat_of(key, path);
    if (!st) return;
    auto text = small_file(key, path, *st);
    if (text && text->find("-----BEGIN ") == std::string::npos) {
      problem(key, path, "not PEM (no \"-----BEGIN \" line)");
    }
  }

  void socket(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;  // created at start
    if (!S_ISSOCK(st.st_mode)) {
      problem("api.socket", path, "exists and is not a socket; the API would refuse to replace it");
    }
  }

  void group(const std::string& name) {
    gid_t numeric = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), numeric);
    if (ec == std::errc() && end == name.data() + name.size()) return;
    struct group gr {};
    struct group* found = nullptr;
    std::vector<char> buf(16384);
    const int rc = ::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found);
    if (rc != 0) {
      problem("api.socket_group",
              fmt::format("looking up \"{}\": {}", printable(name), std::strerror(rc)));
    } else if (found == nullptr) {
      problem("api.socket_group", fmt::format("no group named \"{}\"", printable(name)));
    }
  }

  void net_file(const std::string& path) {
    // The reader's errors name the file and line (and read includes too).
    auto topo = discovery::topo::read_netfile(path);
    if (!topo.ok()) problem("fabric.topology", topo.error().message);
  }

  void cabling_plan(const std::string& path) {
    auto plan = screening::read_cabling_plan(path);
    if (!plan.ok()) problem("screening.cabling_plan", plan.error().message);
  }

  void store_path(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;  // created at start
    if (!S_ISREG(st.st_mode)) problem("store.path", path, "exists and is not a regular file");
  }

  void dump_dir(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;  // created when dumping
    if (!S_ISDIR(st.st_mode)) problem("dump_dir", path, "exists and is not a directory");
  }

  Result<void> finish() {
    if (problems_.empty()) return ok_result();
    std::string all;
    for (const std::string& p : problems_) all += (all.empty() ? "" : "\n") + p;
    return Error{Errc::kIo, std::move(all)};
  }

 private:
  std::vector<std::string> problems_;
};

}  // namespace

Result<void> check_config_files(const Config& cfg) {
  Checker check;
  if (cfg.fabric.transport == TransportKind::kSim && !cfg.fabric.topology.empty() &&
      !discovery::topo::looks_like_spec(cfg.fabric.topology)) {
    check.net_file(cfg.fabric.topology);
  }
  if (!cfg.api.socket.empty()) check.socket(cfg.api.socket);
  if (!cfg.api.socket_group.empty()) check.group(cfg.api.socket_group);
  if (!cfg.api.tls_cert.empty()) check.pem_file("api.tls_cert", cfg.api.tls_cert);
  if (!cfg.api.tls_key.empty()) check.pem_file("api.tls_key", cfg.api.tls_key);
  if (!cfg.api.token_file.empty()) check.token_file(cfg.api.token_file);
  if (!cfg.screening.cabling_plan.empty()) check.cabling_plan(cfg.screening.cabling_plan);
  if (!cfg.store.path.empty()) check.store_path(cfg.store.path);
  if (!cfg.dump_dir.empty()) check.dump_dir(cfg.dump_dir);
  return check.finish();
}

}  // namespace subnetd::daemon

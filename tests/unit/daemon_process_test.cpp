// Runs the real subnetd binary as a service would: NOTIFY_SOCKET readiness,
// SIGHUP with a bad config, with keys that need a restart and with a missing
// token file, SIGTERM within 2 s, and kill -9 + restart keeping every LID;
// and --once on a bad store, with --reset-store and on a loopback cable. The
// unit file is checked with systemd-analyze verify.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kBinary = std::string(SUBNETD_BINARY_DIR) + "/bin/subnetd";

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/subnetd-daemon-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A datagram socket subnetd's sd_notify() talks to.
class NotifySocket {
 public:
  explicit NotifySocket(const fs::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{0, 200'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~NotifySocket() { ::close(fd_); }
  // Waits for a datagram containing `needle`; returns it (empty on timeout).
  std::string wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::string msg(buf, static_cast<std::size_t>(n));
      received_.push_back(msg);
      if (msg.find(needle) != std::string::npos) return msg;
    }
    return {};
  }
  const std::vector<std::string>& received() const { return received_; }

 private:
  fs::path path_;
  int fd_ = -1;
  std::vector<std::string> received_;
};

pid_t spawn_daemon(const fs::path& config, const fs::path& notify, const fs::path& log) {
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("NOTIFY_SOCKET=", 0) != 0) env_s.emplace_back(*e);
  }
  env_s.push_back("NOTIFY_SOCKET=" + notify.string());
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string bin = kBinary, flag = "--config", cfg = config.string();
  std::vector<char*> argv{bin.data(), flag.data(), cfg.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// The child's exit status (128 + signal when killed), waiting on a pidfd
// for the exit itself; -1 (and the child killed) when it has not exited
// within `timeout`.
int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd pfd{pidfd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
    ::close(pidfd);
    if (ready <= 0) ::kill(pid, SIGKILL);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void write_config(const fs::path& dir, const std::string& topology) {
  std::ofstream(dir / "subnetd.yaml") << "fabric:\n  transport: sim\n  topology: \"" << topology
                                      << "\"\naddressing:\n  lmc: 1\nsweep:\n  interval: 1s\n"
                                      << "api:\n  socket: " << (dir / "api.sock").string()
                                      << "\nstore:\n  path: " << (dir / "state.db").string()
                                      << "\ndump_dir: " << (dir / "dump").string() << "\n";
}

// port GUID -> LID, from the opensm-subnet.lst dump of the running daemon.
std::map<std::string, std::string> lids_from_dump(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::string text = slurp(dir / "dump" / "opensm-subnet.lst");
  std::regex re(
      "PortGUID:([0-9A-F]+) VenID:[0-9A-F]+ DevID:[0-9A-F]+ Rev:[0-9A-F]+ \\{[^}]*\\} "
      "LID:([0-9A-F]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    out[(*it)[1]] = (*it)[2];
  }
  return out;
}

TEST(DaemonProcess, NotifyReloadAndStop) {
  ASSERT_TRUE(fs::exists(kBinary)) << kBinary;
  TempDir dir;
  write_config(dir.path(), "fat-tree:levels=2,radix=8");
  NotifySocket notify(dir.path() / "notify.sock");
  const fs::path log = dir.path() / "log";
  pid_t pid = spawn_daemon(dir.path() / "subnetd.yaml", dir.path() / "notify.sock", log);
  std::string ready = notify.wait_for("READY=1", 20s);
  ASSERT_FALSE(ready.empty()) << slurp(log);
  EXPECT_NE(ready.find("STATUS=MASTER: 32 CAs, 12 switches, routed in"), std::string::npos)
      << ready;

  // A bad config on SIGHUP: logged with file:line, the running config kept.
  std::ofstream(dir.path() / "subnetd.yaml", std::ios::app) << "routing:\n  engine: fastest\n";
  ::kill(pid, SIGHUP);
  EXPECT_FALSE(notify.wait_for("RELOADING=1", 5s).empty());
  // READY=1 comes after the refusal is logged.
  EXPECT_FALSE(notify.wait_for("READY=1", 5s).empty());
  const std::string text = slurp(log);
  EXPECT_NE(text.find("keeping the running configuration"), std::string::npos) << text;
  EXPECT_NE(text.find("subnetd.yaml:"), std::string::npos) << text;
  EXPECT_NE(text.find("routing.engine"), std::string::npos) << text;
  EXPECT_EQ(::kill(pid, 0), 0) << "daemon died on a bad reload";

  // The unix socket is announced once (by the API server), not twice.
  std::size_t announced = 0;
  for (auto at = text.find("gRPC API on unix:"); at != std::string::npos;
       at = text.find("gRPC API on unix:", at + 1)) {
    ++announced;
  }
  EXPECT_EQ(announced, 1u) << text;

  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid, 2s), 0) << slurp(log);  // -1 if it had not exited by then
  bool stopping = false;
  for (const auto& m : notify.received()) stopping |= m.find("STOPPING=1") != std::string::npos;
  EXPECT_TRUE(stopping || !notify.wait_for("STOPPING=1", 1s).empty());
}

TEST(DaemonProcess, KillNineAndRestartKeepsEveryLid) {
  TempDir dir;
  write_config(dir.path(), "fat-tree:levels=3,k=8");
  // Seed the store with LIDs a fresh assignment would never pick (all moved
  // up by 0x1000), so only the store can bring them back after a restart.
  const std::string once = kBinary + " --once --config " + (dir.path() / "subnetd.yaml").string() +
                           " > " + (dir.path() / "once.log").string() + " 2>&1";
  ASSERT_EQ(std::system(once.c_str()), 0) << slurp(dir.path() / "once.log");
  const std::string seed = "sqlite3 " + (dir.path() / "state.db").string() +
                           " 'UPDATE lids SET base_lid = base_lid + 4096'";
  ASSERT_EQ(std::system(seed.c_str()), 0);
  std::map<std::string, std::string> first;
  // Killed at READY every time: the LIDs must be on disk before READY (they
  // are saved before anything is programmed), so none may ever change.
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    NotifySocket notify(dir.path() / ("notify" + std::to_string(round) + ".sock"));
    pid_t pid =
        spawn_daemon(dir.path() / "subnetd.yaml",
                     dir.path() / ("notify" + std::to_string(round) + ".sock"), dir.path() / "log");
    ASSERT_FALSE(notify.wait_for("READY=1", 20s).empty()) << slurp(dir.path() / "log");
    auto lids = lids_from_dump(dir.path());
    ASSERT_GT(lids.size(), 100u);
    if (round == 0) {
      first = lids;
      for (const auto& [guid, lid] : lids) EXPECT_GE(std::stoul(lid, nullptr, 16), 4096u) << guid;
    } else {
      EXPECT_EQ(lids, first) << "LIDs changed after kill -9 in round " << round;
    }
    ::kill(pid, SIGKILL);
    EXPECT_EQ(wait_exit(pid, 2s), 128 + SIGKILL);
    fs::remove(dir.path() / "dump" / "opensm-subnet.lst");
  }
}

std::string run_capture(const std::string& cmd, const fs::path& out, int* exit_code) {
  const int rc = std::system((cmd + " > " + out.string() + " 2>&1").c_str());
  *exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return slurp(out);
}

// SIGHUP with keys a reload cannot apply: each is named in the log and in a
// config_reload event. A reload whose token file is missing is refused: the
// running configuration is kept, the log and an error event say which file.
TEST(DaemonProcess, ReloadNamesRestartKeysAndRefusesMissingFiles) {
  TempDir dir;
  write_config(dir.path(), "fat-tree:levels=2,radix=4");
  const std::string base = slurp(dir.path() / "subnetd.yaml");
  NotifySocket notify(dir.path() / "notify.sock");
  const fs::path log = dir.path() / "log";
  pid_t pid = spawn_daemon(dir.path() / "subnetd.yaml", dir.path() / "notify.sock", log);
  ASSERT_FALSE(notify.wait_for("READY=1", 20s).empty()) << slurp(log);

  const fs::path token = dir.path() / "token";
  std::ofstream(token) << "0123456789abcdef0123456789abcdef\n";
  fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
  std::string with_api = base;
  const std::string api_line = "api:\n";
  with_api.insert(with_api.find(api_line) + api_line.size(),
                  "  socket_group: \"0\"\n  token_file: " + token.string() + "\n");
  std::ofstream(dir.path() / "subnetd.yaml", std::ios::trunc) << with_api;
  ::kill(pid, SIGHUP);
  ASSERT_FALSE(notify.wait_for("RELOADING=1", 5s).empty());
  ASSERT_FALSE(notify.wait_for("READY=1", 5s).empty());
  std::string text = slurp(log);
  EXPECT_NE(text.find("changes to these keys need a restart and were not applied"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("api.socket_group, api.token_file (the API server's"), std::string::npos)
      << text;

  std::string missing = base;
  missing.insert(missing.find(api_line) + api_line.size(),
                 "  token_file: " + (dir.path() / "no-such-token").string() + "\n");
  missing += "routing:\n  engine: updn\n";
  std::ofstream(dir.path() / "subnetd.yaml", std::ios::trunc) << missing;
  ::kill(pid, SIGHUP);
  ASSERT_FALSE(notify.wait_for("RELOADING=1", 5s).empty());
  ASSERT_FALSE(notify.wait_for("READY=1", 5s).empty());
  text = slurp(log);
  EXPECT_NE(text.find("refused, keeping the running configuration: api.token_file " +
                      (dir.path() / "no-such-token").string() + ": No such file or directory"),
            std::string::npos)
      << text;
  EXPECT_EQ(::kill(pid, 0), 0) << "daemon died on a refused reload";

  ::kill(pid, SIGTERM);
  ASSERT_EQ(wait_exit(pid, 5s), 0) << slurp(log);
  int rc = 0;
  const std::string events =
      run_capture("sqlite3 " + (dir.path() / "state.db").string() +
                      " \"SELECT kind || ': ' || message FROM events ORDER BY id\"",
                  dir.path() / "events.txt", &rc);
  ASSERT_EQ(rc, 0) << events;
  EXPECT_NE(events.find("config_reload: configuration reload of " +
                        (dir.path() / "subnetd.yaml").string() +
                        ": changes to these keys need a restart and were not applied"),
            std::string::npos)
      << events;
  EXPECT_NE(events.find("error: configuration reload of " + (dir.path() / "subnetd.yaml").string() +
                        " refused"),
            std::string::npos)
      << events;
  // The SM applied the first reload only; the refused one never reached it.
  std::size_t applied = 0;
  for (auto at = events.find("configuration reloaded from"); at != std::string::npos;
       at = events.find("configuration reloaded from", at + 1)) {
    ++applied;
  }
  EXPECT_EQ(applied, 1u) << events;
}

// subnetd --once: a stored LID the addressing mode cannot use is reported
// with its port GUID; an emptied store is an error naming the file (exit 4);
// --reset-store says where the old store went; the store file is 0600.
TEST(DaemonProcess, OnceReportsStoreProblems) {
  TempDir dir;
  write_config(dir.path(), "fat-tree:levels=2,radix=4");
  const std::string once = kBinary + " --once --config " + (dir.path() / "subnetd.yaml").string();
  const fs::path db = dir.path() / "state.db";
  const fs::path out = dir.path() / "once.log";
  int rc = -1;
  std::string text = run_capture(once, out, &rc);
  ASSERT_EQ(rc, 0) << text;
  EXPECT_EQ(fs::status(db).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  // 0xC000 is the first multicast LID: not a unicast LID in the 16-bit space.
  std::string port_guid =
      run_capture("sqlite3 " + db.string() +
                      " \"SELECT printf('0x%016x', port_guid) FROM lids WHERE lmc = 1 "
                      "ORDER BY port_guid LIMIT 1\"",
                  dir.path() / "guid.txt", &rc);
  ASSERT_EQ(rc, 0) << port_guid;
  port_guid = port_guid.substr(0, port_guid.find('\n'));
  ASSERT_EQ(std::system(("sqlite3 " + db.string() + " \"UPDATE lids SET base_lid = 49152 WHERE " +
                         "printf('0x%016x', port_guid) = '" + port_guid + "'\"")
                            .c_str()),
            0);
  text = run_capture(once, out, &rc);
  ASSERT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("stored LID not usable: port GUID " + port_guid), std::string::npos) << text;
  EXPECT_NE(text.find("stored LID 0xc000 is not a unicast LID in the 16-bit space"),
            std::string::npos)
      << text;

  std::ofstream(db, std::ios::trunc).close();  // emptied
  text = run_capture(once, out, &rc);
  EXPECT_EQ(rc, 4) << text;
  EXPECT_NE(text.find(db.string() + ": the store file is empty (0 bytes)"), std::string::npos)
      << text;
  EXPECT_EQ(fs::file_size(db), 0u);

  text = run_capture(once + " --reset-store", out, &rc);
  ASSERT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("--reset-store moved the old store (with its -wal/-shm files) aside to " +
                      db.string() + ".corrupt-"),
            std::string::npos)
      << text;
}

// A loopback cable (two ports of one switch cabled to each other) was swept
// and routed around silently; --once names the switch and both ports.
TEST(DaemonProcess, OnceWarnsAboutALoopbackCable) {
  TempDir dir;
  std::ofstream(dir.path() / "loop.net") << "Hca 1 \"h0\"\n[1] \"sw\"[1]\n\n"
                                         << "Hca 1 \"h1\"\n[1] \"sw\"[2]\n\n"
                                         << "Switch 8 \"sw\"\n[5] \"sw\"[7]\n\n";
  write_config(dir.path(), (dir.path() / "loop.net").string());
  int rc = -1;
  const std::string text =
      run_capture(kBinary + " --once --config " + (dir.path() / "subnetd.yaml").string(),
                  dir.path() / "once.log", &rc);
  ASSERT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("warning: \"sw\" (0x0000000000200000) ports 5 and 7 are cabled to each "
                      "other (a loopback cable)"),
            std::string::npos)
      << text;
}

TEST(DaemonProcess, CorruptStoreIsAClearStartupError) {
  TempDir dir;
  write_config(dir.path(), "fat-tree:levels=2,radix=4");
  std::ofstream(dir.path() / "state.db") << "this is not a database, it is a cabbage";
  NotifySocket notify(dir.path() / "notify.sock");
  pid_t pid =
      spawn_daemon(dir.path() / "subnetd.yaml", dir.path() / "notify.sock", dir.path() / "log");
  EXPECT_EQ(wait_exit(pid, 10s), 4);
  const std::string text = slurp(dir.path() / "log");
  EXPECT_NE(text.find((dir.path() / "state.db").string()), std::string::npos) << text;
  EXPECT_EQ(slurp(dir.path() / "state.db"), "this is not a database, it is a cabbage");
}

TEST(SystemdUnit, VerifiesClean) {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no systemd-analyze";
  TempDir dir;
  std::string unit = slurp(std::string(SUBNETD_SOURCE_DIR) + "/deploy/subnetd.service");
  unit = std::regex_replace(unit, std::regex("/usr/local/bin/subnetd"), kBinary);
  std::ofstream(dir.path() / "subnetd.service") << unit;
  const std::string cmd = "systemd-analyze verify " + (dir.path() / "subnetd.service").string() +
                          " > " + (dir.path() / "out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir.path() / "out");
  EXPECT_EQ(slurp(dir.path() / "out"), "");
  for (const char* key :
       {"Type=notify", "WatchdogSec=", "User=subnetd", "StateDirectory=subnetd",
        "ConfigurationDirectory=subnetd", "ProtectSystem=strict", "PrivateTmp=yes",
        "NoNewPrivileges=yes", "DeviceAllow=char-infiniband_mad rw"}) {
    EXPECT_NE(unit.find(key), std::string::npos) << key;
  }
}

}  // namespace

// ibsim accepts what write_netfile produces: start `ibsim -s` on a generated
// fat tree (console on a pipe we keep open, private IBSIM_SOCKNAME), check it
// parsed the sizes we computed and came up, then quit it. A second test asks
// ibnetdiscover (through umad2sim) what ibsim built and reads that back with
// our reader: same GUIDs, descriptions, links and link modes as generated.
// Skipped when ibsim (ibsim-utils) is not installed.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"
#include "routing/topology.hpp"

extern char** environ;

namespace subnetd::discovery::topo {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::optional<std::string> find_program(const std::string& name,
                                        std::initializer_list<const char*> dirs) {
  for (const char* d : dirs) {
    const fs::path p = fs::path(d) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return std::nullopt;
}

// A child process with stdin on a pipe we hold and stdout (optionally with
// stderr) on a pipe we read. Only this object signals its own pid.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }

  // Starts argv[0] with `extra_env` added to (and overriding) our environment,
  // in `cwd` when given.
  bool start(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
             bool merge_stderr, const std::string& cwd = {}) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return false;
    if (::pipe2(out, O_CLOEXEC) != 0) return false;
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      bool overridden = false;
      for (const std::string& x : extra_env) {
        overridden = overridden || kv.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0;
      }
      if (!overridden) env.push_back(kv);
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> cargv, cenv;
    for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (merge_stderr) {
      posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    } else {
      posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    const int rc = ::posix_spawn(&pid_, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = out[0];
    if (rc != 0) pid_ = -1;
    return rc == 0;
  }

  bool send(std::string_view text) {
    return ::write(in_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }

  // Reads until `needle` shows up in the output (or EOF / timeout).
  bool read_until(std::string_view needle, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (output_.find(needle) == std::string::npos) {
      if (!read_some(deadline)) return false;
    }
    return true;
  }

  // Reads until the child closes its output.
  bool read_to_eof(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (out_ >= 0) {
      if (!read_some(deadline)) return out_ < 0;
    }
    return true;
  }

  // The exit status, or nullopt if it did not exit in time. Waits on a
  // pidfd, which becomes readable when the child exits.
  std::optional<int> wait(milliseconds timeout) {
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    if (pidfd < 0) return std::nullopt;
    pollfd pfd{pidfd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
    ::close(pidfd);
    if (ready <= 0) return std::nullopt;
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return std::nullopt;
    pid_ = -1;
    return status;
  }

  const std::string& output() const { return output_; }

 private:
  bool read_some(Clock::time_point deadline) {
    if (out_ < 0) return false;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{out_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left)) <= 0) return false;
    char buf[65536];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) {
      ::close(out_);
      out_ = -1;
      return false;
    }
    output_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string output_;
};

// The number after "<key>" and '=' in ibsim's banner ("MaxNetNodes    = 44").
long banner_value(const std::string& out, const std::string& key) {
  const std::size_t at = out.find(key);
  if (at == std::string::npos) return -1;
  const std::size_t eq = out.find('=', at);
  return eq == std::string::npos ? -1 : std::strtol(out.c_str() + eq + 1, nullptr, 10);
}

class IbsimStart : public ::testing::Test {
 protected:
  void SetUp() override {
    ibsim_ = find_program("ibsim", {"/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"});
    if (!ibsim_) GTEST_SKIP() << "ibsim not installed (apt-get install ibsim-utils)";
    std::string tmpl = (fs::temp_directory_path() / "subnetd-ibsim-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    static int counter = 0;
    sockname_ = "subnetd-topo-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Writes `spec` as a net file and starts ibsim on it; returns once ibsim's
  // console loop runs. ibsim prints its banner and first prompt before it
  // binds its sockets (sim_init_console, then sim_run -> sim_init_conn) and
  // reads the console only in the loop after that, so a comment line it
  // prints back means a client can attach now (umad2sim retries a refused
  // attach only after sleep(2)).
  void start_ibsim(const std::string& spec, Child& sim) {
    Result<routing::Topology> t = generate(spec);
    ASSERT_TRUE(t.ok()) << t.error().message;
    topo_ = std::move(t).value();
    const std::string path = (dir_ / "fabric.net").string();
    ASSERT_TRUE(save_netfile(topo_, path).ok());
    sizing_ = ibsim_sizing(topo_);
    std::vector<std::string> argv{*ibsim_, "-s"};
    for (const std::string& a : sizing_.args()) argv.push_back(a);
    argv.push_back(path);
    ASSERT_TRUE(sim.start(argv, {"IBSIM_SOCKNAME=" + sockname_}, /*merge_stderr=*/true));
    ASSERT_TRUE(sim.send("#console-ready\n"));
    ASSERT_TRUE(sim.read_until("#console-ready", milliseconds(15000))) << sim.output();
  }

  std::optional<std::string> ibsim_;
  fs::path dir_;
  std::string sockname_;
  routing::Topology topo_;
  IbsimSizing sizing_;
};

TEST_F(IbsimStart, GeneratedFatTreeComesUpAndQuits) {
  Child sim;
  ASSERT_NO_FATAL_FAILURE(start_ibsim("fat-tree:levels=2,radix=8", sim));
  const std::string& out = sim.output();
  EXPECT_NE(out.find("fabric.net: parsed"), std::string::npos) << out;
  EXPECT_NE(out.find("Network simulator ready."), std::string::npos) << out;
  EXPECT_EQ(banner_value(out, "MaxNetNodes"), 44);
  EXPECT_EQ(banner_value(out, "MaxNetSwitches"), 12);
  EXPECT_EQ(banner_value(out, "MaxNetPorts"), 140);
  EXPECT_EQ(banner_value(out, "MaxNetNodes"), static_cast<long>(sizing_.nodes));
  // Our link annotations leave ibsim nothing to complain about.
  EXPECT_EQ(out.find("ibwarn"), std::string::npos) << out;
  EXPECT_EQ(out.find("fatal"), std::string::npos) << out;

  ASSERT_TRUE(sim.send("quit\n"));
  EXPECT_TRUE(sim.read_to_eof(milliseconds(10000))) << sim.output();
  const std::optional<int> status = sim.wait(milliseconds(10000));
  ASSERT_TRUE(status.has_value()) << "ibsim did not exit after quit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  EXPECT_NE(sim.output().find("Exiting network simulator"), std::string::npos) << sim.output();
}

TEST_F(IbsimStart, IbnetdiscoverSeesTheGeneratedFabric) {
  const std::optional<std::string> disc =
      find_program("ibnetdiscover", {"/usr/sbin", "/usr/bin", "/usr/local/sbin"});
  const char* preload = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
  if (!disc || ::access(preload, R_OK) != 0) {
    GTEST_SKIP() << "ibnetdiscover or libumad2sim not installed";
  }
  Child sim;
  ASSERT_NO_FATAL_FAILURE(start_ibsim("fat-tree:levels=3,k=4,ca_ports=2", sim));

  // In the test's own directory: umad2sim writes its fake sysfs to
  // ./sys-<pid>, and a leftover of a killed client in a shared directory
  // would be read by a later client with the same pid.
  Child d;
  ASSERT_TRUE(d.start({*disc},
                      {"IBSIM_SOCKNAME=" + sockname_, std::string("LD_PRELOAD=") + preload},
                      /*merge_stderr=*/false, dir_.string()));
  ASSERT_TRUE(d.read_to_eof(milliseconds(30000))) << d.output();
  const std::optional<int> status = d.wait(milliseconds(10000));
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << d.output();

  Result<routing::Topology> seen = parse_netfile(d.output(), "ibnetdiscover");
  ASSERT_TRUE(seen.ok()) << seen.error().message << "\n" << d.output();
  ASSERT_EQ(seen->num_nodes(), topo_.num_nodes());
  EXPECT_EQ(seen->num_links(), topo_.num_links());
  for (std::uint32_t i = 0; i < topo_.num_nodes(); ++i) {
    const routing::Node& n = topo_.nodes()[i];
    SCOPED_TRACE(n.description);
    const std::optional<NodeId> j = seen->find_by_guid(n.guid);
    ASSERT_TRUE(j.has_value());
    const routing::Node& m = seen->node(*j);
    EXPECT_EQ(m.type, n.type);
    EXPECT_EQ(m.num_ports, n.num_ports);
    EXPECT_EQ(m.description, n.description);
    for (unsigned p = 1; p <= n.num_ports; ++p) {
      const routing::Port& a = topo_.port(NodeId{i}, static_cast<PortNum>(p));
      const routing::Port& b = seen->port(*j, static_cast<PortNum>(p));
      EXPECT_EQ(a.guid, b.guid);
      ASSERT_EQ(a.connected(), b.connected()) << "port " << p;
      if (!a.connected()) continue;
      EXPECT_EQ(topo_.node(a.remote_node).guid, seen->node(b.remote_node).guid) << "port " << p;
      EXPECT_EQ(a.remote_port, b.remote_port);
      EXPECT_EQ(b.width_active, a.width_active);
      EXPECT_EQ(b.speed_active, a.speed_active);
    }
  }
  ASSERT_TRUE(sim.send("quit\n"));
  EXPECT_TRUE(sim.wait(milliseconds(10000)).has_value());
}

}  // namespace
}  // namespace subnetd::discovery::topo

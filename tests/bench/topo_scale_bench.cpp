// Topology scale benchmark: builds the large fabrics and prints, per fabric,
// its size, the time to generate it, the time to validate it, and the peak
// resident memory (VmHWM) of a process that did only that.
//
//   topo_scale_bench [spec...]
//
// Default specs:
//   fat-tree:levels=3,k=80               8,000 switches, 128,000 CAs
//   fat-tree:levels=3,k=80,hosts=106687  the 17-bit fill fabric (issue 6):
//                                        8,000 switches + 106,687 CAs = 114,687 LIDs
//
// Each spec runs in a forked child so that VmHWM is that fabric's own peak.

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "discovery/topo/generators.hpp"

namespace {

using namespace subnetd::bench;

int run(const std::string& spec) {
  const Clock::time_point t0 = Clock::now();
  subnetd::Result<subnetd::routing::Topology> t = subnetd::discovery::topo::generate(spec);
  const double gen_s = seconds_since(t0);
  if (!t.ok()) {
    fmt::print(stderr, "{}: {}\n", spec, t.error().message);
    return 1;
  }
  const Clock::time_point t1 = Clock::now();
  const subnetd::Result<void> valid = t->validate();
  const double validate_s = seconds_since(t1);
  fmt::print(
      "{:<40} switches={:<6} cas={:<7} links={:<7} generate={:.3f}s validate={:.3f}s "
      "peak_rss={:.1f}MiB{}\n",
      spec, t->num_switches(), t->num_cas(), t->num_links(), gen_s, validate_s, peak_rss_mib(),
      valid.ok() ? "" : "  INVALID: " + valid.error().message);
  return valid.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> specs(argv + 1, argv + argc);
  if (specs.empty()) {
    specs = {"fat-tree:levels=3,k=80", "fat-tree:levels=3,k=80,hosts=106687"};
  }
  int failures = 0;
  for (const std::string& spec : specs) {
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      return 1;
    }
    if (pid == 0) {
      const int rc = run(spec);
      std::fflush(stdout);  // _exit skips stdio's buffers
      _exit(rc);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    failures += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  }
  return failures == 0 ? 0 : 1;
}

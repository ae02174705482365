// umad_probe: holds the SM's umad port open with UmadTransport, for the
// interop checks that need an SM that is alive but not sweeping: `sminfo`
// (answered by the transport's SmAgent), IsSM in our CapabilityMask, and
// trap delivery (ibsim `Unlink` -> trap 128 -> TrapRepress from here).
//
//   umad_probe [--ca NAME] [--port N] [--seconds S]
//
// Runs until stdin reaches EOF (the driver closes it) or S seconds pass;
// waits on stdin and the transport's event fd, not on a timeout.
// Prints, one line each, flushed:
//   ready guid 0x... port N
//   trap NUM issuer_lid 0x... lid 0x... from 0x...   (and sends TrapRepress)
//   stats sent N received N answered N kernel_timeouts N malformed N
// Exit 0, or 1 with the transport's error on stderr.
//
// It ends with _Exit once the transport is closed, skipping the atexit
// handlers, for umad2sim's (ibsim 0.10, Debian 12's, and still 0.12): that
// handler locks umad2sim's device mutex, disconnects from ibsim, then
// cancels and joins umad2sim's receiver thread. A MAD that reaches the
// receiver meanwhile (a trap the driver did not wait for: it waited for
// the Unlink's first alone) leaves it waiting for that mutex, which is no
// cancellation point, and the join never returns: interop.torus5 saw the
// probe print its stats and hang until it was killed, under ASan and in
// release. Without that handler the probe never disconnects, and ibsim
// keeps its client slot (of 10): the probe is the last client of its
// simulator.
//
// A MAD that arrives after the port is closed crashes umad2sim's receiver
// (it finds no queue for the agent's class and dereferences it), so the
// driver waits for every trap of its events that can reach the SM before
// it closes stdin.

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "discovery/mad/smp.hpp"
#include "discovery/trap_repress.hpp"
#include "discovery/umad/umad_transport.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::discovery;

// Blocks until stdin or the transport has something (or `ms` pass); false
// once stdin is closed.
bool wait_input(int event_fd, int ms) {
  pollfd p[2] = {{0, POLLIN, 0}, {event_fd, POLLIN, 0}};
  if (::poll(p, event_fd >= 0 ? 2 : 1, ms) <= 0 || p[0].revents == 0) return true;
  char buf[256];
  return ::read(0, buf, sizeof buf) > 0;
}

int run(int argc, char** argv) {
  umad::UmadOptions opts;
  // It stands in for the master of the subnet `subnetd --once` just
  // programmed (the transport's own default is DISCOVERING).
  opts.sm_state = discovery::SmState::kMaster;
  double seconds = 600;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      fmt::print(stderr, "umad_probe: {} needs a value\n", a);
      return 2;
    }
    if (a == "--ca") {
      opts.ca = argv[++i];
    } else if (a == "--port") {
      opts.port = static_cast<PortNum>(std::atoi(argv[++i]));
    } else if (a == "--seconds") {
      seconds = std::atof(argv[++i]);
    } else {
      fmt::print(stderr, "usage: umad_probe [--ca NAME] [--port N] [--seconds S]\n");
      return 2;
    }
  }
  auto opened = umad::UmadTransport::open(opts);
  if (!opened.ok()) {
    fmt::print(stderr, "umad_probe: {}\n", opened.error().message);
    return 1;
  }
  umad::UmadTransport& t = **opened;
  fmt::print("ready guid {:#018x} port {}\n", t.local_port().port_guid.value,
             t.local_port().port_num);
  std::fflush(stdout);

  // Woken by what arrives (the transport's event fd) and by stdin closing,
  // not by a receive timeout.
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (bool open = true; open;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    open = wait_input(t.event_fd(), t.event_fd() >= 0 ? static_cast<int>(left.count()) : 100);
    auto got = t.receive(std::chrono::microseconds{0});
    if (!got.ok()) {
      fmt::print(stderr, "umad_probe: {}\n", got.error().message);
      return 1;
    }
    if (!got->has_value()) continue;
    open = true;  // what is queued is read before stdin's end counts
    const Mad& m = **got;
    auto smp = mad::decode_smp(m.data);
    if (!smp.ok() || smp->method != mad::Method::kTrap) continue;
    const mad::Notice n = mad::Notice::decode(mad::data_of(*smp));
    const bool sent = t.send(trap_repress(*smp, m)).ok();
    fmt::print("trap {} issuer_lid {:#x} lid {:#x} from {:#x} repressed {}\n", n.trap_number,
               n.issuer_lid, n.trap_number == 128 ? n.trap128_lid(false) : 0U, m.slid,
               sent ? "yes" : "no");
    std::fflush(stdout);
  }
  const auto s = t.stats();
  fmt::print("stats sent {} received {} answered {} kernel_timeouts {} malformed {}\n", s.sent,
             s.received, s.answered, s.kernel_timeouts, s.malformed);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rc = run(argc, argv);  // the transport closed: its threads joined, IsSM cleared
  std::fflush(nullptr);
  std::_Exit(rc);
}

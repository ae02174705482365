// interop_netfile: net files and ibsim sizes for the interop suite and the
// OpenSM side-by-side bench.
//
//   interop_netfile SPEC OUT.net     generate a topology (discovery/topo spec,
//                                    e.g. "torus:dims=4x4") and save it as an
//                                    ibsim net file (a CA port first: ibsim's
//                                    default port, where the SM attaches)
//   interop_netfile --sizing FILE    read a net file
//
// Both print one line: the ibsim size options the file needs
// ("-N 29 -S 13 -P 138"), then one line "switches S cas C links L".

#include <fmt/format.h>

#include <string>

#include "discovery/topo/generators.hpp"
#include "discovery/topo/netfile.hpp"

namespace {

using namespace subnetd;

void print_sizing(const routing::Topology& t) {
  const auto sizing = discovery::topo::ibsim_sizing(t);
  fmt::print("{}\n", fmt::join(sizing.args(), " "));
  fmt::print("switches {} cas {} links {}\n", t.num_switches(), t.num_cas(), t.num_links());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: {} SPEC OUT.net | --sizing FILE.net\n", argv[0]);
    return 2;
  }
  const std::string a = argv[1];
  const std::string b = argv[2];
  if (a == "--sizing") {
    auto t = discovery::topo::read_netfile(b);
    if (!t.ok()) {
      fmt::print(stderr, "interop_netfile: {}\n", t.error().message);
      return 1;
    }
    print_sizing(*t);
    return 0;
  }
  auto t = discovery::topo::generate(a);
  if (!t.ok()) {
    fmt::print(stderr, "interop_netfile: {}\n", t.error().message);
    return 1;
  }
  if (auto saved = discovery::topo::save_netfile(*t, b); !saved.ok()) {
    fmt::print(stderr, "interop_netfile: {}\n", saved.error().message);
    return 1;
  }
  print_sizing(*t);
  return 0;
}

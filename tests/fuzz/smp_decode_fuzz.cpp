// libFuzzer target for the SMP decoder. Build and run: tests/fuzz/run_fuzz.sh [seconds].
// The property checked is in smp_fuzz_check.hpp; a violation aborts with the
// reason, and libFuzzer saves the input as a crash artifact. Copy such an input
// into tests/fuzz/corpus/ so mad_fuzz_regression_test replays it.

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/smp_fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string failure =
      subnetd::discovery::mad::fuzz::check_smp_bytes(std::span<const std::uint8_t>(data, size));
  if (!failure.empty()) {
    std::fprintf(stderr, "SMP codec property violated: %s\n", failure.c_str());
    std::abort();
  }
  return 0;
}

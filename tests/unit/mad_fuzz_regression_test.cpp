// Replays every input under tests/fuzz/corpus/ (the fuzzer's seeds and any
// input that once broke the codec) through the fuzzer's property check, so a
// fixed crash stays fixed without running libFuzzer in CI.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/fuzz/smp_fuzz_check.hpp"

namespace subnetd::discovery::mad {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> corpus_files() {
  const fs::path dir = fs::path(SUBNETD_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(MadFuzzRegression, CorpusSatisfiesCodecProperty) {
  const auto files = corpus_files();
  ASSERT_FALSE(files.empty()) << "tests/fuzz/corpus/ is empty";
  int decoded = 0;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << path;
    // Exactly the file's bytes, on the heap, so ASan builds catch over-reads.
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    EXPECT_EQ(fuzz::check_smp_bytes(bytes), "") << path.filename();
    decoded += decode_smp(bytes, DecodeOptions{.allow_unknown_attribute = true}).ok();
  }
  // The committed seeds are mostly valid SMPs; if none decodes, the decoder
  // rejects everything and the property above would hold vacuously.
  EXPECT_GT(decoded, 0);
  std::printf("[ corpus   ] %zu inputs replayed, %d decode\n", files.size(), decoded);
}

}  // namespace
}  // namespace subnetd::discovery::mad

#include "daemon/proc_stats.hpp"

#include <cstdio>
#include <cstring>

namespace subnetd::daemon {
namespace {

std::uint64_t status_kib(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  std::uint64_t kib = 0;
  const std::size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') {
      unsigned long long v = 0;
      if (std::sscanf(line + n + 1, "%llu", &v) == 1) kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace

std::uint64_t peak_rss_bytes() {
  return status_kib("VmHWM");
}
std::uint64_t current_rss_bytes() {
  return status_kib("VmRSS");
}

}  // namespace subnetd::daemon

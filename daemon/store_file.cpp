#include "daemon/store_file.hpp"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace subnetd::daemon {

namespace fs = std::filesystem;

namespace {

std::string utc_stamp(state::WallTime t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  return fmt::format("{:%Y%m%dT%H%M%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(secs)));
}

// SQLite's first 16 bytes. Checked before sqlite3_open so that a file of
// garbage gets a precise message and is never touched.
constexpr char kSqliteMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                   'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

std::string errno_text() {
  return std::strerror(errno);
}

// Removes `path` and its SQLite companions; a missing file is not an error.
Result<void> remove_with_companions(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string p = path + suffix;
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
      return Error{Errc::kIo, fmt::format("{}: cannot remove: {}", p, errno_text())};
    }
  }
  return ok_result();
}

}  // namespace

Result<void> check_store_file(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) {
    // A WAL without its database: the database file was deleted or renamed
    // while its last transactions were still in the WAL. Those cannot be
    // recovered into a new file; starting fresh would lose every LID silently.
    if (fs::exists(path + "-wal", ec)) {
      return Error{Errc::kParse,
                   fmt::format("{}: the store file is missing but its write-ahead log {}-wal is "
                               "there (the store was deleted or moved while in use); refusing to "
                               "start a new store over it, which would give ports new LIDs. Put "
                               "the store file back, or start with --reset-store to move the "
                               "leftovers aside",
                               path, path)};
    }
    return ok_result();
  }
  if (ec) return Error{Errc::kIo, fmt::format("{}: cannot stat store: {}", path, ec.message())};
  if (st.type() != fs::file_type::regular) {
    return Error{Errc::kIo, fmt::format("{}: store path is not a regular file", path)};
  }
  const auto size = fs::file_size(path, ec);
  if (ec) return Error{Errc::kIo, fmt::format("{}: cannot stat store: {}", path, ec.message())};
  if (size == 0) {
    // subnetd never leaves an empty file at the store path (see the header),
    // so this one was emptied: its LIDs are gone.
    return Error{Errc::kParse,
                 fmt::format("{}: the store file is empty (0 bytes): it was truncated or replaced "
                             "and the LIDs it remembered are lost; refusing to start with a fresh "
                             "store, which would give every port a new LID. Restore it from a "
                             "backup, or start with --reset-store to move it aside and begin "
                             "empty (ports keep the LIDs they hold where they can)",
                             path)};
  }
  std::ifstream in(path, std::ios::binary);
  char head[sizeof kSqliteMagic] = {};
  if (!in || !in.read(head, sizeof head)) {
    if (in.is_open() && size < sizeof head) {
      return Error{Errc::kParse,
                   fmt::format("{}: not an SQLite database ({} bytes, truncated or not a store); "
                               "start with --reset-store to move it aside",
                               path, size)};
    }
    return Error{Errc::kIo, fmt::format("{}: cannot read store", path)};
  }
  if (!std::equal(std::begin(head), std::end(head), std::begin(kSqliteMagic))) {
    return Error{Errc::kParse, fmt::format("{}: not an SQLite database (bad file header); start "
                                           "with --reset-store to move it aside",
                                           path)};
  }
  return ok_result();
}

// The WAL must move too: left behind, SQLite would replay its frames into
// the new, empty database.
Result<std::optional<std::string>> move_store_aside(const std::string& path, state::WallTime now) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  const bool wal_exists = fs::exists(path + "-wal", ec);
  if (!exists && !wal_exists) return std::optional<std::string>{};
  std::string target = fmt::format("{}.corrupt-{}", path, utc_stamp(now));
  for (int n = 1; fs::exists(target, ec) || fs::exists(target + "-wal", ec); ++n) {
    target = fmt::format("{}.corrupt-{}-{}", path, utc_stamp(now), n);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string from = path + suffix;
    if (!fs::exists(from, ec)) continue;
    fs::rename(from, target + suffix, ec);
    if (ec) {
      return Error{Errc::kIo, fmt::format("{}: cannot move aside to {}: {}", from, target + suffix,
                                          ec.message())};
    }
  }
  return std::optional<std::string>{target};
}

Result<void> create_store_file(const std::string& path,
                               const std::function<Result<void>(const std::string&)>& init) {
  const std::string tmp = path + ".init";
  // Left by a crash during an earlier creation: it never held LIDs.
  SUBNETD_TRY(remove_with_companions(tmp));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kStoreFileMode);
  if (fd < 0) return Error{Errc::kIo, fmt::format("{}: cannot create: {}", tmp, errno_text())};
  // open(2) applies the umask; the mode must not depend on it.
  const bool moded = ::fchmod(fd, kStoreFileMode) == 0;
  const int mode_errno = errno;
  ::close(fd);
  if (!moded) {
    (void)remove_with_companions(tmp);
    return Error{Errc::kIo, fmt::format("{}: cannot set mode {:04o}: {}", tmp, kStoreFileMode,
                                        std::strerror(mode_errno))};
  }
  if (auto built = init(tmp); !built.ok()) {
    (void)remove_with_companions(tmp);
    return built.error();
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e{Errc::kIo,
            fmt::format("{}: cannot rename the new store to {}: {}", tmp, path, errno_text())};
    (void)remove_with_companions(tmp);
    return e;
  }
  // The rename is durable once the directory is synced; without it a power
  // loss could bring back the state before (no store at all), which is safe
  // but would repeat the creation. Best effort: some filesystems refuse it.
  const fs::path dir = fs::path(path).parent_path();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
  return ok_result();
}

Result<void> restrict_store_permissions(const std::string& path) {
  for (const std::string& f : {path, path + "-wal", path + "-shm"}) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;
      return Error{Errc::kIo, fmt::format("{}: cannot stat: {}", f, errno_text())};
    }
    const mode_t mode = st.st_mode & 07777;
    const mode_t tight = mode & kStoreFileMaxMode;
    if (tight == mode) continue;
    // Only the owner (or root) may chmod: a store an operator set up under
    // another owner keeps its mode rather than stopping the daemon.
    if (st.st_uid != ::geteuid() && ::geteuid() != 0) continue;
    if (::chmod(f.c_str(), tight) != 0) {
      return Error{Errc::kIo, fmt::format("{}: cannot restrict its mode {:04o} to {:04o}: {}", f,
                                          mode, tight, errno_text())};
    }
  }
  return ok_result();
}

}  // namespace subnetd::daemon

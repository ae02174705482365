#pragma once
// The file under the Store, before SQLite opens it: the checks that refuse a
// file that once held a store and no longer does, moving a bad file aside
// (--reset-store), creating a new store file atomically, and its permissions.
//
// Why creation is atomic. A store that existed and was truncated to 0 bytes
// must be an error (its LIDs are gone; starting fresh would silently give
// every port a new LID), so an empty file at the store path can never mean
// "new". A new store is therefore built under `<path>.init` and renamed into
// place only once its schema is committed: a file at the path always held a
// store, and a crash during creation leaves only the .init file, which the
// next creation replaces (it never held LIDs).
//
// Permissions. The store holds the fabric's LID map and event log. A new
// store file is created 0600 whatever the umask; SQLite creates the -wal and
// -shm files with the database file's mode. An existing file (and companions)
// loses any permission for others and group write (at most 0640, so a group
// an operator granted read access keeps it).
//
// Used by Store::open only; all functions name the file in their errors.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "routing/result.hpp"
#include "state/event.hpp"

namespace subnetd::daemon {

// Mode of a store file subnetd creates, and the most an existing one keeps.
inline constexpr mode_t kStoreFileMode = 0600;
inline constexpr mode_t kStoreFileMaxMode = 0640;

// Checks what is at `path` before SQLite touches it: nothing (fine, unless a
// -wal file is left without its database), a non-empty regular file that
// starts with the SQLite header (fine), anything else an error that names the
// file and says how to recover (--reset-store).
Result<void> check_store_file(const std::string& path);

// Renames the database and its WAL/SHM companions to
// <path>.corrupt-<UTC timestamp>[-n]; returns the new name of the database,
// or nothing when there was nothing to move.
Result<std::optional<std::string>> move_store_aside(const std::string& path, state::WallTime now);

// Creates a store at `path` (which must not exist): makes `<path>.init` with
// mode kStoreFileMode, lets `init` build the store in it (open, migrate,
// close), then renames it to `path` and syncs the directory.
Result<void> create_store_file(const std::string& path,
                               const std::function<Result<void>(const std::string&)>& init);

// Takes permissions for others and group write off `path` and its -wal and
// -shm files, where they exist and this process may change their mode
// (its own files, or any as root).
Result<void> restrict_store_permissions(const std::string& path);

}  // namespace subnetd::daemon

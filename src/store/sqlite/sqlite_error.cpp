#include "store/sqlite/sqlite_error.hpp"

#include "store/store.hpp"
#include "util/errno_text.hpp"
#include "util/paths.hpp"

#include <cerrno>
#include <fmt/format.h>
#include <sys/statvfs.h>

namespace ratelimit::store::sqlite {

namespace {

bool no_space_left(std::string_view path) {
  struct statvfs fs {};
  std::string directory = util::parent_directory(std::string(path));
  // A pseudo file system (/proc, /sys) has no blocks and no inodes at all: it is not full,
  // it just holds no files of ours.
  return ::statvfs(directory.c_str(), &fs) == 0 && fs.f_blocks > 0 &&
         (fs.f_bavail == 0 || (fs.f_files > 0 && fs.f_favail == 0));
}

// Whether the directory of `path` is on a file system without blocks (/proc, /sys).
bool pseudo_file_system(std::string_view path) {
  struct statvfs fs {};
  std::string directory = util::parent_directory(std::string(path));
  return ::statvfs(directory.c_str(), &fs) == 0 && fs.f_blocks == 0;
}

} // namespace

std::string sqlite_failure_reason(sqlite3* db, int rc, std::string_view path) {
  if (db == nullptr) {
    return "out of memory";
  }
  int code = sqlite3_extended_errcode(db);
  if (code == SQLITE_OK) {
    code = rc;
  }
  int primary = code & 0xff;
  int system_error = sqlite3_system_errno(db);
  if (primary == SQLITE_FULL || system_error == ENOSPC || system_error == EDQUOT) {
    return util::describe_errno(ENOSPC);
  }
  if (system_error == EROFS || system_error == EACCES || system_error == EPERM) {
    return util::describe_errno(system_error);
  }
  if ((primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN) && no_space_left(path)) {
    return util::describe_errno(ENOSPC);
  }
  if (primary == SQLITE_CANTOPEN && system_error != 0 && pseudo_file_system(path)) {
    return util::describe_errno(system_error);
  }
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return "it is locked by another process for longer than the lock timeout; see "
           "--lock-timeout";
  }
  std::string message = sqlite3_errmsg(db);
  if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM) {
    message += " (is the file or its directory read-only?)";
  }
  return message;
}

void throw_sqlite_error(sqlite3* db, int rc, std::string_view what, std::string_view path) {
  std::string file(path);
  if (file.empty() && db != nullptr) {
    const char* name = sqlite3_db_filename(db, "main");
    file = name ? name : "";
  }
  throw StoreError(fmt::format("{} \"{}\": {}", what, file, sqlite_failure_reason(db, rc, file)));
}

} // namespace ratelimit::store::sqlite

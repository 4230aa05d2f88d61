#pragma once

#include <string>

namespace ratelimit::util {

// A file whose exclusive flock(2) says that its owner lives: the kernel releases the lock
// when the owner's descriptor is closed, whichever way the process ends (kill -9 too), so
// another process can tell a live owner from a dead one without trusting pids. The owner
// holds it open for writing, so that its end (IN_CLOSE_WRITE) and its removal (IN_DELETE)
// wake whoever watches the directory (see DirectoryWatch).
class LivenessFile {
public:
  // Creates `directory` (mode 0777 less the umask) when missing, and in it a new file named
  // `name` plus a suffix that makes it unique, locked; throws std::runtime_error.
  LivenessFile(const std::string& directory, const std::string& name);
  // Removes the file and closes it.
  ~LivenessFile();
  LivenessFile(const LivenessFile&) = delete;
  LivenessFile& operator=(const LivenessFile&) = delete;

  // The file's name in its directory.
  const std::string& name() const { return m_name; }

  // Wakes the directory's watchers without releasing the lock: opens the file for writing
  // again and closes it (IN_CLOSE_WRITE).
  void touch() const;

private:
  std::string m_path;
  std::string m_name;
  int m_fd = -1;
};

// Whether the owner of the liveness file `path` still holds it: its lock cannot be taken.
// A missing file has no owner. Never blocks.
bool owner_alive(const std::string& path);

// Removes a dead owner's file; a file already gone is fine.
void remove_file(const std::string& path);

// Watches a directory for liveness files that are closed after writing or removed, with
// inotify(7): a file's owner ended, touched it, or removed it.
class DirectoryWatch {
public:
  // Throws std::runtime_error.
  explicit DirectoryWatch(const std::string& directory);
  ~DirectoryWatch();
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  // Readable when events are queued.
  int fd() const { return m_fd; }

  // Reads the queued events without blocking; true when one of them concerns a file whose
  // name starts with `prefix`, or events were lost (the queue overflowed).
  bool drain(const std::string& prefix);

private:
  int m_fd = -1;
};

} // namespace ratelimit::util

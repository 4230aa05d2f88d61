#include "util/atomic_file.hpp"

#include "temporary_database.hpp"

#include <cerrno>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace ratelimit;

namespace {

struct stat info_of(const std::filesystem::path& file) {
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  return info;
}

// Sets the umask for the life of the object.
struct Umask {
  mode_t saved;
  explicit Umask(mode_t mask) : saved(::umask(mask)) {}
  ~Umask() { ::umask(saved); }
};

} // namespace

TEST_CASE("util::replace_file writes a new file with mode 0644 less the umask") {
  test::TemporaryDirectory directory;
  std::filesystem::path file = directory.path / "metrics.prom";
  {
    Umask mask(022);
    CHECK(util::replace_file(file, "one\n") == 0);
  }
  CHECK(test::file_contents(file) == "one\n");
  CHECK((info_of(file).st_mode & 07777) == 0644);
  std::filesystem::remove(file);
  {
    Umask mask(077);
    CHECK(util::replace_file(file, "two\n") == 0);
  }
  CHECK((info_of(file).st_mode & 07777) == 0600);
}

TEST_CASE("util::replace_file replaces the file by a rename, leaving nothing beside it") {
  test::TemporaryDirectory directory;
  std::filesystem::path file = directory.path / "metrics.prom";
  REQUIRE(util::replace_file(file, "old\n") == 0);
  ino_t before = info_of(file).st_ino;
  // A reader holding the old file keeps reading the old contents, whole.
  std::ifstream reader(file);
  REQUIRE(util::replace_file(file, "new, longer\n") == 0);
  CHECK(info_of(file).st_ino != before);
  CHECK(test::file_contents(file) == "new, longer\n");
  std::string old;
  std::getline(reader, old);
  CHECK(old == "old");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory.path)) {
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("util::replace_file fails with the errno of the step that failed") {
  test::TemporaryDirectory directory;
  CHECK(util::replace_file(directory.path / "missing" / "metrics.prom", "x") == ENOENT);
  // A directory in the way: the temporary file is written, the rename fails and it goes.
  std::filesystem::create_directory(directory.path / "taken");
  CHECK(util::replace_file(directory.path / "taken", "x") == EISDIR);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory.path)) {
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("util::replace_file gives the mode asked, even where a stale temporary file was "
          "left") {
  test::TemporaryDirectory directory;
  std::filesystem::path file = directory.path / "session.tls";
  // One a process of our PID left, open to all: made anew, not reused.
  std::filesystem::path stale = file.string() + "." + std::to_string(::getpid()) + ".tmp";
  std::ofstream(stale) << "stale";
  REQUIRE(::chmod(stale.c_str(), 0666) == 0);
  {
    Umask mask(022);
    CHECK(util::replace_file(file, "secret", {0600, false}) == 0);
  }
  CHECK(test::file_contents(file) == "secret");
  CHECK((info_of(file).st_mode & 07777) == 0600);
  CHECK_FALSE(std::filesystem::exists(stale));
}

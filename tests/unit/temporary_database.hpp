#pragma once
// A directory of its own, or a database path in one, removed with everything in it at the end.
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ratelimit::test {

struct TemporaryDirectory {
  std::filesystem::path path;
  TemporaryDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ratelimit-test-XXXXXX");
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TemporaryDirectory() { std::filesystem::remove_all(path); }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
};

struct TemporaryDatabase {
  TemporaryDirectory made;
  std::filesystem::path directory = made.path;
  std::string path() const { return (directory / "state.db").string(); }
};

// The bytes of `file`; empty when it cannot be read.
inline std::string file_contents(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace ratelimit::test

#pragma once
// A database path in a directory of its own, removed with everything in it at the end.
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <string>

namespace ratelimit::test {

struct TemporaryDatabase {
  std::filesystem::path directory;
  TemporaryDatabase() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ratelimit-test-XXXXXX");
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    directory = pattern;
  }
  ~TemporaryDatabase() { std::filesystem::remove_all(directory); }
  TemporaryDatabase(const TemporaryDatabase&) = delete;
  TemporaryDatabase& operator=(const TemporaryDatabase&) = delete;
  std::string path() const { return (directory / "state.db").string(); }
};

} // namespace ratelimit::test

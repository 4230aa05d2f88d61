#include "util/child_process.hpp"

#include "util/liveness_file.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>

using ratelimit::util::run_child;

TEST_CASE("util::run_child returns the command's status, 128 + N for signal N") {
  CHECK(run_child({"true"}) == 0);
  CHECK(run_child({"sh", "-c", "exit 3"}) == 3);
  CHECK(run_child({"sh", "-c", "kill -TERM $$"}) == 128 + SIGTERM);
}

TEST_CASE("util::run_child: a command not found is 127, as in a shell") {
  CHECK(run_child({"/nonexistent/ratelimit-test-command"}) == 127);
}

TEST_CASE("util::run_child calls the tick while the command runs") {
  int ticks = 0;
  CHECK(run_child(
            {"sleep", "0.3"}, [&] { ++ticks; }, 50'000'000) == 0);
  CHECK(ticks >= 2);
}

TEST_CASE("util::LivenessFile: alive while held, and its removal wakes a watcher") {
  std::string pattern = (std::filesystem::temp_directory_path() / "ratelimit-unit.XXXXXX");
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  std::string directory = pattern;
  {
    ratelimit::util::DirectoryWatch watch(directory);
    std::string path;
    {
      ratelimit::util::LivenessFile file(directory, "abc");
      path = directory + "/" + file.name();
      CHECK(ratelimit::util::owner_alive(path));
      CHECK_FALSE(watch.drain("abc"));
      file.touch();
      CHECK(watch.drain("abc"));
      CHECK_FALSE(watch.drain("abc"));
    }
    CHECK_FALSE(ratelimit::util::owner_alive(path));
    CHECK(watch.drain("abc"));
    ratelimit::util::LivenessFile other(directory, "xyz");
  }
  std::filesystem::remove_all(directory);
}

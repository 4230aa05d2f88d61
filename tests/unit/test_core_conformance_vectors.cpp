// The core's decisions on the conformance runs, pinned: both stores' harnesses compare the
// stores with the core on these runs, and this test holds the core to the checked-in
// vectors, so that a change in what any algorithm decides shows as a change of that file.
// `RATELIMIT_UPDATE_VECTORS=1 build/tests/unit_tests -tc='*vectors*'` writes it anew.
#include "conformance.hpp"
#include "core/bounds.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <fstream>
#include <string>
#include <vector>

using namespace ratelimit;
using namespace ratelimit::conformance;

namespace {

const char* const k_vectors = RATELIMIT_TEST_DATA_DIR "/conformance_vectors.txt";

std::vector<std::string> computed() {
  std::vector<std::string> lines;
  // The Redis script counts in microseconds, the SQLite store in nanoseconds.
  for (auto [unit, second] : {std::pair{"us", core::k_nanos_per_second / 1000},
                              std::pair{"ns", core::k_nanos_per_second}}) {
    for (const Run& run : runs(second)) {
      if (run.configuration.start > core::k_max_time / 2 && second == core::k_nanos_per_second) {
        continue; // past the latest time counted, as the SQLite harness skips it
      }
      lines.push_back(vector_line(unit, run, core_decisions(run)));
    }
    for (const Run& run : budget_runs(second)) {
      lines.push_back(vector_line(unit, run, core_decisions(run)) + " with the server's word");
    }
  }
  return lines;
}

} // namespace

TEST_CASE("core: the conformance runs decide as the checked-in vectors say") {
  std::vector<std::string> lines = computed();
  if (const char* update = std::getenv("RATELIMIT_UPDATE_VECTORS"); update && *update == '1') {
    std::ofstream out(k_vectors);
    out << "# unit algorithm \"limits\" granted N denied N digest HEX: one line per conformance "
           "run\n"
           "# (tests/unit/conformance.hpp), written by test_core_conformance_vectors.cpp.\n";
    for (const std::string& line : lines) {
      out << line << '\n';
    }
    REQUIRE(out.good());
    return;
  }
  std::ifstream in(k_vectors);
  REQUIRE_MESSAGE(in.good(), "cannot read ", k_vectors);
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') {
      expected.push_back(line);
    }
  }
  REQUIRE(expected.size() == lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CHECK(lines[i] == expected[i]);
  }
}

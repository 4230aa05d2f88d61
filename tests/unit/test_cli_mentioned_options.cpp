#include "cli/mentioned_options.hpp"

#include <doctest/doctest.h>
#include <vector>

using ratelimit::cli::MentionedOptions;

namespace {

MentionedOptions mentioned(std::vector<const char*> words) {
  words.insert(words.begin(), "ratelimit");
  return MentionedOptions(static_cast<int>(words.size()), words.data());
}

} // namespace

TEST_CASE("cli::MentionedOptions: the options a command line may name") {
  MentionedOptions given =
      mentioned({"--db", "x.db", "try", "k", "--rate=5/s", "-qE3", "--", "curl", "-v"});
  // Long names, alone or with their value after '='.
  CHECK(given.any_of("--db"));
  CHECK(given.any_of("-r,--rate"));
  CHECK_FALSE(given.any_of("--rates"));
  CHECK_FALSE(given.any_of("--store"));
  // Every letter of a word of short options, and of what follows it.
  CHECK(given.any_of("-q,--quiet"));
  CHECK(given.any_of("-E,--limited-exit-code"));
  CHECK(given.any_of("-3"));
  CHECK(given.any_of("-v,--verbose"));
  CHECK_FALSE(given.any_of("-a,--algorithm"));
  // Positionals are always declared.
  CHECK(given.any_of("key"));
  // The program's name is not a word of the command line.
  CHECK_FALSE(mentioned({"try"}).any_of("-r,--rate"));
}

TEST_CASE("cli::MentionedOptions: every option") {
  MentionedOptions every = MentionedOptions::every();
  CHECK(every.any_of("--db"));
  CHECK(every.any_of("-a,--algorithm"));
}

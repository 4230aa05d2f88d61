#include "cli/wrapped_command.hpp"

#include "cli/commands.hpp"
#include "cli/global_options.hpp"

#include <CLI/CLI.hpp>
#include <doctest/doctest.h>
#include <string>
#include <vector>

using namespace ratelimit;

namespace {

// `words` (after the program's name) as mark_wrapped_command returns them, joined by spaces,
// with the commands and options of the real command line set up: every one, or those `words`
// may name.
std::string marked_with(std::vector<const char*> words, bool only_mentioned) {
  cli::GlobalOptions global;
  CLI::App app("test", "ratelimit");
  words.insert(words.begin(), "ratelimit");
  int count = static_cast<int>(words.size());
  cli::MentionedOptions mentioned =
      only_mentioned ? cli::MentionedOptions(count, words.data()) : cli::MentionedOptions::every();
  cli::add_global_options(app, global, mentioned);
  for (const cli::Command& command : cli::k_commands) {
    command.setup(app, mentioned);
  }
  std::vector<const char*> args = cli::mark_wrapped_command(app, count, words.data());
  std::string text;
  for (std::size_t i = 1; i < args.size(); ++i) {
    text += (i > 1 ? " " : "") + std::string(args[i]);
  }
  return text;
}

// The same with every option and with the options mentioned, which must not differ.
std::string marked(const std::vector<const char*>& words) {
  std::string text = marked_with(words, false);
  CHECK(marked_with(words, true) == text);
  return text;
}

} // namespace

TEST_CASE("cli::mark_wrapped_command ends run's options at the first word after KEY") {
  CHECK(marked({"run", "k", "-r", "10/s", "grep", "-q", "root"}) ==
        "run k -r 10/s -- grep -q root");
  CHECK(marked({"run", "k", "-r", "10/s", "echo", "-c", "3", "hi"}) ==
        "run k -r 10/s -- echo -c 3 hi");
  CHECK(marked({"run", "-r", "5/s", "k", "-c", "2", "cmd"}) == "run -r 5/s k -c 2 -- cmd");
}

TEST_CASE("cli::mark_wrapped_command knows which options take a value") {
  // Global options after the command name, with their values.
  CHECK(marked({"run", "k", "--db", "x.db", "-E", "3", "-r", "1/s", "cmd"}) ==
        "run k --db x.db -E 3 -r 1/s -- cmd");
  CHECK(marked({"run", "k", "--json", "-q", "--no-wait", "-r", "1/s", "cmd"}) ==
        "run k --json -q --no-wait -r 1/s -- cmd");
  // Attached values and flags grouped in one word.
  CHECK(marked({"run", "k", "-r1/s", "--cost=2", "-qE3", "cmd", "-x"}) ==
        "run k -r1/s --cost=2 -qE3 -- cmd -x");
  CHECK(marked({"run", "k", "-qr", "1/s", "cmd"}) == "run k -qr 1/s -- cmd");
  // Global options before the command name; a value that is a command's name.
  CHECK(marked({"--db", "run", "run", "k", "-r", "1/s", "cmd"}) == "--db run run k -r 1/s -- cmd");
}

TEST_CASE("cli::mark_wrapped_command leaves alone what needs no mark") {
  CHECK(marked({"run", "k", "-r", "1/s", "--", "cmd", "-x"}) == "run k -r 1/s -- cmd -x");
  CHECK(marked({"run", "k", "-r", "1/s"}) == "run k -r 1/s");
  CHECK(marked({"run", "--", "k", "cmd"}) == "run -- k cmd");
  CHECK(marked({"try", "k", "-r", "1/s", "extra", "words"}) == "try k -r 1/s extra words");
  CHECK(marked({"--db", "run", "try", "k", "-r", "1/s", "x"}) == "--db run try k -r 1/s x");
  CHECK(marked({"status", "run", "k"}) == "status run k");
  // An unknown option is left for the parser to report.
  CHECK(marked({"run", "k", "--bogus", "cmd"}) == "run k --bogus -- cmd");
}

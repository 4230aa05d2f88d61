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
// with the commands of the real command line set up.
std::string marked(std::vector<const char*> words) {
  cli::GlobalOptions global;
  CLI::App app("test", "ratelimit");
  cli::add_global_options(app, global);
  for (const cli::Command& command : cli::k_commands) {
    command.setup(app);
  }
  words.insert(words.begin(), "ratelimit");
  std::vector<const char*> args =
      cli::mark_wrapped_command(app, static_cast<int>(words.size()), words.data());
  std::string text;
  for (std::size_t i = 1; i < args.size(); ++i) {
    text += (i > 1 ? " " : "") + std::string(args[i]);
  }
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

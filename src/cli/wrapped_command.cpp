#include "cli/wrapped_command.hpp"

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

namespace ratelimit::cli {

namespace {

// The option `name` (`--rate`, `-r`) of `command`, else of `app` (the global options,
// which may follow the command name).
const CLI::Option* find_option(const CLI::App* command, const CLI::App& app,
                               const std::string& name) {
  for (const CLI::App* where : {command, &app}) {
    if (where != nullptr) {
      if (const CLI::Option* option = where->get_option_no_throw(name)) {
        return option;
      }
    }
  }
  return nullptr;
}

bool takes_value(const CLI::Option* option) {
  return option != nullptr && option->get_items_expected_min() > 0;
}

// Whether CLI11 reads `word` as an option: `--name`, `-x`, but not `-` nor a negative
// number that no option is named after.
bool is_option(const CLI::App* command, const CLI::App& app, std::string_view word) {
  if (word.size() < 2 || word[0] != '-') {
    return false;
  }
  if (word[1] >= '0' && word[1] <= '9') {
    return find_option(command, app, std::string{'-', word[1]}) != nullptr;
  }
  return true;
}

// How many words the option `word` takes: 2 when its value is the next word, else 1 (a
// flag, `--name=value`, `-r10/s`, or several flags in one word, `-qv`). An unknown option
// takes one: CLI11 then reports it.
int option_words(const CLI::App* command, const CLI::App& app, std::string_view word) {
  if (word.starts_with("--")) {
    if (word.find('=') != std::string_view::npos) {
      return 1;
    }
    return takes_value(find_option(command, app, std::string(word))) ? 2 : 1;
  }
  for (std::size_t i = 1; i < word.size(); ++i) {
    if (takes_value(find_option(command, app, std::string{'-', word[i]}))) {
      return i + 1 == word.size() ? 2 : 1;
    }
  }
  return 1;
}

} // namespace

std::vector<const char*> mark_wrapped_command(const CLI::App& app, int argc,
                                              const char* const* argv) {
  std::vector<const char*> args(argv, argv + argc);
  const CLI::App* run = nullptr;
  int positionals = 0;
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (word == "--") {
      return args;
    }
    if (is_option(run, app, word)) {
      i += option_words(run, app, word) - 1;
      continue;
    }
    if (run == nullptr) {
      // The command's name: the first word that is neither an option nor its value.
      if (word != "run") {
        return args;
      }
      for (const CLI::App* command : app.get_subcommands({})) {
        if (command->get_name() == "run") {
          run = command;
        }
      }
      if (run == nullptr) {
        return args;
      }
      continue;
    }
    // KEY, then the command.
    if (++positionals == 2) {
      args.insert(args.begin() + i, "--");
      return args;
    }
  }
  return args;
}

} // namespace ratelimit::cli

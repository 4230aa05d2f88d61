#include "cli/main.hpp"

#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/global_options.hpp"
#include "cli/help_formatter.hpp"
#include "cli/report.hpp"
#include "cli/settings.hpp"
#include "cli/usage_error.hpp"
#include "cli/wrapped_command.hpp"
#include "store/store.hpp"
#include "store/store_url.hpp"
#include "util/key_text.hpp"
#include "util/near_miss.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace ratelimit::cli {

namespace {

constexpr const char* k_description =
    "Rate-limit shell commands. Invocations share per-key limits through a file-locked "
    "SQLite database, or across hosts through Redis.";

constexpr const char* k_examples =
    "Examples:\n"
    "  ratelimit run api -r 5/s --until-exit -- curl -s https://api.example.com/\n"
    "  ratelimit run backup -j 1 --no-wait -- /usr/local/bin/backup\n"
    "  ratelimit try api -r 10/s && echo granted\n"
    "See ratelimit COMMAND --help, and man ratelimit for the algorithms and exit statuses.";

// The end of `ratelimit --help`: the forms of a store URL, one a line, then the examples.
std::string main_help_footer() {
  // Listed as "A, B, C or D"; no form holds ", " or " or ".
  std::string forms(store::k_store_url_form);
  for (std::string_view separator : {", ", " or "}) {
    for (std::size_t at = forms.find(separator); at != std::string::npos;
         at = forms.find(separator, at)) {
      forms.replace(at, separator.size(), "\n  ");
    }
  }
  return "Store URLs (--store, $RATELIMIT_STORE):\n  " + forms + "\n\n" + k_examples;
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n') {
      c = ' ';
    }
  }
  while (!text.empty() && text.back() == ' ') {
    text.pop_back();
  }
  if (!text.empty()) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

int fail(int status, const std::string& message) {
  util::write_stderr(fmt::format("ratelimit: {}\n", one_line(message)));
  return status;
}

// Whether `app`, parsed or partly parsed, selects `run`.
bool selects_run(const CLI::App& app) {
  for (const CLI::App* command : app.get_subcommands({})) {
    if (command->count() > 0 && command->get_name() == "run") {
      return true;
    }
  }
  return false;
}

// The command the command line most likely names: the first argument that is a command's
// name, or null. A guess only (the argument could be the value of --db): a wrong guess fails
// to parse, and the command line is then parsed again with every command.
const Command* named_command(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    for (const Command& command : k_commands) {
      if (command.name == argv[i]) {
        return &command;
      }
    }
  }
  return nullptr;
}

std::optional<std::string> unknown_option_message(const CLI::App& app, const CLI::App* command,
                                                  const std::string& help);

// How an option is written, as --help shows it: `--rate N/PERIOD`, or the option alone for
// a flag. Searches the command given, then the global options.
std::string accepted_form(const CLI::App& app, const CLI::App* command, const std::string& name) {
  for (const CLI::App* where : {command, &app}) {
    const CLI::Option* option = where != nullptr ? where->get_option_no_throw(name) : nullptr;
    if (option == nullptr) {
      continue;
    }
    std::string value = option->get_option_text();
    if (value.empty() && option->get_type_size() != 0) {
      value = option->get_type_name();
    }
    return value.empty() ? name : name + " " + value;
  }
  return name;
}

// The words after KEY of `try` or `wait`, which run no command, as what to use instead; or
// nothing for another command, or when the first word left over is an option.
std::optional<std::string> command_given_message(const CLI::App& app, const CLI::App& command) {
  std::vector<std::string> words = command.remaining();
  std::vector<std::string> more = app.remaining();
  words.insert(words.end(), more.begin(), more.end());
  if (words.empty() || words.front().starts_with('-')) {
    return std::nullopt;
  }
  std::string given = util::printable_key(fmt::format("{}", fmt::join(words, " ")).substr(0, 200));
  if (command.get_name() == "wait") {
    return fmt::format("wait runs no command ({} follows KEY); to run one at its slot: "
                       "ratelimit run KEY [OPTIONS] [--] COMMAND [ARG...]",
                       given);
  }
  if (command.get_name() == "try") {
    return fmt::format("try runs no command ({} follows KEY); to run one if a slot is free "
                       "now: ratelimit run KEY --no-wait [OPTIONS] [--] COMMAND [ARG...], or "
                       "ratelimit try KEY [OPTIONS] && COMMAND",
                       given);
  }
  return std::nullopt;
}

// CLI11's message for `error` in our own words: lower case, naming what was wrong and the
// accepted form, then where to read more.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error) {
  std::vector<const CLI::App*> given = app.get_subcommands({});
  given.erase(
      std::remove_if(given.begin(), given.end(), [](const CLI::App* c) { return c->count() == 0; }),
      given.end());
  const CLI::App* command = given.empty() ? nullptr : given.front();
  std::string help = command == nullptr ? "ratelimit --help"
                                        : fmt::format("ratelimit {} --help", command->get_name());
  if (auto unknown = unknown_option_message(app, command, help)) {
    return *unknown;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr && command != nullptr) {
    if (auto hint = command_given_message(app, *command)) {
      return *hint;
    }
  }
  std::string text = error.what();
  std::string::size_type colon = text.find(": ");
  std::string name = colon == std::string::npos ? "" : text.substr(0, colon);
  std::string detail = colon == std::string::npos ? text : text.substr(colon + 2);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr && !name.empty()) {
    if (detail.find("missing") != std::string::npos) {
      return fmt::format("{}: a value is missing; expected {}; see {}", name,
                         accepted_form(app, command, name), help);
    }
    if (detail.find("At Most") != std::string::npos) {
      return fmt::format("{}: given more than once; expected {} once; see {}", name,
                         accepted_form(app, command, name), help);
    }
  }
  if ((dynamic_cast<const CLI::ValidationError*>(&error) != nullptr ||
       dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) &&
      !name.empty()) {
    return fmt::format("{}: {}; expected {}; see {}", name, one_line(detail),
                       accepted_form(app, command, name), help);
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    std::string::size_type is = text.find(" is required");
    if (is != std::string::npos && text.find(' ') == is) {
      std::string missing = text.substr(0, is);
      if (missing.front() != '-' && command != nullptr) {
        // A positional argument: the key.
        std::string upper = missing;
        std::transform(upper.begin(), upper.end(), upper.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        return fmt::format("a {} is required; expected ratelimit {} {} [OPTIONS]; see {}", upper,
                           command->get_name(), upper, help);
      }
      return fmt::format("{} is required; expected {}; see {}", missing,
                         accepted_form(app, command, missing), help);
    }
  }
  return fmt::format("{}; see {}", text, help);
}

// Every long name of the options of `where`: `--rate`, `--db`.
void add_long_names(const CLI::App& where, std::vector<std::string>& names) {
  for (const CLI::Option* option : where.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      names.push_back("--" + name);
    }
  }
}

// An option on the command line that neither the command nor the global options know, as
// a message with the near miss meant (`--rat` -> `--rate`), or nothing. CLI11 leaves such
// words unparsed, and may fail on something else first (a missing --rate, when --rat was
// meant): the misspelling is the error worth naming.
std::optional<std::string> unknown_option_message(const CLI::App& app, const CLI::App* command,
                                                  const std::string& help) {
  std::vector<std::string> unparsed = app.remaining();
  if (command != nullptr) {
    std::vector<std::string> own = command->remaining();
    unparsed.insert(unparsed.begin(), own.begin(), own.end());
  }
  for (const std::string& word : unparsed) {
    if (word.size() < 2 || word[0] != '-' || word == "--" ||
        std::isdigit(static_cast<unsigned char>(word[1]))) {
      continue;
    }
    std::string name = word.substr(0, word.find('='));
    bool known = (command != nullptr && command->get_option_no_throw(name) != nullptr) ||
                 app.get_option_no_throw(name) != nullptr;
    if (known) {
      continue;
    }
    std::string message = fmt::format("unknown option \"{}\"", name.substr(0, 64));
    if (name.starts_with("--")) {
      std::vector<std::string> names;
      if (command != nullptr) {
        add_long_names(*command, names);
      }
      add_long_names(app, names);
      if (auto nearest = util::near_miss(name, names)) {
        message += fmt::format("; did you mean \"{}\"?", *nearest);
      }
    }
    return fmt::format("{}; see {}", message, help);
  }
  return std::nullopt;
}

// Parses the command line with the command `only` and the options it may name (or every
// command and option when null), then runs the command it selects. Returns nothing, having run
// nothing, when a parse with `only` fails: the parse with everything then reports the error,
// help or version as usual. Sets `wrapping` when the command is `run`, before running it.
std::optional<int> parse_and_run(int argc, char** argv, const Command* only, bool& wrapping) {
  GlobalOptions global;
  CLI::App app(k_description, "ratelimit");
  app.set_version_flag("--version", "ratelimit " RATELIMIT_VERSION " (stores: sqlite, redis)");
  app.require_subcommand(1);
  MentionedOptions mentioned =
      only != nullptr ? MentionedOptions(argc, argv) : MentionedOptions::every();
  add_global_options(app, global, mentioned);
  std::vector<std::pair<const CLI::App*, CommandRun>> runs;
  for (const Command& command : k_commands) {
    if (only == nullptr || only == &command) {
      CommandRun run = command.setup(app, mentioned);
      runs.emplace_back(app.get_subcommands({}).back(), std::move(run));
    }
  }
  for (CLI::App* command : app.get_subcommands({})) {
    // Global options may follow the command name too.
    command->fallthrough();
  }
  std::vector<const char*> args = mark_wrapped_command(app, argc, argv);
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& error) {
    if (only != nullptr) {
      return std::nullopt;
    }
    wrapping = selects_run(app);
    if (dynamic_cast<const CLI::CallForHelp*>(&error) != nullptr ||
        dynamic_cast<const CLI::CallForAllHelp*>(&error) != nullptr ||
        dynamic_cast<const CLI::CallForVersion*>(&error) != nullptr) {
      // Set up only when shown: a decision does not pay for it. Each command has a footer of
      // its own.
      app.footer(main_help_footer());
      use_help_formatter(app, help_width());
      // Written as every output is, so that a failure to write it is told.
      std::ostringstream out;
      int status = app.exit(error, out, out);
      util::write_stdout(out.str());
      return status;
    }
    if (app.get_subcommands().empty() && !app.remaining().empty()) {
      std::vector<std::string> names;
      for (const CLI::App* command : app.get_subcommands({})) {
        names.push_back(command->get_name());
      }
      std::string word = app.remaining().front();
      std::string message = fmt::format("unknown command \"{}\"", word.substr(0, 64));
      if (word.starts_with("-")) {
        if (auto unknown = unknown_option_message(app, nullptr, "ratelimit --help")) {
          throw UsageError(*unknown);
        }
      } else if (auto nearest = util::near_miss(word, names)) {
        message += fmt::format("; did you mean \"{}\"?", *nearest);
      }
      throw UsageError(fmt::format("{}; expected one of {}", message, fmt::join(names, ", ")));
    }
    throw UsageError(parse_error_message(app, error));
  }
  const CLI::App* selected = app.get_subcommands().front();
  wrapping = selected->get_name() == "run";
  // What the options mean with the environment and the configuration files, resolved when
  // the command first needs it: the files are read, and the store named, only then.
  Environment environment = std::getenv;
  ConfigFiles config(named_config_file(global, environment));
  StoreOpener stores([&] {
    return resolve_store_settings(global, environment,
                                  [&]() -> const core::Result<Config>& { return config.read(); });
  });
  for (auto& [command, run] : runs) {
    if (command == selected) {
      return run(global.output, config, stores);
    }
  }
  throw UsageError("no command given; see ratelimit --help");
}

} // namespace

int main(int argc, char** argv) {
  if (!util::open_standard_descriptors()) {
    // Anything opened now could get descriptor 0, 1 or 2: better to open nothing.
    util::write_stderr("ratelimit: cannot open /dev/null on a closed standard descriptor\n");
    return k_exit_store;
  }
  // Under run, ratelimit's own failures take the status the wrappers (env, nice, timeout)
  // give theirs, apart from the command's statuses.
  bool wrapping = false;
  auto own = [&](int status) { return wrapping ? k_exit_wrapper_failure : status; };
  int status = 0;
  bool failed = false;
  try {
    // Setting up the options of every command costs more than a decision: set up only the
    // one named and the options the command line names, unless that fails.
    std::optional<int> ran = parse_and_run(argc, argv, named_command(argc, argv), wrapping);
    status = ran ? *ran : *parse_and_run(argc, argv, nullptr, wrapping);
  } catch (const UsageError& error) {
    status = fail(own(k_exit_usage), error.what());
    failed = true;
  } catch (const store::KeyConflict& error) {
    status = fail(own(k_exit_usage), error.what());
    failed = true;
  } catch (const store::UnsupportedRequest& error) {
    status = fail(own(k_exit_usage), error.what());
    failed = true;
  } catch (const store::StoreError& error) {
    status = fail(own(k_exit_store), error.what());
    failed = true;
  } catch (const OutputError&) {
    status = own(k_exit_output);
    failed = true;
  }
  if (!check_stdout() && !failed) {
    // The decision stands; what was to be told of it is lost, and the caller must know.
    status = own(k_exit_output);
  }
  return status;
}

} // namespace ratelimit::cli

#include "cli/main.hpp"

#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/usage_error.hpp"
#include "store/store.hpp"

#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ratelimit::cli {

namespace {

constexpr const char* k_description =
    "Rate-limit shell commands. Invocations share per-key limits through a file-locked "
    "SQLite database, or across hosts through Redis.";

constexpr const char* k_examples =
    "Examples:\n"
    "  ratelimit try api -r 10/s && curl https://api.example.com/\n"
    "  ratelimit run fetch -r 5/s -r 1000/h -- curl -sO https://api.example.com/report\n"
    "See ratelimit COMMAND --help, and man ratelimit for the algorithms and exit statuses.";

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
  fmt::print(stderr, "ratelimit: {}\n", one_line(message));
  return status;
}

} // namespace

int main(int argc, char** argv) {
  GlobalOptions global;
  int exit_status = k_exit_granted;
  CLI::App app(k_description, "ratelimit");
  app.set_version_flag("--version", "ratelimit " RATELIMIT_VERSION " (stores: sqlite, redis)");
  app.require_subcommand(1);
  app.footer(k_examples);
  add_global_options(app, global);
  setup_try(app, global, exit_status);
  setup_wait(app, global, exit_status);
  setup_run(app, global, exit_status);
  setup_simulate(app, global, exit_status);
  setup_pipe(app, global, exit_status);
  setup_status(app, global, exit_status);
  setup_reset(app, global, exit_status);
  setup_gc(app, global, exit_status);
  for (CLI::App* command : app.get_subcommands({})) {
    // Global options may follow the command name too.
    command->fallthrough();
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    if (app.get_subcommands().empty() && !app.remaining().empty()) {
      std::vector<std::string> names;
      for (const CLI::App* command : app.get_subcommands({})) {
        names.push_back(command->get_name());
      }
      return fail(k_exit_usage, fmt::format("unknown command \"{}\"; expected one of {}",
                                            app.remaining().front(), fmt::join(names, ", ")));
    }
    return fail(k_exit_usage, fmt::format("{}; see ratelimit --help", error.what()));
  } catch (const UsageError& error) {
    return fail(k_exit_usage, error.what());
  } catch (const store::KeyConflict& error) {
    return fail(k_exit_usage, error.what());
  } catch (const store::UnsupportedRequest& error) {
    return fail(k_exit_usage, error.what());
  } catch (const store::StoreError& error) {
    return fail(k_exit_store, error.what());
  }
  return exit_status;
}

} // namespace ratelimit::cli

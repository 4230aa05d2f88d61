#pragma once

#include "cli/global_options.hpp"

#include <CLI/CLI.hpp>

namespace ratelimit::cli {

// Each command adds its subcommand to `app`; when the command line selects it, its callback
// runs the command and stores the process exit status in `exit_status`.
void setup_try(CLI::App& app, const GlobalOptions& global, int& exit_status);
void setup_wait(CLI::App& app, const GlobalOptions& global, int& exit_status);
void setup_run(CLI::App& app, const GlobalOptions& global, int& exit_status);
void setup_simulate(CLI::App& app, const GlobalOptions& global, int& exit_status);
void setup_pipe(CLI::App& app, const GlobalOptions& global, int& exit_status);
void setup_status(CLI::App& app, const GlobalOptions& global, int& exit_status);
void setup_reset(CLI::App& app, const GlobalOptions& global, int& exit_status);
void setup_gc(CLI::App& app, const GlobalOptions& global, int& exit_status);

} // namespace ratelimit::cli

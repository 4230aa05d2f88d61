#pragma once

#include "cli/global_options.hpp"

#include <functional>
#include <string_view>

namespace ratelimit::cli {

// Runs a command whose options the command line has filled in; returns the exit status.
using CommandRun = std::function<int()>;

// Each command adds its subcommand and options to `app`, and returns what runs it once the
// command line is parsed and selects it.
CommandRun setup_try(CLI::App& app, const GlobalOptions& global);
CommandRun setup_wait(CLI::App& app, const GlobalOptions& global);
CommandRun setup_run(CLI::App& app, const GlobalOptions& global);
CommandRun setup_pause(CLI::App& app, const GlobalOptions& global);
CommandRun setup_simulate(CLI::App& app, const GlobalOptions& global);
CommandRun setup_pipe(CLI::App& app, const GlobalOptions& global);
CommandRun setup_status(CLI::App& app, const GlobalOptions& global);
CommandRun setup_reset(CLI::App& app, const GlobalOptions& global);
CommandRun setup_gc(CLI::App& app, const GlobalOptions& global);
CommandRun setup_limits(CLI::App& app, const GlobalOptions& global);
CommandRun setup_metrics(CLI::App& app, const GlobalOptions& global);
CommandRun setup_observe(CLI::App& app, const GlobalOptions& global);

struct Command {
  std::string_view name;
  CommandRun (*setup)(CLI::App& app, const GlobalOptions& global);
};

// Every command, in the order --help lists them.
inline constexpr Command k_commands[] = {
    {"try", setup_try},     {"wait", setup_wait},       {"run", setup_run},
    {"pause", setup_pause}, {"observe", setup_observe}, {"simulate", setup_simulate},
    {"pipe", setup_pipe},   {"status", setup_status},   {"reset", setup_reset},
    {"gc", setup_gc},       {"limits", setup_limits},   {"metrics", setup_metrics},
};

} // namespace ratelimit::cli

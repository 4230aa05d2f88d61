#pragma once

#include "cli/cli11_fwd.hpp"
#include "cli/config_file.hpp"
#include "cli/mentioned_options.hpp"
#include "cli/output_settings.hpp"
#include "cli/store_opener.hpp"

#include <functional>
#include <string_view>

namespace ratelimit::cli {

// Runs a command whose options the command line has filled in; returns the exit status. It
// takes what it needs of the invocation's settings: how to tell what it decided (`output`),
// the named limits of the configuration files (`config`), the store (`stores`), each read or
// resolved only when first used.
using CommandRun =
    std::function<int(const OutputSettings& output, ConfigFiles& config, StoreOpener& stores)>;

// Each command adds its subcommand and options to `app` (those of its options that the command
// line may name, or every one), and returns what runs it once the command line is parsed and
// selects it.
CommandRun setup_try(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_wait(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_run(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_pause(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_simulate(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_pipe(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_status(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_reset(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_gc(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_limits(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_metrics(CLI::App& app, const MentionedOptions& mentioned);
CommandRun setup_observe(CLI::App& app, const MentionedOptions& mentioned);

struct Command {
  std::string_view name;
  CommandRun (*setup)(CLI::App& app, const MentionedOptions& mentioned);
};

// Every command, in the order --help lists them.
inline constexpr Command k_commands[] = {
    {"try", setup_try},     {"wait", setup_wait},       {"run", setup_run},
    {"pause", setup_pause}, {"observe", setup_observe}, {"simulate", setup_simulate},
    {"pipe", setup_pipe},   {"status", setup_status},   {"reset", setup_reset},
    {"gc", setup_gc},       {"limits", setup_limits},   {"metrics", setup_metrics},
};

} // namespace ratelimit::cli

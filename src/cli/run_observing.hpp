#pragma once

#include "cli/cli11_fwd.hpp"
#include "cli/mentioned_options.hpp"
#include "cli/observe.hpp"
#include "cli/output_settings.hpp"
#include "cli/store_opener.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::cli {

// run --observe, as typed.
struct ObserveRunOptions {
  bool observe = false;
  std::optional<std::string> max_pause;
};

// Adds --observe and --max-pause to `run`.
void add_observe_run_options(CLI::App& run, ObserveRunOptions& options,
                             const MentionedOptions& mentioned);

// Checks --max-pause, which applies only with --observe, and returns it (0 without
// --observe). Throws UsageError.
core::Nanos check_observe_run_options(const ObserveRunOptions& options);

// Where the response head of `command` is to be read, and how it gets there: the file
// `curl --dump-header` names when the user gave one, else a private file of ours that a
// curl command is told of by `--dump-header` added to its arguments, and any command finds
// in $RATELIMIT_HEADERS.
struct HeadPlan {
  std::vector<std::string> command; // as it is to run
  std::string path;                 // where the head will be, empty when nowhere readable
  bool ours = false;                // the file is ours: removed after
  std::string problem;              // why nothing can be observed, when `path` is empty
};

// The plan for `command` with `private_path` as our file: the command's words with
// `--dump-header private_path` after a curl command's name (curl, or a path ending in
// /curl), unless it has -D/--dump-header of its own (as its own word, or at the end of a
// cluster of curl's short flags, `-sSD`, value attached or next): then that file is read and
// left, and standard output (-D -) cannot be read.
HeadPlan plan_head(std::vector<std::string> command, const std::string& private_path);

// How a command run as a child ended: its status, and under --observe whether its answer
// was 429 or 503 (`answer_status`, that status).
struct ChildRun {
  int status = 0;
  bool throttled = false;
  int answer_status = 0;
};

// Runs `command` (the slot is granted; signals as the caller left them for it) as a child
// (util::run_child, `tick` every `tick_ns`) with a private file (0600) for its response
// head, named in $RATELIMIT_HEADERS, and `--dump-header` added when it is curl; after it
// exits, observes the head for `key` as `ratelimit observe` does with `settings` (a store
// failure is then a warning; no head: only the grant is told its answer came), removes the
// file, and returns how it ended.
ChildRun run_observed(const std::vector<std::string>& command, StoreOpener& stores,
                      const OutputSettings& output, std::string_view key,
                      const ObserveSettings& settings, const std::function<void()>& tick = {},
                      std::int64_t tick_ns = 0);

} // namespace ratelimit::cli

#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/limit_options.hpp"
#include "cli/usage_error.hpp"
#include "store/store.hpp"
#include "util/json.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

namespace ratelimit::cli {

namespace {

struct ResetOptions {
  std::vector<std::string> keys;
  bool all = false;
};

int run_reset(const ResetOptions& options, bool json, StoreOpener& stores) {
  if (options.all == !options.keys.empty()) {
    throw UsageError(options.all ? "give keys or --all, not both"
                                 : "no key given; expected ratelimit reset KEY... or "
                                   "ratelimit reset --all");
  }
  for (const std::string& key : options.keys) {
    check_key(key);
  }
  auto store = stores.open_existing();
  std::size_t removed = store ? store->reset(options.keys, options.all) : 0;
  if (json) {
    util::JsonObject object;
    object.field("removed", static_cast<std::int64_t>(removed));
    util::write_stdout(object.str() + "\n");
  }
  return k_exit_granted;
}

} // namespace

CommandRun setup_reset(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  auto options = std::make_shared<ResetOptions>();
  CLI::App* command =
      app.add_subcommand("reset", "Forget keys, as if never used (unknown keys are no error)");
  command->footer("Example: ratelimit reset api; ratelimit reset --all");
  command->add_option("key", options->keys, "Keys to forget");
  command->add_flag("--all", options->all, "Forget every key");
  return [options](const OutputSettings& output, ConfigFiles&, StoreOpener& stores) {
    return run_reset(*options, output.json, stores);
  };
}

} // namespace ratelimit::cli

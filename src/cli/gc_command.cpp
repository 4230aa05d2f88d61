#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/report.hpp"
#include "store/store.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

namespace ratelimit::cli {

namespace {

struct GcOptions {
  bool verbose = false;
};

int run_gc(const GcOptions& options, bool json, StoreOpener& stores) {
  auto store = stores.open_existing();
  std::vector<std::string> removed;
  if (store) {
    removed = store->collect_garbage();
  }
  if (json) {
    std::string keys = "[";
    for (std::size_t i = 0; i < removed.size(); ++i) {
      keys += (i ? "," : "") + util::json_string(removed[i]);
    }
    util::JsonObject object;
    object.field("removed", static_cast<std::int64_t>(removed.size()))
        .raw_field("keys", keys + "]");
    util::write_stdout(object.str() + "\n");
  } else if (options.verbose) {
    // A report of what was done, like the messages: standard output stays for --json.
    std::string out;
    for (const std::string& key : removed) {
      out += fmt::format("ratelimit: removed {}\n", util::printable_key(key));
    }
    util::write_stderr(out);
  }
  return k_exit_granted;
}

} // namespace

CommandRun setup_gc(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  auto options = std::make_shared<GcOptions>();
  CLI::App* command = app.add_subcommand(
      "gc", "Forget every key whose state is a fresh key's (never changes a decision)");
  command->footer("Decisions also collect a few such keys now and then; gc does all of them.\n"
                  "Example: ratelimit gc -v");
  command->add_flag("-v,--verbose", options->verbose, "Print each key removed on stderr");
  return [options](const OutputSettings& output, ConfigFiles&, StoreOpener& stores) {
    return run_gc(*options, output.json, stores);
  };
}

} // namespace ratelimit::cli

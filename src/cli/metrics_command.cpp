// `metrics`: every key's counters and standing in the Prometheus text exposition format, for
// node_exporter's textfile collector.
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/metrics_exposition.hpp"
#include "cli/usage_error.hpp"
#include "store/store.hpp"
#include "util/atomic_file.hpp"
#include "util/errno_text.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <vector>

namespace ratelimit::cli {

namespace {

struct MetricsOptions {
  std::string output;
};

int run_metrics(const MetricsOptions& options, StoreOpener& stores) {
  // A database that does not exist holds no keys: it is not created to say so.
  auto store = stores.open_existing();
  std::vector<store::NamedCounters> counters;
  std::vector<store::KeyStatus> statuses;
  std::vector<store::RunEntry> entries;
  if (store) {
    counters = store->counters({});
    statuses = store->status({});
    entries = store->run_entries({});
  }
  std::string text = metrics_exposition(counters, statuses, entries);
  if (options.output.empty()) {
    util::write_stdout(text);
  } else if (int error = util::replace_file(options.output, text); error != 0) {
    util::write_stderr(fmt::format("ratelimit: cannot write \"{}\": {}\n", options.output,
                                   util::describe_errno(error)));
    throw OutputError();
  }
  // A damaged key is left out of the gauges, told on stderr and exit status 3, as `status`
  // does: one bad key hides nothing else.
  int exit_status = k_exit_granted;
  for (const store::KeyStatus& status : statuses) {
    if (!status.damage.empty()) {
      util::write_stderr(fmt::format("ratelimit: {}\n", status.damage));
      exit_status = k_exit_store;
    }
  }
  return exit_status;
}

} // namespace

CommandRun setup_metrics(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  auto options = std::make_shared<MetricsOptions>();
  CLI::App* command = app.add_subcommand(
      "metrics", "Print every key's counters and standing for Prometheus (text format)");
  command->footer("Exit status: 0, 3 when the store fails or a key's state is damaged (the "
                  "others are printed), 4 when the output cannot be written.\n"
                  "Example: ratelimit metrics --output "
                  "/var/lib/prometheus/node-exporter/ratelimit.prom");
  command
      ->add_option("-o,--output", options->output,
                   "Write to FILE, replaced atomically (a temporary file beside it, renamed "
                   "over it), for node_exporter's textfile collector")
      ->option_text("FILE")
      ->check(CLI::Validator(
          [](const std::string& value) {
            return value.empty() ? "an empty path names no file" : std::string();
          },
          "FILE"));
  return [options](const OutputSettings&, ConfigFiles&, StoreOpener& stores) {
    return run_metrics(*options, stores);
  };
}

} // namespace ratelimit::cli

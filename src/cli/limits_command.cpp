// `limits`: the named limits that the configuration files define, as `try NAME` would use
// them without -r.
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>

namespace ratelimit::cli {

namespace {

std::string json_strings(const std::vector<std::string>& values) {
  std::vector<std::string> quoted;
  for (const std::string& value : values) {
    quoted.push_back(util::json_string(value));
  }
  return fmt::format("[{}]", fmt::join(quoted, ","));
}

int run_limits(bool json, ConfigFiles& files) {
  const Config& config = files.config();
  std::string out;
  if (json) {
    std::vector<std::string> objects;
    for (const auto& [name, limit] : config.limits) {
      util::JsonObject object;
      object.field("name", name).raw_field("rates", json_strings(limit.rates));
      if (limit.algorithm) {
        object.field("algorithm", *limit.algorithm);
      }
      if (!limit.bursts.empty()) {
        object.raw_field("bursts", fmt::format("[{}]", fmt::join(limit.bursts, ",")));
      }
      if (limit.cost) {
        object.raw_field("cost", *limit.cost);
      }
      if (limit.timeout) {
        object.field("timeout", *limit.timeout);
      }
      object.field("defined_in", limit.defined_in);
      objects.push_back(object.str());
    }
    out = fmt::format("[{}]\n", fmt::join(objects, ","));
  } else {
    for (const auto& [name, limit] : config.limits) {
      std::string options = fmt::format("-r {}", fmt::join(limit.rates, " -r "));
      if (limit.algorithm) {
        options += " -a " + *limit.algorithm;
      }
      if (!limit.bursts.empty()) {
        options += fmt::format(" -b {}", fmt::join(limit.bursts, " -b "));
      }
      if (limit.cost) {
        options += " -c " + *limit.cost;
      }
      if (limit.timeout) {
        options += " -t " + *limit.timeout;
      }
      out += fmt::format("{}\t{}\t{}\n", util::shell_word_for_key(name), options, limit.defined_in);
    }
  }
  util::write_stdout(out);
  return k_exit_granted;
}

} // namespace

CommandRun setup_limits(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  CLI::App* command = app.add_subcommand(
      "limits", "List the named limits of the configuration files (--config), usable without -r");
  command->footer(
      "Example: ratelimit limits; ratelimit run github -- curl -s https://api.github.com/");
  return [](const OutputSettings& output, ConfigFiles& config, StoreOpener&) {
    return run_limits(output.json, config);
  };
}

} // namespace ratelimit::cli

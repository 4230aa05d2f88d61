#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/limit_options.hpp"
#include "cli/report.hpp"
#include "store/store.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"
#include "util/utf8.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <memory>

namespace ratelimit::cli {

namespace {

// A key asked for by name that the store does not hold.
constexpr int k_exit_unknown_key = 1;

struct StatusOptions {
  std::vector<std::string> keys;
};

// `10/s burst 20, 100/min burst 100`; the window algorithms have no burst.
std::string describe_limits(const core::KeyState& state) {
  if (state.limits.empty()) {
    return "-"; // only a pause: no call has named a limit yet
  }
  std::string text;
  for (const core::LimitState& limit : state.limits) {
    if (!text.empty()) {
      text += ", ";
    }
    text += core::format_rate(limit.limit.rate);
    if (core::takes_burst(state.algorithm)) {
      text += fmt::format(" burst {}", limit.limit.burst);
    }
  }
  return text;
}

// A learned policy as `status` shows it: `10/5s "default"`, `5000`.
std::string describe_policy(const core::LearnedPolicy& policy) {
  std::string text = policy.window > 0 ? core::format_rate({policy.quota, policy.window})
                                       : std::to_string(policy.quota);
  if (!policy.name.empty()) {
    text += " " + util::printable_key(policy.name);
  }
  return text;
}

std::string describe_policies(const core::KeyState& state) {
  std::string text;
  for (const core::LearnedPolicy& policy : state.server.policies) {
    text += (text.empty() ? "" : ", ") + describe_policy(policy);
  }
  return text.empty() ? "-" : text;
}

std::string policies_json(const std::vector<core::LearnedPolicy>& policies) {
  std::string json = "[";
  for (const core::LearnedPolicy& policy : policies) {
    util::JsonObject item;
    item.field("field", policy.field)
        .field("policy", policy.name)
        .field("quota", policy.quota)
        .raw_field("window_ms", policy.window > 0 ? json_millis(policy.window) : "null");
    json += (json.size() > 1 ? "," : "") + item.str();
  }
  return json + "]";
}

// Whether `status` shows what servers said of a key: a budget, a policy, a 429 or 503.
bool has_server_word(const store::KeyStatus& status) {
  return status.standing.budget || !status.state.server.policies.empty() ||
         status.counters.throttled > 0;
}

// The commands on a key's run slots (run -j, --until-exit), as a JSON array.
std::string runs_json(const std::vector<store::RunEntry>& entries, std::string_view key) {
  std::string json = "[";
  for (const store::RunEntry& entry : entries) {
    if (entry.key != key) {
      continue;
    }
    util::JsonObject item;
    item.field("state", entry.running ? "running" : "waiting")
        .field("pid", entry.pid)
        .field("host", entry.host)
        .field("cost", entry.cost)
        .field("since", utc_time(entry.since));
    json += (json.size() > 1 ? "," : "") + item.str();
  }
  return json + "]";
}

bool has_runs(const std::vector<store::RunEntry>& entries, std::string_view key) {
  return std::any_of(entries.begin(), entries.end(),
                     [&](const store::RunEntry& entry) { return entry.key == key; });
}

std::string json_status(const store::KeyStatus& status,
                        const std::vector<store::RunEntry>& entries) {
  const core::Decision& standing = status.standing;
  const core::KeyState& state = status.state;
  util::JsonObject object;
  object.field("key", status.key);
  if (state.limits.empty()) {
    object.raw_field("algorithm", "null"); // only a pause: no call has chosen one yet
  } else {
    object.field("algorithm", core::algorithm_name(state.algorithm));
  }
  if (!state.limits.empty()) {
    const core::Limit& binding = state.limits[standing.binding].limit;
    object.field("limit", binding.rate.count)
        .raw_field("period_ms", json_millis(binding.rate.period));
    if (core::takes_burst(state.algorithm)) {
      object.field("burst", binding.burst);
    }
  }
  object.field("remaining", standing.remaining)
      .field("retry_after_ms", core::ceil_millis(standing.wait))
      .field("reset_after_ms", core::ceil_millis(standing.reset_after))
      .field("last_use", utc_time(state.clock))
      .field("idle_ms", (standing.now - state.clock) / core::k_nanos_per_milli);
  add_pause_fields(object, standing);
  std::vector<core::Limit> limits;
  for (const core::LimitState& limit_state : state.limits) {
    limits.push_back(limit_state.limit);
  }
  object.raw_field("limits", limits_json(state.algorithm, limits, standing));
  object.raw_field("budget", budget_json(standing.budget, standing.now))
      .raw_field("policies", policies_json(state.server.policies));
  util::JsonObject counters;
  counters.field("granted", status.counters.granted)
      .field("limited", status.counters.limited)
      .raw_field("waited_ms", json_millis(status.counters.waited_us * core::k_nanos_per_micro))
      .field("throttled", status.counters.throttled);
  object.raw_field("counters", counters.str());
  if (has_runs(entries, status.key)) {
    object.raw_field("runs", runs_json(entries, status.key));
  }
  return object.str();
}

// Columns as wide as their widest cell, in terminal columns.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(rows.front().size());
  for (const auto& row : rows) {
    for (std::size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], util::display_width(row[column]));
    }
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t column = 0; column < row.size(); ++column) {
      out += row[column];
      if (column + 1 < row.size()) {
        out.append(widths[column] - util::display_width(row[column]) + 2, ' ');
      }
    }
    out += '\n';
  }
  util::write_stdout(out);
}

// The commands on run slots, one line each, before the keys' table.
void print_runs(const std::vector<store::RunEntry>& entries, core::Nanos now, bool more) {
  std::vector<std::vector<std::string>> rows{{"KEY", "COMMAND", "PID", "HOST", "COST", "SINCE"}};
  for (const store::RunEntry& entry : entries) {
    rows.push_back({util::printable_key(entry.key), entry.running ? "running" : "waiting",
                    std::to_string(entry.pid), util::printable_key(entry.host),
                    std::to_string(entry.cost),
                    core::format_duration(std::max<core::Nanos>(0, now - entry.since)) + " ago"});
  }
  print_table(rows);
  if (more) {
    util::write_stdout("\n");
  }
}

int run_status(const StatusOptions& options, const GlobalOptions& global) {
  for (const std::string& key : options.keys) {
    check_key(key);
  }
  // A database that does not exist holds no keys: it is not created to say so.
  auto store = open_existing_store(global);
  std::vector<store::KeyStatus> found;
  std::vector<store::RunEntry> entries;
  core::Nanos now = 0;
  if (store) {
    found = store->status(options.keys);
    entries = store->run_entries(options.keys);
    if (!entries.empty()) {
      now = store->now();
    }
  }
  // Keys that only commands on their run slots know of (run -j alone).
  std::vector<std::string> runs_only;
  for (const store::RunEntry& entry : entries) {
    bool known = std::any_of(found.begin(), found.end(), [&](const store::KeyStatus& status) {
      return status.key == entry.key;
    });
    if (!known && std::find(runs_only.begin(), runs_only.end(), entry.key) == runs_only.end()) {
      runs_only.push_back(entry.key);
    }
  }

  // In the order asked for; a key named twice is shown twice. A damaged key is one line on
  // stderr and exit status 3 once the others are shown: one bad key hides nothing else.
  std::vector<const store::KeyStatus*> shown;
  int exit_status = k_exit_granted;
  if (options.keys.empty()) {
    for (const store::KeyStatus& status : found) {
      shown.push_back(&status);
    }
  } else {
    for (const std::string& key : options.keys) {
      auto match = std::find_if(found.begin(), found.end(),
                                [&](const store::KeyStatus& status) { return status.key == key; });
      if (match == found.end() && has_runs(entries, key)) {
        continue;
      }
      if (match == found.end()) {
        util::write_stderr(fmt::format("ratelimit: unknown key {}: it has no state (never "
                                       "used, reset or collected as fresh)\n",
                                       util::printable_key(key)));
        exit_status = k_exit_unknown_key;
      } else {
        shown.push_back(&*match);
      }
    }
  }

  bool damaged = false;
  std::erase_if(shown, [&](const store::KeyStatus* status) {
    if (status->damage.empty()) {
      return false;
    }
    util::write_stderr(fmt::format("ratelimit: {}\n", status->damage));
    damaged = true;
    return true;
  });
  if (damaged) {
    exit_status = k_exit_store;
  }

  if (global.json) {
    std::string out = "[";
    for (std::size_t i = 0; i < shown.size(); ++i) {
      out += (i ? "," : "") + json_status(*shown[i], entries);
    }
    for (const std::string& key : runs_only) {
      util::JsonObject object;
      object.field("key", key).raw_field("runs", runs_json(entries, key));
      out += (out.size() > 1 ? "," : "") + object.str();
    }
    util::write_stdout(out + "]\n");
    return exit_status;
  }
  if (!entries.empty()) {
    print_runs(entries, now, !shown.empty());
  }
  if (shown.empty()) {
    return exit_status;
  }
  // The column of pauses only when a key shown is paused.
  bool paused = std::any_of(shown.begin(), shown.end(), [](const store::KeyStatus* status) {
    return status->standing.paused_until > status->standing.now;
  });
  std::vector<std::vector<std::string>> rows{{"KEY", "ALGORITHM", "LIMITS", "REMAINING",
                                              "RETRY AFTER", "RESET AFTER", "LAST USE", "GRANTED",
                                              "LIMITED", "WAITED"}};
  if (paused) {
    rows.front().push_back("PAUSED UNTIL");
  }
  // The columns of what servers said only when a key shown has some.
  bool server = std::any_of(shown.begin(), shown.end(), [](const store::KeyStatus* status) {
    return has_server_word(*status);
  });
  if (server) {
    for (const char* column : {"QUOTA LEFT", "QUOTA RESET", "POLICY", "429/503"}) {
      rows.front().push_back(column);
    }
  }
  for (const store::KeyStatus* status : shown) {
    const core::Decision& standing = status->standing;
    bool has_limits = !status->state.limits.empty();
    rows.push_back(
        {util::printable_key(status->key),
         has_limits ? std::string(core::algorithm_name(status->state.algorithm)) : "-",
         describe_limits(status->state), has_limits ? std::to_string(standing.remaining) : "-",
         core::format_duration(standing.wait), core::format_duration(standing.reset_after),
         core::format_duration(standing.now - status->state.clock) + " ago",
         std::to_string(status->counters.granted), std::to_string(status->counters.limited),
         core::format_duration(status->counters.waited_us * core::k_nanos_per_micro)});
    if (paused) {
      rows.back().push_back(standing.paused_until > standing.now ? utc_time(standing.paused_until)
                                                                 : std::string("-"));
    }
    if (server) {
      rows.back().push_back(standing.budget ? std::to_string(standing.budget->remaining) : "-");
      rows.back().push_back(standing.budget ? utc_time(standing.budget->reset) : "-");
      rows.back().push_back(describe_policies(status->state));
      rows.back().push_back(std::to_string(status->counters.throttled));
    }
  }
  print_table(rows);
  return exit_status;
}

} // namespace

CommandRun setup_status(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<StatusOptions>();
  CLI::App* command = app.add_subcommand(
      "status", "Show the state and counters of keys (all keys without KEY) without consuming "
                "anything");
  command->footer("Exit status: 0, 1 when a KEY named is unknown, 3 when a key's state is "
                  "damaged (the others are shown).\n"
                  "Example: ratelimit status api --json");
  command->add_option("key", options->keys, "Keys to show (default: every key)");
  return [options, &global] { return run_status(*options, global); };
}

} // namespace ratelimit::cli

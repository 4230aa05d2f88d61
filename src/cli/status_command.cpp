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
#include <map>
#include <memory>
#include <string_view>

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

std::string counters_json(const store::KeyCounters& counters) {
  util::JsonObject object;
  object.field("granted", counters.granted)
      .field("limited", counters.limited)
      .raw_field("waited_ms", json_millis(counters.waited_us * core::k_nanos_per_micro))
      .field("throttled", counters.throttled);
  return object.str();
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
      .raw_field("policies", policies_json(state.server.policies))
      .raw_field("adaptive", adaptive_json(adaptive_view(state, standing.now)));
  object.raw_field("counters", counters_json(status.counters));
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

// A key that has no state but counters or commands on its run slots (run -j, --until-exit
// alone, or a state gone since: collected as fresh, expired on Redis).
std::string json_stateless(const std::string& key, const store::KeyCounters& counters,
                           const std::vector<store::RunEntry>& entries) {
  util::JsonObject object;
  object.field("key", key).raw_field("algorithm", "null");
  object.raw_field("counters", counters_json(counters));
  if (has_runs(entries, key)) {
    object.raw_field("runs", runs_json(entries, key));
  }
  return object.str();
}

// What status shows of one key: its state when it has one, else its counters alone.
struct ShownKey {
  std::string key;
  const store::KeyStatus* status = nullptr;
  store::KeyCounters counters;
};

int run_status(const StatusOptions& options, bool json, StoreOpener& stores) {
  for (const std::string& key : options.keys) {
    check_key(key);
  }
  // A database that does not exist holds no keys: it is not created to say so.
  auto store = stores.open_existing();
  std::vector<store::KeyStatus> found;
  std::vector<store::NamedCounters> counters;
  std::vector<store::RunEntry> entries;
  core::Nanos now = 0;
  if (store) {
    found = store->status(options.keys);
    counters = store->counters(options.keys);
    entries = store->run_entries(options.keys);
    if (!entries.empty()) {
      now = store->now();
    }
  }
  // Every key the store knows of: by its state, its counters, or the commands on its slots;
  // by key, so that a database of many keys is looked through once.
  std::map<std::string_view, ShownKey> known;
  for (const store::RunEntry& entry : entries) {
    known.emplace(entry.key, ShownKey{entry.key, nullptr, {}});
  }
  for (const store::NamedCounters& item : counters) {
    known.insert_or_assign(item.key, ShownKey{item.key, nullptr, item.counters});
  }
  for (const store::KeyStatus& status : found) {
    known.insert_or_assign(status.key, ShownKey{status.key, &status, {}});
  }

  // In the order asked for; a key named twice is shown twice. A damaged key is one line on
  // stderr and exit status 3 once the others are shown: one bad key hides nothing else.
  std::vector<ShownKey> shown;
  int exit_status = k_exit_granted;
  if (options.keys.empty()) {
    for (const auto& [key, item] : known) {
      shown.push_back(item);
    }
  } else {
    for (const std::string& key : options.keys) {
      if (auto item = known.find(key); item != known.end()) {
        shown.push_back(item->second);
      } else {
        util::write_stderr(fmt::format("ratelimit: unknown key {}: nothing is known of it "
                                       "(never used, reset, or unused for 31 days)\n",
                                       util::printable_key(key)));
        exit_status = k_exit_unknown_key;
      }
    }
  }

  bool damaged = false;
  std::erase_if(shown, [&](const ShownKey& key) {
    if (key.status == nullptr || key.status->damage.empty()) {
      return false;
    }
    util::write_stderr(fmt::format("ratelimit: {}\n", key.status->damage));
    damaged = true;
    return true;
  });
  if (damaged) {
    exit_status = k_exit_store;
  }

  if (json) {
    std::string out = "[";
    for (const ShownKey& key : shown) {
      out += (out.size() > 1 ? "," : "") + (key.status
                                                ? json_status(*key.status, entries)
                                                : json_stateless(key.key, key.counters, entries));
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
  bool paused = std::any_of(shown.begin(), shown.end(), [](const ShownKey& key) {
    return key.status && key.status->standing.paused_until > key.status->standing.now;
  });
  std::vector<std::vector<std::string>> rows{{"KEY", "ALGORITHM", "LIMITS", "REMAINING",
                                              "RETRY AFTER", "RESET AFTER", "LAST USE", "GRANTED",
                                              "LIMITED", "WAITED"}};
  if (paused) {
    rows.front().push_back("PAUSED UNTIL");
  }
  // The columns of what servers said only when a key shown has some.
  bool server = std::any_of(shown.begin(), shown.end(), [](const ShownKey& key) {
    return key.status ? has_server_word(*key.status) : key.counters.throttled != 0;
  });
  if (server) {
    for (const char* column : {"QUOTA LEFT", "QUOTA RESET", "POLICY", "429/503"}) {
      rows.front().push_back(column);
    }
  }
  // The columns of adaptive rates only when a key shown has one.
  bool adaptive = std::any_of(shown.begin(), shown.end(), [](const ShownKey& key) {
    return key.status && adaptive_view(key.status->state, key.status->standing.now);
  });
  if (adaptive) {
    rows.front().push_back("RATE");
    rows.front().push_back("LAST CUT");
  }
  for (const ShownKey& key : shown) {
    if (key.status == nullptr) {
      rows.push_back({util::printable_key(key.key), "-", "-", "-", "-", "-", "-",
                      std::to_string(key.counters.granted), std::to_string(key.counters.limited),
                      core::format_duration(key.counters.waited_us * core::k_nanos_per_micro)});
      if (paused) {
        rows.back().push_back("-");
      }
      if (server) {
        for (const char* none : {"-", "-", "-"}) {
          rows.back().push_back(none);
        }
        rows.back().push_back(std::to_string(key.counters.throttled));
      }
      if (adaptive) {
        rows.back().push_back("-");
        rows.back().push_back("-");
      }
      continue;
    }
    const store::KeyStatus* status = key.status;
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
    if (adaptive) {
      auto view = adaptive_view(status->state, standing.now);
      rows.back().push_back(view ? per_second_text(view->micro_rate) : "-");
      std::string last_cut = "-";
      if (view && view->cut_at != 0) {
        last_cut =
            core::format_duration(std::max<core::Nanos>(0, standing.now - view->cut_at)) + " ago";
      }
      rows.back().push_back(last_cut);
    }
  }
  print_table(rows);
  return exit_status;
}

} // namespace

CommandRun setup_status(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  auto options = std::make_shared<StatusOptions>();
  CLI::App* command = app.add_subcommand(
      "status", "Show the state and counters of keys (all keys without KEY) without consuming "
                "anything");
  command->footer("Exit status: 0, 1 when a KEY named is unknown, 3 when a key's state is "
                  "damaged (the others are shown).\n"
                  "Example: ratelimit status api --json");
  command->add_option("key", options->keys, "Keys to show (default: every key)");
  return [options](const OutputSettings& output, ConfigFiles&, StoreOpener& stores) {
    return run_status(*options, output.json, stores);
  };
}

} // namespace ratelimit::cli

// The Prometheus text of `metrics`: the counters, then the gauges, one family each.
#include "cli/metrics_exposition.hpp"

#include "cli/report.hpp"
#include "util/prometheus_text.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace ratelimit::cli {

namespace {

// `micros` as seconds: `3`, `1.5`, `0.000001`.
std::string seconds_text(std::int64_t micros) {
  if (micros % 1'000'000 == 0) {
    return std::to_string(micros / 1'000'000);
  }
  std::string text = fmt::format("{}.{:06}", micros / 1'000'000, micros % 1'000'000);
  while (text.back() == '0') {
    text.pop_back();
  }
  return text;
}

// A gauge of a key's standing: one family, a sample for each key that has a state.
struct Gauge {
  const char* name;
  const char* help;
  std::string (*value)(const store::KeyStatus& status);
};

// The gauges of a key's state, in the order printed.
constexpr Gauge k_gauges[] = {
    {"ratelimit_remaining",
     "Requests of cost 1 the key would grant now: what its binding limit has left.",
     [](const store::KeyStatus& status) { return std::to_string(status.standing.remaining); }},
    // 0 rather than no sample when no pause runs: a series that comes and goes with each
    // pause would leave the time between pauses without a value.
    {"ratelimit_paused_seconds",
     "Seconds left of the key's pause (ratelimit pause), 0 when it is not paused.",
     [](const store::KeyStatus& status) {
       core::Nanos left =
           std::max<core::Nanos>(status.standing.paused_until - status.standing.now, 0);
       // Rounded up to the microsecond: a pause that still runs never reads 0.
       return seconds_text((left + 999) / 1000);
     }},
};

// The commands running on each key's run slots (run -j, --until-exit), by key: for every key
// with live commands (running or waiting), a state or counters, 0 when none runs. A key used
// only by run -j has counters and no state: its series stays while nothing runs.
std::map<std::string, std::int64_t>
running_commands(const std::vector<store::NamedCounters>& counters,
                 const std::vector<store::KeyStatus>& statuses,
                 const std::vector<store::RunEntry>& entries) {
  std::map<std::string, std::int64_t> running;
  for (const store::NamedCounters& key : counters) {
    running.emplace(key.key, 0);
  }
  for (const store::KeyStatus& status : statuses) {
    running.emplace(status.key, 0);
  }
  for (const store::RunEntry& entry : entries) {
    running[entry.key] += entry.running ? 1 : 0;
  }
  return running;
}

// The labels that name `key`. A label value carries UTF-8 only: a key that is not UTF-8 has
// its bytes that are not replaced by U+FFFD in `key`, and all its bytes in hexadecimal in
// `key_hex`, so that two keys never share one series.
class KeyLabels {
public:
  explicit KeyLabels(std::string_view key) : m_hex(util::is_utf8(key) ? "" : util::hex_bytes(key)) {
    m_labels.push_back({"key", key});
    if (!m_hex.empty()) {
      m_labels.push_back({"key_hex", m_hex});
    }
  }

  // These labels, then `name`="`value`".
  std::vector<util::PrometheusText::Label> with(std::string_view name,
                                                std::string_view value) const {
    std::vector<util::PrometheusText::Label> labels = m_labels;
    labels.push_back({name, value});
    return labels;
  }

  const std::vector<util::PrometheusText::Label>& labels() const { return m_labels; }

  // The labels point into `m_hex`: a copy would point into the original's.
  KeyLabels(const KeyLabels&) = delete;
  KeyLabels& operator=(const KeyLabels&) = delete;

private:
  std::string m_hex;
  std::vector<util::PrometheusText::Label> m_labels;
};

} // namespace

std::string metrics_exposition(const std::vector<store::NamedCounters>& counters,
                               const std::vector<store::KeyStatus>& statuses,
                               const std::vector<store::RunEntry>& entries) {
  util::PrometheusText text;
  text.family("ratelimit_requests_total", "counter",
              "Requests decided on a key, by result: granted, or limited (denied, refused "
              "beyond --timeout). Kept until the key is reset or unused for 31 days.");
  for (const store::NamedCounters& key : counters) {
    KeyLabels labels(key.key);
    text.sample("ratelimit_requests_total", labels.with("result", "granted"),
                std::to_string(key.counters.granted));
    text.sample("ratelimit_requests_total", labels.with("result", "limited"),
                std::to_string(key.counters.limited));
  }
  text.family("ratelimit_wait_seconds_total", "counter",
              "Time that wait and run callers granted a later slot slept for it, in seconds.");
  for (const store::NamedCounters& key : counters) {
    text.sample("ratelimit_wait_seconds_total", KeyLabels(key.key).labels(),
                seconds_text(key.counters.waited_us));
  }
  text.family("ratelimit_throttled_total", "counter",
              "Answers 429 or 503 observed for the key (observe, run --observe).");
  for (const store::NamedCounters& key : counters) {
    text.sample("ratelimit_throttled_total", KeyLabels(key.key).labels(),
                std::to_string(key.counters.throttled));
  }
  for (const Gauge& gauge : k_gauges) {
    text.family(gauge.name, "gauge", gauge.help);
    for (const store::KeyStatus& status : statuses) {
      if (status.damage.empty()) {
        text.sample(gauge.name, KeyLabels(status.key).labels(), gauge.value(status));
      }
    }
  }
  // What servers said: samples only for the keys that hold it (no budget is not a budget of
  // 0).
  text.family("ratelimit_server_remaining", "gauge",
              "What the key's server budget has left until its reset, as the server's answers "
              "said it (observe); no sample when no budget runs.");
  for (const store::KeyStatus& status : statuses) {
    if (status.damage.empty() && status.standing.budget) {
      text.sample("ratelimit_server_remaining", KeyLabels(status.key).labels(),
                  std::to_string(status.standing.budget->remaining));
    }
  }
  text.family("ratelimit_server_reset_seconds", "gauge",
              "Seconds until the reset of the key's server budget; no sample when none runs.");
  for (const store::KeyStatus& status : statuses) {
    if (status.damage.empty() && status.standing.budget) {
      core::Nanos left =
          std::max<core::Nanos>(status.standing.budget->reset - status.standing.now, 0);
      // Rounded up to the microsecond, as the pause's.
      text.sample("ratelimit_server_reset_seconds", KeyLabels(status.key).labels(),
                  seconds_text((left + 999) / 1000));
    }
  }
  // Adaptive rates: samples only for the keys that have one.
  struct AdaptiveFamily {
    const char* name;
    const char* help;
    std::optional<std::string> (*value)(const AdaptiveView&);
  };
  static constexpr AdaptiveFamily k_adaptive[] = {
      {"ratelimit_adaptive_rate",
       "The rate an adaptive key (--adaptive) grants at, learned from its answers, in requests "
       "per second; no sample for a key without one.",
       [](const AdaptiveView& view) -> std::optional<std::string> {
         return per_second_number(view.micro_rate);
       }},
      {"ratelimit_adaptive_ceiling",
       "The ceiling of an adaptive key's rate (the slowest of its -r rates), in requests per "
       "second.",
       [](const AdaptiveView& view) -> std::optional<std::string> {
         return per_second_number(core::micro_rate(view.ceiling));
       }},
      {"ratelimit_adaptive_last_cut_timestamp_seconds",
       "When an adaptive key's rate was last cut by a throttle (429, 503, --backoff-on), in "
       "seconds since the epoch; no sample before its first cut.",
       [](const AdaptiveView& view) -> std::optional<std::string> {
         if (view.cut_at == 0) {
           return std::nullopt;
         }
         return seconds_text(view.cut_at / 1000);
       }},
  };
  for (const AdaptiveFamily& family : k_adaptive) {
    text.family(family.name, "gauge", family.help);
    for (const store::KeyStatus& status : statuses) {
      auto view =
          status.damage.empty() ? adaptive_view(status.state, status.standing.now) : std::nullopt;
      if (auto value = view ? family.value(*view) : std::nullopt) {
        text.sample(family.name, KeyLabels(status.key).labels(), *value);
      }
    }
  }
  text.family("ratelimit_server_policy_quota", "gauge",
              "The quota of a policy the key's server named (RateLimit-Policy, "
              "X-RateLimit-Limit), by policy; window_seconds 0 when it named no window.");
  for (const store::KeyStatus& status : statuses) {
    if (!status.damage.empty()) {
      continue;
    }
    KeyLabels labels(status.key);
    for (const core::LearnedPolicy& policy : status.state.server.policies) {
      std::vector<util::PrometheusText::Label> named = labels.with("policy", policy.name);
      std::string window = seconds_text(policy.window / 1000);
      named.push_back({"window_seconds", window});
      text.sample("ratelimit_server_policy_quota", named, std::to_string(policy.quota));
    }
  }
  // Of the run slots, not of the state: a damaged state hides none.
  text.family("ratelimit_running", "gauge",
              "Commands running on the key's run slots (ratelimit run -j, --until-exit).");
  for (const auto& [key, count] : running_commands(counters, statuses, entries)) {
    text.sample("ratelimit_running", KeyLabels(key).labels(), std::to_string(count));
  }
  return text.str();
}

} // namespace ratelimit::cli

// `metrics`: every key's counters and standing in the Prometheus text exposition format, for
// node_exporter's textfile collector.
#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/usage_error.hpp"
#include "store/store.hpp"
#include "util/atomic_file.hpp"
#include "util/errno_text.hpp"
#include "util/prometheus_text.hpp"
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

// A gauge of a key's standing: one family, a sample for each key that has a state.
struct Gauge {
  const char* name;
  const char* help;
  std::string (*value)(const store::KeyStatus& status);
};

// The gauges, in the order printed. A gauge of a key's pauses or of its concurrency is one
// more entry here.
constexpr Gauge k_gauges[] = {
    {"ratelimit_remaining",
     "Requests of cost 1 the key would grant now: what its binding limit has left.",
     [](const store::KeyStatus& status) { return std::to_string(status.standing.remaining); }},
};

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

std::string exposition(const std::vector<store::NamedCounters>& counters,
                       const std::vector<store::KeyStatus>& statuses) {
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
  for (const Gauge& gauge : k_gauges) {
    text.family(gauge.name, "gauge", gauge.help);
    for (const store::KeyStatus& status : statuses) {
      if (status.damage.empty()) {
        text.sample(gauge.name, KeyLabels(status.key).labels(), gauge.value(status));
      }
    }
  }
  return text.str();
}

int run_metrics(const MetricsOptions& options, const GlobalOptions& global) {
  // A database that does not exist holds no keys: it is not created to say so.
  auto store = open_existing_store(global);
  std::vector<store::NamedCounters> counters;
  std::vector<store::KeyStatus> statuses;
  if (store) {
    counters = store->counters();
    statuses = store->status({});
  }
  std::string text = exposition(counters, statuses);
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

CommandRun setup_metrics(CLI::App& app, const GlobalOptions& global) {
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
  return [options, &global] { return run_metrics(*options, global); };
}

} // namespace ratelimit::cli

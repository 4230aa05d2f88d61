#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ratelimit::util {

// Text in the Prometheus text exposition format (version 0.0.4), the one node_exporter's
// textfile collector reads: families, each `# HELP` and `# TYPE` then its samples.
//
//   PrometheusText text;
//   text.family("jobs_total", "counter", "Jobs run.");
//   text.sample("jobs_total", {{"queue", "a\"b"}}, "12");
class PrometheusText {
public:
  struct Label {
    std::string_view name;
    std::string_view value; // any bytes; see `label_value`
  };

  // Starts the family `name` of `type` (counter, gauge, untyped) with `help`, escaped.
  // `name` and `type` are the caller's constants: valid names, never checked here.
  void family(std::string_view name, std::string_view type, std::string_view help);

  // One sample of `name` with `labels`, whose `value` is already a number in the format
  // (`12`, `0.25`, `-1`, `NaN`).
  void sample(std::string_view name, std::span<const Label> labels, std::string_view value);

  const std::string& str() const { return m_text; }

private:
  std::string m_text;
};

// `value` as a label value, quotes included: backslash, double quote and line feed escaped
// as the format asks, and each byte that is not UTF-8 replaced by U+FFFD (the format carries
// UTF-8 only).
std::string prometheus_label_value(std::string_view value);

// `text` in `# HELP` lines: backslash and line feed escaped.
std::string prometheus_help_text(std::string_view text);

// Whether `text` is UTF-8 throughout.
bool is_utf8(std::string_view text);

// `bytes` in lower-case hexadecimal, two digits a byte.
std::string hex_bytes(std::string_view bytes);

} // namespace ratelimit::util

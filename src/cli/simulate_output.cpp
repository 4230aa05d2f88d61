#include "cli/simulate_output.hpp"

#include "cli/report.hpp"
#include "core/adaptive_rate.hpp"
#include "util/json.hpp"
#include "util/standard_streams.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ratelimit::cli {

namespace {

using core::Nanos;

// Collects output and writes it in large pieces: a CSV of millions of rows stays fast and
// never sits whole in memory.
class Output {
public:
  Output() = default;
  ~Output() { flush(); }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  template <typename... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(m_buffer), format, std::forward<Args>(args)...);
    if (m_buffer.size() > (1 << 20)) {
      flush();
    }
  }

  // Pieces of text, written as they are: no format string to interpret (CSV rows).
  template <typename... Pieces>
  void append(const Pieces&... pieces) {
    (m_buffer.append(std::string_view(pieces)), ...);
    if (m_buffer.size() > (1 << 20)) {
      flush();
    }
  }

  void flush() {
    util::write_stdout(std::string_view(m_buffer.data(), m_buffer.size()));
    m_buffer.clear();
    util::flush_stdout();
  }

private:
  fmt::memory_buffer m_buffer;
};

// Milliseconds rounded to the microsecond, for people: `12.5`, `100`, `0.001`.
std::string table_millis(Nanos duration) {
  Nanos micros = (duration + core::k_nanos_per_micro / 2) / core::k_nanos_per_micro;
  return json_millis(micros * core::k_nanos_per_micro);
}

// A bucket width (1, 2, 2.5 or 5 times a power of ten nanoseconds) in the unit that shows
// it exactly: `250ms`, `25s`, `5us`.
std::string format_width(Nanos width) {
  if (width % core::k_nanos_per_milli != 0) {
    return width % core::k_nanos_per_micro == 0
               ? fmt::format("{}us", width / core::k_nanos_per_micro)
               : fmt::format("{}ns", width);
  }
  if (width < core::k_nanos_per_second) {
    return fmt::format("{}ms", width / core::k_nanos_per_milli);
  }
  return core::format_seconds(width);
}

std::int64_t series_max(const sim::Comparison& comparison) {
  std::int64_t max = 0;
  for (const sim::Run& run : comparison.runs) {
    for (std::int64_t value : run.admissions) {
      max = std::max(max, value);
    }
  }
  return max;
}

std::string describe_limits(const sim::Settings& settings) {
  std::string text = settings.limits.size() == 1 ? "limit " : "limits ";
  for (std::size_t i = 0; i < settings.limits.size(); ++i) {
    const core::Limit& limit = settings.limits[i];
    text += (i > 0 ? ", " : "") + core::format_rate(limit.rate);
    if (limit.burst != limit.rate.count) {
      text += fmt::format(" (burst {})", limit.burst);
    }
  }
  return text;
}

void print_table(Output& out, const SimulationReport& report) {
  const sim::Comparison& comparison = *report.comparison;
  const sim::Settings& settings = *report.settings;
  bool wait = settings.mode == sim::Mode::wait;
  std::int64_t total_cost = 0;
  for (const sim::Arrival& arrival : report.arrivals) {
    total_cost += arrival.cost;
  }
  std::string cost = total_cost == static_cast<std::int64_t>(report.arrivals.size())
                         ? ""
                         : fmt::format(" (cost {})", total_cost);
  out.print("{}: {} arrivals{} in {}, {} mode, {}\n", report.source, report.arrivals.size(), cost,
            core::format_seconds(report.span), sim::mode_name(settings.mode),
            describe_limits(settings));

  std::vector<std::string> headers = {"algorithm", "admitted", "denied", "peak_per_period"};
  if (wait) {
    headers.insert(headers.end(), {"max_wait_ms", "mean_wait_ms"});
  }
  headers.push_back("state_bytes");
  std::vector<std::vector<std::string>> rows;
  for (const sim::Run& run : comparison.runs) {
    std::vector<std::string> row = {std::string(core::algorithm_name(run.algorithm)),
                                    std::to_string(run.admitted), std::to_string(run.denied),
                                    std::to_string(run.peak_per_period)};
    if (wait) {
      row.insert(row.end(), {table_millis(run.max_wait), table_millis(run.mean_wait)});
    }
    row.push_back(std::to_string(run.state_bytes));
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths;
  for (std::size_t column = 0; column < headers.size(); ++column) {
    std::size_t width = headers[column].size();
    for (const auto& row : rows) {
      width = std::max(width, row[column].size());
    }
    widths.push_back(width);
  }
  auto print_row = [&](const std::vector<std::string>& cells, std::string_view last) {
    out.print("{:<{}}", cells[0], widths[0]);
    for (std::size_t column = 1; column < cells.size(); ++column) {
      out.print("  {:>{}}", cells[column], widths[column]);
    }
    out.print("  {}\n", last);
  };
  print_row(headers, fmt::format("admissions per {}", format_width(comparison.bucket_width)));
  std::int64_t max = series_max(comparison);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    print_row(rows[i], sim::sparkline(comparison.runs[i].admissions, max));
  }
  if (report.default_algorithm) {
    out.print("default without -a: {}{}\n", core::algorithm_name(*report.default_algorithm),
              *report.default_algorithm == core::Algorithm::sliding_log
                  ? " (exact: never more than N in any period)"
                  : " (-b given)");
  }
  out.print("recommendation: {}: {}\n", core::algorithm_name(comparison.recommendation.algorithm),
            comparison.recommendation.reason);
}

// json_millis() without a string on the heap: a CSV row has two of them, and there can be
// millions of rows.
class CsvMillis {
public:
  explicit CsvMillis(Nanos duration) {
    fmt::format_int whole(duration / core::k_nanos_per_milli);
    std::string_view digits(whole.data(), whole.size());
    digits.copy(m_text, digits.size());
    m_size = digits.size();
    // Negative times never reach here: arrivals start at 0 and grants follow them.
    Nanos fraction = duration % core::k_nanos_per_milli;
    if (fraction > 0) {
      m_text[m_size++] = '.';
      for (Nanos unit = core::k_nanos_per_milli / 10; fraction > 0; unit /= 10) {
        m_text[m_size++] = static_cast<char>('0' + fraction / unit);
        fraction %= unit;
      }
    }
  }
  std::string_view view() const { return {m_text, m_size}; }

private:
  char m_text[48];
  std::size_t m_size = 0;
};

void print_csv(Output& out, const SimulationReport& report) {
  out.print("algorithm,t_ms,cost,allowed,granted_at_ms\n");
  for (const sim::Run& run : report.comparison->runs) {
    std::string_view name = core::algorithm_name(run.algorithm);
    for (std::size_t i = 0; i < report.arrivals.size(); ++i) {
      const sim::Arrival& arrival = report.arrivals[i];
      Nanos granted = run.granted_at[i];
      if (granted == sim::k_denied) {
        out.append(name, ",", CsvMillis(arrival.at).view(), ",",
                   fmt::format_int(arrival.cost).c_str(), ",false,\n");
      } else {
        out.append(name, ",", CsvMillis(arrival.at).view(), ",",
                   fmt::format_int(arrival.cost).c_str(), ",true,", CsvMillis(granted).view(),
                   "\n");
      }
    }
  }
}

void print_json(Output& out, const SimulationReport& report) {
  const sim::Comparison& comparison = *report.comparison;
  std::int64_t max = series_max(comparison);
  out.print("[");
  for (std::size_t i = 0; i < comparison.runs.size(); ++i) {
    const sim::Run& run = comparison.runs[i];
    std::string admissions = fmt::format("[{}]", fmt::join(run.admissions, ","));
    util::JsonObject object;
    object.field("algorithm", core::algorithm_name(run.algorithm))
        .field("mode", sim::mode_name(report.settings->mode))
        .field("admitted", run.admitted)
        .field("denied", run.denied)
        .field("admitted_cost", run.admitted_cost)
        .field("peak_per_period", run.peak_per_period)
        .raw_field("max_wait_ms", json_millis(run.max_wait))
        .raw_field("mean_wait_ms", json_millis(run.mean_wait))
        .field("state_bytes", run.state_bytes)
        .field("recommended", run.algorithm == comparison.recommendation.algorithm)
        .field("default", run.algorithm == report.default_algorithm)
        .raw_field("bucket_ms", json_millis(comparison.bucket_width))
        .raw_field("admissions", admissions)
        .field("sparkline", sim::sparkline(run.admissions, max));
    out.print("{}\n{}", i > 0 ? "," : "", object.str());
  }
  out.print("\n]\n");
}

// Micro-requests per second as requests per second with two decimals, rounded down: `3.50`.
std::string per_second(std::int64_t micro) {
  return fmt::format("{}.{:02}", micro / core::k_micro_per_second,
                     micro % core::k_micro_per_second / 10'000);
}

std::string describe_server(const sim::AdaptiveSpec& spec) {
  std::string text;
  for (const sim::ServerLimit& limit : spec.server) {
    text += text.empty() ? core::format_rate(limit.rate)
                         : fmt::format(", {} from {}", core::format_rate(limit.rate),
                                       core::format_seconds(limit.from));
  }
  return text;
}

void print_adaptive_table(Output& out, const sim::AdaptiveSpec& spec,
                          const sim::AdaptiveReplay& replay) {
  out.print("adaptive rate under a ceiling of {}: {} workers, {} calls, answered in {} on "
            "average\n",
            core::format_rate(spec.ceiling), spec.workers, spec.calls,
            core::format_seconds(spec.latency));
  out.print("the server's secret limit: {} (fixed windows; 429 with Retry-After)\n\n",
            describe_server(spec));
  out.print("{:>8}  {:>9}  {:>5}  {:>5}\n", "time", "rate (/s)", "200", "429");
  for (const sim::AdaptiveSample& sample : replay.samples) {
    out.print("{:>8}  {:>9}  {:>5}  {:>5}\n", core::format_seconds(sample.at),
              per_second(sample.micro_rate), sample.succeeded, sample.throttled);
  }
  out.print("\n429 answers: {} ({}.{}% of {} calls); the most for one call: {}; cuts: {}\n",
            replay.throttled, replay.throttled * 100 / replay.calls,
            replay.throttled * 1000 / replay.calls % 10, replay.calls, replay.most_retries,
            replay.cuts);
  out.print("duration: {} (the secret limit allows {}: {}.{:02}x)\n",
            core::format_seconds(replay.duration), core::format_seconds(replay.least_duration),
            replay.duration / std::max<Nanos>(replay.least_duration, 1),
            replay.duration * 100 / std::max<Nanos>(replay.least_duration, 1) % 100);
  for (const sim::Convergence& raise : replay.raises) {
    std::string target =
        per_second(core::micro_rate(raise.limit.rate) / 10 * sim::k_converged_tenths);
    if (raise.after < 0) {
      out.print("after the raise to {} at {}: the rate never reached {}/s\n",
                core::format_rate(raise.limit.rate), core::format_seconds(raise.limit.from),
                target);
    } else {
      out.print("after the raise to {} at {}: the rate reached {}/s in {}\n",
                core::format_rate(raise.limit.rate), core::format_seconds(raise.limit.from), target,
                core::format_seconds(raise.after));
    }
  }
}

void print_adaptive_csv(Output& out, const sim::AdaptiveReplay& replay) {
  out.print("time_ms,rate_per_s,succeeded,throttled\n");
  for (const sim::AdaptiveSample& sample : replay.samples) {
    out.print("{},{},{},{}\n", json_millis(sample.at), per_second(sample.micro_rate),
              sample.succeeded, sample.throttled);
  }
}

void print_adaptive_json(Output& out, const sim::AdaptiveSpec& spec,
                         const sim::AdaptiveReplay& replay) {
  std::vector<std::string> rates;
  std::vector<std::int64_t> succeeded;
  std::vector<std::int64_t> throttled;
  for (const sim::AdaptiveSample& sample : replay.samples) {
    rates.push_back(per_second(sample.micro_rate));
    succeeded.push_back(sample.succeeded);
    throttled.push_back(sample.throttled);
  }
  std::vector<std::string> raises;
  for (const sim::Convergence& raise : replay.raises) {
    util::JsonObject object;
    object.field("limit", core::format_rate(raise.limit.rate))
        .raw_field("at_ms", json_millis(raise.limit.from))
        .raw_field("reached_ms", raise.after < 0 ? "null" : json_millis(raise.after));
    raises.push_back(object.str());
  }
  util::JsonObject object;
  object.field("ceiling", core::format_rate(spec.ceiling))
      .field("server", describe_server(spec))
      .field("workers", spec.workers)
      .field("calls", replay.calls)
      .field("throttled", replay.throttled)
      .field("most_retries", replay.most_retries)
      .field("cuts", replay.cuts)
      .raw_field("duration_ms", json_millis(replay.duration))
      .raw_field("least_duration_ms", json_millis(replay.least_duration))
      .raw_field("bucket_ms", json_millis(replay.bucket_width))
      .raw_field("rate_per_s", fmt::format("[{}]", fmt::join(rates, ",")))
      .raw_field("succeeded", fmt::format("[{}]", fmt::join(succeeded, ",")))
      .raw_field("throttled_per_bucket", fmt::format("[{}]", fmt::join(throttled, ",")))
      .raw_field("raises", fmt::format("[{}]", fmt::join(raises, ",")));
  out.print("{}\n", object.str());
}

} // namespace

void print_adaptive_replay(SimulateFormat format, const sim::AdaptiveSpec& spec,
                           const sim::AdaptiveReplay& replay) {
  Output output;
  switch (format) {
  case SimulateFormat::table:
    print_adaptive_table(output, spec, replay);
    break;
  case SimulateFormat::csv:
    print_adaptive_csv(output, replay);
    break;
  case SimulateFormat::json:
    print_adaptive_json(output, spec, replay);
    break;
  }
}

void print_simulation(SimulateFormat format, const SimulationReport& report) {
  Output output;
  switch (format) {
  case SimulateFormat::table:
    print_table(output, report);
    break;
  case SimulateFormat::csv:
    print_csv(output, report);
    break;
  case SimulateFormat::json:
    print_json(output, report);
    break;
  }
}

} // namespace ratelimit::cli

#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/limit_options.hpp"
#include "cli/report.hpp"
#include "cli/simulate_output.hpp"
#include "cli/usage_error.hpp"
#include "sim/profiles.hpp"
#include "sim/simulate.hpp"
#include "sim/trace.hpp"
#include "util/key_text.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <sys/stat.h>

namespace ratelimit::cli {

namespace {

struct SimulateOptions {
  std::vector<std::string> rates;
  std::vector<std::string> bursts;
  std::string algorithm = "all";
  std::string mode = "try";
  std::string trace;
  std::string profile;
  std::string duration;
  std::string load = "1";
  std::string seed = "1";
  std::string format;
  bool adaptive = false;
  std::vector<std::string> server_limits;
  std::string workers = "8";
  std::string calls = "300";
  std::string latency = "100ms";
};

// Which options the command line gave, as opposed to defaults.
struct Given {
  bool trace = false;
  bool profile = false;
  bool duration = false;
  bool load = false;
  bool seed = false;
  // Options that shape the algorithms' comparison, not an adaptive replay.
  bool comparison_only = false;
  bool server_limit = false;
  // --workers, --calls or --latency.
  bool replay_shape = false;
};

template <typename T>
T checked(core::Result<T> result, std::string_view prefix = {}) {
  if (!result) {
    throw UsageError(std::string(prefix) + result.error());
  }
  return *result;
}

std::vector<core::Algorithm> resolve_algorithms(const std::string& name) {
  if (name == "all") {
    return {std::begin(core::k_all_algorithms), std::end(core::k_all_algorithms)};
  }
  auto algorithm = core::parse_algorithm(name);
  if (!algorithm) {
    throw UsageError(algorithm.error() + ", or all");
  }
  return {*algorithm};
}

std::vector<core::Limit> resolve_limits(const SimulateOptions& options) {
  if (!options.bursts.empty() && options.bursts.size() != 1 &&
      options.bursts.size() != options.rates.size()) {
    throw UsageError(fmt::format("{} bursts for {} rates: give --burst once for all rates or "
                                 "once per --rate, in the same order",
                                 options.bursts.size(), options.rates.size()));
  }
  std::vector<core::Limit> limits;
  for (std::size_t i = 0; i < options.rates.size(); ++i) {
    core::Rate rate = checked(core::parse_rate(options.rates[i]));
    core::Limit limit{rate, rate.count};
    if (!options.bursts.empty()) {
      limit.burst = parse_positive("burst", options.bursts[options.bursts.size() == 1 ? 0 : i]);
    }
    limits.push_back(limit);
  }
  return limits;
}

// The whole of `path` (`-`: standard input).
std::string read_trace(const std::string& path) {
  std::FILE* file = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  auto fail = [&] {
    std::string why = std::strerror(errno);
    why[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(why[0])));
    return UsageError(fmt::format("cannot read trace {}: {}", util::printable_key(path), why));
  };
  if (file == nullptr) {
    throw fail();
  }
  std::string text;
  struct stat status {};
  if (fstat(fileno(file), &status) == 0 && S_ISREG(status.st_mode)) {
    text.reserve(static_cast<std::size_t>(status.st_size) + 1);
  }
  char buffer[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    text.append(buffer, got);
  }
  bool failed = std::ferror(file) != 0;
  if (file != stdin) {
    std::fclose(file);
  }
  if (failed) {
    throw fail();
  }
  return text;
}

// The format --format names; --json is json.
SimulateFormat resolve_format(const SimulateOptions& options, bool json) {
  std::string name = options.format.empty() ? (json ? "json" : "table") : options.format;
  if (json && name != "json") {
    throw UsageError(fmt::format("--json conflicts with --format {}; give one of them", name));
  }
  if (name == "table") {
    return SimulateFormat::table;
  }
  if (name == "csv") {
    return SimulateFormat::csv;
  }
  if (name == "json") {
    return SimulateFormat::json;
  }
  throw UsageError(
      fmt::format("invalid format \"{}\": expected table, csv or json", name.substr(0, 64)));
}

sim::Mode resolve_mode(const std::string& name) {
  if (name == "try") {
    return sim::Mode::try_now;
  }
  if (name == "wait") {
    return sim::Mode::wait;
  }
  throw UsageError(fmt::format("invalid mode \"{}\": expected try or wait", name.substr(0, 64)));
}

std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw UsageError(fmt::format("invalid seed \"{}\": expected a whole number from 0 to {}",
                                 text.substr(0, 64), UINT64_MAX));
  }
  return seed;
}

// The profile's arrivals, shaped by the first rate; `span` gets its duration.
std::vector<sim::Arrival> profile_arrivals(const SimulateOptions& options, const Given& given,
                                           const core::Limit& reference, core::Nanos& span) {
  sim::ProfileSpec spec;
  spec.profile = checked(sim::parse_profile(options.profile));
  spec.rate = reference.rate;
  if (given.seed && spec.profile != sim::Profile::poisson) {
    throw UsageError("--seed applies to --profile poisson only");
  }
  spec.seed = parse_seed(options.seed);
  spec.load = checked(sim::parse_load(options.load));
  spec.duration = std::min(10 * reference.rate.period, core::k_max_duration);
  if (given.duration) {
    spec.duration = checked(core::parse_duration(options.duration), "--duration: ");
    if (spec.duration == 0) {
      throw UsageError("invalid --duration 0: expected a duration above 0, e.g. 10s, 5m");
    }
  }
  span = spec.duration;
  return checked(sim::generate(spec));
}

// Throws UsageError when a limit cannot serve the algorithms, or a cost of `trace` (named
// `source`) could never be granted.
void check_simulation(const std::vector<core::Algorithm>& algorithms, const sim::Settings& settings,
                      bool burst_given, const sim::Trace* trace = nullptr,
                      std::string_view source = {}) {
  for (core::Algorithm algorithm : algorithms) {
    // With several algorithms, --burst is for the buckets and the windows go without it.
    bool burst_applies = burst_given && (algorithms.size() == 1 || core::takes_burst(algorithm));
    check_limit_options(algorithm, settings.limits, 1, burst_applies);
    if (!trace) {
      continue;
    }
    if (auto problem = core::check_limits(algorithm, settings.limits, trace->max_cost, false)) {
      throw UsageError(fmt::format("{}: line {}: {}", source, trace->max_cost_line, *problem));
    }
  }
}

// `N/PERIOD` (from the start) or `N/PERIOD@TIME` (from TIME on), in time order, one from 0.
std::vector<sim::ServerLimit> resolve_server_limits(const std::vector<std::string>& texts) {
  std::vector<sim::ServerLimit> limits;
  for (const std::string& text : texts) {
    std::size_t at = text.find('@');
    sim::ServerLimit limit;
    limit.rate = checked(core::parse_rate(text.substr(0, at)), "--server-limit: ");
    if (at != std::string::npos) {
      limit.from = checked(core::parse_duration(text.substr(at + 1)), "--server-limit: ");
    }
    limits.push_back(limit);
  }
  std::stable_sort(limits.begin(), limits.end(),
                   [](const auto& a, const auto& b) { return a.from < b.from; });
  for (std::size_t i = 1; i < limits.size(); ++i) {
    if (limits[i].from == limits[i - 1].from) {
      throw UsageError(fmt::format("--server-limit: two limits from {}; give each one time, "
                                   "e.g. --server-limit 5/s --server-limit 10/s@30s",
                                   core::format_seconds(limits[i].from)));
    }
  }
  if (limits.front().from != 0) {
    throw UsageError("--server-limit: no limit from the start; give one without @TIME, e.g. "
                     "--server-limit 5/s");
  }
  return limits;
}

// `simulate --adaptive`: workers through one adaptive key against a server's secret limit.
void run_adaptive_replay(const SimulateOptions& options, const Given& given, bool json) {
  if (!options.adaptive) {
    throw UsageError("--server-limit, --workers, --calls and --latency replay a server against "
                     "--adaptive; add --adaptive");
  }
  if (!given.server_limit) {
    throw UsageError("--adaptive replays a server with a secret limit; give it, e.g. "
                     "--server-limit 5/s");
  }
  if (given.comparison_only) {
    throw UsageError("--adaptive replays its own calls: --trace, --profile, --duration, --load, "
                     "--algorithm, --mode and --burst compare the algorithms without it");
  }
  if (options.rates.size() != 1) {
    throw UsageError("--adaptive takes one --rate, the ceiling of the adaptive rate");
  }
  SimulateFormat format = resolve_format(options, json);
  sim::AdaptiveSpec spec;
  spec.ceiling = checked(core::parse_rate(options.rates.front()));
  spec.server = resolve_server_limits(options.server_limits);
  spec.workers = parse_positive("--workers", options.workers);
  spec.calls = parse_positive("--calls", options.calls);
  if (spec.workers > 10'000 || spec.calls > 1'000'000) {
    throw UsageError("--adaptive replays at most 10000 workers and 1000000 calls");
  }
  spec.latency = checked(core::parse_duration(options.latency), "--latency: ");
  if (spec.latency > 3600 * core::k_nanos_per_second) {
    throw UsageError(fmt::format("invalid --latency {}: expected at most 1h", options.latency));
  }
  spec.seed = parse_seed(options.seed);
  print_adaptive_replay(format, spec, sim::replay_adaptive(spec));
}

void run_simulate(const SimulateOptions& options, const Given& given, bool json) {
  if (options.adaptive || given.server_limit || given.replay_shape) {
    run_adaptive_replay(options, given, json);
    return;
  }
  if (given.trace == given.profile) {
    throw UsageError("give exactly one of --trace FILE and --profile "
                     "steady|burst|boundary|poisson");
  }
  if (given.trace && (given.duration || given.load || given.seed)) {
    throw UsageError("--duration, --load and --seed shape a --profile; a --trace has its own "
                     "times");
  }
  SimulateFormat format = resolve_format(options, json);
  std::vector<core::Algorithm> algorithms = resolve_algorithms(options.algorithm);
  sim::Settings settings;
  settings.mode = resolve_mode(options.mode);
  settings.limits = resolve_limits(options);
  if (settings.limits.empty()) {
    throw UsageError("no rate given; expected -r N/PERIOD, e.g. -r 10/s");
  }
  // Checked before the trace is read: a bad limit says so even with a bad trace.
  check_simulation(algorithms, settings, !options.bursts.empty());

  SimulationReport report;
  std::vector<sim::Arrival> arrivals;
  if (given.trace) {
    report.source = options.trace == "-" ? std::string("trace on standard input")
                                         : "trace " + util::printable_key(options.trace);
    sim::Trace trace = checked(sim::parse_trace(read_trace(options.trace)), report.source + ": ");
    check_simulation(algorithms, settings, !options.bursts.empty(), &trace, report.source);
    arrivals = std::move(trace.arrivals);
    report.span = arrivals.back().at;
  } else {
    arrivals = profile_arrivals(options, given, settings.limits.front(), report.span);
    report.source = fmt::format("{} profile", options.profile);
  }
  if (auto problem = sim::check_backlog(arrivals, settings)) {
    throw UsageError(*problem);
  }
  sim::Comparison comparison = sim::compare(arrivals, algorithms, settings, report.span);
  report.arrivals = arrivals;
  report.settings = &settings;
  report.comparison = &comparison;
  if (options.algorithm == "all") {
    report.default_algorithm = core::default_algorithm(!options.bursts.empty());
  }
  print_simulation(format, report);
}

} // namespace

CommandRun setup_simulate(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* command = app.add_subcommand(
      "simulate", "Compare the algorithms on a trace or a traffic profile, on a virtual clock");
  command->footer("Example: ratelimit simulate -r 10/s --profile boundary\n"
                  "Trace lines: SECONDS [COST], seconds from the start; # starts a comment.\n"
                  "Profiles are shaped by the first --rate; nothing touches the database.");
  command
      ->add_option("-r,--rate", options->rates,
                   "N/PERIOD, e.g. 10/s, 100/min; repeat for several limits")
      ->option_text("N/PERIOD")
      ->required()
      ->allow_extra_args(false);
  command
      ->add_option("-b,--burst", options->bursts,
                   "Token-bucket capacity or leaky-bucket queue depth (default N); once for "
                   "all limits or once per --rate")
      ->option_text("N")
      ->allow_extra_args(false);
  command
      ->add_option("-a,--algorithm", options->algorithm,
                   "One algorithm, or all (default): token-bucket, leaky-bucket, fixed-window, "
                   "sliding-window, sliding-log")
      ->option_text("NAME|all");
  command
      ->add_option("--mode", options->mode,
                   "try (default): deny what is over the limit; wait: every request waits for "
                   "its slot")
      ->option_text("try|wait");
  command->add_option("--trace", options->trace, "Arrivals to replay; - reads standard input")
      ->option_text("FILE|-");
  command
      ->add_option("--profile", options->profile,
                   "Synthetic arrivals: steady, burst, boundary or poisson")
      ->option_text("NAME");
  command
      ->add_option("--duration", options->duration,
                   "Length of the profile (default 10 periods of the first rate)")
      ->option_text("DURATION");
  command
      ->add_option("--load", options->load,
                   "Profile arrivals as a multiple of the first rate (default 1)")
      ->option_text("X");
  command
      ->add_option("--seed", options->seed,
                   "Seed of the poisson profile or of --adaptive's latencies (default 1)")
      ->option_text("N");
  command->add_option("--format", options->format, "table (default), csv or json")
      ->option_text("table|csv|json");
  command->add_flag("--adaptive", options->adaptive,
                    "Replay workers through one adaptive key, -r its ceiling, against "
                    "--server-limit");
  command
      ->add_option("--server-limit", options->server_limits,
                   "The server's secret limit, from TIME on with @TIME; repeat to change it")
      ->option_text("N/PERIOD[@TIME]")
      ->allow_extra_args(false);
  command->add_option("--workers", options->workers, "With --adaptive: workers (default 8)")
      ->option_text("N");
  command->add_option("--calls", options->calls, "With --adaptive: calls to make (default 300)")
      ->option_text("N");
  command
      ->add_option("--latency", options->latency,
                   "With --adaptive: mean time from a call to its answer (default 100ms)")
      ->option_text("DURATION");
  return [options, command](const OutputSettings& output, ConfigFiles&, StoreOpener&) {
    Given given{command->count("--trace") > 0, command->count("--profile") > 0,
                command->count("--duration") > 0, command->count("--load") > 0,
                command->count("--seed") > 0};
    for (const char* option :
         {"--trace", "--profile", "--duration", "--load", "--algorithm", "--mode", "--burst"}) {
      given.comparison_only = given.comparison_only || command->count(option) > 0;
    }
    given.server_limit = command->count("--server-limit") > 0;
    given.replay_shape =
        command->count("--workers") + command->count("--calls") + command->count("--latency") > 0;
    run_simulate(*options, given, output.json);
    return k_exit_granted;
  };
}

} // namespace ratelimit::cli

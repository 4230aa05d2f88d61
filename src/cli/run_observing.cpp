#include "cli/run_observing.hpp"

#include "cli/observe.hpp"
#include "cli/report.hpp"
#include "cli/usage_error.hpp"
#include "util/child_process.hpp"
#include "util/clock.hpp"
#include "util/errno_text.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ratelimit::cli {

void add_observe_run_options(CLI::App& run, ObserveRunOptions& options,
                             const MentionedOptions& mentioned) {
  if (mentioned.any_of("--observe")) {
    run.add_flag("--observe", options.observe,
                 "Apply COMMAND's HTTP response head to KEY as observe does: curl gets "
                 "--dump-header; other commands write it to $RATELIMIT_HEADERS; with --retries "
                 "a 429 or 503 is retried after the pause the server asked for");
  }
  if (mentioned.any_of("--max-pause")) {
    run.add_option("--max-pause", options.max_pause,
                   "With --observe: the longest an answer may hold KEY (default 5min)")
        ->option_text("DURATION");
  }
}

core::Nanos check_observe_run_options(const ObserveRunOptions& options) {
  if (!options.observe) {
    if (options.max_pause) {
      throw UsageError("--max-pause applies only with --observe; expected ratelimit run KEY "
                       "--observe --max-pause DURATION -- COMMAND");
    }
    return 0;
  }
  return parse_max_pause(options.max_pause);
}

namespace {

// Whether `name` runs curl: `curl`, or a path to it.
bool is_curl(std::string_view name) {
  std::string_view base = name.substr(name.rfind('/') + 1);
  return base == "curl";
}

// curl's short options that take no value, which may come before D in one word (`-sSD`).
constexpr std::string_view k_curl_short_flags = "0123456789:#aBfgGIijJklLMnNOpqRsSvVZ";

// The file a curl command line dumps its head to (-D FILE, --dump-header FILE), if any.
std::optional<std::string> curl_dump_header(const std::vector<std::string>& command) {
  for (std::size_t i = 1; i < command.size(); ++i) {
    std::string_view word = command[i];
    std::optional<std::string> value;
    if (word == "--dump-header") {
      value = i + 1 < command.size() ? command[i + 1] : "";
    } else if (word.size() >= 2 && word[0] == '-' && word[1] != '-') {
      std::size_t d = 1;
      while (d < word.size() && k_curl_short_flags.find(word[d]) != std::string_view::npos) {
        ++d;
      }
      if (d < word.size() && word[d] == 'D') {
        bool attached = d + 1 < word.size();
        value = attached ? std::string(word.substr(d + 1))
                         : (i + 1 < command.size() ? command[i + 1] : "");
      }
    }
    if (value) {
      return value; // curl uses the last, but one is what a command line has
    }
  }
  return std::nullopt;
}

// A file of our own, mode 0600, in $TMPDIR (else /tmp), removed when this goes.
class PrivateFile {
public:
  PrivateFile() {
    const char* directory = std::getenv("TMPDIR");
    m_path = fmt::format("{}/ratelimit-headers.XXXXXX",
                         directory != nullptr && *directory != '\0' ? directory : "/tmp");
    int fd = ::mkostemp(m_path.data(), O_CLOEXEC);
    if (fd < 0) {
      throw UsageError(fmt::format("--observe: cannot make a file for the response head in {}: "
                                   "{}",
                                   m_path.substr(0, m_path.rfind('/')),
                                   util::describe_errno(errno)));
    }
    ::close(fd);
  }
  ~PrivateFile() { ::unlink(m_path.c_str()); }
  PrivateFile(const PrivateFile&) = delete;
  PrivateFile& operator=(const PrivateFile&) = delete;
  const std::string& path() const { return m_path; }

private:
  std::string m_path;
};

void warn(const OutputSettings& output, const std::string& message) {
  if (!output.quiet) {
    util::write_stderr(fmt::format("ratelimit: warning: --observe: {}\n", message));
  }
}

// The head at `plan.path` after the command, understood; nothing when there is none to read
// (the command failed before an answer, or wrote no head), with a warning when it is not a
// head.
std::optional<core::ServerAnswer> read_answer(const HeadPlan& plan, const OutputSettings& output) {
  if (plan.path.empty()) {
    warn(output, plan.problem);
    return std::nullopt;
  }
  core::AnswerInput input;
  HeadFile head;
  try {
    head = read_head_file(plan.path, util::realtime_nanos());
  } catch (const UsageError& error) {
    warn(output, fmt::format("nothing observed: {}", error.what()));
    return std::nullopt;
  }
  if (head.text.empty()) {
    return std::nullopt;
  }
  input.head = head.text;
  input.arrived = head.arrived;
  auto answer = core::understand_answer(input);
  if (!answer) {
    warn(output,
         fmt::format("nothing observed: {}: {}", util::printable_key(plan.path), answer.error()));
    return std::nullopt;
  }
  return *answer;
}

// Observes the head at `plan.path` for `key`; without one, only the grant, which awaits no
// answer any more.
Observed observe_head(const HeadPlan& plan, StoreOpener& stores, const OutputSettings& output,
                      std::string_view key, const ObserveSettings& settings) {
  std::optional<core::ServerAnswer> answer = read_answer(plan, output);
  if (!answer) {
    if (settings.grant) {
      forget_awaited_answer(stores, key, *settings.grant);
    }
    return {};
  }
  return observe_answer(stores, output, key, *answer, settings, ObserveAfter::command);
}

} // namespace

HeadPlan plan_head(std::vector<std::string> command, const std::string& private_path) {
  HeadPlan plan;
  plan.path = private_path;
  plan.ours = true;
  if (is_curl(command[0])) {
    if (std::optional<std::string> own = curl_dump_header(command)) {
      plan.ours = false;
      plan.path = *own;
      if (*own == "-" || own->empty()) {
        plan.path.clear();
        plan.problem = "curl writes its response head to standard output (-D -): nothing "
                       "observed; give -D FILE, or no -D";
      }
    } else {
      command.insert(command.begin() + 1, {"--dump-header", private_path});
    }
  }
  plan.command = std::move(command);
  return plan;
}

ChildRun run_observed(const std::vector<std::string>& command, StoreOpener& stores,
                      const OutputSettings& output, std::string_view key,
                      const ObserveSettings& settings, const std::function<void()>& tick,
                      std::int64_t tick_ns) {
  PrivateFile file;
  HeadPlan plan = plan_head(command, file.path());
  // A command that is not curl writes the head there; with curl's -D - it stays empty.
  ::setenv("RATELIMIT_HEADERS",
           plan.ours || plan.path.empty() ? file.path().c_str() : plan.path.c_str(), 1);
  // The command inherits standard output: what is buffered goes first.
  if (!check_stdout()) {
    throw OutputError();
  }
  ChildRun run;
  run.status = util::run_child(plan.command, tick, tick_ns);
  Observed observed = observe_head(plan, stores, output, key, settings);
  run.throttled = observed.throttled;
  run.answer_status = observed.status.value_or(0);
  return run;
}

} // namespace ratelimit::cli

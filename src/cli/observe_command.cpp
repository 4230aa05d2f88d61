#include "cli/commands.hpp"
#include "cli/exit_status.hpp"
#include "cli/limit_options.hpp"
#include "cli/observe.hpp"
#include "cli/usage_error.hpp"
#include "util/clock.hpp"
#include "util/key_text.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fmt/format.h>
#include <memory>

namespace ratelimit::cli {

namespace {

struct ObserveOptions {
  std::string key;
  std::optional<std::string> headers;
  std::optional<int> status;
  std::optional<std::string> retry_after;
  std::optional<std::string> max_pause;
  std::optional<std::string> grant;
};

// Parses --grant: the grant sequence `run` exported in $RATELIMIT_GRANT, a whole number from
// 0; empty (the variable unset) is none. Throws UsageError.
std::optional<std::int64_t> parse_grant(const std::optional<std::string>& text) {
  if (!text || text->empty()) {
    return std::nullopt;
  }
  bool digits = text->size() <= 16 && std::all_of(text->begin(), text->end(),
                                                  [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoll(*text) > core::k_max_grant_seq) {
    throw UsageError(fmt::format("invalid --grant {}: expected the number run exports in "
                                 "$RATELIMIT_GRANT, e.g. --grant \"$RATELIMIT_GRANT\"",
                                 util::printable_key(*text)));
  }
  return std::stoll(*text);
}

int run_observe(const ObserveOptions& options, const OutputSettings& output, StoreOpener& stores) {
  check_key(options.key);
  // An empty --retry-after is a field the answer did not have ("$(…)" of nothing).
  bool retry_after_given = options.retry_after && !options.retry_after->empty();
  if (!options.headers && !options.status && !retry_after_given) {
    throw UsageError("nothing to observe; expected ratelimit observe KEY --headers FILE (- for "
                     "standard input), --status CODE or --retry-after VALUE");
  }
  ObserveSettings settings;
  settings.max_pause = parse_max_pause(options.max_pause);
  settings.grant = parse_grant(options.grant);
  core::AnswerInput input;
  input.arrived = util::realtime_nanos();
  HeadFile head;
  if (options.headers) {
    head = read_head_file(*options.headers, input.arrived);
    input.head = head.text;
    input.arrived = head.arrived;
  }
  input.status = options.status;
  if (retry_after_given) {
    input.retry_after = *options.retry_after;
  }
  auto answer = core::understand_answer(input);
  if (!answer) {
    throw UsageError(
        options.headers && answer.error().starts_with("not an HTTP")
            ? fmt::format("--headers {}: {}", util::printable_key(*options.headers), answer.error())
            : "--retry-after: " + answer.error());
  }
  observe_answer(stores, output, options.key, *answer, settings, ObserveAfter::nothing);
  return k_exit_granted;
}

} // namespace

CommandRun setup_observe(CLI::App& app, const MentionedOptions& /*mentioned*/) {
  auto options = std::make_shared<ObserveOptions>();
  CLI::App* command = app.add_subcommand(
      "observe", "Apply what an HTTP server answered to KEY: Retry-After, 429 and 503 pause it; "
                 "where the quota stands limits it until the reset");
  command->footer(
      "The head is what curl -D writes; the last one counts after redirects. --json shows what "
      "was understood: Retry-After, RateLimit and X-RateLimit-* fields, and what was ignored.\n"
      "Example: curl -sD h.txt https://api.example.com/ && ratelimit observe api --headers "
      "h.txt");
  command->add_option("key", options->key, "The key the request was made for")->required();
  command
      ->add_option("--headers", options->headers,
                   "The response head, as curl -D writes it; - reads standard input")
      ->option_text("FILE");
  command
      ->add_option("--status", options->status,
                   "The HTTP status, instead of the head's (429 and 503 pause KEY)")
      ->option_text("CODE")
      ->check(CLI::Range(100, 599));
  command
      ->add_option("--retry-after", options->retry_after,
                   "Retry-After, instead of the head's: seconds, or an HTTP-date")
      ->option_text("VALUE");
  command
      ->add_option("--max-pause", options->max_pause,
                   "The longest an answer may hold KEY, by a pause or a spent quota (default "
                   "5min); a longer one is capped with a warning")
      ->option_text("DURATION");
  command
      ->add_option("--grant", options->grant,
                   "The request's grant, as run exports it in $RATELIMIT_GRANT: what KEY granted "
                   "since counts against the quota the answer reports")
      ->option_text("N");
  return [options](const OutputSettings& output, ConfigFiles&, StoreOpener& stores) {
    return run_observe(*options, output, stores);
  };
}

} // namespace ratelimit::cli

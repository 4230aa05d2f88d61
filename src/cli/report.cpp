#include "cli/report.hpp"

#include "core/adaptive_key.hpp"
#include "util/errno_text.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <array>
#include <cstdio>
#include <ctime>
#include <fmt/format.h>

namespace ratelimit::cli {

std::string describe_limit(core::Algorithm algorithm, const core::Limit& limit) {
  if (core::takes_burst(algorithm)) {
    return fmt::format("({} {}, burst {})", core::algorithm_name(algorithm),
                       core::format_rate(limit.rate), limit.burst);
  }
  return fmt::format("({} {})", core::algorithm_name(algorithm), core::format_rate(limit.rate));
}

bool check_stdout() {
  static bool reported = false;
  int error = util::stdout_error();
  if (error != 0 && !reported) {
    reported = true;
    util::write_stderr(
        fmt::format("ratelimit: cannot write standard output: {}\n", util::describe_errno(error)));
  }
  return error == 0;
}

std::string utc_time(core::Nanos time) {
  std::time_t seconds = static_cast<std::time_t>(core::floor_div(time, core::k_nanos_per_second));
  std::int64_t millis = (time - seconds * core::k_nanos_per_second) / core::k_nanos_per_milli;
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%S", &parts);
  return fmt::format("{}.{:03}Z", text.data(), millis);
}

void add_pause_fields(util::JsonObject& object, const core::Decision& decision) {
  if (decision.paused_until > decision.now) {
    object.field("paused_until", utc_time(decision.paused_until))
        .field("paused_until_ms", core::ceil_millis(decision.paused_until));
  }
}

std::string budget_json(const std::optional<core::BudgetStanding>& budget, core::Nanos now) {
  if (!budget) {
    return "null";
  }
  util::JsonObject object;
  object.field("remaining", budget->remaining)
      .field("reset", utc_time(budget->reset))
      .field("reset_after_ms", core::ceil_millis(budget->reset - now));
  return object.str();
}

std::optional<AdaptiveView> adaptive_view(const core::KeyState& state, core::Nanos now) {
  if (!state.server.adaptive || state.limits.empty()) {
    return std::nullopt;
  }
  const core::AdaptiveState& adaptive = *state.server.adaptive;
  AdaptiveView view;
  view.ceiling = core::adaptive_ceiling(state.limits);
  view.micro_rate = core::effective_micro_rate(adaptive, view.ceiling, now);
  if (adaptive.max_rate != 0) {
    view.cut_at = adaptive.cut_at;
    view.cut_from = adaptive.max_rate;
  }
  return view;
}

std::string per_second_number(std::int64_t micro_rate) {
  std::string text = fmt::format("{}.{:06}", micro_rate / core::k_micro_per_second,
                                 micro_rate % core::k_micro_per_second);
  while (text.back() == '0') {
    text.pop_back();
  }
  if (text.back() == '.') {
    text.pop_back();
  }
  return text;
}

std::string per_second_text(std::int64_t micro_rate) {
  double per_second = static_cast<double>(micro_rate) / core::k_micro_per_second;
  if (per_second >= 100) {
    return fmt::format("{}/s", micro_rate / core::k_micro_per_second);
  }
  return fmt::format("{:.3g}/s", per_second);
}

std::string adaptive_json(const std::optional<AdaptiveView>& adaptive) {
  if (!adaptive) {
    return "null";
  }
  util::JsonObject object;
  object.raw_field("rate_per_s", per_second_number(adaptive->micro_rate))
      .raw_field("ceiling_per_s", per_second_number(core::micro_rate(adaptive->ceiling)));
  if (adaptive->cut_at != 0) {
    object.field("last_cut", utc_time(adaptive->cut_at))
        .raw_field("cut_from_per_s", per_second_number(adaptive->cut_from));
  } else {
    object.raw_field("last_cut", "null").raw_field("cut_from_per_s", "null");
  }
  return object.str();
}

std::string json_millis(core::Nanos duration) {
  if (duration % core::k_nanos_per_milli == 0) {
    return std::to_string(duration / core::k_nanos_per_milli);
  }
  std::string text = fmt::format("{}.{:06}", duration / core::k_nanos_per_milli,
                                 duration % core::k_nanos_per_milli);
  while (text.back() == '0') {
    text.pop_back();
  }
  return text;
}

std::string limits_json(core::Algorithm algorithm, std::span<const core::Limit> limits,
                        const core::Decision& decision) {
  std::string json = "[";
  for (std::size_t i = 0; i < limits.size(); ++i) {
    const core::Limit& limit = limits[i];
    const core::LimitReport& limit_report = decision.limits[i];
    util::JsonObject item;
    item.field("limit", limit.rate.count).raw_field("period_ms", json_millis(limit.rate.period));
    if (core::takes_burst(algorithm)) {
      item.field("burst", limit.burst);
    }
    item.field("binding", i == decision.binding)
        .field("remaining", limit_report.remaining)
        .field("retry_after_ms", core::ceil_millis(limit_report.retry_after))
        .field("reset_after_ms", core::ceil_millis(limit_report.reset_after));
    if (i != 0) {
      json += ',';
    }
    json += item.str();
  }
  return json + "]";
}

std::string refusal_message(const LimitedRequest& request, const core::Decision& decision,
                            core::Nanos max_wait) {
  std::string limited =
      fmt::format("{} limited {}", util::printable_key(request.key),
                  describe_limit(decision.algorithm, request.limits[decision.binding]));
  std::string wait = core::format_duration(decision.wait);
  std::string beyond = decision.refusal == core::Refusal::timeout
                           ? fmt::format(", beyond --timeout {}", core::format_duration(max_wait))
                           : std::string();
  if (decision.budget_until > decision.now &&
      decision.budget_until - decision.now >= decision.wait) {
    // What the server said is left, not the limit, sets the time.
    return fmt::format("{} held by the server's quota: {} left until {}; next slot in {}{}",
                       util::printable_key(request.key),
                       decision.budget ? decision.budget->remaining : 0,
                       utc_time(decision.budget_until), wait, beyond);
  }
  if (decision.spaced_until > decision.now &&
      decision.spaced_until - decision.now >= decision.wait &&
      decision.refusal != core::Refusal::full && decision.refusal != core::Refusal::too_far) {
    // The learned rate, not the limit, sets the time.
    return fmt::format("{} limited (adaptive rate {}, learned under {} {}); next slot in {}{}",
                       util::printable_key(request.key), per_second_text(decision.adaptive_rate),
                       core::algorithm_name(decision.algorithm),
                       core::format_rate(core::adaptive_ceiling(request.limits)), wait, beyond);
  }
  if (decision.paused_until > decision.now &&
      decision.paused_until - decision.now >= decision.wait) {
    // The pause, not the limit, sets the time: say so, and until when.
    std::string paused = fmt::format("{} paused until {}", util::printable_key(request.key),
                                     utc_time(decision.paused_until));
    if (decision.refusal == core::Refusal::timeout) {
      return fmt::format("{}; next slot in {}, beyond --timeout {}", paused, wait,
                         core::format_duration(max_wait));
    }
    return fmt::format("{}; next slot in {}", paused, wait);
  }
  switch (decision.refusal) {
  case core::Refusal::full:
    return fmt::format("{}: its queue is full (-b sets its depth); room in {}", limited, wait);
  case core::Refusal::timeout:
    return fmt::format("{}; next slot in {}, beyond --timeout {}", limited, wait,
                       core::format_duration(max_wait));
  case core::Refusal::too_far:
    return fmt::format("{}: the next slot is too far away, past the latest time counted "
                       "(2116-02-20); reset the key or reserve less",
                       limited);
  case core::Refusal::none:
  case core::Refusal::later:
    break;
  }
  return fmt::format("{}; next slot in {}", limited, wait);
}

void report(const OutputSettings& output, const LimitedRequest& request,
            const core::Decision& decision, std::string_view local_fallback,
            std::optional<core::Nanos> waited, core::Nanos max_wait) {
  const core::Limit& binding = request.limits[decision.binding];
  if (!decision.allowed && !output.quiet) {
    util::write_stderr(
        fmt::format("ratelimit: {}\n", refusal_message(request, decision, max_wait)));
  }
  if (!output.json) {
    return;
  }
  std::int64_t retry_after = decision.allowed ? 0 : core::ceil_millis(decision.wait);
  util::JsonObject object;
  object.field("key", request.key)
      .field("allowed", decision.allowed)
      .field("algorithm", core::algorithm_name(decision.algorithm))
      .field("limit", binding.rate.count)
      .raw_field("period_ms", json_millis(binding.rate.period));
  if (core::takes_burst(decision.algorithm)) {
    object.field("burst", binding.burst);
  }
  object.field("cost", request.cost)
      .field("remaining", decision.remaining)
      .field("retry_after_ms", retry_after)
      .field("reset_after_ms", core::ceil_millis(decision.reset_after));
  add_pause_fields(object, decision);
  if (decision.budget) {
    object.raw_field("budget", budget_json(decision.budget, decision.now));
  }
  if (waited) {
    // Measured, so rounded to the nearest millisecond: a wait granted at once is 0.
    object.field("waited_ms", (*waited + core::k_nanos_per_milli / 2) / core::k_nanos_per_milli);
  }
  if (request.limits.size() > 1) {
    object.raw_field("limits", limits_json(decision.algorithm, request.limits, decision));
  }
  if (!local_fallback.empty()) {
    // Decided on the local database: why the store did not decide.
    object.field("store_error", local_fallback);
  }
  util::write_stdout(object.str() + "\n");
  util::flush_stdout();
}

} // namespace ratelimit::cli

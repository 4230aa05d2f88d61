#include "cli/observe.hpp"

#include "cli/report.hpp"
#include "cli/usage_error.hpp"
#include "core/rate.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"
#include "util/errno_text.hpp"
#include "util/json.hpp"
#include "util/key_text.hpp"
#include "util/standard_streams.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <fmt/format.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace ratelimit::cli {

core::Nanos parse_max_pause(const std::optional<std::string>& text) {
  auto duration = core::parse_duration(text.value_or(k_default_max_pause));
  if (!duration) {
    throw UsageError("--max-pause: " + duration.error());
  }
  if (*duration <= 0) {
    throw UsageError(fmt::format("invalid --max-pause \"{}\": expected a duration above 0, "
                                 "e.g. 5min, 1h",
                                 *text));
  }
  return *duration;
}

HeadFile read_head_file(const std::string& path, core::Nanos now) {
  bool standard_input = path == "-";
  int fd = standard_input ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw UsageError(fmt::format("cannot read --headers {}: {}", util::printable_key(path),
                                 util::describe_errno(errno)));
  }
  HeadFile head;
  head.arrived = now;
  struct stat status {};
  if (!standard_input && ::fstat(fd, &status) == 0 && S_ISREG(status.st_mode)) {
    core::Nanos modified =
        static_cast<core::Nanos>(status.st_mtim.tv_sec) * core::k_nanos_per_second +
        status.st_mtim.tv_nsec;
    head.arrived = std::min(modified, now);
  }
  std::string& text = head.text;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      int error = errno;
      if (!standard_input) {
        ::close(fd);
      }
      throw UsageError(fmt::format("cannot read --headers {}: {}", util::printable_key(path),
                                   util::describe_errno(error)));
    }
    if (n == 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > k_max_head_bytes) {
      if (!standard_input) {
        ::close(fd);
      }
      throw UsageError(fmt::format("--headers {}: larger than 1 MiB: not a response head; "
                                   "expected what curl -D writes",
                                   util::printable_key(path)));
    }
  }
  if (!standard_input) {
    ::close(fd);
  }
  return head;
}

namespace {

std::string optional_time_json(const std::optional<core::Nanos>& time) {
  return time ? util::json_string(utc_time(*time)) : "null";
}

// `items` as a JSON array of the objects `to_object` makes of them.
template <typename Item, typename ToObject>
std::string json_array(const std::vector<Item>& items, ToObject to_object) {
  std::string json = "[";
  for (const Item& item : items) {
    if (json.size() > 1) {
      json += ',';
    }
    util::JsonObject object;
    to_object(object, item);
    json += object.str();
  }
  return json + "]";
}

// What the answer said, as the fields of the --json object: the status and Retry-After
// first, then the arrays.
void add_answer_fields(util::JsonObject& object, const core::ServerAnswer& answer,
                       core::Nanos now) {
  object.raw_field("status", answer.status ? std::to_string(*answer.status) : "null")
      .field("heads", std::int64_t{answer.heads})
      .raw_field("retry_at", optional_time_json(answer.retry_at))
      .field("retry_after_ms", core::ceil_millis(answer.retry_at.value_or(now) - now));
}

void add_answer_arrays(util::JsonObject& object, const core::ServerAnswer& answer,
                       core::Nanos now) {
  object.raw_field(
      "standings",
      json_array(answer.standings, [&](util::JsonObject& item, const core::QuotaStanding& s) {
        item.field("field", s.field)
            .field("policy", s.policy)
            .field("remaining", s.remaining)
            .raw_field("reset", optional_time_json(s.reset))
            .raw_field("reset_after_ms",
                       s.reset ? std::to_string(core::ceil_millis(*s.reset - now)) : "null");
      }));
  object.raw_field("policies", json_array(answer.policies, [](util::JsonObject& item,
                                                              const core::QuotaPolicy& p) {
                     item.field("field", p.field)
                         .field("policy", p.policy)
                         .field("quota", p.quota)
                         .raw_field("window_ms", p.window ? json_millis(*p.window) : "null");
                   }));
  object.raw_field(
      "notes", json_array(answer.notes, [](util::JsonObject& item, const core::FieldNote& note) {
        item.field("field", note.field).field("value", note.value).field("note", note.note);
      }));
}

const char* cause_name(core::PauseCause cause) {
  switch (cause) {
  case core::PauseCause::retry_after:
    return "retry-after";
  case core::PauseCause::throttled:
    return "throttled";
  case core::PauseCause::none:
    break;
  }
  return "none";
}

// Applies `observation` to `key` where `after` says: on the store, else, after a command, on
// the local database or not at all, as --on-store-error says.
store::PauseStanding observe_on_store(StoreOpener& stores, std::string_view key,
                                      const core::Observation& observation, ObserveAfter after) {
  try {
    return stores.open()->observe(key, observation);
  } catch (const store::StoreError& error) {
    if (after == ObserveAfter::nothing) {
      throw;
    }
    if (stores.falls_back_locally(error)) {
      return stores.fall_back_locally(error)->observe(key, observation);
    }
    // The command ran: its status is what the caller waits for; the lost answer is told.
    util::write_stderr(fmt::format("ratelimit: warning: the answer for {} was not applied: {}\n",
                                   util::printable_key(key), error.what()));
    return {};
  }
}

// What of `answer` the key keeps: the standings whose reset is known and to come, at most
// `max_pause` away (`capped` says whether one that left nothing was cut), and the policies.
core::Observation observation_of(const core::ServerAnswer& answer, core::Nanos now,
                                 core::Nanos max_pause, bool& capped) {
  core::Observation observation;
  observation.throttled = core::is_throttled(answer);
  observation.answered = answer.status.has_value();
  for (const core::QuotaStanding& standing : answer.standings) {
    if (!standing.reset || *standing.reset <= now) {
      continue; // no reset known: shown, not kept (it would hold the key for ever)
    }
    core::Nanos after = *standing.reset - now;
    if (after > max_pause) {
      capped = capped || standing.remaining == 0;
      after = max_pause;
    }
    observation.standings.push_back({standing.remaining, after});
  }
  for (const core::QuotaPolicy& policy : answer.policies) {
    observation.policies.push_back(
        {policy.field, policy.policy, policy.quota, policy.window.value_or(0)});
  }
  return observation;
}

} // namespace

void report_command_outcome(StoreOpener& stores, std::string_view key, bool throttled) {
  core::Observation observation;
  observation.throttled = throttled;
  observation.answered = true;
  observe_on_store(stores, key, observation, ObserveAfter::command);
}

void forget_awaited_answer(StoreOpener& stores, std::string_view key, std::int64_t seq) {
  core::Observation observation;
  observation.grant = seq;
  observe_on_store(stores, key, observation, ObserveAfter::command);
}

Observed observe_answer(StoreOpener& stores, const OutputSettings& output, std::string_view key,
                        const core::ServerAnswer& answer, const ObserveSettings& settings,
                        ObserveAfter after) {
  core::Nanos now = util::realtime_nanos();
  std::random_device entropy;
  double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(entropy);
  Observed observed;
  observed.pause = core::answer_pause(answer, now, settings.max_pause, jitter, settings.backoff,
                                      settings.attempt);
  bool budget_capped = false;
  core::Observation observation = observation_of(answer, now, settings.max_pause, budget_capped);
  observed.throttled = observation.throttled;
  observed.status = answer.status;
  observation.pause = observed.pause.duration;
  observation.grant = settings.grant;
  store::PauseStanding standing;
  bool applies = observed.pause.cause != core::PauseCause::none || observation.throttled ||
                 !observation.standings.empty() || !observation.policies.empty() ||
                 observation.grant.has_value() || observation.answered;
  if (applies) {
    standing = observe_on_store(stores, key, observation, after);
  }
  if (!output.quiet) {
    std::string_view asker =
        observed.pause.cause == core::PauseCause::retry_after ? "Retry-After" : "the backoff";
    if (observed.pause.capped) {
      util::write_stderr(fmt::format("ratelimit: warning: {} asks for a pause of {}; {} paused "
                                     "for {} (--max-pause)\n",
                                     asker, core::format_duration(observed.pause.asked),
                                     util::printable_key(key),
                                     core::format_duration(settings.max_pause)));
    }
    if (budget_capped) {
      util::write_stderr(fmt::format("ratelimit: warning: the quota is spent until a reset more "
                                     "than {} away; {} held for {} (--max-pause)\n",
                                     core::format_duration(settings.max_pause),
                                     util::printable_key(key),
                                     core::format_duration(settings.max_pause)));
    }
  }
  if (output.json) {
    util::JsonObject object;
    object.field("key", key);
    add_answer_fields(object, answer, now);
    object.field("pause", cause_name(observed.pause.cause))
        .field("pause_ms", core::ceil_millis(observed.pause.duration))
        .field("capped", observed.pause.capped);
    core::Decision paused;
    paused.now = standing.now;
    paused.paused_until = standing.paused_until;
    add_pause_fields(object, paused);
    object.raw_field("grant", settings.grant ? std::to_string(*settings.grant) : "null")
        .raw_field("budget", budget_json(standing.budget, standing.now));
    add_answer_arrays(object, answer, now);
    util::write_stdout(object.str() + "\n");
    util::flush_stdout();
  }
  return observed;
}

} // namespace ratelimit::cli

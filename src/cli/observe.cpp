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

// Pauses `key` for `duration` where `after` says: on the store, else, after a command, on
// the local database or not at all, as --on-store-error says.
store::PauseStanding pause_for_answer(StoreOpener& stores, std::string_view key,
                                      core::Nanos duration, ObserveAfter after) {
  try {
    return stores.open()->pause(key, duration);
  } catch (const store::StoreError& error) {
    if (after == ObserveAfter::nothing) {
      throw;
    }
    if (stores.falls_back_locally(error)) {
      return stores.fall_back_locally(error)->pause(key, duration);
    }
    // The command ran: its status is what the caller waits for; the lost pause is told.
    util::write_stderr(fmt::format("ratelimit: warning: {} not paused as the answer asked: {}\n",
                                   util::printable_key(key), error.what()));
    return {};
  }
}

} // namespace

core::AnswerPause observe_answer(StoreOpener& stores, const OutputSettings& output,
                                 std::string_view key, const core::ServerAnswer& answer,
                                 core::Nanos max_pause, ObserveAfter after) {
  core::Nanos now = util::realtime_nanos();
  std::random_device entropy;
  double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(entropy);
  core::AnswerPause pause = core::answer_pause(answer, now, max_pause, jitter);
  store::PauseStanding standing;
  if (pause.cause != core::PauseCause::none) {
    standing = pause_for_answer(stores, key, pause.duration, after);
  }
  if (pause.capped && !output.quiet) {
    util::write_stderr(
        fmt::format("ratelimit: warning: {} asks for a pause of {}; {} paused for "
                    "{} (--max-pause)\n",
                    pause.cause == core::PauseCause::retry_after ? "Retry-After" : "the backoff",
                    core::format_duration(pause.asked), util::printable_key(key),
                    core::format_duration(max_pause)));
  }
  if (output.json) {
    util::JsonObject object;
    object.field("key", key);
    add_answer_fields(object, answer, now);
    object.field("pause", cause_name(pause.cause))
        .field("pause_ms", core::ceil_millis(pause.duration))
        .field("capped", pause.capped);
    core::Decision paused;
    paused.now = standing.now;
    paused.paused_until = standing.paused_until;
    add_pause_fields(object, paused);
    add_answer_arrays(object, answer, now);
    util::write_stdout(object.str() + "\n");
    util::flush_stdout();
  }
  return pause;
}

} // namespace ratelimit::cli

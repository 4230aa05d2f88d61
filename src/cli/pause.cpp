#include "cli/pause.hpp"

#include "cli/report.hpp"
#include "util/json.hpp"
#include "util/standard_streams.hpp"

namespace ratelimit::cli {

store::PauseStanding pause_key(bool json, store::Store& store, std::string_view key,
                               core::Nanos duration,
                               const std::function<void(util::JsonObject&)>& extra) {
  store::PauseStanding standing = store.pause(key, duration);
  if (json) {
    util::JsonObject object;
    object.field("key", key);
    core::Decision paused;
    paused.now = standing.now;
    paused.paused_until = standing.paused_until;
    if (standing.paused_until > standing.now) {
      add_pause_fields(object, paused);
    } else {
      // A pause of 0 (Retry-After: 0) holds nothing: there is no end to show.
      object.raw_field("paused_until", "null").field("paused_until_ms", std::int64_t{0});
    }
    object.field("pause_ms", core::ceil_millis(standing.paused_until - standing.now));
    if (extra) {
      extra(object);
    }
    util::write_stdout(object.str() + "\n");
    util::flush_stdout();
  }
  return standing;
}

} // namespace ratelimit::cli

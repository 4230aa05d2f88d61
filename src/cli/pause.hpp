#pragma once

#include "cli/global_options.hpp"
#include "store/store.hpp"

#include <functional>
#include <string_view>

namespace ratelimit::util {
class JsonObject;
}

namespace ratelimit::cli {

// Pauses `key` for `duration` in the store `global` names (created when missing), and
// prints the pause as one JSON object under --json: key, paused_until, paused_until_ms,
// pause_ms (until it ends). `extra`, when given, adds fields to that object. Throws
// StoreError.
store::PauseStanding pause_key(const GlobalOptions& global, std::string_view key,
                               core::Nanos duration,
                               const std::function<void(util::JsonObject&)>& extra = {});

// The same in `store`.
store::PauseStanding pause_key(const GlobalOptions& global, store::Store& store,
                               std::string_view key, core::Nanos duration,
                               const std::function<void(util::JsonObject&)>& extra = {});

} // namespace ratelimit::cli

#pragma once

#include "store/store.hpp"

#include <functional>
#include <string_view>

namespace ratelimit::util {
class JsonObject;
}

namespace ratelimit::cli {

// Pauses `key` for `duration` in `store`, and prints the pause as one JSON object when `json`
// (--json): key, paused_until, paused_until_ms, pause_ms (until it ends). `extra`, when given,
// adds fields to that object. Throws StoreError.
store::PauseStanding pause_key(bool json, store::Store& store, std::string_view key,
                               core::Nanos duration,
                               const std::function<void(util::JsonObject&)>& extra = {});

} // namespace ratelimit::cli

#pragma once

#include <string>
#include <string_view>

namespace ratelimit::store::redis {

// `text` with its first letter in lower case, to follow "what failed: " in a message.
std::string lower_first(std::string text);

// An error reply of Redis as a message: without the generic "ERR", the error code in lower
// case ("MOVED ..." -> "moved: ..."); a refused password names its cause and the URL form
// that carries one.
std::string error_text(std::string_view message);

// Whether an error reply says that the server cannot serve now, rather than that it refuses
// the command: LOADING, BUSY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN. Such a reply is an outage
// (StoreUnavailable).
bool is_unavailable_reply(std::string_view error);

} // namespace ratelimit::store::redis

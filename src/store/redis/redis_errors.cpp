#include "store/redis/redis_errors.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace ratelimit::store::redis {

namespace {

constexpr std::string_view k_redis_password_form = "redis://[USER]:PASSWORD@HOST[:PORT][/DB]";

} // namespace

std::string lower_first(std::string text) {
  if (!text.empty()) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

// An error reply as a message: without the generic "ERR", the error code in lower case
// ("MOVED ..." -> "moved: ..."). Refused authentication names its cause and the URL that
// carries a password: a server that wants one closes the connection of a client without
// it at its first long command ("protocol error: unauthenticated multibulk length").
std::string error_text(std::string_view message) {
  if (message.starts_with("NOAUTH") || message.find("unauthenticated") != std::string_view::npos) {
    return fmt::format("authentication required: the server wants a password; give it in "
                       "RATELIMIT_STORE_PASSWORD or in the store URL, {}",
                       k_redis_password_form);
  }
  if (message.starts_with("WRONGPASS") ||
      message.find("invalid password") != std::string_view::npos) {
    return fmt::format("wrong password or user: the server refused them; the store URL takes "
                       "{}, the password %-escaped",
                       k_redis_password_form);
  }
  if (message.starts_with("ERR ")) {
    message.remove_prefix(4);
  }
  std::size_t space = message.find(' ');
  std::string_view code = message.substr(0, space);
  bool is_code = space != std::string_view::npos && code.size() >= 2 &&
                 std::all_of(code.begin(), code.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!is_code) {
    return lower_first(std::string(message));
  }
  std::string text;
  for (char c : code) {
    text += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return text + ":" + std::string(message.substr(space));
}

bool is_unavailable_reply(std::string_view error) {
  // Inside a script, Redis 7 passes the code on; older servers wrap it ("... -LOADING ...").
  for (std::string_view code : {"LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"}) {
    if ((error.starts_with(code) && error.substr(code.size()).starts_with(' ')) ||
        error.find(fmt::format("-{} ", code)) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

} // namespace ratelimit::store::redis

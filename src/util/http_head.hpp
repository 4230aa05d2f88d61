#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::util {

// One field line of a response head: its name in lower case (names are case-insensitive),
// its value without the whitespace around it, obsolete line folding replaced by a space.
struct HeadField {
  std::string name;
  std::string value;
};

// The response head that counts in what `curl -D` (or `curl -i`) writes: the last one, when
// redirects, a `100 Continue` or a proxy's CONNECT answer came before it.
struct ResponseHead {
  int status = 0;                // 100..599
  std::vector<HeadField> fields; // in their order
  int heads = 0;                 // how many heads the text held
  int bad_lines = 0;             // lines of the last head that are not fields: ignored
};

// The last response head in `text`: heads start with a status line (`HTTP/1.1 429 Too Many
// Requests`, `HTTP/2 200`) and end at an empty line; lines end with CRLF or LF. What
// follows a head until the next status line (a body under `curl -i`, trailers) is skipped.
// Nothing when `text` holds no head at all (it is empty, or its first line that is not
// empty is not a status line), with the reason in `why`.
std::optional<ResponseHead> last_response_head(std::string_view text, std::string* why);

// The values of the field `name` (lower case) in `head`, one per field line, in order.
std::vector<std::string_view> field_values(const ResponseHead& head, std::string_view name);

} // namespace ratelimit::util

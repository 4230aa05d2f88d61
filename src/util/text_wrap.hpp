#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::util {

// `text` broken at spaces into lines of at most `width` terminal columns (see
// display_width), in order, without their line feeds. A line feed in `text` ends a line; a
// line that starts with spaces keeps them, and its continuation lines are indented as far.
// A word wider than a line has a line of its own, whole: it is never cut.
std::vector<std::string> wrap_text(std::string_view text, std::size_t width);

} // namespace ratelimit::util

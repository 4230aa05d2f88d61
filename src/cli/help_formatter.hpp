#pragma once

#include "cli/cli11_fwd.hpp"

#include <cstddef>

namespace ratelimit::cli {

// The width --help is written for: the terminal's on standard output, else 80 columns; at
// most 100, past which lines are hard to read, and at least 40.
std::size_t help_width();

// Makes `app` and its commands write their --help wrapped to `width` columns: `ratelimit
// --help` lists the commands, then the global options by group; a command's lists its
// arguments (optional ones in brackets) and its own options, and refers to `ratelimit
// --help` for the global ones, which it takes too.
void use_help_formatter(CLI::App& app, std::size_t width);

} // namespace ratelimit::cli

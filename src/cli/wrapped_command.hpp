#pragma once

#include "cli/cli11_fwd.hpp"

#include <vector>

namespace ratelimit::cli {

// The command line `argv` with `--` inserted before the command that `run` executes, when
// the user did not write one: the options of `run` end at the first word after KEY that is
// not an option, as those of env, nice and timeout end at the command, so that the
// command's own options (`grep -q`, `echo -c 3`) stay the command's. The options, and which
// of them take a value, are those `app` and its `run` command define; a command line that
// does not select `run` is returned as it is.
std::vector<const char*> mark_wrapped_command(const CLI::App& app, int argc,
                                              const char* const* argv);

} // namespace ratelimit::cli

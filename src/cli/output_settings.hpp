#pragma once

namespace ratelimit::cli {

// How a command tells what it decided: the global options --json, -q and -E.
struct OutputSettings {
  bool json = false;         // --json: one JSON object per decision on stdout
  bool quiet = false;        // -q: nothing on stderr for a denial
  int limited_exit_code = 1; // -E: the exit status of a denial
};

} // namespace ratelimit::cli

#pragma once

// CLI11 declared only. Each translation unit that includes <CLI/CLI.hpp> constructs its own
// copies of CLI11's validators at every process start, so only the files that add options
// include it.
namespace CLI {
class App;
} // namespace CLI

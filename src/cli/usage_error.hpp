#pragma once

#include <stdexcept>

namespace ratelimit::cli {

// Bad input on the command line: one line on stderr and exit status 2.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Standard output cannot be written; the line saying so is already on stderr. Exit status 4.
class OutputError {};

} // namespace ratelimit::cli

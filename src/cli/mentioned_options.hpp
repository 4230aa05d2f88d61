#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ratelimit::cli {

// The options a command line may name, so that its first parse declares only those: CLI11
// builds each option it is given (its names, strings, a function), and the global and limit
// options it is not given cost a decision more than everything else CLI11 does. A guess that
// errs only towards more options: a word `-qE5` names every short option q, E and 5, a value
// that looks like an option names that option. A first parse that fails (an unknown option,
// --help) is repeated with every option, which then words its message as always.
class MentionedOptions {
public:
  // Every option, whatever the command line says.
  static MentionedOptions every();
  MentionedOptions(int argc, const char* const* argv);

  // Whether the command line may name one of `names`, written as CLI11 takes them:
  // "-r,--rate", "--db". Positional names ("key") always count.
  bool any_of(std::string_view names) const;

private:
  MentionedOptions() = default;

  bool m_every = true;
  std::vector<std::string_view> m_long;
  std::string m_short;
};

} // namespace ratelimit::cli

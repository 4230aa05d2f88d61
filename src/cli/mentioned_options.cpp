#include "cli/mentioned_options.hpp"

#include <algorithm>

namespace ratelimit::cli {

MentionedOptions MentionedOptions::every() {
  return MentionedOptions();
}

MentionedOptions::MentionedOptions(int argc, const char* const* argv) : m_every(false) {
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (word.starts_with("--")) {
      m_long.push_back(word.substr(0, word.find('=')));
    } else if (word.starts_with('-')) {
      m_short.append(word.substr(1));
    }
  }
}

bool MentionedOptions::any_of(std::string_view names) const {
  if (m_every) {
    return true;
  }
  while (!names.empty()) {
    std::string_view name = names.substr(0, names.find(','));
    names.remove_prefix(std::min(names.size(), name.size() + 1));
    if (name.starts_with("--")) {
      if (std::find(m_long.begin(), m_long.end(), name) != m_long.end()) {
        return true;
      }
    } else if (name.starts_with('-')) {
      if (name.size() == 2 && m_short.find(name[1]) != std::string::npos) {
        return true;
      }
    } else {
      return true;
    }
  }
  return false;
}

} // namespace ratelimit::cli

#pragma once
// An environment variable set or unset for a scope, restored afterwards.
#include <cstdlib>
#include <optional>
#include <string>

namespace ratelimit::test {

class ScopedEnv {
public:
  // Sets `name` to `value`, or unsets it when `value` is null.
  ScopedEnv(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) {
      m_old = old;
    }
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (m_old) {
      setenv(m_name, m_old->c_str(), 1);
    } else {
      unsetenv(m_name);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* m_name;
  std::optional<std::string> m_old;
};

} // namespace ratelimit::test

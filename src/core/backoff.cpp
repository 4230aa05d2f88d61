#include "core/backoff.hpp"

#include <algorithm>

namespace ratelimit::core {

Nanos backoff_delay(Nanos base, Nanos cap, int n, double jitter) {
  Nanos delay = std::min(base, cap);
  for (int i = 0; i < n && delay < cap; ++i) {
    // Doubled without overflow: a delay past half the cap reaches the cap.
    delay = delay > cap / 2 ? cap : delay * 2;
  }
  jitter = std::clamp(jitter, 0.0, 1.0);
  Nanos extra = static_cast<Nanos>(static_cast<double>(delay / 2) * jitter);
  return extra > cap - delay ? cap : delay + extra;
}

} // namespace ratelimit::core

#pragma once

#include "store/store.hpp"

#include <string>

namespace ratelimit::store::redis {

// An I/O failure: whether the whole command had been written to the server first (then it
// may have run) or not (then it did not: a server only runs a command it read whole).
class ConnectionLost : public StoreUnavailable {
public:
  ConnectionLost(const std::string& message, bool delivered)
      : StoreUnavailable(message), m_delivered(delivered) {}
  bool delivered() const { return m_delivered; }

private:
  bool m_delivered;
};

} // namespace ratelimit::store::redis

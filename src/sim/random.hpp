#pragma once

#include <cstdint>

namespace ratelimit::sim {

// SplitMix64 (Steele, Lea and Flood, 2014): tiny, fast, and the same sequence on every
// machine, which the standard library's distributions do not promise.
class SplitMix64 {
public:
  explicit SplitMix64(std::uint64_t seed) : m_state(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), from the top 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  std::uint64_t m_state;
};

} // namespace ratelimit::sim

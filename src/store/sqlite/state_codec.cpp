#include "store/sqlite/state_codec.hpp"

#include "core/rules.hpp"

#include <cstdint>
#include <limits>

namespace ratelimit::store::sqlite {

namespace {

constexpr std::size_t k_fields = 6;
constexpr std::size_t k_record_size = k_fields * 8;

void put(std::string& out, std::int64_t value) {
  auto bits = static_cast<std::uint64_t>(value);
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
}

std::int64_t get(std::string_view bytes, std::size_t offset) {
  std::uint64_t bits = 0;
  for (int i = 7; i >= 0; --i) {
    bits = (bits << 8) | static_cast<unsigned char>(bytes[offset + static_cast<std::size_t>(i)]);
  }
  return static_cast<std::int64_t>(bits);
}

} // namespace

namespace {

void put_limit(std::string& out, const core::LimitState& state, std::int64_t sign) {
  put(out, sign * state.limit.rate.count);
  put(out, state.limit.rate.period);
  put(out, state.limit.burst);
  for (std::int64_t slot : state.slots) {
    put(out, slot);
  }
}

} // namespace

std::string encode_limits(const std::vector<core::LimitState>& limits,
                          const std::vector<core::LimitState>& remembered,
                          std::optional<std::int64_t> granted) {
  std::string out;
  out.reserve(8 + (limits.size() + remembered.size()) * k_record_size);
  if (granted) {
    put(out, *granted);
  }
  for (const auto& state : limits) {
    put_limit(out, state, 1);
  }
  for (const auto& state : remembered) {
    put_limit(out, state, -1);
  }
  return out;
}

std::string encode_limits(const core::KeyState& state) {
  std::optional<std::int64_t> granted;
  if (core::rules_for(state.algorithm).counts_granted()) {
    granted = state.granted;
  }
  return encode_limits(state.limits, state.remembered, granted);
}

std::optional<StoredLimits> decode_limits(std::string_view bytes) {
  StoredLimits stored;
  std::size_t first = 0;
  if (bytes.size() % k_record_size == 8) {
    stored.granted = get(bytes, 0);
    first = 8;
  } else if (bytes.size() % k_record_size != 0) {
    return std::nullopt;
  }
  for (std::size_t offset = first; offset < bytes.size(); offset += k_record_size) {
    core::LimitState state;
    std::int64_t count = get(bytes, offset);
    state.limit.rate.count =
        count < 0 && count != std::numeric_limits<std::int64_t>::min() ? -count : count;
    state.limit.rate.period = get(bytes, offset + 8);
    state.limit.burst = get(bytes, offset + 16);
    for (std::size_t slot = 0; slot < 3; ++slot) {
      state.slots[slot] = get(bytes, offset + 24 + slot * 8);
    }
    // Only what parse_rate can produce: the algorithms' arithmetic relies on these bounds.
    if (state.limit.rate.count < 1 || state.limit.rate.count > core::k_max_count ||
        state.limit.rate.period < state.limit.rate.count ||
        state.limit.rate.period > core::k_max_duration || state.limit.burst < 1) {
      return std::nullopt;
    }
    if (count > 0 && !stored.remembered.empty()) {
      return std::nullopt; // the last call's limits come first
    }
    (count > 0 ? stored.limits : stored.remembered).push_back(state);
  }
  return stored;
}

} // namespace ratelimit::store::sqlite

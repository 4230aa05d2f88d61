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

namespace {

// Reads int64 and padded strings from the front of `bytes`, failing once anything is short.
class Reader {
public:
  explicit Reader(std::string_view bytes) : m_bytes(bytes) {}

  std::optional<std::int64_t> number() {
    if (m_bytes.size() < 8) {
      return std::nullopt;
    }
    std::int64_t value = get(m_bytes, 0);
    m_bytes.remove_prefix(8);
    return value;
  }

  // A count of at most `most` items.
  std::optional<std::size_t> count(std::size_t most) {
    auto value = number();
    if (!value || *value < 0 || static_cast<std::uint64_t>(*value) > most) {
      return std::nullopt;
    }
    return static_cast<std::size_t>(*value);
  }

  std::optional<std::string> text(std::size_t most) {
    auto size = count(most);
    if (!size) {
      return std::nullopt;
    }
    std::size_t padded = (*size + 7) / 8 * 8;
    if (m_bytes.size() < padded ||
        m_bytes.substr(*size, padded - *size).find_first_not_of('\0') != std::string_view::npos) {
      return std::nullopt; // the padding is zeros, as encode_server_word writes it
    }
    std::string value(m_bytes.substr(0, *size));
    m_bytes.remove_prefix(padded);
    return value;
  }

  bool done() const { return m_bytes.empty(); }

private:
  std::string_view m_bytes;
};

void put_text(std::string& out, const std::string& text) {
  put(out, static_cast<std::int64_t>(text.size()));
  out += text;
  out.append((8 - text.size() % 8) % 8, '\0');
}

} // namespace

std::string encode_server_word(const core::ServerWord& word) {
  std::string out;
  if (word.grant_seq == 0 && word.budget.empty() && word.awaited.empty() && word.policies.empty() &&
      !word.adaptive) {
    return out;
  }
  put(out, word.grant_seq);
  if (word.budget.empty() && word.awaited.empty() && word.policies.empty() &&
      word.answered_at == 0 && word.answer_latency == 0 && !word.adaptive) {
    return out; // the sequence alone: what every key that granted keeps
  }
  put(out, word.answered_at);
  put(out, word.answer_latency);
  put(out, static_cast<std::int64_t>(word.budget.size()));
  for (const core::BudgetEntry& entry : word.budget) {
    put(out, entry.ceiling);
    put(out, entry.reset);
  }
  put(out, static_cast<std::int64_t>(word.awaited.size()));
  for (const core::AwaitedAnswer& awaited : word.awaited) {
    put(out, awaited.seq);
    put(out, awaited.cost);
    put(out, awaited.at);
    put(out, awaited.until);
  }
  put(out, static_cast<std::int64_t>(word.policies.size()));
  for (const core::LearnedPolicy& policy : word.policies) {
    put(out, policy.quota);
    put(out, policy.window);
    put_text(out, policy.field);
    put_text(out, policy.name);
  }
  if (const auto& adaptive = word.adaptive) {
    for (std::int64_t value : {adaptive->max_rate, adaptive->cut_at, adaptive->successes,
                               adaptive->measured_from, adaptive->clock, adaptive->next_slot}) {
      put(out, value);
    }
  }
  return out;
}

std::optional<core::ServerWord> decode_server_word(std::string_view bytes) {
  core::ServerWord word;
  if (bytes.empty()) {
    return word;
  }
  Reader read(bytes);
  auto grant_seq = read.number();
  if (grant_seq && read.done()) {
    word.grant_seq = *grant_seq;
    return word.grant_seq > 0 && core::within_bounds(word) ? std::optional(word) : std::nullopt;
  }
  auto answered_at = grant_seq ? read.number() : std::nullopt;
  auto answer_latency = answered_at ? read.number() : std::nullopt;
  auto entries = answer_latency ? read.count(core::k_max_budget_entries) : std::nullopt;
  if (!entries) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < *entries; ++i) {
    auto ceiling = read.number();
    auto reset = read.number();
    if (!reset) {
      return std::nullopt;
    }
    word.budget.push_back({*ceiling, *reset});
  }
  auto awaited = read.count(core::k_max_awaited_answers);
  if (!awaited) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < *awaited; ++i) {
    auto seq = read.number();
    auto cost = read.number();
    auto at = read.number();
    auto until = read.number();
    if (!until) {
      return std::nullopt;
    }
    word.awaited.push_back({*seq, *cost, *at, *until});
  }
  auto policies = read.count(core::k_max_policies);
  if (!policies) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < *policies; ++i) {
    auto quota = read.number();
    auto window = read.number();
    auto field = window ? read.text(core::k_max_policy_text) : std::nullopt;
    auto name = field ? read.text(core::k_max_policy_text) : std::nullopt;
    if (!name) {
      return std::nullopt;
    }
    word.policies.push_back({std::move(*field), std::move(*name), *quota, *window});
  }
  if (!read.done()) {
    core::AdaptiveState adaptive;
    for (std::int64_t* value : {&adaptive.max_rate, &adaptive.cut_at, &adaptive.successes,
                                &adaptive.measured_from, &adaptive.clock, &adaptive.next_slot}) {
      auto number = read.number();
      if (!number) {
        return std::nullopt;
      }
      *value = *number;
    }
    word.adaptive = adaptive;
  }
  word.grant_seq = *grant_seq;
  word.answered_at = *answered_at;
  word.answer_latency = *answer_latency;
  // What encode_server_word would not write: nothing at all.
  if (!read.done() || !core::within_bounds(word) || encode_server_word(word).empty()) {
    return std::nullopt;
  }
  return word;
}

} // namespace ratelimit::store::sqlite

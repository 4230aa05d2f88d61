#include "store/sqlite/sqlite_key_row.hpp"

#include "core/bounds.hpp"
#include "store/sqlite/state_codec.hpp"

#include <limits>

namespace ratelimit::store::sqlite {

std::optional<core::KeyState> decode_state(const Statement& statement) {
  std::string_view algorithm_name = statement.column_blob(1);
  auto stored = decode_limits(statement.column_blob(3));
  if (!stored) {
    return std::nullopt;
  }
  core::KeyState state;
  if (!algorithm_name.empty() || !stored->limits.empty()) {
    auto algorithm = core::parse_algorithm(algorithm_name);
    if (!algorithm) {
      return std::nullopt;
    }
    state.algorithm = *algorithm;
  }
  state.clock = statement.column_int(2);
  state.limits = std::move(stored->limits);
  state.remembered = std::move(stored->remembered);
  state.log_period = statement.column_int(5);
  state.paused_until = statement.column_int(6);
  if (stored->granted) {
    state.granted = *stored->granted;
  } else {
    core::read_earlier_version(state);
  }
  auto server = decode_server_word(statement.column_blob(7));
  if (!server) {
    return std::nullopt;
  }
  state.server = std::move(*server);
  if (!core::within_bounds(state) || !core::within_bounds(state.server)) {
    return std::nullopt;
  }
  return state;
}

// Rounded up to a multiple of 2^30 ns (about a second): a key used many times a second then
// moves in the index about once a second, not at every decision (an index entry rewritten is
// one more page written by each commit). Collecting a key up to a second late changes
// nothing.
core::Nanos fresh_at(const core::Decision& standing) {
  return fresh_at(standing.now + standing.reset_after);
}

core::Nanos fresh_at(core::Nanos exact) {
  constexpr core::Nanos k_grain = core::Nanos{1} << 30;
  return exact > std::numeric_limits<core::Nanos>::max() - k_grain ? exact
                                                                   : (exact | (k_grain - 1)) + 1;
}

} // namespace ratelimit::store::sqlite

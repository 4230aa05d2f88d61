#pragma once

#include "core/decide.hpp"
#include "core/limit.hpp"
#include "store/sqlite/sqlite_statement.hpp"

#include <optional>

namespace ratelimit::store::sqlite {

// The columns every query of a key's state in the keys table selects, in this order; the
// name may follow, as column `k_name_column`.
inline constexpr const char* k_state_columns =
    "id, algorithm, clock, limits, fresh_at, log_period, paused_until, server";
inline constexpr int k_name_column = 8;

// The state stored in the columns of `statement` (see k_state_columns), or nothing when it
// cannot be decoded. A key that holds only what a server said (a pause, a budget) has the
// algorithm '' and no limits.
std::optional<core::KeyState> decode_state(const Statement& statement);

// The time stored in the fresh_at column of a key whose standing is `standing`: when it
// becomes a fresh key's, in nanoseconds since the Unix epoch, rounded up (see the .cpp).
core::Nanos fresh_at(const core::Decision& standing);
// The same for a key that is fresh from `exact` on.
core::Nanos fresh_at(core::Nanos exact);

} // namespace ratelimit::store::sqlite

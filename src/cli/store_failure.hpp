#pragma once

#include "cli/settings.hpp"
#include "store/store.hpp"

#include <string>
#include <string_view>

namespace ratelimit::cli {

// What --on-store-error makes of a store that fails in a decision command (try, wait, run,
// pipe KEY); StoreOpener applies it.

// Whether `error` sends the decision to the local database under `on_error`: local and an
// outage of the store (store::StoreUnavailable: out of reach, no answer, the connection
// lost), never a refusal or damaged state. Only a remote store has outages: with SQLite as
// the store, local fails as deny does.
bool falls_back_locally(OnStoreError on_error, const store::StoreError& error);

// Whether a request goes on without the store after `error` under `on_error`: under allow,
// and under local for an outage.
bool goes_on_without_store(OnStoreError on_error, const store::StoreError& error);

// The warning for decisions that go to the local database `database` because the store
// failed with `error` (its message, on one line).
std::string local_fallback_warning(std::string_view error, std::string_view database);

// The warning for a request that goes on without the store after `error` under `on_error`.
std::string without_store_warning(OnStoreError on_error, std::string_view error);

// The warning for a waiter whose slot goes ahead unchecked because the store could not say,
// as it woke, whether a pause had begun (`error`, on one line): a slot the store granted is
// never lost to a store that fails after granting.
std::string pause_unchecked_warning(std::string_view key, std::string_view error);

// `message` on one line: a warning must not forge a second one.
std::string one_line_message(std::string message);

} // namespace ratelimit::cli

#pragma once

#include "cli/global_options.hpp"
#include "store/store.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ratelimit::cli {

// What --on-store-error makes of a store that fails in a decision command (try, wait, run,
// pipe KEY). The commands that only show or change stored state (status, reset, pause,
// metrics, gc) fail with status 3 whatever it says.

// Whether `error` sends the decision to the local database: --on-store-error=local and an
// outage of the store (store::StoreUnavailable: out of reach, no answer, the connection
// lost), never a refusal or damaged state. Only a remote store has outages: with SQLite as
// the store, local fails as deny does.
bool falls_back_locally(const GlobalOptions& global, const store::StoreError& error);

// The warning for decisions that go to the local database `database` because the store
// failed with `error` (its message, on one line).
std::string local_fallback_warning(std::string_view error, std::string_view database);

// Opens the local database (`open_local_store`) for the decisions the failed store cannot
// make; the first time in the process prints `local_fallback_warning` on stderr and keeps
// `error` in `global.local_fallback`. Throws StoreError (status 3) when the local database
// fails too.
std::unique_ptr<store::Store> fall_back_locally(const GlobalOptions& global,
                                                const store::StoreError& error);

// What --on-store-error says about `error` where there is no decision left to make (giving a
// reservation back, checking for a pause after the sleep): under allow, and under local for
// an outage, prints one warning line on stderr and returns true (go on without the store);
// otherwise returns false (fail, status 3).
bool fail_open(const GlobalOptions& global, const store::StoreError& error);

// Opens the store `global` names for a decision command, and gives it to `first_use`, when
// given, for what the command reads before deciding. When that fails: under local, for an
// outage, the local database instead (`fall_back_locally`); under allow, nothing, with the
// error in `failure` and a warning (`fail_open`); otherwise the StoreError propagates.
std::unique_ptr<store::Store>
open_store_or_fall_back(const GlobalOptions& global, std::string& failure,
                        const std::function<void(store::Store&)>& first_use = {});

// The warning for a waiter whose slot goes ahead unchecked because the store could not say,
// as it woke, whether a pause had begun (`error`, on one line): a slot the store granted is
// never lost to a store that fails after granting.
std::string pause_unchecked_warning(std::string_view key, std::string_view error);

} // namespace ratelimit::cli

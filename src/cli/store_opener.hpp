#pragma once

#include "cli/settings.hpp"
#include "store/store.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace ratelimit::cli {

// Opens the store of one invocation as its settings say, and applies --on-store-error when it
// fails (see store_failure.hpp): under local, the local database for an outage; under allow,
// nothing, with a warning. The commands that only show or change stored state (status, reset,
// pause, metrics, gc) open it without falling back, and fail with status 3 whatever it says.
class StoreOpener {
public:
  // `resolve` gives the settings; called at the first store opened or setting asked, once: a
  // command that opens no store (pipe without KEY) resolves none. Its error is a UsageError.
  explicit StoreOpener(std::function<core::Result<StoreSettings>()> resolve);
  explicit StoreOpener(StoreSettings settings);

  // Opens the store. A missing SQLite database is created, the default one in a directory of
  // mode 0700. Throws StoreError or UsageError.
  std::unique_ptr<store::Store> open();
  // The same for the commands that only read or forget keys: a missing SQLite database is not
  // created (nor its directory), and the store is then null.
  std::unique_ptr<store::Store> open_existing();

  // Sets in this process's environment what a nested ratelimit needs to reach the same store
  // (StoreSettings::nested_environment). `run` calls it before it starts its command.
  void export_environment();

  // Whether `error` sends the decision to the local database: --on-store-error=local and an
  // outage of the store (see falls_back_locally in store_failure.hpp).
  bool falls_back_locally(const store::StoreError& error);

  // Opens the local database for the decisions the failed store cannot make; the first time,
  // prints `local_fallback_warning` on stderr and keeps `error` as `local_fallback`. Throws
  // StoreError (status 3) when the local database fails too, UsageError when there is none
  // (HOME not set).
  std::unique_ptr<store::Store> fall_back_locally(const store::StoreError& error);

  // What --on-store-error says about `error` where there is no decision left to make (giving a
  // reservation back, checking for a pause after the sleep): under allow, and under local for
  // an outage, prints one warning line on stderr and returns true (go on without the store);
  // otherwise returns false (fail, status 3).
  bool fail_open(const store::StoreError& error);

  // Opens the store for a decision command, and gives it to `first_use`, when given, for what
  // the command reads before deciding. When that fails: under local, for an outage, the local
  // database instead (`fall_back_locally`); under allow, nothing, with the error in `failure`
  // and a warning (`fail_open`); otherwise the StoreError propagates.
  std::unique_ptr<store::Store>
  open_or_fall_back(std::string& failure, const std::function<void(store::Store&)>& first_use = {});

  // Why decisions went to the local database (the store's failure, on one line), once they
  // have; reported with --json. Empty before.
  const std::string& local_fallback() const { return m_local_fallback; }

private:
  const StoreSettings& settings();
  std::unique_ptr<store::Store> open_as(store::Creation creation);

  std::function<core::Result<StoreSettings>()> m_resolve;
  std::optional<core::Result<StoreSettings>> m_settings;
  std::string m_local_fallback;
};

} // namespace ratelimit::cli

#include "cli/store_opener.hpp"

#include "cli/store_failure.hpp"
#include "cli/usage_error.hpp"
#include "util/standard_streams.hpp"

#include <cstdlib>
#include <utility>

namespace ratelimit::cli {

StoreOpener::StoreOpener(std::function<core::Result<StoreSettings>()> resolve)
    : m_resolve(std::move(resolve)) {}

StoreOpener::StoreOpener(StoreSettings settings)
    : m_settings(core::Result<StoreSettings>(std::move(settings))) {}

const StoreSettings& StoreOpener::settings() {
  if (!m_settings) {
    m_settings = m_resolve();
  }
  if (!*m_settings) {
    throw UsageError(m_settings->error());
  }
  return **m_settings;
}

std::unique_ptr<store::Store> StoreOpener::open_as(store::Creation creation) {
  const StoreSettings& resolved = settings();
  store::StoreSettings open = resolved.open;
  open.creation = creation;
  return store::open_store(resolved.target, open);
}

std::unique_ptr<store::Store> StoreOpener::open() {
  return open_as(store::Creation::if_missing);
}

std::unique_ptr<store::Store> StoreOpener::open_existing() {
  return open_as(store::Creation::never);
}

void StoreOpener::export_environment() {
  for (const EnvironmentVariable& variable : settings().nested_environment) {
    if (variable.value) {
      ::setenv(variable.name, variable.value->c_str(), 1);
    } else {
      ::unsetenv(variable.name);
    }
  }
}

bool StoreOpener::falls_back_locally(const store::StoreError& error) {
  return cli::falls_back_locally(settings().on_error, error);
}

std::unique_ptr<store::Store> StoreOpener::fall_back_locally(const store::StoreError& error) {
  const StoreSettings& resolved = settings();
  if (!resolved.local_database) {
    throw UsageError(resolved.local_database.error());
  }
  if (m_local_fallback.empty()) {
    m_local_fallback = one_line_message(error.what());
    util::write_stderr(local_fallback_warning(error.what(), resolved.local_database->path));
  }
  store::StoreSettings open = resolved.open;
  open.creation = store::Creation::if_missing;
  return store::open_store(*resolved.local_database, open);
}

bool StoreOpener::fail_open(const store::StoreError& error) {
  OnStoreError on_error = settings().on_error;
  if (!goes_on_without_store(on_error, error)) {
    return false;
  }
  util::write_stderr(without_store_warning(on_error, error.what()));
  return true;
}

std::unique_ptr<store::Store>
StoreOpener::open_or_fall_back(std::string& failure,
                               const std::function<void(store::Store&)>& first_use) {
  std::unique_ptr<store::Store> store;
  try {
    store = open();
    if (first_use) {
      first_use(*store);
    }
    return store;
  } catch (const store::StoreError& error) {
    store.reset();
    if (falls_back_locally(error)) {
      store = fall_back_locally(error);
      if (first_use) {
        first_use(*store);
      }
      return store;
    }
    if (!fail_open(error)) {
      throw;
    }
    failure = error.what();
  }
  return store;
}

} // namespace ratelimit::cli

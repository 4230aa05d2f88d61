#include "store/open_store.hpp"

#include "store/store.hpp"
#include "temporary_database.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <sys/stat.h>

using namespace ratelimit;

using test::TemporaryDatabase;

namespace {

store::StoreSettings settings(store::Creation creation) {
  return {"ratelimit:", core::k_nanos_per_second, core::k_nanos_per_second, creation};
}

} // namespace

TEST_CASE("store::open_store leaves a missing database missing when told never to create") {
  TemporaryDatabase temporary;
  store::DatabaseLocation location{temporary.path(), "", ""};
  CHECK(store::open_store(location, settings(store::Creation::never)) == nullptr);
  CHECK_FALSE(std::filesystem::exists(temporary.path()));
  CHECK(store::open_store(location, settings(store::Creation::if_missing)) != nullptr);
  CHECK(std::filesystem::exists(temporary.path()));
  CHECK(store::open_store(location, settings(store::Creation::never)) != nullptr);
}

TEST_CASE("store::open_store makes the default database's state directory private") {
  TemporaryDatabase temporary;
  std::string home = temporary.directory.string();
  std::string directory = home + "/.local/state/ratelimit";
  store::DatabaseLocation location{directory + "/ratelimit.db", directory, home};
  CHECK(store::open_store(location, settings(store::Creation::never)) == nullptr);
  CHECK_FALSE(std::filesystem::exists(directory));
  CHECK(store::open_store(location, settings(store::Creation::if_missing)) != nullptr);
  struct stat info {};
  REQUIRE(::stat(directory.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
  CHECK(std::filesystem::exists(location.path));
}

TEST_CASE("store::open_store creates no home directory") {
  TemporaryDatabase temporary;
  std::string home = temporary.directory.string() + "/gone";
  std::string directory = home + "/.local/state/ratelimit";
  store::DatabaseLocation location{directory + "/ratelimit.db", directory, home};
  CHECK_THROWS_WITH_AS(store::open_store(location, settings(store::Creation::if_missing)),
                       ("cannot create the database in the home directory \"" + home +
                        "\": it does not exist; give --db PATH or set RATELIMIT_DB")
                           .c_str(),
                       store::StoreError);
  CHECK_FALSE(std::filesystem::exists(home));
}

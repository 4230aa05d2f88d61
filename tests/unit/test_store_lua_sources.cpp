// The hand-written parts of the Redis scripts (src/store/redis/lua/*.lua) hold no algorithm name
// and no constant copied from the C++ code: those come from the prelude that lua_prelude
// generates from the algorithm table and the constants (see CMakeLists.txt).
#include "core/algorithm.hpp"

#include <cctype>
#include <doctest/doctest.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace ratelimit;

namespace {

std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The names the prelude defines (`local NAME = ...`).
std::set<std::string> prelude_names(const std::string& prelude) {
  std::set<std::string> names;
  std::regex local(R"(^local ([A-Za-z_][A-Za-z0-9_]*) =)", std::regex::multiline);
  for (auto it = std::sregex_iterator(prelude.begin(), prelude.end(), local);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// What hand-written Lua `source` copies, one line each: a string naming an algorithm, a
// number of three digits or more (a constant: name it in the prelude), a local that
// redefines a name of the prelude. Comments are free to name anything.
std::vector<std::string> copies_in(const std::string& source,
                                   const std::set<std::string>& prelude) {
  std::vector<std::string> found;
  int line = 1;
  auto report = [&](const std::string& what) {
    found.push_back(fmt::format("line {}: {}", line, what));
  };
  std::size_t i = 0;
  // Inside `local a, b =`: the names it declares.
  bool declaring = false;
  while (i < source.size()) {
    char c = source[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (source.compare(i, 2, "--") == 0) {
      bool long_comment = source.compare(i + 2, 2, "[[") == 0;
      std::size_t end = source.find(long_comment ? "]]" : "\n", i);
      end = end == std::string::npos ? source.size() : end;
      for (std::size_t j = i; j < end; ++j) {
        line += source[j] == '\n';
      }
      i = end;
    } else if (c == '\'' || c == '"') {
      std::string text;
      std::size_t j = i + 1;
      while (j < source.size() && source[j] != c && source[j] != '\n') {
        if (source[j] == '\\') {
          ++j;
        }
        text += source[j++];
      }
      for (core::Algorithm algorithm : core::k_all_algorithms) {
        if (text.find(core::algorithm_name(algorithm)) != std::string::npos) {
          report("the algorithm name \"" + text + "\"");
        }
      }
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      int digits = 0;
      while (j < source.size() &&
             (std::isalnum(static_cast<unsigned char>(source[j])) || source[j] == '.')) {
        digits += std::isdigit(static_cast<unsigned char>(source[j])) != 0;
        ++j;
      }
      if (digits >= 3) {
        report("the number " + source.substr(i, j - i));
      }
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < source.size() &&
             (std::isalnum(static_cast<unsigned char>(source[j])) || source[j] == '_')) {
        ++j;
      }
      std::string word = source.substr(i, j - i);
      if (declaring && prelude.count(word) > 0) {
        report("a local " + word + ", which the prelude defines");
      }
      declaring = declaring || word == "local";
      i = j;
    } else {
      if (!std::isspace(static_cast<unsigned char>(c)) && c != ',') {
        declaring = false;
      }
      ++i;
    }
  }
  return found;
}

} // namespace

TEST_CASE("store: the Lua parts copy no algorithm name and no constant of the C++ code") {
  std::string prelude = contents(RATELIMIT_GENERATED_DIR "/prelude.lua");
  std::set<std::string> names = prelude_names(prelude);
  REQUIRE(names.count("k_max_time") == 1);
  REQUIRE(names.count("k_algorithm_table") == 1);
  int parts = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(RATELIMIT_SOURCE_DIR "/src/store/redis/lua")) {
    if (entry.path().extension() != ".lua") {
      continue;
    }
    ++parts;
    CAPTURE(entry.path().string());
    for (const std::string& copy : copies_in(contents(entry.path()), names)) {
      FAIL_CHECK(entry.path().filename().string() << ": " << copy);
    }
  }
  CHECK(parts >= 7);
}

TEST_CASE("store: the check of the Lua parts finds what they must not copy") {
  std::set<std::string> prelude{"k_max_time"};
  auto found = copies_in("local a = 'sliding-log' .. \"token-bucket\"\n"
                         "local b, k_max_time = 1, 4611686018427387\n"
                         "return x * 1000 + y[12] + 0.25\n",
                         prelude);
  CHECK(found == std::vector<std::string>{"line 1: the algorithm name \"sliding-log\"",
                                          "line 1: the algorithm name \"token-bucket\"",
                                          "line 2: a local k_max_time, which the prelude defines",
                                          "line 2: the number 4611686018427387",
                                          "line 3: the number 1000", "line 3: the number 0.25"});
  // Comments name what they like; a format's width inside a string is no constant.
  CHECK(copies_in("-- sliding-log, 1000 ms\n--[[ 'token-bucket'\n 60000 ]]\n"
                  "local s = string.format('%016d', n) -- 2^53\n",
                  prelude)
            .empty());
}

// A C++ program that only builds the standard locale, as CLI11 does the first time it
// trims an option's name (std::isspace with std::locale()), and as <iostream> does at
// start-up. Linked like ratelimit; the difference from the empty C program is what
// libstdc++'s locale set-up costs every process.
#include <locale>

int main(int argc, char** argv) {
  return argc > 0 && std::isspace(argv[0][0], std::locale());
}

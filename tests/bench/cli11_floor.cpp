// The floor of a C++ tool that parses its command line with CLI11: the global options and
// the `try` options that ratelimit declares (same count and kinds), parsed from the same
// command line, and nothing else: no SQLite, no output. Linked like ratelimit. Its cost
// beyond the empty C program is compared with ratelimit's beyond the C baseline.
//   cli11_floor --db PATH try KEY -r N/PERIOD
//
// Built with -DTHEN_BASELINE and linked with baseline.c compiled with -Dmain=baseline_main,
// it then makes the C baseline's decision on KEY in PATH: the C baseline behind CLI11's
// floor, the best a tool parsing its options with CLI11 could do (tests/bench/run).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#ifdef THEN_BASELINE
extern "C" int baseline_main(int argc, char** argv);
#endif

int main(int argc, char** argv) {
  CLI::App app("floor", "cli11_floor");
  app.set_version_flag("--version", "cli11_floor");
  app.require_subcommand(1);
  std::string db, on_store_error, lock_timeout, store, redis_prefix, store_timeout;
  int limited_exit_code = 1;
  bool json = false, quiet = false;
  app.add_option("--db", db, "database");
  app.add_flag("--json", json, "JSON output");
  app.add_flag("-q,--quiet", quiet, "quiet");
  app.add_option("--on-store-error", on_store_error, "deny|allow");
  app.add_option("-E,--limited-exit-code", limited_exit_code, "status");
  app.add_option("--lock-timeout", lock_timeout, "duration");
  app.add_option("--store", store, "URL");
  app.add_option("--redis-prefix", redis_prefix, "prefix");
  app.add_option("--store-timeout", store_timeout, "duration");

  CLI::App* command = app.add_subcommand("try", "decide now");
  command->fallthrough();
  std::string key, algorithm;
  std::vector<std::string> rates, bursts;
  long cost = 1;
  command->add_option("key", key, "key")->required();
  command->add_option("-r,--rate", rates, "N/PERIOD")->required();
  command->add_option("-a,--algorithm", algorithm, "algorithm");
  command->add_option("-b,--burst", bursts, "burst");
  command->add_option("-c,--cost", cost, "cost");
  CLI11_PARSE(app, argc, argv);
#ifdef THEN_BASELINE
  // The rate is not parsed: every call of the benchmarks is granted.
  std::string count = "1000000", period = "1";
  char* arguments[] = {argv[0], db.data(), key.data(), count.data(), period.data(), nullptr};
  return baseline_main(5, arguments);
#else
  return key.empty() ? 2 : 0;
#endif
}

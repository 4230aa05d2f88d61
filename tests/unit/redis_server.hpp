#pragma once

#include "store/store_url.hpp"

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ratelimit::test {

// A redis-server of the tests' own on 127.0.0.1 at a free port, with no persistence,
// stopped by PID when destroyed.
class RedisServer {
public:
  // Starts one, with `options` added to its command line; nullptr (with `why` set) when
  // redis-server is missing or does not start.
  static std::unique_ptr<RedisServer> start(std::string& why,
                                            const std::vector<std::string>& options = {});
  // The same serving TLS only, with a certificate for 127.0.0.1 signed by a CA made for it
  // (with openssl(1)), which `location` names.
  static std::unique_ptr<RedisServer> start_tls(std::string& why);
  // `nodes` cluster-enabled servers made one Redis Cluster, the slots split evenly among them
  // as masters, once its state is ok; empty (with `why` set) when they cannot be.
  static std::vector<std::unique_ptr<RedisServer>> start_cluster(std::string& why, int nodes);
  // The server shared by the tests, started on first use; nullptr when it cannot be.
  static RedisServer* shared(std::string& why);
  ~RedisServer();

  int port() const { return m_port; }
  // Where it is: rediss:// with its CA for a TLS server.
  store::RedisLocation location() const;
  // SIGSTOP / SIGCONT: a server that accepts connections and never answers.
  void pause();
  void resume();

private:
  RedisServer(pid_t pid, int port, std::string dir) : m_pid(pid), m_port(port), m_dir(dir) {}
  static std::unique_ptr<RedisServer> launch(std::string& why,
                                             const std::vector<std::string>& options,
                                             const std::string& certificates);
  pid_t m_pid;
  int m_port;
  std::string m_ca_file;      // a TLS server's CA; empty for a plain one
  std::string m_certificates; // the directory of its certificates, removed with it
  std::string m_dir;          // its working directory, removed with it
};

// Whether a missing redis-server is a failure rather than a skip: RATELIMIT_REQUIRE_REDIS=1
// (scripts/test sets it) or CI=true.
bool redis_required();

} // namespace ratelimit::test

// The shared server in `server`, or ends the test: a failure when Redis is required (see
// redis_required), else a skip message.
#define RATELIMIT_REDIS_SERVER(server)                                                             \
  std::string redis_why_;                                                                          \
  ratelimit::test::RedisServer* server = ratelimit::test::RedisServer::shared(redis_why_);         \
  if (!server) {                                                                                   \
    if (ratelimit::test::redis_required()) {                                                       \
      FAIL("redis-server is required: " << redis_why_);                                            \
    }                                                                                              \
    MESSAGE("skipped, " << redis_why_);                                                            \
    return;                                                                                        \
  }

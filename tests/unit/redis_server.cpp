#include "redis_server.hpp"

#include "store/redis/redis_connection.hpp"
#include "store/store.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace ratelimit::test {

namespace {

// A port that was free a moment ago: the kernel's choice for port 0.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

bool answers_ping(const store::RedisLocation& location) {
  if (location.tls) {
    try {
      store::redis::RedisConnection connection(location, 200 * 1'000'000);
      std::string ping[] = {"PING"};
      connection.command(ping);
      return true;
    } catch (const store::StoreError&) {
      return false;
    }
  }
  int port = location.port;
  timeval timeout{0, 200'000};
  redisContext* context = redisConnectWithTimeout("127.0.0.1", port, timeout);
  bool ok = false;
  if (context && !context->err) {
    auto* reply = static_cast<redisReply*>(redisCommand(context, "PING"));
    ok = reply && reply->type == REDIS_REPLY_STATUS;
    if (reply) {
      freeReplyObject(reply);
    }
  }
  if (context) {
    redisFree(context);
  }
  return ok;
}

bool on_path(const char* program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end - start);
    if (access((dir + "/" + program).c_str(), X_OK) == 0) {
      return true;
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return false;
}

} // namespace

bool redis_required() {
  const char* required = std::getenv("RATELIMIT_REQUIRE_REDIS");
  const char* ci = std::getenv("CI");
  return (required && std::string(required) == "1") || (ci && std::string(ci) == "true");
}

std::unique_ptr<RedisServer> RedisServer::start(std::string& why,
                                                const std::vector<std::string>& options) {
  return launch(why, options, "");
}

std::vector<std::unique_ptr<RedisServer>> RedisServer::start_cluster(std::string& why, int nodes) {
  std::vector<std::unique_ptr<RedisServer>> servers;
  for (int i = 0; i < nodes; ++i) {
    auto server = start(why, {"--cluster-enabled", "yes"});
    if (!server) {
      return {};
    }
    servers.push_back(std::move(server));
  }
  constexpr std::int64_t k_second = 1'000'000'000;
  try {
    std::vector<std::unique_ptr<store::redis::RedisConnection>> connections;
    for (int i = 0; i < nodes; ++i) {
      connections.push_back(
          std::make_unique<store::redis::RedisConnection>(servers[i]->location(), 2 * k_second));
      int first = 16384 * i / nodes;
      int last = 16384 * (i + 1) / nodes - 1;
      connections[i]->command(std::vector<std::string>{
          "CLUSTER", "ADDSLOTSRANGE", std::to_string(first), std::to_string(last)});
      if (i > 0) {
        connections[0]->command(std::vector<std::string>{"CLUSTER", "MEET", "127.0.0.1",
                                                         std::to_string(servers[i]->port())});
      }
    }
    auto ready = [](store::redis::RedisConnection& node) {
      store::redis::RedisReply info = node.command(std::vector<std::string>{"CLUSTER", "INFO"});
      return info.text().find("cluster_state:ok") != std::string_view::npos;
    };
    auto all_ready = [&] {
      return std::all_of(connections.begin(), connections.end(),
                         [&](const auto& node) { return ready(*node); });
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!all_ready()) {
      if (std::chrono::steady_clock::now() > deadline) {
        why = "the cluster's state did not become ok within 20 s";
        return {};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const store::StoreError& error) {
    why = error.what();
    return {};
  }
  return servers;
}

std::unique_ptr<RedisServer> RedisServer::start_tls(std::string& why) {
  if (!on_path("openssl")) {
    why = "openssl is not installed";
    return nullptr;
  }
  char dir[] = "/tmp/ratelimit-certs.XXXXXX";
  if (!mkdtemp(dir)) {
    why = "cannot make a temporary directory";
    return nullptr;
  }
  std::string d = dir;
  std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  std::string script =
      "cd " + d + " && openssl req -x509" + ec + " -keyout ca.key -out ca.crt -days 2 -subj " +
      "/CN=test-ca && openssl req" + ec + " -keyout server.key -out server.csr -subj " +
      "/CN=127.0.0.1 && printf 'subjectAltName=IP:127.0.0.1\\n' >server.ext && openssl x509 " +
      "-req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile " +
      "server.ext -out server.crt";
  if (std::system(("(" + script + ") >/dev/null 2>&1").c_str()) != 0) {
    why = "openssl could not make the test certificates";
    std::filesystem::remove_all(d);
    return nullptr;
  }
  auto server = launch(why,
                       {"--tls-cert-file", d + "/server.crt", "--tls-key-file", d + "/server.key",
                        "--tls-ca-cert-file", d + "/ca.crt", "--tls-auth-clients", "no"},
                       d);
  if (!server) {
    std::filesystem::remove_all(d);
  }
  return server;
}

store::RedisLocation RedisServer::location() const {
  store::RedisLocation location;
  location.host = "127.0.0.1";
  location.port = m_port;
  if (!m_ca_file.empty()) {
    location.tls = true;
    location.tls_files.ca_file = m_ca_file;
  }
  return location;
}

std::unique_ptr<RedisServer> RedisServer::launch(std::string& why,
                                                 const std::vector<std::string>& options,
                                                 const std::string& certificates) {
  if (!on_path("redis-server")) {
    why = "redis-server is not installed (Debian: apt-get install redis-server)";
    return nullptr;
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    int port = free_port();
    char dir[] = "/tmp/ratelimit-redis.XXXXXX";
    if (!mkdtemp(dir)) {
      why = "cannot make a temporary directory";
      return nullptr;
    }
    bool tls = !certificates.empty();
    std::vector<std::string> arguments{"redis-server",
                                       tls ? "--tls-port" : "--port",
                                       std::to_string(port),
                                       "--bind",
                                       "127.0.0.1",
                                       "--save",
                                       "",
                                       "--appendonly",
                                       "no",
                                       "--dir",
                                       dir};
    if (tls) {
      arguments.insert(arguments.end(), {"--port", "0"});
    }
    arguments.insert(arguments.end(), options.begin(), options.end());
    std::vector<char*> argv;
    for (std::string& argument : arguments) {
      argv.push_back(argument.data());
    }
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      int null = open("/dev/null", O_RDWR);
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      execvp("redis-server", argv.data());
      _exit(127);
    }
    std::unique_ptr<RedisServer> server(new RedisServer(pid, port, dir));
    if (tls) {
      server->m_ca_file = certificates + "/ca.crt";
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (answers_ping(server->location())) {
        server->m_certificates = certificates;
        return server;
      }
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        server->m_pid = -1; // exited: most likely the port was taken meanwhile
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  why = "redis-server did not start on 127.0.0.1";
  return nullptr;
}

RedisServer* RedisServer::shared(std::string& why) {
  static std::string failure;
  static std::unique_ptr<RedisServer> server = start(failure);
  why = failure;
  return server.get();
}

RedisServer::~RedisServer() {
  if (m_pid > 0) {
    kill(m_pid, SIGCONT);
    kill(m_pid, SIGTERM);
    waitpid(m_pid, nullptr, 0);
  }
  std::filesystem::remove_all(m_dir);
  if (!m_certificates.empty()) {
    std::filesystem::remove_all(m_certificates);
  }
}

void RedisServer::pause() {
  kill(m_pid, SIGSTOP);
}

void RedisServer::resume() {
  kill(m_pid, SIGCONT);
}

} // namespace ratelimit::test

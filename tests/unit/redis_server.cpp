#include "redis_server.hpp"

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

bool answers_ping(int port) {
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
    std::vector<std::string> arguments{"redis-server",
                                       "--port",
                                       std::to_string(port),
                                       "--bind",
                                       "127.0.0.1",
                                       "--save",
                                       "",
                                       "--appendonly",
                                       "no",
                                       "--dir",
                                       dir};
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
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (answers_ping(port)) {
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
}

void RedisServer::pause() {
  kill(m_pid, SIGSTOP);
}

void RedisServer::resume() {
  kill(m_pid, SIGCONT);
}

} // namespace ratelimit::test

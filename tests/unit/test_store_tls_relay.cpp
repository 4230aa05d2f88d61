#include "store/tls/tls_relay.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <optional>
#include <string>
#include <unistd.h>

using namespace ratelimit::store;

namespace {

tls::RelayTarget target(std::string ca = "/etc/ca.pem") {
  TlsFiles files;
  files.ca_file = std::move(ca);
  files.session_directory = "/home/u/.local/state/ratelimit/tls-sessions";
  files.relay = true;
  return {"redis.example.com", 6380, files};
}

} // namespace

TEST_CASE("store::tls::relay_socket names one socket per server and TLS files") {
  std::optional<tls::RelaySocket> socket = tls::relay_socket(target());
  REQUIRE(socket);
  CHECK(socket->directory == "/home/u/.local/state/ratelimit/tls-sessions");
  // Short whatever the host: the directory is reached through a descriptor.
  CHECK(socket->name.starts_with("relay-"));
  CHECK(socket->name.ends_with(".sock"));
  CHECK(socket->name.size() == 27);
  CHECK(tls::relay_socket(target())->name == socket->name);
  CHECK(tls::relay_socket(target("/etc/other-ca.pem"))->name != socket->name);
  tls::RelayTarget other_port = target();
  other_port.port = 6381;
  CHECK(tls::relay_socket(other_port)->name != socket->name);
  tls::RelayTarget with_certificate = target();
  with_certificate.files.cert_file = "/home/u/client.pem";
  CHECK(tls::relay_socket(with_certificate)->name != socket->name);
  // A relative file name, by the directory it is in.
  tls::RelayTarget relative = target("ca.pem");
  std::string here = tls::relay_socket(relative)->name;
  char* current = getcwd(nullptr, 0);
  REQUIRE(chdir("/") == 0);
  CHECK(tls::relay_socket(relative)->name != here);
  CHECK(tls::relay_socket(target())->name == socket->name);
  REQUIRE(chdir(current) == 0);
  std::free(current);
  // Which CAs OpenSSL trusts without a CA file depends on the environment.
  tls::RelayTarget system = target("");
  const char* given = std::getenv("SSL_CERT_FILE");
  std::optional<std::string> saved = given ? std::optional<std::string>(given) : std::nullopt;
  setenv("SSL_CERT_FILE", "/elsewhere/cas.pem", 1);
  std::string elsewhere = tls::relay_socket(system)->name;
  setenv("SSL_CERT_FILE", "/elsewhere/other-cas.pem", 1);
  CHECK(tls::relay_socket(system)->name != elsewhere);
  if (saved) {
    setenv("SSL_CERT_FILE", saved->c_str(), 1);
  } else {
    unsetenv("SSL_CERT_FILE");
  }
}

TEST_CASE("store::tls::relay_socket: none without the relay or the session directory") {
  tls::RelayTarget off = target();
  off.files.relay = false;
  CHECK_FALSE(tls::relay_socket(off));
  tls::RelayTarget no_directory = target();
  no_directory.files.session_directory.clear();
  CHECK_FALSE(tls::relay_socket(no_directory));
}

TEST_CASE("store::tls::connect_to_relay: no relay where no socket is") {
  CHECK_FALSE(
      tls::connect_to_relay({"/nonexistent/ratelimit-tests", "relay-0.sock"}, 1'000'000'000));
}

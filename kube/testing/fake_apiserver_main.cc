// huygens-fake-apiserver: runs FakeApiServer standalone, for kubectl and manual testing.
// Prints the server URL on the first line of stdout, then serves until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "fmt/format.h"
#include "kube/testing/fake_apiserver.h"

int main(int argc, char** argv) {
  huygens::kube::testing::FakeApiServerOptions options;
  CLI::App app{"In-memory fake Kubernetes API server (tests only; loopback)."};
  app.add_option("--port", options.port, "Port to listen on (0: ephemeral)");
  app.add_option("--tls-cert", options.tls_cert_file, "PEM serving certificate (HTTPS)");
  app.add_option("--tls-key", options.tls_key_file, "PEM serving key (HTTPS)");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server threads start

  auto server = huygens::kube::testing::FakeApiServer::Start(options);
  if (!server.ok()) {
    fmt::print(stderr, "huygens-fake-apiserver: {}\n", server.status().ToString());
    return 1;
  }
  fmt::print("{}\n", (*server)->url());
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  return 0;
}

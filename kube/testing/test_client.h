// Test helper: a Client connected to a FakeApiServer (or to a URL in front of one, such as a
// TcpProxy), with no rate limit and a FakeClock for retry backoff (so retries do not sleep).
// For tests of kube and of components built on it.
#ifndef HUYGENS_KUBE_TESTING_TEST_CLIENT_H_
#define HUYGENS_KUBE_TESTING_TEST_CLIENT_H_

#include <memory>
#include <string>
#include <utility>

#include "kube/client.h"
#include "kube/testing/fake_apiserver.h"

namespace huygens::kube::testing {

// A RestConfig for `url` with no rate limit; tests change fields (watch_idle_timeout) as needed.
inline RestConfig TestRestConfig(std::string url) {
  RestConfig config;
  config.server = std::move(url);
  config.qps = 0;
  return config;
}

// REQUIRES: clock outlives the client. Aborts the test binary if the client cannot be made (it
// cannot fail for a config with a server).
inline std::unique_ptr<Client> ClientFor(RestConfig config, Clock* clock, ClientOptions options = {}) {
  auto rest = RestClient::Create(std::move(config), clock);
  if (!rest.ok()) std::abort();
  return std::make_unique<Client>(std::move(*rest), options, clock);
}

// REQUIRES: server and clock outlive the client.
inline std::unique_ptr<Client> ClientFor(const FakeApiServer& server, Clock* clock, ClientOptions options = {}) {
  return ClientFor(TestRestConfig(server.url()), clock, options);
}

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_TEST_CLIENT_H_

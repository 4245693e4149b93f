// Test helper: a Client connected to a FakeApiServer, with no rate limit and a FakeClock for
// retry backoff (so retries do not sleep). For tests of kube and of components built on it.
#ifndef HUYGENS_KUBE_TESTING_TEST_CLIENT_H_
#define HUYGENS_KUBE_TESTING_TEST_CLIENT_H_

#include <memory>

#include "kube/client.h"
#include "kube/testing/fake_apiserver.h"

namespace huygens::kube::testing {

// REQUIRES: server and clock outlive the client. Aborts the test binary if the client cannot be
// made (it cannot fail for a running fake).
inline std::unique_ptr<Client> ClientFor(const FakeApiServer& server, Clock* clock, ClientOptions options = {}) {
  RestConfig config;
  config.server = server.url();
  config.qps = 0;
  auto rest = RestClient::Create(config, clock);
  if (!rest.ok()) std::abort();
  return std::make_unique<Client>(std::move(*rest), options, clock);
}

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_TEST_CLIENT_H_

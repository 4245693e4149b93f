// Backoff: exponential backoff with jitter for retries and watch resumption (client-go's
// wait.Backoff: Duration, Factor 2, Jitter, Cap).
//
// The n-th delay (from 0) is min(cap, initial * 2^n) * (1 + jitter * u), u uniform in [0, 1),
// so concurrent clients that fail together do not retry together. Reset() starts over.
// Not thread-safe: one Backoff per retry loop.
#ifndef HUYGENS_KUBE_BACKOFF_H_
#define HUYGENS_KUBE_BACKOFF_H_

#include <chrono>
#include <cstdint>
#include <random>

namespace huygens::kube {

struct BackoffOptions {
  // First delay. Default 100 ms.
  std::chrono::milliseconds initial{100};
  // Largest delay before jitter. Default 10 s.
  std::chrono::milliseconds cap{10000};
  // Jitter factor; 0 disables. Default 0.5 (up to +50%).
  double jitter = 0.5;
};

class Backoff {
 public:
  explicit Backoff(BackoffOptions options = {}, std::uint64_t seed = std::random_device{}());
  // The next delay; grows until the cap.
  std::chrono::nanoseconds Next();
  void Reset() { attempt_ = 0; }

 private:
  BackoffOptions options_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_BACKOFF_H_

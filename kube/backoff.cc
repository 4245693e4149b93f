#include "kube/backoff.h"

#include <algorithm>

namespace huygens::kube {

Backoff::Backoff(BackoffOptions options, std::uint64_t seed) : options_(options), rng_(seed) {}

std::chrono::nanoseconds Backoff::Next() {
  double base = std::chrono::duration<double>(options_.initial).count();
  double cap = std::chrono::duration<double>(options_.cap).count();
  double delay = std::min(cap, base * static_cast<double>(1ULL << std::min(attempt_, 30)));
  if (options_.jitter > 0) {
    delay *= 1 + options_.jitter * std::uniform_real_distribution<double>(0, 1)(rng_);
  }
  ++attempt_;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(delay));
}

}  // namespace huygens::kube

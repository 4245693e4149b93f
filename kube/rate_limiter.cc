#include "kube/rate_limiter.h"

#include <algorithm>

namespace huygens::kube {

TokenBucket::TokenBucket(double qps, int burst, Clock* clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(clock), tokens_(burst_), last_(clock->Now()) {}

Clock::Duration TokenBucket::Acquire() {
  if (qps_ <= 0) return Clock::Duration{0};
  Clock::Duration wait{0};
  {
    absl::MutexLock lock(&mu_);
    Clock::TimePoint now = clock_->Now();
    double elapsed = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    tokens_ -= 1;
    if (tokens_ < 0) {
      wait = std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(-tokens_ / qps_));
    }
  }
  clock_->Sleep(wait);
  return wait;
}

}  // namespace huygens::kube

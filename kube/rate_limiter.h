// TokenBucket: the client-side rate limit of every API request (client-go's token-bucket rate
// limiter, flowcontrol.NewTokenBucketRateLimiter): `burst` tokens, refilled at `qps` per second;
// each request takes one token and waits (on the injected clock) when none is left.
//
// Invariant: tokens <= burst. A waiting caller reserves its token before it sleeps, so
// concurrent callers are served in arrival order and never oversubscribe.
// Thread-safety: all methods are safe to call concurrently.
#ifndef HUYGENS_KUBE_RATE_LIMITER_H_
#define HUYGENS_KUBE_RATE_LIMITER_H_


#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/clock.h"

namespace huygens::kube {

class TokenBucket {
 public:
  // qps <= 0 disables the limit. REQUIRES: burst >= 1 when qps > 0. `clock` must outlive this.
  TokenBucket(double qps, int burst, Clock* clock);

  // Takes one token, sleeping on the clock until it is available. Returns the time waited.
  Clock::Duration Acquire() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const double qps_;
  const double burst_;
  Clock* const clock_;
  absl::Mutex mu_;  // not held while a caller sleeps
  double tokens_ ABSL_GUARDED_BY(mu_);  // may go negative: tokens reserved by sleeping callers
  Clock::TimePoint last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_RATE_LIMITER_H_

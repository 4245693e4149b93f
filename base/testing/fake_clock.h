// FakeClock: a Clock (base/clock.h) whose time moves only when a test (or a Sleep call) moves it.
// Sleep(d) advances the time by d at once and returns, so code that waits runs instantly and
// deterministically. Thread-safe. Used by the tests of kube, the services and whatever else is
// handed a Clock.
#ifndef HUYGENS_BASE_TESTING_FAKE_CLOCK_H_
#define HUYGENS_BASE_TESTING_FAKE_CLOCK_H_

#include <mutex>

#include "base/clock.h"

namespace huygens::testing {

class FakeClock final : public Clock {
 public:
  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Sleep(Duration d) override { Advance(d); }
  void Advance(Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    if (d.count() > 0) now_ += d;
    slept_ += d.count() > 0 ? d : Duration{0};
  }
  // Total time advanced so far.
  Duration Elapsed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return slept_;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1)};
  Duration slept_{0};
};

}  // namespace huygens::testing

#endif  // HUYGENS_BASE_TESTING_FAKE_CLOCK_H_

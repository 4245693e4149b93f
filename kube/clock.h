// Clock: the time source the Kubernetes client uses for rate limits, backoff and leader
// election, so that tests can drive time by hand (see kube/testing/fake_clock.h).
//
// Thread-safety: implementations must be safe to call from any thread.
#ifndef HUYGENS_KUBE_CLOCK_H_
#define HUYGENS_KUBE_CLOCK_H_

#include <chrono>

namespace huygens::kube {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

  virtual ~Clock() = default;
  // Monotonic now.
  virtual TimePoint Now() const = 0;
  // Blocks the caller for `d` (a fake clock advances its time instead).
  virtual void Sleep(Duration d) = 0;
};

// The steady clock of the process.
class RealClock final : public Clock {
 public:
  TimePoint Now() const override;
  void Sleep(Duration d) override;
  // A process-wide instance.
  static RealClock* Get();
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_CLOCK_H_

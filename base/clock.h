// Clock: the monotonic time source that daemons' code is handed (the Kubernetes client's rate
// limits, backoff and leader election; the agent's loops), so that tests can drive time by hand
// (base/testing/fake_clock.h has the fake).
//
// Thread-safety: implementations must be safe to call from any thread.
#ifndef HUYGENS_BASE_CLOCK_H_
#define HUYGENS_BASE_CLOCK_H_

#include <chrono>

namespace huygens {

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

}  // namespace huygens

#endif  // HUYGENS_BASE_CLOCK_H_

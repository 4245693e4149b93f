#include "base/clock.h"

#include <thread>

namespace huygens {

Clock::TimePoint RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

void RealClock::Sleep(Duration d) {
  if (d.count() > 0) std::this_thread::sleep_for(d);
}

RealClock* RealClock::Get() {
  static RealClock clock;
  return &clock;
}

}  // namespace huygens

#include "kube/meta_time.h"

#include "gtest/gtest.h"

namespace huygens::kube {
namespace {

using std::chrono::system_clock;

// 2026-12-03T02:49:07Z plus 123456789 ns.
system_clock::time_point Sample() {
  return system_clock::time_point(std::chrono::seconds(1796266147)) +
         std::chrono::duration_cast<system_clock::duration>(std::chrono::nanoseconds(123456789));
}

TEST(MetaTime, IsRfc3339InUtcWithWholeSeconds) { EXPECT_EQ(MetaTime(Sample()), "2026-12-03T02:49:07Z"); }

TEST(MicroTime, KeepsSixFractionalDigitsAndDropsTheRest) {
  EXPECT_EQ(MicroTime(Sample()), "2026-12-03T02:49:07.123456Z");
}

TEST(MicroTime, PadsASmallFractionWithZeros) {
  EXPECT_EQ(MicroTime(system_clock::time_point(std::chrono::seconds(1796266147)) + std::chrono::microseconds(42)),
            "2026-12-03T02:49:07.000042Z");
}

}  // namespace
}  // namespace huygens::kube

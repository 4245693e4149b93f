#include "base/duration.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace huygens {
namespace {

TEST(QuantityTest, DurationsParseInSecondsOrWithAUnit) {
  EXPECT_EQ(*ParseDuration("90"), 90000000);
  EXPECT_EQ(*ParseDuration("10m"), 600000000);
  EXPECT_EQ(*ParseDuration("250ms"), 250000);
  EXPECT_EQ(*ParseDuration("1d"), int64_t{86400} * 1000000);
  EXPECT_FALSE(ParseDuration("5 minutes").ok());
}

}  // namespace
}  // namespace huygens

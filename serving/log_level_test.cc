#include "serving/log_level.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::serving {
namespace {

using ::testing::HasSubstr;

TEST(ParseLogLevelTest, EveryDocumentedNameMapsToItsSpdlogLevel) {
  EXPECT_EQ(*ParseLogLevel("trace"), spdlog::level::trace);
  EXPECT_EQ(*ParseLogLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(*ParseLogLevel("info"), spdlog::level::info);
  EXPECT_EQ(*ParseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("error"), spdlog::level::err);
  EXPECT_EQ(*ParseLogLevel("critical"), spdlog::level::critical);
  EXPECT_EQ(*ParseLogLevel("off"), spdlog::level::off);
}

TEST(ParseLogLevelTest, AnUnknownNameIsAnErrorNamingTheFlagAndTheAcceptedValues) {
  // spdlog::level::from_str would have answered `off` for each of these.
  for (const char* name : {"INFO", "verbose", "", "warning"}) {
    const auto level = ParseLogLevel(name);
    ASSERT_FALSE(level.ok()) << name;
    EXPECT_TRUE(absl::IsInvalidArgument(level.status()));
    EXPECT_THAT(level.status().message(), HasSubstr("--log-level"));
    EXPECT_THAT(level.status().message(), HasSubstr(std::string("\"") + name + "\""));
    EXPECT_THAT(level.status().message(), HasSubstr("trace, debug, info, warn, error, critical, off"));
  }
}

}  // namespace
}  // namespace huygens::serving

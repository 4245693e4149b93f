#include "base/quantity.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens {
namespace {

// Kubernetes CPU quantities: whole and fractional CPUs, millicores; nothing finer than 1m.
TEST(ParseCpuMilliTest, ReadsCpusAndMillicores) {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"4", 4000},    {"0", 0},       {"2.5", 2500}, {"0.25", 250},     {"1.000", 1000},
      {"500m", 500},  {"1500m", 1500}, {"0m", 0},    {"2.0m", 2},       {"007", 7000},
      {".5", 500},    {"1.", 1000},   {"0.001", 1},  {"1.2340000", 1234}};
  for (const auto& [text, milli] : cases) {
    absl::StatusOr<int64_t> got = ParseCpuMilli(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, milli) << text;
  }
}

TEST(ParseCpuMilliTest, RejectsWhatIsNotACpuQuantity) {
  for (const char* text : {"", "m", "-1", "+1", "1e3", "4Gi", "4k", " 4", "4 ", ".", ".m",
                           "0.0005", "1.5m", "1..2", "99999999999999999999"}) {
    absl::StatusOr<int64_t> got = ParseCpuMilli(text);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_THAT(std::string(ParseCpuMilli("4Gi").status().message()),
              ::testing::HasSubstr("\"4Gi\" is not a CPU quantity: unknown suffix \"Gi\""));
  EXPECT_THAT(std::string(ParseCpuMilli("0.0005").status().message()),
              ::testing::HasSubstr("finer than one millicore"));
}

// The largest CPU value accepted is 2^53 millicores, in either spelling.
TEST(ParseCpuMilliTest, AcceptsUpToTwoToTheFiftyThirdMillicores) {
  EXPECT_EQ(*ParseCpuMilli("9007199254740992m"), int64_t{1} << 53);
  EXPECT_FALSE(ParseCpuMilli("9007199254740993m").ok());
  EXPECT_EQ(*ParseCpuMilli("9007199254740.992"), int64_t{1} << 53);
  EXPECT_FALSE(ParseCpuMilli("9007199254740.993").ok());
}

// Memory quantities: bytes, binary and decimal suffixes, fractions that give whole bytes.
TEST(ParseMemoryBytesTest, ReadsBytesAndSuffixes) {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"123", 123},
      {"0", 0},
      {"16Gi", int64_t{16} << 30},
      {"1.5Ki", 1536},
      {"512Mi", int64_t{512} << 20},
      {"2Ti", int64_t{2} << 40},
      {"1Pi", int64_t{1} << 50},
      {"1Ei", int64_t{1} << 60},
      {"1k", 1000},
      {"1G", 1'000'000'000},
      {"2.5M", 2'500'000},
      {"1T", 1'000'000'000'000},
      {"4E", 4'000'000'000'000'000'000},
      {"0.5Gi", int64_t{1} << 29},
      {"000.250k", 250}};
  for (const auto& [text, bytes] : cases) {
    absl::StatusOr<int64_t> got = ParseMemoryBytes(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, bytes) << text;
  }
}

TEST(ParseMemoryBytesTest, RejectsWhatIsNotAMemoryQuantity) {
  for (const char* text : {"", "Gi", "-1", "12GB", "1e9", "1.5", "0.0001k", "1.0001Ki", " 1Gi",
                           "5E", "8Ei", "99999999999999999999", "1gi", "1.2.3"}) {
    absl::StatusOr<int64_t> got = ParseMemoryBytes(text);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_THAT(std::string(ParseMemoryBytes("12GB").status().message()),
              ::testing::HasSubstr("\"12GB\" is not a memory quantity: unknown suffix \"GB\""));
  EXPECT_THAT(std::string(ParseMemoryBytes("1.5").status().message()),
              ::testing::HasSubstr("not a whole number of bytes"));
  EXPECT_THAT(std::string(ParseMemoryBytes("5E").status().message()),
              ::testing::HasSubstr("too large"));
}

}  // namespace
}  // namespace huygens

// fmt's `{:?}` (escaped debug format) in a program that also loads libspdlog, as every Huygens
// program does: a string ending in an incomplete UTF-8 sequence (a malformed file, annotation or
// cgroup path quoted in an error) is escaped, not an abort. Debian's libspdlog.so carries copies
// of fmt's formatting functions built with fmt's assertions on, which abort on such strings when
// the dynamic linker picks them; the top-level CMakeLists.txt links libfmt first so it does not.
#include <string>
#include <string_view>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "spdlog/spdlog.h"

namespace huygens {
namespace {

TEST(Format, DebugFormatOfAnIncompleteUtf8SequenceIsEscapedWhileSpdlogIsLoaded) {
  spdlog::debug("loads libspdlog");  // a reference, so that the linker keeps libspdlog
  EXPECT_EQ(fmt::format("{:?}", std::string_view("ab\xed")), "\"ab\\xed\"");
  EXPECT_EQ(fmt::format("path {:?}: {}", std::string_view("x:\xe2\x82", 4), "why"), "path \"x:\\xe2\\x82\": why");
  EXPECT_EQ(fmt::format("{:?}", std::string_view("ok\xe2\x82\xac")), "\"ok\xe2\x82\xac\"");
}

}  // namespace
}  // namespace huygens

#include "base/utf8.h"

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace huygens {
namespace {

TEST(TruncateUtf8Test, TextWithinTheBudgetIsKeptWhole) {
  EXPECT_EQ(TruncateUtf8("0/3 nodes", 9), "0/3 nodes");
  EXPECT_EQ(TruncateUtf8("", 0), "");
  EXPECT_EQ(TruncateUtf8("h\xC3\xA9llo", 100), "h\xC3\xA9llo");
}

TEST(TruncateUtf8Test, AsciiIsCutAtTheByteLimit) { EXPECT_EQ(TruncateUtf8("abcdef", 4), "abcd"); }

TEST(TruncateUtf8Test, ALimitInTheMiddleOfAMultiByteCharacterLeavesTheCharacterOut) {
  // "é" is 2 bytes, "€" 3, "😀" 4: a limit inside each keeps only what precedes it.
  EXPECT_EQ(TruncateUtf8("h\xC3\xA9", 2), "h");
  EXPECT_EQ(TruncateUtf8("ab\xE2\x82\xAC", 3), "ab");
  EXPECT_EQ(TruncateUtf8("ab\xE2\x82\xAC", 4), "ab");
  EXPECT_EQ(TruncateUtf8("a\xF0\x9F\x98\x80", 4), "a");
  EXPECT_EQ(TruncateUtf8("a\xF0\x9F\x98\x80", 5), "a\xF0\x9F\x98\x80");
}

TEST(TruncateUtf8Test, EveryCutOfAMultiByteTextCanBeWrittenAsJson) {
  const std::string pod = "p\xC3\xB6\xC3\xB6-\xE2\x82\xAC\xF0\x9F\x98\x80-\xE6\x97\xA5\xE6\x9C\xAC";
  for (size_t limit = 0; limit <= pod.size(); ++limit) {
    const std::string cut = TruncateUtf8(pod, limit);
    EXPECT_LE(cut.size(), limit);
    EXPECT_EQ(pod.compare(0, cut.size(), cut), 0) << "limit " << limit;
    EXPECT_NO_THROW((void)nlohmann::json(cut).dump()) << "limit " << limit;
  }
}

TEST(TruncateUtf8Test, MalformedBytesAreReplacedByTheReplacementCharacter) {
  EXPECT_EQ(TruncateUtf8("a\xFF" "b", 10), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(TruncateUtf8("\xC0\xAF", 10), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong "/"
  EXPECT_EQ(TruncateUtf8("\xED\xA0\x80", 10), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(TruncateUtf8("x\xE2\x82", 10), "x\xEF\xBF\xBD\xEF\xBF\xBD");  // sequence cut short
  EXPECT_EQ(TruncateUtf8("a\xFF", 3), "a");  // the replacement does not fit
}

}  // namespace
}  // namespace huygens

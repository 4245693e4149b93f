#include "base/json_fields.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace huygens::json_fields {
namespace {

using nlohmann::json;

TEST(JsonFields, RequiredAndOptionalMembersNameThePathOfTheMissingOrBadField) {
  const json obj = json::parse(R"({"n":5,"flag":"yes"})");
  EXPECT_EQ(ReadRequired(obj, "pods[0]", "n", ReadInt).value(), 5);
  EXPECT_EQ(Msg(ReadRequired(obj, "pods[0]", "m", ReadInt).status()), "pods[0].m: missing");
  EXPECT_EQ(Msg(ReadRequired(obj, "", "m", ReadInt).status()), "m: missing");
  EXPECT_EQ(ReadOptional(obj, "pods[0]", "absent", ReadBool, true).value(), true);
  EXPECT_EQ(Msg(ReadOptional(obj, "pods[0]", "flag", ReadBool, true).status()),
            "pods[0].flag: expected true or false, got string");
}

TEST(JsonFields, Int64TakesTheWholeRangeAndNothingBeyond) {
  EXPECT_EQ(ReadInt64(json::parse("-9223372036854775808"), "x").value(), INT64_MIN);
  EXPECT_EQ(ReadInt64(json::parse("9223372036854775807"), "x").value(), INT64_MAX);
  EXPECT_EQ(Msg(ReadInt64(json::parse("9223372036854775808"), "x").status()),
            "x: integer 9223372036854775808 is too large");
  EXPECT_EQ(Msg(ReadInt64(json::parse("1.0"), "x").status()),
            "x: expected an integer, got number with a fraction or exponent");
  EXPECT_EQ(Msg(ReadInt(json::parse("2147483648"), "x").status()),
            "x: integer 2147483648 is too large");
  EXPECT_EQ(Msg(ReadInt(json::parse("-2147483649"), "x").status()),
            "x: integer -2147483649 is out of range");
}

}  // namespace
}  // namespace huygens::json_fields

#include "kube/testing/selector.h"

#include "gtest/gtest.h"

namespace huygens::kube::testing {
namespace {

using nlohmann::json;

const json kPod = {{"metadata", {{"name", "web"}, {"labels", {{"app", "web"}, {"tier", "gold"}}}}},
                   {"spec", {{"nodeName", "n1"}}}};

struct Case {
  const char* name;
  const char* selector;
  bool fields;
  bool matches;
};

class SelectorTest : public ::testing::TestWithParam<Case> {};

TEST_P(SelectorTest, MatchesLikeTheApiServer) {
  const Case& c = GetParam();
  auto s = c.fields ? Selector::ParseFields(c.selector) : Selector::ParseLabels(c.selector);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->Matches(kPod), c.matches);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SelectorTest,
    ::testing::Values(Case{"EmptyMatchesAll", "", false, true},
                      Case{"EqualityHolds", "app=web", false, true},
                      Case{"DoubleEqualsIsEquality", "app==web", false, true},
                      Case{"EqualityFails", "app=db", false, false},
                      Case{"NotEqualOnMissingLabelHolds", "zone!=a", false, true},
                      Case{"ExistsHolds", "tier", false, true},
                      Case{"NotExistsFails", "!tier", false, false},
                      Case{"InSetHolds", "tier in (silver, gold)", false, true},
                      Case{"NotInSetFails", "tier notin (gold)", false, false},
                      Case{"AllRequirementsMustHold", "app=web,tier in (silver)", false, false},
                      Case{"FieldEquality", "spec.nodeName=n1", true, true},
                      Case{"FieldNotEqual", "spec.nodeName!=n1", true, false},
                      Case{"MissingFieldIsEmpty", "spec.schedulerName=", true, true},
                      Case{"TwoFields", "metadata.name=web,spec.nodeName==n1", true, true}),
    [](const ::testing::TestParamInfo<Case>& param) { return std::string(param.param.name); });

TEST(SelectorParseTest, MalformedSelectorsAreRejected) {
  EXPECT_FALSE(Selector::ParseLabels("tier in (gold").ok());
  EXPECT_FALSE(Selector::ParseLabels("tier between (a,b)").ok());
  EXPECT_FALSE(Selector::ParseLabels("a=b,,c=d").ok());
  EXPECT_FALSE(Selector::ParseFields("spec.nodeName").ok());
}

}  // namespace
}  // namespace huygens::kube::testing

#include "base/label_selector.h"

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace huygens {
namespace {

using Op = SelectorOperator;

const Labels kPodLabels = {{"app", "web"}, {"tier", "gold"}, {"canary", ""}, {"replicas", "3"}};

struct Case {
  std::string name;
  LabelSelector selector;
  bool matches;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class LabelSelectorTest : public ::testing::TestWithParam<Case> {};

TEST_P(LabelSelectorTest, MatchesLikeKubernetes) {
  const Case& c = GetParam();
  EXPECT_EQ(c.selector.Matches(kPodLabels), c.matches);
}

LabelSelector Expressions(std::vector<LabelRequirement> requirements) {
  return LabelSelector{{}, std::move(requirements)};
}

INSTANTIATE_TEST_SUITE_P(
    Table, LabelSelectorTest,
    ::testing::Values(
        Case{"TheEmptySelectorMatchesEverything", {}, true},
        Case{"MatchLabelsWithThePodsValuesMatch", {{{"app", "web"}, {"tier", "gold"}}, {}}, true},
        Case{"MatchLabelsWithAnotherValueDoesNotMatch", {{{"app", "db"}}, {}}, false},
        Case{"MatchLabelsOnAMissingLabelDoesNotMatch", {{{"zone", "a"}}, {}}, false},
        Case{"MatchLabelsWithAnEmptyValueMatchesAnEmptyLabel", {{{"canary", ""}}, {}}, true},
        Case{"InWithThePodsValueMatches", Expressions({{"tier", Op::kIn, {"silver", "gold"}}}), true},
        Case{"InWithoutThePodsValueDoesNotMatch", Expressions({{"tier", Op::kIn, {"silver"}}}), false},
        Case{"InOnAMissingLabelDoesNotMatch", Expressions({{"zone", Op::kIn, {"a"}}}), false},
        Case{"InWithoutValuesMatchesNothing", Expressions({{"tier", Op::kIn, {}}}), false},
        Case{"NotInWithThePodsValueDoesNotMatch", Expressions({{"tier", Op::kNotIn, {"gold"}}}), false},
        Case{"NotInOnAMissingLabelMatches", Expressions({{"zone", Op::kNotIn, {"a"}}}), true},
        Case{"NotInWithoutValuesMatchesNothing", Expressions({{"zone", Op::kNotIn, {}}}), false},
        Case{"ExistsOnAnEmptyLabelMatches", Expressions({{"canary", Op::kExists, {}}}), true},
        Case{"ExistsOnAMissingLabelDoesNotMatch", Expressions({{"zone", Op::kExists, {}}}), false},
        Case{"ExistsWithValuesMatchesNothing", Expressions({{"tier", Op::kExists, {"gold"}}}), false},
        Case{"DoesNotExistOnAMissingLabelMatches", Expressions({{"zone", Op::kDoesNotExist, {}}}), true},
        Case{"DoesNotExistOnAPresentLabelDoesNotMatch", Expressions({{"app", Op::kDoesNotExist, {}}}),
             false},
        Case{"GtBelowTheLabelsIntegerMatches", Expressions({{"replicas", Op::kGt, {"2"}}}), true},
        Case{"LtOnALabelThatIsNotAnIntegerDoesNotMatch", Expressions({{"tier", Op::kLt, {"5"}}}), false},
        Case{"ExpressionsAreAnded",
             Expressions({{"tier", Op::kIn, {"gold"}}, {"app", Op::kNotIn, {"web"}}}), false},
        Case{"MatchLabelsAndExpressionsMustBothHold",
             {{{"app", "web"}}, {{"canary", Op::kDoesNotExist, {}}}}, false},
        Case{"MatchLabelsAndExpressionsThatBothHoldMatch",
             {{{"app", "web"}}, {{"canary", Op::kExists, {}}, {"zone", Op::kDoesNotExist, {}}}}, true}),
    [](const ::testing::TestParamInfo<Case>& param) { return param.param.name; });

TEST(SelectorOperatorTest, EveryOperatorsNameParsesBackToIt) {
  for (Op op : {Op::kIn, Op::kNotIn, Op::kExists, Op::kDoesNotExist, Op::kGt, Op::kLt}) {
    EXPECT_EQ(ParseSelectorOperator(ToString(op)), op) << ToString(op);
  }
  EXPECT_STREQ(ToString(Op::kDoesNotExist), "DoesNotExist");
}

TEST(SelectorOperatorTest, NamesAreCaseSensitiveAndUnknownNamesAreRefused) {
  EXPECT_EQ(ParseSelectorOperator("in"), std::nullopt);
  EXPECT_EQ(ParseSelectorOperator("Equals"), std::nullopt);
  EXPECT_EQ(ParseSelectorOperator(""), std::nullopt);
}

}  // namespace
}  // namespace huygens

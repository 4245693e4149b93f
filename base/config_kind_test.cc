#include "base/config_kind.h"

#include "gtest/gtest.h"

namespace huygens {
namespace {

TEST(ConfigKind, AHeaderThatIsRightOrMissingIsAccepted) {
  for (const char* text : {"{}", "apiVersion: huygens.io/v1alpha1\nkind: SchedulerConfiguration",
                           "kind: SchedulerConfiguration", "apiVersion: huygens.io/v1alpha1"}) {
    EXPECT_EQ(CheckConfigKind(YAML::Load(text), kSchedulerConfigurationKind), std::nullopt) << text;
  }
}

TEST(ConfigKind, AnUnknownApiVersionOrKindNamesTheFieldAndWhatIsExpected) {
  struct Case {
    const char* text;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {"apiVersion: huygens.io/v1\nkind: SchedulerConfiguration", "apiVersion",
       R"("huygens.io/v1" is not supported (this version of Huygens reads only huygens.io/v1alpha1))"},
      {"apiVersion: huygens.io/v1alpha1\nkind: AgentConfiguration", "kind",
       R"("AgentConfiguration" is not supported (this file is for another Huygens component; expected SchedulerConfiguration))"},
      {"kind: [SchedulerConfiguration]", "kind", "expected SchedulerConfiguration"},
  };
  for (const Case& c : cases) {
    auto problem = CheckConfigKind(YAML::Load(c.text), kSchedulerConfigurationKind);
    ASSERT_TRUE(problem.has_value()) << c.text;
    EXPECT_EQ(problem->field, c.field) << c.text;
    EXPECT_EQ(problem->message, c.message) << c.text;
  }
}

}  // namespace
}  // namespace huygens
